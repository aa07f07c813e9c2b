"""GitHub API requests per promotion step, counted on the stand-in server (tests/ghstub) with PyGithub unmodified.

    python benchmarks/bench_requests.py                 # dev with 1,000 clusters
    python benchmarks/bench_requests.py --clusters 50

Every step is a whole ``fleetflow reconcile`` run over the chain dev → qa → prod-eu → prod-us → dr (tests/fleet.py),
the way the workflows run it. Phases: the promotion of main to dev (promote + schedule), a run while dev's PR waits
to be merged, a gate check while dev's clusters report (soaking), a gate check that succeeds and promotes qa, a run
while qa's PR waits. Budget (issue #8): promote+schedule ≤ 15, a gate check ≤ 6 at 1,000 clusters, 0 while
waiting. A script, not a test: the figures are printed, the pass/fail suite holds the small-fleet bounds
(tests/test_promotion_faults.py::test_reconcile_request_counts).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fleetflow.forge.github import GitHubForge  # noqa: E402
from fleetflow.promotion.reconcile import reconcile  # noqa: E402
from tests.fleet import Fleet, build_bare_repos, start_clock  # noqa: E402
from tests.ghstub import GitHubStub  # noqa: E402


def clusters_file(env: str, count: int) -> str:
    return "---\n".join(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: {env}-{i}\n"
        f"spec:\n  clusterType: cloud\n  statusContext: flux/{env}-{i}\n" for i in range(1, count + 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000, help="clusters in dev (default 1000)")
    parser.add_argument("--log", action="store_true", help="print every request of every run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleetflow-bench-") as tmp:
        root = Path(tmp)
        stub = GitHubStub(root=root / "ghstub").start()
        try:
            clock = start_clock()
            stub.store.clock = clock
            cp, gitops = build_bare_repos(root, "contoso/gitops", "contoso/control-plane")
            stub.create_repo("contoso/control-plane", bare=cp)
            stub.create_repo("contoso/gitops", bare=gitops)
            forge = GitHubForge(token="bench-token", api_url=stub.url, retries=3, backoff_factor=0,
                                seconds_between_requests=0, seconds_between_writes=0)
            repo = stub.repo("contoso/gitops")
            fleet = Fleet(root, forge, "contoso/control-plane", "contoso/gitops", str(cp), str(gitops), clock,
                          post_status=lambda sha, c, s, d: repo.add_status(sha, s, c, d) and None,
                          merge=lambda n: repo.merge_pull(n) and None)
            fleet.push_env("dev", {"clusters.yaml": clusters_file("dev", args.clusters)}, "dev: many clusters")

            def run() -> int:
                mark = stub.mark()
                with fleet.context() as ctx:
                    outcome = reconcile(ctx)
                problems = [p for e in outcome.environments for p in e.problems]
                assert not problems, problems
                if "--log" in sys.argv:
                    for r in stub.requests_since(mark):
                        print("   ", r.method, r.path, r.query, r.status)
                return int(stub.count(since=mark))

            figures = {"promote+schedule dev": run(), "waiting for dev's merge": run()}
            fleet.approve("dev")
            clock.advance(timedelta(seconds=30))
            tip = fleet.gitops_tip("dev")
            for i in range(1, args.clusters + 1):
                repo.add_status(tip, "success", f"flux/dev-{i}", f"reconciled {tip[:7]}")
            figures["gate check (soaking)"] = run()
            clock.advance(timedelta(minutes=2))
            figures["gate success + promote+schedule qa"] = run()
            figures["waiting for qa's merge"] = run()
            forge.close()
        finally:
            stub.stop()
    print(f"GitHub API requests per reconcile run (5 environments, {args.clusters} clusters in dev):")
    for name, count in figures.items():
        print(f"  {name:<38} {count:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
