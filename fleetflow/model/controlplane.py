"""Load a control plane (``main`` + one environment branch) into typed resources, checking all of it at once.

``load_control_plane`` is pure apart from reading the two trees: workload registrations are resolved through
a ``WorkloadFetcher`` the caller passes in (git lives in ``fleetflow.forge.registrations``). Loading is a stage
that owns its :class:`Problems` (``fleetflow.errors``, the one way problems travel): it ends by raising one
:class:`InputError` with every problem found, or a :class:`GitError` with every registration git could not
fetch (exit 3), and otherwise returns the control plane.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import Field, ValidationError

from fleetflow.collector import kept
from fleetflow.errors import GitError, Location, Problems, validation_problems, value_kind
from fleetflow.model.documents import (
    ACCEPTED_APIS,
    FLEETFLOW_API,
    KALYPSO_API,
    KALYPSO_OUTPUT_KINDS,
    Document,
    GitFiles,
    ParseCache,
    Tree,
    read_tree,
)
from fleetflow.model.resources import (
    CLUSTER_TYPE_NAME_LIMIT,
    ENVIRONMENT_NAME_LIMIT,
    KIND_ORIGINS,
    LABEL_KEY_HINT,
    LABEL_VALUE_HINT,
    NAME_LIMIT,
    NAME_PATTERN,
    SPEC_MODELS,
    BaseRepoSpec,
    ClusterSpec,
    ClusterTypeSpec,
    ConfigSchemaSpec,
    EnvironmentSpec,
    GitOpsRepoSpec,
    Open,
    SchedulingPolicySpec,
    Spec,
    TemplateSpec,
    WorkloadRegistrationSpec,
    WorkloadSpec,
    label_key_problem,
    label_value_problem,
)

PLATFORM_CONFIG_LABEL = "platform-config"
PRIORITY_ANNOTATION = "fleetflow.dev/priority"
DEFAULT_WORKSPACE = "default"

S = TypeVar("S", bound=Spec)


class ConfigMapSpec(Open):
    data: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class Resource(Generic[S]):
    """A loaded, validated document: metadata, typed spec, and the document for locations."""

    kind: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: S
    doc: Document
    origin: str  # "main", "env" or "app"

    @property
    def location(self) -> Location:
        return self.doc.location

    def where(self, *path: str | int) -> Location:
        return self.doc.where(*path)


WorkloadFetcher = Callable[[Resource[WorkloadRegistrationSpec], Problems], list[Document]]
"""The Workload repo's documents of one registration; what is wrong in them goes to the ``Problems`` given, and a
repo that git cannot fetch raises :class:`GitError` (its message names the registration and says why)."""


@dataclass
class ControlPlane:
    environments: dict[str, Resource[EnvironmentSpec]] = field(default_factory=dict)
    templates: dict[str, Resource[TemplateSpec]] = field(default_factory=dict)
    workloads: dict[str, Resource[WorkloadSpec]] = field(default_factory=dict)
    workspaces: dict[str, str] = field(default_factory=dict)  # workload name -> workspace
    # workload name -> where its workspace is written (the Workload's spec.workspace, or its registration's);
    # absent for a workload in the default workspace
    workspace_locations: dict[str, Location] = field(default_factory=dict)
    registrations: dict[str, Resource[WorkloadRegistrationSpec]] = field(default_factory=dict)
    config_schemas: dict[str, Resource[ConfigSchemaSpec]] = field(default_factory=dict)
    cluster_types: dict[str, Resource[ClusterTypeSpec]] = field(default_factory=dict)
    clusters: dict[str, Resource[ClusterSpec]] = field(default_factory=dict)
    policies: dict[str, Resource[SchedulingPolicySpec]] = field(default_factory=dict)
    config_maps: dict[str, Resource[ConfigMapSpec]] = field(default_factory=dict)
    gitops_repos: dict[str, Resource[GitOpsRepoSpec]] = field(default_factory=dict)
    base_repos: dict[str, Resource[BaseRepoSpec]] = field(default_factory=dict)

    def gitops_repo(self) -> Resource[GitOpsRepoSpec] | None:
        return next(iter(self.gitops_repos.values()), None)

    def base_repo(self) -> Resource[BaseRepoSpec] | None:
        return self.base_repos.get("main") or next(iter(self.base_repos.values()), None)


_TABLES = {
    "Environment": "environments",
    "Template": "templates",
    "Workload": "workloads",
    "WorkloadRegistration": "registrations",
    "ConfigSchema": "config_schemas",
    "ClusterType": "cluster_types",
    "Cluster": "clusters",
    "SchedulingPolicy": "policies",
    "ConfigMap": "config_maps",
    "GitOpsRepo": "gitops_repos",
    "BaseRepo": "base_repos",
}

# the kinds whose names go into file names or git refs: a shorter limit than NAME_LIMIT, and why (said in the hint)
NAME_LIMITS = {
    "ClusterType": (CLUSTER_TYPE_NAME_LIMIT, " (a cluster type's name is also the file name of its state, <name>.json, "
                    "and a file name holds 255 bytes)"),
    "Environment": (ENVIRONMENT_NAME_LIMIT, " (an environment's name is part of the git refs fleetflow writes, such "
                    "as refs/tags/fleetflow/merge-when-green/<name>, and GitHub refuses a ref longer than 255 bytes)"),
}
_ORIGIN_TEXT = {"main": "the main branch", "env": "an environment branch", "app": "a workload repo"}


def _format_loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) if loc else "spec"


_LABELS_SEEN: set[str] = set()  # label keys and values found valid (a fleet has few, used many times)


def label_problems(key: object, value: str) -> list[tuple[str, str]]:
    """(what is wrong, hint) for a label key and a value Kubernetes would refuse (apimachinery IsLabelKey and
    IsLabelValue, as ValidateLabels and ValidateLabelSelector apply them): none for a valid label."""
    found: list[tuple[str, str]] = []
    seen = _LABELS_SEEN
    if key not in seen:
        why = label_key_problem(key)
        if why is not None:
            found.append((f"invalid label key {key!r}: it {why}", LABEL_KEY_HINT))
        elif len(seen) < 100_000:
            seen.add(key)  # type: ignore[arg-type]  # a valid key is text
    if value not in seen:
        why = label_value_problem(value)
        if why is not None:
            found.append((f"invalid value {value!r} of label {key}: it {why}", LABEL_VALUE_HINT))
        elif len(seen) < 100_000:
            seen.add(value)
    return found


def _label_text(doc: Document, key: str, k: str, v: object) -> str:
    """A label or annotation value that YAML read as a number or boolean, as the file writes it: ``1.10`` is the
    label ``1.10`` (YAML's number 1.1 made it ``1.1`` until 2026-11-29, and a selector asking for ``"1.10"`` was
    told "did you mean '1.1'?"), ``0x1F`` is ``0x1F``; null is the empty value."""
    if v is None:
        return ""
    written = doc.written("metadata", key, k)
    if written is not None:
        return written
    return "true" if v is True else "false" if v is False else str(v)


def _string_map(doc: Document, meta: dict[str, Any], key: str, problems: Problems) -> dict[str, str]:
    """``metadata.<key>`` of ``doc`` (its ``meta``) as strings; a problem for each part that cannot be one, and for
    each label Kubernetes would refuse."""
    raw = meta.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.add(f"metadata.{key} must be a mapping", doc.where("metadata", key))
        return {}
    if key == "labels":
        seen = _LABELS_SEEN
        if all(type(v) is str and k in seen and v in seen for k, v in raw.items()):
            return dict(raw)  # the common case: known keys and values (YAML gave str: nothing to convert)
    result: dict[str, str] = {}
    for k, v in raw.items():
        if isinstance(v, dict | list):
            problems.add(
                f"metadata.{key}.{k} must be a string, not a {type(v).__name__}",
                doc.where("metadata", key, k),
                "quote the value",
            )
            continue
        text = v if type(v) is str else _label_text(doc, key, k, v)
        if key == "labels":
            for message, hint in label_problems(k, text):
                problems.add(message, doc.where("metadata", key, k), hint)
        result[k] = text
    return result


def build_resource(doc: Document, origin: str, problems: Problems) -> Resource[Any] | None:
    """Validate one document's envelope and spec. Returns None (and records problems) when it is broken."""
    before = len(problems)
    api, kind = doc.api_version, doc.kind
    if "apiVersion" not in doc.body or "kind" not in doc.body:
        missing = [k for k in ("apiVersion", "kind") if k not in doc.body]
        problems.add(
            f"document has no {' or '.join(missing)}",
            doc.location,
            "every document needs apiVersion, kind, metadata.name (or list the file in .fleetflowignore)",
        )
        return None
    if kind == "ConfigMap":
        if api != "v1":
            problems.add(f"ConfigMap must have apiVersion v1, not {api!r}", doc.where("apiVersion"))
    elif kind in SPEC_MODELS:
        if api not in ACCEPTED_APIS:
            problems.add(
                f"unsupported apiVersion {api!r} for {kind}",
                doc.where("apiVersion"),
                f"use {FLEETFLOW_API} (or scheduler.kalypso.io/v1alpha1)",
            )
    elif kind in KALYPSO_OUTPUT_KINDS and doc.api_version == KALYPSO_API:
        problems.add(f"kind {kind!r} is made by Kalypso's controllers; fleetflow does not read one", doc.where("kind"),
                     KALYPSO_OUTPUT_KINDS[kind])
        return None
    else:
        problems.add(
            f"unknown kind {kind!r}",
            doc.where("kind"),
            "fleetflow reads "
            + ", ".join(sorted([*SPEC_MODELS, "ConfigMap"]))
            + "; list files of other tools in .fleetflowignore",
        )
        return None
    allowed = KIND_ORIGINS[kind]
    if origin not in allowed:
        where_ok = " or ".join(_ORIGIN_TEXT[o] for o in sorted(allowed))
        problems.add(
            f"{kind} does not belong on {_ORIGIN_TEXT[origin]}", doc.where("kind"), f"move it to {where_ok}"
        )
    name = doc.name
    limit, why = NAME_LIMITS.get(kind, (NAME_LIMIT, ""))
    given = doc.metadata.get("name")
    if given is not None and not isinstance(given, str):  # 123, [a, b]: "missing" until 2026-11-28
        problems.add(f"metadata.name is {value_kind(given)}, not text", doc.where("metadata", "name"),
                     "write the name as text (quote a number: name: \"123\")")
    elif not name:
        problems.add("metadata.name is missing", doc.where("metadata"), "give the resource a name")
    elif not NAME_PATTERN.match(name) or len(name) > limit:
        problems.add(
            f"invalid name {name!r}" + (f" ({len(name)} characters)" if len(name) > limit else ""),
            doc.where("metadata", "name"),
            f"use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most "
            f"{limit} characters{why}",
        )
    meta = doc.metadata  # once for both maps
    labels = _string_map(doc, meta, "labels", problems)
    annotations = _string_map(doc, meta, "annotations", problems)
    if kind == "ConfigMap":
        if labels.get(PLATFORM_CONFIG_LABEL) != "true":
            problems.add(
                'ConfigMap is not labelled platform-config: "true"',
                doc.where("metadata"),
                'label config containers platform-config: "true", or list the file in .fleetflowignore',
            )
        model: type[Spec] = ConfigMapSpec
        raw_spec: Any = {"data": doc.body.get("data") or {}}
        spec_path: tuple[str, ...] = ()
    else:
        model = SPEC_MODELS[kind]
        raw_spec = doc.body.get("spec")
        spec_path = ("spec",)
        if raw_spec is None:
            raw_spec = {}
        if not isinstance(raw_spec, dict):
            problems.add(f"{kind} spec must be a mapping", doc.where("spec"))
            return None
    try:
        spec = model.model_validate(raw_spec)
    except ValidationError as exc:
        problems.extend(validation_problems(
            exc, doc.where, prefix=f"{kind} {name or '?'}: ", path=spec_path, empty=kind,
            unknown_hint="check the spelling against DESIGN.md §2 (fields are camelCase)",
            missing_hints=model.missing_hints, unknown_hints=model.unknown_hints, written=doc.written,
        ))
    else:
        _spec_label_problems(kind, spec, doc, problems)
    if len(problems) > before:
        return None
    return Resource(kind, name, labels, annotations, spec, doc, origin)


def _spec_label_problems(kind: str, spec: Spec, doc: Document, problems: Problems) -> None:
    """Labels a spec writes (a deployment target's ``labels``, a SchedulingPolicy's selectors) that Kubernetes would
    refuse, as metadata.labels are checked: a selector asking for ``region: West Europe`` or ``key: Bad Key``
    selected nothing or matched a label no Kubernetes object can carry, without a word, until 2026-11-29."""
    if isinstance(spec, WorkloadSpec):
        for i, target in enumerate(spec.deployment_targets):
            for key, value in target.labels.items():
                path = ("spec", "deploymentTargets", i, "labels", key)
                for message, hint in label_problems(key, value):
                    problems.add(f"{kind} {doc.name}: target {target.name}: {message}", doc.where(*path), hint)
    elif isinstance(spec, SchedulingPolicySpec):
        sides = (("deploymentTargetSelector", spec.deployment_target_selector.label_selector),
                 ("clusterTypeSelector", spec.cluster_type_selector.label_selector))
        for side, selector in sides:
            base = ("spec", side, "labelSelector")
            subject = f"{kind} {doc.name}: {side}"
            for key, value in selector.match_labels.items():
                for message, hint in label_problems(key, value):
                    problems.add(f"{subject}: matchLabels: {message}", doc.where(*base, "matchLabels", key), hint)
            for i, req in enumerate(selector.match_expressions):
                at = (*base, "matchExpressions", i)
                why = label_key_problem(req.key)
                if why is not None:
                    problems.add(f"{subject}: matchExpressions: invalid label key {req.key!r}: it {why}",
                                 doc.where(*at, "key"), LABEL_KEY_HINT)
                for j, value in enumerate(req.values):
                    why = label_value_problem(value)
                    if why is not None:
                        problems.add(f"{subject}: matchExpressions: invalid value {value!r} of label {req.key}: "
                                     f"it {why}", doc.where(*at, "values", j), LABEL_VALUE_HINT)


def _add(plane: ControlPlane, res: Resource[Any], problems: Problems) -> None:
    table: dict[str, Resource[Any]] = getattr(plane, _TABLES[res.kind])
    other = table.get(res.name)
    if other is not None:
        problems.add(
            f"duplicate {res.kind} name {res.name!r} (also defined at {other.where('metadata', 'name')})",
            res.where("metadata", "name"),
            "names must be unique per kind across main and the environment branch",
        )
        return
    table[res.name] = res


def _build(
    documents: Iterable[tuple[Document, str]], fetch: WorkloadFetcher | None, problems: Problems
) -> ControlPlane:
    """The control plane of ``documents`` and of every registration's Workload repo. Input problems go to
    ``problems``; registrations git cannot fetch raise one :class:`GitError` naming all of them."""
    plane = ControlPlane()
    for doc, origin in documents:
        res = build_resource(doc, origin, problems)
        if res is not None:
            _add(plane, res, problems)
    unfetched: list[GitError] = []
    for name, reg in sorted(plane.registrations.items()):
        if fetch is None:
            problems.add(
                f"WorkloadRegistration {name}: cannot read workload repos here",
                reg.location,
                "run with git access (the CLI fetches registrations)",
            )
            continue
        before = len(problems)
        try:
            docs = fetch(reg, problems)
        except GitError as exc:
            unfetched.append(exc)  # every registration is tried: all of them are reported at once
            continue
        read_cleanly = len(problems) == before
        found = 0
        for doc in docs:
            if doc.kind != "Workload":
                continue  # workload repos hold other files too; only Workload documents are read
            res = build_resource(doc, "app", problems)
            if res is not None:
                found += 1
                _add(plane, res, problems)
                # the Workload's own workspace, else its registration's, else the default
                named = res if res.spec.workspace else reg if reg.spec.workspace else None
                plane.workspaces[res.name] = (named.spec.workspace if named else None) or DEFAULT_WORKSPACE
                if named is not None:
                    plane.workspace_locations[res.name] = named.where("spec", "workspace")
        if found == 0 and read_cleanly:
            problems.add(
                f"WorkloadRegistration {name}: no Workload found in {reg.spec.workload.repo} "
                f"(branch {reg.spec.workload.branch}, path {reg.spec.workload.path})",
                reg.where("spec", "workload"),
                "check repo, branch and path",
            )
    if unfetched:
        raise GitError("\n".join(str(exc) for exc in unfetched))
    for name, wl in plane.workloads.items():
        if name not in plane.workspaces:
            plane.workspaces[name] = wl.spec.workspace or DEFAULT_WORKSPACE
            if wl.spec.workspace:
                plane.workspace_locations[name] = wl.where("spec", "workspace")
    return plane


def load_control_plane(
    main: Path | GitFiles,
    env: Path | GitFiles,
    *,
    main_label: str | None = None,
    env_label: str | None = None,
    fetch: WorkloadFetcher | None = None,
    cache: ParseCache | None = None,
) -> ControlPlane:
    """Read both trees (folders, or commits' files read from git: ``main_label`` and ``env_label`` name folders
    only) and build the control plane, checked structurally. Raises every problem at once.

    The plane lives until the run ends: it is made inside :func:`fleetflow.collector.kept`."""
    problems = Problems()
    pairs: list[tuple[Document, str]] = []
    with kept():
        for root, label, origin in ((main, main_label, "main"), (env, env_label, "env")):
            tree = Tree(root, label if label is not None else str(root)) if isinstance(root, Path) else root
            docs = read_tree(tree, problems, cache)
            pairs.extend((d, origin) for d in docs)
        plane = _build(pairs, fetch, problems)
    problems.raise_if_any()
    return plane
