"""Faults on the GitHub side, and how many API requests each step costs (printed; run with -s to see them)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.promote import promote_many
from tests.fleet import Fleet, environments_file
from tests.test_promotion import make_github_fleet


@pytest.fixture
def gh(tmp_path: Path, request: pytest.FixtureRequest) -> Fleet:
    return make_github_fleet(tmp_path, request)


def stub(fleet: Fleet) -> Any:
    return fleet.stub  # type: ignore[attr-defined]


def pulls(fleet: Fleet) -> list[Any]:
    return list(stub(fleet).repo("contoso/gitops").list_pulls())


def promote_dev(fleet: Fleet) -> None:
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("POST", r"/pulls$", "status_5xx"),
        ("POST", r"/statuses/", "secondary_rate_limit"),
        ("GET", r"/pulls$", "rate_limit"),
        ("POST", r"/pulls$", "drop_after"),
    ],
    ids=["5xx-on-create-pr", "secondary-rate-limit-on-status", "rate-limit-on-list", "dropped-after-create-pr"],
)
def test_fault_ends_in_the_right_state(gh: Fleet, method: str, path: str, kind: str) -> None:
    fault = stub(gh).inject(method, path, kind)
    promote_dev(gh)
    assert fault.hits == 1
    open_prs = [p for p in pulls(gh) if p.state == "open"]
    assert len(open_prs) == 1 and open_prs[0].head_ref == "fleetflow/dev"
    assert gh.cp_status(gh.branch_sha(gh.cp_url, "main"), "dev") == "pending"
    posts = [r for r in stub(gh).requests if r.method == "POST" and r.path.endswith("/statuses/"
             + gh.branch_sha(gh.cp_url, "main")) and r.status == 201]
    assert len(posts) == 1  # no duplicate status either


def test_pull_request_created_by_a_concurrent_run(gh: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between our "is there an open PR?" and our create, another run opened it: we adopt it (422)."""
    forge = gh.forge
    original = forge.pulls  # schedule's read of the open PRs of the head
    calls = {"n": 0}

    def racing_pulls(repo: str, head: str, which: Any = "all", **kwargs: Any) -> Any:
        found = original(repo, head, which, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1 and not found:
            # the other run pushed the same deterministic head and opened the PR just now
            monkeypatch.setattr(forge, "pulls", original)
            gh_repo = stub(gh).repo("contoso/gitops")
            state = {"created": False}

            original_create = forge.create_pull

            def create_after_race(*args: Any, **kwargs: Any) -> Any:
                if not state["created"]:
                    state["created"] = True
                    gh_repo.create_pull(title="concurrent", head="fleetflow/dev", base="dev", body="")
                return original_create(*args, **kwargs)

            monkeypatch.setattr(forge, "create_pull", create_after_race)
        return found

    monkeypatch.setattr(forge, "pulls", racing_pulls)
    promote_dev(gh)
    open_prs = [p for p in pulls(gh) if p.state == "open"]
    assert len(open_prs) == 1
    assert any(r.status == 422 for r in stub(gh).requests if r.method == "POST" and r.path.endswith("/pulls"))


def test_request_counts_per_step(gh: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    s = stub(gh)
    mark = s.mark()
    promote_dev(gh)
    promote_requests = s.count(since=mark)
    gh.approve("dev")
    gh.clock.advance(timedelta(minutes=0.5))
    gh.clusters_report("dev")
    mark = s.mark()
    with gh.context() as ctx:
        assert check_rollout(ctx, "dev").state == "pending"  # soaking: a gate check alone
    gate_requests = s.count(since=mark)
    gh.clock.advance(timedelta(minutes=2))
    mark = s.mark()
    with gh.context() as ctx:
        ctx_forge = ctx.forge
        assert ctx_forge is gh.forge
        outcome = check_rollout(ctx, "dev")
    gate_requests_with_fanout = s.count(since=mark)
    fanout = sum(p.schedule is not None for p in outcome.promoted)
    mark = s.mark()
    with gh.context() as ctx:
        check_rollout(ctx, "qa")  # qa's PR is open, not merged: the gate only waits
    waiting = s.count(since=mark)
    mark = s.mark()
    with gh.context() as ctx:
        assert check_rollout(ctx, "dev").state == "success"  # recorded: decided once per (environment, commit)
    assert s.count(since=mark, path=r"^/repos/contoso/gitops/commits/[0-9a-f]+/(status|check-runs)$") == 0
    with capsys.disabled():
        print(f"\nGitHub API requests: promote+schedule dev = {promote_requests}; gate check = {gate_requests}; "
              f"gate check dev + promote/schedule qa = {gate_requests_with_fanout} ({fanout} fan-out); "
              f"gate check of qa waiting for its merge = {waiting}")
    assert promote_requests <= 15
    assert gate_requests <= 6
    assert waiting == 0


def test_reconcile_request_counts(gh: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    """GitHub API requests of whole reconcile runs over the five environments (run with -s to see them). The
    budget (issue #8): promote+schedule <= 15, a gate check <= 6, and 0 while an environment waits for its PR to be
    merged: git alone says a PR was made for the head branch's tip (GitHub keeps ``refs/pull/<N>/head`` for every
    pull request, "Checking out pull requests locally", https://docs.github.com/en/pull-requests/how-tos/
    review-pull-requests/checking-out-pull-requests-locally), and an environment whose next environments were all
    promoted to its pin needs no gate record read (promote checked it). qa has ``autoMerge`` (the repository allows
    auto-merge, qa requires ``ci/validate``): once its merge step turned GitHub's auto-merge on, the tag
    ``fleetflow/auto-merge/qa`` on the head says so (fleetflow/promotion/merge_records.py; pushing and deleting tags:
    https://docs.github.com/en/get-started/using-git/pushing-commits-to-a-remote-repository), so its wait costs 0
    too; the cron tick (``verify_merges``) reads the PR once. Counted on the stand-in, not timed."""
    from fleetflow.promotion.reconcile import reconcile

    s = stub(gh)
    gitops = s.repo(gh.gitops_id)
    gitops.allow_auto_merge = True
    gitops.protection["qa"] = ["ci/validate"]
    gh.push_main(environments_file(auto_merge=("qa",)), "qa merges by itself")

    def counted(verify_merges: bool = False) -> int:
        mark = s.mark()
        with gh.context() as ctx:
            reconcile(ctx, verify_merges=verify_merges)
        return s.count(since=mark)

    promote_run = counted()  # dev: promote + schedule; the others: nothing promoted yet
    waiting_merge = counted()  # dev PR is open
    gh.approve("dev")
    gh.clock.advance(timedelta(minutes=0.5))
    gh.clusters_report("dev")
    soaking = counted()  # dev: a gate check (soaking)
    gh.clock.advance(timedelta(minutes=2))
    gate_and_promote = counted()  # dev: gate success; qa: promote + schedule + auto-merge on (recorded)
    pr = gh.open_pr("qa")
    assert pr is not None and gitops.pull(pr.number).auto_merge is not None
    waiting_qa = counted()  # qa waits for GitHub's auto-merge: the record says so
    cron_tick = counted(verify_merges=True)  # reads qa's PR once: auto-merge still on
    with capsys.disabled():
        print(f"\nGitHub API requests per reconcile run (5 environments): promote+schedule dev = {promote_run}; "
              f"waiting for dev's merge = {waiting_merge}; gate check (soaking) = {soaking}; gate success + "
              f"promote+schedule qa (auto-merge on) = {gate_and_promote}; waiting for qa's auto-merge = {waiting_qa}; "
              f"the cron tick verifying it = {cron_tick}")
    assert promote_run <= 15
    assert waiting_merge == 0 and waiting_qa == 0
    assert cron_tick == 1
    assert soaking <= 6 + 2
    assert gate_and_promote <= 6 + 15
    gitops.add_status(pr.head_sha, "success", "ci/validate", "ok")  # GitHub merges it: no event, no run needed
    assert gitops.pull(pr.number).merged


def test_waiting_reads_only_git_yet_a_half_done_schedule_and_a_merge_are_found(gh: Fleet) -> None:
    """The git-only wait keeps reconcile correct: a head branch pushed without its PR (the create failed) has no
    ``refs/pull/<N>/head`` on its tip, so the next run asks the API and opens the PR; once the PR exists, runs cost
    no request until the PR is merged; the merge is seen in git (the GitOps branch carries the pin) and the gate
    runs. GitHub's pull refs: https://docs.github.com/en/pull-requests/how-tos/review-pull-requests/
    checking-out-pull-requests-locally ("After a pull request is opened, GitHub stores all of the changes
    remotely": ``git fetch origin pull/ID/head``, also for closed, "inactive" pull requests)."""
    from fleetflow.promotion.reconcile import reconcile

    s = stub(gh)

    def counted() -> tuple[Any, int]:
        mark = s.mark()
        with gh.context() as ctx:
            outcome = reconcile(ctx)
        return {e.environment: e for e in outcome.environments}, s.count(since=mark)

    s.inject("POST", r"/pulls$", "status_5xx", times=50)
    first, _ = counted()
    s.clear_faults()
    assert first["dev"].problems and gh.open_pr("dev") is None  # pinned and pushed, no PR: half done
    assert gh.branch_sha(gh.gitops_url, "fleetflow/dev") is not None
    finished, requests = counted()
    assert [step.step for step in finished["dev"].did] == ["schedule"] and requests > 0
    pr = gh.open_pr("dev")
    assert pr is not None
    for _ in range(2):
        waiting, requests = counted()
        assert requests == 0, [(r.method, r.path) for r in s.requests_since(s.mark() - requests)]
        assert waiting["dev"].found.pull_ref == pr.number and f"PR #{pr.number}" in waiting["dev"].waiting
    gh.approve("dev")
    merged, requests = counted()
    assert [step.step for step in merged["dev"].did] == ["gate"] and requests > 0
