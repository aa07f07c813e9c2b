"""The change the schedule benchmarks time (``benchmarks/bench_promotion.py``'s ``change_line_tuning``, used by
``--growth``, ``schedule_steps.py`` and ``schedule_instructions.py``) must give content the GitOps repository never
held, as a real change does. A value that went back and forth made every object the timed schedules wrote one the
repository and the runner's mirror already held: git skips those, so ``fast-import`` wrote nothing and the push
sent objects rebuilt from deep deltas, and the figures were of a case users rarely meet."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_change_the_benchmarks_time_is_a_value_never_held(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bench_promotion = importlib.import_module("bench_promotion")
        fleet = importlib.import_module("fleet")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    setup = bench_promotion.build_repos(tmp_path, 2, 10, lines=1)

    def held() -> list[str]:  # the line-tuning file as each commit of the environment branch holds it
        log = subprocess.run(["git", "--git-dir", setup["cp"], "log", "--format=%H", bench_promotion.ENV],
                             check=True, capture_output=True, text=True).stdout.split()
        return [subprocess.run(["git", "--git-dir", setup["cp"], "show", f"{sha}:{fleet.LINE_TUNING_FILE}"],
                               check=True, capture_output=True, text=True).stdout for sha in log]

    before = held()
    for _ in range(3):
        bench_promotion.change_line_tuning(setup)
    after = held()
    assert after[3:] == before and len(after) == len(before) + 3
    assert len(set(after)) == len(after)  # no two commits hold the same file: every change is new content
    assert f"  {fleet.LINE_TUNING_KEY}: {fleet.LINE_TUNING_OLD + 3}\n" in after[0]
