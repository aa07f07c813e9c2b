"""How a fleetflow command runs Python's cyclic garbage collector (``fleetflow/collector.py``).

Python's behaviour relied on (https://docs.python.org/3/library/gc.html): ``gc.freeze()`` moves every object the
collector tracks into a permanent generation that later collections ignore, ``gc.get_freeze_count()`` counts
them, and ``gc.collect()`` returns the number of unreachable objects it found (objects kept alive only by
reference cycles). A frozen object is still freed by reference counting; only a cycle among frozen objects stays
until the process ends, so the loaders must make none.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from fleetflow import collector
from fleetflow.errors import ForgeError, Problems
from fleetflow.forge.localstore import record_json
from fleetflow.model.controlplane import load_control_plane
from fleetflow.render.incremental import Shard
from fleetflow.render.output import read_state

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "examples/control-plane/main"
DEV = ROOT / "examples/control-plane/envs/dev"
GOLDEN_DEV = ROOT / "tests/golden/dev"


def test_a_process_that_is_not_a_fleetflow_command_is_left_as_it_is() -> None:
    """The test run itself is such a process: ``kept`` neither freezes nor switches the collector off."""
    assert not collector.tuned()
    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    with collector.kept():
        assert gc.isenabled() == enabled
        load_control_plane(MAIN, DEV)
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled() == enabled


def test_loading_the_control_plane_and_the_state_makes_no_reference_cycles() -> None:
    """What ``kept`` freezes must be freed by reference counting alone when it is let go of: with the collector
    off, a collection after loading (and dropping) a control plane and a render state finds nothing unreachable.
    A loader that made cycles (a parent link, a closure over itself, a kept exception) fails here."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        plane = load_control_plane(MAIN, DEV)
        state = read_state(GOLDEN_DEV, Problems())
        assert plane.clusters and state is not None and len(state.assignments) > 0
        assignments = [state.assignments[aid] for aid in state.assignments]  # the shards too (read lazily)
        assert assignments
        del plane, state, assignments
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


_COMMAND = """
import atexit, gc, json, sys
import fleetflow.cli.common as common
from fleetflow import collector
from fleetflow.cli import run

real_load = common.load_control_plane
frozen_by_loads = []


def load_control_plane(*args, **kwargs):  # what each load left frozen, while the plane is alive
    before = gc.get_freeze_count()
    plane = real_load(*args, **kwargs)
    frozen_by_loads.append(gc.get_freeze_count() - before)
    return plane


common.load_control_plane = load_control_plane


@atexit.register
def report():
    print(json.dumps({"tuned": collector.tuned(), "threshold": gc.get_threshold(), "enabled": gc.isenabled(),
                      "frozen_by_loads": frozen_by_loads}), file=sys.stderr)


sys.argv = ["fleetflow", *sys.argv[1:]]
run()
"""


def _command(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _COMMAND, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stderr.strip().splitlines()[-1]))


def test_the_fleetflow_executable_tunes_its_process_and_freezes_what_it_loads() -> None:
    """``fleetflow`` (the console script, ``fleetflow.cli:run``) tunes the collector before the command runs, and
    the control plane a command loads is frozen as it is made (many objects per document); the collector is on
    again afterwards."""
    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "fleetflow"]
    assert script.value == "fleetflow.cli:run"
    found = _command("validate", "--main", str(MAIN), "--env", str(DEV), "--environment", "dev")
    assert found["tuned"] is True
    assert found["threshold"] == list(collector.THRESHOLDS)
    assert found["enabled"] is True
    plane = load_control_plane(MAIN, DEV)
    documents = sum(len(table) for table in vars(plane).values())
    (frozen,) = found["frozen_by_loads"]  # type: ignore[misc]
    assert frozen > 10 * documents


def test_a_tuned_process_runs_no_collection_while_loading_and_freezes_the_result() -> None:
    """In a tuned process (here a child, so the test run is not tuned): no collection happens inside ``kept``,
    however much is made there, and everything made is frozen after."""
    code = """
import gc, json
from fleetflow import collector
collector.tune()
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
before = gc.get_freeze_count()
with collector.kept():
    made = [[i] for i in range(200_000)]  # four times the first generation's threshold (lists are tracked)
    inside = len(runs)
after = gc.get_freeze_count()
print(json.dumps({"inside": inside, "frozen": after - before, "enabled": gc.isenabled()}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          check=True)
    found = json.loads(done.stdout)
    assert found["inside"] == 0
    assert found["frozen"] >= 200_000
    assert found["enabled"] is True


def _take_shard(data: bytes) -> None:
    shard = Shard("aks-westeurope", count=1, members="x")
    shard.take(data)
    assert shard.unreadable == "JSON nested too deeply to read"


def _read_record(data: bytes) -> None:
    with pytest.raises(ForgeError, match="JSON nested too deeply"):
        record_json(data, "statuses/x/flux.json")


def _stack_depth() -> int:
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


class _Garbage:
    """A reference cycle with a finalizer that needs 60 frames of stack (a temporary directory's clean-up needs
    more): only a collection frees it, and the finalizer then runs wherever that collection started."""

    def __init__(self) -> None:
        self.itself = self
        weakref.finalize(self, _sixty_frames)


def _sixty_frames(n: int = 60) -> int:
    return _sixty_frames(n - 1) if n else 0


@pytest.mark.parametrize("parse", [_read_record, _take_shard], ids=["forge-record", "state-shard"])
def test_no_collection_runs_down_in_a_parse_of_text_nested_thousands_deep(parse: Callable[[bytes], None]) -> None:
    """``[`` 100,000 times takes a parser to Python's recursion limit (``sys.getrecursionlimit``), where it gives
    up with a RecursionError its caller turns into a message. A collection that started down there ran the
    finalizers of whatever cyclic garbage was waiting (``weakref.finalize``,
    https://docs.python.org/3/library/weakref.html#weakref.finalize) with no stack left; they failed, and Python
    said so through ``sys.unraisablehook`` (https://docs.python.org/3/library/sys.html#sys.unraisablehook): CI
    failed once on it (2026-11-28). Here collections are made to start at every depth near the limit
    (``gc.set_threshold``: a collection starts once the new containers outnumber the threshold, and the parsers
    make one per level); before ``collector.paused``, several of them ran the finalizer down there."""
    failed: list[Any] = []
    hook, thresholds = sys.unraisablehook, gc.get_threshold()
    sys.unraisablehook = failed.append
    try:
        room = sys.getrecursionlimit() - _stack_depth()
        for threshold in range(max(room - 150, 1), room, 5):
            gc.collect()
            _Garbage()
            gc.set_threshold(threshold)
            try:
                parse(b"[" * 100_000)
            finally:
                gc.set_threshold(*thresholds)
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert [f"{f.exc_type.__name__} in {f.object!r}" for f in failed] == []
