"""The edge between a rendered result and a directory on disk (the GitOps output root).

``apply_result`` makes the directory hold exactly what a full render would: folders of rendered assignments get
exactly their files, folders of removed assignments go, ``.fleetflow/state.json`` is rewritten, and files outside
cluster-type folders are left alone. Unchanged files are not rewritten (their mtime stays), so a re-render with
no change writes nothing. Writes go through a temporary file and a rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from fleetflow.diffing import unified_diff
from fleetflow.engine import RenderResult
from fleetflow.errors import Location, Problem, UsageError
from fleetflow.state import STATE_PATH, RenderState


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


def apply_result(root: Path, result: RenderResult, previous: RenderState | None) -> WriteReport:
    """Make ``root`` match the render. Only touches cluster-type folders and the state file."""
    report = WriteReport()
    root.mkdir(parents=True, exist_ok=True)
    current = set(result.state.assignments)
    for aid in result.rendered:
        folder = safe_path(root, aid)
        wanted = {p.rsplit("/", 1)[1]: data for p, data in result.files.items() if p.rsplit("/", 1)[0] == aid}
        if folder.is_dir():
            for stale in sorted(folder.iterdir()):
                if stale.name not in wanted:
                    _remove(stale)
                    report.deleted.append(f"{aid}/{stale.name}")
        for name, data in sorted(wanted.items()):
            if _write_if_changed(folder / name, data):
                report.written.append(f"{aid}/{name}")
    # folders of assignments that no longer exist, in every cluster-type folder we know of
    cluster_types = {_cluster_type(a) for a in current}
    if previous is not None:
        cluster_types |= {_cluster_type(a) for a in previous.assignments}
    for ct in sorted(cluster_types):
        ct_dir = safe_path(root, ct)
        if not ct_dir.is_dir():
            continue
        for child in sorted(ct_dir.iterdir()):
            if child.is_dir() and f"{ct}/{child.name}" not in current:
                _remove(child)
                report.deleted.append(f"{ct}/{child.name}/")
        if not any(ct_dir.iterdir()):
            ct_dir.rmdir()
    if _write_if_changed(safe_path(root, STATE_PATH), result.state.to_bytes()):
        report.written.append(STATE_PATH)
    return report


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
    new = dict(result.files)
    state_file = output / STATE_PATH
    if state_file.is_file():
        old[STATE_PATH] = state_file.read_bytes()
    new[STATE_PATH] = result.state.to_bytes()
    return unified_diff(old, new)
