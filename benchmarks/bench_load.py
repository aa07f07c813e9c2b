"""Load benchmark: reading a big inventory into a control plane, cold (no parse cache) and warm (parse cache).

Run from the repository root::

    python benchmarks/bench_load.py                  # 1,000 cluster types x 30 clusters = 30,000 Cluster documents
    python benchmarks/bench_load.py --careful        # also the careful path alone (ruamel.yaml, as before)
    python benchmarks/bench_load.py --clusters-per-type 3 --runs 1   # a quick look
    python benchmarks/bench_load.py --workloads 100 --clusters-per-type 1 --build   # + building the resources alone

The fleet is ``fleet.py``'s (``--workloads`` workloads, 1,000 cluster types with their ConfigMaps) with
``--clusters-per-type`` Cluster documents per cluster type in one ``clusters.yaml``. Each run is a fresh process
that calls ``load_control_plane`` on ``main`` + ``env``: the time covers finding, reading and parsing every file
and building and checking every resource (no workload repos, no cross-reference checks). A fleet with a problem
fails the run (the loader raises every problem; the run's stderr shows them).

* cold: no parse cache (every hosted runner); target (issue #9): <= 3 s for 30,000 Clusters + 1,000 cluster types;
* warm: every file already in a parse cache (a developer's second run);
* build (``--build``): building the resources alone, in this process, from documents already parsed: the
  envelope checks and pydantic of ``controlplane._build``; each figure is the mean of 20 builds;
* careful: the quick path turned off, every file read by ruamel.yaml's round-trip parser (the way it was read
  before libyaml); only with ``--careful``, it takes about 25 s.

Prints min / median / max over ``--runs`` runs of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet  # a sibling module (benchmarks/ is not a package)

COLD_TARGET_S = 3.0

_RUN = """
import json, sys, time
from pathlib import Path
from fleetflow.model import documents
from fleetflow.model.controlplane import load_control_plane
from fleetflow.model.documents import ParseCache
from fleetflow.collector import tune
tune()  # as the fleetflow executable sets up its process
root, cache, careful = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
documents._quick_enabled = not careful
t0 = time.perf_counter()
plane = load_control_plane(root / "main", root / "env", cache=ParseCache(Path(cache)) if cache else None)
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "clusters": len(plane.clusters), "cluster_types": len(plane.cluster_types)}))
"""


def run_once(root: Path, cache: Path | None, careful: bool = False) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(root), str(cache or ""), "1" if careful else "0"],
        check=True, capture_output=True, text=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def build_seconds(root: Path, repeats: int, number: int = 20) -> list[float]:
    """``repeats`` timings of building the resources of ``root``'s two trees from their parsed documents, each the
    mean of ``number`` builds (warm: the same documents every time)."""
    from fleetflow.errors import Problems
    from fleetflow.model.controlplane import _build
    from fleetflow.model.documents import Tree, read_tree

    problems = Problems()
    docs = [(d, origin) for origin in ("main", "env") for d in read_tree(Tree(root / origin, origin), problems, None)]
    problems.raise_if_any()
    return [t / number for t in timeit.repeat(lambda: _build(docs, None, Problems()), number=number, repeat=repeats)]


def summary(name: str, results: list[dict[str, float]], target: float | None = None) -> str:
    times = [r["seconds"] for r in results]
    line = (
        f"{name:8} min {min(times):6.2f} s  median {statistics.median(times):6.2f} s  max {max(times):6.2f} s"
        f"  ({int(results[0]['clusters'])} clusters, {int(results[0]['cluster_types'])} cluster types)"
    )
    if target is not None:
        line += f"  {'OK' if max(times) <= target else 'OVER'} target <= {target:.0f} s"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=10)
    parser.add_argument("--cluster-types", type=int, default=1000)
    parser.add_argument("--clusters-per-type", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--careful", action="store_true", help="also time the careful path alone (slow)")
    parser.add_argument("--build", action="store_true",
                        help="also time building the resources alone (in this process, documents already parsed)")
    args = parser.parse_args()
    size = fleet.FleetSize(
        workloads=args.workloads, cluster_types=args.cluster_types, clusters_per_type=args.clusters_per_type
    )
    with tempfile.TemporaryDirectory(prefix="fleetflow-bench-load-") as work:
        root = Path(work)
        fleet.write_fleet(root, size)
        files = sum(1 for p in root.rglob("*.yaml"))
        megabytes = sum(p.stat().st_size for p in root.rglob("*.yaml")) / 2**20
        print(f"fleet: {files} files, {megabytes:.1f} MB; python {sys.version.split()[0]}")
        cold = [run_once(root, None) for _ in range(args.runs)]
        print(summary("cold", cold, COLD_TARGET_S))
        cache = root / "cache"
        run_once(root, cache)  # fills the cache
        warm = [run_once(root, cache) for _ in range(args.runs)]
        print(summary("warm", warm))
        if args.build:
            built = build_seconds(root, args.runs)
            print(f"{'build':8} min {min(built) * 1000:6.1f} ms median {statistics.median(built) * 1000:6.1f} ms max "
                  f"{max(built) * 1000:6.1f} ms  (mean of 20 builds each)")
        if args.careful:
            careful = [run_once(root, None, careful=True) for _ in range(args.runs)]
            print(summary("careful", careful))


if __name__ == "__main__":
    main()
