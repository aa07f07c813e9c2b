"""State benchmark: how big the state files are and how many of their bytes a 1%-change run reads and writes.

Run from the repository root::

    python benchmarks/bench_state.py                                 # 100 workloads x 1000 cluster types
    python benchmarks/bench_state.py --workloads 10 --cluster-types 1000

The fleet is ``benchmarks/fleet.py``'s (one cluster per cluster type). One process: a full render (its state is the
previous one), then the 1% change of ``fleet.change_one_value`` (one ConfigMap value applying to 1% of the cluster
types) rendered incrementally from that state, with a reader that counts the state files it is asked for.

Printed:

- **sizes**: the index, the largest and the median shard, and the single ``state.json`` (version 1) the same state
  was before shards (rebuilt here from the index and the shard lines: that format wrote the index's head and every
  assignment line in one file);
- **1% run**: state bytes read and written, sharded against the single file (which was read whole and rewritten
  whole on every change);
- **1,000,000 assignments**: the index's bytes per cluster type, per deployment target and per cluster (measured by
  leaving each part out), extrapolated to 1M as 100 workloads x 10,000 cluster types and as 1,000 workloads x
  1,000 cluster types, one cluster per cluster type; a shard holds one line per workload (it grows with the
  workloads, never with the number of cluster types).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet  # a sibling module (benchmarks/ is not a package)

from fleetflow.cli.common import load
from fleetflow.render.incremental import (
    LEGACY_VERSION,
    STATE_PATH,
    STATE_VERSION,
    Assignments,
    Fingerprints,
    RenderState,
    shard_reader,
)
from fleetflow.render.pipeline import Meta, render_environment

MB = 1_000_000


class CountingFiles:
    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = dict(files)
        self.read = 0

    def __call__(self, paths: list[str]) -> dict[str, bytes | None]:
        found = {p: self.files.get(p) for p in paths}
        self.read += sum(len(d) for d in found.values() if d is not None)
        return found


def legacy_bytes(state: RenderState, shards: Mapping[str, bytes | None]) -> bytes:
    """The single ``state.json`` (version 1) of ``state``: the index without its shard lines, then every
    assignment line (the shards' lines are the same text)."""
    index = state.to_bytes().decode()
    head = index[: index.index('  "shards": {')]
    head = head.replace(f'"version": {STATE_VERSION},', f'"version": {LEGACY_VERSION},')
    lines: list[str] = []
    for data in shards.values():
        assert data is not None
        text = data.decode()
        start = text.index('  "assignments": {\n') + len('  "assignments": {\n')
        block = text[start : text.index("\n  }\n}", start)]
        lines.extend(block.split(",\n") if block else [])
    lines.sort()
    return (head + '  "assignments": {\n' + ",\n".join(lines) + "\n  }\n}\n").encode()


def part_bytes(state: RenderState) -> dict[str, float]:
    """The index's bytes per cluster type, per target, per cluster and per ConfigMap, measured by leaving each
    part out; the rest is fixed."""
    full = len(state.to_bytes())
    fps = state.fingerprints or Fingerprints()
    without = {
        "cluster_type": (dataclasses.replace(state, assignments=Assignments(),
                                             fingerprints=dataclasses.replace(fps, cluster_types={})),
                         len(fps.cluster_types)),
        "target": (dataclasses.replace(state, fingerprints=dataclasses.replace(fps, targets={})), len(fps.targets)),
        "cluster": (dataclasses.replace(state, clusters=[]), len(state.clusters)),
        "config_map": (dataclasses.replace(state, config_keys={},
                                           fingerprints=dataclasses.replace(fps, config_maps={})),
                       len(fps.config_maps)),
    }
    parts: dict[str, float] = {}
    fixed = float(full)
    for name, (smaller, count) in without.items():
        share = full - len(smaller.to_bytes())
        parts[f"per_{name}"] = share / max(count, 1)
        parts[f"{name}s"] = count
        fixed -= share
    parts["fixed"] = fixed
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=1000)
    args = parser.parse_args(argv)
    size = fleet.FleetSize(workloads=args.workloads, cluster_types=args.cluster_types)
    with tempfile.TemporaryDirectory(prefix="fleetflow-bench-state-") as tmp:
        main_dir, env_dir = fleet.write_fleet(Path(tmp), size)
        t0 = time.perf_counter()
        full = render_environment(load(main_dir, env_dir), fleet.ENVIRONMENT, meta=Meta("0" * 40, "1" * 40))
        t1 = time.perf_counter()
        shards = full.state.shard_files()
        index = full.state.to_bytes()
        legacy = legacy_bytes(full.state, shards)
        assert len(RenderState.from_bytes(legacy).assignments) == len(full.state.assignments)
        sizes = sorted(len(d) for d in shards.values() if d is not None)
        print(f"fleet: {args.workloads} workloads x {args.cluster_types} cluster types = {size.assignments:,} "
              f"assignments (full render {t1 - t0:.1f} s)")
        print(f"  single state.json (before):   {len(legacy):>12,} bytes ({len(legacy) / size.assignments:.0f} per "
              "assignment)")
        print(f"  index state.json (after):     {len(index):>12,} bytes")
        print(f"  shards (after):               {len(sizes):>12,} files, largest {sizes[-1]:,} bytes, median "
              f"{statistics.median(sizes):,.0f}, total {sum(sizes):,}")
        print(f"  largest state file: before {len(legacy):,} bytes, after {max(len(index), sizes[-1]):,} bytes")

        stored = CountingFiles({STATE_PATH: index, **{p: d for p, d in shards.items() if d is not None}})
        previous = RenderState.from_bytes(index, shard_reader(stored))
        stored.read += len(index)
        change = fleet.change_one_value(env_dir)
        t2 = time.perf_counter()
        result = render_environment(load(main_dir, env_dir), fleet.ENVIRONMENT, previous=previous,
                                    meta=Meta("0" * 40, "1" * 40))
        t3 = time.perf_counter()
        written = result.state.shard_files(previous)
        new_index = result.state.to_bytes()
        wrote = sum(len(d) for d in written.values() if d is not None) + (len(new_index) if new_index != index else 0)
        print(f"1% run ({change}; {len(result.changes.changed):,} assignments changed, render {t3 - t2:.1f} s):")
        print(f"  state read:    before {len(legacy):>12,} bytes   after {stored.read:>12,} bytes "
              f"(index + {sum(1 for s in result.state.assignments.shards.values() if s.loaded):,} shards)")
        print(f"  state written: before {len(legacy):>12,} bytes   after {wrote:>12,} bytes "
              f"(index + {len(written):,} shards)")

        parts = part_bytes(full.state)
        per_line = (sum(sizes) - 250 * len(sizes)) / size.assignments  # a shard: ~250 bytes of head, then lines
        print("index bytes: fixed {fixed:,.0f}, per cluster type {per_cluster_type:.0f}, per deployment target "
              "{per_target:.0f}, per cluster {per_cluster:.0f}, per ConfigMap {per_config_map:.0f} "
              "({config_maps:,.0f} ConfigMaps: one per cluster type, one per workload, {other:,.0f} others); "
              "shard bytes per assignment {line:.0f}".format(
                  **parts, line=per_line, other=parts["config_maps"] - args.cluster_types - args.workloads))
        print("extrapolated to 1,000,000 assignments (one cluster per cluster type):")
        other_maps = parts["config_maps"] - args.cluster_types - args.workloads
        for workloads, cts in ((100, 10_000), (1_000, 1_000)):
            idx = parts["fixed"] + cts * (parts["per_cluster_type"] + parts["per_cluster"]) + \
                workloads * parts["per_target"] + (cts + workloads + other_maps) * parts["per_config_map"]
            shard = 250 + workloads * per_line
            single = idx + workloads * cts * per_line
            print(f"  {workloads:>5,} workloads x {cts:>6,} cluster types: index {idx / MB:.2f} MB, each shard "
                  f"{shard / MB:.3f} MB (single file before: {single / MB:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
