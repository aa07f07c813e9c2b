"""Where one schedule's time goes, step by step, at two or more fleet sizes side by side: what grows.

Run from the repository root::

    python benchmarks/schedule_steps.py                      # 100 workloads x 100 and x 1,000 cluster types
    python benchmarks/schedule_steps.py --cluster-types 100,300,1000
    python benchmarks/schedule_steps.py --collector python   # with Python's garbage-collector defaults
    python benchmarks/schedule_steps.py --profile 40         # and the 40 functions whose time grows most

For each size: the fleet of ``bench_promotion --growth`` (the line tuning covers 10 cluster types, so the change
is 1,000 assignments at every size), its full promote and merge, one schedule after the change (merged: the
caches are warm), then ``--runs`` times the change (a new value each time) and a timed schedule (each merged
after). Each step below is timed by wrapping the function that does it (wall clock, ``time.perf_counter``; nested
steps are also counted in the step around them, so the column does not add up); the figures are the medians over
the runs.
``bench_promotion.py --growth --runs 3`` gives the min/median/max of the whole schedule. The time inside Python's
garbage collector, and the number of collections, come from ``gc.callbacks``.

With ``--profile N``, one more schedule per size runs under ``cProfile`` (after the timed ones, the change made
again), and the N functions whose time grows most from the smallest size to the largest are listed, by their own
time and by their time with what they call (milliseconds, one schedule each; cProfile's own cost inflates them, so
read them as where the growth is, not as what it costs). What the wrapped steps cannot split, this does: it is how
the composer's parsing of every ConfigMap was found (benchmarks/README.md, 2026-11-28).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_promotion  # a sibling module (benchmarks/ is not a package)

STEPS: list[tuple[str, str]] = [  # module, function (or Class.method): the steps of one schedule
    ("fleetflow.promotion.schedule", "pinned_to_render"),
    ("fleetflow.promotion.context", "Context.plane"),
    ("fleetflow.promotion.context", "load_control_plane"),
    ("fleetflow.model.controlplane", "read_tree"),
    ("fleetflow.model.controlplane", "_build"),
    ("fleetflow.promotion.gitops", "GitOpsTree.read_state"),
    ("fleetflow.promotion.schedule", "render_environment"),
    ("fleetflow.render.pipeline", "checked_inputs"),
    ("fleetflow.render.pipeline", "check_references"),
    ("fleetflow.render.pipeline", "selection_warnings"),
    ("fleetflow.render.pipeline", "schedule"),
    ("fleetflow.render.composition", "Composer.__init__"),
    ("fleetflow.render.pipeline", "affected_assignments"),
    ("fleetflow.render.pipeline", "_untouched_shards"),
    ("fleetflow.render.pipeline", "_render_reporters"),
    ("fleetflow.render.pipeline", "diff_states"),
    ("fleetflow.render.incremental", "RenderState.to_bytes"),
    ("fleetflow.promotion.schedule", "write_commit"),
    ("fleetflow.promotion.gitops", "survey"),
    ("fleetflow.forge.git", "BareRepo.listings"),
    ("fleetflow.forge.git", "BareRepo.fast_commit"),
    ("fleetflow.promotion.schedule", "kustomization_warnings"),
    ("fleetflow.promotion.schedule", "publish"),
    ("fleetflow.promotion.schedule", "_first"),
    ("fleetflow.forge.git", "BareRepo.push"),
    ("fleetflow.forge.git", "GitRepos.fetch"),
]


RECEIVING = "the push's server side (receive-pack)"  # once the pack was sent, from git's trace2 (bench_promotion)
CHECKING = "  its connectivity check (rev-list)"  # the rev-list receive-pack runs, from the same trace
COLLECTING = "garbage collection (gc.callbacks)"  # seconds inside Python's collector during the schedule
COLLECTIONS = "  collections (count)"


def timed(spent: dict[str, float], label: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - t0

    return wrapper


def instrument(spent: dict[str, float]) -> None:
    """Wrap every step of :data:`STEPS` where it is looked up (the module that calls it imported it by name)."""
    import importlib

    for module_name, name in STEPS:
        module = importlib.import_module(module_name)
        label = f"{module_name.rsplit('.', 1)[1]}.{name}"
        if "." in name:
            cls_name, method = name.split(".")
            cls = getattr(module, cls_name)
            setattr(cls, method, timed(spent, label, getattr(cls, method)))
        else:
            setattr(module, name, timed(spent, label, getattr(module, name)))


def one_size(work: Path, workloads: int, cluster_types: int, runs: int,
             profile_to: str | None = None) -> list[tuple[float, dict[str, float]]]:
    root = work / f"size-{cluster_types}"
    root.mkdir()
    setup = bench_promotion.warm_growth_fleet(root, workloads, cluster_types)
    spent: dict[str, float] = defaultdict(float)
    instrument(spent)
    started: list[float] = []

    def collecting(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        else:
            spent[COLLECTING] += time.perf_counter() - started.pop()
            spent[COLLECTIONS] += 1

    gc.callbacks.append(collecting)
    found = []
    for _ in range(runs):
        bench_promotion.change_line_tuning(setup)
        spent.clear()
        t0 = time.perf_counter()
        outcome = bench_promotion.phase_schedule(str(root))
        total = time.perf_counter() - t0
        assert outcome["operation"] == "created", outcome
        spent[RECEIVING] = outcome["receiving"]
        spent[CHECKING] = outcome["checking"]
        found.append((total, dict(spent)))
        bench_promotion.phase_merge(str(root), outcome["pr"])
    if profile_to is not None:
        bench_promotion.change_line_tuning(setup)
        profiler = cProfile.Profile()
        profiler.enable()
        outcome = bench_promotion.phase_schedule(str(root))
        profiler.disable()
        profiler.dump_stats(profile_to)
        bench_promotion.phase_merge(str(root), outcome["pr"])
    shutil.rmtree(root, ignore_errors=True)
    return found


Row = tuple[float, float, float, str]  # growth, small, large (ms), function


def profile_growth(small: pstats.Stats, large: pstats.Stats, top: int) -> dict[str, list[Row]]:
    """The ``top`` functions whose own time (``own``) and whose time with what they call (``with callees``) grow
    most from the ``small`` profile to the ``large`` one, in milliseconds, largest growth first."""
    found: dict[str, list[Row]] = {}
    a: dict[Any, Any] = small.stats  # type: ignore[attr-defined]  # (pstats keeps them there, undocumented)
    b: dict[Any, Any] = large.stats  # type: ignore[attr-defined]
    for label, column in (("own", 2), ("with callees", 3)):
        rows = []
        for func in a.keys() | b.keys():
            before = a[func][column] if func in a else 0.0
            after = b[func][column] if func in b else 0.0
            file, line, name = func
            where = f"{'/'.join(Path(file).parts[-2:])}:{line}:{name}" if line else name
            rows.append((1000 * (after - before), 1000 * before, 1000 * after, where))
        rows.sort(key=lambda row: (-row[0], row[3]))
        found[label] = rows[:top]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_promotion.add_growth_sizes(parser)
    parser.add_argument("--runs", type=int, default=3, help="schedules timed per size; medians are printed (3)")
    parser.add_argument("--collector", choices=["fleetflow", "python"], default="fleetflow",
                        help="the schedule's process set up as the fleetflow executable does (default), or with "
                             "Python's garbage-collector defaults (what schedule ran with before 2026-11-23)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile one schedule per size and list the N functions whose time grows most "
                             "from the smallest size to the largest (default: no profile)")
    args = parser.parse_args(argv)
    os.environ[bench_promotion.COLLECTOR] = args.collector
    if args.runs < 1:
        parser.error("--runs takes a count of 1 or more")
    if args.profile < 0:
        parser.error("--profile takes a count of 0 (none) or more")
    sizes = bench_promotion.growth_sizes(parser, args)
    work = Path(tempfile.mkdtemp(prefix="schedule-steps-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "xdg"))  # the parse cache, fresh
    try:
        import bench_render

        results = []
        profiles = {count: str(work / f"schedule-{count}.prof") for count in sizes} if args.profile else {}
        for count in sizes:
            # each size in its own process: the instrumentation and the modules' caches are its own
            results.append(bench_render.in_child(_one_size_result, str(work), args.workloads, count, args.runs,
                                                 profiles.get(count)))
        growth = (profile_growth(pstats.Stats(profiles[sizes[0]]), pstats.Stats(profiles[sizes[-1]]), args.profile)
                  if profiles else {})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    labels = [f"{m.rsplit('.', 1)[1]}.{n}" for m, n in STEPS] + [RECEIVING, CHECKING, COLLECTING, COLLECTIONS]
    header = "".join(f"{args.workloads * c:>12,}" for c in sizes)
    print(f"garbage collector: {args.collector}; control plane: {args.layout}")
    print(f"{f'seconds, medians of {args.runs} schedules after a 1,000-assignment change':<54}{header}")
    print(f"{'the whole schedule':<54}" + "".join(f"{r['total']:12.3f}" for r in results))
    for label in labels:
        digits = 0 if label == COLLECTIONS else 3
        print(f"  {label:<52}" + "".join(f"{r['spent'].get(label, 0.0):12.{digits}f}" for r in results))
    small, large = args.workloads * sizes[0], args.workloads * sizes[-1]
    for label, rows in growth.items():
        print(f"\ncProfile, one schedule each: the {len(rows)} functions whose time ({label}) grows most, ms")
        print(f"{'growth':>9}{f'{small:,}':>10}{f'{large:,}':>10}  function")
        for grew, before, after, where in rows:
            print(f"{grew:9.1f}{before:10.1f}{after:10.1f}  {where}")
    return 0


def _one_size_result(work: str, workloads: int, cluster_types: int, runs: int,
                     profile_to: str | None = None) -> dict[str, Any]:
    found = one_size(Path(work), workloads, cluster_types, runs, profile_to)
    labels = {label for _, spent in found for label in spent}
    return {"total": statistics.median(total for total, _ in found),
            "spent": {label: statistics.median(spent.get(label, 0.0) for _, spent in found) for label in labels}}


if __name__ == "__main__":
    raise SystemExit(main())
