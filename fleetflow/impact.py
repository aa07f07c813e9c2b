"""Which assignments a change can touch, found from a few fingerprints instead of one hash per assignment.

The previous state records a fingerprint per cluster type, per deployment target and per ConfigMap (with its
labels), and one for all ConfigSchemas. An assignment must be rendered again only when its cluster type or its
target changed, when a changed (added, removed) ConfigMap applies to it now or applied to it before, when it is
new, or when it was held back last time. Everything else keeps its previous state entry and files: on a large
fleet a one-value change then costs work in proportion to what it touches, not to the fleet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fleetflow.composition import Fact, cluster_side_facts, requirement_facts, target_side_facts
from fleetflow.scheduling import Assignment, Target
from fleetflow.state import Fingerprints


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
