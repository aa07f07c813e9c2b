"""The promotion history read back from what promotion records (pins, GitOps merges, ``fleetflow/<env>``
statuses), on both forges: the local one and the real GitHubForge against the stand-in server, whose request
log bounds what reading the history costs.

GitHub: ``GET /repos/{owner}/{repo}/commits/{ref}/statuses`` lists every status of a commit, newest first, 100 a
page (https://docs.github.com/en/rest/commits/statuses#list-commit-statuses-for-a-reference); a merge commit's
message is "Merge pull request #N from owner/branch" followed by the PR title
(https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/incorporating-changes-from-a-pull-request/about-pull-request-merges).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.history import read_history
from fleetflow.promotion.promote import promote, promote_many
from fleetflow.promotion.schedule import schedule_environment
from tests.fleet import Fleet, git
from tests.test_promotion import make_github_fleet, roll_out


def scripted_history(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A through the whole chain; B succeeds in dev and fails in qa; dev is rolled back to A (held), then qa by
    hand (an automatic promotion never rolls back). B lands on main at the fleet clock's time."""
    a = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, None, a)
    for env in ("dev", "qa", "prod-eu", "prod-us", "dr"):
        assert roll_out(fleet, env) == "success"
    fleet.clock.advance(timedelta(minutes=60))
    stamp = f"{int(fleet.clock.now.timestamp())} +0000"
    monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)
    monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
    b = fleet.push_main({"workloads/note.yaml": "# a note\n"}, "note: a change that breaks qa")
    with fleet.context() as ctx:
        promote_many(ctx, None, b)
    assert roll_out(fleet, "dev") == "success"
    assert roll_out(fleet, "qa", {2: "failure"}) == "failure"
    fleet.clock.advance(timedelta(minutes=30))
    with fleet.context() as ctx:
        back = promote(ctx, "dev", a)
    assert back.held and "rollback" in back.held
    assert roll_out(fleet, "dev") == "success"
    with fleet.context() as ctx:
        assert promote(ctx, "qa", a).held
    return a, b


def test_history_of_promotions_pins_merges_and_gates(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = scripted_history(fleet, monkeypatch)
    with fleet.context() as ctx:
        history = read_history(ctx)
    assert history.order == ["dev", "qa", "prod-eu", "prod-us", "dr"]
    assert history.after["dr"] == ["prod-eu", "prod-us"]
    dev = history.promotions["dev"]
    assert [(p.commit, p.outcome, p.rollback) for p in dev] == [
        (a, "success", False), (b, "success", False), (a, "success", True)]
    assert dev[2].hold == f"rollback from {b[:12]} to {a[:12]}"
    qa = history.promotions["qa"]
    # qa rolled back to A by hand (and held): dev's success on A did not roll it back
    assert [(p.commit, p.outcome, p.rollback) for p in qa] == [
        (a, "success", False), (b, "failure", False), (a, "pending", True)]
    assert "failing: qa-2" in qa[1].description
    assert qa[1].subject == "note: a change that breaks qa"
    for env in ("prod-eu", "prod-us", "dr"):
        assert [(p.commit, p.outcome) for p in history.promotions[env]] == [(a, "success")]
    assert qa[2].pinned_at and not qa[2].merged_at and not qa[2].decided_at  # its PR waits for a merge
    for p in history.all():
        if p is qa[2]:
            continue
        assert p.pinned_at and p.merged_at and p.decided_at and p.gitops_commit, p
        assert p.pinned_at <= p.decided_at
        assert p.commit == a or p.landed_at <= p.pinned_at
        assert p.pinned_at.replace(microsecond=0) <= p.merged_at <= p.decided_at
    # the rollback was merged anew (a later GitOps commit than A's first merge into dev)
    assert dev[2].gitops_commit != dev[0].gitops_commit and dev[2].merged_at > dev[1].decided_at  # type: ignore
    landed = int(git(fleet.root, "--git-dir", fleet.cp_url, "show", "-s", "--format=%ct", b))
    assert qa[1].landed_at.timestamp() == landed and dev[1].landed_at == qa[1].landed_at
    assert history.status_reads == 2  # one per distinct main commit, shared by every environment


def test_history_limit_keeps_the_newest(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = scripted_history(fleet, monkeypatch)
    with fleet.context() as ctx:
        history = read_history(ctx, limit=2)
    assert [(p.commit, p.rollback) for p in history.promotions["dev"]] == [(b, False), (a, True)]
    # the older promotion of A (past the limit) does not shift the newest onto the wrong status posts
    assert history.promotions["dev"][1].outcome == "success"


@pytest.mark.parametrize("promotions", [3])
def test_history_costs_one_status_read_per_main_commit_on_github(
        tmp_path: Path, request: pytest.FixtureRequest, promotions: int) -> None:
    """N main commits through the 5-environment chain (5 N promotions): the requests reading the history makes
    on the GitHub stand-in, printed for the report."""
    gh = make_github_fleet(tmp_path, request)
    stub = gh.stub  # type: ignore[attr-defined]
    for i in range(promotions):
        sha = gh.branch_sha(gh.cp_url, "main") if i == 0 else gh.push_main({f"workloads/n{i}.yaml": "# n\n"}, f"c{i}")
        with gh.context() as ctx:
            promote_many(ctx, None, sha)
        for env in ("dev", "qa", "prod-eu", "prod-us", "dr"):
            assert roll_out(gh, env) == "success"
    with gh.context() as ctx:
        ctx.main_tip()
        mark = stub.mark()
        history = read_history(ctx)
        made = [f"{r.method} {r.path}" for r in stub.requests_since(mark)]
    assert sum(len(v) for v in history.promotions.values()) == 5 * promotions
    status_reads = [r for r in made if r.endswith("/statuses")]
    assert len(status_reads) == promotions == history.status_reads
    assert len(made) == promotions, made  # nothing else: the repositories were read before (the clone URLs)
    first = history.promotions["dev"][0].commit
    url = gh.forge.commit_url("contoso/control-plane", first)  # the repository's html_url + /commit/<sha>
    assert url is not None and url.endswith(f"/contoso/control-plane/commit/{first}")
    print(f"\nhistory of {5 * promotions} promotions ({promotions} main commits): {len(made)} GitHub requests")


def test_status_page_on_github_links_commits_and_pull_requests(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """On GitHub the page links each commit to its page (the repository's ``html_url`` + ``/commit/<sha>``) and
    the open PR to its ``html_url``; the requests writing the whole page makes are counted for the report."""
    from fleetflow.promotion.statuspage import write_status_page

    gh = make_github_fleet(tmp_path, request)
    stub = gh.stub  # type: ignore[attr-defined]
    sha = gh.branch_sha(gh.cp_url, "main")
    with gh.context() as ctx:
        promote_many(ctx, None, sha)
    for env in ("dev", "qa", "prod-eu", "prod-us", "dr"):
        assert roll_out(gh, env) == "success"
    b = gh.push_main({"workloads/n.yaml": "# n\n"}, "b")
    with gh.context() as ctx:
        promote_many(ctx, None, b)
    assert roll_out(gh, "dev") == "success"  # qa now has an open PR for b
    with gh.context() as ctx:
        mark = stub.mark()
        page = write_status_page(ctx, tmp_path / "site")
        made = stub.count(since=mark)
    html = page.read_text(encoding="utf-8")
    pr = gh.open_pr("qa")
    assert pr is not None and pr.url.startswith("http") and f'href="{pr.url}"' in html
    assert f'/contoso/control-plane/commit/{sha}"' in html
    assert 'href="local://' not in html
    print(f"\nstatus page of 5 environments (7 promotions of 2 commits): {made} GitHub requests")
    assert made <= 60


def test_a_pin_reverted_by_hand_is_a_rollback_that_restores(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A realistic-mistake hunt (2026-11-29): B fails its gate in dev and a person ``git revert``s B's pin commit on
    the dev branch (no ``promote``, so no "scheduled" post; the gate passed A before, so it posts nothing new:
    check_rollout's "gate success (recorded)"). The history took A's first run for the revert (its success at
    the old time), called A's first promotion "superseded", and left dev's outage open. Now the revert is a
    rollback pinned when the person committed it, rolled out when its PR merged, and it ends the outage.
    ``git revert`` commits the inverse of a commit with the message 'Revert "<subject>"'
    (https://git-scm.com/docs/git-revert)."""
    from fleetflow.delivery.metrics import compute

    a = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote(ctx, "dev", a)
    assert roll_out(fleet, "dev") == "success"
    fleet.clock.advance(timedelta(hours=1))
    b = fleet.push_main({"workloads/n.yaml": "# n\n"}, "b breaks dev")
    with fleet.context() as ctx:
        promote(ctx, "dev", b)
    assert roll_out(fleet, "dev", {2: "failure"}) == "failure"
    fleet.clock.advance(timedelta(hours=1))
    reverted_at = fleet.clock.now
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"{int(reverted_at.timestamp())} +0000")
    work = fleet.root / "revert"
    git(fleet.root, "clone", "-q", "-b", "dev", fleet.cp_url, str(work))
    git(work, "-c", "user.name=Ops", "-c", "user.email=ops@example.com", "revert", "--no-edit", "HEAD")
    git(work, "push", "-q", "origin", "HEAD:dev")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    with fleet.context() as ctx:
        schedule_environment(ctx, "dev")  # what the push to dev runs
    assert fleet.pin("dev") == a and roll_out(fleet, "dev") == "success"
    with fleet.context() as ctx:
        history = read_history(ctx)
        report = compute(history.all(), history.after, ctx.clock())
    dev = history.promotions["dev"]
    assert [(p.commit, p.outcome, p.rollback) for p in dev] == [
        (a, "success", False), (b, "failure", False), (a, "success", True)]
    assert dev[0].pinned_at is not None and dev[0].pinned_at < reverted_at
    assert dev[2].pinned_at == reverted_at and dev[2].decided_at is not None and dev[2].decided_at >= reverted_at
    [metrics] = [m for m in report.environments if m.environment == "dev"]
    assert metrics.open_outage_since is None and metrics.time_to_restore.count == 1
    assert (metrics.failed, metrics.decided) == (2, 3)  # B's gate failure and the rollback


def test_the_chain_metrics_count_a_commit_through_the_chain_of_its_day(fleet: Fleet) -> None:
    """A realistic-mistake hunt (2026-11-29): A went through the whole chain; then a new last environment, dr2 after
    prod-eu, is added on main (its branch not made yet). The chain's lead time and frequency counted only commits
    that succeeded in dr and dr2 too, so A, delivered through the chain of its day, vanished from them. The
    history now reads the chain at each commit (``History.sinks_at``)."""
    from fleetflow.delivery.metrics import compute
    from tests.fleet import _environment

    a = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, None, a)
    for env in ("dev", "qa", "prod-eu", "prod-us", "dr"):
        assert roll_out(fleet, env) == "success"
    envs = git(fleet.root, "--git-dir", fleet.cp_url, "show", "main:.environments/envs.yaml")
    fleet.push_main({".environments/envs.yaml": envs + "\n---\n" + _environment("dr2", ["prod-eu"])}, "add dr2")
    warned: list[object] = []
    with fleet.context() as ctx:
        ctx.warn = warned.append  # type: ignore[method-assign]
        history = read_history(ctx, warn_missing=False)
        report = compute(history.all(), history.after, ctx.clock(), sinks_at=history.sinks_at)
    assert history.after.get("dr2") == ["prod-eu"], warned
    assert history.sinks_at == {a: ["dr"]}
    # the fixture's commits are dated by the machine's clock, the gate's successes by the fleet's (earlier): A's lead
    # time is one left out for that skew, and it still counts as a delivery through the chain
    [through] = [*report.chain.lead_times, *report.chain.lead_times_left_out]
    assert through.commit == a and through.at == history.promotions["dr"][0].decided_at
    assert report.chain.successes == 1


def test_pairing_gate_runs_with_pins_written_by_hand() -> None:
    """``pair_episodes`` on plain data: a branch whose pin commits were squashed into one by a person keeps that pin's
    run (a guard for the rule above, which the old reading also met); a ``git revert`` back to a commit promote
    pinned before gets no run of its own; a run past the history's limit, older than promote's pin, is no hand
    pin's; a pin written by Kalypso or by hand gets the run the gate opened without a "scheduled" post."""
    from datetime import UTC, datetime

    from fleetflow.forge.base import CommitStatus
    from fleetflow.promotion.history import pair_episodes

    def run(first: str, day: int) -> list[CommitStatus]:
        when = datetime(2026, 3, day, tzinfo=UTC)
        return [CommitStatus("fleetflow/dev", "pending", first, updated_at=when),
                CommitStatus("fleetflow/dev", "success", "rolled out", updated_at=when)]

    e0, e1, gate = run("scheduled", 1), run("scheduled", 2), run("waiting for the merge", 3)
    assert pair_episodes(["squashed"], {"squashed"}, [e1]) == {"squashed": e1}
    assert pair_episodes(["p1", "revert"], {"revert"}, [e1]) == {"p1": e1}
    assert pair_episodes(["p1", "revert"], {"revert"}, [e0, e1]) == {"p1": e1}
    assert pair_episodes(["kalypso"], {"kalypso"}, [gate]) == {"kalypso": gate}
    assert pair_episodes(["kalypso", "p2"], {"kalypso"}, [gate, e1]) == {"kalypso": gate, "p2": e1}


@pytest.mark.parametrize("method", ["merge", "squash"])
def test_merge_time_of_a_pr_a_person_retitled_before_merging(tmp_path: Path, request: pytest.FixtureRequest,
                                                              method: str) -> None:
    """A realistic-mistake hunt (2026-11-29): a person renames fleetflow's PR to their change ticket ("Deploy to dev
    (CHG-1234)") and merges it. GitHub's merge commit is "Merge pull request #N from owner/branch" followed by the
    PR title (https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/incorporating-changes-from-a-pull-request/about-pull-request-merges),
    so no ``main@`` is left in it and the page showed no merge time. Now the merge of fleetflow's head branch
    after the pin counts. A squash commit with an edited title carries nothing of fleetflow's: still no time
    (the stand-in's squash message is the title alone)."""
    gh = make_github_fleet(tmp_path, request)
    repo = gh.stub.repo("contoso/gitops")  # type: ignore[attr-defined]
    a = gh.branch_sha(gh.cp_url, "main")
    with gh.context() as ctx:
        promote(ctx, "dev", a)
    pr = gh.open_pr("dev")
    gh.clock.advance(timedelta(minutes=3))
    repo.update_pull(pr.number, title="Deploy to dev (CHG-1234)")
    merge_sha = repo.merge_pull(pr.number, method)
    gh.clock.advance(timedelta(minutes=0.5))
    gh.clusters_report("dev")
    gh.clock.advance(timedelta(minutes=2))
    with gh.context() as ctx:
        assert check_rollout(ctx, "dev").state == "success"
        [dev] = read_history(ctx).promotions["dev"]
    if method == "merge":
        assert dev.gitops_commit == merge_sha and dev.merged_at == gh.clock.now - timedelta(minutes=2.5)
    else:
        assert dev.gitops_commit is None and dev.merged_at is None
