"""The fleet commands after the GitOps repository was edited by hand: an environment's GitOps branch or its
fleetflow PR's head branch changed outside fleetflow (a rendered file deleted, garbled or cut short, a folder
deleted, a file added, the history started again or put back to its first commit, the branch deleted), pushed with
force where it rewrites history; then, with or without a new ``main`` or environment-branch commit, the commands a
workflow runs, in a seeded order: ``promote``, ``schedule`` (twice), ``check-rollout``, ``status``, ``reconcile``.
Rules: no exception leaves a command, the exit code is one of the contract's, a failed JSON run has problems, and
a failed ``promote`` or ``schedule`` leaves both repositories' refs as they were. (What the next render writes over
a hand edit is tests/test_state_shards.py's and docs/design.md's "Incremental rendering".)

240 edits over seeds 1-4 found nothing to fix (2026-11-24, after the GitOps branch that does not exist was refused
up front: tests/test_schedule_shards.py). CI takes 8 edits of seed 1; ``FLEETFLOW_GITOPS_EDITS`` and
``FLEETFLOW_GITOPS_SEEDS`` search longer."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetflow.cli import main as cli
from tests.fleet import Fleet, git, local_fleet
from tests.helpers import searched_seeds
from tests.test_fleet_edits import run_by_the_rules

EDITS = int(os.environ.get("FLEETFLOW_GITOPS_EDITS", "8"))
SEEDS = searched_seeds("FLEETFLOW_GITOPS_SEEDS") or [1]
BRANCHES = ["dev", "dev", "dev", "fleetflow/dev"]


def edit_gitops(root: Path, url: str, rng: random.Random) -> str:
    """One hand edit of a GitOps branch, pushed (forced where it rewrites history): what it was."""
    branch = rng.choice(BRANCHES)
    if git(root, "--git-dir", url, "for-each-ref", f"refs/heads/{branch}") == "":
        branch = "dev"
    kind = rng.choice(["delete file", "delete folder", "garble file", "truncate file", "add file", "orphan",
                       "delete branch", "revert to first", "delete file", "garble file"])
    if kind == "delete branch":
        git(root, "--git-dir", url, "update-ref", "-d", f"refs/heads/{branch}")
        return f"{branch}: deleted"
    work = root / "hand"
    shutil.rmtree(work, ignore_errors=True)
    git(root, "clone", "-q", "-b", branch, url, str(work))
    files = sorted(p for p in work.rglob("*") if p.is_file() and ".git" not in p.parts)
    what = kind
    if kind == "orphan":
        git(work, "checkout", "-q", "--orphan", "fresh")
        git(work, "rm", "-rfq", ".")
        (work / "README.md").write_text("started again\n")
    elif kind == "revert to first":
        first = git(work, "rev-list", "--max-parents=0", "HEAD").splitlines()[0]
        git(work, "read-tree", "-u", "--reset", first)
    elif kind == "add file":
        folder = rng.choice(sorted({p.parent for p in files}))
        (folder / "hand-made.yaml").write_text("kind: ConfigMap\n")
        what = f"added {folder.relative_to(work)}/hand-made.yaml"
    elif files:
        path = rng.choice(files)
        rel = path.relative_to(work)
        if kind == "delete file":
            path.unlink()
        elif kind == "delete folder":
            shutil.rmtree(path.parent) if path.parent != work else path.unlink()
            rel = path.parent.relative_to(work)
        elif kind == "garble file":
            data = bytearray(path.read_bytes() or b"x")
            data[rng.randrange(len(data))] = rng.choice(b"{}[]:,\"\\\x00\xff ")
            path.write_bytes(bytes(data))
        else:
            path.write_bytes(path.read_bytes()[: rng.randrange(max(1, path.stat().st_size))])
        what = f"{kind} {rel}"
    git(work, "add", "-A")
    git(work, "commit", "-q", "--allow-empty", "-m", what)
    git(work, "push", "-q", "-f", "origin", f"HEAD:{branch}")
    return f"{branch}: {what}"


def promoted(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Fleet, CliRunner]:
    """A fleet at ``root`` on the local forge whose first main commit ``promote`` opened dev's PR for."""
    fleet = local_fleet(root)
    monkeypatch.setenv("FLEETFLOW_FORGE", "local")
    monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", fleet.cp_url)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(root / "cache"))
    runner = CliRunner()
    first = fleet.branch_sha(fleet.cp_url, "main")
    assert runner.invoke(cli, ["promote", "--commit", first], catch_exceptions=False).exit_code == 0
    return fleet, runner


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fleet_commands_after_the_gitops_repo_was_edited_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    for number in range(EDITS):
        root = tmp_path / f"edit-{number}"
        root.mkdir()
        fleet, runner = promoted(root, monkeypatch)
        if rng.random() < 0.7:
            fleet.approve("dev")
        edit = edit_gitops(root, fleet.gitops_url, rng)
        if rng.random() < 0.5:
            fleet.push_main({"templates/extra.yaml": "# another\n"}, "another")
        if rng.random() < 0.5:
            fleet.push_env("dev", {"configs.yaml": git(root, "--git-dir", fleet.cp_url, "show", "dev:configs.yaml")
                                   .replace("LOG_LEVEL: info", "LOG_LEVEL: debug")}, "debug")
        tip = fleet.branch_sha(fleet.cp_url, "main")
        commands = [("promote", "--commit", tip), ("schedule", "--environment", "dev"),
                    ("check-rollout", "--environment", "dev"), ("status",), ("reconcile",),
                    ("schedule", "--environment", "dev")]
        rng.shuffle(commands)
        for command in commands:
            run_by_the_rules(runner, root, command, rng, f"edit {number} (seed {seed}) {edit}")


def test_a_foreign_file_whose_name_is_not_utf8_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person adds a file whose name is not UTF-8 (Linux and git allow any bytes) to a cluster-type folder of the
    GitOps branch. fleetflow did not write it, so it keeps it (docs/design.md §4: "fleetflow deletes only what it
    wrote"), and every command reads the branch as before: until 2026-11-28 its listing stopped schedule with a
    UnicodeDecodeError."""
    fleet, runner = promoted(tmp_path, monkeypatch)
    fleet.approve("dev")
    work = tmp_path / "hand"
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(work))
    folder = sorted(p.parent for p in work.rglob("*.yaml") if ".git" not in p.parts and ".fleetflow" not in p.parts)[0]
    name = os.fsencode(folder) + b"/notes-caf\xe9.txt"
    Path(os.fsdecode(name)).write_bytes(b"kept by hand\n")
    inner = Path(os.fsdecode(os.fsencode(folder) + b"/caf\xe9"))  # a folder so named too: the survey lists into it
    inner.mkdir()
    (inner / "notes.txt").write_bytes(b"kept by hand\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "notes")
    git(work, "push", "-q", "origin", "HEAD:dev")
    fleet.push_env("dev", {"configs.yaml": git(tmp_path, "--git-dir", fleet.cp_url, "show", "dev:configs.yaml")
                           .replace("LOG_LEVEL: info", "LOG_LEVEL: debug")}, "debug")
    for command in (["schedule", "--environment", "dev"], ["check-rollout", "--environment", "dev"], ["status"]):
        result = runner.invoke(cli, [*command, "--format", "json"], catch_exceptions=False)
        assert result.exit_code == (0 if command[0] == "schedule" else result.exit_code), result.output
        assert result.exit_code in (0, 1), (command, result.output)  # check-rollout: the gate says not yet
        assert "Traceback" not in result.output
    listed = subprocess.run(["git", "--git-dir", fleet.gitops_url, "ls-tree", "-r", "-z", "--name-only",
                             "fleetflow/dev"], capture_output=True, check=True).stdout.split(b"\0")
    assert os.fsencode(folder.relative_to(work)) + b"/notes-caf\xe9.txt" in listed
    assert os.fsencode(folder.relative_to(work)) + b"/caf\xe9/notes.txt" in listed
    # the PR lists what it kept, the name's byte shown as \xe9 (a UnicodeEncodeError stopped schedule when the PR
    # first listed kept files, until it showed them so)
    shown = f"{folder.relative_to(work).as_posix()}/notes-caf\\xe9.txt"
    assert f"`{shown}`" in fleet.open_pr("dev").body
