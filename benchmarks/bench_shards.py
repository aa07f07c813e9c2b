"""Sharded schedule benchmark: one shard job (``fleetflow schedule --shard K/N``) as a hosted runner runs it.

Run from the repository root::

    python benchmarks/bench_shards.py                                  # 100 workloads x 1000 cluster types, N=10
    python benchmarks/bench_shards.py --workloads 100 --cluster-types 10000 --shards 10 --runs 3    # 1M
    python benchmarks/bench_shards.py --workloads 100 --cluster-types 1000 --stitch                # + the stitch

The fleet is ``benchmarks/fleet.py``'s (``W × T`` assignments, three files each), in real repos as
``bench_promotion.py`` builds them (a bare control plane, a bare GitOps repo holding only a README: the first
promotion, where every cluster type is new, the biggest render a shard ever does). The environment says
``shardedSchedule: true``, so ``promote`` only pins it.

Each measured run is shard ``--shard-index``/``--shards`` in a fresh process (``spawn``: its peak RSS is its own)
with empty caches (git mirrors and the parse cache), as a hosted runner without a warm cache: it fetches the
control plane and the GitOps branch, loads the whole control plane, renders its share of the cluster types and
writes its artifact. Printed per run: seconds, peak RSS, the artifact's bytes (manifest + git bundle, what
actions/upload-artifact uploads), then min/median/max over ``--runs``.

``--stitch`` also runs every other shard once and the stitch job (fresh caches: it sees the shards only through
their artifacts), and prints its time and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_promotion  # siblings (benchmarks/ is not a package)
import bench_render
import fleet

Result = dict[str, Any]
ENV = fleet.ENVIRONMENT


def _context(root: str, cache: str) -> Any:
    from fleetflow.forge.git import GitRepos
    from fleetflow.forge.local import LocalForge
    from fleetflow.promotion.context import Context

    return Context(forge=LocalForge(cache_dir=Path(root) / "forge-cache"), git=GitRepos(Path(cache) / "git"),
                   control_plane=str(Path(root) / "control-plane.git"), say=lambda _t: None)


def phase_pin(root: str) -> Result:
    from fleetflow.promotion.promote import promote

    main_sha = bench_promotion.git(Path(root), "--git-dir", str(Path(root) / "control-plane.git"), "rev-parse",
                                   "main")
    with _context(root, str(Path(root) / "pin-cache")) as ctx:
        outcome = promote(ctx, ENV, main_sha)
    assert outcome.schedule is None and outcome.pinned, outcome
    return {"pinned": main_sha}


def phase_shard(root: str, cache: str, index: int, count: int, artifact: str) -> Result:
    """One shard job with empty caches (``cache`` is a fresh folder; XDG_CACHE_HOME too: the parse cache)."""
    from fleetflow.collector import tune
    from fleetflow.promotion.shards import ShardSpec, render_shard

    os.environ["XDG_CACHE_HOME"] = str(Path(cache) / "xdg")
    tune()  # as the fleetflow executable sets up its process
    t0 = time.perf_counter()
    with _context(root, cache) as ctx:
        manifest = render_shard(ctx, ENV, ShardSpec(index, count), Path(artifact))
    total = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in Path(artifact).iterdir() if f.is_file())
    return {"total": total, "maxrss_mib": bench_render._maxrss_mib(), "artifact_bytes": size,
            "rendered": manifest.rendered, "folders": len(manifest.folders)}


def phase_stitch(root: str, cache: str, artifacts: str) -> Result:
    from fleetflow.collector import tune
    from fleetflow.promotion.shards import stitch_environment

    os.environ["XDG_CACHE_HOME"] = str(Path(cache) / "xdg")
    tune()  # as the fleetflow executable sets up its process
    t0 = time.perf_counter()
    with _context(root, cache) as ctx:
        outcome = stitch_environment(ctx, ENV, Path(artifacts))
    return {"total": time.perf_counter() - t0, "maxrss_mib": bench_render._maxrss_mib(),
            "operation": outcome.operation}


def spread(values: list[float], unit: str, fmt: str = ".2f") -> str:
    return (f"min {min(values):{fmt}} / median {statistics.median(values):{fmt}} / max {max(values):{fmt}} "
            f"{unit}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=10, help="N")
    parser.add_argument("--shard-index", type=int, default=1, help="K, the shard measured")
    parser.add_argument("--runs", type=int, default=3, help="runs of the measured shard (min/median/max)")
    parser.add_argument("--stitch", action="store_true", help="also run the other shards once and the stitch")
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-shards-", dir=args.dir))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> int:
    w, t, n, k = args.workloads, args.cluster_types, args.shards, args.shard_index
    print(f"fleet: {w} workloads x {t} cluster types = {w * t} assignments; shard {k}/{n}; {args.runs} run(s); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    setup = bench_promotion.build_repos(work, w, t)
    main_dir = Path(setup["main"])
    (main_dir / ".environments" / f"{ENV}.yaml").write_text(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: {ENV}\n"
        "spec:\n  shardedSchedule: true\n", encoding="utf-8")
    bench_promotion.git(main_dir, "commit", "-q", "-am", "dev: sharded schedule")
    bench_promotion.git(main_dir, "push", "-q", setup["cp"], "HEAD:refs/heads/main")
    bench_render.in_child(phase_pin, str(work))
    print(f"setup: repos and pin in {setup['total']:.1f} s (+ pin)")

    runs: list[Result] = []
    for i in range(args.runs):
        cache, artifact = work / f"cache-{k}-{i}", work / f"artifact-{k}-{i}"
        r = bench_render.in_child(phase_shard, str(work), str(cache), k, n, str(artifact))
        runs.append(r)
        print(f"run {i + 1}: shard {k}/{n}: {r['total']:.2f} s, peak RSS {r['maxrss_mib']:.0f} MiB, artifact "
              f"{r['artifact_bytes']:,} B; {r['rendered']} assignments rendered, {r['folders']} cluster-type "
              f"folders (load average now {os.getloadavg()[0]:.1f})")
        shutil.rmtree(cache, ignore_errors=True)
    print(f"shard {k}/{n} of {w * t} assignments ({runs[0]['rendered']} rendered):")
    print(f"  time      {spread([r['total'] for r in runs], 's')}")
    print(f"  peak RSS  {spread([r['maxrss_mib'] for r in runs], 'MiB', '.0f')}")
    print(f"  artifact  {spread([r['artifact_bytes'] / 2**20 for r in runs], 'MiB')}")

    if args.stitch:
        artifacts = work / "artifacts"
        artifacts.mkdir()
        shutil.copytree(work / f"artifact-{k}-0", artifacts / f"shard-{k}")
        sizes = []
        for other in (j for j in range(1, n + 1) if j != k):
            r = bench_render.in_child(phase_shard, str(work), str(work / f"cache-{other}"), other, n,
                                      str(artifacts / f"shard-{other}"))
            sizes.append(r["artifact_bytes"])
            shutil.rmtree(work / f"cache-{other}", ignore_errors=True)
        total = sum(sizes) + runs[0]["artifact_bytes"]
        s = bench_render.in_child(phase_stitch, str(work), str(work / "cache-stitch"), str(artifacts))
        print(f"stitch of {n} shards ({total:,} B of artifacts): {s['total']:.2f} s, peak RSS "
              f"{s['maxrss_mib']:.0f} MiB ({s['operation']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
