"""The resource kinds of DESIGN.md §2, as pydantic models of their ``spec``.

Field names are camelCase in YAML (as Kalypso), snake_case in Python. Unknown fields are errors, so a typo
(``reconciller:``) is reported with its line instead of being silently ignored.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from fleetflow.errors import ONE_OF, OneOf
from fleetflow.model.durations import parse_duration

BRANCH_NAME = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]+$")
"""A branch name fleetflow passes to git: plain characters, no leading '-' (git would read an option), no '..'
(the forge's git commands check it too: :func:`fleetflow.forge.git.check_ref`)."""


BRANCH_NAME_LIMIT = 244  # GitHub refuses a ref longer than 255 bytes ("GH005"), and a branch is refs/heads/<name>


def unsafe_branch(name: str) -> str | None:
    """Why ``name`` is not a branch name fleetflow uses, or None: plain characters (:data:`BRANCH_NAME`), git's
    rules for a ref's parts (``git check-ref-format``: no part empty or starting with '.' or ending with '.lock',
    not ending with '.'; ``HEAD`` is refused by ``git branch``) and GitHub's length. Until 2026-11-29 ``a//b``,
    ``.x``, ``x.`` and a 300-character name passed ``validate`` and failed when git or GitHub wrote the ref."""
    parts = name.split("/")
    odd = sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9._/-]", c)})
    dotted = next((p for p in parts if p.startswith(".")), None)
    locked = next((p for p in parts if p.endswith(".lock")), None)
    why = (
        "is empty" if not name
        else "starts with '-' (git would read it as an option)" if name.startswith("-")
        else f"has {', '.join(repr(c) for c in odd)}" if odd
        else "has '..'" if ".." in name
        else "has an empty part (a '/' at its start or end, or '//')" if "" in parts
        else f"has a part starting with '.' ({dotted!r})" if dotted is not None
        else f"has a part ending with '.lock' ({locked!r})" if locked is not None
        else "ends with '.'" if name.endswith(".")
        else "is HEAD, which git keeps for itself" if name == "HEAD"
        else None
    )
    if why is not None:
        return (f"{name!r} is not a usable branch name: it {why} (a branch name here: letters, digits, '.', '_', "
                "'-' and '/'; no part empty, starting with '.' or ending with '.lock')")
    if len(name) > BRANCH_NAME_LIMIT:
        return (f"branch name of {len(name)} characters: GitHub takes at most {BRANCH_NAME_LIMIT} (refs/heads/<name> "
                "is at most 255 bytes)")
    assert BRANCH_NAME.match(name)  # the reasons above are the pattern's, each said
    return None


def _branch(value: str | None) -> str | None:
    reason = unsafe_branch(value) if value is not None else None
    if reason is not None:
        raise ValueError(reason)
    return value

NAME_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,251}[a-z0-9])?$")
NAME_LIMIT = 253  # characters of a name (NAME_PATTERN's, Kubernetes' DNS subdomain names')
CLUSTER_TYPE_NAME_LIMIT = 235  # a cluster type names its state shard, <name>.json, written through a temporary
# .<name>.json.fleetflow-tmp: 20 characters more, and a file name holds 255 bytes (ext4, XFS, APFS; git
# refuses to check out a longer one: "File name too long")
ENVIRONMENT_NAME_LIMIT = 218  # an environment's name is part of the names fleetflow derives from it; the longest is
# the merge record's tag refs/tags/fleetflow/merge-when-green/<name> (fleetflow.promotion.merge_records), and GitHub
# refuses a ref longer than 255 bytes ("GH005: Sorry, refs longer than 255 bytes are not allowed"): 255 - 37. The
# others then fit as well: refs/heads/fleetflow/<name> (the PR's head branch, 234), refs/heads/<name> (the default
# environment branch, 244), git's own .lock file beside a ref's file (250), the status context fleetflow/<name>
# (GitHub: 255 characters, 245), <name>.diff in --plan-dir, written through .<name>.diff.partial (a file name's
# 255 bytes, 241), the workflows' artifact fleetflow-shard-<name>-K-of-N (upload-artifact: 256 characters, 229).
# Names are ASCII (NAME_PATTERN): characters are bytes. Sources and the check of each: tests/test_validate_ahead.py
# Kubernetes' label syntax (k8s.io/apimachinery pkg/api/validate/content/kube.go, IsLabelKey and IsLabelValue, which
# pkg/util/validation's IsQualifiedName and IsValidLabelValue are; ValidateLabels and ValidateLabelSelector in
# pkg/apis/meta/v1/validation apply them to metadata.labels, matchLabels and matchExpressions' keys and values)
LABEL_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")  # a key's name part, a value
LABEL_PART_LIMIT = 63  # characters of a key's name part (and of a value in Kubernetes: see label_value_problem)
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")  # a key's prefix
DNS_SUBDOMAIN_LIMIT = 253
LABEL_KEY_HINT = ("a label key is a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and "
                  "ending with a letter or digit), with an optional DNS subdomain prefix and '/' (example.com/name)")
LABEL_VALUE_HINT = ("a label value is empty, or letters, digits, '-', '_' and '.', starting and ending with a letter "
                    "or digit, as Kubernetes takes them (write it in those characters, such as west-europe)")


def _odd(text: str, allowed: str) -> str:
    """The characters of ``text`` outside the class ``allowed``, named (``' ', '!'``)."""
    return ", ".join(repr(c) for c in sorted({c for c in text if not re.fullmatch(allowed, c)}))


def _name_part_problem(part: str, limit: int | None = LABEL_PART_LIMIT) -> str | None:
    if limit is not None and len(part) > limit:
        return f"is {len(part)} characters long (at most {limit})"
    if LABEL_NAME_PART.fullmatch(part):
        return None
    odd = _odd(part, r"[-A-Za-z0-9_.]")
    return f"has {odd}" if odd else "does not start and end with a letter or digit"


def label_key_problem(key: object) -> str | None:
    """Why ``key`` is not a Kubernetes label key (IsLabelKey: ``[prefix/]name``), or None."""
    if not isinstance(key, str):
        return "is not text"
    if not key:
        return "is empty"
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or "/" in prefix):
        return "has more than one '/'" if prefix else "has an empty prefix before '/'"
    if slash and (len(prefix) > DNS_SUBDOMAIN_LIMIT or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return (f"has a prefix {prefix!r} that is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most "
                f"{DNS_SUBDOMAIN_LIMIT} characters)")
    if not name:
        return "has an empty name after '/'"
    why = _name_part_problem(name)
    return None if why is None else (f"has a name part {name!r} that {why}" if slash else why)


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a Kubernetes label value (IsLabelValue: empty, or a name part), or None. Its length is
    not limited to Kubernetes' 63 characters: fleetflow's names (up to 253) are label values too, those a ConfigMap
    selects with (``cluster-type``, ``deployment-target``, ``workload``, ``environment``) and a target's own
    ``workload`` and ``workspace``; a value only Kubernetes would refuse for its length still matches as written."""
    return None if not value else _name_part_problem(value, None)


def kubernetes_label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a label value the API server takes (apimachinery ``IsValidLabelValue``: empty, or at
    most 63 characters of a name part), or None: :func:`label_value_problem` with Kubernetes' length limit, for a
    value a rendered object writes (:mod:`fleetflow.render.label_values`)."""
    return None if not value else _name_part_problem(value, LABEL_PART_LIMIT)


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)

    missing_hints: ClassVar[dict[str, str]] = {}
    """How to write a required field that is missing or empty, by its path below ``spec`` (camelCase, dotted);
    a field not listed gets "add <field>"."""
    unknown_hints: ClassVar[dict[str, str]] = {}
    """Where a field written at a place it does not belong goes, by its path below ``spec`` (camelCase, dotted); a
    field not listed gets "check the spelling"."""


class Open(Spec):
    """A spec part that accepts extra keys (kept as given)."""

    model_config = ConfigDict(extra="allow")


# --- selectors -----------------------------------------------------------------------------------------------


class LabelSelectorRequirement(Spec):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @field_validator("operator", mode="before")
    @classmethod
    def _node_affinity_operator(cls, value: object) -> object:
        """``Gt`` and ``Lt`` are operators of node affinity (k8s.io/api core/v1 types.go, NodeSelectorRequirement:
        "Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and Lt."), not of a label selector (apimachinery
        pkg/apis/meta/v1/types.go, LabelSelectorOperator: In, NotIn, Exists, DoesNotExist): say so, rather than
        only list the four."""
        if isinstance(value, str) and value.strip().lower() in ("gt", "lt"):
            raise ValueError(
                f"{value} compares a label as a number in node affinity (a NodeSelectorRequirement) only; a label "
                "selector takes In, NotIn, Exists or DoesNotExist: list the values it may have with In (operator: "
                "In, values: [\"4\", \"8\"])")
        return value

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs a non-empty 'values' list")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no 'values'")
        return self


class LabelSelector(Spec):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


def _written(value: object) -> object:
    """A selector written with no value (``labelSelector:``) is as absent as one not written: Kubernetes' null
    label selector, which matches no objects (k8s.io/apimachinery pkg/apis/meta/v1/types.go, ``LabelSelector``),
    and a required field that Kalypso's CRD refuses. ``{}`` is the selector that matches everything."""
    if value is None:
        raise PydanticCustomError("missing", "required field is empty")
    return value


def _selector_level(field: str, example: str) -> Any:
    """A validator of the mapping under ``field`` that refuses ``matchLabels`` or ``matchExpressions`` written right
    under it (as a Deployment's ``selector`` takes them) instead of under its ``labelSelector``, in one error that
    says where they go. Until 2026-11-29 that was two errors, "labelSelector: required field is missing" and
    "matchLabels: unknown field (hint: check the spelling ...)", the second sending one to look for a typo."""

    def check(value: object) -> object:
        if isinstance(value, dict) and "labelSelector" not in value:
            misplaced = [k for k in ("matchLabels", "matchExpressions") if k in value]
            if misplaced:
                raise ValueError(
                    f"{' and '.join(misplaced)} {'is' if len(misplaced) == 1 else 'are'} written right under "
                    f"{field}, not under its labelSelector: write {field}: {example} (a SchedulingPolicy's "
                    "selectors each hold a labelSelector, as in Kalypso)")
        return value

    return model_validator(mode="before")(check)


class DeploymentTargetSelector(Spec):
    workspace: str | None = None
    label_selector: LabelSelector  # required, as in Kalypso: `{}` selects every target, absence is an error

    _label_selector_written = field_validator("label_selector", mode="before")(_written)
    _level = _selector_level("deploymentTargetSelector", "{labelSelector: {matchLabels: {workload: <name>}}}")


class ClusterTypeSelector(Spec):
    label_selector: LabelSelector  # required, as in Kalypso

    _label_selector_written = field_validator("label_selector", mode="before")(_written)
    _level = _selector_level("clusterTypeSelector", "{labelSelector: {matchLabels: {<label>: <value>}}}")


# --- main ----------------------------------------------------------------------------------------------------


def _not_a_boolean(value: object) -> object:
    """A boolean refused where a whole number is expected, as the other kinds are ("is a boolean, not a whole
    number"): pydantic's lax mode reads ``true`` as 1 and ``false`` as 0, so ``minClusters: true`` quietly expected
    one cluster (until 2026-11-29). Quoted digits (``"5"``) stay a number, as before."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


WholeNumber = Annotated[int, BeforeValidator(_not_a_boolean)]
"""A whole-number field of a spec: every one is written so (tests/test_documents_and_state.py holds that)."""


class RolloutPolicy(Spec):
    min_clusters: WholeNumber | None = Field(default=None, ge=0)
    context_pattern: str | None = None
    soak_time: timedelta = timedelta(0)
    timeout: timedelta = timedelta(minutes=30)
    allow_empty: bool = False

    @field_validator("soak_time", "timeout", mode="before")
    @classmethod
    def _duration(cls, value: object, info: ValidationInfo) -> timedelta:
        """Parsed once, here: ``90``, ``"90s"``, ``"15m"``, ``"1h30m"``. A value of another kind is refused as a
        one-of field is (``validation_problems`` words it: "is a list, not a duration ..."; "a duration is ...,
        got ['x']", a Python list, until 2026-11-29)."""
        if isinstance(value, timedelta):
            return value
        if isinstance(value, bool) or not isinstance(value, str | int):
            key = to_camel(info.field_name or "")
            raise PydanticCustomError(ONE_OF, "must be {expected}", {
                "expected": "a duration (whole seconds, or a text like 90s, 15m, 1h30m)",
                "hint": f"write {key}: 90s or {key}: 15m"})
        duration = parse_duration(value)
        # ``timeout: 0`` (or a negative whole number, which the text forms cannot write) failed every rollout at
        # its first check, "timed out after 0s" or "after -1h59m55s", and ``soakTime: -60`` soaked nothing; both
        # passed validate (until 2026-11-29)
        if info.field_name == "timeout" and duration <= timedelta(0):
            raise ValueError(f"{value!r} gives the clusters no time: the gate would fail every rollout at its first "
                             "check; give how long to wait for their reports, such as 30m (the default) or 2h")
        if duration < timedelta(0):
            raise ValueError(f"{value!r} is negative: give how long every cluster must stay green, such as 10m, "
                             "or 0 to pass as soon as all reported success")
        return duration


LABEL_NAME_LIMIT = 50  # GitHub: "name is too long (maximum is 50 characters)" (github/docs#32156)
# A GitHub login (letters, digits, single hyphens, not at either end; at most 39 characters), or a team as
# ORG/TEAM-SLUG, which "Request reviewers for a pull request" takes as its team_reviewers
GITHUB_LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
REVIEWER = re.compile(rf"{GITHUB_LOGIN}(?:/[A-Za-z0-9_.-]+)?")


class PullRequestPolicy(Spec):
    auto_merge: bool = False
    labels: list[str] = Field(default_factory=list)
    reviewers: list[str] = Field(default_factory=list)

    @field_validator("labels")
    @classmethod
    def _label_names(cls, value: list[str]) -> list[str]:
        """Checked here, not when GitHub refuses them: the PR is opened before its labels are added."""
        for label in value:
            if not label.strip():
                raise ValueError("a label needs a name")
            if len(label) > LABEL_NAME_LIMIT:
                raise ValueError(f"label {label!r} is {len(label)} characters long; GitHub takes at most "
                                 f"{LABEL_NAME_LIMIT}")
        return value

    @field_validator("reviewers")
    @classmethod
    def _reviewer_names(cls, value: list[str]) -> list[str]:
        for reviewer in value:
            if not REVIEWER.fullmatch(reviewer):
                raise ValueError(f"reviewer {reviewer!r} is neither a GitHub login (letters, digits and single "
                                 "hyphens) nor a team written ORG/TEAM-SLUG")
        return value


class ControlPlaneRef(Open):
    repo: str | None = None
    branch: str | None = None
    path: str | None = None

    _branch_name = field_validator("branch")(_branch)


class EnvironmentSpec(Spec):
    after: list[str] = Field(default_factory=list)
    branch: str | None = None
    control_plane: ControlPlaneRef | None = None
    rollout: RolloutPolicy = Field(default_factory=RolloutPolicy)
    pull_request: PullRequestPolicy = Field(default_factory=PullRequestPolicy)
    concurrency: Literal["supersede", "queue"] = "supersede"
    # true: the environment is rendered by N shard jobs and a stitch job (the fleetflow-schedule-shards workflow),
    # never in one job: promote pins it and reconcile reports the schedule due, neither renders it
    sharded_schedule: bool = False

    _branch_name = field_validator("branch")(_branch)


# The extensions whose files GitOps agents read as manifests, each only in lowercase: Flux's kustomize-controller
# generates its kustomization from the files whose extension is ".yaml" or ".yml" (fluxcd/pkg
# kustomize/kustomize_generator.go, scanManifests: filepath.Ext(path) != ".yaml" && != ".yml" is skipped), and
# Argo CD's directory source reads the files matching `^.*\.(yaml|yml|json|jsonnet)$` (argo-cd
# reposerver/repository/repository.go, manifestFile); both comparisons are case-sensitive.
_AGENT_EXTENSIONS = frozenset({"yaml", "yml", "json"})


class TemplateSpec(Spec):
    type: Literal["reconciler", "namespace", "config", "status"]
    content_type: str = "yaml"
    manifests: list[str] = Field(min_length=1)

    @field_validator("content_type")
    @classmethod
    def _extension(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,15}", value):
            raise ValueError("contentType must be a file extension such as yaml, json, sh, env, properties")
        if value != value.lower() and value.lower() in _AGENT_EXTENSIONS:
            raise ValueError(
                f"{value} names files that Flux and Argo CD pass over without a word (Flux reads the files ending in "
                ".yaml or .yml, Argo CD those ending in .yaml, .yml or .json, in lowercase only); write contentType: "
                f"{value.lower()}")
        return value


class ManifestsRef(Open):
    repo: str | None = None
    branch: str | None = None
    path: str | None = None

    _branch_name = field_validator("branch")(_branch)


SchemaRef = Annotated[str | dict[str, Any], OneOf(
    "the name of a ConfigSchema or an inline JSON Schema (a mapping)",
    "write a ConfigSchema's name (- edge-site) or a schema's keys (- {type: object, required: [SITE_ID]})")]


class DeploymentTarget(Spec):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    environment: str
    manifests: ManifestsRef = Field(default_factory=ManifestsRef)
    config_schemas: list[SchemaRef] = Field(default_factory=list)


class WorkloadSpec(Spec):
    workspace: str | None = None
    deployment_targets: list[DeploymentTarget] = Field(default_factory=list)
    config_schemas: list[SchemaRef] = Field(default_factory=list)


class WorkloadSource(Spec):
    repo: str
    branch: str = "main"
    path: str = "."

    _branch_name = field_validator("branch")(_branch)


class WorkloadRegistrationSpec(Spec):
    workload: WorkloadSource
    workspace: str | None = None


class ConfigSchemaSpec(Spec):
    schema_: Annotated[dict[str, Any] | str, OneOf(
        "a JSON Schema (a mapping, or its JSON or YAML text)",
        "write the schema's keys indented below 'schema:' (type: object, properties: ...), or its text in a block "
        "after 'schema: |'; for a schema that takes anything (true), write {}")] = Field(alias="schema")


# --- environment branch --------------------------------------------------------------------------------------


class ClusterTypeSpec(Spec):
    reconciler: str
    namespace_service: str
    config_type: str
    # optional: a Template of type `status`, rendered once per cluster type (not per assignment) into
    # <clusterType>/_status/: e.g. the Flux Provider + Alert that make each cluster report its rollout
    status_reporter: str | None = None


class TemplateRole(NamedTuple):
    """A ClusterType field that names a Template: the field (attribute and as written), the Template type it must
    name, and the file each assignment's render of it becomes (``<role>.<contentType>``); None for the status
    reporter, rendered once per cluster type."""

    attribute: str
    field: str
    template_type: str
    output: str | None


#: every role, in the order an assignment's files are rendered (the one table: references and the pipeline read it)
TEMPLATE_ROLES = (
    TemplateRole("reconciler", "reconciler", "reconciler", "reconciler"),
    TemplateRole("namespace_service", "namespaceService", "namespace", "namespace"),
    TemplateRole("config_type", "configType", "config", "platform-config"),
    TemplateRole("status_reporter", "statusReporter", "status", None),
)


class ClusterSpec(Spec):
    cluster_type: str
    # written empty, it read as no statusContext: an error at the document's start that pointed at no key, or, with
    # rollout.contextPattern, the pattern's context without a word (until 2026-11-29)
    status_context: str | None = Field(default=None, min_length=1)


class SchedulingPolicySpec(Spec):
    """Both selectors, and the ``labelSelector`` of each, are required, as in Kalypso's SchedulingPolicy CRD
    (kalypso-scheduler config/crd/bases/scheduler.kalypso.io_schedulingpolicies.yaml: ``required:
    [clusterTypeSelector, deploymentTargetSelector]``, and ``[labelSelector]`` in each). A policy that leaves one
    out selected every target or cluster type until 2026-11-29; "every" is now written: ``labelSelector: {}``."""

    deployment_target_selector: DeploymentTargetSelector
    cluster_type_selector: ClusterTypeSelector

    _selectors_written = field_validator("deployment_target_selector", "cluster_type_selector", mode="before")(
        _written)

    missing_hints: ClassVar[dict[str, str]] = {
        "deploymentTargetSelector": "say which deployment targets it schedules (deploymentTargetSelector: "
        "{labelSelector: {matchLabels: {workload: <name>}}}); for every target of the environment, write "
        "deploymentTargetSelector: {labelSelector: {}}",
        "clusterTypeSelector": "say which cluster types it schedules onto (clusterTypeSelector: {labelSelector: "
        "{matchLabels: {<label>: <value>}}}); for every cluster type, write clusterTypeSelector: {labelSelector: {}}",
        "deploymentTargetSelector.labelSelector": "write labelSelector: {matchLabels: {<label>: <value>}} to choose "
        "targets, or labelSelector: {} for every target (of its workspace, when workspace is set)",
        "clusterTypeSelector.labelSelector": "write labelSelector: {matchLabels: {<label>: <value>}} to choose "
        "cluster types, or labelSelector: {} for every cluster type",
    }
    # a Workload's spec.workspace, written where a policy's goes (until 2026-11-29: "check the spelling")
    unknown_hints: ClassVar[dict[str, str]] = {
        "workspace": "a SchedulingPolicy's workspace goes under deploymentTargetSelector (deploymentTargetSelector: "
        "{workspace: <name>, labelSelector: ...}): it chooses the targets of that workspace",
        "labelSelector": "a SchedulingPolicy has a labelSelector under each of its selectors: "
        "deploymentTargetSelector: {labelSelector: ...} for the targets, clusterTypeSelector: {labelSelector: ...} "
        "for the cluster types",
        "clusterTypeSelector.workspace": "a workspace chooses deployment targets: it goes under "
        "deploymentTargetSelector (deploymentTargetSelector: {workspace: <name>, labelSelector: ...})",
    }


class GitOpsRepoSpec(Spec):
    repo: str
    branch: str | None = None
    path: str = "."

    _branch_name = field_validator("branch")(_branch)

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        """A folder inside the GitOps repo: ``schedule`` refused one leaving it only when it ran (a usage error
        with no line), where ``validate`` and ``render`` took it (a bad-input hunt, 2026-11-28)."""
        parts = value.replace("\\", "/").split("/")
        if value.startswith(("/", "\\")) or ".." in parts:
            raise ValueError(f"{value!r} leaves the GitOps repo: give a folder inside it, such as '.' or 'apps/dev' "
                             "(no leading '/', no '..')")
        return value


class BaseRepoSpec(Spec):
    repo: str = ""
    branch: str = "main"
    path: str = "."
    commit: str = ""

    _branch_name = field_validator("branch")(_branch)


SPEC_MODELS: dict[str, type[Spec]] = {
    "Environment": EnvironmentSpec,
    "Template": TemplateSpec,
    "Workload": WorkloadSpec,
    "WorkloadRegistration": WorkloadRegistrationSpec,
    "ConfigSchema": ConfigSchemaSpec,
    "ClusterType": ClusterTypeSpec,
    "Cluster": ClusterSpec,
    "SchedulingPolicy": SchedulingPolicySpec,
    "GitOpsRepo": GitOpsRepoSpec,
    "BaseRepo": BaseRepoSpec,
}

# Where each kind may live: "main", "env", or both. Workloads also come from app repos (registrations).
KIND_ORIGINS: dict[str, frozenset[str]] = {
    "Environment": frozenset({"main"}),
    "Template": frozenset({"main"}),
    "Workload": frozenset({"main", "app"}),
    "WorkloadRegistration": frozenset({"main"}),
    "ConfigSchema": frozenset({"main", "env"}),
    "ClusterType": frozenset({"env"}),
    "Cluster": frozenset({"env"}),
    "SchedulingPolicy": frozenset({"env"}),
    "ConfigMap": frozenset({"main", "env"}),
    "GitOpsRepo": frozenset({"env"}),
    "BaseRepo": frozenset({"env"}),
}
