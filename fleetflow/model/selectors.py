"""Kubernetes label selectors: ``matchLabels`` and ``matchExpressions`` (In, NotIn, Exists, DoesNotExist).

Semantics follow Kubernetes: all requirements must hold (AND); ``NotIn`` and ``DoesNotExist`` hold when the
key is absent; an empty selector selects everything.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetflow.model.resources import LabelSelector, LabelSelectorRequirement


def requirement_matches(req: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    return not present  # DoesNotExist


def matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """True when every matchLabels pair and every matchExpressions requirement holds for ``labels``."""
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    return all(requirement_matches(req, labels) for req in selector.match_expressions)


def describe(selector: LabelSelector) -> str:
    """Human form, as kubectl prints it: ``a=b,c in (x,y),!d``."""
    parts = [f"{k}={v}" for k, v in sorted(selector.match_labels.items())]
    for req in selector.match_expressions:
        values = ",".join(req.values)
        if req.operator == "In":
            parts.append(f"{req.key} in ({values})")
        elif req.operator == "NotIn":
            parts.append(f"{req.key} notin ({values})")
        elif req.operator == "Exists":
            parts.append(req.key)
        else:
            parts.append(f"!{req.key}")
    return ",".join(parts) or "<everything>"
