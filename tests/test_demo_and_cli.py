"""The demo end to end, and the orchestration commands through the CLI (local forge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fleet import build_bare_repos
from tests.helpers import run_cli


def test_demo_walks_the_chain_and_stops_a_failed_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_cli("demo", "--dir", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    for text in ("PR #1 opened", "success: rolled out: 5/5 clusters", "rollout FAILED", "fleetflow status"):
        assert text in result.output
    # the repos stay behind: status reads them like any other control plane
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "demo" / "cache"))
    result = run_cli("status", "--forge", "local", "--control-plane", tmp_path / "demo" / "control-plane.git",
                     "--format", "json")
    assert result.exit_code == 0, result.output
    envs = {e["environment"]: e for e in json.loads(result.output)["result"]["environments"]}
    assert envs["dev"]["gate"]["state"] == "success"
    assert envs["qa"]["gate"]["state"] == "failure"
    assert "failing" in envs["qa"]["gate"]["description"]
    assert envs["prod"]["gate"]["state"] == "success"
    assert envs["prod"]["pinnedCommit"] != envs["qa"]["pinnedCommit"]  # prod kept the first commit
    assert envs["prod"]["lastSuccess"] == envs["prod"]["pinnedCommit"]
    assert envs["qa"]["lastSuccess"] == envs["prod"]["pinnedCommit"]  # qa's previous pin had succeeded


def test_demo_in_a_relative_dir_as_its_help_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fleetflow demo --dir fleetflow-demo``, the example of ``demo --help``: until 2026-11-29 a relative folder
    stopped the demo at once with "git config failed: fatal: not in a git directory" (the bare repositories were
    made by a git command run inside the folder, at the relative path again)."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("demo", "--dir", "fleetflow-demo", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["result"]["dir"] == str(tmp_path / "fleetflow-demo")
    assert (tmp_path / "fleetflow-demo" / "control-plane.git" / "HEAD").is_file()


def test_demo_refuses_a_non_empty_dir(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("x")
    result = run_cli("demo", "--dir", tmp_path)
    assert result.exit_code == 2 and "not empty" in result.output


@pytest.fixture
def local_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    monkeypatch.setenv("FLEETFLOW_FORGE", "local")
    monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", str(cp))
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_cli_promote_schedule_check_status(local_env: Path) -> None:
    from tests.fleet import git

    sha = git(local_env, "--git-dir", str(local_env / "control-plane.git"), "rev-parse", "main")
    result = run_cli("promote", "--commit", sha[:10], "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)["result"]
    assert data["promotions"][0]["environment"] == "dev"
    assert data["promotions"][0]["schedule"]["operation"] == "created"
    result = run_cli("schedule", "--environment", "dev")
    assert result.exit_code == 0 and "dev: unchanged" in result.output
    result = run_cli("check-rollout", "--environment", "dev", "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output)["result"]["gateState"] == "waiting-for-merge"
    result = run_cli("status", "--format", "markdown")
    assert result.exit_code == 0 and "```mermaid" in result.output and "| `dev` |" in result.output
    result = run_cli("status")
    assert "dev" in result.output and sha[:12] in result.output


def test_cli_promote_refused_exits_1(local_env: Path) -> None:
    from tests.fleet import git

    sha = git(local_env, "--git-dir", str(local_env / "control-plane.git"), "rev-parse", "main")
    result = run_cli("promote", "--environment", "qa", "--commit", sha)
    assert result.exit_code == 1
    assert "refusing to promote" in result.output and "dev (no record)" in result.output


def test_cli_unknown_commit_and_environment(local_env: Path) -> None:
    result = run_cli("promote", "--commit", "deadbeef")
    assert result.exit_code == 1 and "is not on main" in result.output
    result = run_cli("schedule", "--environment", "nope")
    assert result.exit_code == 2 and "unknown environment 'nope'" in result.output


def test_cli_missing_control_plane_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("status")
    assert result.exit_code == 2 and "no control-plane repo" in result.output


def test_cli_unreachable_repo_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEETFLOW_FORGE", "local")
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    result = run_cli("status", "--control-plane", str(tmp_path / "missing.git"))
    assert result.exit_code == 3, result.output
    assert "missing.git" in result.output
