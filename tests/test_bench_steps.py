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
