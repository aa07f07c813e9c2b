"""Unified diffs between two file sets (path -> bytes), and the one diff of a render against the output tree it
changes (:func:`plan_diff`), shown by ``plan`` (a folder) and in the PR body of ``schedule`` (a commit's tree)."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from fleetflow.render.incremental import PART_DIR, SHARD_DIR, STATE_PATH, RenderState, is_state_file
from fleetflow.render.ownership import Ownership, status_folders
from fleetflow.render.pipeline import RenderResult


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def unified_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> str:
    """A ``git diff``-like text of every path that differs, in :func:`review_order`."""
    return "".join(file_diff(path, old.get(path), new.get(path)) for path in review_order(set(old) | set(new)))


def review_order(paths: Iterable[str], root: str = "") -> list[str]:
    """``paths`` in the order a diff shows them: the rendered files in path order, then the state (the index, its
    parts, then its shards). Path order alone put ``.fleetflow/`` first, so a reviewer read machine state before
    the manifests, and a diff cut at the PR body's limit spent it on the index (half a megabyte at 1,000 cluster
    types, before it had parts) while the manifests were left out. ``root``: the output root the paths start
    with, if any."""
    skip = len(root) + 1 if root else 0

    def key(path: str) -> tuple[bool, bool, bool, str]:
        relative = path[skip:]
        return is_state_file(relative), relative != STATE_PATH, relative.startswith(f"{SHARD_DIR}/"), path

    return sorted(paths, key=key)


def file_diff(path: str, a: bytes | None, b: bytes | None) -> str:
    """The unified diff of one file (None: absent on that side); empty when both sides are equal."""
    if a == b:
        return ""
    diff = difflib.unified_diff(
        _lines(a),
        _lines(b),
        fromfile=f"a/{path}" if a is not None else "/dev/null",
        tofile=f"b/{path}" if b is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)


class PreviousTree(Protocol):
    """An output tree as it was before a render, read only where a diff needs it: a folder
    (:class:`fleetflow.render.output.FolderTree`) or the tree of a GitOps commit
    (:class:`fleetflow.promotion.gitops.GitOpsTree`)."""

    @property
    def state_bytes(self) -> bytes | None:
        """The bytes of the state file (None: there is none)."""
        ...

    def files(self, folders: list[str]) -> dict[str, str]:
        """Every file under ``folders``: path relative to the output root -> a key :meth:`blobs` reads."""
        ...

    def blobs(self, keys: Iterable[str]) -> Mapping[str, bytes]:
        """The bytes behind each key (a key whose file cannot be read is left out)."""
        ...


def git_blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The id git gives a blob of ``data`` in a repository of ``object_format`` (``sha1``, or ``sha256``)."""
    digest = hashlib.sha1 if object_format == "sha1" else hashlib.sha256
    return digest(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


BATCH = 256  # old files read at a time, so that a diff cut at ``limit`` reads little more than it shows


def diff_chunks(previous: PreviousTree, result: RenderResult, owned: Ownership,
                state: RenderState | None = None, index: bytes | None = None) -> Iterator[str]:
    """The unified diff of what the render changes in ``previous`` (whose state is ``state``), one file at a time
    in :func:`review_order` (the rendered files, then the state): the files of every rendered assignment and
    status folder, every file fleetflow wrote that goes (``owned.delete``), the state index, its parts and the shards
    that change. Foreign files (``owned.foreign``) are not shown: the render keeps them. Old files are read (in
    batches) only as far as the caller iterates. ``index``: the new state index's bytes, when the caller has made
    them already."""
    shown = {*result.rendered,
             *status_folders(state, result.state, result.reporters, result.kept_reporters, result.removed)}
    doomed, foreign = set(owned.delete), set(owned.foreign)
    listed = previous.files(sorted(shown | set(result.removed) | {p.rpartition("/")[0] for p in doomed}))
    old = {
        path: key for path, key in listed.items()
        if path in doomed or (path not in foreign and path.rpartition("/")[0] in shown)
    }
    new: dict[str, bytes] = {**result.files, **result.reporters,
                             STATE_PATH: result.state.to_bytes() if index is None else index}
    state_files = previous.files([SHARD_DIR, PART_DIR])
    changed_state = {**result.state.shard_files(state), **result.state.part_files(state, state_files)}
    if changed_state:
        new.update((path, data) for path, data in changed_state.items() if data is not None)
        old.update((path, key) for path, key in state_files.items() if path in changed_state)
    old_state = previous.state_bytes
    # a file whose key is the git blob id of its new bytes (a GitOps tree's keys are) has not changed: no diff,
    # never read (nor fetched, from a blobless mirror)
    same = {path for path, key in old.items() if path in new and key == git_blob_id(new[path])}
    paths = review_order((set(old) | set(new) | ({STATE_PATH} if old_state is not None else set())) - same)
    for start in range(0, len(paths), BATCH):
        batch = paths[start:start + BATCH]
        blobs = previous.blobs(old[p] for p in batch if p in old)
        for path in batch:
            before = old_state if path == STATE_PATH else (blobs.get(old[path]) if path in old else None)
            text = file_diff(path, before, new.get(path))
            if text:
                yield text


def plan_diff(previous: PreviousTree, result: RenderResult, owned: Ownership, limit: int | None = None,
              state: RenderState | None = None) -> str:
    """:func:`diff_chunks` joined. With ``limit``, stops after the file that passes ``limit`` characters: old
    files are read only up to there."""
    chunks: list[str] = []
    size = 0
    for text in diff_chunks(previous, result, owned, state):
        chunks.append(text)
        size += len(text)
        if limit is not None and size > limit:
            break
    return "".join(chunks)
