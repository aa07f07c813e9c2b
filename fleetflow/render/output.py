"""The edge between a rendered result and a directory on disk (the GitOps output root).

``apply_result`` makes the directory hold what a full render would: rendered assignments get their files, files
fleetflow wrote that the render no longer produces go, the state shards that changed and the index
(``.fleetflow/state.json``) are rewritten. Nothing fleetflow
did not write is deleted (``render.ownership``): foreign files in cluster-type folders are kept and reported, files
outside cluster-type folders are left alone. Unchanged files are not rewritten (their mtime stays), so a re-render with
no change writes nothing. Writes go through a temporary file and a rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fleetflow.errors import InputError, Location, Problem, Problems, UsageError
from fleetflow.render.incremental import PART_DIR, SHARD_DIR, STATE_PATH, NewerState, RenderState
from fleetflow.render.kustomization_files import KUSTOMIZATION_NAMES, unlisted_warnings, where_to_look
from fleetflow.render.ownership import FOLDER, Ownership, examined_folders, ownership, refuse_in_the_way
from fleetflow.render.pipeline import RenderResult


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)  # kept: in cluster-type folders, not written by fleetflow


def safe_path(root: Path, relative: str) -> Path:
    """``root / relative``, refusing anything that would land outside ``root``: a symbolic link on the way (a
    cluster type's folder linked to a folder elsewhere) is named, with where it leads."""
    target = (root / relative).resolve()
    base = root.resolve()
    if target != base and base not in target.parents:
        parts = Path(relative).parts
        link = next((root.joinpath(*parts[:n]) for n in range(1, len(parts) + 1)
                     if root.joinpath(*parts[:n]).is_symlink()), None)
        if link is None:
            raise UsageError(f"refusing to write outside the output directory: {relative}")
        raise UsageError(Problem(
            f"{link} is a symbolic link to {os.readlink(link)}, outside the output folder {root}: fleetflow writes "
            "only inside it",
            None,
            "put the folder itself there (or move the link away), then run again; nothing was written",
        ))
    return root / relative


def read_state(root: Path, warnings: Problems) -> RenderState | None:
    """The state the previous render left in ``root``: the index now, each shard when first used. An unreadable
    state is not an error (everything is rendered again, and the state rewritten): a warning in ``warnings``."""
    path = root / STATE_PATH
    if not path.is_file():
        return None

    def read_files(paths: list[str]) -> dict[str, bytes | None]:
        found: dict[str, bytes | None] = {}
        for relative in paths:
            file = safe_path(root, relative)
            found[relative] = file.read_bytes() if file.is_file() else None
        return found

    try:
        state = RenderState.from_bytes(path.read_bytes(), read_files)
        shards = root / SHARD_DIR
        present = [f"{SHARD_DIR}/{p.name}" for p in shards.iterdir()] if shards.is_dir() else []
        state.assignments.missing(present)  # a shard the index names must exist
        return state
    except NewerState as exc:
        raise InputError(exc.problem(str(path))) from None
    except (ValueError, KeyError, TypeError) as exc:
        warnings.add(
            f"previous state is unreadable ({exc}); rendering everything",
            Location(str(path)),
            "the file is rewritten by this render",
        )
        return None


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.fleetflow-tmp")
    tmp.write_bytes(data)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # no stray temporary file left in the GitOps tree
        raise
    return True


def in_the_way(root: Path, result: RenderResult, owned: Ownership) -> None:
    """:func:`fleetflow.render.ownership.refuse_in_the_way` in the output folder, before anything is written:
    writing would fail half-way (errno 20/21, the other files already written; a bad-input hunt found ``render``
    doing so, 2026-11-28). A symbolic link where a cluster type's or an assignment's folder goes is in the way as
    it is on the GitOps branch for ``schedule`` (git keeps it as a link, and fleetflow never writes through one):
    until 2026-11-29 ``plan`` listed it as a file it keeps and showed the assignment added (exit 0), and ``render``
    stopped half-way ("refusing to write through a symbolic link", no hint). ``plan`` says the same as ``render``.
    """

    def standing(asked: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for path in asked:
            where = root / path
            if where.is_symlink():
                found[path] = "a symbolic link"
            elif where.is_dir():
                found[path] = FOLDER
            elif where.is_file():
                found[path] = "a file"
        return found

    refuse_in_the_way([*result.files, *result.reporters], standing, owned, lambda path: str(root / path))


def _files_under(root: Path, folder: Path) -> list[str]:
    """Every file below ``folder`` (symbolic links as files, never followed), relative to ``root``."""
    found: list[str] = []
    if not folder.is_dir() or folder.is_symlink():
        return found
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        names = [*filenames, *(d for d in dirnames if (base / d).is_symlink())]
        found.extend((base / name).relative_to(root).as_posix() for name in names)
    return found


def survey(root: Path, result: RenderResult, previous: RenderState | None, *, sweep: bool = False) -> Ownership:
    """Which files of ``root`` the render would delete and which are foreign (see ``render.ownership``).

    Looks in the folders the render touches (assignments rendered now or removed, status folders); without a
    previous state, or with ``sweep``, in every cluster-type folder fleetflow writes into.
    """
    folders = examined_folders(previous, result.state, result.rendered, result.reporters, sweep=sweep,
                               kept_reporters=result.kept_reporters)
    paths: list[str] = []
    for folder in sorted(folders):
        paths.extend(_files_under(root, safe_path(root, folder)))
    return ownership(previous, result.state, result.reporters, paths, result.kept_reporters)


def apply_result(
    root: Path,
    result: RenderResult,
    previous: RenderState | None,
    *,
    sweep: bool = False,
    prune_foreign: bool = False,
    owned: Ownership | None = None,
) -> WriteReport:
    """Make ``root`` hold the render. Writes the files of rendered assignments and status reporters, deletes only
    the files fleetflow wrote that the render no longer produces (``render.ownership``), keeps every other file
    and lists those in cluster-type folders as foreign (deleted too with ``prune_foreign``). The state file is
    written last, so an interrupted run is finished by the next one. Without ``owned`` it surveys the folder and
    refuses what is in the way (:func:`in_the_way`) first; a caller that gives ``owned`` has done both.
    """
    report = WriteReport()
    if owned is None:  # a caller that gives the survey has checked what is in the way with it (cli/render.py)
        owned = survey(root, result, previous, sweep=sweep or prune_foreign)
        in_the_way(root, result, owned)
    root.mkdir(parents=True, exist_ok=True)
    grouped: dict[str, dict[str, bytes]] = {}
    for path, data in result.files.items():
        aid, _, name = path.rpartition("/")
        grouped.setdefault(aid, {})[name] = data
    for path, data in result.reporters.items():
        aid, _, name = path.rpartition("/")
        grouped.setdefault(aid, {})[name] = data
    folders: dict[str, Path] = {}

    def ct_folder(ct: str) -> Path:  # resolved once per cluster type: no symlink may lead outside the root
        if ct not in folders:
            folders[ct] = safe_path(root, ct)
        return folders[ct]

    for aid in sorted(grouped):
        ct, _, target = aid.partition("/")
        folder = ct_folder(ct) / target
        if folder.is_symlink():
            raise UsageError(f"refusing to write through a symbolic link: {aid}")
        wanted = grouped[aid]
        if not folder.exists():
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in sorted(wanted.items()):
                (folder / name).write_bytes(data)  # a new folder: nothing to compare with
                report.written.append(f"{aid}/{name}")
            continue
        for name, data in sorted(wanted.items()):
            if _write_if_changed(folder / name, data):
                report.written.append(f"{aid}/{name}")
    doomed = [*owned.delete, *(owned.foreign if prune_foreign else [])]
    for path in sorted(doomed):
        target_path = safe_path(root, path)
        if target_path.is_symlink() or target_path.is_file():
            target_path.unlink()
            report.deleted.append(path)
            _remove_empty_parents(root, target_path.parent)
    report.foreign = [] if prune_foreign else list(owned.foreign)
    index = result.state.to_bytes()  # makes the parts too (part_files)
    # the shards, the index's parts, then the index
    present = _files_under(root, root / PART_DIR)  # as the diff lists them (FolderTree.files)
    for path, written in [*result.state.shard_files(previous).items(),
                          *result.state.part_files(previous, present).items()]:
        if written is None:
            safe_path(root, path).unlink(missing_ok=True)
            report.deleted.append(path)
        elif _write_if_changed(safe_path(root, path), written):
            report.written.append(path)
    if _write_if_changed(safe_path(root, STATE_PATH), index):
        report.written.append(STATE_PATH)
    return report


def _remove_empty_parents(root: Path, folder: Path) -> None:
    """Remove ``folder`` and its parents while they are empty, never ``root`` itself."""
    base = root.resolve()
    while folder.resolve() != base and folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def kustomization_warnings(root: Path, result: RenderResult, owned: Ownership) -> Problems:
    """A warning for each kustomization file in ``root`` that leaves out files this render writes below it
    (:mod:`fleetflow.render.kustomization_files`): at the output root, in a cluster-type folder the render writes
    into (a Flux Kustomization's path, docs/reporting-status.md), or in an assignment's or status folder (a foreign
    file the survey found there). Cost: three ``stat`` calls for the root and for each cluster type rendered, and
    the survey's list (1 ms for 300 cluster types, against 1.8 s to render their 9,000 assignments); a file is
    read only where one stands."""
    written = [*result.files, *result.reporters]
    folders, deeper = where_to_look(written, owned.foreign)
    base = os.fspath(root)
    found = [f"{folder}/{name}" if folder else name for folder in folders for name in KUSTOMIZATION_NAMES
             if os.path.isfile(os.path.join(base, folder, name))]
    texts = {path: (root / path).read_bytes() for path in sorted({*found, *deeper})}
    return unlisted_warnings(texts, written, lambda path: Location(str(root / path)))


@dataclass(frozen=True)
class FolderTree:
    """An output folder on disk as the tree a plan is diffed against (:class:`fleetflow.render.diff.PreviousTree`);
    a file's key is its path."""

    root: Path

    @property
    def state_bytes(self) -> bytes | None:
        path = self.root / STATE_PATH
        return path.read_bytes() if path.is_file() else None

    def files(self, folders: list[str]) -> dict[str, str]:
        return {path: path for folder in folders for path in _files_under(self.root, safe_path(self.root, folder))}

    def blobs(self, keys: Iterable[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for key in keys:
            path = safe_path(self.root, key)
            if path.is_file():
                found[key] = path.read_bytes()
        return found
