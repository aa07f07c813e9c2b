"""The promotion chain driven only by the events GitHub would send (tests/eventloop.py), on the stand-in server:
no hand-built event. A push to main goes dev → qa → prod with the people merging the PRs and simulated clusters
posting as Flux's notification-controller does (one status per cluster on the commit it applied, ``success`` or
``failure``, never ``pending``, no repeat of an identical post: fluxcd/notification-controller
internal/notifier/github.go). With 30% of deliveries dropped, 20% duplicated and the rest reordered (seeded), the
chain reaches the same end state through later events and cron ticks, with no duplicate PR, pin or status; a failing
cluster in qa stops prod in every seed. The same loop run with the old design (route → promote / schedule /
check-rollout, what the workflows ran before reconcile) loses the chain when the push to main is dropped.

Each delivery runs ``fleetflow reconcile`` in process, what the reusable workflows' one job runs (their file rules,
``on:`` filters, job ``if:`` and concurrency are applied by the loop; the workflows themselves run under act in
tests/test_act_e2e.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.events import route
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.reconcile import reconcile
from fleetflow.promotion.schedule import schedule_environment
from tests.eventloop import GITHUB_TOKEN_LOGIN, WORKFLOW, Event, Faults, Loop
from tests.fleet import Fleet, _environment, git
from tests.test_promotion import make_github_fleet

ROOT = Path(__file__).resolve().parent.parent
CHAIN = {"dev": [], "qa": ["dev"], "prod-eu": ["qa"]}
WORKLOAD = "apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: app\nspec:\n  workspace: team\n" \
    "  deploymentTargets:" + "".join(f"""
    - name: {env}
      environment: {env}
      labels: {{purpose: app}}
      manifests: {{repo: https://example.invalid/app, branch: main, path: ./{env}}}""" for env in CHAIN) + "\n"
ENVS = "---\n".join(_environment(n, a).replace("soakTime: 1m", "soakTime: 0s") for n, a in CHAIN.items())
CP, GITOPS = "contoso/control-plane", "contoso/gitops"
SEEDS = [1, 2, 3]


def _stub(fleet: Fleet) -> Any:
    return fleet.stub  # type: ignore[attr-defined]


class World:
    def __init__(self, fleet: Fleet, *, failing: set[str] = frozenset(), old: bool = False,  # type: ignore[assignment]
                 faults: Faults | None = None) -> None:
        self.fleet, self.failing, self.old = fleet, failing, old
        stub = _stub(fleet)
        gitops = stub.repo(GITOPS)
        gitops.default_branch = "main"
        gitops.commit_files("main", {WORKFLOW: (ROOT / "examples/workflows/gitops.yml").read_text()}, "fleetflow")
        self.reported: set[tuple[str, str]] = set()
        self.problems: list[str] = []
        self.loop = Loop(stub, [CP, GITOPS], self.runner, faults or Faults(), [self.people, self.clusters])
        self.loop.start()

    # --- what runs for a delivery ------------------------------------------------------------------------------
    def runner(self, event: Event) -> None:
        with self.fleet.context() as ctx:
            if not self.old:
                outcome = reconcile(ctx)
                self.problems += [f"{e.environment}: {p}" for e in outcome.environments for p in e.problems]
                return
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

    # --- actors ------------------------------------------------------------------------------------------------
    def people(self) -> None:
        """Approve: merge every open fleetflow PR."""
        repo = _stub(self.fleet).repo(GITOPS)
        for pr in repo.list_pulls():
            if pr.state == "open" and pr.head_ref.startswith("fleetflow/"):
                repo.merge_pull(pr.number)

    def clusters(self) -> None:
        """Flux on each cluster: applies the GitOps branch tip and posts one status on it (not repeated)."""
        repo = _stub(self.fleet).repo(GITOPS)
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
        caller = (ROOT / "examples/workflows/control-plane.yml").read_text()
        files = {".environments/envs.yaml": ENVS, "workloads/app.yaml": WORKLOAD, WORKFLOW: caller}
        return self.fleet.push_main(files, "chain dev -> qa -> prod-eu")

    def rolled_out(self, sha: str) -> Callable[[], bool]:
        return lambda: all(self.fleet.cp_status(sha, env) == "success" for env in CHAIN)

    def end_state(self, sha: str) -> dict[str, Any]:
        stub = _stub(self.fleet)
        pulls = stub.repo(GITOPS).list_pulls()
        records = [(s.context, s.state) for s in stub.repo(CP).statuses if s.sha == sha]
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


@pytest.mark.parametrize("seed", SEEDS)
def test_dropped_duplicated_reordered_events_reach_the_same_end_state(fleet: Fleet, seed: int) -> None:
    world = World(fleet, faults=Faults(seed, drop=0.3, duplicate=0.2, reorder=True))
    sha = world.push_main()
    world.loop.run(world.loop.changes(), done=world.rolled_out(sha))
    assert world.end_state(sha) == EXPECTED, (seed, [e.describe() for e in world.loop.runs])


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_a_failing_cluster_in_qa_stops_prod_in_every_seed(fleet: Fleet, seed: int) -> None:
    world = World(fleet, failing={"qa-2"}, faults=Faults(seed, drop=0.3, duplicate=0.2, reorder=True))
    sha = world.push_main()
    stopped = lambda: fleet.cp_status(sha, "qa") == "failure"  # noqa: E731
    world.loop.run(world.loop.changes(), done=stopped)
    world.loop.run(world.loop.tick(), done=lambda: False, max_runs=len(world.loop.runs) + 4, max_ticks=2)
    assert fleet.cp_status(sha, "qa") == "failure" and fleet.cp_status(sha, "dev") == "success"
    assert fleet.pin("prod-eu") == "" and fleet.cp_status(sha, "prod-eu") is None


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
