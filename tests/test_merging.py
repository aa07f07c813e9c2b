"""The merge step (``autoMerge``) by the rules, on both forges: the forge's own auto-merge first, else a merge only
when every check on the head is complete and green and every required context reported.

GitHub's rules the stand-in follows: ``enablePullRequestAutoMerge`` (GraphQL reference, mutations) is refused with
"Auto merge is not allowed for this repository" when the repository setting is off and with "Pull request is in
clean status" when nothing is left to wait for (as ``gh pr merge --auto`` relays them); auto-merge merges once every
required check passed ("Automatically merging a pull request"); required checks come from branch protection
(``branch-with-protection``: ``protection.required_status_checks``) and rulesets (``GET /rules/branches/{branch}``:
``required_status_checks`` rules), and a check run counts once ``completed`` with ``success``, ``neutral`` or
``skipped`` ("About protected branches"); an App on the bypass list can merge anyway, which is why fleetflow checks
the rules itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetflow.forge.base import CommitStatus, PullRequest
from fleetflow.forge.github import GitHubForge
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.merging import merge_if_due, merge_verdict, merge_when_green
from tests import stand_in
from tests.ghstub.server import GitHubStub
from tests.ghstub.state import Ruleset
from tests.stand_in import HEAD, REPO
from tests.test_forge_local import origin, template  # noqa: F401

stub, forge = stand_in.stub, stand_in.forge  # the shared stand-in fixtures (pytest finds them by name)


def test_the_verdict() -> None:
    ok = CommitStatus("ci/build", "success")
    assert merge_verdict([], []) is None  # nothing required, nothing reported: nothing to wait for
    assert merge_verdict(["ci/build"], []) == "waiting for required checks: ci/build"
    assert merge_verdict(["ci/build"], [ok]) is None
    assert "waiting for checks: lint" in (merge_verdict([], [ok, CommitStatus("lint", "pending", kind="check")]) or "")
    assert "failed: lint" in (merge_verdict([], [ok, CommitStatus("lint", "error")]) or "")


# -- GitHub (stand-in: tests/stand_in.py) ---------------------------------------------------------------------


def open_pr(forge: GitHubForge | LocalForge, repo: str) -> PullRequest:
    return forge.create_pull(repo, HEAD, "dev", "fleetflow: dev", "body")


def test_github_native_auto_merge_merges_when_the_required_check_passes(stub: GitHubStub, forge: GitHubForge) -> None:
    repo = stub.repo(REPO)
    repo.allow_auto_merge = True
    repo.protection["dev"] = ["ci/build"]
    pr = open_pr(forge, REPO)
    outcome = merge_if_due(forge, REPO, pr, auto_merge=True)
    assert outcome.state == "auto-merge" and not repo.pull(pr.number).merged
    assert stub.count(method="POST", path=r"^/graphql$") == 1
    again = forge.open_pull(REPO, HEAD, "dev")
    assert again is not None and again.auto_merge
    assert merge_if_due(forge, REPO, again, auto_merge=True).state == "auto-merge"  # idempotent: no second mutation
    assert stub.count(method="POST", path=r"^/graphql$") == 1
    repo.add_status(pr.head_sha, "success", "ci/build", "ok")  # GitHub merges on its own: no event, no run needed
    assert repo.pull(pr.number).merged


def test_github_without_auto_merge_waits_for_every_check(stub: GitHubStub, forge: GitHubForge) -> None:
    """The repository does not allow auto-merge; a ruleset requires ``ci/build``; the App may bypass the rules,
    so only fleetflow's own check keeps the PR from being merged before anything reported."""
    repo = stub.repo(REPO)
    repo.rulesets["dev"] = ["ci/build"]
    repo.bypass = True
    pr = open_pr(forge, REPO)
    outcome = merge_if_due(forge, REPO, pr, auto_merge=True)
    assert outcome.state == "waiting" and outcome.reason == "waiting for required checks: ci/build"
    assert "Auto merge is not allowed" in outcome.message
    run = repo.add_check_run(pr.head_sha, "ci/build", status="in_progress")
    assert merge_if_due(forge, REPO, pr, auto_merge=True).reason == "waiting for checks: ci/build"
    repo.add_status(pr.head_sha, "pending", "lint", "running")  # not required, not green yet: still waits
    run.status, run.conclusion, run.completed_at = "completed", "success", stub.store.now()
    assert merge_if_due(forge, REPO, pr, auto_merge=True).reason == "waiting for checks: lint"
    assert not repo.pull(pr.number).merged
    repo.add_status(pr.head_sha, "success", "lint", "ok")
    merged = merge_if_due(forge, REPO, pr, auto_merge=True)
    assert merged.state == "merged" and repo.pull(pr.number).merged
    assert merged.merge_commit == repo.branch_sha("dev")


def test_github_clean_pr_without_rules_merges_when_green(stub: GitHubStub, forge: GitHubForge) -> None:
    repo = stub.repo(REPO)
    repo.allow_auto_merge = True  # allowed, but no rule to wait for: GitHub answers "clean status"
    pr = open_pr(forge, REPO)
    repo.add_status(pr.head_sha, "failure", "lint", "2 problems")
    outcome = merge_if_due(forge, REPO, pr, auto_merge=True)
    assert outcome.state == "waiting" and "clean status" in outcome.message and outcome.reason == "checks failed: lint"
    repo.add_status(pr.head_sha, "success", "lint", "fixed")
    assert merge_if_due(forge, REPO, pr, auto_merge=True).state == "merged"


def test_github_merge_rules_read_protection_and_rulesets(stub: GitHubStub, forge: GitHubForge) -> None:
    repo = stub.repo(REPO)
    repo.protection["dev"] = ["ci/build"]
    repo.rulesets["dev"] = ["ci/build", "security/scan"]
    rules = forge.merge_rules(REPO, "dev")
    assert rules.required == ("ci/build", "security/scan") and not rules.auto_merge_allowed
    assert forge.merge_rules(REPO, "main").required == ()


def test_github_merge_rules_read_every_page_of_the_branch_rules(stub: GitHubStub, forge: GitHubForge) -> None:
    """"Get rules for a branch" is paginated ("per_page ... The number of results per page (max 100)", default 30,
    https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch): an organization with many rulesets can
    put a required check past the first 30 rules."""
    repo = stub.repo(REPO)
    repo.ruleset_list += [
        Ruleset(100 + n, f"ruleset {n}", target="branch", branches=["dev"], rules=[
            {"type": "required_status_checks", "parameters": {"required_status_checks": [{"context": f"check/{n}"}],
                                                               "strict_required_status_checks_policy": False}}])
        for n in range(35)]
    repo.ruleset_list.append(Ruleset(200, "deletions", target="branch", branches=["dev"], rules=[
        {"type": "deletion"}] * 70))
    mark = stub.mark()
    assert forge.merge_rules(REPO, "dev").required == tuple(f"check/{n}" for n in range(35))
    assert stub.count(mark, path="/rules/branches/") == 2  # 105 rules: two pages of 100


def test_github_head_moved_after_the_checks_were_read(stub: GitHubStub, forge: GitHubForge,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge names the head it checked (``sha`` of "Merge a pull request"): a push in between gets GitHub's 409
    and the PR waits for the next run instead of merging a head nobody checked."""
    repo = stub.repo(REPO)
    pr = open_pr(forge, REPO)
    read = forge.statuses

    def read_then_push(name: str, sha: str) -> list[CommitStatus]:
        found = read(name, sha)
        repo.commit_files(HEAD, {"dev/app.yaml": "replicas: 2\n"}, "a newer render")
        return found

    monkeypatch.setattr(forge, "statuses", read_then_push)
    outcome = merge_if_due(forge, REPO, pr, auto_merge=True)
    assert outcome.state == "waiting" and "modified" in (outcome.reason or "")
    assert not repo.pull(pr.number).merged


def test_auto_merge_off_leaves_the_pr_to_a_person(stub: GitHubStub, forge: GitHubForge) -> None:
    pr = open_pr(forge, REPO)
    assert merge_if_due(forge, REPO, pr, auto_merge=False).state == "manual"
    assert stub.count(method="POST", path="graphql") == 0


# -- local forge ----------------------------------------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> LocalForge:
    return LocalForge(cache_dir=tmp_path / "cache")


def local_pr(local: LocalForge, origin: Path) -> PullRequest:  # noqa: F811
    from tests.test_forge_local import git

    work = origin.parent / "work"
    git(work, "push", "-q", "origin", f"feature:{HEAD}")
    return open_pr(local, str(origin))


def test_local_auto_merge_is_honoured_when_the_required_status_turns_green(local: LocalForge,
                                                                          origin: Path) -> None:  # noqa: F811
    repo = str(origin)
    local.allow_auto_merge(repo)
    local.protect_branch(repo, "dev", ["ci/build"])
    pr = local_pr(local, origin)
    assert merge_if_due(local, repo, pr, auto_merge=True).state == "auto-merge"
    local.set_status(repo, pr.head_sha, "lint", "success", "ok")
    assert local.pull_record(repo, pr.number)["merged"] is False
    local.set_status(repo, pr.head_sha, "ci/build", "success", "ok")
    assert local.pull_record(repo, pr.number)["merged"] is True


def test_local_without_auto_merge_waits_then_merges(local: LocalForge, origin: Path) -> None:  # noqa: F811
    repo = str(origin)
    local.protect_branch(repo, "dev", ["ci/build"])
    pr = local_pr(local, origin)
    outcome = merge_if_due(local, repo, pr, auto_merge=True)
    assert outcome.state == "waiting" and outcome.reason == "waiting for required checks: ci/build"
    local.set_status(repo, pr.head_sha, "ci/build", "pending", "running")
    assert merge_if_due(local, repo, pr, auto_merge=True).state == "waiting"
    local.set_status(repo, pr.head_sha, "ci/build", "success", "ok")
    assert merge_if_due(local, repo, pr, auto_merge=True).state == "merged"
    assert local.pull_record(repo, pr.number)["merged"] is True


def test_local_merge_refuses_a_moved_head(local: LocalForge, origin: Path) -> None:  # noqa: F811
    from fleetflow.errors import ForgeError

    repo = str(origin)
    pr = local_pr(local, origin)
    with pytest.raises(ForgeError, match="head branch was modified") as caught:
        local.merge_pull(repo, pr.number, expected_head="0" * 40)
    assert caught.value.request is not None and caught.value.request.status == 409


def test_a_draft_waits_for_a_person_to_mark_it_ready(stub: GitHubStub, forge: GitHubForge) -> None:
    """A person converts the PR to a draft (GitHub: "Changing the stage of a pull request"; a draft cannot be
    merged: ``PUT .../merge`` answers 405 "Pull Request is still a draft", as alexwlchan/auto_merge_my_pull_requests#1
    and lindell/multi-gitter#622 quote it; the list and the PR carry ``draft``: REST "List pull requests"). Until
    2026-11-29 the merge step asked for auto-merge, read the rules and checks, tried the merge and waited "blocked by
    the branch rules ... (hint: conflicts with the base branch, or branch protection rules)". Now it waits for the
    person, says what to do, and makes no request; marked ready, the PR is merged."""
    repo = stub.repo(REPO)
    pr = open_pr(forge, REPO)
    repo.pull(pr.number).draft = True
    draft = forge.open_pull(REPO, HEAD, "dev")
    assert draft is not None and draft.draft
    before = stub.mark()
    outcome = merge_if_due(forge, REPO, draft, auto_merge=True)
    assert outcome.state == "waiting" and "draft" in outcome.message and "ready for review" in outcome.message
    assert "branch rules" not in outcome.message and stub.count(since=before) == 0
    # a run that merges without reading the PR (a merge record's recheck) says the same
    waiting = merge_when_green(forge, REPO, pr.number, "dev", draft.head_sha, "auto-merge unavailable")
    assert waiting.state == "waiting" and waiting.reason and "ready for review" in waiting.reason
    repo.pull(pr.number).draft = False
    ready = forge.open_pull(REPO, HEAD, "dev")
    assert ready is not None and not ready.draft
    assert merge_if_due(forge, REPO, ready, auto_merge=True).state == "merged"


def test_the_newest_closed_prs_of_a_head_cost_one_request(stub: GitHubStub, forge: GitHubForge) -> None:
    """Before opening a PR, schedule reads the newest closed PRs of its head for a rejection (and reconcile for a
    PR closed by hand). A head fleetflow keeps for years has hundreds of closed PRs, 100 a page as fleetflow asks
    ("List pull requests": ``per_page``, at most 100): reading them all cost a request per page on every PR opened.
    The newest ten are one request (an islice of PyGithub's list reads only the pages it reaches)."""
    repo = stub.repo(REPO)
    for _ in range(130):
        pr = repo.create_pull(HEAD, "dev", "fleetflow: dev")
        repo.update_pull(pr.number, state="closed")
    mark = stub.mark()
    newest = forge.pulls(REPO, HEAD, "closed", limit=10)
    assert [p.number for p in newest] == list(range(130, 120, -1))
    assert stub.count(since=mark, path=r"/pulls$") == 1
    assert len(forge.pulls(REPO, HEAD, "closed")) == 130 and stub.count(since=mark, path=r"/pulls$") == 3
