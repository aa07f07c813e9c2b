"""The command line as people type it on a laptop: the two checkouts mixed up, a path with ``~`` the shell left
alone. Each mistake gets one usage error (exit 2) that names it and says how to fix the command line, and nothing
is written; or, for ``~``, what the user meant."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleetflow.cli import main
from fleetflow.errors import ExitCode
from tests.helpers import make_plane, parsed, tree_bytes

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


@pytest.mark.parametrize("command", COMMANDS)
def test_main_and_env_swapped_say_so(tmp_path: Path, command: str) -> None:
    """``--main`` given the environment branch's checkout and ``--env`` main's: until 2026-11-29, one "X does not
    belong on the main branch (hint: move it to an environment branch)" per resource (35 for the example's dev,
    exit 1), each sending the user to move files between branches."""
    main_dir, env_dir = make_plane(tmp_path)
    out = tmp_path / "out"
    problem = one_problem(command_line(command, env_dir, main_dir, out))
    assert problem["message"] == (
        f"--main {env_dir} and --env {main_dir} look swapped: {env_dir} holds an environment branch's resources "
        f"(Cluster, ClusterType, GitOpsRepo, SchedulingPolicy) and {main_dir} main's (Environment, Template, Workload)"
    )
    assert problem["hint"] == f"swap them: --main {main_dir} --env {env_dir}"
    assert not out.exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_env_a_checkout_of_main_says_so(tmp_path: Path, command: str) -> None:
    """``--env`` a second checkout of main (a clone, still on main): until 2026-11-29 every Environment, Template
    and Workload "does not belong on an environment branch" and every ConfigMap a duplicate name."""
    main_dir, _ = make_plane(tmp_path)
    clone = tmp_path / "clone"
    shutil.copytree(main_dir, clone)
    for git in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "main"]):
        subprocess.run(["git", "-C", str(clone), *git], check=True)
    out = tmp_path / "out"
    problem = one_problem(command_line(command, main_dir, clone, out))
    assert problem["message"] == (
        f"--env {clone} looks like a checkout of main (branch main is checked out there), not of an environment "
        "branch: it holds main's resources (Environment, Template, Workload) and none of an environment branch's "
        "(BaseRepo, Cluster, ClusterType, GitOpsRepo, SchedulingPolicy)"
    )
    assert problem["hint"].startswith("pass --env a checkout of the environment's branch (")
    assert not out.exists()


def test_main_a_checkout_of_an_environment_branch_says_so(tmp_path: Path) -> None:
    """``--main`` the qa branch's checkout, ``--env`` dev's: the qa folder is not main."""
    _, env_dir = make_plane(tmp_path)
    qa = tmp_path / "qa"
    shutil.copytree(env_dir, qa)
    problem = one_problem(command_line("validate", qa, env_dir, tmp_path / "out"))
    assert problem["message"].startswith(f"--main {qa} looks like a checkout of an environment branch, not of main: "
                                         "it holds an environment branch's resources (Cluster, ClusterType")
    assert problem["hint"] == "pass --main a checkout of the control-plane repo's main branch"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("side", ["main", "env"])
def test_the_same_folder_for_both_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str,
                                          side: str) -> None:
    """One folder for ``--main`` and ``--env`` (here once as ``x`` and once as ``./x``): until 2026-11-29 it was
    read twice, and each ConfigMap was a "duplicate ConfigMap name 'edge' (also defined at" the same file:line)."""
    monkeypatch.chdir(tmp_path)
    make_plane(tmp_path)
    out = tmp_path / "out"
    problem = one_problem(command_line(command, side, f"./{side}", out))
    assert problem["message"] == (f"--main {side} and --env {side} are the same folder: main and the environment "
                                  "branch are two branches, each needs its own checkout")
    assert "git worktree add" in problem["hint"]
    assert not out.exists()


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


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_a_checkout_in_the_middle_of_a_merge_says_conflict(tmp_path: Path) -> None:
    """``git merge`` stopped at a conflict in a ConfigMap of the environment branch's checkout, and the user runs
    ``validate``: git wrote its markers into the file (git-merge(1), "How conflicts are presented":
    https://git-scm.com/docs/git-merge#_how_conflicts_are_presented). Until 2026-11-29 the message was the YAML
    error on the line below the marker, "could not find expected ':'" (hint: "':' after keys")."""
    main_dir, env_dir = make_plane(tmp_path)
    git(env_dir, "init", "-q", "-b", "dev")
    git(env_dir, "add", "-A")
    git(env_dir, "commit", "-q", "-m", "dev")
    config = next(p for p in sorted(env_dir.rglob("*.yaml")) if "name: env-wide" in p.read_text())
    text = config.read_text()
    git(env_dir, "checkout", "-q", "-b", "side")
    config.write_text(text.replace("data:\n", "data:\n  LOG_LEVEL: trace\n", 1))
    git(env_dir, "commit", "-q", "-am", "side")
    git(env_dir, "checkout", "-q", "dev")
    config.write_text(text.replace("data:\n", "data:\n  LOG_LEVEL: warn\n", 1))
    git(env_dir, "commit", "-q", "-am", "dev")
    merge = subprocess.run(["git", "-C", str(env_dir), "merge", "side"], capture_output=True, text=True)
    assert merge.returncode == 1 and "CONFLICT" in merge.stdout, merge
    marker = config.read_text().splitlines().index("<<<<<<< HEAD") + 1
    code, stdout, _ = invoke("validate", "--main", main_dir, "--env", env_dir, "--format", "json")
    assert code == ExitCode.REFUSED
    [problem] = json.loads(stdout)["problems"]
    assert problem["message"] == "invalid YAML: an unresolved merge conflict (git's conflict marker '<<<<<<< HEAD')"
    assert problem["location"] == {"file": str(config), "line": marker, "column": 1}
    assert "delete the <<<<<<<, ======= and >>>>>>> lines" in problem["hint"]


@pytest.mark.parametrize("marker", ["||||||| merged common ancestors", "=======", ">>>>>>> 4e2b407 (side)",
                                    "<<<<<<<<<<<<<< HEAD"])
def test_any_conflict_marker_git_writes_is_said_a_conflict(marker: str) -> None:
    """diff3's base line, the separator, the closing line alone (a hand resolution that missed one), and a marker
    of another length (gitattributes(5), conflict-marker-size)."""
    _, problems = parsed(f"apiVersion: v1\nkind: ConfigMap\n{marker}\nmetadata:\n  name: x\n")
    [problem] = problems
    assert problem.message.startswith("invalid YAML: an unresolved merge conflict (git's conflict marker")
    assert problem.location is not None and problem.location.line == 3


def test_a_separator_line_in_a_block_scalar_leaves_the_real_error_said() -> None:
    """A guard: a line of seven '=' is ordinary text in a block scalar (a heading's underline in the README a
    ConfigMap carries), indented there, and git's markers start their line: with a YAML error elsewhere in the
    file, that error is said, not a merge conflict."""
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  README: |\n    Title\n    =======\n"
            "    text\n  bad: [1, 2\n")
    _, problems = parsed(text)
    [problem] = problems
    assert "conflict" not in problem.message, problem.message
    assert problem.location is not None and problem.location.line >= 10


def test_explain_refuses_another_environments_checkout_as_render_does(tmp_path: Path) -> None:
    """``explain --environment qa`` with dev's checkout as ``--env``: until 2026-11-29 it explained
    ``cloud-eu/app-qa (environment qa)`` from dev's ConfigMaps, exit 0, where ``render`` and ``validate`` refuse the
    same trees ("this environment tree belongs to environment 'dev'")."""
    main_dir, env_dir = make_plane(tmp_path)
    line = ["explain", "--main", main_dir, "--env", env_dir, "--environment", "qa", "--assignment", "cloud-eu/app-qa"]
    code, stdout, _ = invoke(*line, "--format", "json")
    assert code == ExitCode.REFUSED, stdout
    [problem] = json.loads(stdout)["problems"]
    assert problem["message"] == "this environment tree belongs to environment 'dev' (GitOpsRepo 'dev'), not 'qa'"
    assert problem["hint"] == "pass --environment dev, or --env a checkout of branch 'qa'"
    code, stdout, _ = invoke(*line[:-3], "dev", "--assignment", "cloud-eu/app-dev")
    assert code == 0 and stdout.startswith("cloud-eu/app-dev (environment dev)")


@pytest.mark.parametrize("command", ["render", "plan"])
def test_output_in_a_checkout_of_another_environments_branch_is_refused(tmp_path: Path, command: str) -> None:
    """A fresh clone of the GitOps repo, on qa's branch, given as dev's ``--output``: until 2026-11-29 ``render``
    wrote dev's files there (exit 0) for the user to commit to qa's branch; only a checkout that already held
    qa's state was refused. A branch that names no environment (a preview branch) is the user's choice."""
    main_dir, env_dir = make_plane(tmp_path)
    out = tmp_path / "gitops"
    git(tmp_path, "init", "-q", "-b", "qa", str(out))
    line = command_line(command, main_dir, env_dir, out)
    problem = one_problem(line)
    assert problem["message"] == (
        f"--output {out} is in a checkout of branch qa ({out}), the branch named after environment qa: dev's GitOps "
        f"output goes to branch dev (GitOpsRepo dev at {env_dir / 'gitops-repo.yaml'}:7:11)"
    )
    assert problem["hint"] == (f"switch that checkout to branch dev (git -C {out} switch dev), give --output a "
                               "checkout of branch dev, or pass --environment qa")
    assert [p.name for p in out.iterdir()] == [".git"]
    for branch in ("dev", "preview"):
        git(out, "checkout", "-q", "-b", branch)
        code, stdout, stderr = invoke(*line)
        assert code == 0, (branch, stdout, stderr)


@pytest.mark.parametrize(("typed", "meant"), [("Dev", "dev"), ("QA", "qa"), ("dve", "dev")])
def test_an_environment_in_the_wrong_case_or_misspelt_gets_a_did_you_mean(tmp_path: Path, typed: str,
                                                                          meant: str) -> None:
    """``--environment Dev`` (environment names are lowercase, Kubernetes names) said the names on main and left
    the user to spot the difference; the message stays as scripts match it, the hint says which one was meant."""
    main_dir, env_dir = make_plane(tmp_path)
    problem = one_problem(["validate", "--main", main_dir, "--env", env_dir, "--environment", typed])
    assert problem["message"] == f"unknown environment {typed!r}; environments on main: dev, qa"
    assert problem["hint"] == f"did you mean --environment {meant}?"
