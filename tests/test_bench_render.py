"""``benchmarks/bench_render.py`` checks what it times: its plain-Jinja2 baseline writes the same manifests as a full
render, a no-change render writes nothing, and an incremental render leaves the tree a fresh render gives. Run here
on a tiny fleet, so that a check that stops holding (as the baseline's did when the state got shards, and it
compared them too) fails a test instead of a benchmark run nobody reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_render_benchmark_checks_hold_on_a_tiny_fleet(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_render.py", "--workloads", "5", "--cluster-types", "10",
         "--dir", str(tmp_path / "work")],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    out = done.stdout
    assert "baseline output vs full render (the state files left out): OK (150 files identical)" in out, out
    assert "wrote nothing, state.json untouched: OK" in out, out
    assert "incremental tree vs fresh full render: OK" in out, out
