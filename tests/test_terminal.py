"""The terminal: progress on stderr (a rich bar on a terminal, plain lines with CI=true, nothing in a pipe),
colour only on a terminal and never with NO_COLOR (https://no-color.org: "when present and not an empty string"),
--quiet and --verbose, and a status that reads well before the first promotion.

Terminals are real: the CLI runs in a subprocess whose stderr is a pseudo-terminal (``os.openpty``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fleetflow.demo.story import EXAMPLES, build_repos
from tests.helpers import ENV_FILES, make_plane, run_cli

COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # SGR: colours and styles
TYPO = ENV_FILES["policies.yaml"].replace("purpose: test", "purpsoe: test").replace("everything", "typo")


def on_a_terminal(args: list[str | Path], env: dict[str, str]) -> tuple[int, str, str]:
    """Run fleetflow with stderr on a pseudo-terminal; returns (exit code, stdout, what the terminal got)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from fleetflow.cli import main; main()", *map(str, args)],
        stdout=subprocess.PIPE, stderr=slave, stdin=slave, env={**os.environ, **env, "COLUMNS": "100"},
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait()
    os.close(master)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_colour_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, env={"typo-policy.yaml": TYPO})
    args: list[str | Path] = ["validate", "--main", main, "--env", env, "--environment", "dev"]
    code, _, tty = on_a_terminal(args, {})
    assert code == 0 and "warning:" in tty and COLOUR.search(tty)
    code, _, tty = on_a_terminal(args, {"NO_COLOR": "1"})
    assert code == 0 and "warning:" in tty and not COLOUR.search(tty)  # cursor movement is not colour
    # not a terminal: no colour either
    result = run_cli(*args)
    assert "warning:" in result.stderr and "\x1b[" not in result.stderr


def test_progress_bar_on_a_terminal_plain_lines_in_ci_nothing_in_a_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, env = make_plane(tmp_path)
    args: list[str | Path] = ["render", "--main", main, "--env", env, "--environment", "dev"]
    code, out, tty = on_a_terminal([*args, "--output", tmp_path / "tty"], {"NO_COLOR": "1"})
    assert code == 0 and "rendering dev" in tty and "Rendered" in out
    assert "rendering dev" not in out  # progress never reaches stdout
    pipe = run_cli(*args, "--output", tmp_path / "pipe")
    assert pipe.exit_code == 0 and "rendering dev" not in pipe.stderr
    monkeypatch.setenv("CI", "true")
    ci = run_cli(*args, "--output", tmp_path / "ci")
    assert ci.exit_code == 0
    assert "rendering dev (2)…" in ci.stderr and "rendering dev: done in" in ci.stderr
    assert "\x1b[" not in ci.stderr
    ci_json = run_cli(*args, "--output", tmp_path / "ci-json", "--format", "json")
    assert json.loads(ci_json.stdout)["ok"] is True and "rendering" not in ci_json.stderr


def test_quiet_and_verbose(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, env={"typo-policy.yaml": TYPO})
    args: list[str | Path] = ["render", "--main", main, "--env", env, "--environment", "dev"]
    quiet = run_cli("--quiet", *args, "--output", tmp_path / "q")
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    verbose = run_cli("--verbose", *args, "--output", tmp_path / "v")
    assert verbose.exit_code == 0 and "warning:" in verbose.stderr
    assert "wrote cloud-eu/app-dev/reconciler.yaml" in verbose.stderr


def test_status_before_the_first_promotion(tmp_path: Path) -> None:
    cp, _ = build_repos(tmp_path, EXAMPLES)
    text = run_cli("status", "--forge", "local", "--control-plane", cp)
    assert text.exit_code == 0, text.output
    assert "Cmd(" not in text.output and "exit code" not in text.output
    header, *rows = text.stdout.splitlines()
    assert "last success" in header
    assert [row.split()[0] for row in rows] == ["dev", "qa", "prod"]
    assert all("not promoted yet" in row for row in rows)
    data = json.loads(run_cli("status", "--forge", "local", "--control-plane", cp, "--format", "json").stdout)
    dev = data["result"]["environments"][0]
    assert dev["pinnedCommit"] is None and dev["gate"]["description"] == "not promoted yet"
    assert {"gitopsRepo", "gitopsBranch"} <= set(dev) and "gitops" not in dev
