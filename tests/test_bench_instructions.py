"""``benchmarks/schedule_instructions.py`` sorts the processes of a schedule, as valgrind logged them, into
fleetflow's side and the forge's side. Checked here on a real push and a real fetch between two local repositories,
run under ``valgrind --tool=callgrind --trace-children=yes``: git starts the receiving ``git-receive-pack`` and
``git-upload-pack`` through ``sh -c`` for a local path (git's ``connect.c``), and ``receive-pack`` runs its
connectivity check as ``git rev-list --objects --stdin --not ... --all`` (git's ``connected.c``); the fetch's own
connectivity check is the fetching side's. Under CI (``.ci/run`` installs valgrind) a missing valgrind fails."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def benchmark() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("schedule_instructions")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@fleetflow.invalid", "-c",
                    "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True)


def test_a_push_and_a_fetch_are_sorted_into_the_two_sides(tmp_path: Path) -> None:
    if shutil.which("valgrind") is None:
        if os.environ.get("CI") or os.environ.get("FLEETFLOW_CI"):
            pytest.fail("valgrind is missing: .ci/run installs it (apt-get install -y valgrind)")
        pytest.skip("NOT TESTED (not under CI): valgrind is missing (apt-get install -y valgrind)")
    bench = benchmark()
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "commit", "-q", "--allow-empty", "-m", "one")
    git(work, "push", "-q", "../remote.git", "HEAD:refs/heads/main")
    (work / "file").write_text("x\n", encoding="utf-8")
    git(work, "add", "file")
    git(work, "commit", "-q", "-m", "two")
    (root,) = bench.valgrind(tmp_path / "logs", "sh", "-c", "git -C work push -q ../remote.git HEAD:refs/heads/main "
                             "&& git -C work fetch -q ../remote.git main", cwd=tmp_path)
    names = {p.git_command for p in _all(root)}
    assert {"push", "pack-objects", "receive-pack", "rev-list", "fetch", "upload-pack"} <= names, names
    found = bench.split(root, 0)
    # every process is counted once, on one side
    assert root.instructions + found.git + found.forge == root.total()
    receive = next(p for p in _all(root) if p.git_command == "receive-pack" and not p.command.startswith("/bin/sh"))
    checks = [p for p in receive.children if p.git_command == "rev-list"]
    assert len(checks) == 1 and "--not" in checks[0].command and "--all" in checks[0].command
    assert found.checking == checks[0].instructions > 0
    # the forge's side: the two sh -c wrappers git starts, with everything under them
    wrappers = [p for p in _all(root) if p.git_command in bench.FORGE_COMMANDS and p.command.startswith("/bin/sh")]
    assert len(wrappers) == 2 and found.forge == sum(p.total() for p in wrappers)
    # the sending side's packing and the fetch's own connectivity check are fleetflow's
    assert found.commands["pack-objects"] > 0 and found.commands["rev-list"] > 0
    assert found.commands["push"] > 0 and found.commands["fetch"] > 0
    assert "receive-pack" not in found.commands and "upload-pack" not in found.commands


def test_the_git_command_of_a_logged_command_line() -> None:
    process = benchmark().Process
    cases = {
        "/usr/bin/git -C work push -q ../remote.git HEAD:refs/heads/main": "push",
        "/bin/sh -c git-receive-pack\\ '../remote.git' git-receive-pack\\ '../remote.git'": "receive-pack",
        "/usr/lib/git-core/git-upload-pack ../remote.git": "upload-pack",
        "/usr/lib/git-core/git --git-dir=/tmp/r.git for-each-ref --format=%(objectname)": "for-each-ref",
        "git -c core.x=y --git-dir /tmp/r.git cat-file --batch": "cat-file",
        "/work/.venv/bin/python benchmarks/schedule_instructions.py --child /tmp/x": "python",
    }
    assert {line: process(1, 0, line, 0).git_command for line in cases} == cases


def _all(root: object) -> list[object]:
    found = [root]
    for child in root.children:  # type: ignore[attr-defined]
        found.extend(_all(child))
    return found
