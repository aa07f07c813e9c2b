"""The rendered tree as git, GitHub, Flux and Argo CD take it, and the mistakes people make with ``--output``: each
one gets one clear problem and nothing written, or the tree the reconcilers read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


@pytest.mark.parametrize("command", ["render", "plan"])
@pytest.mark.parametrize("link", ["cloud-eu/app-dev", "cloud-eu"])
def test_a_symbolic_link_where_a_folder_goes_is_refused_before_anything_is_written(tmp_path: Path, command: str,
                                                                                  link: str) -> None:
    """A folder of the output replaced by a symbolic link to a folder kept elsewhere in it (a shared
    ``cloud-eu/app-dev``, a cluster type's folder linked to another's). git commits the link itself, not what it
    points at (git-config(1), core.symlinks: links are recorded as links, "checked out as small plain files that
    contain the link text" where the file system has none), so the files would not reach the GitOps branch, and
    ``schedule`` refuses the same link there ("a symbolic link stands where fleetflow writes the folder",
    tests/test_promotion.py). Until 2026-11-29 ``plan`` listed the link
    as a file it keeps and every assignment as added (exit 0); ``render`` stopped half-way with "refusing to write
    through a symbolic link: cloud-eu/app-dev" and no hint."""
    main_dir, env_dir = make_plane(tmp_path)
    out = tmp_path / "out"
    (out / "shared").mkdir(parents=True)
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(Path("../shared") if "/" in link else Path("shared"))
    before = tree_bytes(out)
    code, stdout, stderr = invoke(command, "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output",
                                  out, "--format", "json")
    assert code == ExitCode.REFUSED, (stdout, stderr)
    [problem] = json.loads(stdout)["problems"]
    assert problem["message"] == f"a symbolic link stands where fleetflow writes the folder {link}/"
    assert problem["location"]["file"] == str(out / link)
    assert problem["hint"].endswith("move or rename it, then run again; nothing was written")
    assert tree_bytes(out) == before and not any((out / "shared").iterdir())


@pytest.mark.parametrize("command", ["render", "plan"])
def test_a_cluster_type_folder_linked_outside_the_output_names_the_link(tmp_path: Path, command: str) -> None:
    """``cloud-eu`` a symbolic link to a folder outside ``--output``: refused as before (fleetflow writes only
    inside its output), now naming the link and where it leads, with a hint; until 2026-11-29 "refusing to write
    outside the output directory: cloud-eu", which did not say there was a link."""
    main_dir, env_dir = make_plane(tmp_path)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "cloud-eu").symlink_to(elsewhere)
    code, stdout, stderr = invoke(command, "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output",
                                  out, "--format", "json")
    assert code == ExitCode.USAGE, (stdout, stderr)
    [problem] = json.loads(stdout)["problems"]
    assert problem["message"] == (f"{out / 'cloud-eu'} is a symbolic link to {elsewhere}, outside the output folder "
                                  f"{out}: fleetflow writes only inside it")
    assert problem["hint"] == "put the folder itself there (or move the link away), then run again; nothing was written"
    assert not any(elsewhere.iterdir()) and [p.name for p in out.iterdir()] == ["cloud-eu"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_plan_into_a_reader_that_stops_early_exits_with_its_own_code(tmp_path: Path, fmt: str) -> None:
    """``fleetflow plan ... | head``: the reader leaves before the plan is printed. Python ignores SIGPIPE and raises
    BrokenPipeError on the write (docs.python.org, ``signal``, "Note on SIGPIPE"); until 2026-11-29 that was
    "forge/git error: connection failed: [Errno 32] Broken pipe (hint: check the network and the forge's address,
    then run the command again)", exit 3. Now the output nobody reads is dropped, quietly, as git does."""
    main_dir, env_dir = make_plane(tmp_path)
    command = [sys.executable, "-c", "from fleetflow.cli import run; run()", "plan", "--main", str(main_dir), "--env",
               str(env_dir), "--environment", "dev", "--output", str(tmp_path / "out"), "--format", fmt]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before anything is written
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0, stderr
    assert stderr == ""
