"""GitHub API requests per promotion step, counted on the stand-in server (tests/ghstub) with PyGithub unmodified.

    python benchmarks/bench_requests.py                 # dev with 1,000 clusters
    python benchmarks/bench_requests.py --clusters 50
    python benchmarks/bench_requests.py --without-auto-merge   # the repository does not allow auto-merge

Every step is a whole ``fleetflow reconcile`` run over the chain dev → qa → prod-eu → prod-us → dr (tests/fleet.py),
the way the workflows run it. qa has ``autoMerge``; the GitOps repository allows GitHub's auto-merge and qa's
branch requires the check ``ci/validate``. Phases: the promotion of main to dev (promote + schedule), a run while
dev's PR waits for a person, a gate check while dev's clusters report (soaking), a gate check that succeeds and
promotes qa (its merge step turns GitHub's auto-merge on and records it in git), a run while qa's PR waits for
GitHub to merge it, and that run again as the cron tick (``verify_merges``: qa's PR is read once). With
``--without-auto-merge`` the repository does not allow auto-merge: fleetflow merges qa's PR itself once its checks
are green; the last phases are then a run from another event, a run started by a status on qa's head
(``rechecks``), the cron tick, and the run that merges after the check went green. Budget (issue
#8): promote+schedule ≤ 15, a gate check ≤ 6 at 1,000 clusters, 0 while waiting. A script, not a test: the
figures are printed, the pass/fail suite holds the small-fleet bounds
(tests/test_promotion_faults.py::test_reconcile_request_counts). Request counts are exact, not timings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fleetflow.promotion.reconcile import reconcile  # noqa: E402
from tests.fleet import environments_file, github_fleet  # noqa: E402
from tests.ghstub import GitHubStub  # noqa: E402


def clusters_file(env: str, count: int) -> str:
    return "---\n".join(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: {env}-{i}\n"
        f"spec:\n  clusterType: cloud\n  statusContext: flux/{env}-{i}\n" for i in range(1, count + 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000, help="clusters in dev (default 1000)")
    parser.add_argument("--log", action="store_true", help="print every request of every run")
    parser.add_argument("--without-auto-merge", action="store_true",
                        help="the GitOps repository does not allow auto-merge (GitHub's default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleetflow-bench-") as tmp:
        root = Path(tmp)
        stub = GitHubStub(root=root / "ghstub").start()
        try:
            fleet = github_fleet(root, stub)
            repo = stub.repo(fleet.gitops_id)
            repo.allow_auto_merge = not args.without_auto_merge
            repo.protection["qa"] = ["ci/validate"]
            fleet.push_main(environments_file(auto_merge=("qa",)), "qa merges by itself")
            fleet.push_env("dev", {"clusters.yaml": clusters_file("dev", args.clusters)}, "dev: many clusters")

            def run(verify_merges: bool = False, rechecks: tuple[str, ...] = ()) -> int:
                mark = stub.mark()
                with fleet.context() as ctx:
                    outcome = reconcile(ctx, verify_merges=verify_merges, rechecks=rechecks)
                problems = [p for e in outcome.environments for p in e.problems]
                assert not problems, problems
                if args.log:
                    for r in stub.requests_since(mark):
                        print("   ", r.method, r.path, r.query, r.status)
                return int(stub.count(since=mark))

            figures = {"promote+schedule dev": run(), "waiting for dev's merge (a person)": run()}
            fleet.approve("dev")
            fleet.clock.advance(timedelta(seconds=30))
            tip = fleet.gitops_tip("dev")
            for i in range(1, args.clusters + 1):
                repo.add_status(tip, "success", f"flux/dev-{i}", f"reconciled {tip[:7]}")
            figures["gate check (soaking)"] = run()
            fleet.clock.advance(timedelta(minutes=2))
            figures["gate success + promote+schedule qa"] = run()
            if not args.without_auto_merge:
                figures["waiting for qa's merge (auto-merge)"] = run()
                figures["the same, on the cron tick (verify)"] = run(verify_merges=True)
            else:
                head = fleet.branch_sha(fleet.gitops_url, "fleetflow/qa")
                figures["waiting for qa's checks (another event)"] = run(rechecks=(tip,))
                repo.add_status(head, "pending", "ci/validate", "running")
                figures["a status on qa's head (pending)"] = run(rechecks=(head,))
                figures["the cron tick (verify)"] = run(verify_merges=True)
                repo.add_status(head, "success", "ci/validate", "ok")
                figures["a status on qa's head (green): merge"] = run(rechecks=(head,))
            fleet.forge.close()  # type: ignore[attr-defined]
        finally:
            stub.stop()
    print(f"GitHub API requests per reconcile run (5 environments, {args.clusters} clusters in dev):")
    for name, count in figures.items():
        print(f"  {name:<40} {count:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
