"""The merge record (fleetflow/promotion/merge_records.py) on both forges: once the merge step turned the forge's
auto-merge on for a PR's head, the tag ``fleetflow/auto-merge/<env>`` points at that head, and a waiting run reads it
with the ``ls-remote`` it makes anyway: no API request until the forge merges.

Where the record lives, from GitHub's documentation: GitHub documents pushing and deleting **tags** with git
("Pushing commits to a remote repository": ``git push REMOTE-NAME TAG-NAME``, and ``git push REMOTE-NAME
:BRANCH-NAME`` deletes a remote branch or tag, https://docs.github.com/en/get-started/using-git/
pushing-commits-to-a-remote-repository). Its REST reference for Git references says the ref database holds
"anything in the namespace, not just heads and tags" (https://docs.github.com/en/rest/git/refs), but nothing
documents *pushing* another namespace such as ``refs/fleetflow/...``, and GitHub refuses pushes into namespaces it
keeps itself ("deny updating a hidden ref" for ``refs/pull/<N>/head``, e.g. ad-m/github-push-action#143). So the
record is a lightweight tag, under a prefix fleetflow owns, never a branch (a branch ``fleetflow/auto-merge/...``
could collide with the head branch ``fleetflow/<env>`` of an environment named ``auto-merge``).

GitHub's auto-merge rules the stand-in follows: ``enablePullRequestAutoMerge`` (GraphQL mutations reference); the
PR merges once every required check passed ("Automatically merging a pull request",
https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/incorporating-changes-from-a-pull-request/
automatically-merging-a-pull-request); a person with write access may turn it off on the PR page ("Disabling
auto-merge", same page), which raises no event fleetflow's workflows receive.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetflow.forge.git import GitRepos
from fleetflow.promotion.merge_records import RecordKind, drop_records, record_ref, seen_records, write_record
from fleetflow.promotion.reconcile import EnvironmentReconcile, reconcile
from tests.fleet import Fleet, environments_file
from tests.ghstub.state import Ruleset
from tests.test_promotion import FORGES, fleet_config, make_github_fleet, make_local_fleet

RECORD = record_ref("dev")


@pytest.fixture(params=FORGES)
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fleet]:
    """dev has ``autoMerge``; the GitOps repository allows the forge's auto-merge and dev requires ``ci/validate``
    (so enabling it is accepted: there is something to wait for)."""
    made = make_local_fleet(tmp_path) if request.param == "local" else make_github_fleet(tmp_path, request)
    if made.forge.name == "github":
        repo = made.stub.repo(made.gitops_id)  # type: ignore[attr-defined]
        repo.allow_auto_merge = True
        repo.protection["dev"] = ["ci/validate"]
    else:
        made.forge.allow_auto_merge(made.gitops_id)  # type: ignore[attr-defined]
        made.forge.protect_branch(made.gitops_id, "dev", ["ci/validate"])  # type: ignore[attr-defined]
    made.push_main(environments_file(auto_merge=("dev",)), "dev merges by itself")
    yield made


def dev(fleet: Fleet, verify_merges: bool = False) -> tuple[EnvironmentReconcile, int | None]:
    """One reconcile run of dev alone; its result and, on the stand-in, the API requests it made."""
    stub: Any = getattr(fleet, "stub", None)
    mark = stub.mark() if stub is not None else 0
    with fleet.context() as ctx:
        [result] = [e for e in reconcile(ctx, verify_merges=verify_merges).environments if e.environment == "dev"]
    return result, (stub.count(since=mark) if stub is not None else None)


def tag(fleet: Fleet, kind: RecordKind = "auto-merge") -> str | None:
    proc = subprocess.run(["git", "--git-dir", fleet.gitops_url, "rev-parse", "--verify", "--quiet",
                           record_ref("dev", kind)],
                          capture_output=True, text=True)
    return proc.stdout.strip() or None


def head(fleet: Fleet) -> str:
    return fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")


def test_the_wait_for_auto_merge_is_recorded_and_costs_nothing(fleet: Fleet) -> None:
    first, _ = dev(fleet)
    assert [s.step for s in first.did] == ["promote"] and first.merge is not None
    assert first.merge.state == "auto-merge" and tag(fleet) == head(fleet)
    for _ in range(2):
        waiting, requests = dev(fleet)
        assert waiting.did == [] and waiting.merge is not None and waiting.merge.state == "auto-merge"
        assert "recorded in git" in waiting.waiting and waiting.found.merge_record is not None
        assert waiting.found.merge_record.head == head(fleet) and waiting.found.merge_record.kind == "auto-merge"
        assert requests in (0, None)  # None: the local forge (no request counter); its reads are local files
    pr = fleet.open_pr("dev")
    assert pr is not None and pr.auto_merge
    if fleet.forge.name == "github":
        assert waiting.merge.number == pr.number  # from refs/pull/<N>/head, as for a person's merge
    fleet.post_status(head(fleet), "ci/validate", "success", "ok")  # the forge merges: no run needed
    assert fleet.open_pr("dev") is None
    merged, _ = dev(fleet)
    assert [s.step for s in merged.did] == ["gate"]
    assert tag(fleet) is None  # merged: fleetflow removes its record


def test_a_moved_head_makes_the_record_stale_and_the_merge_step_is_taken_again(fleet: Fleet) -> None:
    dev(fleet)
    old = tag(fleet)
    assert old == head(fleet)
    fleet.push_env("dev", {"configs.yaml": fleet_config("debug")}, "dev: debug logging")  # a new schedule is due
    moved, _ = dev(fleet)
    assert [s.step for s in moved.did] == ["schedule"] and moved.merge is not None
    assert moved.merge.state == "auto-merge" and "recorded in git" not in moved.merge.message
    assert head(fleet) != old and tag(fleet) == head(fleet)
    # a record left on an old head (here put back by hand) never counts: the PR is read again, the record follows
    subprocess.run(["git", "--git-dir", fleet.gitops_url, "update-ref", RECORD, old or ""], check=True)
    again, requests = dev(fleet)
    assert again.merge is not None and "recorded in git" not in again.merge.message
    assert requests is None or requests > 0
    assert tag(fleet) == head(fleet)


def test_a_closed_pr_is_found_by_the_cron_tick_and_the_record_removed(fleet: Fleet) -> None:
    dev(fleet)
    pr = fleet.open_pr("dev")
    assert pr is not None and tag(fleet) == head(fleet)
    fleet.forge.update_pull(fleet.gitops_id, pr.number, state="closed")
    trusted, _ = dev(fleet)  # an event-driven run trusts the record: it cannot see the close
    assert trusted.merge is not None and trusted.merge.state == "auto-merge" and tag(fleet) == head(fleet)
    verified, _ = dev(fleet, verify_merges=True)
    assert "closed without merging" in verified.waiting and fleet.open_pr("dev") is None
    assert tag(fleet) is None


def test_github_a_person_turning_auto_merge_off_is_caught_by_the_cron_tick(tmp_path: Path,
                                                                           request: pytest.FixtureRequest) -> None:
    """Turning auto-merge off raises no event the workflows receive, and the record still says "on": runs between
    cron ticks wait at 0 requests; the tick (``verify_merges``) reads the PR (1 request), finds it off and turns it
    on again (2 more: the PR as PyGithub's ``enable_automerge`` reads it, and the GraphQL mutation)."""
    fleet = make_github_fleet(tmp_path, request)
    stub: Any = fleet.stub  # type: ignore[attr-defined]
    repo = stub.repo(fleet.gitops_id)
    repo.allow_auto_merge = True
    repo.protection["dev"] = ["ci/validate"]
    fleet.push_main(environments_file(auto_merge=("dev",)), "dev merges by itself")
    dev(fleet)
    pr = fleet.open_pr("dev")
    assert pr is not None and pr.auto_merge
    repo.pull(pr.number).auto_merge = None  # a person: "Disable auto-merge"
    _, requests = dev(fleet)
    assert requests == 0 and repo.pull(pr.number).auto_merge is None
    verified, requests = dev(fleet, verify_merges=True)
    assert requests == 3 and stub.count(method="POST", path=r"^/graphql$") == 2
    assert verified.merge is not None and verified.merge.state == "auto-merge"
    assert repo.pull(pr.number).auto_merge is not None and tag(fleet) == head(fleet)
    _, requests = dev(fleet, verify_merges=True)  # still on: the tick costs one request
    assert requests == 1


def test_github_a_tag_ruleset_that_declines_the_record_is_what_doctor_reports(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A tag ruleset restricting creations on every tag (``~ALL``) declines the push of the record: GitHub answers
    with its rule's words (``remote: error: GH013: Repository rule violations found for refs/tags/...``, "- Cannot
    create ref due to creations being restricted.", quoted in guardian/gha-scala-library-release-workflow#126 and
    opensearch-project/.github#531), which the run's error carries. The run ends with exit 3, and the next one takes
    the merge step again (no record says it was taken), failing the same way. ``doctor`` names that ruleset and the
    exclusion that fixes it; with the exclusion, the next run writes the record."""
    from fleetflow.promotion.doctor import diagnose

    fleet = make_github_fleet(tmp_path, request)
    stub: Any = fleet.stub  # type: ignore[attr-defined]
    repo = stub.repo(fleet.gitops_id)
    repo.allow_auto_merge = True
    repo.protection["dev"] = ["ci/validate"]
    repo.ruleset_list.append(Ruleset(11, "protect tags", rules=[{"type": "creation"}]))
    repo.decline_ref_writes({RECORD: ["create"]})
    fleet.push_main(environments_file(auto_merge=("dev",)), "dev merges by itself")
    for run in range(2):
        result, _ = dev(fleet)
        assert result.exit_code == 3 and tag(fleet) is None
        assert result.merge is not None and result.merge.state == "auto-merge"
        assert "recorded in git" not in result.merge.message  # taken again: nothing recorded it
        [problem] = result.problems
        assert f"GH013: Repository rule violations found for {RECORD}." in problem.message
        assert "Cannot create ref due to creations being restricted." in problem.message
        assert problem.message.endswith("GitHub's rulesets declined writing fleetflow's merge record "
                                        "(fleetflow/auto-merge/dev): `fleetflow doctor` names the ruleset and its "
                                        "fix (check tag-rules)")
        assert [s.step for s in result.did] == (["promote"] if run == 0 else [])
    with fleet.context() as ctx:
        [found] = [f for f in diagnose(ctx).findings if f.check == "tag-rules"]  # (the fleet has no workflows)
    assert (found.check, found.where) == ("tag-rules", f"{fleet.gitops_id} ruleset 'protect tags' "
                                                        f"(Repository {fleet.gitops_id})")
    assert "declines creating the tags" in found.problem and "exit 3" in found.problem
    repo.ruleset_list[0].exclude = ["refs/tags/fleetflow/**/*"]  # the fix doctor gives
    repo.decline_ref_writes({})
    with fleet.context() as ctx:
        assert not [f for f in diagnose(ctx).findings if f.check == "tag-rules"]
    fixed, _ = dev(fleet)
    assert fixed.exit_code == 0 and tag(fleet) == head(fleet)


@pytest.fixture(params=FORGES)
def fallback(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fleet]:
    """dev has ``autoMerge``, requires ``ci/validate``, and the repository does not allow the forge's auto-merge
    (a new GitHub repository's default): fleetflow merges the PR itself once its checks are green."""
    made = make_local_fleet(tmp_path) if request.param == "local" else make_github_fleet(tmp_path, request)
    if made.forge.name == "github":
        made.stub.repo(made.gitops_id).protection["dev"] = ["ci/validate"]  # type: ignore[attr-defined]
    else:
        made.forge.protect_branch(made.gitops_id, "dev", ["ci/validate"])  # type: ignore[attr-defined]
    made.push_main(environments_file(auto_merge=("dev",)), "dev merges by itself")
    yield made


def checked(fleet: Fleet, rechecks: tuple[str, ...] = (), verify_merges: bool = False
            ) -> tuple[EnvironmentReconcile, int | None]:
    stub: Any = getattr(fleet, "stub", None)
    mark = stub.mark() if stub is not None else 0
    with fleet.context() as ctx:
        outcome = reconcile(ctx, verify_merges=verify_merges, rechecks=rechecks)

    [result] = [e for e in outcome.environments if e.environment == "dev"]
    return result, (stub.count(since=mark) if stub is not None else None)


def test_without_native_auto_merge_only_a_status_on_the_head_or_the_cron_tick_reads_the_checks(
        fallback: Fleet) -> None:
    """Which runs can change fleetflow's own merge decision: a status posted on the head (its ``status`` event
    carries the head as ``sha``: ``rechecks``), a check run completing (check runs made by Actions raise no event:
    the cron tick), a change of the branch rules (no event: the cron tick). Every other run (a cluster's report on
    an environment branch, a push to the control plane, a dispatch) waits at 0 requests. On GitHub a re-check reads
    the branch rules (the branch, its rules: 2 requests, plus the repository once per process, which this test's
    shared forge has already read) and the head's checks (2: combined status, check runs): 4 here, 5 in a
    workflow run; merging when green adds 2 (the PR, the merge). The cron tick reads the PR first and tries
    GitHub's auto-merge again (3 more: the open PR, the PR as ``enable_automerge`` reads it, the refused mutation):
    7 here, 8 in a workflow run."""
    fleet = fallback
    first, _ = checked(fleet)
    assert first.merge is not None and first.merge.state == "waiting"
    assert first.merge.reason == "waiting for required checks: ci/validate"
    assert tag(fleet) is None and tag(fleet, "merge-when-green") == head(fleet)
    other_commit = fleet.gitops_tip("qa")
    for rechecks in ((), (other_commit,)):
        waiting, requests = checked(fleet, rechecks)
        assert waiting.did == [] and waiting.merge is not None and waiting.merge.state == "waiting"
        assert "recorded in git" in waiting.waiting and requests in (0, None)
    fleet.post_status(head(fleet), "ci/validate", "pending", "running")
    pending, requests = checked(fleet, (head(fleet),))
    assert pending.merge is not None and pending.merge.reason == "waiting for checks: ci/validate"
    assert requests in (4, None)
    tick, requests = checked(fleet, verify_merges=True)
    assert tick.merge is not None and tick.merge.reason == "waiting for checks: ci/validate"
    assert requests in (7, None) and tag(fleet, "merge-when-green") == head(fleet)
    fleet.post_status(head(fleet), "ci/validate", "success", "ok")
    merged, requests = checked(fleet, (head(fleet),))
    assert [s.step for s in merged.did] == ["merge", "gate"] and fleet.open_pr("dev") is None
    assert tag(fleet, "merge-when-green") is None  # merged: removed in the same run
    if requests is not None:
        assert requests > 6  # 5 + the merge, then the gate's own reads


def test_the_record_is_written_and_removed_only_by_compare_and_swap(tmp_path: Path) -> None:
    """Two runs racing, or a person who moved the tag: a write or a removal that does not find the record where
    this run saw it changes nothing; a tag fleetflow does not own is never touched."""
    from tests.fleet import git

    origin = tmp_path / "gitops.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", str(work))
    shas = []
    for n in (1, 2):
        (work / "f").write_text(f"{n}\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"c{n}")
        shas.append(git(work, "rev-parse", "HEAD"))
    git(work, "push", "-q", str(origin), "HEAD:refs/heads/fleetflow/dev", f"{shas[0]}:refs/tags/release-1")
    repos = GitRepos(tmp_path / "cache")
    url = str(origin)
    repos.fetch(url, ["fleetflow/dev"])
    green = record_ref("dev", "merge-when-green")

    def seen() -> dict[str, str]:
        return seen_records(repos.remote_refs(url, ["refs/tags/*"]), "dev")

    assert write_record(repos, url, "dev", "auto-merge", shas[0], {})
    assert not write_record(repos, url, "dev", "auto-merge", shas[0], {RECORD: shas[0]})  # already so: no push
    assert not write_record(repos, url, "dev", "auto-merge", shas[1], {})  # it exists: this run's view was stale
    assert seen() == {RECORD: shas[0]}
    assert write_record(repos, url, "dev", "auto-merge", shas[1], seen())  # the head moved: the record follows
    assert write_record(repos, url, "dev", "merge-when-green", shas[1], seen())  # one kind replaces the other
    assert seen() == {green: shas[1]}
    assert not drop_records(repos, url, {green: shas[0]})  # not where this run saw it: left alone
    assert drop_records(repos, url, seen())
    assert repos.remote_refs(url, ["refs/tags/*"]) == {"refs/tags/release-1": shas[0]}  # not fleetflow's: kept


def test_status_and_doctor_read_the_records(fleet: Fleet) -> None:
    """``status`` shows an open PR whose merge is in the forge's hands (the record on its head); ``doctor`` reports a
    record of an environment the GitOps repository no longer serves (reconcile never touches it) with the command
    that deletes it, and counts a current record as fine. Both list the tags with ``ls-remote`` (no API request)."""
    from fleetflow.promotion.doctor import diagnose
    from fleetflow.promotion.status import as_text, fleet_status

    dev(fleet)
    pr = fleet.open_pr("dev")
    assert pr is not None
    with fleet.context() as ctx:
        entries = {e.name: e for e in fleet_status(ctx)}
    assert entries["dev"].merge_record is not None and entries["dev"].merge_record.head == pr.head_sha
    assert f"#{pr.number} auto-merge" in as_text(list(entries.values()))
    left = record_ref("staging")  # an environment renamed away, its record left behind
    subprocess.run(["git", "--git-dir", fleet.gitops_url, "update-ref", left, head(fleet)], check=True)
    with fleet.context() as ctx:
        found = diagnose(ctx)
    [stale] = [f for f in found.findings if f.check == "merge-records"]
    assert "staging" in stale.problem and stale.fix.endswith(f":{left}")
    assert any("merge record fleetflow/auto-merge/dev" in c and "current" in c for c in found.checked)
