"""Everything incremental rendering needs, in one place: the state file and what a change touches.

**The state file** (``.fleetflow/state.json``) records the environment, the ``main`` and environment-branch
commits, one line per assignment (input hash, content hash, files), the key hashes of every config container (to
report which config keys changed), the fingerprints below, and the clusters expected to report a rollout. It is
written one assignment per line, sorted, so git diffs of it stay small and readable, and the same state always
gives the same bytes.

**What a change touches** is found from a few fingerprints instead of one hash per assignment.

The previous state records a fingerprint per cluster type, per deployment target and per ConfigMap (with its
labels), and one for all ConfigSchemas. An assignment must be rendered again only when its cluster type or its
target changed, when a changed (added, removed) ConfigMap applies to it now or applied to it before, when it is
new, or when it was held back last time. Everything else keeps its previous state entry and files: on a large
fleet a one-value change then costs work in proportion to what it touches, not to the fleet.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleetflow.render.composition import Fact, cluster_side_facts, requirement_facts, target_side_facts
from fleetflow.render.scheduling import Assignment, Target

STATE_PATH = ".fleetflow/state.json"  # relative to an environment's output root
STATE_VERSION = 1


def state_path(output_path: str) -> str:
    """Where ``state.json`` stands in a GitOps repo whose environment output is at ``output_path``
    (``GitOpsRepo.spec.path``: ``.``, ``""``, ``/``, ``./apps/`` and ``apps`` are all understood)."""
    folder = posixpath.normpath(output_path.strip("/") or ".")
    return STATE_PATH if folder == "." else f"{folder}/{STATE_PATH}"


class AssignmentState(NamedTuple):
    """One assignment's line in state.json (a NamedTuple: 100,000 of them are read on every render)."""

    input_hash: str
    content_hash: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class ExpectedCluster:
    name: str
    cluster_type: str
    status_context: str | None


@dataclass
class Fingerprints:
    """What incremental rendering compares to find the assignments a change can touch (``affected_assignments``)."""

    schemas: str = ""
    cluster_types: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    config_maps: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # name -> (fp, labels)
    held_back: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "schemas": self.schemas,
            "clusterTypes": dict(sorted(self.cluster_types.items())),
            "targets": dict(sorted(self.targets.items())),
            "configMaps": {
                k: [fp, dict(sorted(labels.items()))] for k, (fp, labels) in sorted(self.config_maps.items())
            },
            "heldBack": sorted(self.held_back),
        }

    @classmethod
    def from_json(cls, raw: Any) -> Fingerprints | None:
        if not isinstance(raw, dict):
            return None
        try:
            return cls(
                schemas=str(raw["schemas"]),
                cluster_types={str(k): str(v) for k, v in raw["clusterTypes"].items()},
                targets={str(k): str(v) for k, v in raw["targets"].items()},
                config_maps={str(k): (str(v[0]), {str(a): str(b) for a, b in v[1].items()})
                             for k, v in raw["configMaps"].items()},
                held_back=[str(a) for a in raw.get("heldBack", [])],
            )
        except (KeyError, TypeError, IndexError, AttributeError):
            return None


@dataclass
class RenderState:
    environment: str
    main_commit: str | None = None
    env_commit: str | None = None
    engine: str = ""
    assignments: dict[str, AssignmentState] = field(default_factory=dict)
    config_keys: dict[str, dict[str, str]] = field(default_factory=dict)  # ConfigMap -> key -> value hash
    clusters: list[ExpectedCluster] = field(default_factory=list)
    fingerprints: Fingerprints | None = None
    # lines of the file this state was read from, by assignment: an entry reused unchanged is written back as the
    # same text instead of being formatted again (re-renders of large fleets write 100,000 of them)
    lines: dict[str, tuple[AssignmentState, str]] = field(default_factory=dict, repr=False, compare=False)

    def _line(self, aid: str, a: AssignmentState) -> str:
        known = self.lines.get(aid)
        if known is not None and known[0] is a:
            return known[1]
        return _assignment_line(aid, a)

    def to_bytes(self) -> bytes:
        head = {
            "apiVersion": "fleetflow.dev/v1alpha1",
            "kind": "RenderState",
            "version": STATE_VERSION,
            "environment": self.environment,
            "mainCommit": self.main_commit,
            "envCommit": self.env_commit,
            "engine": self.engine,
        }
        lines = ["{"]
        for key, value in head.items():
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
        lines.append('  "clusters": [')
        cluster_lines = [
            "    "
            + _compact({"name": c.name, "clusterType": c.cluster_type, "statusContext": c.status_context})
            for c in sorted(self.clusters, key=lambda c: c.name)
        ]
        lines.append(",\n".join(cluster_lines))
        lines.append("  ],")
        lines.append('  "configKeys": {')
        lines.append(
            ",\n".join(
                f"    {json.dumps(name)}: {_compact(keys)}" for name, keys in sorted(self.config_keys.items())
            )
        )
        lines.append("  },")
        if self.fingerprints is not None:
            fps = self.fingerprints.to_json()
            lines.append('  "fingerprints": {')
            lines.append(f'    "heldBack": {_compact(fps["heldBack"])},')
            lines.append(f'    "schemas": {json.dumps(fps["schemas"])},')
            for index, part in enumerate(("clusterTypes", "configMaps", "targets")):
                lines.append(f'    "{part}": {{')
                lines.append(",\n".join(f"      {json.dumps(k)}: {_compact(v)}" for k, v in fps[part].items()))
                lines.append("    }" + ("," if index < 2 else ""))
            lines.append("  },")
        lines.append('  "assignments": {')
        lines.append(",\n".join(self._line(aid, a) for aid, a in sorted(self.assignments.items())))
        lines.append("  }")
        lines.append("}")
        text = "\n".join(line for line in lines if line)
        return (text + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> RenderState:
        """Parse a state file; raises ValueError with a readable reason when it is not one.

        The assignments block is read line by line when it has the layout ``to_bytes`` writes (a regular
        expression per line instead of a JSON object per assignment); anything else goes through json."""
        text = data.decode()
        start = text.find(_ASSIGNMENTS_OPEN)
        end = text.find(_ASSIGNMENTS_CLOSE, start) if start >= 0 else -1
        fast: dict[str, tuple[AssignmentState, str]] | None = None
        if start >= 0 and end >= 0:
            raw = json.loads(text[:start] + '\n  "assignments": {}\n}\n')
            fast = {}
            block = text[start + len(_ASSIGNMENTS_OPEN) : end]
            if "\\" in block:  # escapes: let json read it
                fast = None
            else:
                file_lists: dict[str, tuple[str, ...]] = {}  # most assignments share one list of file names
                make = AssignmentState._make
                for line in block.split(",\n"):
                    try:
                        aid, rest = line[5:].split(_CONTENT, 1)
                        content, rest = rest.split(_FILES, 1)
                        files, input_hash = rest.split(_INPUT, 1)
                    except ValueError:
                        fast = None
                        break
                    if not line.startswith('    "') or not input_hash.endswith('"}'):
                        fast = None
                        break
                    names = file_lists.get(files)
                    if names is None:
                        names = file_lists[files] = tuple(f[1:-1] for f in files.split(", ")) if files else ()
                    fast[aid] = (make((input_hash[:-2], content, names)), line)
        else:
            raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("kind") != "RenderState":
            raise ValueError("not a fleetflow RenderState")
        if raw.get("version") != STATE_VERSION:
            raise ValueError(f"state version {raw.get('version')!r} is not {STATE_VERSION}")
        if fast is None and start >= 0:
            raw = json.loads(text)
        state = cls(
            environment=str(raw.get("environment", "")),
            main_commit=raw.get("mainCommit"),
            env_commit=raw.get("envCommit"),
            engine=str(raw.get("engine", "")),
            config_keys={k: dict(v) for k, v in _mapping(raw.get("configKeys")).items()},
            fingerprints=Fingerprints.from_json(raw.get("fingerprints")),
            clusters=[
                ExpectedCluster(str(c["name"]), str(c["clusterType"]), c.get("statusContext"))
                for c in raw.get("clusters") or []
            ],
        )
        if fast is not None:
            state.lines = fast
            state.assignments = {aid: entry[0] for aid, entry in fast.items()}
        else:
            state.assignments = {
                aid: AssignmentState(a["input"], a["content"], tuple(a.get("files") or ()))
                for aid, a in _mapping(raw.get("assignments")).items()
            }
        return state


_ASSIGNMENTS_OPEN = '\n  "assignments": {\n'
_ASSIGNMENTS_CLOSE = "\n  }\n}"
_CONTENT = '": {"content": "'
_FILES = '", "files": ['
_INPUT = '], "input": "'


def _assignment_line(aid: str, a: AssignmentState) -> str:
    """Same bytes as ``_compact`` gives, formatted by hand when every part is plain (names are validated, hashes
    are hex): json.dumps for 100,000 lines was most of the time of a re-render with no change."""
    joined = "".join((aid, a.input_hash, a.content_hash, *a.files))
    if joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined:
        files = ", ".join(f'"{f}"' for f in a.files)
        return f'    "{aid}": {{"content": "{a.content_hash}", "files": [{files}], "input": "{a.input_hash}"}}'
    return f"    {json.dumps(aid)}: " + _compact(
        {"input": a.input_hash, "content": a.content_hash, "files": list(a.files)}
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


# --- what a change touches ------------------------------------------------------------------------------


def _targets_touched_by(
    labels: Mapping[str, str], environment: str, cluster_types: Mapping[str, Mapping[str, str]],
    targets: Mapping[str, Target],
) -> dict[str, set[str]]:
    """cluster type -> targets, for every pair a ConfigMap with ``labels`` applies to."""
    wanted = requirement_facts(labels)
    by_ct: dict[frozenset[Fact], list[str]] = {}
    for name, ct_labels in cluster_types.items():
        by_ct.setdefault(wanted & cluster_side_facts(environment, name, ct_labels), []).append(name)
    by_target: dict[frozenset[Fact], list[str]] = {}
    for tid, target in targets.items():
        by_target.setdefault(wanted & target_side_facts(tid, target.workload, target.labels), []).append(tid)
    touched: dict[str, set[str]] = {}
    for ct_sat, ct_names in by_ct.items():
        for t_sat, tids in by_target.items():
            if ct_sat | t_sat == wanted:
                for ct in ct_names:
                    touched.setdefault(ct, set()).update(tids)
    return touched


def affected_assignments(
    previous: Fingerprints, current: Fingerprints, assignments: Iterable[Assignment], environment: str,
    cluster_types: Mapping[str, Mapping[str, str]], targets: Mapping[str, Target],
) -> set[str] | None:
    """Ids of the assignments that may render differently; None when everything must be looked at."""
    if previous.schemas != current.schemas:
        return None  # validation results may change anywhere
    changed_ct = {ct for ct, fp in current.cluster_types.items() if previous.cluster_types.get(ct) != fp}
    changed_t = {t for t, fp in current.targets.items() if previous.targets.get(t) != fp}
    touched: dict[str, set[str]] = {}
    for name in set(previous.config_maps) | set(current.config_maps):
        before, now = previous.config_maps.get(name), current.config_maps.get(name)
        if before == now:
            continue
        for side in (before, now):
            if side is not None:
                for ct, tids in _targets_touched_by(side[1], environment, cluster_types, targets).items():
                    touched.setdefault(ct, set()).update(tids)
    affected = set(previous.held_back)
    empty: set[str] = set()
    for ct, target in assignments:
        if ct in changed_ct or target in changed_t or target in touched.get(ct, empty):
            affected.add(f"{ct}/{target}")
    return affected
