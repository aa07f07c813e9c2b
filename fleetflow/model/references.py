"""Cross-reference checks over a loaded control plane: every name that points somewhere must land."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from graphlib import CycleError, TopologicalSorter
from typing import Any

from fleetflow.errors import Location, Problems, and_list, closest
from fleetflow.model.controlplane import ControlPlane, Resource
from fleetflow.model.documents import KALYPSO_API
from fleetflow.model.resources import TEMPLATE_ROLES, EnvironmentSpec


def check_references(
    plane: ControlPlane, environment: str | None, problems: Problems, warnings: Problems | None = None
) -> None:
    """Templates of cluster types, cluster types of clusters, environment chain, singletons.

    Deployment targets naming an environment main does not define are ``warnings``: per the contract, targets
    of other environments do not take part, so an app team preparing ``staging`` stops nobody's render.
    """
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
            close = closest(cluster.spec.cluster_type, plane.cluster_types)
            types = sorted(plane.cluster_types)
            problems.add(
                f"Cluster {name}: unknown clusterType {cluster.spec.cluster_type!r}",
                cluster.where("spec", "clusterType"),
                (f"did you mean {close!r}? " if close else "")
                + (f"ClusterTypes on this environment branch: {', '.join(types[:20])}"
                   + (f" (and {len(types) - 20} more)" if len(types) > 20 else "")
                   if types else "name a ClusterType defined on this environment branch (there is none)"),
            )
    _check_environments(plane, environment, problems, warnings if warnings is not None else Problems())
    if warnings is not None:
        _kalypso_config_templates(plane, warnings)
    singletons: list[tuple[str, list[Resource[Any]]]] = [
        ("GitOpsRepo", list(plane.gitops_repos.values())),
        ("BaseRepo", list(plane.base_repos.values())),
    ]
    for kind, found in singletons:
        check_single(kind, found, problems)


def check_single(kind: str, found: Sequence[Resource[Any]], problems: Problems) -> None:
    """A kind the environment branch holds once (GitOpsRepo, BaseRepo): a problem at each one after the first."""
    for res in found[1:]:
        problems.add(f"more than one {kind} on the environment branch", res.location, f"keep a single {kind}")


def check_environment_chain(envs: Mapping[str, Resource[EnvironmentSpec]], problems: Problems, *,
                            main_branch: str = "main") -> list[str]:
    """The chain's problems (an ``after`` naming an environment main does not define, a cycle, branches that are
    not each environment's own) and its order. Every fleet command walks the chain before it renders anything
    (fleetflow.promotion.context), so they are checked there as well as with the plane."""
    check_environment_branches(envs, problems, main_branch)
    for name, env in sorted(envs.items()):
        for i, upstream in enumerate(env.spec.after):
            if upstream not in envs:
                problems.add(
                    f"Environment {name}: after names unknown environment {upstream!r}",
                    env.where("spec", "after", i),
                    "known environments: " + ", ".join(sorted(envs)),
                )
    check_kalypso_order(envs, problems)
    return environment_order(envs, problems)  # reports a cycle


def check_kalypso_order(envs: Mapping[str, Resource[EnvironmentSpec]], problems: Problems) -> None:
    """Kalypso's Environments, copied as they are, with no order between them. Kalypso's Environment has no field
    for the order (kalypso-scheduler api/v1alpha1/environment_types.go: ``EnvironmentSpec`` holds ``controlPlane``
    only); its control-plane workflows kept it outside these files, in each GitHub environment's
    ``NEXT_ENVIRONMENT`` secret (kalypso-control-plane .github/workflows/check-promote.yaml runs
    ``gh workflow run cd.yaml -f environment=$NEXT_ENVIRONMENT`` once the rollout is done). Here an environment
    without ``after`` comes first, so ``dev`` and ``stage`` as Kalypso's sample writes them were both promoted by
    every push to main, ``stage`` without waiting for ``dev``'s rollout, and nothing said so. Two or more
    environments that do not write ``after`` at all, one of them in Kalypso's apiVersion, are one problem; an
    ``after: []`` written says "first" on purpose, as a fleetflow Environment without ``after`` does."""
    unordered = [name for name, env in sorted(envs.items()) if not _writes_after(env)]
    kalypso = [name for name in unordered if envs[name].doc.api_version == KALYPSO_API]
    if len(unordered) < 2 or not kalypso:
        return
    first, then = unordered[0], unordered[1]
    problems.add(
        f"Environments {and_list(unordered)} have no after: each comes first, so every push to main promotes to all "
        f"of them at once, none waiting for another's rollout. Kalypso kept the order outside its Environments "
        f"(each GitHub environment's NEXT_ENVIRONMENT secret); fleetflow reads it from spec.after",
        envs[kalypso[0]].where("spec"),
        f"write the environment each one follows, e.g. 'after: [{first}]' in {then}'s spec; write 'after: []' "
        "in an environment that is meant to come first",
    )


def _writes_after(env: Resource[EnvironmentSpec]) -> bool:
    spec = env.doc.body.get("spec")
    return isinstance(spec, dict) and "after" in spec


def check_environment_branches(envs: Mapping[str, Resource[EnvironmentSpec]], problems: Problems,
                               main_branch: str = "main") -> None:
    """Each Environment's control-plane branch must be its own, and not ``main``: promote writes the environment's
    pin (base-repo.yaml) on it and renders the environment from it. Until 2026-11-29 both were accepted: two
    Environments on one branch re-pinned each other, and the second's promotion (after the first's gate passed)
    was refused for "GitOpsRepo dev renders into branch dev ..., which holds environment dev's output", with a
    hint to change the other environment's GitOpsRepo; ``branch: main`` refused each promotion with a
    "does not belong on an environment branch" for every Environment, Template and Workload of main."""
    owner: dict[str, str] = {}
    written = {name: branch_key(env) for name, env in envs.items()}
    # an environment on the branch of its own name claims it first: the problem is at the other one's branch
    for name in sorted(written, key=lambda n: (written[n][0] != n, n)):
        branch, key = written[name]
        if branch == main_branch:
            problems.add(
                f"Environment {name}: branch {branch!r} is the control plane's main branch: promote pins the "
                f"environment on its branch (base-repo.yaml) and renders it from the ClusterTypes, Clusters and "
                f"ConfigMaps there, which main does not hold",
                envs[name].where(*key),
                f"give {name} a branch of its own (spec.branch; without it, the environment's name, {name!r})",
            )
            continue
        first = owner.setdefault(branch, name)
        if first != name:
            problems.add(
                f"Environment {name}: branch {branch!r} is also Environment {first}'s branch: each environment's "
                "pin (base-repo.yaml) and configuration live on its own branch, so promoting one would re-pin the "
                f"other, and {name} would be rendered from {first}'s clusters",
                envs[name].where(*key),
                f"give {name} a branch of its own (spec.branch; without it, the environment's name, {name!r})",
            )


def branch_key(env: Resource[EnvironmentSpec]) -> tuple[str, tuple[str, ...]]:
    """The control-plane branch that holds an Environment's configuration (and its pin), and the key it is written
    at: ``spec.branch``, else Kalypso's ``spec.controlPlane.branch``, else the environment's name."""
    spec = env.spec
    if spec.branch:
        return spec.branch, ("spec", "branch")
    if spec.control_plane and spec.control_plane.branch:
        return spec.control_plane.branch, ("spec", "controlPlane", "branch")
    return env.name, ("metadata", "name")


def environment_branch(env: Resource[EnvironmentSpec]) -> str:
    """The control-plane branch that holds an environment's configuration (and its pin)."""
    return branch_key(env)[0]


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


def _check_environments(
    plane: ControlPlane, environment: str | None, problems: Problems, warnings: Problems
) -> None:
    envs = plane.environments
    check_environment_chain(envs, problems)
    if environment is not None and envs and environment not in envs:
        problems.add(
            f"unknown environment {environment!r}",
            None,
            "environments defined on main: " + ", ".join(sorted(envs)),
        )
    for name, env in sorted(envs.items()):
        if environment is None or name == environment:
            _unitless_durations(name, env, warnings)
    if envs:
        for wl_name, wl in sorted(plane.workloads.items()):
            for i, dt in enumerate(wl.spec.deployment_targets):
                if dt.environment not in envs:
                    close = closest(dt.environment, envs)
                    warnings.add(
                        f"workload {wl_name}: target {dt.name} names environment {dt.environment!r}, which main "
                        "does not define; the target takes part in no render until it does",
                        wl.where("spec", "deploymentTargets", i, "environment"),
                        (f"did you mean {close!r}? " if close else "")
                        + "known environments: " + ", ".join(sorted(envs)),
                    )


# a Go template action that reads one of Kalypso's template variables (kalypso-scheduler scheduler/templater.go,
# ``dataType``); ``.Labels`` is left out: Prometheus' and Alertmanager's templates read ``.Labels`` too
_KALYPSO_ACTION = re.compile(
    r"\{\{[^{}]*?(?<![\w\])])\.(?:DeploymentTargetName|Namespace|Environment|Workspace|Workload|Manifests|"
    r"ClusterType|ConfigData)\b[^{}]*\}\}")


def _kalypso_config_templates(plane: ControlPlane, warnings: Problems) -> None:
    """A ConfigMap value holding a Go template action on one of Kalypso's variables (``{{ .Environment }}-db``).
    Kalypso's templater renders its output again while it holds ``{{`` (``replaceTemplateVariables``: "handle
    nested templates"), so such a value, written into a config template by ``toYaml``, came out as ``dev-db``;
    fleetflow renders templates, not config values, and wrote ``{{ .Environment }}-db`` on every cluster without
    a word. Valid (a value may hold another tool's template), so a warning at the value's line. Only values that
    hold ``{{`` are searched."""
    for name, cm in sorted(plane.config_maps.items()):
        for key, value in cm.spec.data.items():
            found = _kalypso_action(value)
            if found is None:
                continue
            jinja = re.sub(r"(?<![\w\])])\.([A-Za-z])", r"\1", found)
            warnings.add(
                f"ConfigMap {name}: {key} holds the Go template {found}, which is written into the rendered "
                "files as it is: Kalypso rendered a template's output again while it held '{{', fleetflow renders "
                "templates only, never config values",
                cm.where("data", key),
                f"write the value itself in a ConfigMap labelled for where it applies, or build it in the Template "
                f"that reads it ({jinja} there)",
            )


def _kalypso_action(value: Any) -> str | None:
    if isinstance(value, str):
        if "{{" not in value:
            return None
        match = _KALYPSO_ACTION.search(value)
        return match.group(0) if match else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _kalypso_action(item)
        if found is not None:
            return found
    return None


UNITLESS_WARNED_BELOW = 300  # seconds: a bare number under 5 minutes reads more like minutes than a gate's time


def _unitless_durations(name: str, env: Resource[EnvironmentSpec], warnings: Problems) -> None:
    """A ``timeout`` or ``soakTime`` written without a unit (``timeout: 30``) and short: it is read as seconds (a
    whole number is seconds), but those who write Flux's and Kubernetes' durations write ``5m`` and may mean
    minutes; a gate that times out after 30 s fails every real rollout. Valid, so a warning at the value's line.
    Flux's own ``timeout`` takes no bare number: a Go duration whose pattern needs a unit,
    ``^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$`` (fluxcd/kustomize-controller api/v1/kustomization_types.go,
    ``KustomizationSpec.Timeout``, a metav1.Duration)."""
    spec = env.doc.body.get("spec")  # as written: the model holds the timedelta it was read as
    rollout = spec.get("rollout") if isinstance(spec, dict) else None
    if not isinstance(rollout, dict):
        return
    for key in ("timeout", "soakTime"):
        value = rollout.get(key)
        if isinstance(value, bool) or not isinstance(value, int | str):
            continue
        digits = str(value).strip()
        if not digits.isdigit() or not 0 < int(digits) < UNITLESS_WARNED_BELOW:
            continue
        warnings.add(
            f"Environment {name}: spec.rollout.{key} {value!r} has no unit and is read as {int(digits)} seconds",
            env.where("spec", "rollout", key),
            f"write {int(digits)}s to keep {int(digits)} seconds, or {int(digits)}m; a number without a unit is "
            "seconds here, where Flux's and Kubernetes' durations always take one",
        )


def check_tree_belongs(
    plane: ControlPlane, environment: str, problems: Problems, *, checked_out_branch: str | None = None
) -> None:
    """The environment-branch tree must be ``environment``'s, not another environment's.

    Evidence, as found in the tree: the ``GitOpsRepo``'s name (fleetflow names it after its environment) and its
    ``branch`` (the GitOps branch, by default the environment's name), and the branch checked out in the tree when
    it is a git work tree (an ``Environment``'s ``branch``). Evidence naming another defined environment, and
    none naming this one, is an error: rendering ``--env envs/qa --environment dev`` would put qa's clusters
    into dev's state.
    """
    envs = plane.environments
    if environment not in envs:
        return
    mine = {environment, environment_branch(envs[environment])}
    evidence: list[tuple[str, str, Location | None]] = []  # (environment it names, what, where)
    branch_owner = {environment_branch(env): name for name, env in envs.items()}
    gitops = plane.gitops_repo()
    if gitops is not None:
        evidence.append((gitops.name, f"GitOpsRepo {gitops.name!r}", gitops.where("metadata", "name")))
        if gitops.spec.branch:
            evidence.append((gitops.spec.branch, f"GitOpsRepo branch {gitops.spec.branch!r}",
                             gitops.where("spec", "branch")))
    if checked_out_branch:
        owner = branch_owner.get(checked_out_branch, checked_out_branch)
        evidence.append((owner, f"checked-out branch {checked_out_branch!r}", None))
    if any(named in mine for named, _, _ in evidence):
        return
    for named, what, where in evidence:
        if named in envs and named not in mine:
            problems.add(
                f"this environment tree belongs to environment {named!r} ({what}), not {environment!r}",
                where,
                f"pass --environment {named}, or --env a checkout of branch "
                f"{environment_branch(envs[environment])!r}",
            )
            return


def check_trees_not_empty(plane: ControlPlane, main_label: str, env_label: str, problems: Problems) -> None:
    """An empty tree is a wrong path, not an empty fleet: say so instead of "ok: 0 assignments"."""
    origins: set[str] = set()
    for table in (plane.environments, plane.templates, plane.workloads, plane.registrations, plane.config_schemas,
                  plane.cluster_types, plane.clusters, plane.policies, plane.config_maps, plane.gitops_repos,
                  plane.base_repos):
        origins.update(res.origin for res in table.values())
    if "main" not in origins:
        problems.add(
            f"no fleetflow resource under {main_label}",
            Location(main_label),
            "--main must be a checkout of the control plane's main branch (Environments, Templates, Workloads)",
        )
    if "env" not in origins:
        problems.add(
            f"no fleetflow resource under {env_label}",
            Location(env_label),
            "--env must be a checkout of an environment branch (ClusterTypes, Clusters, ConfigMaps, "
            "SchedulingPolicies, GitOpsRepo)",
        )
