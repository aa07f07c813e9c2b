"""A name of fleetflow's that a rendered object writes as a Kubernetes label value, where the API server refuses it.

fleetflow's names may be longer than a label value (a workload or a target name up to 253 characters, a workspace
any text), and that is fine where fleetflow itself matches them (selectors, ConfigMap labels: design §7,
"Labels"). A template that writes one into an object's ``metadata.labels`` (the example's ``fleetflow.dev/workload:
{{ Workload }}``, ``fleetflow.dev/workspace: {{ Workspace }}``, or ``{{ Labels | toYaml }}``, which holds
``workload`` and ``workspace``) hands it to the API server, which checks every object's labels, a custom resource's
too (apimachinery ``pkg/api/validation/objectmeta.go`` ``ValidateObjectMetaAccessor`` →
``pkg/apis/meta/v1/validation`` ``ValidateLabels`` → ``pkg/util/validation`` ``IsValidLabelValue``: at most 63
characters, ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``; apiextensions-apiserver
``pkg/registry/customresource/validator.go`` calls the first for every custom resource) and refuses the object:
``metadata.labels: Invalid value: "...": must be no more than 63 characters``, on every cluster.

A Flux ``Kustomization`` named after a name too long refuses everything it applies, whatever its own labels: the
kustomize-controller labels every object it applies ``kustomize.toolkit.fluxcd.io/name: <the Kustomization's
name>`` (fluxcd/kustomize-controller ``docs/spec/v1beta2/kustomizations.md``: "List all Kubernetes objects
reconciled from a Kustomization"), and fluxcd/flux2#2004 shows the result: "ConfigMap/default/test-long dry-run
failed, reason: Invalid, error: ... metadata.labels: Invalid value: ...: must be no more than 63 characters" (closed
wontfix). An Argo CD ``Application`` named so is taken: Argo CD truncates the instance label it writes to 63
characters (argo-cd ``docs/user-guide/resource_tracking.md``: "Labels are truncated to 63 characters"; since 3.0
it tracks by annotation), so its name alone is no problem here. A template that uses a name otherwise (a file name
in the ansible-pull example, an AppProject name, which may have 253) is none either.

So this is an error at the name, only where a rendered object writes it as a label value (or names a Flux
Kustomization after it): the assignment fails as a template error does, one problem per name and use.

Cost: the names are checked once per render (:class:`LabelNames`, one match per target and cluster type); when
every one is a label value, as in any fleet whose names are short, an assignment pays one truth test. Only an
assignment whose names include one that is not pays for reading what it renders (:func:`refused_labels`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from fleetflow.errors import Location, Problem
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.resources import LABEL_PART_LIMIT, kubernetes_label_value_problem
from fleetflow.render.scheduling import Schedule, Target

_FLUX_KUSTOMIZATION = "kustomize.toolkit.fluxcd.io/"
_SIGNS = "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set"


@dataclass(frozen=True)
class Name:
    """One of fleetflow's names that is not a label value the API server takes: what it is (as the message says
    it), the name, why, and where it is written."""

    what: str
    name: str
    why: str
    location: Location


class LabelNames:
    """The names of ``environment``'s assignments that are not label values, by where they come from."""

    def __init__(self, plane: ControlPlane, environment: str, sched: Schedule) -> None:
        self._environment: list[Name] = []
        why = kubernetes_label_value_problem(environment)
        env = plane.environments.get(environment)
        if why is not None and env is not None:
            self._environment.append(Name("environment", environment, why, env.where("metadata", "name")))
        self._cluster_types: dict[str, list[Name]] = {}
        for ct_name in sched.by_type:
            why = kubernetes_label_value_problem(ct_name)
            if why is not None:
                where = plane.cluster_types[ct_name].where("metadata", "name")
                self._cluster_types[ct_name] = [Name("cluster type", ct_name, why, where)]
        self._targets: dict[str, list[Name]] = {}
        for tid, target in sched.targets.items():
            parts = (("workspace", target.workspace), ("workload", target.workload),
                     ("deployment target", target.name), ("DeploymentTargetName (<workload>-<target>)", tid))
            found = [Name(what, name, why, _where(plane, what, target)) for what, name in parts
                     if (why := kubernetes_label_value_problem(name)) is not None]
            if found:
                self._targets[tid] = found

    def __bool__(self) -> bool:
        return bool(self._environment or self._cluster_types or self._targets)

    def of(self, cluster_type: str, target: str) -> list[Name]:
        """The names of the assignment that are not label values; empty for nearly every assignment."""
        return [*self._environment, *self._cluster_types.get(cluster_type, ()), *self._targets.get(target, ())]


def _where(plane: ControlPlane, what: str, target: Target) -> Location:
    """Where the ``what`` of ``target`` is written: asked only for a name that is no label value (a document's
    positions are worked out when first asked for, which costs reading its file again)."""
    if what == "workspace":
        return plane.workspace_locations.get(target.workload, target.location)
    workload = plane.workloads.get(target.workload)
    if what == "workload" and workload is not None:
        return workload.where("metadata", "name")
    return target.location


def refused_labels(aid: str, files: Mapping[str, tuple[str, bytes]], names: list[Name]) -> list[Problem]:
    """The problems of assignment ``aid``, whose ``names`` are not label values, in what it renders (``files``: path
    -> (its template's name, its text)): each object that writes one of them into its ``metadata.labels`` (as the
    value, or in it), and each Flux Kustomization named after one; one problem per name, template and label."""
    found: dict[tuple[str, str, str], Problem] = {}
    for path, (template, data) in files.items():
        for obj in _objects(path, data):
            metadata = obj.get("metadata")
            if not isinstance(metadata, dict):
                continue
            kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "object"
            labels = metadata.get("labels")
            for key, value in labels.items() if isinstance(labels, dict) else ():
                if not isinstance(value, str) or kubernetes_label_value_problem(value) is None:
                    continue
                for name in _causes(value, names):
                    if (name.name, template, key) not in found:
                        as_ = "as the value" if value == name.name else "in the value"
                        found[name.name, template, key] = Problem(
                            f"{aid}: {name.what} {name.name!r} is not a Kubernetes label value, it {name.why}: "
                            f"template {template!r} writes it {as_} of label {key} of a {kind} "
                            f"({path.rsplit('/', 1)[1]})",
                            name.location,
                            f"the API server refuses the {kind} on every cluster (metadata.labels: Invalid value: "
                            f"must be no more than {LABEL_PART_LIMIT} characters; {_SIGNS}): shorten the "
                            f"{_plain(name.what)}, or have the template write it as an annotation",
                        )
            name_of = metadata.get("name")
            api = obj.get("apiVersion")
            if (kind == "Kustomization" and isinstance(api, str) and api.startswith(_FLUX_KUSTOMIZATION)
                    and isinstance(name_of, str) and len(name_of) > LABEL_PART_LIMIT):
                for name in _causes(name_of, names):
                    if (name.name, template, "") not in found:
                        found[name.name, template, ""] = Problem(
                            f"{aid}: {name.what} {name.name!r} is not a Kubernetes label value, it {name.why}: "
                            f"template {template!r} names a Flux Kustomization after it "
                            f"({path.rsplit('/', 1)[1]}), and Flux labels every object the Kustomization applies "
                            "kustomize.toolkit.fluxcd.io/name: <its name>",
                            name.location,
                            "the API server refuses every object the Kustomization applies, on every cluster "
                            f"(fluxcd/flux2#2004: a Kustomization name over {LABEL_PART_LIMIT} characters): shorten "
                            f"the {_plain(name.what)} so that the Kustomization's name has at most "
                            f"{LABEL_PART_LIMIT} characters",
                        )
    return list(found.values())


def _causes(value: str, names: list[Name]) -> list[Name]:
    """The names ``value`` holds, less those that hold another of them: a workload name too long is the cause, not
    the ``DeploymentTargetName`` made of it too."""
    held = [name for name in names if name.name in value]
    return [name for name in held if not any(other is not name and other.name in name.name for other in held)]


def _plain(what: str) -> str:
    """What to shorten: the workload or target name, for ``DeploymentTargetName`` (``<workload>-<target>``)."""
    return "workload or deployment target name" if what.startswith("DeploymentTargetName") else f"{what} name"


def _objects(path: str, data: bytes) -> Iterator[dict[str, Any]]:
    """The objects of a rendered file, as an agent reads them (YAML documents, or one JSON document); nothing
    for another content type, or a text the checks passed that PyYAML still does not build."""
    suffix = path.rsplit(".", 1)[-1]
    docs: Iterable[Any]
    try:
        if suffix == "json":
            docs = [json.loads(data)]
        elif suffix in ("yaml", "yml"):
            docs = list(yaml.load_all(data, Loader=yaml.CSafeLoader))
        else:
            return
    except (ValueError, yaml.YAMLError):
        return
    for doc in docs:
        if isinstance(doc, dict):
            yield doc
