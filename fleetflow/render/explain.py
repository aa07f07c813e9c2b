"""``explain``: where every composed value of one assignment came from, and what it overrode; and, with
``--rendered``, what its templates render, manifest by manifest, problems and all."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from fleetflow.errors import InputError, Location, Problem, Problems, meant
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.resources import TEMPLATE_ROLES
from fleetflow.render.composition import Composed, Composer, Provenance, Subject
from fleetflow.render.inputs import config_sources
from fleetflow.render.pipeline import output_file, template_source, variables_for
from fleetflow.render.scheduling import Assignment, Target, schedule
from fleetflow.render.templates import TemplateEngine, time_budget
from fleetflow.results import Result


@dataclass
class Explanation:
    assignment: str
    subject: Subject
    policies: list[str]
    composed: Composed
    target: Target

    def entries(self, key: str | None = None) -> list[Provenance]:
        items = sorted(self.composed.provenance.values(), key=lambda p: p.path)
        if key is None:
            return items
        # a key may hold dots itself (spring.datasource.url): the key asked for is a path written with dots, or
        # the same as shown (key_text: such a key in quotes), at any depth from the top
        return [p for p in items
                if any(key in (".".join(p.path[:n]), key_text(p.path[:n])) for n in range(1, len(p.path) + 1))]

    def result(self, key: str | None = None) -> ExplainResult:
        """The explanation as ``fleetflow explain --format json`` prints it (only ``key`` and below, if given)."""
        return ExplainResult(
            assignment=self.assignment,
            policies=self.policies,
            sources=list(self.composed.sources),
            values=[
                ExplainedValue(
                    key=key_text(p.path),
                    value=p.winner.value,
                    source=ValueSource(config_map=p.winner.source, **dict(p.winner.location)),
                    overrode=[
                        OverriddenValue(config_map=c.source, value=c.value, **dict(c.location))
                        for c in p.overridden
                    ],
                )
                for p in self.entries(key)
            ],
        )


def key_text(path: tuple[str, ...]) -> str:
    """A config key's path as shown: its keys joined with '.', a key that holds a '.' or a '"' in quotes (the
    top-level key ``x.y`` is ``"x.y"``, the key ``y`` under ``x`` is ``x.y``: a bad-input hunt found the two shown
    alike, and ``--key spring.datasource.url`` not finding a key of that name, 2026-11-28)."""
    return ".".join(json.dumps(k, ensure_ascii=False) if "." in k or '"' in k else k for k in path)


class ValueSource(Result):
    """Where a value is written: the ConfigMap, file, line and column."""

    config_map: str
    file: str
    line: int | None = None
    column: int | None = None


class OverriddenValue(Result):
    """A lower-precedence value that the winning one replaced."""

    config_map: str
    value: Any
    file: str
    line: int | None = None
    column: int | None = None


class ExplainedValue(Result):
    key: str
    value: Any
    source: ValueSource = Field(serialization_alias="from")
    overrode: list[OverriddenValue]


class ExplainResult(Result):
    """``fleetflow explain``'s result: every composed value, where it came from, and what it overrode."""

    assignment: str
    policies: list[str]
    sources: list[str]
    values: list[ExplainedValue]


def explain_assignment(plane: ControlPlane, environment: str, assignment_id: str) -> Explanation:
    """Compose one assignment (even an invalid one: explaining is how you debug it). Raises InputError."""
    problems = Problems()
    sources = config_sources(plane, problems)
    sched = schedule(plane, environment, problems)
    # the folder as a shell completes it (aks-westeurope/observability-dev/) is that assignment
    assignment_id = assignment_id.strip("/")
    ct_name, _, target_id = assignment_id.partition("/")
    assignment = Assignment(ct_name, target_id)
    if not problems and assignment not in sched.policies:
        known = [a.id for a in sched.assignments]
        shown = ", ".join(known[:10]) + (f" ... ({len(known)} in all)" if len(known) > 10 else "")
        # a typo or other letters among 10,000 assignments: the one meant first, then the list's start; a path
        # under the output folder (out/dev/aks-westeurope/observability-dev) names the assignment it ends in
        near = next((k for k in known if assignment_id.endswith(f"/{k}")), None) or meant(assignment_id, known)
        problems.add(
            f"assignment {assignment_id!r} is not scheduled in environment {environment}",
            None,
            (f"did you mean --assignment {near}? " if near else "")
            + f"use CLUSTERTYPE/TARGET, one of: {shown or 'none (no policy selects anything)'}",
        )
    problems.raise_if_any()
    ct = plane.cluster_types[ct_name]
    target = sched.targets[target_id]
    subject = Subject(environment, ct.name, ct.labels, target.id, target.labels, target.workload)
    composed = Composer(sources).compose(subject)
    return Explanation(assignment_id, subject, sorted(sched.policies[assignment]), composed, target)


class RenderedManifestResult(Result):
    """One manifest as it renders for the assignment: its text (None: it renders nothing, or fails to render) and
    what fails the assignment at it (None: nothing)."""

    template: str
    role: str  # the ClusterType field that names the template: reconciler, namespaceService, configType
    manifest: int  # 1-based, as problems count them
    file: str  # where render writes it, inside --output (several manifests of a template share one file)
    location: Location  # the manifest's first line in its template file
    text: str | None
    problem: Problem | None
    problem_line: int | None = None  # the line of ``text`` the problem names ("at line N of what it renders")


_TEXT_LINE = re.compile(
    r"at lines? (\d+)(?:, columns? \d+(?: and \d+)?)?(?: and (?:line )?(\d+)(?:, column \d+)?)? of what it renders")
"""A line of what a manifest renders, as the checks name it: "at line 9", and where a key is written twice "at
lines 3 and 7" or (JSON) "at line 3, column 5 and line 7, column 5": the later, where the key is written again."""


def problem_line(text: str | None, problem: Problem | None) -> int | None:
    """The line of ``text`` (1-based) that ``problem`` names as "at line N of what it renders", the words every
    check of a rendered text uses (the YAML and JSON checks, the aliases); None when it names none, or names a
    line the text does not have."""
    if text is None or problem is None:
        return None
    found = _TEXT_LINE.search(problem.message)
    if found is None:
        return None
    line = int(found.group(2) or found.group(1))
    return line if 1 <= line <= len(text.splitlines()) else None


class RenderedResult(Result):
    """``fleetflow explain --rendered``'s result: every manifest of the assignment's templates, in the order of
    the files and of the manifests in each; ``problems``: those of a whole file (several JSON documents in one)
    and of templates that do not compile."""

    assignment: str
    environment: str
    manifests: list[RenderedManifestResult]
    problems: list[Problem]


def render_explained(plane: ControlPlane, explanation: Explanation) -> RenderedResult:
    """What each manifest of the assignment's templates renders, with the composed values as they are (valid or
    not: it is how a problem is found), each manifest on its own: one that fails does not hide the others, and a
    text that fails its YAML or JSON check is shown (its problem counts lines in it). Nothing is written."""
    subject, target = explanation.subject, explanation.target
    ct = plane.cluster_types[subject.cluster_type]
    variables = variables_for(subject.environment, ct.name, ct.labels, target, explanation.composed)
    engine = TemplateEngine()
    shown: list[RenderedManifestResult] = []
    problems: list[Problem] = []
    with time_budget():
        for role in TEMPLATE_ROLES:
            name = getattr(ct.spec, role.attribute)
            if role.output is None:  # the status reporter: rendered per cluster type, not per assignment
                continue
            if name not in plane.templates:
                problems.append(Problem(f"ClusterType {ct.name}: {role.field} names unknown template {name!r}",
                                        ct.where("spec", role.field), "define a Template of that name on main"))
                continue
            try:
                compiled = engine.compile(template_source(plane, name))
            except InputError as exc:  # a template that does not compile renders nothing for any assignment
                problems.extend(exc.problems())
                continue
            file = output_file(explanation.assignment, role.output, compiled)
            rendered = compiled.render_each(variables, f"assignment {explanation.assignment}")
            shown.extend(
                RenderedManifestResult(template=name, role=role.field, manifest=m.index + 1, file=file,
                                       location=m.location, text=m.text, problem=m.problem,
                                       problem_line=problem_line(m.text, m.problem))
                for m in rendered.manifests
            )
            if rendered.file_problem is not None:
                problems.append(rendered.file_problem)
    return RenderedResult(assignment=explanation.assignment, environment=subject.environment, manifests=shown,
                          problems=problems)
