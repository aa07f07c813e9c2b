"""Render benchmark: full, incremental and no-change renders of a synthetic fleet, against plain Jinja2.

Run from the repository root::

    python benchmarks/bench_render.py                       # 100 workloads x 1000 cluster types
    python benchmarks/bench_render.py --workloads 10 --cluster-types 100
    python benchmarks/bench_render.py --profile             # cProfile of phases (a) and (c) only

Phases, each in a fresh process (``spawn``) so that the peak RSS (``ru_maxrss``) is the phase's own:

(a) full render: load + render + write into an empty output directory;
(b) incremental: one value changed in a ConfigMap that applies to exactly 1% of the assignments; load +
    render (previous state read from the output) + write; target < 5% of (a);
(c) no change: render again; nothing may be written (state.json included);
(v) verify: a full render of the changed plane into a fresh directory must be byte-identical to (b)'s tree;
(d) baseline: the same templates with plain ``jinja2.Environment`` (fleetflow's filters registered),
    precompiled, over the same assignments with precomputed variables, writing the same files.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import multiprocessing
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet  # a sibling module (benchmarks/ is not a package)

STATE_FILE = ".fleetflow/state.json"
FULL_TARGET_S = 60.0
MEMORY_TARGET_MIB = 2048.0
INCREMENTAL_TARGET = 0.05

Result = dict[str, Any]


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


# --- phases (each runs in its own process) ---------------------------------------------------------------


def phase_render(main_dir: str, env_dir: str, output: str, profile: bool = False) -> Result:
    """load + render (with the previous state found in ``output``) + write."""
    from fleetflow.cli.common import load
    from fleetflow.collector import tune
    from fleetflow.errors import Problems
    from fleetflow.render.output import apply_result, read_state
    from fleetflow.render.pipeline import Meta, render_environment

    tune()  # as the fleetflow executable sets up its process
    out = Path(output)
    state_path = out / STATE_FILE
    state_mtime = state_path.stat().st_mtime_ns if state_path.exists() else None
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    t0 = time.perf_counter()
    plane = load(Path(main_dir), Path(env_dir))
    t1 = time.perf_counter()
    unreadable = Problems()
    previous = read_state(out, unreadable)
    result = render_environment(plane, fleet.ENVIRONMENT, previous=previous, meta=Meta())
    t2 = time.perf_counter()
    report = apply_result(out, result, previous)
    t3 = time.perf_counter()
    if profiler is not None:
        profiler.disable()
    stats_text = ""
    if profiler is not None:
        buffer = io.StringIO()
        for order in ("cumulative", "tottime"):
            buffer.write(f"\n=== top 25 by {order} ===\n")
            pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats(order).print_stats(25)
        stats_text = buffer.getvalue()
    return {
        "load": t1 - t0,
        "render": t2 - t1,
        "write": t3 - t2,
        "total": t3 - t0,
        "assignments": len(result.state.assignments),
        "rendered": len(result.rendered),
        "written": len(report.written),
        "deleted": len(report.deleted),
        "state_written": STATE_FILE in report.written,
        "state_mtime_same": state_mtime is not None and state_path.stat().st_mtime_ns == state_mtime,
        "changed": len(result.changes.changed),
        "config_keys": list(result.changes.config_keys),
        "warning": "; ".join(str(w) for w in unreadable) or None,
        "maxrss_mib": _maxrss_mib(),
        "profile": stats_text,
    }


def phase_baseline(workloads: int, cluster_types: int, output: str) -> Result:
    """Plain Jinja2: precompiled templates, precomputed variables, render + write every file."""
    import jinja2

    from fleetflow.render.templates import FILTERS

    t0 = time.perf_counter()
    size = fleet.FleetSize(workloads=workloads, cluster_types=cluster_types)
    variables = list(fleet.assignment_variables(fleet.model(size)))
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters.update(FILTERS)
    compiled = {
        name: [env.from_string(text) for text in manifests] for name, (_, manifests) in fleet.TEMPLATES.items()
    }
    roles = [(role, compiled[name]) for role, name in fleet.ROLE_TEMPLATES]
    t1 = time.perf_counter()
    out = Path(output)
    files = 0
    for aid, values in variables:
        folder = out / aid
        folder.mkdir(parents=True, exist_ok=True)
        for role, templates in roles:
            docs = [template.render(values).strip("\n") + "\n" for template in templates]
            (folder / f"{role}.yaml").write_bytes("---\n".join(docs).encode("utf-8"))
            files += 1
    t2 = time.perf_counter()
    return {
        "prepare": t1 - t0,
        "total": t2 - t1,
        "assignments": len(variables),
        "written": files,
        "maxrss_mib": _maxrss_mib(),
    }


def phase_generate(workloads: int, cluster_types: int, root: str) -> Result:
    t0 = time.perf_counter()
    main, env = fleet.write_fleet(Path(root), fleet.FleetSize(workloads=workloads, cluster_types=cluster_types))
    files = sum(1 for p in Path(root).rglob("*.yaml"))
    size = sum(p.stat().st_size for p in Path(root).rglob("*.yaml"))
    return {"total": time.perf_counter() - t0, "main": str(main), "env": str(env), "files": files, "bytes": size}


def phase_hash(root: str, without_state: bool = False) -> Result:
    """sha256 of every file under ``root`` (relative path -> digest); ``without_state``: leaving out fleetflow's
    state files (the index, its parts and the shards: ``incremental.is_state_file``), which a plain Jinja2 loop
    does not write."""
    from fleetflow.render.incremental import is_state_file

    base = Path(root)
    digests: dict[str, str] = {}
    for dirpath, _dirnames, filenames in os.walk(base):
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(base).as_posix()
            if not (without_state and is_state_file(rel)):
                digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"digests": digests, "maxrss_mib": _maxrss_mib()}


def in_child(func: Callable[..., Result], *args: Any) -> Result:
    """Run ``func(*args)`` in a fresh spawned process (so ru_maxrss is that phase's peak)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1, maxtasksperchild=1) as pool:
        return pool.apply(func, args)


# --- driver ----------------------------------------------------------------------------------------------


def _compare(a: dict[str, str], b: dict[str, str]) -> tuple[bool, str]:
    if a == b:
        return True, f"OK ({len(a)} files identical)"
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    sample = (only_a + only_b + differ)[:5]
    return False, (
        f"MISMATCH (only left {len(only_a)}, only right {len(only_b)}, differ {len(differ)}; e.g. {sample})"
    )


def _fmt_phase(name: str, r: Result) -> str:
    return (
        f"{name}: {r['total']:.2f}s (load {r['load']:.2f}s, render {r['render']:.2f}s, write {r['write']:.2f}s);"
        f" {r['assignments']} assignments, rendered {r['rendered']}, written {r['written']} files,"
        f" deleted {r['deleted']}; peak RSS {r['maxrss_mib']:.0f} MiB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=1000)
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one, removed after)")
    parser.add_argument(
        "--profile", action="store_true", help="only run phases (a) and (c) under cProfile; print their top functions"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    if args.cluster_types % 100:
        print("note: --cluster-types is not a multiple of 100; phase (b) changes 1/100 of the cluster types "
              "rounded", file=sys.stderr)

    work = args.dir.resolve() if args.dir else Path(tempfile.mkdtemp(prefix="fleetflow-bench-"))
    if work.exists() and any(work.iterdir()):
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, work)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> int:
    w, t = args.workloads, args.cluster_types
    print(f"fleet: {w} workloads x {t} cluster types = {w * t} assignments, {3 * w * t} files; work dir {work}")
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
    gen = in_child(phase_generate, w, t, str(work / "plane"))
    main_dir, env_dir = gen["main"], gen["env"]
    print(f"generate: {gen['total']:.2f}s, {gen['files']} files, {gen['bytes'] / 1e6:.1f} MB")
    full_out, fresh_out, base_out = work / "out-full", work / "out-fresh", work / "out-baseline"

    if args.profile:
        a = in_child(phase_render, main_dir, env_dir, str(full_out), True)
        print(_fmt_phase("(a) full render [profiled, times inflated]", a))
        print(a["profile"])
        c = in_child(phase_render, main_dir, env_dir, str(full_out), True)
        print(_fmt_phase("(c) no-change render, the floor of (b) [profiled, times inflated]", c))
        print(c["profile"])
        return 0

    ok = True
    a = in_child(phase_render, main_dir, env_dir, str(full_out), False)
    print(_fmt_phase("(a) full render", a))

    d = in_child(phase_baseline, w, t, str(base_out))
    print(f"(d) baseline plain Jinja2: {d['total']:.2f}s for {d['written']} files"
          f" (variables precomputed in {d['prepare']:.2f}s, not counted); peak RSS {d['maxrss_mib']:.0f} MiB")
    full_hashes = in_child(phase_hash, str(full_out), True)["digests"]
    base_hashes = in_child(phase_hash, str(base_out))["digests"]
    same, text = _compare(full_hashes, base_hashes)
    print(f"    baseline output vs full render (the state files left out): {text}")
    ok &= same
    shutil.rmtree(base_out, ignore_errors=True)

    change = fleet.change_one_value(Path(env_dir))
    print(f"change: {change}")
    b = in_child(phase_render, main_dir, env_dir, str(full_out), False)
    print(_fmt_phase("(b) incremental render", b))
    print(f"    changed assignments {b['changed']}, config keys {b['config_keys']}")
    expected = w * sum(1 for i in range(t) if i % 100 == 0)
    if b["rendered"] != expected:
        print(f"    UNEXPECTED: re-rendered {b['rendered']} assignments, expected {expected}")
        ok = False

    c = in_child(phase_render, main_dir, env_dir, str(full_out), False)
    print(_fmt_phase("(c) no-change render", c))
    nothing = c["written"] == 0 and c["deleted"] == 0 and not c["state_written"] and c["state_mtime_same"]
    print(f"    wrote nothing, state.json untouched: {'OK' if nothing else 'FAIL'}")
    ok &= nothing

    v = in_child(phase_render, main_dir, env_dir, str(fresh_out), False)
    print(_fmt_phase("(v) full render of the changed plane (verification)", v))
    inc_hashes = in_child(phase_hash, str(full_out))["digests"]
    fresh_hashes = in_child(phase_hash, str(fresh_out))["digests"]
    same, text = _compare(inc_hashes, fresh_hashes)
    print(f"    incremental tree vs fresh full render: {text}")
    ok &= same

    inc_ratio = b["total"] / a["total"]
    base_ratio = a["total"] / d["total"]
    rows = [
        ("phase", "time s", "peak MiB", "rendered", "written", "check"),
        ("(a) full", f"{a['total']:.2f}", f"{a['maxrss_mib']:.0f}", str(a["rendered"]), str(a["written"]),
         _verdict(a["total"] < FULL_TARGET_S and a["maxrss_mib"] < MEMORY_TARGET_MIB,
                  f"<{FULL_TARGET_S:.0f}s, <{MEMORY_TARGET_MIB:.0f} MiB")),
        ("(b) incremental", f"{b['total']:.2f}", f"{b['maxrss_mib']:.0f}", str(b["rendered"]), str(b["written"]),
         _verdict(inc_ratio < INCREMENTAL_TARGET, f"{100 * inc_ratio:.1f}% of (a), target <5%")),
        ("(c) no change", f"{c['total']:.2f}", f"{c['maxrss_mib']:.0f}", str(c["rendered"]), str(c["written"]),
         _verdict(nothing, "writes nothing")),
        ("(v) fresh full", f"{v['total']:.2f}", f"{v['maxrss_mib']:.0f}", str(v["rendered"]), str(v["written"]),
         _verdict(same, "== incremental tree")),
        ("(d) plain Jinja2", f"{d['total']:.2f}", f"{d['maxrss_mib']:.0f}", str(d["assignments"]),
         str(d["written"]), f"(a)/(d) = {base_ratio:.1f}x"),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    ok &= a["total"] < FULL_TARGET_S and a["maxrss_mib"] < MEMORY_TARGET_MIB and inc_ratio < INCREMENTAL_TARGET
    print(f"\nresult: {'all targets met' if ok else 'SOME TARGETS MISSED'}")
    return 0 if ok else 1


def _verdict(passed: bool, what: str) -> str:
    return f"{'OK' if passed else 'MISS'} {what}"


if __name__ == "__main__":
    sys.exit(main())
