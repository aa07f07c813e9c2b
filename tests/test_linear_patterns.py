"""Patterns a control plane writes (``.fleetflowignore`` lines, ConfigSchema ``pattern`` and ``patternProperties``)
run in time linear in the text they are matched against, so no commit can hold a check for hours.

Until 2026-11-28 they ran on Python's backtracking ``re``: ``*a*a*a*a*a*a*a*a*a*a*a*b`` took 80 s on a
42-character file name and ``^(a+)+$`` 0.8 s on 24 ``a`` and a ``b``, each further character doubling it. Each run
here is a fleetflow process with a time limit, since on that code it would not end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import make_plane

ROOT = Path(__file__).resolve().parents[1]


def validate(tmp_path: Path, main: dict[str, str], env: dict[str, str]) -> tuple[int, str]:
    """``fleetflow validate`` of a small control plane with these files, in a process given 60 s (each takes a few):
    its exit code and what it printed (problems go to stderr)."""
    main_dir, env_dir = make_plane(tmp_path, main, env)
    code = "import sys; from fleetflow.cli import run; sys.argv[0] = 'fleetflow'; run()"
    done = subprocess.run(
        [sys.executable, "-c", code, "validate", "--main", str(main_dir), "--env", str(env_dir), "--environment",
         "dev"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_an_ignore_pattern_cannot_hang_the_read(tmp_path: Path) -> None:
    """The file is read (its broken YAML reported): the pattern, which it does not match, took no time."""
    name = "a" * 60 + ".yaml"
    code, output = validate(tmp_path, {}, {".fleetflowignore": "*a*a*a*a*a*a*a*a*a*a*a*b\n", name: "x: [\n"})
    assert code == 1, output[-2000:]
    assert f"{name}:" in output and "invalid YAML" in output, output


def test_a_long_ignore_file_is_read(tmp_path: Path) -> None:
    """Each line is its own RE2 regular expression: pathspec's own RE2 backend puts them all in one RE2 set, which
    does not compile past about 1,900 plain lines (an uncaught re2.error where google-re2 is installed)."""
    lines = "".join(f"old-{i}.yaml\n" for i in range(3000))
    code, output = validate(tmp_path, {}, {".fleetflowignore": lines, "old-2999.yaml": "x: [\n"})
    assert code == 0, output[-2000:]
