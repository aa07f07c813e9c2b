"""The status-page composite action (``actions/_shared/run.py status-page``) on local repos: inputs checked with
the shared rules, the page written into the workspace folder, the ``path`` output for
actions/upload-pages-artifact (its ``path`` input: "Path of the directory containing the static assets", action.yml
of actions/upload-pages-artifact v5.0.0), and the delivery metrics in the job summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fleetflow.forge.git import GitRepos
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.context import Context
from fleetflow.promotion.promote import promote_many
from tests.fleet import build_bare_repos, git
from tests.test_workflow_files import action_env, fake_venv, read_outputs, run


def page(environ: dict[str, str], installer: Callable[[], Path]) -> int:
    """The status-page action's step: ``run.py status-page`` (action.yml), the one runner of every action."""
    return int(run.main(["status-page"], environ, installer=installer))


def test_the_action_writes_the_page_and_the_metrics_summary(tmp_path: Path) -> None:
    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    forge = LocalForge(cache_dir=tmp_path / "forge-cache")
    with Context(forge=forge, git=GitRepos(tmp_path / "git-cache"), control_plane=str(cp)) as ctx:
        promote_many(ctx, None, sha)
    workspace = tmp_path / "workspace"
    env = {**action_env(tmp_path, forge="local", **{"control-plane": str(cp)}, output="site/status", summary="true"),
           "GITHUB_WORKSPACE": str(workspace), "FLEETFLOW_CACHE_DIR": str(tmp_path / "cache")}
    assert page(env, installer=lambda: fake_venv(tmp_path)) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["path"] == str((workspace / "site" / "status").resolve())
    html = (workspace / "site" / "status" / "index.html").read_text(encoding="utf-8")
    assert 'data-environment="dev"' in html and "not promoted yet" in html
    assert "## Delivery metrics" in (tmp_path / "summary.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("output", ["../elsewhere", "/abs", "a/../../b", "with space"])
def test_an_output_outside_the_workspace_is_refused(tmp_path: Path, output: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    env = {**action_env(tmp_path, forge="local", **{"control-plane": str(tmp_path)}, output=output),
           "GITHUB_WORKSPACE": str(tmp_path / "workspace")}
    assert page(env, installer=lambda: pytest.fail("nothing is installed for bad inputs")) == 2
    assert "::error title=fleetflow status page::input output" in capsys.readouterr().out
    assert not (tmp_path / "workspace").exists() and not (tmp_path / "output").exists()
