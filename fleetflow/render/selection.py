"""Selectors that select nothing: warnings that name the label no one carries and the closest one that exists.

A misspelt label key or value in a ``SchedulingPolicy`` or a ``platform-config`` ConfigMap does not fail a
render: the policy schedules nothing, the ConfigMap applies nowhere, and assignments or values silently go
missing. These checks look at each label a selector asks for and warn when no cluster type or deployment target
of the environment carries it, with the closest existing label (``difflib``) as "did you mean". They look at
labels one by one, so they cost in proportion to the labels, not to the fleet; a policy whose labels are each
carried but that selects nothing as a whole is said from the schedule's own record of it.

Three more placement mistakes that change a schedule or a gate without failing a render are warned of here: a
``NotIn`` or ``DoesNotExist`` requirement that excludes nothing (a misspelt key or value: it holds for every label
set), a scheduled cluster type that no ``Cluster`` of the inventory runs (the gate does not wait for it), and
a ``workload`` or ``workspace`` label that fleetflow replaces on a deployment target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from fleetflow.errors import Location, Problem, closest
from fleetflow.model.controlplane import PLATFORM_CONFIG_LABEL, ControlPlane, Resource
from fleetflow.model.resources import LabelSelector, LabelSelectorRequirement, SchedulingPolicySpec
from fleetflow.model.selectors import describe
from fleetflow.render.composition import CLUSTER_TYPE, DEPLOYMENT_TARGET, ENVIRONMENT, WORKLOAD
from fleetflow.render.scheduling import Schedule

LabelIndex = dict[str, set[str]]  # key -> values seen


def _index(label_sets: Iterable[Mapping[str, str]]) -> LabelIndex:
    index: LabelIndex = {}
    for labels in label_sets:
        for key, value in labels.items():
            index.setdefault(key, set()).add(str(value))
    return index


def _missing(key: str, value: str | None, index: LabelIndex, what: str) -> tuple[str, str] | None:
    """(message part, hint) when nothing of ``what`` carries ``key`` (or ``key: value``); None when one does."""
    if key not in index:
        close = closest(key, index, cutoff=0.5)
        known = ", ".join(sorted(index)) or "none"
        hint = (f"did you mean label key {close!r}? " if close else "") + f"label keys on {what}: {known}"
        return f"none carries label key {key!r}", hint
    if value is not None and value not in index[key]:
        close = closest(value, index[key], cutoff=0.5)
        known = ", ".join(sorted(index[key]))
        hint = (f"did you mean {key}: {close!r}? " if close else "") + f"values of {key} on {what}: {known}"
        return f"none carries {key}: {value!r}", hint
    return None


Locate = Callable[..., Location]  # a path below the selector (none: the selector itself) -> where it is written


def _folded(word: str) -> str:
    return word.lower().replace("-", "").replace("_", "").replace(".", "")


def _same_word(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate that is ``word`` in other letters or separators (``vm`` for ``VM``, ``west-europe`` for
    ``westeurope``): label keys and values are compared as written, so one of these is never the label meant."""
    folded = _folded(word)
    return next((c for c in sorted(candidates) if c != word and _folded(c) == folded), None)


KEY_TYPO_CUTOFF = 0.75  # difflib's ratio for a misspelt key: runtme/runtime .92, kidn/kind .75, gpu/gpu-count .5


def _excludes_nothing(subject: str, req: LabelSelectorRequirement, index: LabelIndex, what: str,
                      locate: Locate) -> list[Problem]:
    """A ``NotIn`` or ``DoesNotExist`` requirement that leaves out nothing because its key is one no cluster type or
    target carries while a carried one is a near spelling of it (``runtme`` for ``runtime``), or because each of its
    values is a carried value in other letters (``VM`` for ``vm``). Such a requirement holds for every label set
    (apimachinery pkg/labels/selector.go, ``Requirement.Matches``: NotIn and DoesNotExist are true when the key is
    absent), so the policy selects more than it says: until 2026-11-29 ``runtme NotIn [vm]`` scheduled the VM
    targets it was written to keep out onto every Kubernetes cluster type, without a word. A key near no carried
    one (a label meant for later), or a value of another environment (``region NotIn [eastus]`` where only westus
    is carried), is not said: the requirement is then only idle."""
    written = f"{req.key} notin ({','.join(req.values)})" if req.operator == "NotIn" else f"!{req.key}"
    if req.key not in index:
        close = _same_word(req.key, index) or closest(req.key, index, cutoff=KEY_TYPO_CUTOFF)
        if close is None:
            return []
        return [Problem(
            f"{subject} excludes none of the {what} with {written}: none carries label key {req.key!r}, so it "
            "holds for every one",
            locate("key"),
            f"did you mean label key {close!r}? label keys on {what}: {', '.join(sorted(index))}",
        )]
    if req.operator != "NotIn" or set(req.values) & index[req.key]:
        return []
    found: list[Problem] = []
    for j, value in enumerate(req.values):
        close = _same_word(value, index[req.key])
        if close is not None:
            found.append(Problem(
                f"{subject} excludes none of the {what} with {written}: none carries {req.key}: {value!r}, so it "
                "holds for every one",
                locate("values", j),
                f"did you mean {req.key}: {close!r}? label values are compared as written; values of {req.key} on "
                f"{what}: " + ", ".join(sorted(index[req.key])),
            ))
    return found


def _in_leaves_out(subject: str, req: LabelSelectorRequirement, index: LabelIndex, what: str,
                   locate: Locate) -> list[Problem]:
    """An ``In`` requirement some of whose values are carried (so it selects, and no "selects no" warning is said)
    while another is a carried value in other letters that the list does not name (``site In [hamburg,
    Monterrey]`` where the cluster types carry ``site: monterrey``): those it was written for are left out. A value
    of another environment (``region In [eastus]`` where only westus is carried) is not said."""
    carried = index.get(req.key, set())
    if not set(req.values) & carried:
        return []  # selects nothing by this requirement: the "selects no" warning says it
    found: list[Problem] = []
    for j, value in enumerate(req.values):
        close = None if value in carried else _same_word(value, carried - set(req.values))
        if close is not None:
            found.append(Problem(
                f"{subject} leaves out the {what} with {req.key}: {close!r}: its {req.key} in "
                f"({','.join(req.values)}) has {value!r}, which none carries",
                locate("values", j),
                f"write {close} in its values, as the {what} write it (label values are compared as written)",
            ))
    return found


def _selector_warnings(
    subject: str, selector: LabelSelector, index: LabelIndex, what: str, locate: Locate,
) -> list[Problem]:
    """``locate(*path)``: where the part of the selector at ``path`` is (``"matchLabels", key``; none: the selector
    itself), asked only for a warning: working out a file's positions costs a parse, and most selectors select
    something."""
    found: list[Problem] = []
    for key, value in sorted(selector.match_labels.items()):
        miss = _missing(key, value, index, what)
        if miss is not None:
            found.append(Problem(f"{subject} selects no {what}: {miss[0]}", locate("matchLabels", key), miss[1]))
    for req in selector.match_expressions:
        if req.operator not in ("In", "Exists"):
            continue  # NotIn / DoesNotExist hold when the key is absent (_excludes_nothing looks at them)
        miss = _missing(req.key, None, index, what)
        if miss is None and req.operator == "In" and not set(req.values) & index[req.key]:
            close = closest(req.values[0], index[req.key], cutoff=0.5) if req.values else None
            miss = (
                f"none carries {req.key} in ({', '.join(req.values)})",
                (f"did you mean {req.key}: {close!r}? " if close else "")
                + f"values of {req.key} on {what}: {', '.join(sorted(index[req.key]))}",
            )
        if miss is not None:
            found.append(Problem(f"{subject} selects no {what}: {miss[0]}", locate(), miss[1]))
    return found


def _locator(policy: Resource[SchedulingPolicySpec], base: tuple[str | int, ...]) -> Locate:
    def locate(*path: str | int) -> Location:
        return policy.where(*base, *path)

    return locate


def _together_warning(name: str, policy: Resource[SchedulingPolicySpec], side: str,
                      sides: Mapping[str, tuple[LabelSelector, LabelIndex, str]]) -> list[Problem]:
    """A policy that selects nothing on ``side`` although every label it asks for is carried by something (the
    label-by-label warnings found nothing to say): its requirements hold one by one, never together. Until
    2026-11-29 such a policy (``tier: edge`` and ``provider: aks``, when the aks cluster types are cloud ones)
    scheduled nothing without a word."""
    selector, index, what = sides[side]
    if not index:
        return []  # nothing to select from: "schedules no assignment" says it
    other = "clusterTypeSelector" if side == "deploymentTargetSelector" else "deploymentTargetSelector"
    workspace = policy.spec.deployment_target_selector.workspace
    scope = f" in workspace {workspace!r}" if side == "deploymentTargetSelector" and workspace else ""
    return [Problem(
        f"SchedulingPolicy {name} selects no {what}: none{scope} matches all of {describe(selector)}, though "
        f"each label it asks for is carried by one of them",
        policy.where("spec", side, "labelSelector"),
        "loosen the selector, or label one of them with all it asks for; or remove the policy"
        + (f" (its {other} is not looked at while this one selects nothing)" if side == "deploymentTargetSelector"
           else ""),
    )]


def replaced_label_warnings(plane: ControlPlane, environment: str) -> list[Problem]:
    """A ``workload`` or ``workspace`` label written on a deployment target (or its Workload) with another value than
    the one fleetflow sets last (docs/design.md §2: ``workload=<workload>``, ``workspace=<workspace>``): the label
    written is replaced, so a policy or ConfigMap asking for it never sees it. Until 2026-11-29 it was replaced
    without a word."""
    found: list[Problem] = []
    for wl_name, wl in sorted(plane.workloads.items()):
        own = {WORKLOAD: wl_name, "workspace": plane.workspaces.get(wl_name, "default")}
        for key, value in sorted(wl.labels.items()):
            if key in own and value != own[key]:
                found.append(Problem(
                    f"Workload {wl_name}: label {key}: {value!r} is replaced by {key}={own[key]} on each of its "
                    f"deployment targets (fleetflow sets workload= and workspace= last)",
                    wl.where("metadata", "labels", key),
                    f"remove the label; select the targets with {key}: {own[key]}, or give it another key"
                    + (" (set spec.workspace to change the workspace)" if key == "workspace" else ""),
                ))
        for i, dt in enumerate(wl.spec.deployment_targets):
            if dt.environment != environment:
                continue
            for key, value in sorted(dt.labels.items()):
                if key in own and value != own[key]:
                    found.append(Problem(
                        f"workload {wl_name}: target {dt.name}: label {key}: {value!r} is replaced by "
                        f"{key}={own[key]} (fleetflow sets workload= and workspace= last)",
                        wl.where("spec", "deploymentTargets", i, "labels", key),
                        f"remove the label; select the target with {key}: {own[key]}, or give it another key"
                        + (" (set the Workload's spec.workspace to change the workspace)" if key == "workspace"
                           else ""),
                    ))
    return found


INVENTORY_WARNINGS = 20  # cluster types named one by one; the others in one more warning


def inventory_warnings(plane: ControlPlane, environment: str, sched: Schedule) -> list[Problem]:
    """Cluster types with assignments that no ``Cluster`` of the inventory runs, when the inventory names clusters
    of other assigned cluster types: the rollout gate expects the Clusters of the assigned cluster types only
    (docs/design.md §5), so it passes without waiting for any cluster of these. Until 2026-11-29 a cluster type
    whose Cluster was left out (or named another clusterType) was rolled out to unwatched. An environment whose
    inventory runs no assigned cluster type is the gate's own error (zero expected clusters), or counts contexts by
    ``minClusters``: nothing to say here."""
    run = {c.spec.cluster_type for c in plane.clusters.values()}
    if not run & sched.by_type.keys():
        return []
    unwatched = [ct for ct in sched.by_type if ct not in run and ct in plane.cluster_types]
    found = [
        Problem(
            f"ClusterType {ct} has {len(sched.by_type[ct])} assignment{'s' if len(sched.by_type[ct]) != 1 else ''} "
            f"in {environment}, but no Cluster of the inventory runs it: {environment}'s rollout gate waits for "
            "none of its clusters",
            plane.cluster_types[ct].where("metadata", "name"),
            f"add its Clusters to the environment branch (kind: Cluster, spec.clusterType: {ct}, with the "
            "statusContext each posts); if no cluster runs it yet, leave it out of the SchedulingPolicies",
        )
        for ct in unwatched[:INVENTORY_WARNINGS]
    ]
    if len(unwatched) > INVENTORY_WARNINGS:
        rest = unwatched[INVENTORY_WARNINGS:]
        found.append(Problem(
            f"{len(rest)} more cluster types with assignments in {environment} that no Cluster runs: "
            + ", ".join(rest[:5]) + (", ..." if len(rest) > 5 else ""),
            plane.cluster_types[rest[0]].where("metadata", "name"),
            "add their Clusters to the environment branch, or leave them out of the SchedulingPolicies",
        ))
    return found


def selection_warnings(plane: ControlPlane, environment: str, sched: Schedule) -> list[Problem]:
    """Policies and ConfigMaps asking for a label that no cluster type or deployment target of ``environment``
    carries. Nothing is checked against an empty side (no targets in the environment: nothing to compare)."""
    warnings: list[Problem] = []
    target_index = _index(t.labels for t in sched.targets.values())
    type_index = _index(ct.labels for ct in plane.cluster_types.values())
    workspaces = {t.workspace for t in sched.targets.values()}
    for name, policy in sorted(plane.policies.items()):
        spec = policy.spec
        said = len(warnings)
        wanted = spec.deployment_target_selector.workspace
        if wanted is not None and workspaces and wanted not in workspaces:  # a typo selected nothing, unwarned
            close = closest(wanted, workspaces, cutoff=0.5)  # until 2026-11-28 (a bad-input hunt)
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
        empty_side = sched.selects_nothing.get(name)
        if len(warnings) == said and empty_side is not None:
            by_side = {f: (s, i, w) for f, s, i, w in sides}
            warnings.extend(_together_warning(name, policy, empty_side, by_side))
        for field, selector, index, what in sides:
            for i, req in enumerate(selector.match_expressions):
                if index and req.operator != "Exists":
                    locate = _locator(policy, ("spec", field, "labelSelector", "matchExpressions", i))
                    check = _in_leaves_out if req.operator == "In" else _excludes_nothing
                    warnings.extend(check(f"SchedulingPolicy {name}", req, index, what, locate))
    warnings.extend(inventory_warnings(plane, environment, sched))
    warnings.extend(replaced_label_warnings(plane, environment))
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
                    close = closest(str(value), special[key], cutoff=0.5)
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
