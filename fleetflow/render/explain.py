"""``explain``: where every composed value of one assignment came from, and what it overrode."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from fleetflow.errors import Problems
from fleetflow.model.controlplane import ControlPlane
from fleetflow.render.composition import Composed, Composer, Provenance, Subject
from fleetflow.render.inputs import config_sources
from fleetflow.render.scheduling import Assignment, schedule
from fleetflow.results import Result


@dataclass
class Explanation:
    assignment: str
    subject: Subject
    policies: list[str]
    composed: Composed

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
    ct_name, _, target_id = assignment_id.partition("/")
    assignment = Assignment(ct_name, target_id)
    if not problems and assignment not in sched.policies:
        known = [a.id for a in sched.assignments]
        shown = ", ".join(known[:10]) + (f" ... ({len(known)} in all)" if len(known) > 10 else "")
        problems.add(
            f"assignment {assignment_id!r} is not scheduled in environment {environment}",
            None,
            f"use CLUSTERTYPE/TARGET, one of: {shown or 'none (no policy selects anything)'}",
        )
    problems.raise_if_any()
    ct = plane.cluster_types[ct_name]
    target = sched.targets[target_id]
    subject = Subject(environment, ct.name, ct.labels, target.id, target.labels, target.workload)
    composed = Composer(sources).compose(subject)
    return Explanation(assignment_id, subject, sorted(sched.policies[assignment]), composed)
