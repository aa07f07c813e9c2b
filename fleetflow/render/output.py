"""The edge between a rendered result and a directory on disk (the GitOps output root).

``apply_result`` makes the directory hold exactly what a full render would: folders of rendered assignments get
exactly their files, folders of removed assignments go, ``.fleetflow/state.json`` is rewritten, and files outside
cluster-type folders are left alone. Unchanged files are not rewritten (their mtime stays), so a re-render with
no change writes nothing. Writes go through a temporary file and a rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fleetflow.errors import Location, Problem, UsageError
from fleetflow.render.diff import unified_diff
from fleetflow.render.incremental import STATE_PATH, RenderState
from fleetflow.render.pipeline import STATUS_DIR, RenderResult


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def safe_path(root: Path, relative: str) -> Path:
    """``root / relative``, refusing anything that would land outside ``root``."""
    target = (root / relative).resolve()
    base = root.resolve()
    if target != base and base not in target.parents:
        raise UsageError(f"refusing to write outside the output directory: {relative}")
    return root / relative


def read_state(root: Path) -> tuple[RenderState | None, Problem | None]:
    path = root / STATE_PATH
    if not path.is_file():
        return None, None
    try:
        return RenderState.from_bytes(path.read_bytes()), None
    except (ValueError, KeyError, TypeError) as exc:
        return None, Problem(
            f"previous state is unreadable ({exc}); rendering everything",
            Location(str(path)),
            "the file is rewritten by this render",
        )


def read_assignment_files(root: Path, assignment_id: str) -> dict[str, bytes]:
    folder = safe_path(root, assignment_id)
    if not folder.is_dir():
        return {}
    return {f"{assignment_id}/{p.name}": p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.fleetflow-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def _cluster_type(assignment_id: str) -> str:
    return assignment_id.split("/", 1)[0]


def apply_result(root: Path, result: RenderResult, previous: RenderState | None, *, sweep: bool = False) -> WriteReport:
    """Make ``root`` match the render. Only touches cluster-type folders and the state file (written last, so an
    interrupted run is finished by the next one: what it had not recorded is rendered again).

    Folders of assignments that no longer exist are found from the previous state; without one (or with
    ``sweep``) every cluster-type folder is swept for folders that are not assignments.
    """
    report = WriteReport()
    root.mkdir(parents=True, exist_ok=True)
    grouped: dict[str, dict[str, bytes]] = {}
    for path, data in result.files.items():
        aid, _, name = path.rpartition("/")
        grouped.setdefault(aid, {})[name] = data
    folders: dict[str, Path] = {}

    def ct_folder(ct: str) -> Path:  # resolved once per cluster type: no symlink may lead outside the root
        if ct not in folders:
            folders[ct] = safe_path(root, ct)
        return folders[ct]

    for aid in result.rendered:
        ct, _, target = aid.partition("/")
        folder = ct_folder(ct) / target
        if folder.is_symlink():
            raise UsageError(f"refusing to write through a symbolic link: {aid}")
        wanted = grouped.get(aid, {})
        try:
            existing = sorted(os.listdir(folder))
        except FileNotFoundError:
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in sorted(wanted.items()):
                (folder / name).write_bytes(data)  # a new folder: nothing to compare with
                report.written.append(f"{aid}/{name}")
            continue
        for name in existing:
            if name not in wanted:
                _remove(folder / name)
                report.deleted.append(f"{aid}/{name}")
        for name, data in sorted(wanted.items()):
            if _write_if_changed(folder / name, data):
                report.written.append(f"{aid}/{name}")
    current = result.state.assignments
    touched: set[str] = set()
    if previous is None or sweep:
        cluster_types = {_cluster_type(a) for a in current}
        if previous is not None:
            cluster_types |= {_cluster_type(a) for a in previous.assignments}
        for ct in sorted(cluster_types):
            ct_dir = ct_folder(ct)
            if not ct_dir.is_dir():
                continue
            for child in sorted(ct_dir.iterdir()):
                if child.is_dir() and not child.name.startswith("_") and f"{ct}/{child.name}" not in current:
                    _remove(child)
                    report.deleted.append(f"{ct}/{child.name}/")
                    touched.add(ct)
    else:
        for aid in sorted(set(previous.assignments) - set(current)):
            ct, _, target = aid.partition("/")
            folder = ct_folder(ct) / target
            if folder.is_dir() and not folder.is_symlink():
                _remove(folder)
                report.deleted.append(f"{aid}/")
                touched.add(ct)
    _apply_reporters(root, result, previous, ct_folder, report, touched)
    for ct in sorted(touched):
        ct_dir = ct_folder(ct)
        if ct_dir.is_dir() and not any(ct_dir.iterdir()):
            ct_dir.rmdir()
    if _write_if_changed(safe_path(root, STATE_PATH), result.state.to_bytes()):
        report.written.append(STATE_PATH)
    return report


def _apply_reporters(
    root: Path, result: RenderResult, previous: RenderState | None, ct_folder: Callable[[str], Path],
    report: WriteReport, touched: set[str],
) -> None:
    """Per cluster type status reporters: <clusterType>/_status/ holds exactly what was rendered for it."""
    wanted: dict[str, dict[str, bytes]] = {}
    for path, data in result.reporters.items():
        ct, _, name = path.partition(f"/{STATUS_DIR}/")
        wanted.setdefault(ct, {})[name] = data
    known = {_cluster_type(a) for a in result.state.assignments}
    if previous is not None:
        known |= {_cluster_type(a) for a in previous.assignments}
    for ct in sorted(known | set(wanted)):
        folder = ct_folder(ct) / STATUS_DIR
        files = wanted.get(ct, {})
        if folder.is_dir() and not folder.is_symlink():
            for stale in sorted(os.listdir(folder)):
                if stale not in files:
                    _remove(folder / stale)
                    report.deleted.append(f"{ct}/{STATUS_DIR}/{stale}")
                    touched.add(ct)
            if not files:
                folder.rmdir()
        for name, data in sorted(files.items()):
            if _write_if_changed(folder / name, data):
                report.written.append(f"{ct}/{STATUS_DIR}/{name}")


def read_reporter_files(root: Path, cluster_types: set[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for ct in sorted(cluster_types):
        folder = safe_path(root, ct) / STATUS_DIR
        if folder.is_dir():
            for child in sorted(folder.iterdir()):
                if child.is_file():
                    found[f"{ct}/{STATUS_DIR}/{child.name}"] = child.read_bytes()
    return found


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def plan_diff(output: Path, result: RenderResult) -> str:
    """Unified diff of every assignment folder render would touch, plus state.json."""
    old: dict[str, bytes] = {}
    for aid in [*result.rendered, *result.removed]:
        old.update(read_assignment_files(output, aid))
    cluster_types = {_cluster_type(a) for a in result.state.assignments}
    cluster_types |= {_cluster_type(a) for a in result.removed}
    old.update(read_reporter_files(output, cluster_types))
    new = {**result.files, **result.reporters}
    state_file = output / STATE_PATH
    if state_file.is_file():
        old[STATE_PATH] = state_file.read_bytes()
    new[STATE_PATH] = result.state.to_bytes()
    return unified_diff(old, new)
