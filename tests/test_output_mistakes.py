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
from tests.helpers import ENV_FILES, MAIN_FILES, build_file_tree, make_plane, tree_bytes

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


SECOND_TARGET = MAIN_FILES["workloads/app.yaml"].replace("""
            - name: qa
""", """
            - name: dev2
              environment: dev
              labels:
                purpose: test
              manifests:
                repo: https://example.invalid/app
                branch: dev
                path: ./dev2
            - name: qa
""")


def test_a_kustomization_file_that_does_not_list_what_the_render_adds_is_warned(tmp_path: Path) -> None:
    """A ``kustomization.yaml`` written by hand in a cluster-type folder (the path of each cluster's Flux
    Kustomization, docs/reporting-status.md), as the Flux docs recommend ("It is recommended to generate the
    kustomization.yaml on your own and store it in Git", kustomize-controller ``docs/spec/v1/kustomizations.md``).
    Flux then builds the folder from that file as it is (fluxcd/pkg ``kustomize/kustomize_generator.go``,
    ``generateKustomization``: an existing kustomization file is used unchanged; only without one is it generated
    from every .yaml/.yml file), Argo CD too (argo-cd ``util/app/discovery/discovery.go``, ``AppType``). A
    deployment target added later is rendered into ``cloud-eu/app-dev2/`` and applied by no cluster, while the
    Kustomization reports ready. Until 2026-11-29 ``render`` and ``plan`` said nothing (exit 0)."""
    main_dir, env_dir = make_plane(tmp_path)
    out = tmp_path / "out"
    line: list[str | Path] = ["--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out]
    code, stdout, stderr = invoke("render", *line)
    assert code == 0 and "warning" not in stderr, (stdout, stderr)
    kustomization = out / "cloud-eu" / "kustomization.yaml"
    kustomization.write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
                             "  - app-dev/reconciler.yaml\n  - app-dev/namespace.yaml\n"
                             "  - ./app-dev/platform-config.yaml\n")
    build_file_tree(main_dir, {"workloads/app.yaml": SECOND_TARGET})
    for command in ("plan", "render"):
        code, stdout, _ = invoke(command, *line, "--format", "json")
        assert code == 0, stdout
        [warning] = json.loads(stdout)["warnings"]
        assert warning["message"] == (
            "kustomization.yaml in cloud-eu/ does not list 3 files this render writes there "
            "(cloud-eu/app-dev2/namespace.yaml, cloud-eu/app-dev2/platform-config.yaml, "
            "cloud-eu/app-dev2/reconciler.yaml): Flux and Argo CD build cloud-eu/ from the resources it lists, not "
            "from every YAML file, so no cluster applies them, and the clusters report success without them"
        )
        assert warning["location"]["file"] == str(kustomization)
        assert warning["hint"] == ("add them to its resources (- app-dev2/namespace.yaml, ...), or delete "
                                   "kustomization.yaml so that Flux and Argo CD take every YAML file below cloud-eu/")
    assert (out / "cloud-eu" / "app-dev2" / "reconciler.yaml").is_file()  # a warning: the render is written


@pytest.mark.parametrize(("where", "text", "warned"), [
    ("cloud-eu/kustomization.yaml", "resources: [app-dev, app-dev2]\n", False),  # folders: each has its own
    ("kustomization.yml", "resources:\n  - cloud-eu\n  - edge-line1\n", False),
    ("kustomization.yml", "resources:\n  - cloud-eu\n", True),  # edge-line1/ is left out
    ("cloud-eu/app-dev2/Kustomization", "resources: [reconciler.yaml]\n", True),  # Flux takes app-dev2/ through it
    ("cloud-eu/kustomization.yaml", "resources: [: not yaml\n", False),  # Flux fails the build and says so
    ("cloud-eu/kustomization.yaml.bak", "resources: []\n", False),  # not a name kustomize reads
])
def test_which_kustomization_files_leave_rendered_files_out(tmp_path: Path, where: str, text: str,
                                                             warned: bool) -> None:
    """Kustomize reads ``kustomization.yaml``, ``kustomization.yml`` and ``Kustomization`` (kustomize
    ``api/konfig`` RecognizedKustomizationFileNames), at the output root, in a cluster-type folder or in an
    assignment's folder (Flux's ``scanManifests`` takes a sub-folder holding one through it alone); a folder it
    lists is taken whole."""
    main_dir, env_dir = make_plane(tmp_path, main={"workloads/app.yaml": SECOND_TARGET})
    out = tmp_path / "out"
    build_file_tree(out, {where: text})
    code, stdout, _ = invoke("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output",
                             out, "--format", "json")
    assert code == 0, stdout
    warnings = [w for w in json.loads(stdout)["warnings"] if "kustomization" in w["message"].lower()]
    assert bool(warnings) == warned, warnings


def committed_render(tmp_path: Path) -> tuple[list[str | Path], Path]:
    """dev rendered into a checkout of the GitOps branch, and committed, as a person does by hand."""
    main_dir, env_dir = make_plane(tmp_path)
    out = gitops_clone(tmp_path)
    line: list[str | Path] = ["--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out]
    code, stdout, stderr = invoke("render", *line)
    assert code == 0, (stdout, stderr)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", "render dev")
    return line, out


@pytest.mark.parametrize("committed", [False, True])
def test_files_fleetflow_wrote_changed_in_the_checkout_are_put_back(tmp_path: Path, committed: bool) -> None:
    """A file fleetflow wrote edited by hand in the checkout (or in a hot-fix commit pulled from the GitOps branch)
    and another deleted, their inputs unchanged. ``schedule`` renders such files again and puts them back
    (docs/design.md §4, :func:`fleetflow.promotion.gitops.hand_edits`); until 2026-11-29 ``render`` said "0 changed,
    Wrote 0 files" and left them as they were (the deleted Namespace stayed deleted), and ``plan`` said "no
    rendered file changes", though ``render`` promises the tree a full render writes."""
    line, out = committed_render(tmp_path)
    before = tree_bytes(out / "cloud-eu") | tree_bytes(out / "edge-line1")
    edited = out / "cloud-eu" / "app-dev" / "reconciler.yaml"
    deleted = out / "edge-line1" / "app-dev" / "namespace.yaml"
    edited.write_text(edited.read_text() + "# hot-fix\n")
    deleted.unlink()
    if committed:
        git(out, "commit", "-q", "-a", "-m", "hot-fix")
    code, stdout, _ = invoke("plan", *line, "--format", "json")
    assert code == 0, stdout
    planned = json.loads(stdout)
    [warning] = planned["warnings"]
    assert warning["message"].startswith(
        f"2 files fleetflow wrote changed in {out} after commit ")
    assert warning["message"].endswith(
        "which wrote its state (cloud-eu/app-dev/reconciler.yaml, edge-line1/app-dev/namespace.yaml): rendered "
        "again, render puts back what fleetflow renders")
    diff = planned["result"]["diff"]
    assert "-# hot-fix" in diff and "+++ b/edge-line1/app-dev/namespace.yaml" in diff
    code, stdout, stderr = invoke("render", *line)
    assert code == 0 and "2 files fleetflow wrote changed" in stderr, (stdout, stderr)
    assert tree_bytes(out / "cloud-eu") | tree_bytes(out / "edge-line1") == before
    code, stdout, stderr = invoke("render", *line)  # put back: nothing more to say
    assert code == 0 and stderr == "" and "Wrote 0 files" in stdout, (stdout, stderr)


def test_a_render_not_committed_yet_is_not_taken_for_hand_edits(tmp_path: Path) -> None:
    """A render whose files and state are not committed yet differs from the commit in its own files: that is no
    hand edit, and the next render says nothing about it."""
    line, _ = committed_render(tmp_path)
    configs = Path(str(line[3])) / "configs.yaml"
    configs.write_text(configs.read_text().replace("LOG_LEVEL: info", "LOG_LEVEL: warn"))
    code, stdout, stderr = invoke("render", *line)
    assert code == 0 and "changed (" in stdout and stderr == "", (stdout, stderr)
    code, stdout, stderr = invoke("render", *line)
    assert code == 0 and stderr == "" and "Wrote 0 files" in stdout, (stdout, stderr)
