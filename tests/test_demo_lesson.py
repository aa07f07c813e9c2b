"""The demo as a first lesson: no line said twice, every sha labelled with its repo, the simulated clock said
once, and a closing "look around" block whose commands work when copy-pasted."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import Result

from tests.helpers import run_cli


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    root = tmp_path_factory.mktemp("lesson") / "demo dir"  # a space: the printed commands must quote it
    result = run_cli("demo", "--dir", root)
    assert result.exit_code == 0, result.output
    return root, result


def narration(result: Result) -> list[str]:
    lines = result.stdout.split("\n== Look around")[0].splitlines()
    return [line for line in lines if line.strip()]


def test_no_line_is_said_twice(demo: tuple[Path, Result]) -> None:
    lines = narration(demo[1])
    assert "PR already merged" not in demo[1].stdout
    repeated = sorted({line for line in lines if lines.count(line) > 1})
    assert repeated == []


def test_every_sha_is_labelled_and_the_clock_is_said_once(demo: tuple[Path, Result]) -> None:
    text = demo[1].stdout
    for match in re.finditer(r"(\S*?)\b([0-9a-f]{12})\b", text):
        assert match.group(1).endswith("@"), f"unlabelled sha {match.group(2)} in: {match.group(0)}"
    assert "gitops@" in text and "main@" in text
    assert text.count("simulated") == 1


def test_look_around_commands_work_when_copy_pasted(demo: tuple[Path, Result]) -> None:
    root, result = demo
    block = result.stdout.split("\n== Look around", 1)[1]
    assert f"{root}/" in block and "control-plane.git" in block and "platform-gitops.git" in block
    commands = [line.strip() for line in block.splitlines() if line.strip().startswith(("fleetflow ", "git "))]
    assert any(c.startswith("fleetflow status") for c in commands)
    for command in commands:
        argv = shlex.split(command)
        if argv[0] == "fleetflow":
            ran = run_cli(*argv[1:])
            assert ran.exit_code == 0, (command, ran.output)
            if argv[1] == "status":
                assert "qa" in ran.stdout and "failure" in ran.stdout and "main@" in ran.stdout
        else:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            assert done.returncode == 0, (command, done.stderr)
