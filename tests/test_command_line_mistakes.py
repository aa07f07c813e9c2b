"""The command line as people type it on a laptop: the two checkouts mixed up, a path with ``~`` the shell left
alone. Each mistake gets one usage error (exit 2) that names it and says how to fix the command line, and nothing
is written; or, for ``~``, what the user meant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleetflow.cli import main
from fleetflow.errors import ExitCode
from tests.helpers import make_plane, tree_bytes

COMMANDS = ["validate", "render", "plan", "explain"]


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def command_line(command: str, main_dir: Path | str, env_dir: Path | str, out: Path) -> list[str | Path]:
    line: list[str | Path] = [command, "--main", main_dir, "--env", env_dir]
    if command != "validate":
        line += ["--environment", "dev"]
    if command in ("render", "plan"):
        line += ["--output", out]
    if command == "explain":
        line += ["--assignment", "cloud-eu/app-dev"]
    return line


def one_problem(line: list[str | Path]) -> dict[str, Any]:
    """The one problem a command line gives, exit 2, in both formats: the JSON problem (the text says the same)."""
    code, stdout, stderr = invoke(*line, "--format", "json")
    assert code == ExitCode.USAGE, (stdout, stderr)
    data = json.loads(stdout)
    [problem] = data["problems"]
    code, stdout, stderr = invoke(*line)
    assert code == ExitCode.USAGE and stderr.startswith(f"usage error: {problem['message']} (hint: {problem['hint']})")
    assert stderr.count("usage error:") == 1, stderr
    return dict(problem)


def test_a_tilde_the_shell_left_alone_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--output=~/gitops/dev``: a shell expands ``~`` only at the start of a word (glibc manual, "Details of Tilde
    Expansion": https://sourceware.org/glibc/manual/2.42/html_node/Tilde-Expansion.html), so fleetflow got the
    ``~`` as typed. Until 2026-11-29 ``render`` made a folder named ``~`` in the current folder and wrote the
    environment there (exit 0), and ``--main=~/cp`` said "does not exist" of a folder that does."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    make_plane(home)
    code, stdout, stderr = invoke("render", "--main=~/main", "--env=~/env", "--environment=dev",
                                  "--output=~/gitops/dev")
    assert code == 0, (stdout, stderr)
    assert f"in {home / 'gitops' / 'dev'}" in stdout
    assert "state.json" in " ".join(tree_bytes(home / "gitops" / "dev"))
    assert list(work.iterdir()) == []
    code, _, stderr = invoke("validate", "--main", "~/nowhere", "--env", "~/env")
    assert code == ExitCode.USAGE and stderr.startswith("usage error: --main ~/nowhere does not exist")
