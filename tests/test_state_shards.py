"""The state in shards: a small index (``.fleetflow/state.json``) with its parts (``.fleetflow/index/``) plus one
shard per cluster type (``.fleetflow/state/<clusterType>.json``). A run reads and rewrites only the shards of the
cluster types it touches, and rewrites only the parts of the index that changed; the gate reads the index and its
parts, never a shard; a single-file state written before shards existed, and a whole index written before it had
parts, are still read, and the next write converts them, byte for byte the tree a fresh render gives."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fleetflow.cli.common import load
from fleetflow.errors import Problems
from fleetflow.forge.git import GitRepos
from fleetflow.promotion.gitops import GitOpsTree, clean_root, write_commit
from fleetflow.render import incremental
from fleetflow.render.incremental import (
    LEGACY_VERSION,
    PART_DIR,
    SHARD_DIR,
    STATE_PATH,
    STATE_VERSION,
    WHOLE_INDEX_VERSION,
    Assignments,
    AssignmentState,
    ExpectedCluster,
    Fingerprints,
    RenderState,
    Shard,
    index_part,
    is_part_file,
    part_path,
    shard_path,
)
from fleetflow.render.output import apply_result, read_state
from fleetflow.render.pipeline import Meta, _untouched_shards, render_environment
from tests.helpers import run_cli, tree_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "control-plane"
GOLDEN = Path(__file__).resolve().parent / "golden"
LEGACY_STATE = Path(__file__).resolve().parent / "legacy" / "dev-state-v1.json"
WHOLE_INDEX = Path(__file__).resolve().parent / "legacy" / "dev-state-v2.json"
PIN = Meta("0" * 40, "1" * 40)


def legacy_tree(into: Path) -> Path:
    """The tree fleetflow wrote for the example's dev environment before shards: the golden files (unchanged since)
    with the single-file state of that version in place of the index and its shards."""
    shutil.copytree(GOLDEN / "dev", into)
    shutil.rmtree(into / ".fleetflow")
    (into / STATE_PATH).parent.mkdir()
    shutil.copyfile(LEGACY_STATE, into / STATE_PATH)
    return into


def whole_index_tree(into: Path) -> Path:
    """The tree fleetflow wrote for the example's dev environment before the index had parts: the golden files
    with the whole index (version 2) in place of the index and its parts (the shards are unchanged)."""
    shutil.copytree(GOLDEN / "dev", into)
    shutil.rmtree(into / PART_DIR)
    shutil.copyfile(WHOLE_INDEX, into / STATE_PATH)
    return into


def render_example(out: Path) -> str:
    """``fleetflow render`` of the example's dev environment into ``out`` (as the golden files were made): its JSON
    output."""
    result = run_cli("render", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / "dev", "--environment",
                     "dev", "--output", out, "--main-commit", "0" * 40, "--env-commit", "1" * 40, "--format", "json")
    assert result.exit_code == 0, result.output
    return result.output


def parts_of(files: Mapping[str, bytes]) -> list[str]:
    return sorted(p for p in files if p.startswith(f"{PART_DIR}/"))


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
    index = state.to_bytes()
    parts = state.part_files()
    assert list(parts) == [part_path("all")]  # a small index: one part
    files = CountingFiles({STATE_PATH: index, **{p: d for p, d in {**shards, **parts}.items() if d is not None}})
    again = RenderState.from_bytes(files.files[STATE_PATH], files)
    # what the gate reads is in the index and its parts: no shard is read
    assert [c.name for c in again.clusters] == ["a", "z"] and again.main_commit == "a" * 40
    assert len(again.assignments) == 3 and again.assignments.cluster_types() == {"ct", "other"}
    assert files.asked == [part_path("all")]
    # one lookup reads one shard
    assert again.assignments["ct/b"].files == ("x.yaml",)
    assert files.asked == [part_path("all"), shard_path("ct")]
    assert again.to_bytes() == index
    assert again.shard_files(again) == {} and again.part_files(again) == {}  # read back unchanged: nothing to write
    assert again.shard_files() == shards and again.part_files() == parts
    lines = shards[shard_path("ct")].decode().splitlines()  # type: ignore[union-attr]
    assert any(line.strip().startswith('"ct/a"') for line in lines)  # one assignment per line


def test_a_shard_is_kept_unread_only_for_the_same_assignment_ids() -> None:
    """An untouched cluster type keeps its shard unread when it holds the same assignments as before: the index's
    count and digest of the ids are compared with the schedule's targets (one join per cluster type). Same count
    but one target swapped, one target fewer, or a cluster type the change touches: the shard is looked at."""
    state = RenderState(environment="dev", assignments=Assignments.of({
        "ct/a": AssignmentState("i1", "c1", ()), "ct/b-x": AssignmentState("i2", "c2", ()),
        "other/a": AssignmentState("i3", "c3", ())}))
    files = CountingFiles({STATE_PATH: state.to_bytes(),
                           **{p: d for p, d in {**state.shard_files(), **state.part_files()}.items() if d}})
    before = RenderState.from_bytes(files.files[STATE_PATH], files).assignments
    files.asked.clear()  # the index's parts

    same = ("a", "b-x")
    assert _untouched_shards(before, {}, {"ct": same, "other": ("a",)}) == {
        "ct": before.shards["ct"], "other": before.shards["other"]}
    assert _untouched_shards(before, {}, {"ct": ("a", "b-y")}) == {}  # same count, another target
    assert _untouched_shards(before, {}, {"ct": ("a",)}) == {}
    assert _untouched_shards(before, {"ct": {"a"}}, {"ct": same, "other": ("a",)}).keys() == {"other"}
    assert _untouched_shards(before, None, {"ct": same}) == {}  # everything must be looked at
    assert files.asked == []  # decided from the index alone


def test_the_gate_reads_the_index_and_its_parts_never_a_shard() -> None:
    """``check-rollout`` and the status page read the clusters and the commits from the index and its parts; the
    whole index of version 2 and the single file of version 1 give the same. An index with parts read without a
    reader is refused (the clusters are in the parts), as a shard read without one is."""
    files = CountingFiles(tree_bytes(GOLDEN / "dev"))
    state = RenderState.from_bytes(files.files[STATE_PATH], files)
    assert files.asked == parts_of(files.files) == [part_path("all")]
    whole = RenderState.from_bytes(WHOLE_INDEX.read_bytes())
    legacy = RenderState.from_bytes(LEGACY_STATE.read_bytes())
    assert whole.version == WHOLE_INDEX_VERSION and legacy.version == LEGACY_VERSION
    assert state.clusters == whole.clusters == legacy.clusters and len(state.clusters) == 5
    assert (state.main_commit, state.env_commit) == (whole.main_commit, whole.env_commit) == (
        legacy.main_commit, legacy.env_commit)
    assert state.fingerprints == whole.fingerprints and state.config_keys == whole.config_keys
    assert len(state.assignments) == len(whole.assignments) == len(legacy.assignments) == 11
    assert {ct: s.members for ct, s in state.assignments.shards.items()} == {
        ct: s.members for ct, s in whole.assignments.shards.items()}
    assert files.asked == [part_path("all")]  # still no shard
    with pytest.raises(ValueError, match="was not read"):
        whole.assignments["aks-westeurope/orders-api-dev"]
    with pytest.raises(ValueError, match=r"parts \(\.fleetflow/index/\) were not read"):
        RenderState.from_bytes(files.files[STATE_PATH])


@pytest.mark.parametrize("where", [STATE_PATH, f"{PART_DIR}/all.json"])
def test_state_nested_too_deeply_for_json_reads_as_any_state_that_does_not(tmp_path: Path, where: str) -> None:
    """A state file holding ``[`` 100,000 times (hand-edited, or a bad merge) stopped ``render``, ``plan``,
    ``schedule``, ``check-rollout`` and ``reconcile`` with json's RecursionError (a bad-input hunt, 2026-11-28).
    It is now a state that does not read, like any other: the render warns and renders again, and the result is
    the golden render, byte for byte."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    (out / where).write_text("[" * 100_000)
    output = json.loads(render_example(out))
    assert any("nested too deeply" in w["message"] or "does not read" in w["message"]
               or "unreadable" in w["message"] for w in output["warnings"]), output["warnings"]
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")


def test_a_shard_nested_too_deeply_for_json_is_a_shard_that_does_not_read() -> None:
    """The same for a shard (read when its cluster type is touched): unreadable, with the reason, and its
    assignments rendered again (``render_environment`` warns of it)."""
    shard = Shard("aks-westeurope", count=1, members="x")
    shard.take(b"[" * 100_000)
    assert shard.unreadable == "JSON nested too deeply to read" and shard.entries == {}


def test_a_legacy_state_folder_renders_nothing_again_and_is_converted(tmp_path: Path) -> None:
    out = legacy_tree(tmp_path / "out")
    unreadable = Problems()
    previous = read_state(out, unreadable)
    assert previous is not None and not unreadable and previous.version == LEGACY_VERSION
    assert len(previous.assignments) == 11
    output = render_example(out)
    assert '"rendered": 0' in output  # the old state was understood: nothing is rendered again
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")  # converted: the index and every shard


def test_an_index_without_reporter_fingerprints_renders_every_status_reporter_again(tmp_path: Path) -> None:
    """An index written before status reporters had fingerprints (no ``reporters`` in its fingerprints: a whole
    index, version 2) cannot tell which ``_status/`` folders are current: every reporter is rendered again (a
    deleted one comes back), no assignment is, and the index gets the fingerprints."""
    out = whole_index_tree(tmp_path / "out")
    index = out / STATE_PATH
    text = index.read_text()
    start = text.index('    "reporters": {')
    index.write_text(text[:start] + text[text.index("    },\n", start) + len("    },\n"):])
    assert RenderState.from_bytes(index.read_bytes()).fingerprints.reporters is None  # type: ignore[union-attr]
    reporter = out / "aks-westeurope" / "_status" / "flux-status-reporter.yaml"
    reporter.unlink()
    output = render_example(out)
    assert '"rendered": 0' in output
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
                                                           if p.startswith((".fleetflow/state/", PART_DIR)))])
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
    previous = RenderState.from_bytes(files.files[STATE_PATH], files)
    result = render_environment(load(EXAMPLE / "main", env), "dev", previous=previous, meta=PIN)
    touched = ["edge-monterrey-line1/inventory-sync-dev", "edge-monterrey-line1/observability-dev"]
    assert result.changes.changed == touched
    assert files.asked == [part_path("all"), shard_path("edge-monterrey-line1")]
    assert result.changes.unchanged == 9
    assert list(result.state.shard_files(previous)) == [shard_path("edge-monterrey-line1")]
    # the shards it did not read are the previous ones: written out, they are the same bytes
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    report = apply_result(out, result, previous)
    assert report.written == [*(f"{aid}/platform-config.json" for aid in touched),
                              shard_path("edge-monterrey-line1"), part_path("all"), STATE_PATH]
    fresh = tmp_path / "fresh"
    assert run_cli("render", "--main", EXAMPLE / "main", "--env", env, "--environment", "dev", "--output", fresh,
                   "--main-commit", "0" * 40, "--env-commit", "1" * 40).exit_code == 0
    assert tree_bytes(out) == tree_bytes(fresh)


def test_a_missing_shard_renders_its_cluster_type_again_and_deletes_nothing(tmp_path: Path) -> None:
    """A shard the index names but the tree lacks: its cluster type is rendered again (its files are then
    unknown to fleetflow, so nothing in that folder is deleted), the shard is written back, and a warning says so
    (before, nothing did)."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    (out / shard_path("aks-westeurope")).unlink()
    hand = out / "aks-westeurope" / "orders-api-dev" / "hand-written.yaml"
    hand.write_text("kind: ConfigMap\n")
    output = render_example(out)
    assert "the state of cluster type aks-westeurope does not read (the file is missing)" in output
    assert hand.read_text() == "kind: ConfigMap\n"
    files = tree_bytes(out)
    assert files.pop("aks-westeurope/orders-api-dev/hand-written.yaml") == b"kind: ConfigMap\n"
    assert files == tree_bytes(GOLDEN / "dev")


def test_a_whole_index_renders_nothing_again_and_is_converted(tmp_path: Path) -> None:
    """A tree holding the whole index of version 2 (no parts): a render understands it (nothing is rendered
    again), and writes the index with its parts, byte for byte the golden tree; so does the next GitOps commit."""
    out = whole_index_tree(tmp_path / "out")
    unreadable = Problems()
    previous = read_state(out, unreadable)
    assert previous is not None and not unreadable and previous.version == WHOLE_INDEX_VERSION
    output = render_example(out)
    assert '"rendered": 0' in output
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")

    repos = GitRepos(tmp_path / "cache")
    url = str(tmp_path / "gitops.git")
    old = repos.commit_files(url, None, tree_bytes(whole_index_tree(tmp_path / "seed")), "fleetflow 2",
                             when=1_700_000_000)
    assert old is not None
    tree = GitOpsTree(repos.mirror(url), old, "")
    before = tree.read_state()
    assert before is not None and before.version == WHOLE_INDEX_VERSION
    rendered = render_environment(load(EXAMPLE / "main", EXAMPLE / "envs" / "dev"), "dev", previous=before, meta=PIN)
    assert rendered.rendered == [] and rendered.changes.empty
    written = write_commit(tree, rendered, before, "convert", repos.identity, 1_700_000_001)
    assert written.commit is not None
    assert sorted(written.changed) == sorted([STATE_PATH, part_path("all")])  # the shards stand as they are
    repo = repos.mirror(url)
    entries = repo.ls_tree(written.commit, recursive=True, trees=False)
    blobs = repo.blobs(e.sha for e in entries)
    assert {e.path: blobs[e.sha] for e in entries} == tree_bytes(GOLDEN / "dev")


@pytest.mark.parametrize("damage", ["missing", "edited"])
def test_a_missing_or_edited_part_makes_the_state_unreadable_and_everything_renders_again(
        tmp_path: Path, damage: str) -> None:
    """A part the index names but the tree lacks, or one whose bytes are not those the index recorded (its digest
    differs): the state is not trusted. The render says so, renders everything, and writes the tree a fresh render
    gives (the part comes back as it should be)."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    part = out / part_path("all")
    if damage == "missing":
        part.unlink()
    else:
        part.write_text(part.read_text().replace('"LINE_ID": "aea6275d68b5e4f4"', '"LINE_ID": "0000000000000000"'))
    unreadable = Problems()
    assert read_state(out, unreadable) is None
    assert [p.message for p in unreadable] == [
        f"previous state is unreadable (the index names the part {part_path('all')}, which is missing); "
        "rendering everything" if damage == "missing" else
        f"previous state is unreadable (the part {part_path('all')} is not the one the index names: its digest "
        "differs); rendering everything"]
    output = render_example(out)
    assert '"rendered": 11' in output
    assert tree_bytes(out) == tree_bytes(GOLDEN / "dev")


def _fleet_state(cluster_types: int) -> RenderState:
    names = [f"ct-{i:04d}" for i in range(cluster_types)]
    return RenderState(
        environment="dev", main_commit="a" * 40, engine="fleetflow x",
        assignments={f"{ct}/w": AssignmentState("i", "c", ("x.yaml",)) for ct in names},
        config_keys={f"cm-{ct}": {"K": "h"} for ct in names},
        clusters=[ExpectedCluster(f"cluster-{ct}", ct, f"flux/{ct}") for ct in names],
        fingerprints=Fingerprints(schemas="s", cluster_types=dict.fromkeys(names, "f"), targets={"w": "t"},
                                  config_maps={f"cm-{ct}": ("f", {"ct": ct}) for ct in names},
                                  reporters=dict.fromkeys(names, "r")),
    )


def test_a_large_index_is_in_256_parts_and_a_change_rewrites_only_the_parts_it_touches() -> None:
    """Past 64 names the index is split by ``sha256(name)``: a change to one cluster type's entries rewrites the
    index and the part of that cluster type, and nothing else; a part left with nothing is deleted. The parts add
    up to what a whole index held: read back, the state is the same."""
    state = _fleet_state(2000)
    index = state.to_bytes()
    parts = state.part_files()
    assert len(parts) == 256 and all(p.startswith(f"{PART_DIR}/") for p in parts)
    assert max(len(d or b"") for d in parts.values()) * 64 < sum(len(d or b"") for d in parts.values())
    files = CountingFiles({STATE_PATH: index, **{p: d for p, d in parts.items() if d is not None}})
    previous = RenderState.from_bytes(index, files)
    assert previous.clusters == sorted(state.clusters, key=lambda c: c.name)
    assert previous.fingerprints == state.fingerprints and previous.config_keys == state.config_keys

    changed = _fleet_state(2000)
    assert changed.fingerprints is not None
    changed.fingerprints.cluster_types["ct-0042"] = "g"
    changed.to_bytes()
    assert changed.part_files(previous) == {
        part_path(index_part("ct-0042")): changed.part_files()[part_path(index_part("ct-0042"))]}

    # a part left with nothing is deleted: a fleet of 100 cluster types, less the one alone in its part
    small = _fleet_state(100)
    small.to_bytes()
    names = [*(f"ct-{i:04d}" for i in range(100)), *(f"cm-ct-{i:04d}" for i in range(100)), "w"]
    alone = next(n for n in names if n.startswith("ct-")
                 and [index_part(m) for m in names].count(index_part(n)) == 1)
    stored = {p: d for p, d in small.part_files().items() if d is not None}
    before = RenderState.from_bytes(small.to_bytes(), CountingFiles(stored))
    without = _fleet_state(100)
    assert without.fingerprints is not None and without.fingerprints.reporters is not None
    without.clusters = [c for c in without.clusters if c.cluster_type != alone]
    del without.fingerprints.cluster_types[alone], without.fingerprints.reporters[alone]
    del without.assignments.shards[alone]
    without.to_bytes()
    assert without.part_files(before) == {part_path(index_part(alone)): None}


def _read_back(state: RenderState) -> RenderState:
    """``state`` written (index and parts) and read again, as a schedule reads the GitOps branch's."""
    index = state.to_bytes()
    files = {**state.part_files(), **state.shard_files()}
    return RenderState.from_bytes(index, CountingFiles({p: d for p, d in files.items() if d is not None}))


def _edit_at_random(state: RenderState, rng: random.Random) -> str:
    """One change of the kind a render makes to the state's index entries: a fingerprint, a ConfigMap's keys, a
    cluster's status context, a shard's ids, a cluster type added or removed (with everything of it). What it did."""
    fps = state.fingerprints
    assert fps is not None and fps.reporters is not None
    names = sorted(fps.cluster_types)
    ct = rng.choice(names)
    kind = rng.randrange(8)
    if kind == 0:
        fps.cluster_types[ct] = f"f{rng.random()}"
    elif kind == 1:
        fps.config_maps[f"cm-{ct}"] = ("f", {"ct": ct, "tier": "edge"})
    elif kind == 2:
        state.config_keys[f"cm-{ct}"] = {"K": "h2", "NEW": "n"}
    elif kind == 3:
        state.clusters = [ExpectedCluster(c.name, c.cluster_type, None if c.cluster_type == ct else c.status_context)
                          for c in state.clusters]
    elif kind == 4:
        state.assignments.shards[ct] = Shard(ct, {f"{ct}/w": AssignmentState("i", "c", ("x.yaml",)),
                                                 f"{ct}/v": AssignmentState("i", "c", ())})
    elif kind == 5:
        fps.reporters[ct] = f"r{rng.random()}"
    elif kind == 6:  # the cluster type goes, with all it had in the index
        del fps.cluster_types[ct], fps.reporters[ct], state.assignments.shards[ct]
        fps.config_maps.pop(f"cm-{ct}", None)
        state.config_keys.pop(f"cm-{ct}", None)
        state.clusters = [c for c in state.clusters if c.cluster_type != ct]
    else:  # one comes
        new = f"new-{rng.randrange(10_000):04d}"
        fps.cluster_types[new], fps.reporters[new] = "f", "r"
        state.assignments.shards[new] = Shard(new, {f"{new}/w": AssignmentState("i", "c", ("x.yaml",))})
        state.clusters = [*state.clusters, ExpectedCluster(f"cluster-{new}", new, f"flux/{new}")]
        return f"{new} added"
    return f"edit {kind} of {ct}"


@pytest.mark.parametrize("size", [40, 300])
def test_parts_taken_from_the_state_read_are_the_bytes_formatting_gives(size: int) -> None:
    """A render's state takes, from the state it started from (``base``), the bytes of every index part none of
    whose entries changed, and formats only the others: after any run of changes, its index and its part files are
    byte for byte those of the same state formatted whole (a fresh render's). Random runs of every kind of
    change, on an index in one part (40 cluster types) and in 256 (300)."""
    rng = random.Random(size)
    previous = _read_back(_fleet_state(size))
    for step in range(40):
        changed = _read_back_copy(previous, carry=True)
        done = [_edit_at_random(changed, rng) for _ in range(rng.randrange(1, 4))]
        changed.base = previous
        index, parts = changed.to_bytes(), changed.part_files(previous)  # before a copy reads the carried shards
        fresh = _read_back_copy(changed)
        assert index == fresh.to_bytes(), (step, done)
        assert parts == fresh.part_files(previous), (step, done)
        previous = _read_back(changed)


def _read_back_copy(state: RenderState, *, carry: bool = False) -> RenderState:
    """A state with the same entries as ``state`` and nothing made (no base, no parts): its shards new ones with the
    same entries (read), or (``carry``) ``state``'s own, unread, as a render carries the shards no change touches."""
    fps = state.fingerprints
    assert fps is not None
    shards = state.assignments.shards
    copied = dict(shards) if carry else {ct: Shard(ct, dict(shard.entries)) for ct, shard in shards.items()}
    return RenderState(
        environment=state.environment, main_commit=state.main_commit, engine=state.engine,
        assignments=Assignments(copied),
        config_keys={k: dict(v) for k, v in state.config_keys.items()},
        clusters=list(state.clusters),
        fingerprints=Fingerprints(schemas=fps.schemas, cluster_types=dict(fps.cluster_types),
                                  targets=dict(fps.targets), config_maps=dict(fps.config_maps),
                                  reporters=dict(fps.reporters or {})),
    )


def test_a_shard_edited_by_hand_gets_the_part_a_fresh_render_writes() -> None:
    """A shard whose file a person edited (other assignment ids than its index line's digest) is read when its
    cluster type is touched; its part is formatted again, never taken as read: the index then holds the digest of
    what the render writes, as a fresh render's does."""
    state = _fleet_state(300)
    index = state.to_bytes()
    files = {p: d for p, d in {**state.part_files(), **state.shard_files()}.items() if d is not None}
    edited = Shard("ct-0042", {"ct-0042/w": AssignmentState("i", "c", ("x.yaml",)),
                               "ct-0042/by-hand": AssignmentState("i", "c", ())})
    files[shard_path("ct-0042")] = edited.to_bytes()  # the index still has the digest of one id
    previous = RenderState.from_bytes(index, CountingFiles(files))
    assert previous.assignments["ct-0042/by-hand"].input_hash == "i"  # read: the shard is the file's now
    changed = _read_back_copy(previous)
    fresh = _read_back_copy(previous)
    changed.base = previous
    assert changed.to_bytes() == fresh.to_bytes()
    assert changed.part_files(previous) == fresh.part_files(previous) != {}


def test_a_change_formats_only_the_part_it_touches(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 2,000 cluster types (256 parts), a state that changed one cluster type's fingerprint formats one part;
    the other 255 are the bytes read. Without a base (a fresh render, ``--full``), or with one another engine
    wrote, every part is formatted."""
    formatted: list[str] = []
    to_bytes = incremental._Part.to_bytes

    def counting(self: Any, part: str, with_fingerprints: bool) -> bytes:
        formatted.append(part)
        return to_bytes(self, part, with_fingerprints)

    monkeypatch.setattr(incremental._Part, "to_bytes", counting)
    previous = _read_back(_fleet_state(2000))
    formatted.clear()
    changed = _read_back_copy(previous, carry=True)
    assert changed.fingerprints is not None
    changed.fingerprints.cluster_types["ct-0042"] = "g"
    changed.base = previous
    changed.to_bytes()
    assert formatted == [index_part("ct-0042")]
    assert list(changed.part_files(previous)) == [part_path(index_part("ct-0042"))]
    for base in (None, replace(previous, engine="fleetflow y")):
        formatted.clear()
        again = _read_back_copy(changed)
        again.base = base
        again.to_bytes()
        assert len(formatted) == 256


def test_a_state_under_an_output_folder_is_read_with_its_parts(tmp_path: Path) -> None:
    """A GitOpsRepo whose ``spec.path`` is a folder (``./apps/``): the GitOps commit's state, its parts and its
    shards are read under that folder, as the render wrote them there."""
    repos = GitRepos(tmp_path / "cache")
    url = str(tmp_path / "gitops.git")
    golden = tree_bytes(GOLDEN / "dev")
    commit = repos.commit_files(url, None, {f"apps/{p}": d for p, d in golden.items()}, "apps", when=1_700_000_000)
    assert commit is not None
    state = GitOpsTree(repos.mirror(url), commit, clean_root("./apps/")).read_state()
    assert state is not None and state.version == STATE_VERSION and len(state.clusters) == 5
    assert state.assignments["aks-westeurope/orders-api-dev"].files  # a shard, read under the folder
    assert GitOpsTree(repos.mirror(url), commit, "").read_state() is None  # nothing at the repo's root


def test_after_an_unreadable_state_the_parts_it_left_are_deleted_and_nothing_else(tmp_path: Path) -> None:
    """A state that cannot be read says nothing of its parts: a part file the new index does not name (here one of
    a larger fleet's, ``ab.json``) would stay for ever. The next write deletes the files named as fleetflow names
    parts and keeps any other file in that folder, on disk and in a GitOps commit alike."""
    seed = tmp_path / "seed"
    shutil.copytree(GOLDEN / "dev", seed)
    (seed / STATE_PATH).write_text("{ not json")
    (seed / PART_DIR / "ab.json").write_text("{}\n")
    (seed / PART_DIR / "notes.txt").write_text("kept\n")
    want = {**tree_bytes(GOLDEN / "dev"), f"{PART_DIR}/notes.txt": b"kept\n"}

    out = tmp_path / "out"
    shutil.copytree(seed, out)
    render_example(out)
    assert tree_bytes(out) == want

    repos = GitRepos(tmp_path / "cache")
    url = str(tmp_path / "gitops.git")
    old = repos.commit_files(url, None, tree_bytes(seed), "an unreadable state", when=1_700_000_000)
    assert old is not None
    tree = GitOpsTree(repos.mirror(url), old, "")
    assert tree.read_state() is None
    result = render_environment(load(EXAMPLE / "main", EXAMPLE / "envs" / "dev"), "dev", previous=None, meta=PIN)
    written = write_commit(tree, result, None, "rewrite", repos.identity, 1_700_000_001)
    assert written.commit is not None
    repo = repos.mirror(url)
    entries = repo.ls_tree(written.commit, recursive=True, trees=False)
    blobs = repo.blobs(e.sha for e in entries)
    assert {e.path: blobs[e.sha] for e in entries} == want


def test_part_file_names() -> None:
    assert is_part_file(part_path("all")) and is_part_file(part_path("0f")) and is_part_file(part_path(index_part("x")))
    for other in (f"{PART_DIR}/notes.txt", f"{PART_DIR}/0F.json", f"{PART_DIR}/abc.json", f"{PART_DIR}/x/ab.json",
                  ".fleetflow/state/ab.json", "ab.json"):
        assert not is_part_file(other), other


@pytest.mark.parametrize(("edit", "layout"), [
    ({"content": True}, "json"), ({"files": ["namespace.yaml", 1]}, "json"), ({"input": None}, "json"),
    ({"files": None}, "json"), ({"content": True}, "line"), ({"files": [["namespace.yaml"]]}, "line"),
])
def test_a_shard_entry_of_the_wrong_type_makes_the_shard_unreadable_not_a_crash(
        tmp_path: Path, edit: dict[str, object], layout: str) -> None:
    """A shard whose entry holds something other than text where hashes and file names go (a hand edit, a bad
    merge) was read as it was and crashed the render when the shard was written back (TypeError in
    ``_assignment_line``), whether the file kept fleetflow's one-line-per-assignment layout or was JSON laid out
    otherwise. Now the shard is unreadable: its cluster type is rendered again and the shard rewritten, and the
    tree is what a render into an empty folder gives, except the files of the assignment that went: the shard that
    listed them does not read, so fleetflow cannot tell them from someone else's and leaves them (as for a missing
    shard, above), and a warning says so, naming the shard. Found by a search that edits the state at random,
    then renders the example without one workload (its aks-westeurope assignment goes, so the shard is read):
    the test below."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    shard = out / shard_path("aks-westeurope")
    data = json.loads(shard.read_bytes())
    data["assignments"]["aks-westeurope/orders-api-dev"].update(edit)
    if layout == "json":
        shard.write_text(json.dumps(data, indent=2))
    else:  # fleetflow's layout, one line per assignment, with the edited value in it
        text = shard.read_text()
        line = next(x for x in text.splitlines() if "orders-api-dev" in x)
        entry = data["assignments"]["aks-westeurope/orders-api-dev"]
        shard.write_text(text.replace(line, '    "aks-westeurope/orders-api-dev": ' + json.dumps(
            entry, sort_keys=True, separators=(", ", ": "))))
    main = tmp_path / "main"
    shutil.copytree(EXAMPLE / "main", main)
    (main / "workloads" / "observability.yaml").unlink()
    args = ["render", "--main", main, "--env", EXAMPLE / "envs" / "dev", "--environment", "dev",
            "--main-commit", "0" * 40, "--env-commit", "1" * 40, "--output"]
    result = run_cli(*args, out)
    assert result.exit_code == 0, result.output
    assert ("warning: .fleetflow/state/aks-westeurope.json: the state of cluster type aks-westeurope does not read "
            "(assignment aks-westeurope/orders-api-dev: ") in result.output
    assert run_cli(*args, tmp_path / "fresh").exit_code == 0
    files, fresh = tree_bytes(out), tree_bytes(tmp_path / "fresh")
    left = sorted(set(files) - set(fresh))
    assert left == [f"aks-westeurope/observability-dev/{name}"
                    for name in ("namespace.yaml", "platform-config.yaml", "reconciler.yaml")]
    assert {path: files[path] for path in fresh} == fresh



@pytest.mark.parametrize(("edit", "reason"), [
    ("file ../../README.md",
     "assignment aks-westeurope/orders-api-dev lists the file '../../README.md', which is not a name of a file in its "
     "folder"),
    ("file ..", "assignment aks-westeurope/orders-api-dev lists the file '..', which is not a name of a file in its "
     "folder"),
    ("id aks-westeurope/../..", "it lists 'aks-westeurope/../..', which is not an assignment of cluster type "
     "aks-westeurope"),
    ("id eks-apsoutheast/orders-api-dev", "it lists 'eks-apsoutheast/orders-api-dev', which is not an assignment of "
     "cluster type aks-westeurope"),
    ("id aks-westeurope/", "it lists 'aks-westeurope/', which is not an assignment of cluster type aks-westeurope"),
])
@pytest.mark.parametrize("layout", ["line", "json"])
def test_a_shard_entry_fleetflow_never_writes_makes_the_shard_unreadable_and_is_named(
        tmp_path: Path, edit: str, reason: str, layout: str) -> None:
    """A state shard edited by hand to list a file outside its assignment's folder, or an assignment id outside its
    cluster type (``aks-westeurope/../..``, another cluster type's): fleetflow writes neither. Until 2026-11-29 the
    first was taken without a word, the second stopped ``render`` with "refusing to write outside the output
    directory" (``schedule`` with git's "relative path syntax can't be used outside working tree",
    tests/test_gitops_hand_edits.py) or listed another cluster type's assignment as removed. Now the shard does not
    read, as any shard not as fleetflow writes it (above): a warning names the shard file and the entry, the cluster
    type is rendered again and the shard rewritten; nothing outside the output folder is looked at."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "dev", out)
    shard = out / shard_path("aks-westeurope")
    data = json.loads(shard.read_bytes())
    entries = data["assignments"]
    kind, _, value = edit.partition(" ")
    if kind == "file":
        entries["aks-westeurope/orders-api-dev"]["files"].insert(0, value)
    else:
        entries[value] = dict(entries["aks-westeurope/orders-api-dev"])
    if layout == "json":
        shard.write_text(json.dumps(data, indent=2))
    else:  # fleetflow's layout, one line per assignment
        lines = ",\n".join(f"    {json.dumps(aid)}: " + json.dumps(e, sort_keys=True, separators=(", ", ": "))
                           for aid, e in sorted(entries.items()))
        head = shard.read_text().split('\n  "assignments": {\n')[0]
        shard.write_text(f'{head}\n  "assignments": {{\n{lines}\n  }}\n}}\n')
    main = tmp_path / "main"
    shutil.copytree(EXAMPLE / "main", main)
    (main / "workloads" / "observability.yaml").unlink()  # its aks-westeurope assignment goes: the shard is read
    args = ["render", "--main", main, "--env", EXAMPLE / "envs" / "dev", "--environment", "dev",
            "--main-commit", "0" * 40, "--env-commit", "1" * 40, "--output"]
    result = run_cli(*args, out)
    assert result.exit_code == 0, result.output
    assert (f"warning: .fleetflow/state/aks-westeurope.json: the state of cluster type aks-westeurope does not read "
            f"({reason}): its assignments were rendered again") in result.output
    assert "eks-apsoutheast/orders-api-dev\n" not in result.output.split("removed")[-1]  # not said removed
    assert run_cli(*args, tmp_path / "fresh").exit_code == 0
    files, fresh = tree_bytes(out), tree_bytes(tmp_path / "fresh")
    assert {path: files[path] for path in fresh} == fresh  # the shard rewritten as a fresh render writes it
    names = ("namespace.yaml", "platform-config.yaml", "reconciler.yaml")  # the files of the assignment that went
    assert sorted(set(files) - set(fresh)) == [f"aks-westeurope/observability-dev/{name}" for name in names]


# --- the state edited at random -------------------------------------------------------------------------------

# how many edited states the test below renders from (about 40 ms each); a search runs more, e.g.
# FLEETFLOW_STATE_EDITS=5000 (read on import: tests/conftest.py unsets every FLEETFLOW_* around each test)
STATE_EDITS = int(os.environ.get("FLEETFLOW_STATE_EDITS", "400"))  # 300-400 find the crash above
WRONG = [None, 0, "", "x", [], {}, ["a"], {"a": 1}, True, "0" * 32]


def _edited(path: Path, rng: random.Random) -> None:
    """``path`` (a state file) deleted, cut short, edited as text or as JSON: what a hand edit or a bad merge does."""
    text = path.read_text()
    how = rng.randrange(5)
    if how == 0:
        path.unlink()
    elif how == 1:
        path.write_text(text[:rng.randrange(len(text))])
    elif how == 2:
        at = rng.randrange(len(text))
        path.write_text(text[:at] + rng.choice(["1", "true", '"', ", ", "[", "]", '\\"', '"x", ', "../", "null", ""])
                        + text[at + rng.randrange(3):])
    else:
        data = json.loads(text)
        spots: list[tuple[Any, str | int]] = []

        def walk(node: Any) -> None:
            for key, value in (node.items() if isinstance(node, dict) else enumerate(node)):
                spots.append((node, key))
                if isinstance(value, dict | list):
                    walk(value)

        walk(data)
        parent, key = rng.choice(spots)
        if how == 3:
            del parent[key]
        else:
            parent[key] = rng.choice(WRONG)
        path.write_text(json.dumps(data, indent=2) if rng.random() < 0.5 else json.dumps(data))


def test_a_state_edited_at_random_never_crashes_and_never_costs_a_rendered_file(tmp_path: Path) -> None:
    """A differential search (seeded, so a failure repeats): the example's dev state, one of its files edited at
    random (deleted, cut short, a character or a JSON value changed), rendered again with no change, with a
    ConfigMap value changed, or without one workload (so that shards are read and written back). Each render
    succeeds, and its files and index are those of a render into an empty folder; the one difference allowed is
    files left behind by assignments that went while the state that listed them did not read (fleetflow cannot
    tell them from someone else's). It found shards whose entries were not text crashing the render (above)."""
    rng = random.Random(0)
    main, env = tmp_path / "main", tmp_path / "env"
    shutil.copytree(EXAMPLE / "main", main)
    shutil.copytree(EXAMPLE / "envs" / "dev", env)
    workloads = sorted(p.name for p in (main / "workloads").glob("*.yaml"))
    fresh: dict[str, dict[str, bytes]] = {}

    def render(out: Path, variant: str) -> Any:
        main_dir, env_dir = main, env
        if variant != "same":
            main_dir, env_dir = tmp_path / f"main-{variant}", tmp_path / f"env-{variant}"
            if not main_dir.exists():
                shutil.copytree(main, main_dir)
                shutil.copytree(env, env_dir)
                if variant == "value":
                    configs = env_dir / "configs" / "environment.yaml"
                    configs.write_text(configs.read_text().replace("LOG_LEVEL: debug", "LOG_LEVEL: info"))
                else:
                    (main_dir / "workloads" / variant).unlink()
        return run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out,
                       "--main-commit", "0" * 40, "--env-commit", "1" * 40)

    def state_less(files: dict[str, bytes]) -> dict[str, bytes]:
        return {path: data for path, data in files.items() if not path.startswith(f"{SHARD_DIR}/")}

    for n in range(STATE_EDITS):
        out = tmp_path / f"out{n}"
        shutil.copytree(GOLDEN / "dev", out)
        _edited(rng.choice(sorted(p for p in (out / ".fleetflow").rglob("*") if p.is_file())), rng)
        variant = rng.choice(["same", "value", *workloads])
        if variant not in fresh:
            assert render(tmp_path / f"fresh-{variant}", variant).exit_code == 0
            fresh[variant] = tree_bytes(tmp_path / f"fresh-{variant}")
        result = render(out, variant)
        assert result.exit_code == 0, (n, result.output)
        files, expected = state_less(tree_bytes(out)), state_less(fresh[variant])
        left = set(files) - set(expected)
        went = variant.removesuffix(".yaml")
        assert all(path.split("/")[1].startswith(f"{went}-") for path in left), (n, sorted(left))
        assert {path: files[path] for path in expected} == expected, n
        shutil.rmtree(out)
