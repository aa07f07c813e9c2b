"""Cross-reference checks over a loaded control plane: every name that points somewhere must land."""

from __future__ import annotations

from collections.abc import Mapping
from graphlib import CycleError, TopologicalSorter
from typing import Any

from fleetflow.errors import Problems
from fleetflow.model.controlplane import ControlPlane, Resource
from fleetflow.model.resources import TEMPLATE_ROLES, EnvironmentSpec


def check_references(plane: ControlPlane, environment: str | None, problems: Problems) -> None:
    """Templates of cluster types, cluster types of clusters, environment chain, singletons."""
    for name, ct in sorted(plane.cluster_types.items()):
        for role in TEMPLATE_ROLES:
            ref = getattr(ct.spec, role.attribute)
            if ref is None:  # optional roles (statusReporter)
                continue
            field, ttype = role.field, role.template_type
            template = plane.templates.get(ref)
            if template is None:
                known = (
                    ", ".join(sorted(t for t, r in plane.templates.items() if r.spec.type == ttype)) or "none"
                )
                problems.add(
                    f"ClusterType {name}: {field} names unknown template {ref!r}",
                    ct.where("spec", field),
                    f"define a Template of type {ttype} named {ref} on main (known {ttype} templates: {known})",
                )
            elif template.spec.type != ttype:
                problems.add(
                    f"ClusterType {name}: {field} names template {ref!r} of type {template.spec.type}, not {ttype}",
                    ct.where("spec", field),
                    f"point {field} at a Template whose spec.type is {ttype}",
                )
    for name, cluster in sorted(plane.clusters.items()):
        if cluster.spec.cluster_type not in plane.cluster_types:
            problems.add(
                f"Cluster {name}: unknown clusterType {cluster.spec.cluster_type!r}",
                cluster.where("spec", "clusterType"),
                "name a ClusterType defined on this environment branch",
            )
    _check_environments(plane, environment, problems)
    singletons: list[tuple[str, list[Resource[Any]]]] = [
        ("GitOpsRepo", list(plane.gitops_repos.values())),
        ("BaseRepo", list(plane.base_repos.values())),
    ]
    for kind, found in singletons:
        if len(found) > 1:
            for res in found[1:]:
                problems.add(
                    f"more than one {kind} on the environment branch", res.location, f"keep a single {kind}"
                )


def environment_order(envs: Mapping[str, Resource[EnvironmentSpec]], problems: Problems) -> list[str]:
    """Environments in promotion order: every environment after all of its ``after`` (``graphlib``), and the
    environments that become ready at the same step by name. A cycle is a problem (then the order is by name)."""
    graph = {name: sorted(u for u in env.spec.after if u in envs) for name, env in envs.items()}
    sorter = TopologicalSorter(graph)
    try:
        sorter.prepare()
    except CycleError as exc:
        cycle: list[str] = list(exc.args[1][:-1])  # each comes before the next, and the last before the first
        start = cycle.index(min(cycle))
        cycle = cycle[start:] + cycle[:start]
        problems.add(
            f"Environment chain has a cycle: {' -> '.join([*cycle, cycle[0]])} (each comes after the one before it)",
            envs[cycle[0]].where("spec", "after"),
            "an environment cannot (indirectly) come after itself",
        )
        return sorted(envs)
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order.extend(ready)
        sorter.done(*ready)
    return order


def _check_environments(plane: ControlPlane, environment: str | None, problems: Problems) -> None:
    envs = plane.environments
    for name, env in sorted(envs.items()):
        for i, upstream in enumerate(env.spec.after):
            if upstream not in envs:
                problems.add(
                    f"Environment {name}: after names unknown environment {upstream!r}",
                    env.where("spec", "after", i),
                    "known environments: " + ", ".join(sorted(envs)),
                )
    environment_order(envs, problems)  # reports a cycle
    if environment is not None and envs and environment not in envs:
        problems.add(
            f"unknown environment {environment!r}",
            None,
            "environments defined on main: " + ", ".join(sorted(envs)),
        )
    if envs:
        for wl_name, wl in sorted(plane.workloads.items()):
            for i, dt in enumerate(wl.spec.deployment_targets):
                if dt.environment not in envs:
                    problems.add(
                        f"workload {wl_name}: target {dt.name} names unknown environment {dt.environment!r}",
                        wl.where("spec", "deploymentTargets", i, "environment"),
                        "known environments: " + ", ".join(sorted(envs)),
                    )
