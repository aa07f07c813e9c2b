"""Scheduling: which deployment targets go to which cluster types.

A deployment target takes part when its ``environment`` is the one being scheduled. Every scheduling policy
selects targets (workspace + label selector) and cluster types (label selector); each selected pair is an
assignment. Several policies selecting the same pair give one assignment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleetflow.errors import Location, Problems
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.resources import NAME_PATTERN, SchemaRef
from fleetflow.model.selectors import matches


@dataclass(frozen=True)
class Target:
    """A deployment target of one workload, with its effective labels."""

    id: str  # "<workload>-<target>": the folder name in the output
    workload: str
    name: str
    workspace: str
    environment: str
    labels: dict[str, str]
    manifests: dict[str, Any]
    schema_refs: tuple[tuple[SchemaRef, Location, str], ...]  # (ref, where it is written, owner description)
    location: Location


class Assignment(NamedTuple):
    """(cluster type, deployment target): a NamedTuple, cheap to build, hash and sort by the 100,000."""

    cluster_type: str
    target: str

    @property
    def id(self) -> str:
        return f"{self.cluster_type}/{self.target}"


@dataclass
class Schedule:
    """The environment's deployment targets and, per cluster type, the targets scheduled to it.

    ``by_type`` is the schedule itself: cluster types in name order, each with its targets in name order. Cluster
    types selected by the same policies share one tuple, so a fleet of many alike cluster types costs a tuple per
    kind of cluster type, not a pair per assignment (the render looks at an unchanged cluster type as a whole).
    ``assignments`` lists the pairs, made on first use."""

    targets: dict[str, Target] = field(default_factory=dict)
    by_type: dict[str, tuple[str, ...]] = field(default_factory=dict)
    policies: Mapping[Assignment, list[str]] = field(default_factory=dict)  # which policies selected each pair
    # policies that select nothing, and the side that selects nothing: "deploymentTargetSelector" (no target of the
    # environment; its cluster types are then not looked at) or "clusterTypeSelector"
    selects_nothing: dict[str, str] = field(default_factory=dict)
    _pairs: list[Assignment] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def assignments(self) -> list[Assignment]:
        """Every (cluster type, target) pair, in that order."""
        if self._pairs is None:
            self._pairs = [Assignment(ct, tid) for ct, tids in self.by_type.items() for tid in tids]
        return self._pairs

    def count(self) -> int:
        """How many assignments, without listing them."""
        return sum(len(tids) for tids in self.by_type.values())


def effective_labels(
    target_labels: dict[str, str], workload_labels: dict[str, str], workload: str, workspace: str
) -> dict[str, str]:
    """Target labels, then workload labels (workload wins), then workload= and workspace=."""
    labels = dict(target_labels)
    labels.update(workload_labels)
    labels["workload"] = workload
    labels["workspace"] = workspace
    return labels


def deployment_targets(plane: ControlPlane, environment: str, problems: Problems) -> dict[str, Target]:
    """The targets of ``environment``, keyed by id. Invalid or clashing names are recorded as problems."""
    targets: dict[str, Target] = {}
    for wl_name in sorted(plane.workloads):
        wl = plane.workloads[wl_name]
        workspace = plane.workspaces.get(wl_name, "default")
        wl_refs = tuple(
            (ref, wl.where("spec", "configSchemas", i), f"workload {wl_name}")
            for i, ref in enumerate(wl.spec.config_schemas)
        )
        for index, dt in enumerate(wl.spec.deployment_targets):
            if dt.environment != environment:
                continue
            where = wl.where("spec", "deploymentTargets", index, "name")
            target_id = f"{wl_name}-{dt.name}"
            if not NAME_PATTERN.match(dt.name) or not NAME_PATTERN.match(target_id):
                problems.add(
                    f"deployment target name {dt.name!r} of workload {wl_name} is not a valid folder name",
                    where,
                    "use lowercase letters, digits and '-' (it becomes <workload>-<target> in the GitOps repo)",
                )
                continue
            if target_id in targets:
                problems.add(
                    f"deployment target {target_id!r} is defined twice (also at {targets[target_id].location})",
                    where,
                    "give each target of a workload a unique name for an environment",
                )
                continue
            refs = wl_refs + tuple(
                (ref, wl.where("spec", "deploymentTargets", index, "configSchemas", i), f"target {target_id}")
                for i, ref in enumerate(dt.config_schemas)
            )
            targets[target_id] = Target(
                id=target_id,
                workload=wl_name,
                name=dt.name,
                workspace=workspace,
                environment=environment,
                labels=effective_labels(dt.labels, wl.labels, wl_name, workspace),
                manifests=dt.manifests.model_dump(by_alias=True, exclude_none=True),
                schema_refs=refs,
                location=where,
            )
    return targets


def schedule(plane: ControlPlane, environment: str, problems: Problems) -> Schedule:
    """Targets of the environment × cluster types, as selected by the scheduling policies."""
    result = Schedule(targets=deployment_targets(plane, environment, problems))
    cluster_types = sorted(plane.cluster_types.items())
    targets = sorted(result.targets.items())
    selections: list[tuple[str, frozenset[str], frozenset[str]]] = []
    chosen_by: dict[str, list[int]] = {}  # cluster type -> the selections that pick it
    for policy_name in sorted(plane.policies):
        spec = plane.policies[policy_name].spec
        dts = spec.deployment_target_selector
        selected_targets = [
            tid
            for tid, t in targets
            if (dts.workspace is None or dts.workspace == t.workspace) and matches(dts.label_selector, t.labels)
        ]
        if not selected_targets:
            result.selects_nothing[policy_name] = "deploymentTargetSelector"
            continue
        selected_types = [
            name for name, ct in cluster_types if matches(spec.cluster_type_selector.label_selector, ct.labels)
        ]
        if not selected_types:
            result.selects_nothing[policy_name] = "clusterTypeSelector"
        for ct_name in selected_types:
            chosen_by.setdefault(ct_name, []).append(len(selections))
        selections.append((policy_name, frozenset(selected_types), frozenset(selected_targets)))
    # one sorted tuple per set of selecting policies, shared by every cluster type those policies pick
    kinds: dict[tuple[int, ...], tuple[str, ...]] = {}
    for ct_name in sorted(chosen_by):
        kind = tuple(chosen_by[ct_name])
        tids = kinds.get(kind)
        if tids is None:
            tids = kinds[kind] = tuple(sorted(set().union(*(selections[i][2] for i in kind))))
        result.by_type[ct_name] = tids
    result.policies = PolicyIndex(selections, result)
    return result


class PolicyIndex(Mapping[Assignment, list[str]]):
    """Which policies selected each assignment (in policy-name order), answered from each policy's selected cluster
    types and targets: a dictionary of 100,000 pairs would cost more than the schedule itself."""

    def __init__(self, selections: list[tuple[str, frozenset[str], frozenset[str]]], sched: Schedule) -> None:
        self._selections = selections  # (policy, its cluster types, its targets), in policy-name order
        self._schedule = sched

    def __getitem__(self, key: Assignment) -> list[str]:
        ct, target = key
        found = [name for name, types, targets in self._selections if ct in types and target in targets]
        if not found:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[Assignment]:
        return iter(self._schedule.assignments)

    def __len__(self) -> int:
        return self._schedule.count()
