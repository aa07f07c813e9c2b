"""``benchmarks/schedule_steps.py`` times a schedule's steps by wrapping fleetflow's functions by module and name;
a rename in fleetflow (``schedule.pinned`` became ``pinned_to_render``) broke it with an AttributeError that only a
benchmark run, which CI does not make, would have shown. Every step it names must exist, and be a function."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_step_the_schedule_benchmark_times_exists() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        steps = importlib.import_module("schedule_steps").STEPS
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    missing = []
    for module_name, name in steps:
        found: object = importlib.import_module(module_name)
        for part in name.split("."):
            found = getattr(found, part, None)
        if not callable(found):
            missing.append(f"{module_name}.{name}")
    assert steps and missing == []


def _busy(n: int) -> int:
    return sum(i * i for i in range(n))


def _outer(n: int) -> int:
    return _busy(n) + 1


def _only_in_the_large_run() -> int:
    return _busy(10)


def test_the_profile_growth_lists_what_grows_from_the_small_run_to_the_large_one() -> None:
    """``--profile`` diffs two real cProfile runs function by function: the work that grows with the size comes
    first, by its own time and with its callees, and a function only the large run called counts from zero."""
    import cProfile
    import pstats

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        profile_growth = importlib.import_module("schedule_steps").profile_growth
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    def profiled(n: int, extra: bool) -> pstats.Stats:
        profiler = cProfile.Profile()
        profiler.enable()
        _outer(n)
        if extra:
            _only_in_the_large_run()
        profiler.disable()
        return pstats.Stats(profiler)

    growth = profile_growth(profiled(1_000, False), profiled(100_000, True), 3)
    assert set(growth) == {"own", "with callees"}
    assert all(len(rows) == 3 for rows in growth.values())
    own, with_callees = growth["own"], growth["with callees"]
    assert own[0][3].endswith(":_busy.<locals>.<genexpr>") or own[0][3].endswith(":<genexpr>")
    assert own[0][0] > 0 and own[0][2] > own[0][1]
    assert [row[0] for row in own] == sorted((row[0] for row in own), reverse=True)
    # _outer, _busy, the generator and sum each hold the whole growth, less cProfile's own cost, which load moves:
    # any of them may come first (CI once had "<built-in method builtins.sum>" on a loaded machine)
    assert with_callees[0][3].endswith((":_outer", ":_busy", "builtins.sum>", "<genexpr>"))
    assert any(row[3].endswith(":_outer") for row in with_callees)
    everything = profile_growth(profiled(1_000, False), profiled(2_000, True), 1_000)["with callees"]
    only = [row for row in everything if row[3].endswith(":_only_in_the_large_run")]
    assert len(only) == 1 and only[0][1] == 0 and only[0][2] > 0 and only[0][0] == only[0][2]
