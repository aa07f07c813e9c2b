"""The full promote with ``git fast-import`` under glibc's own trim threshold, and under the one fleetflow sets for
it (``fleetflow.forge.git.fast_import_env``), taken in turns on fresh repositories.

With glibc's default (128 KiB, adjusted as the process goes), fast-import gave the memory it used for each new
object back to the system and asked for it again for the next; a first promote writes every file as a new object.
Only fast-import's environment differs between the two: fleetflow's own process runs as it always does.

Run from the repository root::

    python benchmarks/bench_fast_import.py                      # 100 workloads x 1,000 cluster types, 3 runs each
    python benchmarks/bench_fast_import.py --cluster-types 100 --runs 5

``benchmarks/bench_tree_write.py`` measures fast-import alone (``fast-import`` and ``fast-import/glibc``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_promotion  # siblings (benchmarks/ is not a package)
import bench_render
import bench_tree_write

MODES = ("glibc", "fleetflow")


def promote_with(mode: str, root: str) -> bench_promotion.Result:
    """One full promote in this (child) process; ``glibc``: fast-import with no trim threshold set."""
    if mode == "glibc":
        with bench_tree_write.glibc_trim_threshold():
            return bench_promotion.phase_promote(root)
    return bench_promotion.phase_promote(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bench_tree_write.refuse_a_set_threshold(parser)
    load = os.getloadavg()
    print(f"{args.workloads * args.cluster_types} assignments, full promote, {args.runs} run(s) each, in turns; "
          f"load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    work = Path(tempfile.mkdtemp(prefix="bench-fast-import-"))
    try:
        for i in range(args.runs):
            for mode in MODES:
                root = work / f"{mode}-{i}"
                root.mkdir()
                os.environ["XDG_CACHE_HOME"] = str(root / "xdg")  # cold caches for each promote
                bench_promotion.build_repos(root, args.workloads, args.cluster_types)
                os.sync()
                found = bench_render.in_child(promote_with, mode, str(root))
                seconds[mode].append(found["total"])
                print(f"  run {i + 1}  fast-import with {mode:<9} trim threshold  {found['total']:7.2f} s, "
                      f"peak RSS {found['maxrss_mib']:.0f} MiB", flush=True)
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for mode, taken in seconds.items():
        print(f"{mode:>9}: min {min(taken):.2f} / median {statistics.median(taken):.2f} / max {max(taken):.2f} s")
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
