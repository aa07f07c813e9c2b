"""Selectors that select nothing: warnings that name the label no one carries and the closest one that exists.

A misspelt label key or value in a ``SchedulingPolicy`` or a ``platform-config`` ConfigMap does not fail a
render: the policy schedules nothing, the ConfigMap applies nowhere, and assignments or values silently go
missing. These checks look at each label a selector asks for and warn when no cluster type or deployment target
of the environment carries it, with the closest existing label (``difflib``) as "did you mean". They look at
labels one by one, so they cost in proportion to the labels, not to the fleet.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping

from fleetflow.errors import Location, Problem
from fleetflow.model.controlplane import PLATFORM_CONFIG_LABEL, ControlPlane, Resource
from fleetflow.model.resources import LabelSelector, SchedulingPolicySpec
from fleetflow.render.composition import CLUSTER_TYPE, DEPLOYMENT_TARGET, ENVIRONMENT, WORKLOAD
from fleetflow.render.scheduling import Schedule

LabelIndex = dict[str, set[str]]  # key -> values seen


def _index(label_sets: Iterable[Mapping[str, str]]) -> LabelIndex:
    index: LabelIndex = {}
    for labels in label_sets:
        for key, value in labels.items():
            index.setdefault(key, set()).add(str(value))
    return index


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.5)
    return found[0] if found else None


def _missing(key: str, value: str | None, index: LabelIndex, what: str) -> tuple[str, str] | None:
    """(message part, hint) when nothing of ``what`` carries ``key`` (or ``key: value``); None when one does."""
    if key not in index:
        close = _closest(key, index)
        known = ", ".join(sorted(index)) or "none"
        hint = (f"did you mean label key {close!r}? " if close else "") + f"label keys on {what}: {known}"
        return f"none carries label key {key!r}", hint
    if value is not None and value not in index[key]:
        close = _closest(value, index[key])
        known = ", ".join(sorted(index[key]))
        hint = (f"did you mean {key}: {close!r}? " if close else "") + f"values of {key} on {what}: {known}"
        return f"none carries {key}: {value!r}", hint
    return None


def _selector_warnings(
    subject: str, selector: LabelSelector, index: LabelIndex, what: str, locate: Callable[[str | None], Location],
) -> list[Problem]:
    """``locate(key)``: where the selector's ``matchLabels`` entry ``key`` is (None: the selector itself), asked
    only for a warning: working out a file's positions costs a parse, and most selectors select something."""
    found: list[Problem] = []
    for key, value in sorted(selector.match_labels.items()):
        miss = _missing(key, value, index, what)
        if miss is not None:
            found.append(Problem(f"{subject} selects no {what}: {miss[0]}", locate(key), miss[1]))
    for req in selector.match_expressions:
        if req.operator not in ("In", "Exists"):
            continue  # NotIn / DoesNotExist hold when the key is absent
        miss = _missing(req.key, None, index, what)
        if miss is None and req.operator == "In" and not set(req.values) & index[req.key]:
            close = _closest(req.values[0], index[req.key]) if req.values else None
            miss = (
                f"none carries {req.key} in ({', '.join(req.values)})",
                (f"did you mean {req.key}: {close!r}? " if close else "")
                + f"values of {req.key} on {what}: {', '.join(sorted(index[req.key]))}",
            )
        if miss is not None:
            found.append(Problem(f"{subject} selects no {what}: {miss[0]}", locate(None), miss[1]))
    return found


def _locator(policy: Resource[SchedulingPolicySpec], base: tuple[str, ...]) -> Callable[[str | None], Location]:
    def locate(key: str | None) -> Location:
        return policy.where(*base) if key is None else policy.where(*base, "matchLabels", key)

    return locate


def selection_warnings(plane: ControlPlane, environment: str, sched: Schedule) -> list[Problem]:
    """Policies and ConfigMaps asking for a label that no cluster type or deployment target of ``environment``
    carries. Nothing is checked against an empty side (no targets in the environment: nothing to compare)."""
    warnings: list[Problem] = []
    target_index = _index(t.labels for t in sched.targets.values())
    type_index = _index(ct.labels for ct in plane.cluster_types.values())
    workspaces = {t.workspace for t in sched.targets.values()}
    for name, policy in sorted(plane.policies.items()):
        spec = policy.spec
        wanted = spec.deployment_target_selector.workspace
        if wanted is not None and workspaces and wanted not in workspaces:  # a typo selected nothing, unwarned
            close = _closest(wanted, workspaces)  # until 2026-11-28 (a bad-input hunt)
            warnings.append(Problem(
                f"SchedulingPolicy {name} selects no deployment targets of {environment}: no target is in "
                f"workspace {wanted!r}",
                policy.where("spec", "deploymentTargetSelector", "workspace"),
                (f"did you mean workspace: {close!r}? " if close else "")
                + f"known: {', '.join(sorted(workspaces))}",
            ))
        sides = (
            ("deploymentTargetSelector", spec.deployment_target_selector.label_selector, target_index,
             f"deployment targets of {environment}"),
            ("clusterTypeSelector", spec.cluster_type_selector.label_selector, type_index, "cluster types"),
        )
        for field, selector, index, what in sides:
            if not index:
                continue
            locate = _locator(policy, ("spec", field, "labelSelector"))
            warnings.extend(_selector_warnings(f"SchedulingPolicy {name}", selector, index, what, locate))
    if not target_index or not type_index:
        return warnings
    special = {
        CLUSTER_TYPE: set(plane.cluster_types),
        DEPLOYMENT_TARGET: set(sched.targets),
        WORKLOAD: {t.workload for t in sched.targets.values()},
        ENVIRONMENT: {environment},
    }
    carried = _index([*(t.labels for t in sched.targets.values()), *(ct.labels for ct in plane.cluster_types.values())])
    for name, cm in sorted(plane.config_maps.items()):
        if cm.origin != "env" or cm.labels.get(PLATFORM_CONFIG_LABEL) != "true":
            continue  # ConfigMaps on main serve every environment: a label of another one is not a mistake
        for key, value in sorted(cm.labels.items()):
            if key == PLATFORM_CONFIG_LABEL:
                continue
            if key in special:
                if str(value) not in special[key]:
                    close = _closest(str(value), special[key])
                    warnings.append(Problem(
                        f"ConfigMap {name} applies to no assignment of {environment}: {key}: {value!r} names "
                        f"no {key.replace('-', ' ')} here",
                        cm.where("metadata", "labels", key),
                        (f"did you mean {key}: {close!r}? " if close else "")
                        + f"known: {', '.join(sorted(special[key])) or 'none'}",
                    ))
                continue
            miss = _missing(key, str(value), carried, "cluster types or deployment targets")
            if miss is not None:
                warnings.append(Problem(
                    f"ConfigMap {name} applies to no assignment of {environment}: {miss[0]}",
                    cm.where("metadata", "labels", key), miss[1],
                ))
    return warnings
