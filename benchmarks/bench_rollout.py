"""One environment's whole rollout at fleet scale, through GitHub's event rules: API requests and workflow runs.

Run from the repository root::

    python benchmarks/bench_rollout.py                          # 30,000 clusters over 10 minutes, 30 s per run
    python benchmarks/bench_rollout.py --run-seconds 15 --run-seconds 60
    python benchmarks/bench_rollout.py --clusters 1000 --minutes 2   # a quick look

The world: the control plane and GitOps repositories on the GitHub stand-in (tests/ghstub, PyGithub unmodified,
every request counted), the example caller workflows on the branches GitHub reads them from, a chain dev → qa →
prod-eu with no soak time, and ``dev`` with ``--clusters`` clusters registered (one ``Cluster`` each, its
``statusContext`` what Flux's notification-controller posts by default: ``kustomization/<name>/<first segment of
the Provider UID>``, lowercased). The event loop (tests/eventloop.py, ``Loop.run_for``) turns every change into the
events GitHub would send, applies the callers' ``on:`` filters and the reusable workflow's job ``if:``, and the
concurrency group (one running and one pending run per repository, a newer pending run cancelling the older one;
a cancelled pending run never starts, so it installs nothing and makes no request). A run that starts runs
``fleetflow reconcile`` in process (what the workflow's one job runs) against the state at its start, and lasts
``--run-seconds`` of simulated time (runner start, checkout, token, install, reconcile). When reconcile leaves a
gate waiting for reports (``waitingForReports``), a run in the GitOps repository keeps its slot until
``--hold-seconds`` after its start (default: the gitops workflow's ``hold-seconds`` default; ``--hold-seconds 0`` is
the workflow without the hold), but from the end of its work it reads the counts every 10 s, as the reconcile
action's ``hold-until`` does (fleetflow.promotion.hold: the first page of each watched commit's statuses and check
runs, two requests a commit, counted under ``hold``) and lets go once they no longer prove the gate waits.

Second 0: a push to main. Its run promotes main to dev; a person merges the PR at once. From second 1 on, every dev
cluster reports once, at a time drawn uniformly over ``--minutes`` (seeded): Flux posts ``success`` on the commit it
applied (the merged GitOps tip) and never ``pending`` (fluxcd/notification-controller internal/notifier/github.go;
tests/reporters.py). The statuses are put into the stand-in's store directly (what the clusters post is not
fleetflow's cost); each one is a ``status`` event. The rollout ends when the gate records ``fleetflow/dev`` success
and qa is promoted; the loop then runs until every group is idle. Cron ticks (the callers' schedules) fall at their
minutes.

Counted: fleetflow's API requests (every request the stand-in received: only runs talk to it), and the workflow
runs that started (passed the job ``if:`` and were not cancelled while pending), i.e. the runs that install
fleetflow; and the wall time from the last cluster's report to qa's PR (the end of the run that opened it).
Targets (one environment's whole rollout at 30,000 clusters over 10 minutes): ≤ 1,000 requests, ≤ 50 runs; the
script says whether each run length meets them and exits 1 when one does not.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ruamel.yaml import YAML

from fleetflow.forge.github import GitHubForge
from fleetflow.promotion.hold import first_changed
from fleetflow.promotion.reconcile import reconcile
from fleetflow.promotion.reports import ReportWatch
from tests.eventloop import WORKFLOW, Event, Hold, Loop
from tests.fleet import SHORT_CHAIN, SHORT_CHAIN_ENVS, SHORT_CHAIN_WORKLOAD, Fleet, build_bare_repos, start_clock
from tests.ghstub.server import GitHubStub
from tests.ghstub.state import CommitStatus
from tests.reporters import flux_description

ROOT = Path(__file__).resolve().parent.parent
CP, GITOPS = "contoso/control-plane", "contoso/gitops"
POLL_SECONDS = 10  # the reconcile action's hold-poll-seconds default (actions/reconcile/action.yml)
CHAIN, WORKLOAD, ENVS = SHORT_CHAIN, SHORT_CHAIN_WORKLOAD, SHORT_CHAIN_ENVS
# cron minutes of the example callers: gitops "*/15", control plane "7,22,37,52"
CRON = {GITOPS: (0, 15, 30, 45), CP: (7, 22, 37, 52)}
MAX_REQUESTS, MAX_RUNS = 1_000, 50


def workflow_hold_seconds() -> int:
    """The reusable gitops workflow's ``hold-seconds`` default (what a caller that does not set it gets)."""
    doc = YAML(typ="safe").load((ROOT / ".github/workflows/fleetflow-gitops.yml").read_text(encoding="utf-8"))
    on = doc.get("on", doc.get(True))
    return int(on["workflow_call"]["inputs"]["hold-seconds"]["default"])


def flux_context(rng: random.Random) -> str:
    """Flux's default context: ``kind/name/<first segment of the Provider UID>``, lowercased."""
    return f"kustomization/apps/{rng.getrandbits(32):08x}"


def clusters_yaml(contexts: list[str]) -> str:
    return "---\n".join(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dev-{i:06}\n"
        f"spec:\n  clusterType: cloud\n  statusContext: {context}\n"
        for i, context in enumerate(contexts)
    )


@dataclass
class Outcome:
    run_seconds: int
    hold_seconds: int
    requests: int
    runs: int
    runs_by_event: Counter[str]
    requests_by_event: Counter[str]
    cancelled: int
    filtered: int
    gate_at: int | None  # the simulated second dev's gate recorded success
    last_report: int  # the simulated second the last cluster reported
    qa_pull_at: int | None  # the simulated second the run that opened qa's PR ended
    wall: float
    reconcile_seconds: list[float]  # wall time of each in-process reconcile on this machine
    endpoints: Counter[str]  # requests per method and OpenAPI path


def simulate(clusters: int, minutes: int, run_seconds: int, hold_seconds: int, seed: int,
             workdir: Path, pass_seconds: int = 5) -> Outcome:
    rng = random.Random(seed)
    started = time.perf_counter()
    with GitHubStub(root=workdir / "ghstub", validate_responses=False) as stub:
        clock = start_clock()
        t0 = clock.now
        stub.store.clock = clock
        cp_bare, gitops_bare = build_bare_repos(workdir, GITOPS, CP)
        stub.create_repo(CP, bare=cp_bare)
        gitops = stub.create_repo(GITOPS, bare=gitops_bare)
        forge = GitHubForge(token="t", api_url=stub.url, retries=0, backoff_factor=0, seconds_between_requests=0,
                            seconds_between_writes=0)
        fleet = Fleet(workdir, forge, CP, GITOPS, str(cp_bare), str(gitops_bare), clock,
                      post_status=lambda sha, c, s, d: None, merge=lambda n: None)
        contexts = [flux_context(rng) for _ in range(clusters)]
        fleet.push_env("dev", {"clusters.yaml": clusters_yaml(contexts)}, f"dev: {clusters} clusters")
        gitops.default_branch = "main"
        gitops.commit_files("main", {WORKFLOW: (ROOT / "examples/workflows/gitops.yml").read_text()}, "caller")

        requests_by: Counter[str] = Counter()
        seconds: list[float] = []

        second = [0]  # the simulated second (Loop.run_for's ``at``)

        def runner(event: Event) -> Hold | None:
            mark, began = stub.mark(), time.perf_counter()
            with fleet.context() as ctx:
                outcome = reconcile(ctx)
            seconds.append(time.perf_counter() - began)
            requests_by[event.name] += stub.count(since=mark)
            # the gitops workflow's hold, while a gate waits for reports (the control plane's has none: no status
            # events go there): to hold-seconds after the start; every 10 s after the run's work it reads the
            # counts (two requests a watched commit, counted), and once they say a gate may have changed it
            # reconciles again in the held run (``--pass-seconds`` of work), which ends unless a gate still waits
            watches = outcome.report_watches()
            if hold_seconds and event.repo == GITOPS and watches:
                return Hold(hold_seconds, POLL_SECONDS, partial(held_pass, watches), work=pass_seconds)
            return None

        def held_pass(watches: list[ReportWatch]) -> bool:
            mark = stub.mark()
            with fleet.context() as ctx:
                changed = first_changed(ctx.forge, watches, ctx.clock()) is not None
            requests_by["hold"] += stub.count(since=mark)
            if not changed:
                return False
            mark, began = stub.mark(), time.perf_counter()
            with fleet.context() as ctx:
                outcome = reconcile(ctx)
            seconds.append(time.perf_counter() - began)
            requests_by["held pass"] += stub.count(since=mark)
            done = second[0] + pass_seconds  # the pass's writes land by the end of its work
            if not gate_at and gate(cp.branch_sha("main")) == "success":
                gate_at.append(done)
            if not qa_pull_at and any(pr.head_ref == "fleetflow/qa" for pr in gitops.pulls.values()):
                qa_pull_at.append(done)
            watches[:] = outcome.report_watches()
            return not watches

        def people() -> None:
            for pr in gitops.list_pulls():
                if pr.state == "open" and pr.head_ref.startswith("fleetflow/"):
                    gitops.merge_pull(pr.number)

        loop = Loop(stub, [CP, GITOPS], runner, actors=[people])
        loop.start()

        def push_main() -> None:
            caller = (ROOT / "examples/workflows/control-plane.yml").read_text()
            fleet.push_main({".environments/envs.yaml": ENVS, "workloads/app.yaml": WORKLOAD, WORKFLOW: caller},
                            "chain dev -> qa -> prod-eu")

        # when each cluster reports (Flux: once, success, on the commit it applied: the tip of dev then)
        window = minutes * 60
        due: dict[int, list[str]] = {}
        for context in contexts:
            due.setdefault(rng.randint(1, window), []).append(context)

        def report(batch: list[str]) -> None:
            tip = gitops.branch_sha("dev")
            now = stub.store.now()
            description = flux_description("ReconciliationSucceeded")
            for context in batch:
                gitops.statuses.append(CommitStatus(stub.store.next_id(), tip, "success", context, description,
                                                    None, "flux", now, now))

        happenings = {0: [push_main]} | {t: [partial(report, batch)] for t, batch in due.items()}
        ticks = [m * 60 for repo in CRON for m in CRON[repo] if m * 60 <= window]
        gate_at: list[int] = []
        qa_pull_at: list[int] = []
        cp = stub.repo(CP)

        def gate(sha: str) -> str | None:
            """``fleetflow/dev`` on the main commit, read from the stand-in's store (not a counted request)."""
            states = [s.state for s in cp.statuses if s.sha == sha and s.context == "fleetflow/dev"]
            return states[-1] if states else None

        def watch() -> None:
            if not gate_at and gate(cp.branch_sha("main")) == "success":
                gate_at.append(loop.started[-1])
            if not qa_pull_at and any(pr.head_ref == "fleetflow/qa" for pr in gitops.pulls.values()):
                qa_pull_at.append(loop.started[-1] + run_seconds)  # opened by this run: at its end at the latest

        loop.actors.append(watch)
        def at(t: int) -> None:
            second[0] = t
            clock.now = t0 + timedelta(seconds=t)

        loop.run_for(window, happenings=happenings, run_seconds=run_seconds, ticks=sorted(set(ticks)), at=at)
        sha = cp.branch_sha("main")
        assert gate(sha) == "success", "the rollout did not finish: dev's gate is not success"
        assert fleet.pin("qa") == sha, "qa was not promoted"
        forge.close()
        return Outcome(run_seconds, hold_seconds, stub.count(), len(loop.runs), Counter(e.name for e in loop.runs),
                       requests_by, loop.cancelled, loop.filtered, gate_at[0] if gate_at else None, max(due),
                       qa_pull_at[0] if qa_pull_at else None, time.perf_counter() - started,
                       seconds, Counter(f"{r.method} {r.operation}" for r in stub.requests))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=30_000)
    parser.add_argument("--minutes", type=int, default=10, help="the clusters report over this many minutes")
    parser.add_argument("--run-seconds", type=int, action="append",
                        help="how long one workflow run lasts, simulated (repeatable; default 30)")
    parser.add_argument("--hold-seconds", type=int, default=None,
                        help="the gitops workflow's hold-seconds (default: the workflow's default; 0: no hold)")
    parser.add_argument("--pass-seconds", type=int, default=5,
                        help="how long a held run's second reconcile takes, simulated (its work only: the run "
                        "has started, checked out and installed already; one in-process reconcile here takes "
                        "about 3-4 s at 30,000 clusters; on GitHub the pass that records a success reads every "
                        "status page, at least 75 s at PyGithub's 0.25 s between requests: try 80)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    hold = workflow_hold_seconds() if args.hold_seconds is None else args.hold_seconds
    print(f"{args.clusters:,} clusters in dev reporting over {args.minutes} minutes (seed {args.seed}), "
          f"hold-seconds {hold}")
    print(f"{'run s':>5} {'requests':>8} {'runs':>5} {'cancelled':>9} {'filtered':>8} {'gate at':>8} "
          f"{'to qa PR':>8}  runs by event / requests by event   (wall s)")
    missed: list[str] = []
    for run_seconds in args.run_seconds or [30]:
        with tempfile.TemporaryDirectory(prefix="bench-rollout-") as tmp:
            os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # the parse cache of this run only
            o = simulate(args.clusters, args.minutes, run_seconds, hold, args.seed, Path(tmp), args.pass_seconds)
        req_ok = "met" if o.requests <= MAX_REQUESTS else "MISSED"
        runs_ok = "met" if o.runs <= MAX_RUNS else "MISSED"
        if "MISSED" in (req_ok, runs_ok):
            missed.append(f"{run_seconds} s")
        to_qa = f"{o.qa_pull_at - o.last_report}" if o.qa_pull_at is not None else "-"
        print(f"{o.run_seconds:>5} {o.requests:>8} {o.runs:>5} {o.cancelled:>9} {o.filtered:>8} "
              f"{o.gate_at if o.gate_at is not None else '-':>8} {to_qa:>8}  {dict(o.runs_by_event)} / "
              f"{dict(o.requests_by_event)}   ({o.wall:.0f})")
        print(f"      targets: requests {o.requests} <= {MAX_REQUESTS:,} {req_ok}; runs that install fleetflow "
              f"{o.runs} <= {MAX_RUNS} {runs_ok}")
        each = sorted(o.reconcile_seconds)
        print(f"      one reconcile here: min {each[0]:.1f} s, median {median(each):.1f} s, max {each[-1]:.1f} s; "
              "requests by endpoint: " + ", ".join(f"{k} {v}" for k, v in o.endpoints.most_common(6)))
    print("targets met at every run length" if not missed else f"targets MISSED at {', '.join(missed)} per run")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
