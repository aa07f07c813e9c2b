"""The fleet commands over a control plane edited at random: an engineer's mistake on ``main`` or on an environment
branch is refused with a message, never a traceback, and a refused ``promote`` or ``schedule`` writes nothing.

Each edit starts from a fresh fleet on the local forge (tests/fleet.py: five environments), promoted to dev or not,
then changes one YAML file of ``main`` or of an environment branch, pushed as an engineer would: at the data level
(a key removed or renamed, a value of another type or another environment's name, a list item repeated) or in the
text (a line dropped, repeated, indented, a character put in). Then the commands a workflow runs, in a seeded order,
in process: ``promote``, ``schedule``, ``check-rollout``, ``status``, ``reconcile``, each as JSON or text. Rules:
no exception leaves a command (click's runner re-raises it), the exit code is one of the contract's, a failed run
says why, and a ``promote`` or ``schedule`` that fails leaves both repositories' refs as they were.

This search found ``reconcile`` crashing on a chain that names an environment ``main`` no longer defines, and
``promote`` pinning commits its render then refused (fixed: a chain with no order is refused by every fleet
command; promote runs the render's checks before it pins, and fetches the GitOps repo). A failure only the render
itself can find broke the last rule too, after the pin: seed 6 met one at edit 141 (a template naming a variable
that does not exist, found when an assignment is rendered); promote now renders the pin commit before it pushes it
(docs/design.md §5). CI takes 32 edits of seed 1;
``FLEETFLOW_FLEET_EDITS=150 FLEETFLOW_FLEET_SEEDS=2-9`` searches longer by hand (about 1 s an edit). The second
test runs the same edits with dev scheduled in shards (12 edits of seed 1 in CI).
"""

from __future__ import annotations

import io
import json
import os
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from fleetflow.cli import main as cli
from tests.fleet import build_bare_repos, environments_file, git
from tests.ghstub.server import GitHubStub
from tests.helpers import searched_seeds

EDITS = int(os.environ.get("FLEETFLOW_FLEET_EDITS", "32"))  # read on import: every test runs with FLEETFLOW_* unset
SEEDS = searched_seeds("FLEETFLOW_FLEET_SEEDS") or [1]
VALUES: list[Any] = [None, 0, -1, 1.5, True, "", "x", "Bad Name!", "a" * 300, [], ["x"], [1, {"a": 1}], {}, {"a": "b"},
                     {"matchLabels": {"x": "y"}}, "{{ oops", "dev", "qa", ["dev"], ["prod-eu"], "-1h", "0s", "main"]
BRANCHES = ["main", "main", "dev", "dev", "qa", "prod-eu", "dr"]
COMMANDS: list[tuple[str, ...]] = [("promote", "--commit", "{main}"), ("schedule", "--environment", "dev"),
                                   ("check-rollout", "--environment", "dev"), ("status",), ("reconcile",)]
EXIT_CODES = {0, 1, 2, 3}  # fleetflow.errors.ExitCode


def _nodes(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _nodes(value, (*path, index))


def edit_data(doc: Any, rng: random.Random) -> str:
    """One change to a document's data (a round-trip ruamel tree); what it was, for the failure message."""
    paths = [p for p in _nodes(doc) if p]
    if not paths:
        return "nothing to edit"
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    op = rng.randrange(4)
    if op == 0 and isinstance(parent, dict):
        del parent[last]
        return f"removed {path}"
    if op == 1 and isinstance(parent, dict):
        parent[f"zz{last}"] = parent.pop(last)
        return f"renamed {path}"
    if op == 2 and isinstance(parent[last], list) and parent[last]:
        parent[last].append(parent[last][0])
        return f"repeated the first item of {path}"
    value = rng.choice(VALUES)
    parent[last] = value
    return f"set {path} to {value!r}"[:120]


def edit_text(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True) or ["\n"]
    i = rng.randrange(len(lines))
    op = rng.randrange(5)
    if op == 0:
        del lines[i]
        return "".join(lines), f"dropped line {i + 1}"
    if op == 1:
        lines.insert(i, lines[i])
        return "".join(lines), f"repeated line {i + 1}"
    if op == 2:
        at = rng.randrange(len(lines[i]) + 1)
        char = rng.choice([":", "-", " ", "\t", "'", '"', "{", "[", "#", "&a", "*a", "\n", "x"])
        lines[i] = lines[i][:at] + char + lines[i][at:]
        return "".join(lines), f"put {char!r} in line {i + 1} at {at}"
    if op == 3:
        lines[i] = "  " + lines[i]
        return "".join(lines), f"indented line {i + 1}"
    lines[i] = lines[i].lstrip()
    return "".join(lines), f"dedented line {i + 1}"


def refs(root: Path) -> list[str]:
    return [git(root, "--git-dir", str(root / name), "for-each-ref") for name in ("control-plane.git", "gitops.git")]


def run_by_the_rules(runner: CliRunner, root: Path, command: Sequence[str], rng: random.Random, case: str) -> None:
    """``fleetflow COMMAND --format json|text`` (the format drawn from ``rng``), held to the searches' rules: no
    exception leaves it, its exit code is one of the contract's, a failed JSON run has problems, and a failed
    ``promote`` or ``schedule`` (and any shard job) leaves both repositories' refs as they were. ``case`` names the
    edit in a failure."""
    fmt = rng.choice(["json", "text"])
    before = refs(root)
    result = runner.invoke(cli, [*command, "--format", fmt], catch_exceptions=False)
    where = f"{case}; fleetflow {' '.join(command)} --format {fmt}"
    assert result.exit_code in EXIT_CODES, (where, result.output)
    if fmt == "json":
        data = json.loads(result.stdout)
        assert result.exit_code == 0 or data["problems"], (where, data)
    if "--shard" in command or (command[0] in ("promote", "schedule") and result.exit_code != 0):
        assert refs(root) == before, (where, "a failed run (or a shard job) wrote", result.output)


def edit_and_push(root: Path, rng: random.Random) -> str:
    """One edit of one YAML file of one branch of the control-plane repo, committed and pushed: what it was."""
    branch = rng.choice(BRANCHES)
    work = root / "engineer"
    git(root, "clone", "-q", "-b", branch, str(root / "control-plane.git"), str(work))
    path = rng.choice(sorted(p for p in work.rglob("*.yaml") if ".git" not in p.parts))
    if rng.random() < 0.5:
        yaml = YAML(typ="rt")
        docs = list(yaml.load_all(path.read_text()))
        index = rng.randrange(len(docs))
        what = edit_data(docs[index], rng) if docs[index] is not None else "nothing to edit"
        out = io.StringIO()
        yaml.dump_all(docs, out)
        path.write_text(out.getvalue())
    else:
        text, what = edit_text(path.read_text(), rng)
        path.write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "--allow-empty", "-m", what)
    git(work, "push", "-q", "origin", f"HEAD:{branch}")
    return f"{branch}:{path.relative_to(work)}: {what}"


def fresh_fleet(root: Path, monkeypatch: pytest.MonkeyPatch, number: int, stub: GitHubStub | None) -> Path:
    """A new fleet under ``root`` (tests/fleet.py: five environments) and what the CLI finds it by: on the local
    forge, or (``stub``) on the GitHub stand-in as repositories of an owner of its own. Its control-plane repo."""
    cp = root / "control-plane.git"
    if stub is None:
        build_bare_repos(root, str(root / "gitops.git"), str(cp))
        monkeypatch.setenv("FLEETFLOW_FORGE", "local")
        monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", str(cp))
    else:
        owner = f"team{number}"
        build_bare_repos(root, f"{owner}/gitops", f"{owner}/control-plane")
        stub.create_repo(f"{owner}/control-plane", bare=cp)
        stub.create_repo(f"{owner}/gitops", bare=root / "gitops.git")
        monkeypatch.setenv("FLEETFLOW_FORGE", "github")
        monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", f"{owner}/control-plane")
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        monkeypatch.setenv("GITHUB_API_URL", stub.url)
        monkeypatch.setenv("FLEETFLOW_GITHUB_THROTTLE", "0,0")  # the stand-in has no rate limit
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(root / "cache"))
    return cp


def search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, edits: int, stub: GitHubStub | None) -> None:
    rng = random.Random(seed)
    for number in range(edits):
        root = tmp_path / f"edit-{number}"
        root.mkdir()
        cp = fresh_fleet(root, monkeypatch, number, stub)
        runner = CliRunner()
        if rng.random() < 0.6:
            first = git(root, "--git-dir", str(cp), "rev-parse", "main")
            assert runner.invoke(cli, ["promote", "--commit", first], catch_exceptions=False).exit_code == 0
        edit = edit_and_push(root, rng)
        tip = git(root, "--git-dir", str(cp), "rev-parse", "main")
        commands = COMMANDS.copy()
        rng.shuffle(commands)
        for command in commands:
            run_by_the_rules(runner, root, [a.format(main=tip) for a in command], rng,
                             f"edit {number} (seed {seed}) {edit}")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fleet_commands_on_a_control_plane_edited_at_random(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    search(tmp_path, monkeypatch, seed, EDITS, None)


GITHUB_EDITS = int(os.environ.get("FLEETFLOW_GITHUB_EDITS", "8"))
GITHUB_SEEDS = searched_seeds("FLEETFLOW_GITHUB_SEEDS") or [1]


@pytest.mark.parametrize("seed", GITHUB_SEEDS)
def test_the_fleet_commands_on_the_github_stand_in_edited_at_random(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, github_stub: GitHubStub, seed: int
) -> None:
    """The same search through the GitHub forge: PyGithub, unmodified, against the stand-in, which checks every
    request and answer against GitHub's OpenAPI description (its fixture fails the test on a shape GitHub would
    not give or a request it would refuse). What an edited plane makes fleetflow send GitHub (labels, reviewers,
    statuses, pull requests) must be refused with a message too. ``FLEETFLOW_GITHUB_EDITS`` and
    ``FLEETFLOW_GITHUB_SEEDS`` search longer."""
    search(tmp_path, monkeypatch, seed, GITHUB_EDITS, github_stub)


SHARDED_EDITS = int(os.environ.get("FLEETFLOW_SHARDED_EDITS", "12"))
SHARDED_SEEDS = searched_seeds("FLEETFLOW_SHARDED_SEEDS") or [1]


def _shard_commands(root: Path, run: int) -> list[tuple[str, ...]]:
    """The sharded schedule of dev as its workflow runs it: two shard jobs, each into its own artifact folder, then
    the stitch of both (``--stitch`` reads every artifact below the folder)."""
    shards = root / f"shards-{run}"
    return [("schedule", "--environment", "dev", "--shard", f"{k}/2", "--artifact", str(shards / f"shard-{k}"))
            for k in (1, 2)] + [("schedule", "--environment", "dev", "--stitch", str(shards))]


def _make_dev_sharded(root: Path) -> None:
    work = root / "admin"
    git(root, "clone", "-q", "-b", "main", str(root / "control-plane.git"), str(work))
    for path, text in environments_file(sharded=("dev",)).items():
        (work / path).write_text(text)
    git(work, "commit", "-q", "-am", "dev: sharded schedule")
    git(work, "push", "-q", "origin", "HEAD:main")


@pytest.mark.parametrize("seed", SHARDED_SEEDS)
def test_the_sharded_schedule_on_a_control_plane_edited_at_random(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """The same edits with dev scheduled in shards (``shardedSchedule: true``): ``promote`` pins dev without
    rendering it, and the shard jobs (``schedule --shard K/2 --artifact DIR``) then the stitch (``schedule --stitch``)
    render and publish it. The same rules, and: a shard job never writes a ref, whatever its exit code; a stitch
    that fails writes nothing. ``FLEETFLOW_SHARDED_EDITS`` and ``FLEETFLOW_SHARDED_SEEDS`` search longer."""
    rng = random.Random(seed)
    for number in range(SHARDED_EDITS):
        root = tmp_path / f"edit-{number}"
        root.mkdir()
        cp = fresh_fleet(root, monkeypatch, number, None)
        _make_dev_sharded(root)
        runner = CliRunner()
        if rng.random() < 0.6:  # dev pinned and scheduled before the edit
            first = git(root, "--git-dir", str(cp), "rev-parse", "main")
            for command in [("promote", "--commit", first), *_shard_commands(root, 0)]:
                result = runner.invoke(cli, list(command), catch_exceptions=False)
                assert result.exit_code == 0, (command, result.output)
        edit = edit_and_push(root, rng)
        tip = git(root, "--git-dir", str(cp), "rev-parse", "main")
        commands: list[list[tuple[str, ...]]] = [[("promote", "--commit", tip)], _shard_commands(root, 1),
                                                 [("check-rollout", "--environment", "dev")], [("status",)],
                                                 [("reconcile",)]]
        rng.shuffle(commands)
        for command in (c for group in commands for c in group):
            run_by_the_rules(runner, root, command, rng, f"edit {number} (seed {seed}) {edit}")
