"""What ``promote`` spends checking a commit before it writes the pin of an environment with ``shardedSchedule``
(``context.check_before_pinning``; promote renders every other environment's pin commit before pushing it, which
costs nothing more: the schedule's render moved before the push).

Run from the repository root::

    python benchmarks/bench_pin_checks.py                          # 100 workloads x 1,000 cluster types
    python benchmarks/bench_pin_checks.py --cluster-types 100 --runs 5

The fleet is ``fleet.py``'s (``--workloads`` x ``--cluster-types`` assignments, one cluster each). Per run: the
control plane loaded with no parse cache (``cold``: a hosted runner's first promote), loaded again with the cache
that load filled (``warm``: what the schedule after the pin then reads), and the render's checks that come before
any assignment is rendered (``pipeline.checked_inputs``: references, ConfigMaps, ConfigSchemas, the schedule,
templates). A sharded promote pays one load (cold on a runner's first promote) and the checks; min / median /
max over ``--runs``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet import ENVIRONMENT, FleetSize, write_fleet  # a sibling module (benchmarks/ is not a package)

from fleetflow.model.controlplane import load_control_plane
from fleetflow.model.documents import ParseCache
from fleetflow.render.pipeline import checked_inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-pin-checks-"))
    try:
        main_tree, env_tree = write_fleet(root, FleetSize(workloads=args.workloads, cluster_types=args.cluster_types))
        cache = root / "cache"
        spent: dict[str, list[float]] = {"plane, cold": [], "plane, warm": [], "checks": []}
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            for kind in ("plane, cold", "plane, warm"):
                start = time.perf_counter()
                plane = load_control_plane(main_tree, env_tree, main_label="main", env_label=ENVIRONMENT,
                                           cache=ParseCache(cache))
                spent[kind].append(time.perf_counter() - start)
            start = time.perf_counter()
            checked_inputs(plane, ENVIRONMENT)
            spent["checks"].append(time.perf_counter() - start)
        print(f"{args.workloads * args.cluster_types:,} assignments, {args.runs} runs (min / median / max, seconds)")
        for kind, times in spent.items():
            print(f"  {kind:12} {min(times):.3f} / {statistics.median(times):.3f} / {max(times):.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
