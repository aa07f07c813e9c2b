"""The gate reads the newest report per context across every GitOps commit from the merge to the tip, with
statuses posted exactly as Flux's notification-controller and Argo CD notifications post them (see
``tests/reporters.py`` for the source files each simulation follows), on both forges; and it reads no more pages
than its decision needs (request counts on the GitHub stand-in)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fleetflow.forge.base import CommitStatus
from fleetflow.forge.github import GitHubForge
from fleetflow.forge.local import LocalForge
from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.gate import Counts, GateDecision, estimate, evaluate, newest_reports
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.reports import read_and_decide
from fleetflow.render.incremental import ExpectedCluster
from tests import stand_in
from tests.fleet import Fleet
from tests.ghstub.server import GitHubStub
from tests.reporters import ArgoReporter, FluxReporter, argo_trunc, flux_description
from tests.stand_in import REPO

stub, forge = stand_in.stub, stand_in.forge  # the shared stand-in fixtures (pytest finds them by name)
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def report(context: str, state: str, minutes: float = 0, description: str = "", kind: str = "status") -> CommitStatus:
    return CommitStatus(context, state, description, T0 + timedelta(minutes=minutes), kind)  # type: ignore[arg-type]


# -- the rule, pure ------------------------------------------------------------------------------------------


def test_flux_descriptions_are_the_reason_split_and_lowercased() -> None:
    """fluxcd/notification-controller internal/notifier/util.go ``formatNameAndDescription`` / ``splitCamelcase``."""
    assert flux_description("ReconciliationSucceeded") == "reconciliation succeeded"
    assert flux_description("HealthCheckFailed") == "health check failed"
    assert flux_description("PDFLoader") == "pdf loader"


def test_the_newest_commit_decides_whatever_the_timestamps() -> None:
    """Commit order first: a report on an older commit posted later (a slow Flux health check finishing on the
    revision it had applied) is older news than the cluster's report on a newer commit."""
    tip = [report("flux/a", "success", 1)]
    older = [report("flux/a", "failure", 9, "health check failed"), report("flux/b", "success", 2)]
    newest = newest_reports([tip, older])
    assert newest["flux/a"].state == "success" and newest["flux/b"].state == "success"


def test_within_one_commit_the_later_of_status_and_check_run_wins() -> None:
    """A context posted as a commit status and as a check run (Argo CD can do both, github.go ``CheckRun``)."""
    same = [report("argocd/a", "success", 1), report("argocd/a", "failure", 3, kind="check")]
    assert newest_reports([same])["argocd/a"].state == "failure"
    tie = [report("argocd/a", "success", 1), report("argocd/a", "failure", 1, kind="check")]
    assert newest_reports([tie])["argocd/a"].state == "failure"  # a tie goes to the worse state


def test_counts_decide_pending_and_timeout_but_never_success_or_failure() -> None:
    policy = RolloutPolicy.model_validate({"timeout": "30m"})
    clusters = [ExpectedCluster(f"c{i}", "ct", f"flux/c{i}") for i in range(300)]
    few = [Counts("success", 120), Counts("success", 100)]
    pending = estimate(policy, clusters, few, T0, T0 + timedelta(minutes=5))
    assert isinstance(pending, GateDecision) and pending.state == "pending" and not pending.counted
    late = estimate(policy, clusters, few, T0, T0 + timedelta(minutes=31))
    assert isinstance(late, GateDecision) and late.state == "failure" and "at most 220/300" in late.description
    assert estimate(policy, clusters, [Counts("failure", 120)], T0, T0) is None  # a failure: read it
    assert estimate(policy, clusters, [Counts("success", 120, 5, checks_failed=True)], T0, T0) is None
    assert estimate(policy, clusters, [Counts("success", 120, 101, checks_read=False)], T0, T0) is None
    assert estimate(policy, clusters, [Counts("success", 200), Counts("pending", 100)], T0, T0) is None  # could be in
    # as many reports as clusters and a pending one on the newest commit: someone has not succeeded
    waiting = estimate(policy, clusters, [Counts("pending", 200), Counts("success", 100)], T0, T0)
    assert isinstance(waiting, GateDecision) and waiting.state == "pending"
    assert estimate(policy, clusters, [Counts("pending", 201), Counts("success", 100)], T0, T0) is None


def test_counts_decide_pending_while_the_soak_time_since_the_start_runs() -> None:
    """Every cluster may have succeeded (as many reports as clusters, nothing failed), but the soak time counts from
    the newest success, which is not older than the rollout's start: before start + soakTime the gate is pending
    from the first pages alone (bench_requests.py: 17 -> 8 requests at 1,000 clusters). Afterwards, or after any
    failure, the reports are read."""
    policy = RolloutPolicy.model_validate({"timeout": "30m", "soakTime": "10m"})
    clusters = [ExpectedCluster(f"c{i}", "ct", f"flux/c{i}") for i in range(300)]
    complete = [Counts("success", 300)]
    soaking = estimate(policy, clusters, complete, T0, T0 + timedelta(minutes=4))
    assert isinstance(soaking, GateDecision) and soaking.state == "pending" and not soaking.counted
    assert soaking.ready_at == T0 + timedelta(minutes=10) and "soaking" in soaking.description
    assert estimate(policy, clusters, complete, T0, T0 + timedelta(minutes=10)) is None  # may be success: read
    assert estimate(policy, clusters, [Counts("failure", 300)], T0, T0 + timedelta(minutes=4)) is None
    few = estimate(policy, clusters, [Counts("success", 100)], T0, T0 + timedelta(minutes=4))
    assert isinstance(few, GateDecision) and few.description.startswith("rolling out")  # not everyone reported


def test_a_long_argo_message_with_newlines_and_colons_stays_one_line() -> None:
    """Argo CD cuts the message to 140 characters and keeps newlines (notifications-engine pkg/services/github.go
    ``trunc``); a log line starting with ``::`` would be a workflow command on GitHub Actions, so the gate's
    description (printed and posted) is one line."""
    message = "app-of-apps: sync Failed, health Degraded\n::error::Deployment/web:: 0/3 replicas ready\n" + "x" * 200
    posted = argo_trunc(message)
    assert len(posted) == 140 and posted.endswith("...") and "\n" in posted
    clusters = [ExpectedCluster("a", "ct", "argocd/a")]
    decision = evaluate(RolloutPolicy(), clusters, {"argocd/a": report("argocd/a", "failure", 1, posted)}, T0, T0)
    assert isinstance(decision, GateDecision) and decision.state == "failure"
    text = decision.status_description()
    assert "\n" not in text and len(text) <= 140 and "a (app-of-apps: sync Failed" in text
    assert not any(line.startswith("::") for line in text.splitlines())


# -- on both forges, with the real check_rollout ---------------------------------------------------------------


def gitops_commit(fleet: Fleet, env: str, name: str) -> str:
    """A commit on the GitOps branch that keeps state.json (a person's hotfix, or a change of a file fleetflow
    does not own): the rollout's main commit is still what the branch carries."""
    work = fleet.root / f"hotfix-{name}"
    if not work.exists():
        subprocess.run(["git", "clone", "-q", "--branch", env, fleet.gitops_url, str(work)], check=True)
    run = {"cwd": work, "check": True, "capture_output": True}
    subprocess.run(["git", "pull", "-q", "--ff-only", "origin", env], **run)  # type: ignore[call-overload]
    (work / f"{name}.md").write_text(f"{name}\n")
    subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "-c", "user.name=ops", "-c", "user.email=ops@example.com", "commit", "-q", "-m", name],
                   **run)  # type: ignore[call-overload]
    subprocess.run(["git", "push", "-q", "origin", f"HEAD:{env}"], **run)  # type: ignore[call-overload]
    return fleet.gitops_tip(env)


def gate(fleet: Fleet, env: str = "dev") -> Any:
    with fleet.context() as ctx:
        return check_rollout(ctx, env)


def merged_dev(fleet: Fleet) -> str:
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    fleet.clock.advance(timedelta(minutes=0.5))
    return fleet.gitops_tip("dev")


def test_a_failure_on_an_intermediate_commit_beats_an_older_success(fleet: Fleet) -> None:
    """Flux (internal/notifier/github.go): dev-1 reconciled the merge, then failed its health check on the next
    commit; on the tip its health check is still running, and Flux posts nothing for progressing events. The
    gate used to read only the merge and the tip and count dev-1's old success; the newest report is a failure.
    Then Flux de-duplicates a repeat of the same failure, and dev-1 recovers on the tip: success."""
    merge = merged_dev(fleet)
    one, two = FluxReporter(fleet, "flux/dev-1"), FluxReporter(fleet, "flux/dev-2")
    one.event(merge, "info", "ReconciliationSucceeded")
    two.event(merge, "info", "ReconciliationSucceeded")
    middle = gitops_commit(fleet, "dev", "middle")
    one.event(middle, "error", "HealthCheckFailed")
    tip = gitops_commit(fleet, "dev", "tip")
    one.event(tip, "info", "Progressing")  # skipped by Flux: nothing on the tip
    fleet.clock.advance(timedelta(minutes=2))
    outcome = gate(fleet)
    assert outcome.state == "failure" and "dev-1 (health check failed)" in outcome.description
    assert fleet.cp_status(merge_main(fleet), "dev") == "failure" and fleet.pin("qa") == ""
    one.event(middle, "error", "HealthCheckFailed")  # the same event again: Flux skips the duplicate post
    assert (one.posts, one.skipped) == (2, 1)
    one.event(tip, "info", "ReconciliationSucceeded")
    fleet.clock.advance(timedelta(minutes=0.5))
    assert gate(fleet).state == "pending"  # soaking: dev-1's last success is new
    fleet.clock.advance(timedelta(minutes=1))
    assert gate(fleet).state == "success" and fleet.pin("qa") == merge_main(fleet)


def merge_main(fleet: Fleet) -> str:
    return fleet.branch_sha(fleet.cp_url, "main")


def test_reports_only_on_intermediate_or_later_commits_count_and_argo_pending_waits(fleet: Fleet) -> None:
    """dev-2 runs Argo CD (notifications-engine pkg/services/github.go: state as templated, the syncing trigger
    posts ``pending``, the message cut to 140 characters with its newlines); dev-1 runs Flux and reports only on
    a later commit. A report that exists only on an intermediate commit counts; a newer ``pending`` (a sync of
    the tip started) makes the gate wait again."""
    fleet.push_env("dev", {"clusters.yaml": "---\n".join(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dev-{i}\n"
        f"spec:\n  clusterType: cloud\n  statusContext: {ctx}\n"
        for i, ctx in ((1, "flux/dev-1"), (2, "argocd/dev-2")))})
    merge = merged_dev(fleet)
    flux, argo = FluxReporter(fleet, "flux/dev-1"), ArgoReporter(fleet, "argocd/dev-2")
    argo.send(merge, "pending", "fleetflow-root is syncing")
    middle = gitops_commit(fleet, "dev", "middle")
    argo.send(middle, "success", "fleetflow-root synced " + middle + " and is healthy")
    tip = gitops_commit(fleet, "dev", "tip")
    assert gate(fleet).state == "pending"  # dev-1 has not reported anywhere
    flux.event(tip, "info", "ReconciliationSucceeded")  # only on the later commit
    argo.send(tip, "pending", "fleetflow-root is syncing")  # Argo picked up the tip: its newest report is pending
    fleet.clock.advance(timedelta(minutes=2))
    outcome = gate(fleet)
    assert outcome.state == "pending" and outcome.decision.missing == ["dev-2"]
    long = "fleetflow-root synced " + tip + "\nresources:\n" + "".join(f"  apps/Deployment::web-{i} Healthy\n"
                                                                       for i in range(20))
    argo.send(tip, "success", long)
    fleet.clock.advance(timedelta(minutes=2))
    outcome = gate(fleet)
    assert outcome.state == "success", outcome.description
    assert sorted(outcome.decision.succeeded) == ["dev-1", "dev-2"]


def test_before_the_merge_nothing_is_read(fleet: Fleet) -> None:
    with fleet.context() as ctx:
        promote_many(ctx, None, merge_main(fleet))
    assert gate(fleet).state == "waiting-for-merge"


# -- reading no more than the decision needs (GitHub stand-in) ---------------------------------------------------

def fleet_of(n: int) -> list[ExpectedCluster]:
    return [ExpectedCluster(f"c{i:05}", "ct", f"flux/c{i:05}") for i in range(n)]


def post(stub: GitHubStub, sha: str, states: dict[int, str]) -> None:
    repo = stub.repo(REPO)
    for i, state in states.items():
        repo.add_status(sha, state, f"flux/c{i:05}", flux_description("ReconciliationSucceeded"))


def decide(stub: GitHubStub, forge: GitHubForge, commits: list[str], n: int, minutes: float = 5) -> tuple[Any, int]:
    mark = stub.mark()
    now = datetime.now(UTC) + timedelta(seconds=1)  # the stand-in stamps statuses with the real time
    policy = RolloutPolicy.model_validate({"timeout": "30m", "soakTime": "0s"})
    reading = read_and_decide(forge, REPO, commits, policy, fleet_of(n), now - timedelta(minutes=minutes), now)
    return reading, stub.count(since=mark)


def test_budget_at_1000_clusters(stub: GitHubStub, forge: GitHubForge) -> None:
    """≤ 3 requests while pending (the combined status' ``total_count`` and ``state``, REST docs "Get the combined
    status for a specific reference", plus the first page of check runs, which the combined status leaves out);
    one full read (10 pages of 100, GitHub's page limit) for the success."""
    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(999)})
    reading, requests = decide(stub, forge, [sha], 1000)
    assert reading.decision.state == "pending" and not reading.enumerated and requests == 2
    post(stub, sha, {999: "success"})
    reading, requests = decide(stub, forge, [sha], 1000)
    assert reading.decision.state == "success" and reading.enumerated and requests == 11  # 10 status pages + 1
    assert reading.decision.succeeded[-1] == "c00999"


def test_a_failure_stops_the_read_at_its_page(stub: GitHubStub, forge: GitHubForge) -> None:
    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(450)})
    post(stub, sha, {150: "failure"})
    reading, requests = decide(stub, forge, [sha], 1000)
    assert reading.decision.state == "failure" and "c00150" in reading.decision.description
    assert requests == 3  # page 1 + check runs, then page 2 holds c00150: pages 3-5 are not read


def test_a_failure_superseded_on_a_newer_commit_is_not_final(stub: GitHubStub, forge: GitHubForge) -> None:
    repo = stub.repo(REPO)
    old = repo.branch_sha("dev")
    assert old
    post(stub, old, {i: "success" for i in range(150)})
    post(stub, old, {7: "failure"})
    new = repo.commit_files("dev", {"x.md": "x\n"}, "two")
    post(stub, new, {7: "success"})
    post(stub, new, {i: "success" for i in range(150, 200)})
    reading, _ = decide(stub, forge, [new, old], 200)
    assert reading.decision.state == "success" and reading.enumerated


def test_pending_without_any_failure_stops_at_the_first_pending_cluster(stub: GitHubStub, forge: GitHubForge) -> None:
    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(300)})
    post(stub, sha, {120: "pending"})  # Argo CD's syncing trigger
    stub.repo(REPO).add_status(sha, "success", "ci/lint", "an unrelated context: the counts cannot tell")
    reading, requests = decide(stub, forge, [sha], 300)
    assert reading.decision.state == "pending" and requests == 3
    assert not reading.enumerated


def test_local_forge_decides_the_same(tmp_path: Path) -> None:
    """The local forge reads a commit in one page; the decisions match GitHub's."""
    from tests.fleet import git

    origin = tmp_path / "gitops.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", str(seed))
    (seed / "README.md").write_text("x\n")
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one")
    git(seed, "push", "-q", str(origin), "HEAD:refs/heads/dev")
    sha = git(seed, "rev-parse", "HEAD")
    forge = LocalForge(cache_dir=tmp_path / "cache")
    for i in range(3):
        forge.set_status(str(origin), sha, f"flux/c{i:05}", "success", "reconciliation succeeded")
    policy = RolloutPolicy.model_validate({"timeout": "30m"})
    reading = read_and_decide(forge, str(origin), [sha], policy, fleet_of(4), T0, T0 + timedelta(minutes=5))
    assert isinstance(reading.decision, GateDecision) and reading.decision.state == "pending"
    assert reading.decision.missing == ["c00003"] and reading.enumerated
    forge.set_status(str(origin), sha, "flux/c00003", "failure", "health check failed")
    reading = read_and_decide(forge, str(origin), [sha], policy, fleet_of(4), T0, T0 + timedelta(minutes=5))
    assert isinstance(reading.decision, GateDecision) and reading.decision.state == "failure"
