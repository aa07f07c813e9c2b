"""The render variable ``Namespace`` and the warning when it is not a name Kubernetes takes for a namespace.

``Namespace`` is ``<environment>-<workspace>-<workload>-<target>``. Kubernetes takes a namespace name only as an
RFC 1123 DNS label: at most 63 characters, lowercase letters, digits and '-', starting and ending with a letter
or digit (kubernetes.io, "Object Names and IDs", DNS Label Names). fleetflow's names allow more ('.', '_', up to
253 characters) and a workspace is any text, so a long or dotted name gives a ``Namespace`` that Flux and Argo CD
refuse when they apply it, on every cluster the target is scheduled to.

A warning, not an error (it fails the run only under ``--strict``): fleetflow cannot tell a template that puts
``Namespace`` into a Kubernetes object from one that uses it otherwise (the ansible-pull reconciler of the example
names files after it, where any of these names works). And only when a template rendered for the target reads
``Namespace`` at all: a fleet whose templates name their namespaces themselves is not warned.

Two targets can also give one ``Namespace``: the name joins its parts with '-', which the parts may hold too
(workspace ``platform`` with workload ``team-api``, and workspace ``platform-team`` with workload ``api``). Scheduled
to one cluster type, both put their objects in one namespace on each of its clusters, and each reconciler takes the
Namespace object as its own: Flux deletes what a Kustomization applied when the Kustomization goes (with
``prune``, fluxcd.io "flux delete kustomization"), so unscheduling one target deletes the other's namespace, and
Argo CD reports the object as shared by two Applications (argoproj/argo-cd ``docs/user-guide/sync-options.md``,
"Fail the sync if a shared resource is found"). That is warned too, once per Namespace, at the target named last.

Cheap at any size: one match and one dictionary entry per deployment target (not per assignment); the templates
are read for ``Namespace``, and the schedule walked once, only when some target's is not a valid name or is shared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from jinja2 import Environment, meta

from fleetflow.errors import Location, Problems, some_of
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.resources import TEMPLATE_ROLES
from fleetflow.render.scheduling import Schedule, Target
from fleetflow.render.templates import CompiledTemplate

NAMESPACE_LIMIT = 63  # characters of a DNS label
_DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_NOT_IN_A_LABEL = re.compile(r"[^a-z0-9-]")
# the ClusterTypeSpec attributes of the templates rendered per assignment (a status reporter gets no Namespace)
_ASSIGNMENT_ROLES = tuple(role.attribute for role in TEMPLATE_ROLES if role.output is not None)
_SHOWN = 3  # Namespaces named in one problem besides the first
_DOC = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names"


def namespace_of(environment: str, target: Target) -> str:
    """The ``Namespace`` variable of ``target``'s assignments."""
    return f"{environment}-{target.workspace}-{target.id}"


def check_namespaces(
    plane: ControlPlane,
    environment: str,
    sched: Schedule,
    compiled: Mapping[str, CompiledTemplate],
    jinja: Environment,
    warnings: Problems,
) -> None:
    """Warn about every ``Namespace`` of ``environment`` that is not a valid namespace name and that a template
    rendered for its target reads: one warning per cause, at the file and line of the name that causes it (the
    environment's, the workspace's, the workload's or the target's name holding characters a namespace cannot
    hold, each with the Namespaces it spoils), one per target whose Namespace is too long, at the target, and one
    per Namespace that targets scheduled to one cluster type share, at the last of them."""
    names = {tid: namespace_of(environment, t) for tid, t in sched.targets.items()}
    bad = {tid: ns for tid, ns in names.items() if not _DNS_LABEL.fullmatch(ns)}
    shared = _shared(names)
    if not bad and not shared:
        return
    readers = _readers(plane, sched, compiled, jinja, bad.keys() | {tid for tids in shared.values() for tid in tids})
    _warn_shared(environment, sched, shared, readers, warnings)
    by_cause: dict[tuple[str, str, Location], list[str]] = {}  # (what, its name, where) -> the targets it spoils
    env_res = plane.environments.get(environment)
    for tid in sorted(readers.keys() & bad.keys()):
        target, namespace = sched.targets[tid], bad[tid]
        wl = plane.workloads[target.workload]
        parts = (
            ("environment", environment, env_res.where("metadata", "name") if env_res else target.location),
            ("workspace", target.workspace, plane.workspace_locations.get(target.workload, target.location)),
            ("workload", target.workload, wl.where("metadata", "name")),
            ("deployment target name", target.name, target.location),
        )
        for what, name, location in parts:
            if _NOT_IN_A_LABEL.search(name):
                by_cause.setdefault((what, name, location), []).append(tid)
        if len(namespace) > NAMESPACE_LIMIT:
            lengths = ", ".join(f"{what} {len(name)}" for what, name, _ in parts)
            warnings.add(
                f"Namespace {namespace!r} of target {tid} is {len(namespace)} characters, more than the "
                f"{NAMESPACE_LIMIT} a Kubernetes namespace name may have ({lengths}, and 3 '-'); "
                f"{readers[tid]} reads it",
                target.location,
                f"shorten the workspace, workload or target name: Flux and Argo CD refuse the namespace on every "
                f"cluster the target is scheduled to ({_DOC})",
            )
    for (what, name, location), tids in by_cause.items():
        first = tids[0]
        others = [bad[tid] for tid in tids[1:]]
        more = f" (and {len(others)} more: {some_of(others, _SHOWN)})"
        wrong = sorted(set(_NOT_IN_A_LABEL.findall(name)))
        warnings.add(
            f"{what} {name!r} makes Namespace {bad[first]!r} not a valid Kubernetes namespace name"
            + (more if others else "")
            + f": it holds {', '.join(repr(c) for c in wrong)}; {readers[first]} reads it",
            location,
            f"a namespace name holds only lowercase letters, digits and '-' ({_DOC}): rename it "
            f"(e.g. {_suggest(name)!r}); Flux and Argo CD refuse the namespace on every cluster the target is "
            "scheduled to",
        )


def _shared(names: Mapping[str, str]) -> dict[str, list[str]]:
    """Namespace -> the targets (more than one, in name order) that give it."""
    by_name: dict[str, list[str]] = {}
    for tid in sorted(names):
        by_name.setdefault(names[tid], []).append(tid)
    return {ns: tids for ns, tids in by_name.items() if len(tids) > 1}


def _warn_shared(
    environment: str,
    sched: Schedule,
    shared: Mapping[str, list[str]],
    readers: Mapping[str, str],
    warnings: Problems,
) -> None:
    """One warning per Namespace that two or more targets scheduled to one cluster type give, where a template
    rendered for them reads it: at the last of them (its name is the one to change, or any other)."""
    reading = {ns: {tid for tid in tids if tid in readers} for ns, tids in shared.items()}
    together: dict[str, tuple[str, list[str]]] = {}  # Namespace -> (a cluster type, the targets it has of them)
    for ct_name, scheduled in sched.by_type.items():
        for ns, wanted in reading.items():
            if ns not in together and len(wanted) > 1 and len(on_it := sorted(wanted.intersection(scheduled))) > 1:
                together[ns] = (ct_name, on_it)
    for ns, (ct_name, tids) in sorted(together.items()):
        parts = [f"{tid} (workspace {sched.targets[tid].workspace!r})" for tid in tids]
        last = sched.targets[tids[-1]]
        warnings.add(
            f"targets {', '.join(parts[:-1])} and {parts[-1]} of environment {environment} give one Namespace "
            f"{ns!r} and are both scheduled to cluster type {ct_name}; {readers[tids[-1]]} reads it",
            last.location,
            "rename a workspace, workload or deployment target so their Namespaces differ: on every cluster both "
            "are scheduled to their objects share one namespace, Flux deletes it with whichever Kustomization goes "
            "first (prune) and Argo CD reports it as shared by two Applications",
        )


def _readers(
    plane: ControlPlane,
    sched: Schedule,
    compiled: Mapping[str, CompiledTemplate],
    jinja: Environment,
    wanted: Iterable[str],
) -> dict[str, str]:
    """Target id (of ``wanted``) -> the first template rendered for it that reads ``Namespace``
    ("template T (cluster type C)"); targets no such template is rendered for are left out."""
    reads: dict[str, bool] = {}

    def reads_namespace(name: str) -> bool:
        if name not in reads:
            template = compiled.get(name)
            reads[name] = template is not None and any(
                "Namespace" in meta.find_undeclared_variables(jinja.parse(text))
                for text in template.source.manifests
            )
        return reads[name]

    left = set(wanted)
    found: dict[str, str] = {}
    seen: set[tuple[int, str]] = set()  # cluster types selected by the same policies share one tuple of targets
    for ct_name, tids in sched.by_type.items():
        if not left:
            break
        spec = plane.cluster_types[ct_name].spec
        reader = next((t for t in (getattr(spec, a) for a in _ASSIGNMENT_ROLES) if t and reads_namespace(t)), None)
        if reader is None or (id(tids), reader) in seen:
            continue
        seen.add((id(tids), reader))
        for tid in left.intersection(tids):
            found[tid] = f"template {reader} (cluster type {ct_name})"
        left.difference_update(found)
    return found


def _suggest(name: str) -> str:
    """``name`` as a namespace could hold it: lowercase, every other character a '-'."""
    return _NOT_IN_A_LABEL.sub("-", name.lower()).strip("-") or "x"
