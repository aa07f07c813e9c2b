"""The GitOps commit: a render applied to the previous commit's tree as git objects, never through a folder.

:func:`write_commit` gives the commit whose tree is what :func:`fleetflow.render.output.apply_result` would leave in
a checkout of the previous commit (the same bytes as ``fleetflow render``), built from the previous commit's tree
plus the rendered changes only: each rendered assignment folder is replaced by exactly its files, folders of
removed assignments go, each cluster type's ``_status/`` folder holds exactly its reporter files, and the state
index and the state shards that changed are rewritten. Everything else (other cluster types, their state shards,
files fleetflow did not write) keeps its id. :class:`GitOpsTree` reads what the render needs from the previous
commit: the state index, the shards of the cluster types the render touches, and old files only where a diff
shows them (:func:`fleetflow.render.diff.plan_diff`, the same diff ``plan`` shows, stops at a size
limit).

The tool is ``git fast-import`` (see :meth:`fleetflow.forge.git.BareRepo.fast_commit`): one process, inline blobs,
only the trees along changed paths loaded and rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from fleetflow.errors import InputError, Location, Problem, Problems, UsageError
from fleetflow.forge.git import SYMLINK_MODE, BareRepo, TreeEdit, TreeEntry
from fleetflow.render.diff import git_blob_id
from fleetflow.render.incremental import PART_DIR, SHARD_DIR, STATE_PATH, NewerState, RenderState
from fleetflow.render.kustomization_files import KUSTOMIZATION_NAMES, unlisted_warnings, where_to_look
from fleetflow.render.ownership import (
    FOLDER,
    Ownership,
    examined_folders,
    ownership,
    refuse_in_the_way,
    status_folders,
)
from fleetflow.render.pipeline import RenderResult


def clean_root(path: str) -> str:
    """The output folder inside the repo, as a git path ("" for the root); refuses anything leaving the repo."""
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", ".", "/")]
    if path.startswith("/") or ".." in parts:
        raise UsageError(f"refusing to write outside the GitOps repo: {path!r} (use a path inside it)")
    return "/".join(parts)


@dataclass
class GitOpsTree:
    """The output folder ``root`` in the tree of ``commit`` (None: the branch does not exist yet)."""

    repo: BareRepo
    commit: str | None
    root: str
    state_bytes: bytes | None = field(default=None, init=False)
    unreadable: str | None = field(default=None, init=False)  # why the state did not read (read_state: None)
    _listed: dict[tuple[str, str], list[TreeEntry] | None] = field(default_factory=dict, init=False, repr=False)

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}" if self.root else relative

    def read_state(self) -> RenderState | None:
        """The previous state (None when absent or unreadable: then everything is rendered and the file rewritten,
        as ``read_state`` does for a folder)."""
        if self.commit is None:
            return None
        # one listing of the state's folders, then one read of the index and every part: the index names its
        # parts, so they are read in the same batch without waiting for it
        folder = STATE_PATH.rpartition("/")[0]
        listed = self.listings([folder, PART_DIR, SHARD_DIR])
        index = next((e.sha for e in listed[folder] or [] if e.path == STATE_PATH and e.kind == "blob"), None)
        if index is None:
            return None
        parts = {e.path: e.sha for e in listed[PART_DIR] or [] if e.kind == "blob"}
        data = self.blobs([index, *parts.values()])
        self.state_bytes = data[index]

        def read_files(paths: list[str]) -> dict[str, bytes | None]:  # the parts as read; anything else now
            found: dict[str, bytes | None] = {p: data[parts[p]] for p in paths if p in parts}
            rest = [p for p in paths if p not in found]
            return {**found, **self.read_files(rest)} if rest else found

        try:
            state = RenderState.from_bytes(self.state_bytes, read_files)
        except NewerState as exc:
            raise InputError(exc.problem(f"{self.path(STATE_PATH)} (GitOps commit {self.commit[:12]})")) from None
        except (ValueError, KeyError, TypeError) as exc:
            self.unreadable = str(exc)
            return None
        # a shard the index names must exist
        state.assignments.missing(e.path for e in listed[SHARD_DIR] or [] if e.kind == "blob")
        return state

    def read_files(self, paths: list[str]) -> dict[str, bytes | None]:
        """The bytes of ``paths`` (relative to the root; None: no such file), in one batch
        (:meth:`fleetflow.forge.git.BareRepo.read_files`)."""
        if self.commit is None or not paths:
            return dict.fromkeys(paths)
        found = self.repo.read_files(self.commit, [self.path(p) for p in paths])
        return {p: found[self.path(p)] for p in paths}

    def listings(self, folders: list[str]) -> dict[str, list[TreeEntry] | None]:
        """What lies directly in each of ``folders`` (relative to the root; None: no such folder), paths relative
        to the root: one read of the folders' trees, whatever else the tree holds
        (:meth:`fleetflow.forge.git.BareRepo.listings`), kept: the survey and the diff of one run list the same
        folders, and a commit's tree never changes."""
        if self.commit is None or not folders:
            return dict.fromkeys(folders)
        commit = self.commit
        unread = [f for f in dict.fromkeys(folders) if (commit, f) not in self._listed]
        if unread:
            found = self.repo.listings(commit, [self.path(f) for f in unread])
            for f in unread:
                entries = found[self.path(f)]
                self._listed[commit, f] = None if entries is None else [_relative(e, self.root) for e in entries]
        return {f: self._listed[commit, f] for f in folders}

    def files(self, folders: list[str]) -> dict[str, str]:
        """Every file under ``folders`` (relative to the root, at any depth): path relative to the root -> blob id.
        Reads the folders' own trees (and the trees below them), level by level (:meth:`listings`, kept): the cost
        is what the folders hold, not what the tree holds (a 1% change at 100k assignments lists ~2,000 small
        trees, not 300,000 entries)."""
        if self.commit is None or not folders:
            return {}
        listed: dict[str, str] = {}
        level = _outermost({f.strip("/") for f in folders if f.strip("/")})
        while level:
            found = self.listings(level)
            level = []
            for entries in found.values():
                for entry in entries or []:
                    if entry.kind == "blob":
                        listed[entry.path] = entry.sha
                    elif entry.kind == "tree":
                        level.append(entry.path)
            if any("\n" in f for f in level):  # a folder name cat-file's batch cannot ask for: ls-tree reads it
                odd = [f for f in level if "\n" in f]
                level = [f for f in level if "\n" not in f]
                listed.update(self._walk(odd))
        return listed

    def _walk(self, folders: list[str]) -> dict[str, str]:
        found = self.repo.ls_tree(self.commit or "", [self.path(f) + "/" for f in folders], recursive=True,
                                  trees=False)
        return {e.path: e.sha for e in (_relative(x, self.root) for x in found) if e.kind == "blob"}

    def blobs(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The blobs of ``keys`` (blob ids from :meth:`files`)."""
        return self.repo.blobs(keys)


def unreadable_state(tree: GitOpsTree) -> list[Problem]:
    """The warning for a state on the GitOps branch that did not read (:meth:`GitOpsTree.read_state` gave None for
    it): a schedule then renders everything again and rewrites the state, and its PR lists every assignment as
    added. Until 2026-11-28 the schedule said nothing of it (``render`` on a folder warns the same)."""
    if tree.unreadable is None:
        return []
    return [Problem(f"the previous state on the GitOps branch is unreadable ({tree.unreadable}): every assignment "
                    "was rendered again, and the PR lists each as added",
                    Location(tree.path(STATE_PATH)),
                    "this commit rewrites the state; the files themselves change only where the render differs")]


@dataclass(frozen=True)
class HandEdits:
    """Files fleetflow wrote that a commit after its own changed or deleted on the GitOps branch."""

    since: str | None = None  # the newest commit on the branch that wrote the state index (fleetflow's)
    paths: list[str] = field(default_factory=list)  # relative to the output root, sorted
    assignments: list[str] = field(default_factory=list)  # whose files they are
    reporters: list[str] = field(default_factory=list)  # cluster types whose ``_status/`` folder has one

    def put_back(self, changed: Iterable[str]) -> list[str]:
        """The hand-edited paths a commit that changed ``changed`` (relative to the root) puts back."""
        return sorted(set(self.paths).intersection(changed))

    def warning(self, tree: GitOpsTree, put_back: list[str]) -> list[Problem]:
        """The run's warning for the files its commit puts back (:meth:`put_back`)."""
        if not put_back:
            return []
        shown = ", ".join(put_back[:5]) + (f" and {len(put_back) - 5} more" if len(put_back) > 5 else "")
        count = f"{len(put_back)} file{'s' if len(put_back) != 1 else ''}"
        return [Problem(f"{count} fleetflow wrote changed on the GitOps branch after its commit "
                        f"{(self.since or '')[:12]} ({shown}): rendered again, this commit puts back what fleetflow "
                        "renders", Location(tree.path(put_back[0])),
                        "a change made on the GitOps branch is undone by the next schedule; make it in the control "
                        "plane (main or the environment branch) to keep it")]


def hand_edits(tree: GitOpsTree, previous: RenderState | None) -> HandEdits:
    """The files fleetflow wrote (the state ``previous`` lists them) that differ between the newest commit of the
    branch that wrote the state index (``git log -1 -- <root>/.fleetflow/state.json``: fleetflow's own commit,
    the squash or rebase of it, or the head of a PR merged with a merge commit, which git's history
    simplification follows) and the branch tip: a hot-fix, a deleted file or folder, an edit a person pushed on
    the PR's head before merging it. Until 2026-11-29 a render trusted them while their inputs did not change:
    the next promotion proposed "0 changed" and the clusters went on applying the edit, or nothing (a deleted
    cluster-type folder), and reported success. Costs one ``git log`` that stops at the first commit found and a
    diff of the trees between it and the tip (unchanged subtrees are skipped by id): what changed since, not the
    fleet. The state's files are not compared."""
    if tree.commit is None or previous is None:
        return HandEdits()
    wrote = tree.repo.log(tree.commit, tree.path(STATE_PATH), limit=1)
    if not wrote or wrote[0] == tree.commit:
        return HandEdits(wrote[0] if wrote else None)
    prefix = f"{tree.root}/" if tree.root else ""
    changed = (full[len(prefix):] for full in tree.repo.changed_paths(wrote[0], tree.commit) if full.startswith(prefix))
    return HandEdits(wrote[0], *previous.written_among(changed))


def _outermost(folders: set[str]) -> list[str]:
    """``folders`` without those inside another of them (its listing already holds them), sorted."""
    return sorted(f for f in folders if not any(p in folders for p in _parents(f)))


def _parents(path: str) -> Iterator[str]:
    folder = path.rpartition("/")[0]
    while folder:
        yield folder
        folder = folder.rpartition("/")[0]


def _relative(entry: TreeEntry, root: str) -> TreeEntry:
    return TreeEntry(entry.mode, entry.kind, entry.sha, entry.path[len(root) + 1:] if root else entry.path)


def survey(tree: GitOpsTree, result: RenderResult, previous: RenderState | None) -> Ownership:
    """Which files of ``tree`` the render deletes and which are foreign: the rule ``render`` follows on disk
    (:func:`fleetflow.render.ownership.ownership`, :func:`fleetflow.render.output.survey`)."""
    folders = examined_folders(previous, result.state, result.rendered, result.reporters,
                               kept_reporters=result.kept_reporters)
    return ownership(previous, result.state, result.reporters, tree.files(sorted(folders)), result.kept_reporters)


def tree_edits(
    tree: GitOpsTree, result: RenderResult, owned: Ownership, state: bytes | None = None,
    previous: RenderState | None = None,
) -> Iterator[TreeEdit]:
    """The edits that make ``tree``'s output folder hold what ``apply_result`` would write there (``state``: the
    new state's bytes, when already made; ``previous``: the state read from ``tree``, so that only the state shards
    that differ are written). Only files fleetflow wrote are deleted (``owned.delete``, from
    :func:`survey`); every other file in a cluster-type folder is kept."""
    for path in owned.delete:
        yield TreeEdit(tree.path(path))
    for path, data in sorted(result.files.items()):
        yield TreeEdit(tree.path(path), data)
    for path, data in sorted(result.reporters.items()):
        yield TreeEdit(tree.path(path), data)
    state = result.state.to_bytes() if state is None else state  # makes the parts too (part_files)
    for path, shard in result.state.shard_files(previous).items():
        yield TreeEdit(tree.path(path), shard)
    for path, part in result.state.part_files(previous, tree.files([PART_DIR])).items():
        yield TreeEdit(tree.path(path), part)
    if state != tree.state_bytes:
        yield TreeEdit(tree.path(STATE_PATH), state)


@dataclass(frozen=True)
class WrittenCommit:
    commit: str | None  # None: the tree would not change
    changed: list[str]  # paths (relative to the output folder) that differ from the previous commit
    owned: Ownership = field(default_factory=Ownership)  # what the commit deleted, and the foreign files it kept
    index: bytes | None = None  # the state index the render gives (made once: the diff shows it too)


def write_commit(tree: GitOpsTree, result: RenderResult, previous: RenderState | None, message: str,
                 identity: tuple[str, str], when: int) -> WrittenCommit:
    """Commit the render on top of ``tree.commit`` (nothing is pushed). Call ``tree.read_state()`` first."""
    state = result.state.to_bytes()
    if _nothing_to_write(tree, result, previous, state):
        return WrittenCommit(None, [], index=state)
    owned = survey(tree, result, previous)
    in_the_way(tree, [*result.files, *result.reporters], owned)
    written = commit_edits(tree, tree_edits(tree, result, owned, state, previous), message, identity, when, owned)
    return replace(written, index=state)


def in_the_way(tree: GitOpsTree, paths: Iterable[str], owned: Ownership) -> None:
    """:func:`fleetflow.render.ownership.refuse_in_the_way` on the GitOps branch (git keeps one entry per name: until
    2026-11-28 a file named like a cluster type was deleted by the next schedule; a bad-input hunt found it). Reads
    the listings of the folders above (the output root, and the cluster-type folders the survey listed already)."""

    def standing(asked: list[str]) -> dict[str, str]:
        listed = tree.listings(sorted({p.rpartition("/")[0] for p in asked}))
        return {e.path: FOLDER if e.kind == "tree" else "a symbolic link" if e.mode == SYMLINK_MODE
                else "a submodule" if e.kind == "commit" else "a file"
                for entries in listed.values() for e in entries or []}

    refuse_in_the_way(paths, standing, owned, tree.path, "(on the GitOps branch)")


def kustomization_warnings(tree: GitOpsTree, result: RenderResult, owned: Ownership) -> Problems:
    """``render``'s warning (:func:`fleetflow.render.output.kustomization_warnings`) on the GitOps branch: each
    kustomization file a person committed at the output root, in a cluster-type folder the render writes into, or
    in an assignment's or status folder (a foreign file the survey found) that leaves out files the render writes
    below it. Until 2026-11-29 a schedule did not look: the commit went out, Flux and Argo CD applied the files
    the hand-written file lists, and the gate passed on a commit whose new assignment no cluster applied. The files
    fleetflow writes never include a kustomization file, so ``tree.commit`` holds the same ones as the commit the
    render makes. Cost: one listing of the root and of the cluster-type folders written into
    (:meth:`GitOpsTree.listings`, kept: the survey lists some of them already), and one batch read of the
    kustomization files that stand there; no blob is read where none stands. A symbolic link is left aside (its
    blob is the link's target, not a file)."""
    written = [*result.files, *result.reporters]
    folders, deeper = where_to_look(written, owned.foreign)
    if tree.commit is None or not written:
        return Problems()
    listed = tree.listings(folders)
    found = [entry.path for folder in folders for entry in listed[folder] or []
             if entry.kind == "blob" and entry.mode != SYMLINK_MODE
             and entry.path.rpartition("/")[2] in KUSTOMIZATION_NAMES]
    texts = {path: data for path, data in tree.read_files(sorted({*found, *deeper})).items() if data is not None}
    return unlisted_warnings(texts, written, lambda path: Location(tree.path(path)))


def commit_edits(tree: GitOpsTree, edits: Iterable[TreeEdit], message: str, identity: tuple[str, str], when: int,
                 owned: Ownership | None = None) -> WrittenCommit:
    """Commit ``edits`` on top of ``tree.commit`` (nothing is pushed); no commit when the tree stays the same.
    ``owned``: what the edits delete and keep, for the caller (:func:`write_commit`)."""
    owned = owned if owned is not None else Ownership()
    commit = tree.repo.fast_commit(tree.commit, edits, message, identity, when)
    new_tree = tree.repo.tree_of(commit)
    old_tree = tree.repo.tree_of(tree.commit) if tree.commit else None
    if old_tree == new_tree:
        return WrittenCommit(None, [], owned)
    changed = tree.repo.changed_paths(old_tree, new_tree)
    prefix = f"{tree.root}/" if tree.root else ""
    return WrittenCommit(commit, [p[len(prefix):] for p in changed if p.startswith(prefix)], owned)


def _nothing_to_write(tree: GitOpsTree, result: RenderResult, previous: RenderState | None, state: bytes) -> bool:
    """True when the render would leave the tree as it is: nothing rendered or removed, the same state bytes, and
    every ``_status/`` folder the render decides (not ``kept_reporters``) already holding exactly the reporter
    files (compared by blob id, without reading; only the ``_status/`` trees are read, not the cluster-type folders
    around them: :meth:`GitOpsTree.files`)."""
    if tree.commit is None or previous is None or result.rendered or result.removed:
        return False
    if state != tree.state_bytes or result.state.shard_files(previous):
        return False
    have = tree.files(sorted(status_folders(previous, result.state, result.reporters, result.kept_reporters)))
    return have == {path: git_blob_id(data) for path, data in result.reporters.items()}
