"""The promotion chain driven only by the events GitHub would send (tests/eventloop.py), on the stand-in server:
no hand-built event. A push to main goes dev → qa → prod with the people merging the PRs and simulated clusters
posting as Flux's notification-controller does (one status per cluster on the commit it applied, ``success`` or
``failure``, never ``pending``, no repeat of an identical post: fluxcd/notification-controller
internal/notifier/github.go). With 30% of deliveries dropped, 20% duplicated and the rest reordered (seeded), the
chain reaches the same end state through later events and cron ticks, with no duplicate PR, pin or status; a failing
cluster in qa stops prod in every seed. The same loop run with the old design (route → promote / schedule /
check-rollout, what the workflows ran before reconcile) loses the chain when the push to main is dropped: here with
today's single steps in process, in tests/test_old_design.py with the old commit's own workflows and code under act.

The loop applies GitHub's file rules, ``on:`` filters, the job ``if:`` and concurrency; what a delivery runs is
either ``fleetflow reconcile`` in process (fast: every seed, both scenarios, and the old design) or, in
``test_faults_under_act``, an act run of the real caller workflow → reusable workflow → reconcile action, the path
``test_act_e2e.py::test_the_chain_runs_under_act_on_found_events`` takes (``World.deliver`` there). Under act the
client throttle is off (``FLEETFLOW_GITHUB_THROTTLE=0,0``: the stand-in has no rate limit; PyGithub's 0.25 s per
request and 1 s per write were about half of each run) and fleetflow is installed once into one venv that every act
run reuses, as a warm runner's cache would (actions/_shared/install.py, ``FLEETFLOW_ACTION_VENV``).

CI takes seeds 1-3 (the failing cluster: 1-2); ``FLEETFLOW_LOOP_SEEDS`` (for example ``4-99``) takes others for both
in-process scenarios, a longer search by hand for a delivery order that loses the chain:
``FLEETFLOW_LOOP_SEEDS=4-99 pytest tests/test_event_loop.py -k "every_seed or same_end_state"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.events import route
from fleetflow.promotion.hold import first_changed
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.reconcile import reconcile
from fleetflow.promotion.reports import ReportWatch
from fleetflow.promotion.schedule import schedule_environment
from tests import test_act_e2e as act_e2e
from tests.eventloop import GITHUB_TOKEN_LOGIN, WORKFLOW, Event, Faults, Hold, Loop
from tests.fleet import SHORT_CHAIN, SHORT_CHAIN_ENVS, SHORT_CHAIN_WORKLOAD, Fleet, git
from tests.ghstub import GitHubStub
from tests.helpers import searched_seeds
from tests.test_act_e2e import (  # the act tests' session fixtures, for test_faults_under_act
    action_checkout,  # noqa: F401
    action_venv,  # noqa: F401
    app_token_standin,  # noqa: F401
    cache_standin,  # noqa: F401
    checkout_standin,  # noqa: F401
    upload_artifact_standin,  # noqa: F401
)
from tests.test_promotion import make_github_fleet

ROOT = Path(__file__).resolve().parent.parent
CHAIN, WORKLOAD, ENVS = SHORT_CHAIN, SHORT_CHAIN_WORKLOAD, SHORT_CHAIN_ENVS
CP, GITOPS = "contoso/control-plane", "contoso/gitops"
SEARCH = searched_seeds("FLEETFLOW_LOOP_SEEDS")
SEEDS = SEARCH or [1, 2, 3]
FAILING_SEEDS = SEARCH or SEEDS[:2]


def _stub(fleet: Fleet) -> Any:
    return fleet.stub  # type: ignore[attr-defined]


class World:
    """The chain on one stand-in server. Each delivery runs ``fleetflow reconcile`` in process, the old design's
    route → promote/schedule/check-rollout (``old``), or, with ``act``, the real caller workflow under act."""

    def __init__(self, fleet: Fleet, *, failing: frozenset[str] = frozenset(), old: bool = False,
                 faults: Faults | None = None, act: act_e2e.World | None = None, hold: int = 0) -> None:
        self.fleet, self.failing, self.old, self.act, self.hold = fleet, failing, old, act, hold
        self.cp, self.gitops = fleet.cp_id, fleet.gitops_id
        stub = _stub(fleet)
        gitops = stub.repo(self.gitops)
        gitops.default_branch = "main"
        caller = act.gitops_workflow if act else ROOT / "examples/workflows/gitops.yml"
        gitops.commit_files("main", {WORKFLOW: caller.read_text()}, "fleetflow")
        self.reported: set[tuple[str, str]] = set()
        self.problems: list[str] = []
        self.seconds: list[float] = []  # per act run
        self.loop = Loop(stub, [self.cp, self.gitops], self.runner, faults or Faults(), [self.people, self.clusters])
        self.loop.start()

    # --- what runs for a delivery ------------------------------------------------------------------------------
    def runner(self, event: Event) -> Hold | None:
        """One delivery; returns how the run keeps its slot (``Loop.run_for``): while a gate waits for reports, the
        gitops workflow's ``hold-seconds`` (``hold``), ending early when the counts say the gate may have changed
        (polled every 10 s, as the reconcile action does)."""
        if self.act is not None:
            result = self.act.deliver(event)
            self.seconds.append(result.seconds)
            act_e2e.succeeded(result)  # a failed rollout is a state reconcile reports, never a failed run
            return None
        with self.fleet.context() as ctx:
            if not self.old:
                outcome = reconcile(ctx)
                self.problems += [f"{e.environment}: {p}" for e in outcome.environments for p in e.problems]
                watches = outcome.report_watches()
                if self.hold and event.repo == self.gitops and watches:
                    return Hold(self.hold, 10, partial(self.held_pass, watches))
                return None
            names = sorted(ctx.environments(ctx.main_tip()))
            decision = route(event.name, event.payload, environments=names)
            try:
                if decision.action == "promote":
                    promote_many(ctx, (decision.environments or [None])[0], decision.commit)
                for env in decision.environments if decision.action == "schedule" else []:
                    schedule_environment(ctx, env)
                for env in decision.environments if decision.action == "check-rollout" else []:
                    check_rollout(ctx, env)
            except Exception:  # a failed job in the old design: the run fails, the loop goes on
                pass
        return None

    def held_pass(self, watches: list[ReportWatch]) -> bool:
        """One poll of the reconcile action's hold (fleetflow.promotion.reconcile.reconcile_holding): when the counts
        say a gate may have changed, reconcile again in the held run; the run ends unless a gate still waits (then
        it holds on, watching what the new pass read)."""
        with self.fleet.context() as ctx:
            if first_changed(ctx.forge, watches, ctx.clock()) is None:
                return False
            outcome = reconcile(ctx)
        self.problems += [f"{e.environment}: {p}" for e in outcome.environments for p in e.problems]
        watches[:] = outcome.report_watches()
        return not watches

    # --- actors ------------------------------------------------------------------------------------------------
    def people(self) -> None:
        """Approve: merge every open fleetflow PR."""
        repo = _stub(self.fleet).repo(self.gitops)
        for pr in repo.list_pulls():
            if pr.state == "open" and pr.head_ref.startswith("fleetflow/"):
                repo.merge_pull(pr.number)

    def clusters(self) -> None:
        """Flux on each cluster: applies the GitOps branch tip and posts one status on it (not repeated)."""
        repo = _stub(self.fleet).repo(self.gitops)
        for env in CHAIN:
            tip = repo.branch_sha(env)
            if tip is None or git(self.fleet.root, "--git-dir", self.fleet.gitops_url, "ls-tree", "--name-only",
                                  tip, ".fleetflow/state.json") == "":
                continue
            for i in (1, 2):
                cluster = f"{env}-{i}"
                if (cluster, tip) in self.reported:
                    continue
                self.reported.add((cluster, tip))
                state = "failure" if cluster in self.failing else "success"
                repo.add_status(tip, state, f"flux/{cluster}", f"kustomization/{cluster} reconciled",
                                creator=f"flux-{cluster}")

    # --- the state ---------------------------------------------------------------------------------------------
    def push_main(self) -> str:
        caller = (self.act.cp_workflow if self.act else ROOT / "examples/workflows/control-plane.yml").read_text()
        files = {".environments/envs.yaml": ENVS, "workloads/app.yaml": WORKLOAD, WORKFLOW: caller}
        return self.fleet.push_main(files, "chain dev -> qa -> prod-eu")

    def rolled_out(self, sha: str) -> Callable[[], bool]:
        return lambda: all(self.fleet.cp_status(sha, env) == "success" for env in CHAIN)

    def end_state(self, sha: str) -> dict[str, Any]:
        stub = _stub(self.fleet)
        pulls = stub.repo(self.gitops).list_pulls()
        records = [(s.context, s.state) for s in stub.repo(self.cp).statuses if s.sha == sha]
        return {
            "pins": {env: self.fleet.pin(env) == sha for env in CHAIN},
            "gates": {env: self.fleet.cp_status(sha, env) for env in CHAIN},
            "prs": sorted((p.head_ref, p.merged) for p in pulls),
            "pin commits": {env: _log(self.fleet, env).count(f"fleetflow: pin {env}") for env in CHAIN},
            "success records": sorted(c for c, s in records if s == "success"),
        }


def _log(fleet: Fleet, branch: str) -> str:
    return git(fleet.root, "--git-dir", fleet.cp_url, "log", "--format=%s", f"refs/heads/{branch}")


EXPECTED = {
    "pins": dict.fromkeys(CHAIN, True),
    "gates": dict.fromkeys(CHAIN, "success"),
    "prs": [(f"fleetflow/{env}", True) for env in sorted(CHAIN)],
    "pin commits": dict.fromkeys(CHAIN, 1),
    "success records": sorted(f"fleetflow/{env}" for env in CHAIN),
}


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Fleet:
    return make_github_fleet(tmp_path, request)


def test_the_chain_runs_on_the_events_github_sends(fleet: Fleet) -> None:
    world = World(fleet)
    sha = world.push_main()
    first = world.loop.changes()
    assert [e.describe() for e in first] == [f"{CP} push refs/heads/main"]  # found, not built
    world.loop.run(first, done=world.rolled_out(sha))
    assert world.problems == []
    assert world.end_state(sha) == EXPECTED
    # GitHub's rules did work: pushes to branches without the caller file, pending/own statuses, ... ran nothing
    assert world.loop.filtered > 0
    assert all(e.name in ("push", "status", "schedule") for e in world.loop.runs)


def faulty(seed: int) -> Faults:
    """30% of deliveries dropped, 20% duplicated, the rest reordered."""
    return Faults(seed, drop=0.3, duplicate=0.2, reorder=True)


def converges(world: World) -> dict[str, Any]:
    """Faulty deliveries until the chain rolled out (or the loop's limits): the end state reached."""
    sha = world.push_main()
    world.loop.run(world.loop.changes(), done=world.rolled_out(sha))
    return world.end_state(sha)


def stops_at_qa(world: World) -> None:
    """A failing cluster in qa: qa's gate fails, dev's holds, prod is never pinned, whatever arrives later."""
    fleet = world.fleet
    sha = world.push_main()
    world.loop.run(world.loop.changes(), done=lambda: fleet.cp_status(sha, "qa") == "failure")
    world.loop.run(world.loop.tick(), done=lambda: False, max_runs=len(world.loop.runs) + 4, max_ticks=2)
    assert fleet.cp_status(sha, "qa") == "failure" and fleet.cp_status(sha, "dev") == "success"
    assert fleet.pin("prod-eu") == "" and fleet.cp_status(sha, "prod-eu") is None


@pytest.mark.parametrize("seed", SEEDS)
def test_dropped_duplicated_reordered_events_reach_the_same_end_state(fleet: Fleet, seed: int) -> None:
    world = World(fleet, faults=faulty(seed))
    assert converges(world) == EXPECTED, (seed, [e.describe() for e in world.loop.runs])


@pytest.mark.parametrize("seed", FAILING_SEEDS)
def test_a_failing_cluster_in_qa_stops_prod_in_every_seed(fleet: Fleet, seed: int) -> None:
    stops_at_qa(World(fleet, failing=frozenset({"qa-2"}), faults=faulty(seed)))


def test_the_old_design_loses_the_chain_when_the_push_is_dropped(fleet: Fleet) -> None:
    """Today's main before reconcile: a push to main promoted dev; the cron tick only ran check-rollout. Drop the
    push delivery and nothing ever promotes dev; reconcile (above) reads main's tip at the next tick instead."""
    world = World(fleet, old=True, faults=Faults(0, drop=1.0))  # the first delivery is lost
    sha = world.push_main()
    world.loop.run(world.loop.changes(), done=world.rolled_out(sha), max_ticks=0)
    world.loop.faults = Faults(0)  # from now on every event arrives
    world.loop.run([], done=world.rolled_out(sha), max_runs=8, max_ticks=3)
    assert fleet.pin("dev") == "" and world.end_state(sha) != EXPECTED
    assert {e.name for e in world.loop.runs} == {"schedule"}


def test_github_token_writes_start_nothing(fleet: Fleet) -> None:
    world = World(fleet)
    sha = world.push_main()
    world.loop.changes()
    gitops = _stub(fleet).repo(GITOPS)
    tip = gitops.branch_sha("dev")
    gitops.add_status(tip, "success", "flux/dev-1", "by the workflow's token", creator=GITHUB_TOKEN_LOGIN)
    gitops.add_status(tip, "success", "flux/dev-1", "by a cluster", creator="flux-dev-1")
    assert [e.payload["description"] for e in world.loop.changes()] == ["by a cluster"]
    assert sha


# --- the same scenarios, every delivery an act run of the real caller workflow ---------------------------------------
# Under act (measured: 4 act runs per converging seed, 7 for the failing one, ~5 s per run with two side by side on
# 2 cores, ~50 s wall for the four scenarios); the in-process loop above is the fast complement (seeds 1-3 both ways).
ACT_SEEDS = [1, 2, 3]


@dataclass
class ActSeed:
    name: str
    seed: int
    scenario: Callable[[World], object]
    failing: frozenset[str] = frozenset()


def _under_act(case: ActSeed, root: Path, parts: dict[str, Path]) -> tuple[World, object]:
    """One scenario on its own stand-in server, repositories and callers (so seeds can run side by side)."""
    root.mkdir(parents=True)
    stub = GitHubStub(root=root / "ghstub").start()
    try:
        act = act_e2e.make_world(stub, root, **parts)
        act.fleet.stub = stub  # type: ignore[attr-defined]
        world = World(act.fleet, failing=case.failing, faults=faulty(case.seed), act=act)
        try:
            return world, case.scenario(world)
        finally:
            act.fleet.forge.close()
    finally:
        stub.stop()
        assert not stub.server_errors and not stub.schema_errors, stub.server_errors + stub.schema_errors


def test_faults_under_act(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The fault scenarios with every delivery an act run (tests/test_act_e2e.py's ``World.deliver``: the real
    caller and reusable workflows and the reconcile action, fleetflow installed once into the shared action venv
    as a warm runner's cache would keep it). Seeds run two at a time, one stand-in server each: CI has 2 cores."""
    # the session fixtures of tests/test_act_e2e.py (imported above): one action checkout, stand-ins and venv
    parts = {name: request.getfixturevalue(name)
             for name in ("action_checkout", "app_token_standin", "checkout_standin", "upload_artifact_standin",
                          "cache_standin", "action_venv")}
    # the longest first, so that the two workers end together
    cases = [ActSeed(f"stops-at-qa-{n}", n, stops_at_qa, frozenset({"qa-2"})) for n in ACT_SEEDS[:1]]
    cases += [ActSeed(f"converges-{n}", n, converges) for n in ACT_SEEDS]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {case.name: pool.submit(_under_act, case, tmp_path / case.name, parts) for case in cases}
        done = {name: future.result() for name, future in futures.items()}
    timing = {name: (len(w.seconds), round(sum(w.seconds), 1)) for name, (w, _) in done.items()}
    print(f"act runs (count, seconds) per scenario: {timing}; wall {time.monotonic() - started:.0f} s")

    for case in cases:
        world, outcome = done[case.name]
        assert world.seconds, case.name  # every delivery was an act run
        if case.scenario is converges:
            assert outcome == EXPECTED, (case.name, [e.describe() for e in world.loop.runs])
            assert world.loop.faults.dropped and world.loop.faults.duplicated, case.name  # the faults did happen


def test_simulated_time_keeps_one_running_and_one_pending_run_per_group(github_stub: GitHubStub) -> None:
    """``Loop.run_for`` (benchmarks/bench_rollout.py): GitHub's concurrency in simulated time. A status every second
    from 1 to 10, runs of 5 s: runs start at 1, 6 and 11; each newer pending run cancels the older one (GitHub docs,
    "Control the concurrency of workflows and jobs"); pending and fleetflow's own statuses never get that far."""
    repo = github_stub.create_repo("contoso/gitops")
    tip = repo.commit_files("main", {WORKFLOW: (ROOT / "examples/workflows/gitops.yml").read_text()}, "caller")
    ran: list[str] = []
    loop = Loop(github_stub, ["contoso/gitops"], lambda e: ran.append(e.payload["context"]))
    loop.start()

    def post(context: str, state: str = "success") -> Callable[[], None]:
        return lambda: repo.add_status(tip, state, context, "reconciliation succeeded", creator="flux") and None

    happenings = {t: [post(f"flux/c{t}")] for t in range(1, 11)}
    happenings[3].append(post("flux/c3", "pending"))
    happenings[4].append(post("fleetflow/dev"))
    loop.run_for(10, happenings=happenings, run_seconds=5)
    assert ran == ["flux/c1", "flux/c5", "flux/c10"] and loop.started == [1, 6, 11]
    assert loop.cancelled == 7 and loop.filtered == 2


@pytest.mark.parametrize(("hold", "ci"), [(30, True), (30, False), (0, True)])
def test_a_run_holds_its_slot_while_a_gate_waits_for_reports(fleet: Fleet, hold: int, ci: bool) -> None:
    """The gitops workflow's hold in simulated time (``Loop.run_for``): a run that leaves dev's gate waiting for
    reports keeps its concurrency slot until ``hold`` seconds after its start, so the status events meanwhile
    coalesce into one pending run (GitHub keeps one pending run per group and a newer one cancels the older:
    "Control the concurrency of workflows and jobs", GitHub docs), but every 10 s after its work it reads the counts
    and, once they say the gate may have changed, reconciles again itself and ends unless a gate still waits. Runs
    of 5 s; flux/dev-1 reports at 20 s and flux/dev-2 at 30 s; with ``ci`` a CI status lands on the merged commit at
    10 s and another at 45 s. qa's clusters never report here, so once qa is promoted and merged a run that finds
    its gate waiting holds to its deadline.

    * Without CI statuses: the run at 20 s (dev-1's) holds; at its poll at 35 s the counts are complete, so it
      records dev's gate and promotes qa itself, at 35 s, and ends. dev-2's pending run starts then, finds qa's
      merged PR waiting for reports and holds to its deadline (polls at 50 s and 60 s).
    * With them: ci/lint's run at 10 s finds no cluster reported (one context, ci/lint's: the gate needs 2 more)
      and holds. At 25 s two contexts are in, as many as the gate requires, but only one more than at its reading
      (a count cannot tell a CI status from a cluster's report, so the hold counts from what the run read): it
      holds. At 35 s there are two more: it records the gate and promotes qa itself, and ends. dev-2's pending run
      (which cancelled dev-1's) starts at 35 s and holds on qa's gate to 65 s, when ci/test's runs and holds too.
    * Without the hold: a run per event; dev-2's run records the gate at 30 s."""
    world = World(fleet, hold=hold)
    world.loop.actors = [world.people]  # the clusters report at the seconds below, not after every run
    stub, sha = _stub(fleet), ""

    def push() -> None:
        nonlocal sha
        sha = world.push_main()

    def post(context: str, creator: str) -> Callable[[], None]:
        def report() -> None:
            repo = stub.repo(world.gitops)
            repo.add_status(repo.branch_sha("dev"), "success", context, "reconciled", creator=creator)
        return report

    happenings = {0: [push], 20: [post("flux/dev-1", "flux-dev-1")], 30: [post("flux/dev-2", "flux-dev-2")]}
    if ci:
        happenings |= {10: [post("ci/lint", "ci")], 45: [post("ci/test", "ci")]}
    second = [0]
    recorded: list[int] = []

    def gate() -> None:
        if not recorded and fleet.cp_status(sha, "dev") == "success":
            recorded.append(second[0])

    world.loop.actors.append(gate)
    world.loop.run_for(60, happenings=happenings, run_seconds=5, at=lambda t: second.__setitem__(0, t))
    assert world.problems == []
    assert fleet.cp_status(sha, "dev") == "success" and fleet.pin("qa") == sha
    gitops = [(t, e.payload.get("context")) for t, e in zip(world.loop.started, world.loop.runs, strict=True)
              if e.repo == world.gitops]
    if hold and not ci:
        assert gitops == [(20, "flux/dev-1"), (35, "flux/dev-2")], gitops
        assert world.loop.polls == 3 and recorded == [35]
    elif hold:
        assert gitops == [(10, "ci/lint"), (35, "flux/dev-2"), (65, "ci/test")], gitops
        assert world.loop.polls == 6 and recorded == [35]
    else:
        assert gitops == [(10, "ci/lint"), (20, "flux/dev-1"), (30, "flux/dev-2"), (45, "ci/test")], gitops
        assert world.loop.polls == 0 and recorded == [30]
