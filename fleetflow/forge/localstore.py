"""Storage of the local forge: JSON files in the tree of one ref of a git repository, and merges done with git.

Pull requests, commit statuses and dispatched events live under ``refs/fleetflow/forge`` in the repository itself,
so every clone sees them. A :class:`Mirror` is a bare copy of one repository in the cache. It fetches that ref (and
the branches), builds a new commit with plumbing only (``hash-object -w``, ``mktree``, ``commit-tree``: no index, no
work tree) and pushes it with ``--force-with-lease`` against the commit it read. When another writer got there first
the push is rejected, and the edit is applied again to the fresh state (a bounded number of times).

Only fleetflow's own values reach a git command line as options: commit ids, ref names built from validated branch
names, and paths of its own folders. User text (titles, bodies, descriptions) travels inside blobs and messages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from fleetflow.collector import paused
from fleetflow.errors import ForgeError, ForgeRequest, GitError
from fleetflow.forge.git import BareRepo, MergeConflict, PushRejected, TreeEdit, retry_races

STORE_REF = "refs/fleetflow/forge"
_MIRROR_PREFIX = "refs/mirror/"
_MIRROR_STORE = "refs/mirror/fleetflow/forge"
_MIRROR_HEADS = "refs/mirror/heads/"
_IDENTITY = ("fleetflow local forge", "local-forge@fleetflow.invalid")

R = TypeVar("R")


@dataclass
class Edit(Generic[R]):
    """What one write changes: files of the store (None deletes), other refs (ref -> (new, expected old; "" =
    must not exist)) pushed atomically with it, and the value handed back to the caller."""

    result: R
    files: Mapping[str, bytes | None] = field(default_factory=dict)
    refs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    message: str = "update"


def record_json(data: bytes, path: str) -> Any:
    """A record of the store as JSON; :class:`ForgeError` naming it when it does not read. The store is a ref of the
    repository (``refs/fleetflow/forge``) that any clone may push to: a record written by hand stopped the commands
    with json's ValueError or RecursionError until 2026-11-28 (a bad-input hunt)."""
    try:
        with paused():  # no collection down in the parse of a record nested thousands deep
            return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise bad_record(path, "it is not JSON" if isinstance(exc, ValueError) else "JSON nested too deeply") from None


def bad_record(path: str, why: str) -> ForgeError:
    return ForgeError(f"the local forge's record {path} does not read: {why} (the local forge alone writes "
                      f"{STORE_REF}; restore it from its history, or remove the record)")


def merged_posts(records: Sequence[Sequence[Mapping[str, Any]]]) -> list[Any]:
    """Several records of one thing (lists of posts, each oldest first, with an ISO ``created_at``) as one: every
    post once, oldest first. A record that copied another's posts and added its own (a post that moved them into
    the current layout) holds them in their true order: the longest record goes first, and the sort by time is
    stable, so posts of the same second keep its order."""
    seen: set[str] = set()
    every: list[Any] = []
    for posts in sorted(records, key=len, reverse=True):
        for post in posts:
            key = json.dumps(post, sort_keys=True)
            if key not in seen:
                seen.add(key)
                every.append(post)
    return sorted(every, key=lambda post: datetime.fromisoformat(post["created_at"]))


def dump_json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


@dataclass
class Snapshot:
    """The store at one commit (``None``: not created yet), and the branch tips of the repo when fetched.

    Read lazily: a file or a folder listing is read from git when asked for (and remembered), never the whole
    store, so reading one record costs the same however many records the store holds."""

    mirror: Mirror
    commit: str | None
    heads: Mapping[str, str]
    _files: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    _folders: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict, repr=False)

    def listing(self, folder: str) -> dict[str, tuple[str, str]]:
        """What lies directly in ``folder``: name -> (kind, sha)."""
        folder = folder.strip("/")
        if folder not in self._folders:
            found: dict[str, tuple[str, str]] = {}
            if self.commit is not None:
                for entry in self.mirror.repo.ls_tree(self.commit, [f"{folder}/"] if folder else []):
                    found[entry.path.rsplit("/", 1)[-1]] = (entry.kind, entry.sha)
            self._folders[folder] = found
        return self._folders[folder]

    def names(self, folder: str) -> list[str]:
        """File names directly in ``folder``."""
        return sorted(name for name, (kind, _) in self.listing(folder).items() if kind == "blob")

    def read(self, path: str) -> bytes | None:
        if path not in self._files:
            self._files[path] = None if self.commit is None else self.mirror.repo.read_file(self.commit, path)
        return self._files[path]

    def read_json(self, path: str) -> Any:
        data = self.read(path)
        return None if data is None else record_json(data, path)

    def read_all_json(self, folder: str, *, recursive: bool = False) -> list[Any]:
        """Every ``.json`` file in ``folder`` (and below it with ``recursive``), in path order."""
        if self.commit is None:
            return []
        if recursive:
            found = self.mirror.repo.ls_tree(self.commit, [f"{folder.strip('/')}/"], recursive=True, trees=False)
            files = [(e.path, e.sha) for e in sorted(found, key=lambda e: e.path)
                     if e.kind == "blob" and e.path.endswith(".json")]
        else:
            listing = self.listing(folder)
            files = [(f"{folder.strip('/')}/{name}", listing[name][1]) for name in self.names(folder)
                     if name.endswith(".json")]
        blobs = self.mirror.blobs([sha for _, sha in files])
        return [record_json(blobs[sha], path) for path, sha in files]


def _borrow_objects(folder: Path, url: str) -> None:
    """When the repository at ``url`` is a folder on this machine, let the mirror ``folder`` read its objects in
    place: its object store is listed in the mirror's ``objects/info/alternates`` ("paths to alternate object stores
    that this object store borrows objects from, one pathname per line", gitrepository-layout), what
    ``git clone --shared`` sets up. A fetch then finds every object already there and copies none: after a push of
    300,000 files, the forge's fetch of the new branch cost a second transfer of all of them (pack-objects and
    index-pack) before. git-clone's warning applies: objects the repository drops (unreachable there, then pruned
    by gc) can no longer be read through the mirror; the mirror is a cache of that repository's refs, fetched with
    ``--prune`` on every read, and its own objects (store commits, merges) are pushed there."""
    source = Path(url)
    if not source.is_absolute() or not source.is_dir():
        return
    objects = next((o for o in (source / "objects", source / ".git" / "objects") if o.is_dir()), None)
    if objects is None:
        return
    alternates = folder / "objects" / "info" / "alternates"
    line = f"{objects.resolve()}\n"
    if not alternates.is_file() or alternates.read_text(encoding="utf-8") != line:
        alternates.parent.mkdir(parents=True, exist_ok=True)
        fresh = alternates.with_name(f"alternates.{os.getpid()}")
        fresh.write_text(line, encoding="utf-8")
        os.replace(fresh, alternates)  # a reader sees the old file or the new one, never half of one


class Mirror:
    """A bare mirror of the repository at ``url`` in ``folder``: the store ref and the branches, read and written."""

    def __init__(self, url: str, folder: Path, clock: Callable[[], datetime], attempts: int = 10) -> None:
        self.url = url
        self.repo = BareRepo(folder)
        self.folder = self.repo.folder
        _borrow_objects(self.folder, url)
        self.clock = clock
        self.attempts = attempts

    # -- reading ------------------------------------------------------------------------------------------

    def fetch(self, heads: bool = False) -> Snapshot:
        """Fetch the store ref (and all branches when ``heads``) and return the store as fetched."""
        specs = ["+refs/fleetflow/*:refs/mirror/fleetflow/*"]
        if heads:
            specs.append(f"+refs/heads/*:{_MIRROR_HEADS}*")
        try:
            self.repo.fetch(self.url, specs, prune=True)
        except GitError as exc:
            raise ForgeError(f"cannot fetch from {self.url}: {exc.reason or exc}",
                             ForgeRequest("git fetch", self.url)) from None
        commit, tips = None, {}
        for ref, sha in self.repo.refs(_MIRROR_PREFIX).items():
            if ref == _MIRROR_STORE:
                commit = sha
            elif heads and ref.startswith(_MIRROR_HEADS):
                tips[ref[len(_MIRROR_HEADS):]] = sha
        return Snapshot(self, commit, tips)

    def blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Contents of blobs (cached: a blob id names its content)."""
        return self.repo.blobs(shas)

    def has_commit(self, sha: str) -> bool:
        return self.repo.has_commit(sha)

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.repo.is_ancestor(older, newer)

    # -- writing ------------------------------------------------------------------------------------------

    def update(self, change: Callable[[Snapshot], Edit[R]], heads: bool = False) -> tuple[R, bool]:
        """Apply ``change`` to the latest store and push the result with compare-and-swap; on a lost race, fetch
        and apply again (:func:`~fleetflow.forge.git.retry_races`). Returns the edit's result and whether anything
        was written.

        The new store commit is the old one's tree with the edited files only (one ``git fast-import``: the trees
        along the edited paths are rewritten, every other one keeps its id), so a write costs the same however many
        records the store holds."""

        def attempt() -> tuple[R, bool]:
            snap = self.fetch(heads)
            edit = change(snap)
            files = {path: data for path, data in edit.files.items() if snap.read(path) != data}
            if not files and not edit.refs:
                return edit.result, False
            updates = dict(edit.refs)
            if files:
                edits = [TreeEdit(path, data) for path, data in sorted(files.items())]
                new = self.repo.fast_commit(snap.commit, edits, f"fleetflow forge: {edit.message}", _IDENTITY,
                                               self._when())
                updates[STORE_REF] = (new, snap.commit or "")
            self._push(updates)
            return edit.result, True

        try:
            return retry_races(attempt, self.attempts)
        except PushRejected:
            raise ForgeError(f"gave up writing {STORE_REF} of {self.url} after {self.attempts} attempts: other "
                             "writers kept changing it", ForgeRequest("git push", self.url)) from None

    def _when(self) -> int:
        now = self.clock()
        return int((now if now.tzinfo else now.replace(tzinfo=UTC)).timestamp())

    def commit(self, tree: str, parents: Sequence[str], message: str) -> str:
        return self.repo.commit_tree(tree, parents, message, _IDENTITY, self._when())

    def _push(self, updates: Mapping[str, tuple[str, str]]) -> None:
        """Push ``ref -> (new, expected old)`` all or nothing; PushRejected when a writer got there first."""
        try:
            self.repo.push(self.url, updates)
        except PushRejected:
            raise  # a lost race: the caller fetches and applies again
        except GitError as exc:
            raise ForgeError(f"cannot push to {self.url}: {exc.reason or exc}",
                             ForgeRequest("git push", self.url)) from None

    # -- merging ------------------------------------------------------------------------------------------

    def merge(self, base: str, head: str, message: str) -> str:
        """A merge commit of ``head`` into ``base`` (always a new commit, like ``--no-ff``); MergeConflict when git
        cannot merge on its own. Nothing is pushed."""
        return self.commit(self.repo.merge_tree(base, head), [base, head], message)


__all__ = ["STORE_REF", "Edit", "MergeConflict", "Mirror", "Snapshot", "dump_json", "merged_posts"]
