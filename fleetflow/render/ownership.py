"""Which files of an output tree are fleetflow's: the one rule for what a render (or a GitOps commit) may delete.

fleetflow deletes only what it wrote. What it wrote is what the previous state lists (each assignment's files,
``<clusterType>/<target>/<file>``, in the shard of its cluster type: only the shards of the folders looked at are
read) plus the reserved status-reporter folders
(``<clusterType>/_status/``: assignment folders never start with ``_``). A file fleetflow wrote that the new render
no longer produces is deleted. Every other file inside a cluster-type folder is **foreign**: kept, and listed as
"not managed by fleetflow". Files outside cluster-type folders are neither: they are not looked at.

Pure: the caller says which paths the tree holds (a directory walk for ``render``, a git tree for ``schedule``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from fleetflow.errors import Location, Problems
from fleetflow.render.incremental import STATE_PATH, STATUS_DIR, RenderState, removed_assignments


@dataclass
class Ownership:
    delete: list[str] = field(default_factory=list)  # fleetflow wrote them; the new render does not produce them
    foreign: list[str] = field(default_factory=list)  # in a cluster-type folder, not written by fleetflow: kept
    examined: list[str] = field(default_factory=list)  # every path looked at, sorted


def cluster_type_of(path: str) -> str:
    """The cluster-type folder of an assignment id (``ct/target``) or of a path in the output tree."""
    return path.split("/", 1)[0]


def _split(path: str) -> tuple[str, str, str]:
    """``ct/target/name`` → (ct, "ct/target", name); other depths give an empty assignment id."""
    parts = path.split("/")
    if len(parts) == 3:
        return parts[0], f"{parts[0]}/{parts[1]}", parts[2]
    return parts[0], "", ""


def _listed(state: RenderState | None, aid: str, name: str) -> bool:
    if state is None or not aid:
        return False
    entry = state.assignments.get(aid)
    return entry is not None and name in entry.files


def cluster_types(previous: RenderState | None, current: RenderState, reporters: Iterable[str]) -> set[str]:
    """The cluster-type folders fleetflow writes into, now or before: those of the assignments either state lists,
    of the status ``reporters`` rendered now, and of the reporters the previous render wrote (its reporter
    fingerprints): under ``--keep-last-good`` a cluster type whose every assignment is held back has a reporter
    and no assignment in the state, and its ``_status/`` folder must still go when the reporter does."""
    found = current.assignments.cluster_types()
    if previous is not None:
        found |= previous.assignments.cluster_types()
        if previous.fingerprints is not None and previous.fingerprints.reporters:
            found |= previous.fingerprints.reporters.keys()
    found |= {cluster_type_of(path) for path in reporters}
    return found


def status_folders(previous: RenderState | None, current: RenderState, reporters: Iterable[str],
                   kept_reporters: Collection[str] = frozenset(), removed: Iterable[str] = ()) -> set[str]:
    """The ``_status/`` folders (relative to the output root) whose files a render decides: one per cluster type
    fleetflow writes into, now or before (:func:`cluster_types`; ``removed``, the assignments the render removed,
    stand for ``previous`` when the caller has not read it), but those of ``kept_reporters`` (their reporters were
    not rendered again, so their folders stay as they are)."""
    types = cluster_types(previous, current, reporters) | {cluster_type_of(aid) for aid in removed}
    return {f"{ct}/{STATUS_DIR}" for ct in types if ct not in kept_reporters}


def examined_folders(previous: RenderState | None, current: RenderState, rendered: Iterable[str],
                     reporters: Iterable[str], *, sweep: bool = False,
                     kept_reporters: Collection[str] = frozenset()) -> set[str]:
    """The folders (relative to the output root) whose files a render must sort with :func:`ownership`: the
    assignments rendered now or removed, and the status folders of the cluster types not in ``kept_reporters``;
    without a previous state, or with ``sweep``, every cluster-type folder fleetflow writes into."""
    if previous is None or sweep:
        return cluster_types(previous, current, reporters)
    folders = {*rendered, *removed_assignments(previous, current)}
    return folders | status_folders(previous, current, reporters, kept_reporters)


def ownership(
    previous: RenderState | None, current: RenderState, reporters: Collection[str], paths: Iterable[str],
    kept_reporters: Collection[str] = frozenset(),
) -> Ownership:
    """Sort the tree's ``paths`` (relative to the output root, ``/``-separated, files only) into what a render
    that produces ``current`` (+ the status ``reporters`` files) must delete and what it must keep as foreign.
    The status folders of ``kept_reporters`` (reporters not rendered again: their inputs did not change) are
    kept as they are."""
    result = Ownership()
    types = cluster_types(previous, current, reporters)
    for path in sorted(set(paths)):
        if path == STATE_PATH:
            continue
        ct, aid, name = _split(path)
        if ct not in types or "/" not in path:
            continue  # outside cluster-type folders: not ours to judge
        result.examined.append(path)
        reporter = aid == f"{ct}/{STATUS_DIR}"
        wanted = (path in reporters or ct in kept_reporters) if reporter else _listed(current, aid, name)
        if wanted:
            continue
        if reporter or _listed(previous, aid, name):
            result.delete.append(path)
        else:
            result.foreign.append(path)
    return result


FOLDER = "a folder"  # what stands at a path, as ``refuse_in_the_way``'s ``standing`` says it


def refuse_in_the_way(
    paths: Iterable[str],
    standing: Callable[[list[str]], Mapping[str, str]],
    owned: Ownership,
    shown: Callable[[str], str],
    on: str = "",
) -> None:
    """InputError when something fleetflow did not write stands where a render writes: not a folder (a file, a
    link, a submodule) where a folder of ``paths`` goes (a cluster type's or an assignment's), or a folder where
    one of ``paths`` goes. Writing there would replace it and all it holds, and fleetflow never deletes what it did
    not write. One rule for both sides: ``standing`` answers, for the paths asked (every path and the folders
    above), what stands at each (``FOLDER``, "a file", "a symbolic link", ...; absent: nothing), from a git tree
    for ``schedule`` or the disk for ``render`` and ``plan``; ``shown`` is a path as the message names it, ``on``
    says where ("(on the GitOps branch)")."""
    wanted = set(paths)
    folders = {p.rpartition("/")[0] for p in wanted} - {""}
    folders |= {f.rpartition("/")[0] for f in folders} - {""}
    asked = sorted(folders | wanted)
    found = standing(asked)
    doomed = set(owned.delete)
    problems = Problems()
    after = f" {on}" if on else ""
    for path in asked:
        what = found.get(path)
        if what is None or path in doomed:
            continue
        if path in folders and what != FOLDER:
            problems.add(f"{what} stands where fleetflow writes the folder {path}/{after}", Location(shown(path)),
                         "fleetflow did not write it, and writing the folder would delete it: move or rename it, "
                         "then run again; nothing was written")
        elif path in wanted and what == FOLDER:
            problems.add(f"a folder stands where fleetflow writes the file {path}{after}",
                         Location(shown(path) + "/"),
                         "fleetflow did not write it, and writing the file would delete the folder and all it "
                         "holds: move or rename it, then run again; nothing was written")
    problems.raise_if_any()
