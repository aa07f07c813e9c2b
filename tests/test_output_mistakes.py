"""The rendered tree as git, GitHub, Flux and Argo CD take it, and the mistakes people make with ``--output``: each
one gets one clear problem and nothing written, or the tree the reconcilers read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleetflow.cli import main
from fleetflow.errors import ExitCode
from tests.helpers import ENV_FILES, make_plane, tree_bytes

GITOPS_AT_A_PATH = ENV_FILES["gitops-repo.yaml"].rstrip() + "\n          path: clusters/dev\n"


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def one_problem(line: list[str | Path]) -> dict[str, Any]:
    """The one problem a command line gives, exit 2, in both formats."""
    code, stdout, stderr = invoke(*line, "--format", "json")
    assert code == ExitCode.USAGE, (stdout, stderr)
    [problem] = json.loads(stdout)["problems"]
    code, stdout, stderr = invoke(*line)
    assert code == ExitCode.USAGE and stderr.startswith(f"usage error: {problem['message']} (hint: {problem['hint']})")
    return dict(problem)


def gitops_clone(tmp_path: Path, remote: str | None = "https://example.invalid/gitops.git") -> Path:
    """A fresh clone of the GitOps repo on dev's branch (``git init`` and the remote a clone sets)."""
    out = tmp_path / "gitops"
    subprocess.run(["git", "init", "-q", "-b", "dev", str(out)], check=True)
    if remote is not None:
        git(out, "remote", "add", "origin", remote)
    return out


@pytest.mark.parametrize("command", ["render", "plan"])
def test_output_at_the_top_of_the_gitops_checkout_when_the_gitops_repo_has_a_path(tmp_path: Path,
                                                                                  command: str) -> None:
    """``GitOpsRepo.spec.path: clusters/dev`` and ``--output`` the top of the GitOps repo's clone. Flux reads a
    Kustomization's ``spec.path`` "relative to the root of the repository" (fluxcd/kustomize-controller
    ``docs/spec/v1/kustomizations.md``; ``api/v1/kustomization_types.go``: "Path to the directory containing the
    kustomization.yaml file, or the set of plain YAMLs a kustomization.yaml should be generated for"), Argo CD an
    Application's ``source.path`` ("a directory path within the Git repository", argo-cd
    ``pkg/apis/application/v1alpha1/types.go``), and ``schedule`` writes at the GitOpsRepo's path. Until 2026-11-29
    ``render`` wrote the tree at the top (exit 0, "Wrote 10 files"), where no reconciler set up for clusters/dev
    reads it, and ``plan`` showed every assignment added."""
    main_dir, env_dir = make_plane(tmp_path, env={"gitops-repo.yaml": GITOPS_AT_A_PATH})
    out = gitops_clone(tmp_path)
    line: list[str | Path] = [command, "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out]
    problem = one_problem(line)
    assert problem["message"] == (
        f"--output {out} is the top of a checkout of the GitOps repo https://example.invalid/gitops ({out}), but "
        f"GitOpsRepo dev puts dev's files in its folder clusters/dev ({env_dir / 'gitops-repo.yaml'}:8:9): Flux "
        "and Argo CD read them there, and schedule writes them there"
    )
    assert problem["hint"] == f"give --output {out / 'clusters' / 'dev'}"
    assert [p.name for p in out.iterdir()] == [".git"]
    # a folder of the checkout that is not the path (a cluster type's folder, a typo) is refused the same way
    problem = one_problem([*line[:-1], out / "clusters"])
    assert problem["message"].startswith(f"--output {out / 'clusters'} is folder clusters of a checkout of the GitOps")
    code, stdout, stderr = invoke(*line[:-1], out / "clusters" / "dev")
    assert code == 0, (stdout, stderr)


def test_a_gitops_repo_without_a_path_refuses_a_folder_inside_the_checkout(tmp_path: Path) -> None:
    """No ``spec.path``: the environment's files are at the top of the repo (Flux's and Argo CD's path ``./``), and
    a render into a folder of the checkout (``gitops/dev``, as a repo with a folder per environment has it) is
    the mistake the other way round. The remote as ``git@host:owner/name`` names the same repository."""
    main_dir, env_dir = make_plane(tmp_path)
    out = gitops_clone(tmp_path, remote="git@example.invalid:platform/gitops")
    problem = one_problem(["render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output",
                           out / "dev"])
    assert problem["message"] == (
        f"--output {out / 'dev'} is folder dev of a checkout of the GitOps repo https://example.invalid/gitops "
        f"({out}), but GitOpsRepo dev puts dev's files at the top of the repo (it has no spec.path: "
        f"{env_dir / 'gitops-repo.yaml'}:4:9): Flux and Argo CD read them there, and schedule writes them there"
    )
    assert problem["hint"] == f"give --output {out}"
    assert not (out / "dev").exists()


def test_a_checkout_without_the_remote_is_known_by_the_state_at_the_path(tmp_path: Path) -> None:
    """A clone whose remote is named otherwise (a mirror, a fork under another name) is still the GitOps repo when
    fleetflow's state stands at the GitOpsRepo's path in it; a git repo that is neither (a scratch folder in some
    other project) takes the render where the user puts it."""
    main_dir, env_dir = make_plane(tmp_path, env={"gitops-repo.yaml": GITOPS_AT_A_PATH})
    out = gitops_clone(tmp_path, remote="https://example.invalid/mirror-of-it.git")
    line: list[str | Path] = ["render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output"]
    code, stdout, stderr = invoke(*line, out)
    assert code == 0, (stdout, stderr)  # nothing says it is the GitOps repo yet
    rendered = tree_bytes(out / "cloud-eu")
    (out / "clusters" / "dev").mkdir(parents=True)
    (out / ".fleetflow").rename(out / "clusters" / "dev" / ".fleetflow")
    problem = one_problem([*line, out])
    assert problem["hint"] == f"give --output {out / 'clusters' / 'dev'}"
    assert tree_bytes(out / "cloud-eu") == rendered
