"""The rollout gate, pure: expected clusters + reported statuses + policy + clock → a decision.

Rules (DESIGN.md §5): the expected set comes from the ``Cluster`` inventory (each cluster's exact
``statusContext``, or the policy's ``contextPattern`` filled with the cluster's name) or, without an inventory,
from ``minClusters`` contexts matching ``contextPattern``; any ``failure``/``error`` fails fast; a missing status
is pending, never success; all expected clusters successful for ``soakTime`` → success; still pending after
``timeout`` → failure; zero expected clusters is a configuration error unless ``allowEmpty``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from fleetflow.errors import InputError, Problem, Problems
from fleetflow.forge.base import STATUS_DESCRIPTION_LIMIT, CommitStatus
from fleetflow.model.durations import format_duration
from fleetflow.model.resources import RolloutPolicy
from fleetflow.render.incremental import ExpectedCluster

GateState = Literal["pending", "success", "failure"]

@dataclass(frozen=True)
class Reporter:
    """One status context the gate waits for."""

    cluster: str
    context: str


@dataclass
class GateDecision:
    state: GateState
    description: str
    expected: int
    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ready_at: datetime | None = None

    def status_description(self) -> str:
        text = self.description
        return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[: STATUS_DESCRIPTION_LIMIT - 1] + "…"


def reporters(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster], problems: Problems) -> list[Reporter]:
    """The contexts to wait for, from the inventory. Clusters with neither a statusContext nor a contextPattern
    to derive one from are configuration problems."""
    found: list[Reporter] = []
    for cluster in clusters:
        if cluster.status_context:
            found.append(Reporter(cluster.name, cluster.status_context))
        elif policy.context_pattern and "*" not in policy.context_pattern:
            context = policy.context_pattern.replace("{cluster}", cluster.name).replace(
                "{clusterType}", cluster.cluster_type
            )
            found.append(Reporter(cluster.name, context))
        else:
            problems.add(
                f"Cluster {cluster.name} has no statusContext",
                None,
                "set spec.statusContext on the Cluster, or rollout.contextPattern (e.g. flux/{cluster}) "
                "on the Environment",
            )
    return found


def configuration_problems(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster]) -> list[Problem]:
    """What makes the gate unable to decide, known before any rollout: clusters it cannot tell the context of,
    and an empty expected set (no ``Cluster`` runs an assigned cluster type) without ``minClusters`` or
    ``allowEmpty``. ``validate`` reports these up front; ``evaluate`` refuses with them."""
    found = Problems()
    expected = reporters(policy, clusters, found)
    if found:
        return list(found)
    if not expected and policy.min_clusters is None and not policy.allow_empty:
        return [
            Problem(
                "the gate expects zero clusters: no Cluster of this environment runs an assigned cluster type",
                None,
                "add Cluster resources (with statusContext) to the environment branch, set rollout.minClusters, "
                "or set rollout.allowEmpty: true",
            )
        ]
    return []


def evaluate(
    policy: RolloutPolicy,
    clusters: Sequence[ExpectedCluster],
    statuses: Mapping[str, CommitStatus],
    started: datetime,
    now: datetime,
) -> GateDecision:
    """Decide the gate. Raises InputError when the gate is misconfigured (with every problem)."""
    soak, timeout = policy.soak_time, policy.timeout
    problems = Problems()
    expected = reporters(policy, clusters, problems)
    problems.raise_if_any()
    if not expected and policy.min_clusters is None:
        if policy.allow_empty:
            return GateDecision("success", "rolled out: no clusters expected (allowEmpty)", 0)
        raise InputError(Problem(
            "the gate expects zero clusters: no Cluster of this environment runs an assigned cluster type",
            None,
            "add Cluster resources (with statusContext) to the environment branch, set rollout.minClusters, "
            "or set rollout.allowEmpty: true",
        ))
    if expected:
        watched = {r.context: r.cluster for r in expected}
    else:  # no inventory: every context matching the pattern counts
        pattern = policy.context_pattern or "*"
        watched = {c: c for c in statuses if fnmatch.fnmatchcase(c, pattern)}
    required = policy.min_clusters if policy.min_clusters is not None else len(expected)
    if required == 0 and policy.allow_empty:
        return GateDecision("success", "rolled out: no clusters required (allowEmpty)", 0)
    decision = GateDecision("pending", "", required)
    last_success: datetime | None = None
    for context, cluster in sorted(watched.items()):
        status = statuses.get(context)
        if status is None or status.state == "pending":
            decision.missing.append(cluster)
        elif status.state == "success":
            decision.succeeded.append(cluster)
            if status.updated_at is not None and (last_success is None or status.updated_at > last_success):
                last_success = status.updated_at
        else:
            detail = f" ({status.description})" if status.description else ""
            decision.failed.append(f"{cluster}{detail}")
    total = max(required, len(watched)) if expected else required
    count = f"{len(decision.succeeded)}/{total} clusters"
    if decision.failed:
        decision.state = "failure"
        decision.description = f"failed: {count}; failing: {', '.join(decision.failed)}"
        return decision
    if len(decision.succeeded) >= required and required > 0:
        ready = (last_success or started) + soak
        if now >= ready:
            decision.state = "success"
            decision.description = f"rolled out: {count}"
            return decision
        decision.ready_at = ready
        decision.description = f"soaking: {count}, ready at {ready:%Y-%m-%d %H:%M:%S} UTC"
        return decision
    if now - started >= timeout:
        decision.state = "failure"
        missing = ", ".join(decision.missing) or f"{required - len(decision.succeeded)} more"
        decision.description = f"timed out after {format_duration(timeout)}: {count}; missing: {missing}"
        return decision
    decision.description = f"rolling out: {count}"
    return decision
