"""State benchmark: how big the state files are and how many of their bytes a 1%-change run reads and writes.

Run from the repository root::

    python benchmarks/bench_state.py                                 # 100 workloads x 1000 cluster types
    python benchmarks/bench_state.py --workloads 10 --cluster-types 1000

The fleet is ``benchmarks/fleet.py``'s (one cluster per cluster type). One process: a full render (its state is the
previous one), then the 1% change of ``fleet.change_one_value`` (one ConfigMap value applying to 1% of the cluster
types) rendered incrementally from that state, with a reader that counts the state files it is asked for.

Printed, for the state as written now (version 3: the index ``state.json`` with its parts, and the shards) beside
the two layouts before it, rebuilt here from the same state: the whole index in one file (version 2, same shards)
and the single ``state.json`` (version 1: the whole index's head and every assignment line in one file):

- **sizes**: the index, its parts (count, largest, median), the shards (largest, median), and the largest file;
- **1% run**: state bytes read and written by each layout;
- **1,000,000 assignments**: the index's bytes (with its parts) per cluster type, per deployment target, per cluster
  and per ConfigMap (measured by leaving each out), extrapolated to 1M as 100 workloads x 10,000 cluster types,
  1,000 workloads x 1,000 cluster types and 10 workloads x 100,000 cluster types, one cluster per cluster type: the
  whole index then, and the largest part now (the whole spread over 256 parts); a shard holds one line per
  workload (it grows with the workloads, never with the number of cluster types).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
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
    _FINGERPRINT_MAPS,
    LEGACY_VERSION,
    STATE_PATH,
    WHOLE_INDEX_VERSION,
    Assignments,
    Fingerprints,
    RenderState,
    _cluster_entry,
    _compact,
    _config_keys_line,
    _fingerprint_line,
    _shard_line,
    shard_path,
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


def whole_index(state: RenderState) -> bytes:
    """``state``'s index as version 2 wrote it, in one file: the head, then every section whole, one entry a line
    (the same lines the parts hold now)."""
    head = {"apiVersion": "fleetflow.dev/v1alpha1", "kind": "RenderState", "version": WHOLE_INDEX_VERSION,
            "environment": state.environment, "mainCommit": state.main_commit, "envCommit": state.env_commit,
            "engine": state.engine}
    lines = ["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), '  "clusters": [',
             ",\n".join("    " + _cluster_entry(c) for c in sorted(state.clusters, key=lambda c: c.name)), "  ],",
             '  "configKeys": {', ",\n".join(_config_keys_line(n, k) for n, k in sorted(state.config_keys.items())),
             "  },"]
    if state.fingerprints is not None:
        fps = state.fingerprints.to_json()
        lines += ['  "fingerprints": {', f'    "heldBack": {_compact(fps["heldBack"])},',
                  f'    "schemas": {json.dumps(fps["schemas"])},']
        for i, part in enumerate(_FINGERPRINT_MAPS):
            entries = (_fingerprint_line(k, v) for k, v in fps[part].items())
            comma = "," if i < len(_FINGERPRINT_MAPS) - 1 else ""
            lines += [f'    "{part}": {{', ",\n".join(entries), "    }" + comma]
        lines.append("  },")
    shards = sorted((ct, s) for ct, s in state.assignments.shards.items() if len(s))
    lines += ['  "shards": {', ",\n".join(_shard_line(ct, s) for ct, s in shards), "  }", "}"]
    return ("\n".join(line for line in lines if line) + "\n").encode()


def legacy_bytes(state: RenderState, shards: Mapping[str, bytes | None]) -> bytes:
    """The single ``state.json`` (version 1) of ``state``: the whole index without its shard lines, then every
    assignment line (the shards' lines are the same text)."""
    index = whole_index(state).decode()
    head = index[: index.index('  "shards": {')]
    head = head.replace(f'"version": {WHOLE_INDEX_VERSION},', f'"version": {LEGACY_VERSION},')
    lines: list[str] = []
    for data in shards.values():
        assert data is not None
        text = data.decode()
        start = text.index('  "assignments": {\n') + len('  "assignments": {\n')
        block = text[start : text.index("\n  }\n}", start)]
        lines.extend(block.split(",\n") if block else [])
    lines.sort()
    return (head + '  "assignments": {\n' + ",\n".join(lines) + "\n  }\n}\n").encode()


def index_files(state: RenderState) -> dict[str, bytes]:
    """The index and its parts as they are written now: path -> bytes."""
    index = state.to_bytes()
    return {STATE_PATH: index, **{p: d for p, d in state.part_files().items() if d is not None}}


def index_bytes(state: RenderState) -> int:
    """The index's bytes with its parts."""
    return sum(len(d) for d in index_files(state).values())


def part_bytes(state: RenderState) -> dict[str, float]:
    """The index's bytes (with its parts) per cluster type, per target, per cluster and per ConfigMap, measured by
    leaving each out; the rest is fixed."""
    full = index_bytes(state)
    fps = state.fingerprints or Fingerprints()
    without = {
        "cluster_type": (dataclasses.replace(state, assignments=Assignments(),
                                             fingerprints=dataclasses.replace(fps, cluster_types={}, reporters={})),
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
        share = full - index_bytes(smaller)
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
        index = index_files(full.state)
        whole = whole_index(full.state)
        legacy = legacy_bytes(full.state, shards)
        assert len(RenderState.from_bytes(legacy).assignments) == len(full.state.assignments)
        assert RenderState.from_bytes(whole).clusters == full.state.clusters
        sizes = sorted(len(d) for d in shards.values() if d is not None)
        part_sizes = sorted(len(d) for p, d in index.items() if p != STATE_PATH)
        print(f"fleet: {args.workloads} workloads x {args.cluster_types} cluster types = {size.assignments:,} "
              f"assignments (full render {t1 - t0:.1f} s)")
        print(f"  single state.json (version 1):  {len(legacy):>12,} bytes ({len(legacy) / size.assignments:.0f} "
              "per assignment)")
        print(f"  whole index (version 2):        {len(whole):>12,} bytes")
        print(f"  index state.json (version 3):   {len(index[STATE_PATH]):>12,} bytes, with {len(part_sizes):,} parts: "
              f"largest {part_sizes[-1]:,} bytes, median {statistics.median(part_sizes):,.0f}, total "
              f"{sum(part_sizes):,}")
        print(f"  shards (versions 2 and 3):      {len(sizes):>12,} files, largest {sizes[-1]:,} bytes, median "
              f"{statistics.median(sizes):,.0f}, total {sum(sizes):,}")
        print(f"  largest state file: version 1 {len(legacy):,} bytes, version 2 {max(len(whole), sizes[-1]):,}, "
              f"version 3 {max(len(index[STATE_PATH]), part_sizes[-1], sizes[-1]):,}")

        stored = CountingFiles({**index, **{p: d for p, d in shards.items() if d is not None}})
        previous = RenderState.from_bytes(index[STATE_PATH], stored)
        stored.read += len(index[STATE_PATH])
        change = fleet.change_one_value(env_dir)
        t2 = time.perf_counter()
        result = render_environment(load(main_dir, env_dir), fleet.ENVIRONMENT, previous=previous,
                                    meta=Meta("0" * 40, "1" * 40))
        t3 = time.perf_counter()
        written = result.state.shard_files(previous)
        new_index = result.state.to_bytes()
        new_parts = result.state.part_files(previous)
        shard_bytes = sum(len(d) for d in written.values() if d is not None)
        wrote = shard_bytes + sum(len(d) for d in new_parts.values() if d is not None) + (
            len(new_index) if new_index != index[STATE_PATH] else 0)
        loaded = {shard_path(ct) for ct, s in previous.assignments.shards.items() if s.loaded}  # what the run read
        read_shards = sum(len(d) for p, d in stored.files.items() if p in loaded)
        print(f"1% run ({change}; {len(result.changes.changed):,} assignments changed, render {t3 - t2:.1f} s):")
        print(f"  state read:    version 1 {len(legacy):>12,} bytes   version 2 {len(whole) + read_shards:>12,}   "
              f"version 3 {stored.read:>12,} (index + {_count(len(part_sizes), 'part')} + "
              f"{_count(sum(1 for s in previous.assignments.shards.values() if s.loaded), 'shard')})")
        print(f"  state written: version 1 {len(legacy):>12,} bytes   version 2 {len(whole) + shard_bytes:>12,}   "
              f"version 3 {wrote:>12,} (index + {_count(len(new_parts), 'part')} + {_count(len(written), 'shard')})")

        parts = part_bytes(full.state)
        per_line = (sum(sizes) - 250 * len(sizes)) / size.assignments  # a shard: ~250 bytes of head, then lines
        print("index bytes: fixed {fixed:,.0f}, per cluster type {per_cluster_type:.0f}, per deployment target "
              "{per_target:.0f}, per cluster {per_cluster:.0f}, per ConfigMap {per_config_map:.0f} "
              "({config_maps:,.0f} ConfigMaps: one per cluster type, one per workload, {other:,.0f} others); "
              "shard bytes per assignment {line:.0f}".format(
                  **parts, line=per_line, other=parts["config_maps"] - args.cluster_types - args.workloads))
        print("extrapolated to 1,000,000 assignments (one cluster per cluster type):")
        other_maps = parts["config_maps"] - args.cluster_types - args.workloads
        for workloads, cts in ((100, 10_000), (1_000, 1_000), (10, 100_000)):
            idx = parts["fixed"] + cts * (parts["per_cluster_type"] + parts["per_cluster"]) + \
                workloads * parts["per_target"] + (cts + workloads + other_maps) * parts["per_config_map"]
            shard = 250 + workloads * per_line
            single = idx + workloads * cts * per_line
            print(f"  {workloads:>5,} workloads x {cts:>7,} cluster types: index and parts {idx / MB:.2f} MB, "
                  f"largest part ~{idx / 256 / MB:.3f} MB (version 2 held about as much in one file), "
                  f"each shard {shard / MB:.3f} MB (single file before: {single / MB:.0f} MB)")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


if __name__ == "__main__":
    raise SystemExit(main())
