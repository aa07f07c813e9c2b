"""``benchmarks/bench_state.py`` prints the state's sizes beside the layouts before it, rebuilt from the same state.
Its "before" figures are only as good as the rebuild: the whole index it makes for the example's dev environment
must be, byte for byte, the version-2 index fleetflow wrote for it (``tests/legacy/dev-state-v2.json``, kept from
commit 97e195f; ``tests/legacy/README.md``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_whole_index_it_rebuilds_is_what_version_2_wrote() -> None:
    code = """
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
import bench_state
from fleetflow.render.incremental import STATE_PATH, RenderState
golden = Path("tests/golden/dev")
files = {p.relative_to(golden).as_posix(): p.read_bytes() for p in golden.rglob("*") if p.is_file()}
state = RenderState.from_bytes(files[STATE_PATH], lambda paths: {p: files.get(p) for p in paths})
expected = Path("tests/legacy/dev-state-v2.json").read_bytes()
rebuilt = bench_state.whole_index(state)
print(rebuilt == expected, len(rebuilt), len(expected))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    same, rebuilt, expected = done.stdout.split()
    assert same == "True", f"rebuilt {rebuilt} bytes, version 2 wrote {expected}"
