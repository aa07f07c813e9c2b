"""The pure pipeline: control plane in, rendered tree out.

load (done by the caller) → check references → schedule → compose → validate → render. Given the previous
``RenderState``, assignments whose inputs did not change are not rendered again (incremental); the state and
the files that are written are byte-identical to what a full render gives.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from fleetflow import __version__
from fleetflow.errors import InputError, Location, Problem, Problems, some_of
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.references import check_references, check_tree_belongs
from fleetflow.model.resources import TEMPLATE_ROLES
from fleetflow.progress import NO_PROGRESS, Progress
from fleetflow.render.canonical import canonical_json
from fleetflow.render.composition import Composed, Composer, ConfigSource, Subject, applies
from fleetflow.render.empty_manifests import empty_manifest_warnings
from fleetflow.render.incremental import (
    STATUS_DIR,
    Assignments,
    AssignmentState,
    ExpectedCluster,
    Fingerprints,
    RenderState,
    Shard,
    affected_assignments,
    members_digest_sorted,
    removed_assignments,
    shard_path,
)
from fleetflow.render.inputs import config_sources, inline_schema, schema_sources
from fleetflow.render.label_values import LabelNames, refused_labels
from fleetflow.render.namespaces import check_namespaces, namespace_of
from fleetflow.render.scheduling import Assignment, Schedule, Target, schedule
from fleetflow.render.selection import selection_warnings
from fleetflow.render.templates import (
    CompiledTemplate,
    TemplateEngine,
    TemplateRenderError,
    TemplateSource,
    under_time_budget,
)
from fleetflow.render.validation import ConfigValidator, SchemaSource
from fleetflow.results import Result

ENGINE = f"fleetflow {__version__}"
HASH_LENGTH = 32  # hex digits (128 bits) of sha256 kept in state.json: 100,000 lines are read on every render
# (output file role, ClusterTypeSpec attribute) of every template rendered per assignment, in order
ROLES = tuple((role.output, role.attribute) for role in TEMPLATE_ROLES if role.output is not None)


@dataclass(frozen=True)
class Meta:
    """Facts about the inputs that are not in the files: the commits they were read at."""

    main_commit: str | None = None
    env_commit: str | None = None
    env_branch: str | None = None  # the branch checked out in the environment tree, when known


class Changes(Result):
    """What a render changes, by assignment id (``<clusterType>/<workload>-<target>``)."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    unchanged: int = 0
    config_keys: list[str] = Field(default_factory=list)  # "configmap: KEY (added|changed|removed)"
    held_back: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass
class RenderResult:
    """The rendered tree in memory (never printed as such: the CLI prints a ``RenderSummary`` of it). A plain
    dataclass on purpose: it holds every file's bytes, and building it must cost nothing on the hot path."""

    environment: str
    state: RenderState
    files: dict[str, bytes]  # path (relative to the output root) -> bytes, for every assignment rendered now
    rendered: list[str]  # assignment ids rendered this run (their folders must hold exactly their files)
    removed: list[str]  # assignment ids whose folders must go
    changes: Changes
    schedule: Schedule
    problems: list[Problem] = field(default_factory=list)  # held-back assignments (--keep-last-good)
    # per cluster type, the files of its status reporter (<clusterType>/_status/...), rendered on every run
    reporters: dict[str, bytes] = field(default_factory=dict)
    # what does not stop the render but probably is a mistake (selectors selecting nothing, targets of
    # environments main does not define, nothing scheduled); reported, and failing only under --strict
    warnings: list[Problem] = field(default_factory=list)
    # cluster types whose ``_status/`` folder the render leaves as it is (its reporter's inputs did not change,
    # or it is not this render's: ``only``): not in ``reporters``, not looked at, never deleted
    kept_reporters: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.problems


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:HASH_LENGTH]


def template_source(plane: ControlPlane, name: str) -> TemplateSource:
    res = plane.templates[name]
    manifest_locations = []
    for i in range(len(res.spec.manifests)):
        loc = res.where("spec", "manifests", i)
        if res.doc.is_block_scalar("spec", "manifests", i) and loc.line is not None:
            loc = Location(loc.file, loc.line + 1, None)  # a block scalar's text starts on the next line
        manifest_locations.append(loc)
    return TemplateSource(
        name=name,
        type=res.spec.type,
        content_type=res.spec.content_type,
        manifests=tuple(res.spec.manifests),
        location=res.location,
        manifest_locations=tuple(manifest_locations),
    )


def _compile_templates(
    plane: ControlPlane, engine: TemplateEngine, problems: Problems
) -> tuple[dict[str, CompiledTemplate], dict[str, str]]:
    compiled: dict[str, CompiledTemplate] = {}
    fingerprints: dict[str, str] = {}
    for name in sorted(plane.templates):
        source = template_source(plane, name)
        try:
            compiled[name] = engine.compile(source)
        except InputError as exc:
            problems.extend(exc.problems())
            continue
        fingerprints[name] = _sha(json.dumps([source.type, source.content_type, list(source.manifests)]))
    return compiled, fingerprints


def _target_schemas(target: Target, named: dict[str, SchemaSource], problems: Problems) -> list[SchemaSource]:
    """The schemas a target's workload and the target itself name in ``configSchemas``, each ConfigSchema once
    (the workload and its target may both name it)."""
    result: list[SchemaSource] = []
    for index, (ref, where, owner) in enumerate(target.schema_refs):
        if isinstance(ref, str):
            if ref in named:
                if all(named[ref] is not s for s in result):
                    result.append(named[ref])
            else:
                problems.add(
                    f"{owner}: configSchemas names unknown ConfigSchema {ref!r}",
                    where,
                    "define a ConfigSchema with that name, or write the JSON schema inline",
                )
        else:
            source = inline_schema(ref, where, owner, index, problems)
            if source is not None:
                result.append(source)
    return result


def assignment_schemas(
    subject: Subject, universal: list[SchemaSource], selective: list[SchemaSource], own: list[SchemaSource]
) -> list[SchemaSource]:
    """The schemas an assignment's config is checked against (DESIGN §3): every ConfigSchema without labels, every
    one whose labels apply to ``subject``, and ``own``, what its workload and target name in ``configSchemas``.
    A ConfigSchema reached by its labels and also named is checked once, as the one its labels apply (its problems
    name the ConfigSchema either way): until 2026-11-29 it was checked once per route, and each missing key was
    reported twice for the assignment."""
    schemas = universal + [s for s in selective if applies(s.labels, subject)]
    if own:
        schemas += [s for s in own if all(s is not t for t in schemas)]
    return schemas


_SORTED = json.JSONEncoder(sort_keys=True).encode  # json.dumps(value, sort_keys=True), its encoder made once


def config_key_hashes(
    plane: ControlPlane, same: Mapping[str, dict[str, str]] | None = None
) -> dict[str, dict[str, str]]:
    """Each ConfigMap's keys, each with a short hash of its value: the state keeps them to name the config keys a
    change adds, changes or removes. ``same``: the hashes of ConfigMaps whose data is known not to have changed
    (their fingerprint is the previous state's), taken as they are instead of hashed again."""
    same = same or {}
    return {
        name: same[name] if name in same else {
            key: _sha(_SORTED(value))[:16] for key, value in sorted(cm.spec.data.items())
        }
        for name, cm in plane.config_maps.items()
        if isinstance(cm.spec.data, dict)
    }


def variables_for(
    environment: str, ct_name: str, ct_labels: dict[str, str], target: Target, composed: Composed
) -> dict[str, Any]:
    return {
        "DeploymentTargetName": target.id,
        "Namespace": namespace_of(environment, target),
        "Environment": environment,
        "Workspace": target.workspace,
        "Workload": target.workload,
        "ClusterType": ct_name,
        "ClusterTypeLabels": ct_labels,
        "Labels": target.labels,
        "Manifests": target.manifests,
        "ConfigData": composed.values,
    }


@dataclass
class CheckedInputs:
    """What a render reads besides the assignments' own state, checked: every problem found here stops the render
    before it renders anything (``checked_inputs``)."""

    sources: list[ConfigSource]
    schemas: dict[str, SchemaSource]
    schedule: Schedule
    compiled: dict[str, CompiledTemplate]
    fingerprints: dict[str, str]  # per template
    target_schemas: dict[str, list[SchemaSource]]
    warnings: Problems


def checked_inputs(plane: ControlPlane, environment: str, env_branch: str | None = None,
                   templates: TemplateEngine | None = None) -> CheckedInputs:
    """The plane's checks for ``environment`` that come before any assignment is rendered: references, the tree
    belonging to the environment, ConfigMaps, ConfigSchemas, the schedule, templates. Raises InputError with every
    problem. ``promote`` runs them before it pins (nothing is written for a commit its render would refuse here);
    what they cannot see (a composed config failing its schema, a template failing on one assignment's values)
    stops the render itself."""
    problems = Problems()
    warnings = Problems()
    check_references(plane, environment, problems, warnings)
    check_tree_belongs(plane, environment, problems, checked_out_branch=env_branch)
    sources = config_sources(plane, problems)
    named_schemas = schema_sources(plane, problems)
    sched = schedule(plane, environment, problems)
    if environment in plane.environments:
        warnings.extend(selection_warnings(plane, environment, sched))
        if not sched.by_type:
            warnings.add(
                f"environment {environment} schedules no assignment",
                plane.environments[environment].location,
                f"give a workload a deployment target with environment: {environment}, and a SchedulingPolicy "
                "on the environment branch that selects it and a cluster type",
            )
    engine = templates or TemplateEngine()
    compiled, fingerprints = _compile_templates(plane, engine, problems)
    check_namespaces(plane, environment, sched, compiled, engine.environment, warnings)
    target_schemas = {tid: _target_schemas(t, named_schemas, problems) for tid, t in sched.targets.items()}
    problems.raise_if_any()
    return CheckedInputs(sources, named_schemas, sched, compiled, fingerprints, target_schemas, warnings)


@under_time_budget  # a template that renders for too long fails its assignment, instead of stopping the job
def render_environment(
    plane: ControlPlane,
    environment: str,
    *,
    previous: RenderState | None = None,
    meta: Meta | None = None,
    keep_last_good: bool = False,
    reuse: bool = True,
    templates: TemplateEngine | None = None,
    progress: Progress = NO_PROGRESS,
    only: Callable[[str], bool] | None = None,
) -> RenderResult:
    """Render one environment. Raises InputError with every problem when the input is wrong.

    ``reuse=False`` renders every assignment even when its inputs did not change (``--full``). With
    ``keep_last_good``, assignments that fail validation or rendering keep their previous state (their
    files are left as they are) and are listed in ``result.problems``; everything else is rendered.

    ``only`` (a test on cluster-type names) renders just those cluster types: every other one keeps its previous
    shard unread, or has none (``schedule --shard``: the state of the others is not this render's to write).
    """
    meta = meta or Meta()
    checked = checked_inputs(plane, environment, meta.env_branch, templates)
    sources, named_schemas, sched, warnings = checked.sources, checked.schemas, checked.schedule, checked.warnings
    compiled, fingerprints, target_schemas = checked.compiled, checked.fingerprints, checked.target_schemas

    composer = Composer(sources)
    validator = ConfigValidator()
    selective = [s for s in named_schemas.values() if s.labels]
    universal = [s for s in named_schemas.values() if not s.labels]
    old: Assignments = previous.assignments if previous is not None and previous.engine == ENGINE else Assignments()
    reusable = old if reuse else Assignments()

    files: dict[str, bytes] = {}
    rendered: list[str] = []
    states: dict[str, AssignmentState] = {}
    failed: dict[str, list[Problem]] = {}
    # The input hash is built from parts computed once per cluster type, per target and per set of applied
    # ConfigMaps, so an unchanged assignment costs a lookup and a short hash: no merge, no validation, no render.
    schemas_fp = _sha(canonical_json([[s.name, s.schema, s.labels] for s in named_schemas.values()]))
    ct_fps: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for name, ct in plane.cluster_types.items():
        roles = [(role, getattr(ct.spec, attr)) for role, attr in ROLES]
        ct_fps[name] = (_sha(canonical_json([ENGINE, name, ct.labels, [fingerprints[t] for _, t in roles]])), roles)
    target_fps = {
        tid: _sha(canonical_json([
            environment, t.id, t.workload, t.workspace, t.labels, t.manifests, [ref for ref, _, _ in t.schema_refs],
        ]))
        for tid, t in sched.targets.items()
    }
    current = Fingerprints(
        schemas=schemas_fp,
        cluster_types={name: fp for name, (fp, _) in ct_fps.items()},
        targets=target_fps,
        config_maps={
            src.name: (_sha(canonical_json([src.name, src.priority, src.labels, src.data])), dict(src.labels))
            for src in sources
        },
    )
    affected = None
    if reusable and previous is not None and previous.fingerprints is not None:
        affected = affected_assignments(
            previous.fingerprints, current, sched.by_type, environment,
            {name: ct.labels for name, ct in plane.cluster_types.items()}, sched.targets,
        )
    carried = _untouched_shards(reusable, affected, sched.by_type)
    if only is not None:
        carried.update((ct, shard) for ct, shard in old.shards.items() if not only(ct))
    reusable.read(sched.by_type.keys() - carried.keys())  # the others, in one batch
    fingerprint_of = composer.sources_fingerprint
    not_labels = LabelNames(plane, environment, sched)  # names a rendered label may not hold: nearly always none
    any_not_labels = bool(not_labels)
    progress.begin(f"rendering {environment}", total=sched.count())
    step = shown = 0
    nothing: set[str] = set()
    # cluster type by cluster type: one that nothing touched costs a lookup, not a pass over its assignments
    for ct_name, tids in sched.by_type.items():
        step += len(tids)
        if step - shown >= 1024:
            progress.advance(step - shown)
            shown = step
        if ct_name in carried or (only is not None and not only(ct_name)):
            continue  # nothing in its cluster type changed (or it is not this render's): its shard is kept unread
        hit = affected.get(ct_name, nothing) if affected is not None else nothing
        ct = plane.cluster_types[ct_name]
        ct_fp, roles = ct_fps[ct_name]
        for tid in tids:
            aid = f"{ct_name}/{tid}"
            if affected is not None and tid not in hit:
                kept = reusable.get(aid)
                if kept is not None:  # nothing it depends on changed: keep its entry (and its files) as they are
                    states[aid] = kept
                    continue
            target = sched.targets[tid]
            t_fp = target_fps[tid]
            try:  # reads the ConfigMaps that apply: a string whose YAML holds a key Kubernetes refuses fails here
                sources_fp = fingerprint_of(environment, ct.name, ct.labels, target.id, target.workload,
                                            target.labels)
            except InputError as exc:  # the assignments that ConfigMap applies to, not the render (one problem)
                failed[aid] = [Problem(f"{aid}: {p.message}", p.location, p.hint) for p in exc.problems()]
                continue
            input_hash = _sha(f"{ENGINE}:{ct_fp}:{t_fp}:{sources_fp}:{schemas_fp}")
            before = reusable.get(aid)
            if before is not None and before.input_hash == input_hash:
                states[aid] = before
                continue
            subject = Subject(environment, ct.name, ct.labels, target.id, target.labels, target.workload)
            composed = composer.compose(subject)
            schemas = assignment_schemas(subject, universal, selective, target_schemas[target.id])
            errors = validator.validate(aid, composed, schemas)
            if errors:
                failed[aid] = errors
                continue
            variables = variables_for(environment, ct.name, ct.labels, target, composed)
            try:
                produced = _render_assignment(Assignment(ct_name, tid), roles, compiled, variables)
            except TemplateRenderError as exc:
                failed[aid] = [see_rendered(exc, environment, aid)]
                continue
            if any_not_labels and (names := not_labels.of(ct_name, tid)):  # the API server refuses such a label
                refused = refused_labels(aid, _by_template(aid, roles, compiled, produced), names)
                if refused:
                    failed[aid] = refused
                    continue
            content = hashlib.sha256()
            for path in sorted(produced):
                content.update(path.encode() + b"\0" + produced[path] + b"\0")
            states[aid] = AssignmentState(
                input_hash, content.hexdigest()[:HASH_LENGTH], tuple(sorted(p.rsplit("/", 1)[1] for p in produced))
            )
            files.update(produced)
            rendered.append(aid)
    progress.advance(step - shown)
    progress.end()
    # read before the status reporters render: the counts are the assignments' (a template renders in one or the other)
    warnings.extend(empty_manifest_warnings(environment, plane.environments.keys(), _template_uses(sched, ct_fps),
                                            compiled))

    held = same_problem_once(failed)
    if failed and not keep_last_good:
        raise InputError(held)
    for aid in failed:
        if aid in old:
            states[aid] = old[aid]

    clusters = _expected_clusters(plane, set(sched.by_type))
    clusters_of = _clusters_by_type(clusters)
    gitops = plane.gitops_repo()
    repo = gitops.spec.model_dump(by_alias=True) if gitops is not None else {}  # a reporter's GitOpsRepo
    reporter_fps = _reporter_fingerprints(plane, environment, sched.by_type, fingerprints, clusters_of, repo)
    current.reporters = {ct: fp for ct, fp in reporter_fps.items() if fp}
    earlier = previous.fingerprints.reporters if reusable and previous is not None and previous.fingerprints else None
    # a status folder whose reporter's inputs are what they were is left as it is, unread (as an untouched
    # assignment is); with no earlier fingerprints (--full, or an older state) every one is written again
    kept_reporters = set() if earlier is None else {
        ct for ct, fp in reporter_fps.items() if earlier.get(ct, "") == fp and ct in old.shards}
    if only is not None:
        kept_reporters.update(ct for ct in sched.by_type if not only(ct))
    state = RenderState(
        environment=environment,
        main_commit=meta.main_commit,
        env_commit=meta.env_commit,
        engine=ENGINE,
        assignments=_shards(states, carried, old),
        config_keys=config_key_hashes(plane, _unchanged_config_keys(previous, current) if reusable else None),
        clusters=clusters,
        fingerprints=current,
        base=previous if reusable else None,  # its index parts that nothing changed are taken as they are
    )
    current.held_back = sorted(failed)
    changes = diff_states(previous, state)
    changes.held_back = sorted(failed)
    removed = removed_assignments(previous, state)
    reporters = _render_reporters(
        plane, environment, [ct for ct in sched.by_type if ct not in kept_reporters], compiled, clusters_of, repo)
    warnings.extend(empty_manifest_warnings(environment, plane.environments.keys(), _reporter_uses(plane, sched),
                                            compiled, reporters=True))
    for type_name, shard in sorted(old.shards.items()):
        if shard.unreadable is not None:  # read (touched, or its ids changed) and found missing or not as written
            warnings.add(
                f"the state of cluster type {type_name} does not read ({shard.unreadable}): its assignments were "
                "rendered again, and files they wrote before and no longer render are left where they are",
                Location(shard_path(type_name)),
                "render --full lists such files as not managed by fleetflow; --prune-foreign deletes them",
            )
    return RenderResult(
        environment, state, files, rendered, removed, changes, sched, held, reporters, list(warnings), kept_reporters
    )


def _template_uses(sched: Schedule, ct_fps: Mapping[str, tuple[str, list[tuple[str, str]]]]) -> dict[str, int]:
    """Template name -> how many times a render of every scheduled assignment renders it (once per assignment and
    role it fills): what :func:`empty_manifest_warnings` compares its count of renders with."""
    uses: dict[str, int] = {}
    for ct_name, tids in sched.by_type.items():
        for _, template in ct_fps[ct_name][1]:
            uses[template] = uses.get(template, 0) + len(tids)
    return uses


def _reporter_uses(plane: ControlPlane, sched: Schedule) -> dict[str, int]:
    """Status reporter template -> how many of the scheduled cluster types name it (a render of every one renders it
    so many times): what :func:`empty_manifest_warnings` compares its count of renders with."""
    uses: dict[str, int] = {}
    for ct_name in sched.by_type:
        ref = plane.cluster_types[ct_name].spec.status_reporter
        if ref is not None:
            uses[ref] = uses.get(ref, 0) + 1
    return uses


SHOWN_ASSIGNMENTS = 5  # of those with the same problem, named besides the first


def see_rendered(exc: TemplateRenderError, environment: str, aid: str) -> Problem:
    """``exc``'s problem; when it is in the text the template rendered (a line of what it renders, text that is
    never written), its hint ends with the command that shows that text. It names the assignment, as the message
    does: :func:`same_problem_once` still makes one problem of the same mistake in many assignments."""
    problem = exc.problem
    if not exc.in_text:
        return problem
    see = (f"see what it renders: fleetflow explain {TREES_PLACEHOLDER} --environment {environment} "
           f"--assignment {aid} --rendered")
    return Problem(problem.message, problem.location, f"{problem.hint}; {see}" if problem.hint else see)


TREES_PLACEHOLDER = "--main DIR --env DIR"  # in a hint's command, for the trees the render core does not know


def trees_named(problems: Iterable[Problem], main_dir: str, env_dir: str) -> list[Problem]:
    """``problems`` with the trees a command was given written into their hints' commands, in place of
    :data:`TREES_PLACEHOLDER`: a command the user can paste (``validate``, ``render`` and ``plan`` on two
    folders; ``validate --into`` keeps the placeholder, its trees are branches)."""
    trees = f"--main {shlex.quote(main_dir)} --env {shlex.quote(env_dir)}"
    return [Problem(p.message, p.location, p.hint.replace(TREES_PLACEHOLDER, trees))
            if p.hint and TREES_PLACEHOLDER in p.hint else p for p in problems]


def same_problem_once(failed: Mapping[str, list[Problem]]) -> list[Problem]:
    """The problems of the assignments that failed, each once: problems that differ only by the assignment they
    name (a template that fails the same way for every assignment it renders, a value every assignment of a
    ConfigMap composes) are one problem naming the first assignment, how many more and a few of them. Until
    2026-11-28 each assignment gave its own line: 11 identical errors for one bad template in the example, 100,000
    for one at 100k assignments (a bad-input hunt). A hint may name the assignment too (:func:`see_rendered`), and
    what a hint says after "for assignment X, " is about that assignment's values (the keys a map has where a
    template looked up one it lacks), not the mistake: the problem shows the first assignment's."""
    groups: dict[tuple[str, Location | None, str | None], list[tuple[str, Problem]]] = {}
    for aid in sorted(failed):
        for problem in failed[aid]:
            hint = problem.hint.replace(aid, "\0").partition("for assignment \0, ")[0] if problem.hint else problem.hint
            key = (problem.message.replace(aid, "\0"), problem.location, hint)
            groups.setdefault(key, []).append((aid, problem))
    found: list[Problem] = []
    for members in groups.values():
        first, problem = members[0]
        others = list(dict.fromkeys(aid for aid, _ in members[1:] if aid != first))  # each assignment once
        if others:
            named = some_of(others, SHOWN_ASSIGNMENTS)
            more = "assignment" if len(others) == 1 else "assignments"
            problem = Problem(f"{problem.message} (and the same in {len(others)} more {more}: {named})",
                              problem.location, problem.hint)
        found.append(problem)
    return found


def _unchanged_config_keys(previous: RenderState | None, current: Fingerprints) -> dict[str, dict[str, str]]:
    """The previous state's key hashes of every ConfigMap whose fingerprint (name, priority, labels and data) is
    the same as then: nothing to hash again (at 1,000 ConfigMaps, 7.6 ms of every schedule). Called only when the
    previous state is usable at all (``reusable``, as for the assignments and the reporters)."""
    if previous is None or previous.fingerprints is None:
        return {}
    earlier = previous.fingerprints.config_maps
    return {
        name: previous.config_keys[name] for name, (fp, _) in current.config_maps.items()
        if name in previous.config_keys and name in earlier and earlier[name][0] == fp
    }


def _untouched_shards(
    previous: Assignments, affected: dict[str, set[str]] | None, by_type: dict[str, tuple[str, ...]]
) -> dict[str, Shard]:
    """The previous shards a render keeps as they are, unread: those of cluster types none of whose assignments
    is affected and whose assignment ids are the same as before (same count, then the index's digest of the ids,
    :func:`members_digest`, made with one join per cluster type)."""
    if affected is None or not previous.shards:
        return {}
    kept: dict[str, Shard] = {}
    for ct, tids in by_type.items():
        shard = previous.shards.get(ct)
        if shard is None or ct in affected or len(shard) != len(tids):
            continue
        prefix = f"{ct}/"
        if shard.members == members_digest_sorted(prefix + f"\n{prefix}".join(tids)):
            kept[ct] = shard
    return kept


def _shards(states: dict[str, AssignmentState], carried: dict[str, Shard], previous: Assignments) -> Assignments:
    """The new state's assignments: the carried shards as they are, a new shard for every other cluster type
    (reusing the previous shard's lines, so kept entries are written back as the same text)."""
    grouped: dict[str, dict[str, AssignmentState]] = {}
    for aid, entry in states.items():
        grouped.setdefault(aid.split("/", 1)[0], {})[aid] = entry
    shards: dict[str, Shard] = dict(carried)
    for ct, entries in grouped.items():
        before = previous.shards.get(ct)
        shards[ct] = Shard(ct, entries, lines=before.lines if before is not None and before.loaded else None)
    return Assignments(shards)


def _render_assignment(
    assignment: Assignment,
    roles: list[tuple[str, str]],
    compiled: dict[str, CompiledTemplate],
    variables: dict[str, Any],
) -> dict[str, bytes]:
    produced: dict[str, bytes] = {}
    subject = f"assignment {assignment.id}"
    for role, template_name in roles:
        template = compiled[template_name]
        data = template.render(variables, subject)
        if data is not None:
            produced[output_file(assignment.id, role, template)] = data
    return produced


def _by_template(
    aid: str, roles: list[tuple[str, str]], compiled: dict[str, CompiledTemplate], produced: dict[str, bytes],
) -> dict[str, tuple[str, bytes]]:
    """The files an assignment rendered, each with the name of the template that rendered it."""
    named = {output_file(aid, role, compiled[name]): name for role, name in roles}
    return {path: (named[path], data) for path, data in produced.items()}


def output_file(assignment_id: str, output: str, template: CompiledTemplate) -> str:
    """The file an assignment's template writes, inside the environment's output: ``<cluster type>/<target>/
    <output>.<contentType>`` (``output``: the role's file name, reconciler, namespace or platform-config)."""
    return f"{assignment_id}/{output}.{template.source.content_type}"




def _clusters_by_type(clusters: list[ExpectedCluster]) -> dict[str, list[dict[str, str]]]:
    """Cluster type -> its clusters as a status reporter sees them (``Clusters``), in name order."""
    found: dict[str, list[dict[str, str]]] = {}
    for c in clusters:
        found.setdefault(c.cluster_type, []).append({"name": c.name, "statusContext": c.status_context or ""})
    return found


def _reporter_fingerprints(
    plane: ControlPlane, environment: str, cluster_types: Iterable[str], templates: dict[str, str],
    clusters: dict[str, list[dict[str, str]]], repo: dict[str, Any],
) -> dict[str, str]:
    """Cluster type -> the fingerprint of everything its status reporter is rendered from (``""``: it names
    none): the template, the cluster type, its clusters and the GitOps repo (``repo``, as the reporter gets it)."""
    repo_text = canonical_json(repo)
    found: dict[str, str] = {}
    for ct_name in cluster_types:
        ct = plane.cluster_types[ct_name]
        ref = ct.spec.status_reporter
        found[ct_name] = "" if ref is None else _sha(canonical_json(
            [ENGINE, environment, ct_name, ct.labels, ref, templates.get(ref), clusters.get(ct_name, []), repo_text]))
    return found


def _render_reporters(
    plane: ControlPlane, environment: str, cluster_types: list[str], compiled: dict[str, CompiledTemplate],
    clusters: dict[str, list[dict[str, str]]], repo: dict[str, Any],
) -> dict[str, bytes]:
    """The status reporter of each of ``cluster_types``: rendered once per cluster type, with its clusters and
    ``repo`` (``GitOpsRepo``)."""
    out: dict[str, bytes] = {}
    problems: list[Problem] = []
    for ct_name in cluster_types:  # in name order
        ct = plane.cluster_types[ct_name]
        ref = ct.spec.status_reporter
        if ref is None:
            continue
        template = compiled[ref]
        variables = {
            "Environment": environment,
            "ClusterType": ct_name,
            "ClusterTypeLabels": ct.labels,
            "Clusters": clusters.get(ct_name, []),
            "GitOpsRepo": repo,
        }
        try:
            data = template.render(variables, f"status reporter of cluster type {ct_name}")
        except TemplateRenderError as exc:
            problems.extend(exc.problems())
            continue
        if data is not None:
            out[f"{ct_name}/{STATUS_DIR}/{ref}.{template.source.content_type}"] = data
    if problems:
        raise InputError(problems)
    return out


def _expected_clusters(plane: ControlPlane, used_types: set[str]) -> list[ExpectedCluster]:
    return [
        ExpectedCluster(name, c.spec.cluster_type, c.spec.status_context)
        for name, c in sorted(plane.clusters.items())
        if c.spec.cluster_type in used_types
    ]


def diff_states(previous: RenderState | None, current: RenderState) -> Changes:
    """Assignments added/removed/changed and config keys changed between two states."""
    before = previous.assignments.shards if previous is not None else {}
    after = current.assignments.shards
    changes = Changes()
    if previous is not None:
        previous.assignments.read(ct for ct, shard in before.items() if after.get(ct) is not shard)
    for ct in sorted(before.keys() | after.keys()):
        was_shard, now_shard = before.get(ct), after.get(ct)
        if was_shard is now_shard:
            continue  # carried over unread: nothing in it changed
        was = was_shard.entries if was_shard is not None else {}
        now = now_shard.entries if now_shard is not None else {}
        get = was.get
        changes.added.extend(now.keys() - was.keys())
        changes.removed.extend(was.keys() - now.keys())
        changes.changed.extend(
            aid for aid, entry in now.items()
            if (old := get(aid)) is not None and entry is not old and entry.content_hash != old.content_hash
        )
    changes.added.sort()
    changes.removed.sort()
    changes.changed.sort()
    changes.unchanged = len(current.assignments) - len(changes.added) - len(changes.changed)
    old_keys = previous.config_keys if previous is not None else {}
    for name in sorted(set(old_keys) | set(current.config_keys)):
        a, b = old_keys.get(name, {}), current.config_keys.get(name, {})
        for key in sorted(set(a) | set(b)):
            if key not in a:
                changes.config_keys.append(f"{name}: {key} (added)")
            elif key not in b:
                changes.config_keys.append(f"{name}: {key} (removed)")
            elif a[key] != b[key]:
                changes.config_keys.append(f"{name}: {key} (changed)")
    return changes
