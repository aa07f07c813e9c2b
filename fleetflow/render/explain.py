"""``explain``: where every composed value of one assignment came from, and what it overrode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetflow.errors import Problems
from fleetflow.model.controlplane import ControlPlane
from fleetflow.render.composition import Composed, Composer, Provenance, Subject
from fleetflow.render.inputs import config_sources
from fleetflow.render.scheduling import Assignment, schedule


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
        wanted = tuple(key.split("."))
        return [p for p in items if p.path[: len(wanted)] == wanted]

    def to_json(self, key: str | None = None) -> dict[str, Any]:
        return {
            "assignment": self.assignment,
            "policies": self.policies,
            "sources": list(self.composed.sources),
            "values": [
                {
                    "key": ".".join(p.path),
                    "value": p.winner.value,
                    "from": {"configMap": p.winner.source, **p.winner.location.to_json()},
                    "overrode": [
                        {"configMap": c.source, "value": c.value, **c.location.to_json()}
                        for c in p.overridden
                    ],
                }
                for p in self.entries(key)
            ],
        }


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
