"""The render pipeline's inputs, made from the model: ConfigMaps as config sources, ConfigSchemas as schemas.

Each is checked on the way (priority annotation, data shape, schema text, metaschema); a bad one is a problem and
is left out, so that every problem of a run is reported at once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ruamel.yaml import YAML

from fleetflow.errors import Location, Problems
from fleetflow.model.controlplane import PLATFORM_CONFIG_LABEL, PRIORITY_ANNOTATION, ControlPlane
from fleetflow.model.documents import ruamel_document
from fleetflow.render.composition import ConfigSource
from fleetflow.render.validation import SchemaSource, check_schema


def config_sources(plane: ControlPlane, problems: Problems) -> list[ConfigSource]:
    sources: list[ConfigSource] = []
    for name, cm in sorted(plane.config_maps.items()):
        raw = cm.annotations.get(PRIORITY_ANNOTATION, "0")
        if not _PRIORITY.fullmatch(raw):
            problems.add(
                f"ConfigMap {name}: annotation {PRIORITY_ANNOTATION} must be an integer (digits 0-9, optionally "
                f"after '-' or '+'), not {raw!r}", cm.where("metadata", "annotations", PRIORITY_ANNOTATION),
                'write e.g. fleetflow.dev/priority: "10", with no spaces, "_" or other characters')
            continue
        digits = raw.lstrip("+-").lstrip("0")  # past 19 digits it is out of int64; int() refuses 4,300 digits
        priority = int(digits or "0") * (-1 if raw.startswith("-") else 1) if len(digits) <= 19 else None
        if priority is None or priority not in _INT64:
            problems.add(f"ConfigMap {name}: annotation {PRIORITY_ANNOTATION} {raw} is out of range",
                         cm.where("metadata", "annotations", PRIORITY_ANNOTATION),
                         f"give an integer from {_INT64.start} to {_INT64.stop - 1}")
            continue
        data = cm.spec.data
        if not isinstance(data, dict):
            problems.add(f"ConfigMap {name}: data must be a mapping", cm.where("data"))
            continue
        sources.append(
            ConfigSource(
                name=name,
                location=cm.location,
                labels={k: v for k, v in cm.labels.items() if k != PLATFORM_CONFIG_LABEL},
                priority=priority,
                data=data,
                key_locations=cm.doc.key_locations("data"),
            )
        )
    return sources


# The priority annotation's integer, as Go's strconv.Atoi reads one (src/strconv/atoi.go in golang/go, commit
# 00a5bb14: "Atoi is equivalent to ParseInt(s, 10, 0)"; an optional '+' or '-', then the digits 0-9, leading
# zeros allowed, no "_" in base 10, no space, within a 64-bit int), so that a tool in Go reads the same priority.
# Python's int() took " 10", "1_0" and "١٠" (Arabic-Indic digits) until 2026-11-28.
_PRIORITY = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def parse_schema_text(text: str) -> Any:
    """A schema written as JSON or YAML text; ValueError saying what is wrong, and where in the text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    problems = Problems()
    schema = ruamel_document(YAML(typ="safe"), text, "the text", problems)
    if problems:
        problem = problems.items[0]
        where = problem.location.line if problem.location is not None else None
        at = f"line {where} of the text: " if where is not None else ""
        raise ValueError(f"{at}{problem.message} ({problem.hint})")
    return schema


def schema_sources(plane: ControlPlane, problems: Problems) -> dict[str, SchemaSource]:
    """Every ConfigSchema resource, parsed and checked against its metaschema."""
    sources: dict[str, SchemaSource] = {}
    for name, res in sorted(plane.config_schemas.items()):
        schema: Any = res.spec.schema_
        if isinstance(schema, str):
            try:
                schema = parse_schema_text(schema)
            except ValueError as exc:
                problems.add(
                    f"ConfigSchema {name}: schema text does not parse: {exc}", res.where("spec", "schema")
                )
                continue
        if not isinstance(schema, dict):
            problems.add(f"ConfigSchema {name}: schema must be an object", res.where("spec", "schema"))
            continue
        source = SchemaSource(
            name=name, schema=schema, location=res.where("spec", "schema"), labels=res.labels
        )
        errors = check_schema(source)
        problems.extend(errors)
        if not errors:
            sources[name] = source
    return sources


def inline_schema(
    ref: dict[str, Any], where: Location, owner: str, index: int, problems: Problems
) -> SchemaSource | None:
    source = SchemaSource(name=f"{owner} configSchemas[{index}]", schema=ref, location=where, labels={})
    errors = check_schema(source)
    problems.extend(errors)
    return None if errors else source
