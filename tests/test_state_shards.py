"""The state in shards: a small index (``.fleetflow/state.json``) plus one shard per cluster type
(``.fleetflow/state/<clusterType>.json``). A run reads and rewrites only the shards of the cluster types it
touches; the gate reads the index only; a single-file state written before shards existed is still read, and the
next write converts it, byte for byte the tree a fresh render gives."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from fleetflow.cli.common import load
from fleetflow.errors import Problems
from fleetflow.forge.git import GitRepos
from fleetflow.promotion.gitops import GitOpsTree, write_commit
from fleetflow.render.incremental import (
    LEGACY_VERSION,
    STATE_PATH,
    Assignments,
    AssignmentState,
    ExpectedCluster,
    RenderState,
    shard_path,
    shard_reader,
)
from fleetflow.render.output import apply_result, read_state
from fleetflow.render.pipeline import Meta, _untouched_shards, render_environment
from tests.helpers import run_cli, tree_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "control-plane"
GOLDEN = Path(__file__).resolve().parent / "golden"
LEGACY_STATE = Path(__file__).resolve().parent / "legacy" / "dev-state-v1.json"
PIN = Meta("0" * 40, "1" * 40)


def legacy_tree(into: Path) -> Path:
    """The tree fleetflow wrote for the example's dev environment before shards: the golden files (unchanged since)
    with the single-file state of that version in place of the index and its shards."""
    shutil.copytree(GOLDEN / "dev", into)
    shutil.rmtree(into / ".fleetflow")
    (into / STATE_PATH).parent.mkdir()
    shutil.copyfile(LEGACY_STATE, into / STATE_PATH)
    return into


class CountingFiles:
    """A file reader over a dict that records which files were asked for."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = dict(files)
        self.asked: list[str] = []

    def __call__(self, paths: list[str]) -> dict[str, bytes | None]:
        self.asked.extend(paths)
        return {p: self.files.get(p) for p in paths}


def test_index_and_shards_round_trip_with_stable_bytes() -> None:
    state = RenderState(
        environment="dev", main_commit="a" * 40, env_commit=None, engine="fleetflow x",
        assignments={"ct/b": AssignmentState("i2", "c2", ("x.yaml",)), "ct/a": AssignmentState("i1", "c1", ()),
                     "other/a": AssignmentState("i3", "c3", ("y.yaml",))},
        config_keys={"cm": {"K": "h"}},
        clusters=[ExpectedCluster("z", "ct", None), ExpectedCluster("a", "ct", "flux/a")],
    )
    shards = state.shard_files()
    assert sorted(shards) == [shard_path("ct"), shard_path("other")]
    files = CountingFiles({STATE_PATH: state.to_bytes(), **{p: d for p, d in shards.items() if d is not None}})
    again = RenderState.from_bytes(files.files[STATE_PATH], shard_reader(files))
    # what the gate reads is in the index: nothing else is read
    assert [c.name for c in again.clusters] == ["a", "z"] and again.main_commit == "a" * 40
    assert len(again.assignments) == 3 and again.assignments.cluster_types() == {"ct", "other"}
    assert files.asked == []
    # one lookup reads one shard
    assert again.assignments["ct/b"].files == ("x.yaml",)
    assert files.asked == [shard_path("ct")]
    assert again.to_bytes() == state.to_bytes()
    assert again.shard_files(again) == {}  # read back unchanged: nothing to write
    assert again.shard_files() == shards
    lines = shards[shard_path("ct")].decode().splitlines()  # type: ignore[union-attr]
    assert any(line.strip().startswith('"ct/a"') for line in lines)  # one assignment per line


def test_a_shard_is_kept_unread_only_for_the_same_assignment_ids() -> None:
    """An untouched cluster type keeps its shard unread when it holds the same assignments as before: the index's
    count and digest of the ids are compared with the schedule's targets (one join per cluster type). Same count
    but one target swapped, one target fewer, or a cluster type the change touches: the shard is looked at."""
    state = RenderState(environment="dev", assignments=Assignments.of({
        "ct/a": AssignmentState("i1", "c1", ()), "ct/b-x": AssignmentState("i2", "c2", ()),
        "other/a": AssignmentState("i3", "c3", ())}))
    files = CountingFiles({STATE_PATH: state.to_bytes(), **{p: d for p, d in state.shard_files().items() if d}})
    before = RenderState.from_bytes(files.files[STATE_PATH], shard_reader(files)).assignments

    same = ("a", "b-x")
    assert _untouched_shards(before, {}, {"ct": same, "other": ("a",)}) == {
        "ct": before.shards["ct"], "other": before.shards["other"]}
    assert _untouched_shards(before, {}, {"ct": ("a", "b-y")}) == {}  # same count, another target
    assert _untouched_shards(before, {}, {"ct": ("a",)}) == {}
    assert _untouched_shards(before, {"ct": {"a"}}, {"ct": same, "other": ("a",)}).keys() == {"other"}
    assert _untouched_shards(before, None, {"ct": same}) == {}  # everything must be looked at
    assert files.asked == []  # decided from the index alone


def test_the_gate_reads_the_index_only() -> None:
    """``check-rollout`` and the status page read a state with no shard reader: the clusters, the commits."""
    index = (GOLDEN / "dev" / STATE_PATH).read_bytes()
    state = RenderState.from_bytes(index)
    legacy = RenderState.from_bytes(LEGACY_STATE.read_bytes())
    assert state.clusters == legacy.clusters and len(state.clusters) == 5
    assert (state.main_commit, state.env_commit) == (legacy.main_commit, legacy.env_commit)
    assert len(state.assignments) == len(legacy.assignments) == 11
    with pytest.raises(ValueError, match="was not read"):
        state.assignments["aks-westeurope/orders-api-dev"]


def test_a_legacy_state_folder_renders_nothing_again_and_is_converted(tmp_path: Path) -> None:
    out = legacy_tree(tmp_path / "out")
    unreadable = Problems()
    previous = read_state(out, unreadable)
    assert previous is not None and not unreadable and previous.version == LEGACY_VERSION
    assert len(previous.assignments) == 11
    result = run_cli("render", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / "dev", "--environment",
                     "dev", "--output", out, "--main-commit", "0" * 40, "--env-commit", "1" * 40, "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"rendered": 0' in result.output  # the old state was understood: nothing is rendered again
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")  # converted: the index and every shard


def test_an_index_without_reporter_fingerprints_renders_every_status_reporter_again(tmp_path: Path) -> None:
    """An index written before status reporters had fingerprints (no ``reporters`` in its fingerprints) cannot
    tell which ``_status/`` folders are current: every reporter is rendered again (a deleted one comes back), no
    assignment is, and the index gets the fingerprints."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    index = out / STATE_PATH
    text = index.read_text()
    start = text.index('    "reporters": {')
    index.write_text(text[:start] + text[text.index("    },\n", start) + len("    },\n"):])
    assert RenderState.from_bytes(index.read_bytes()).fingerprints.reporters is None  # type: ignore[union-attr]
    reporter = out / "aks-westeurope" / "_status" / "flux-status-reporter.yaml"
    reporter.unlink()
    result = run_cli("render", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / "dev", "--environment",
                     "dev", "--output", out, "--main-commit", "0" * 40, "--env-commit", "1" * 40, "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"rendered": 0' in result.output
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")


def test_a_legacy_state_commit_is_converted_by_the_next_gitops_commit(tmp_path: Path) -> None:
    """A GitOps branch whose tip holds the single-file state (the tree the earlier version wrote): the next
    commit is built from it as git objects and equals a fresh render byte for byte."""
    repos = GitRepos(tmp_path / "cache")
    seed = legacy_tree(tmp_path / "seed")
    url = str(tmp_path / "gitops.git")  # only its mirror is written: nothing is pushed
    old = repos.commit_files(url, None, tree_bytes(seed), "written by fleetflow 1", when=1_700_000_000)
    assert old is not None
    plane = load(EXAMPLE / "main", EXAMPLE / "envs" / "dev")
    tree = GitOpsTree(repos.mirror(url), old, "")
    previous = tree.read_state()
    assert previous is not None and previous.version == LEGACY_VERSION
    result = render_environment(plane, "dev", previous=previous, meta=PIN)
    assert result.rendered == [] and result.changes.empty
    written = write_commit(tree, result, previous, "convert", repos.identity, 1_700_000_001)
    assert written.commit is not None
    assert sorted(written.changed) == sorted([STATE_PATH, *(p for p in tree_bytes(GOLDEN / "dev")
                                                           if p.startswith(".fleetflow/state/"))])
    repo = repos.mirror(url)
    entries = repo.ls_tree(written.commit, recursive=True, trees=False)
    blobs = repo.blobs(e.sha for e in entries)
    assert {e.path: blobs[e.sha] for e in entries} == tree_bytes(GOLDEN / "dev")


def test_an_incremental_run_reads_and_rewrites_only_the_shards_it_touches(tmp_path: Path) -> None:
    env = tmp_path / "env"
    shutil.copytree(EXAMPLE / "envs" / "dev", env)
    lines = env / "configs" / "lines.yaml"
    lines.write_text(lines.read_text().replace('CAMERA_COUNT: "1"', 'CAMERA_COUNT: "3"'))  # Monterrey line 1
    files = CountingFiles(tree_bytes(GOLDEN / "dev"))
    previous = RenderState.from_bytes(files.files[STATE_PATH], shard_reader(files))
    result = render_environment(load(EXAMPLE / "main", env), "dev", previous=previous, meta=PIN)
    touched = ["edge-monterrey-line1/inventory-sync-dev", "edge-monterrey-line1/observability-dev"]
    assert result.changes.changed == touched
    assert files.asked == [shard_path("edge-monterrey-line1")]
    assert result.changes.unchanged == 9
    assert list(result.state.shard_files(previous)) == [shard_path("edge-monterrey-line1")]
    # the shards it did not read are the previous ones: written out, they are the same bytes
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    report = apply_result(out, result, previous)
    assert report.written == [*(f"{aid}/platform-config.json" for aid in touched),
                              shard_path("edge-monterrey-line1"), STATE_PATH]
    fresh = tmp_path / "fresh"
    assert run_cli("render", "--main", EXAMPLE / "main", "--env", env, "--environment", "dev", "--output", fresh,
                   "--main-commit", "0" * 40, "--env-commit", "1" * 40).exit_code == 0
    assert tree_bytes(out) == tree_bytes(fresh)


def test_a_missing_shard_renders_its_cluster_type_again_and_deletes_nothing(tmp_path: Path) -> None:
    """A shard the index names but the tree lacks: its cluster type is rendered again (its files are then
    unknown to fleetflow, so nothing in that folder is deleted) and the shard is written back."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    (out / shard_path("aks-westeurope")).unlink()
    hand = out / "aks-westeurope" / "orders-api-dev" / "hand-written.yaml"
    hand.write_text("kind: ConfigMap\n")
    result = run_cli("render", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / "dev", "--environment",
                     "dev", "--output", out, "--main-commit", "0" * 40, "--env-commit", "1" * 40)
    assert result.exit_code == 0, result.output
    assert hand.read_text() == "kind: ConfigMap\n"
    files = tree_bytes(out)
    assert files.pop("aks-westeurope/orders-api-dev/hand-written.yaml") == b"kind: ConfigMap\n"
    assert files == tree_bytes(GOLDEN / "dev")
