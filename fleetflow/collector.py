"""How a fleetflow command runs Python's cyclic garbage collector.

A command is one short process. What it loads first (the control plane, the previous render state) lives until
it ends, and at fleet scale it is hundreds of thousands of small containers. With the collector's defaults, every
collection looks at all of them again: the cost of a run then grows with the fleet even when the change does not
(a schedule after a 1,000-assignment change ran 182 collections, 0.075 s, at 100,000 assignments and 65, 0.008 s,
at 10,000: ``python benchmarks/schedule_steps.py --collector python``; none when tuned).

So a command's process is :func:`tune`\\ d once, before it does anything, and what it keeps is made inside
:func:`kept`: no collection runs while it is made, and it is then frozen, that is moved where no later
collection looks (``gc.freeze``, https://docs.python.org/3/library/gc.html#gc.freeze). Frozen objects are still
freed when nothing refers to them; only a reference cycle among them would stay until the process ends, and
loading makes none (``tests/test_collector.py`` checks that).

Only a tuned process is changed: in a test run or another program that imports fleetflow, :func:`kept` does
nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (50_000, 20, 20)
"""Collect after 50,000 new containers (Python's default: 700): rendering makes hundreds of thousands of small
containers, and each collection costs at least the young ones it looks at."""

_tuned = False


def tune() -> None:
    """Set this process up as one fleetflow command (the ``fleetflow`` executable calls it first): what exists
    now (the imported modules) is frozen, collections are rarer, and :func:`kept` takes effect."""
    global _tuned
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    _tuned = True


def tuned() -> bool:
    return _tuned


@contextmanager
def kept() -> Iterator[None]:
    """Around the making of what the run keeps to its end: in a tuned process, no collection while it is made,
    then all of it frozen. Elsewhere nothing changes."""
    if not _tuned:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """Around a parse of JSON anyone may have written, in every process: no collection while it runs.

    The parsers nest a call per level, and text thousands of levels deep takes them to Python's recursion limit
    before they give up (a RecursionError the caller turns into a message). A collection that starts down there
    runs other objects' finalizers (``weakref.finalize``, ``__del__``: a temporary directory's clean-up, a git
    process's) with no room left, and they fail in turn: "Exception ignored in ...", a clean-up skipped. Seen once
    in 2,065 tests (CI, 2026-11-28: ``test_a_status_record_written_by_hand_is_named_not_a_traceback[too-deep]``);
    ``tests/test_collector.py`` makes it happen every time without this."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
