"""Validation of composed config against JSON Schemas (DESIGN §3). Pure, no I/O.

:func:`check_schema` checks a schema against the metaschema of its ``$schema`` (Draft 2020-12 when absent).
:class:`ConfigValidator` checks composed values; it compiles each schema once and validates each distinct
(config fingerprint, schema) pair once, since many assignments share their config. Only the mapping of a
violation to a file:line is done per assignment, because two equal configs may come from different ConfigMaps.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft3Validator, Draft4Validator, Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from fleetflow.errors import Location, Problem
from fleetflow.render.canonical import canonical_json
from fleetflow.render.composition import Composed
from fleetflow.render.schema_regex import (
    HINT,
    RegexError,
    additional_keys,
    linear,
    schema_formats,
    search,
    value_formats,
)

DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_MAX_MESSAGE = 300


@dataclass(frozen=True)
class SchemaSource:
    """One JSON Schema that config is checked against: a ConfigSchema, or a workload/target configSchemas
    entry (then ``labels`` is empty)."""

    name: str
    schema: Mapping[str, Any]
    location: Location
    labels: Mapping[str, str] = field(default_factory=dict)


Path = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """``("db", "hosts", 0)`` -> ``db.hosts[0]``; the root is ``(root)``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _dialect(schema: Mapping[str, Any]) -> tuple[type[Validator], bool]:
    """The validator class for ``schema`` and whether its ``$schema`` is known."""
    cls = validator_for(schema, default=Draft202012Validator)
    if "$schema" not in schema:
        return cls, True
    known = validator_for(schema, default=Draft4Validator) is cls
    return cls, known


def check_schema(source: SchemaSource) -> list[Problem]:
    """Problems with the schema itself (not a map, unknown ``$schema``, metaschema violations)."""
    schema: Any = source.schema
    hint = "fix the schema so that it is a valid JSON Schema"
    if not isinstance(schema, Mapping):
        return [Problem(f"schema {source.name}: a JSON Schema must be a map", source.location, hint)]
    uri = schema.get("$schema")
    if uri is not None and not isinstance(uri, str):
        return [Problem(f"schema {source.name}: $schema must be a string URI", source.location, hint)]
    cls, known = _dialect(schema)
    if not known:
        return [
            Problem(
                f"schema {source.name}: unknown $schema {uri!r}",
                source.location,
                f"use a JSON Schema draft URI such as {DEFAULT_DIALECT}, or leave $schema out",
            )
        ]
    meta = linear(cls)(cls.META_SCHEMA, format_checker=schema_formats(cls))
    errors = sorted(meta.iter_errors(schema), key=lambda e: (_sort_path(e.absolute_path), e.message))
    if not errors and cls in (Draft3Validator, Draft4Validator):
        errors = sorted(_unmarked_pattern_names(schema), key=lambda e: _sort_path(e.absolute_path))
    return [
        _refused_pattern(source, e) if isinstance(e.cause, RegexError) else Problem(
            f"schema {source.name}: invalid JSON Schema at {format_path(list(e.absolute_path))}: "
            f"{_shorten(message_of(e))}",
            source.location,
            f"{hint} ({cls.META_SCHEMA.get('$id', cls.META_SCHEMA.get('$schema', 'metaschema'))})",
        )
        for e in errors
    ]


_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")  # name -> subschema
_SCHEMA_OR_LISTS = ("items", "additionalItems", "additionalProperties", "not", "allOf", "anyOf", "oneOf",
                    "extends", "type", "disallow")  # a subschema or a list of them (Draft 3's extends/type/disallow)


def _unmarked_pattern_names(schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """The names of ``patternProperties`` that RE2 does not compile, in a Draft 3 or 4 schema (already checked
    against its metaschema): those metaschemas do not give the names ``format: regex`` (Draft 6's on do, through
    ``propertyNames``; json-schema.org draft-04/schema and draft-06/schema), so without this walk such a pattern
    was refused only when a config first reached it, or never. Walks the keywords that hold subschemas only (a
    ``patternProperties`` inside an ``enum`` value is data), without recursion (a schema may nest deeply)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, Mapping):
            continue
        names = node.get("patternProperties")
        if isinstance(names, Mapping):
            for name in names:
                try:
                    search(name, "")
                except RegexError as exc:
                    error = ValidationError(f"{name!r} is not a pattern RE2 compiles", instance=name, cause=exc)
                    error.path.extend((*path, "patternProperties"))
                    yield error
        for keyword in _SCHEMA_MAPS:
            children = node.get(keyword)
            if isinstance(children, Mapping):
                stack.extend((child, (*path, keyword, name)) for name, child in children.items())
        for keyword in _SCHEMA_OR_LISTS:
            child = node.get(keyword)
            if isinstance(child, list):
                stack.extend((each, (*path, keyword, i)) for i, each in enumerate(child))
            else:
                stack.append((child, (*path, keyword)))


def _refused_pattern(source: SchemaSource, error: ValidationError) -> Problem:
    """A pattern of the schema (``error.instance``) that RE2 does not compile: no config is checked against the
    schema until it is rewritten (skipping the keyword would pass values it means to refuse)."""
    assert isinstance(error.cause, RegexError)
    return Problem(
        f"schema {source.name}: the pattern {_shorten(repr(error.instance))} at "
        f"{format_path(list(error.absolute_path))} does not compile on RE2, the linear-time engine fleetflow matches "
        f"patterns with: {error.cause.reason}",
        source.location,
        HINT,
    )


def _sort_path(path: Sequence[Any]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


@dataclass(frozen=True)
class _Violation:
    """One way a config breaks a schema, independent of where the config came from."""

    path: Path
    message: str
    hint: str
    missing: bool = False  # a required key is absent: located at the schema, not at a value


@dataclass(eq=False)
class _Compiled:
    source: SchemaSource
    key: str
    problems: list[Problem]
    validator: Validator | None


class ConfigValidator:
    """Validates composed config against schemas, caching compiled schemas and results."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[weakref.ref[SchemaSource], _Compiled]] = {}
        self._by_content: dict[str, _Compiled] = {}
        self._results: dict[tuple[str, str], tuple[_Violation, ...]] = {}

    def validate(self, assignment: str, composed: Composed, schemas: Sequence[SchemaSource]) -> list[Problem]:
        """Every violation of every schema by ``composed``, one :class:`Problem` each, in a stable order.

        An invalid schema gives the problems :func:`check_schema` reports (equal problems, so a caller that
        collects them into an :class:`~fleetflow.errors.InputError` shows them once)."""
        problems: list[Problem] = []
        for source in schemas:
            compiled = self._compile(source)
            if compiled.validator is None:
                problems.extend(compiled.problems)
                continue
            for violation in self._violations(compiled, composed):
                problems.append(self._problem(assignment, composed, source, violation))
        return problems

    def _compile(self, source: SchemaSource) -> _Compiled:
        entry = self._by_id.get(id(source))
        if entry is not None and entry[0]() is source:
            return entry[1]
        key = hashlib.sha256(
            canonical_json([source.name, str(source.location), source.schema]).encode()
        ).hexdigest()
        compiled = self._by_content.get(key)
        if compiled is None:
            problems = check_schema(source)
            validator = None
            if not problems:
                cls, _ = _dialect(source.schema)
                validator = linear(cls)(source.schema, format_checker=value_formats(cls))
            compiled = self._by_content[key] = _Compiled(source, key, problems, validator)
        self._by_id[id(source)] = (weakref.ref(source), compiled)
        return compiled

    def _violations(self, compiled: _Compiled, composed: Composed) -> tuple[_Violation, ...]:
        key = (compiled.key, composed.fingerprint)
        found = self._results.get(key)
        if found is None:
            assert compiled.validator is not None
            try:
                found = tuple(_collect(compiled.validator, composed.values))
            except RegexError as exc:  # a pattern neither the metaschema nor _unmarked_pattern_names found
                message = (f"the pattern {_shorten(repr(exc.pattern))} does not compile on RE2, the linear-time "
                           f"engine fleetflow matches patterns with: {exc.reason}")
                found = (_Violation((), message, HINT, missing=True),)
            except Exception as exc:  # e.g. an unresolvable $ref: the schema is at fault, not the config
                message = f"the schema cannot be evaluated: {_shorten(str(exc))}"
                hint = "fix the schema (a $ref must point inside the schema; nothing is fetched)"
                found = (_Violation((), message, hint, missing=True),)
            found = tuple(sorted(set(found), key=lambda v: (_sort_path(v.path), v.message)))
            self._results[key] = found
        return found

    @staticmethod
    def _problem(assignment: str, composed: Composed, source: SchemaSource, violation: _Violation) -> Problem:
        where = format_path(violation.path)
        location = source.location
        if not violation.missing:
            provenance = composed.locate(violation.path)
            if provenance is not None:
                location = provenance.winner.location
                where += f" (from ConfigMap {provenance.winner.source})"
        message = f"{assignment}: {where}: {violation.message} [schema {source.name}]"
        return Problem(message, location, violation.hint or None)


def _collect(validator: Validator, values: Any) -> Iterator[_Violation]:
    seen_required: set[tuple[Any, ...]] = set()
    for error in validator.iter_errors(values):
        path: Path = tuple(error.absolute_path)
        instance: Any = error.instance
        if error.validator == "required" and isinstance(instance, Mapping):
            marker = (path, tuple(error.absolute_schema_path))
            if marker in seen_required:
                continue
            seen_required.add(marker)
            required: Any = error.validator_value
            for name in required:
                if name not in instance:
                    key = (*path, name)
                    yield _Violation(
                        key,
                        "required key is missing",
                        f"set {format_path(key)} in a ConfigMap that applies to this assignment",
                        missing=True,
                    )
        elif error.validator == "additionalProperties" and error.validator_value is False:
            yield from _unexpected_keys(error, path)
        else:
            yield _Violation(path, _shorten(message_of(error)), _hint(error))


def _unexpected_keys(error: ValidationError, path: Path) -> Iterator[_Violation]:
    schema: Any = error.schema if isinstance(error.schema, Mapping) else {}
    instance: Any = error.instance
    try:
        extras = list(additional_keys(instance, schema))
    except (RegexError, TypeError):
        extras = []
    if not extras:
        yield _Violation(path, _shorten(message_of(error)), "remove the key or add it to the schema")
    for key in extras:
        yield _Violation(
            (*path, key),
            "key is not allowed by the schema (additionalProperties is false)",
            f"remove {key} from the ConfigMap, or add it to the schema's properties",
        )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def message_of(error: ValidationError) -> str:
    """``error``'s message in the words of the YAML and JSON the config is written in: ``null``, ``true``,
    ``"text"`` and ``{"a": 1}`` where jsonschema writes Python's ``None``, ``True``, ``'text'`` and ``{'a': 1}``
    (until 2026-11-29 a ConfigMap's ``port: null`` was refused as "None is not of type 'integer'").

    Built from the fields jsonschema gives every error (``ValidationError.validator``, the keyword that failed;
    ``.validator_value``, its value in the schema; ``.instance``, the value that failed it: jsonschema 4.26
    ``exceptions.py``, ``_Error.__init__``) for the keywords a config schema mostly uses: ``type``, ``enum``,
    ``const`` and ``pattern`` (the type names stay quoted as jsonschema quotes them, ``'string'``: a JSON Schema
    type name, not a value). For the other keywords jsonschema's own message, whose Python forms are replaced
    where they are known to stand: every keyword of ``jsonschema/_keywords.py`` that starts its message with
    ``f"{instance!r} ..."`` (``minimum``, ``maximum``, ``minLength``, ``format``, ``not``, ``anyOf``...), and
    those that end it with the keyword's value (``minimum``'s ``f"... the minimum of {minimum!r}"``, ``not``'s
    schema). ``required`` and ``additionalProperties: false`` get fleetflow's own words (:func:`_collect`)."""
    kind = error.validator
    expected: Any = error.validator_value
    instance: Any = error.instance
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        types = ", ".join(repr(n) if isinstance(n, str) else _json(n) for n in names)  # Draft 3: a schema too
        return f"{_json(instance)} is not of type {types}"
    if kind == "enum" and isinstance(expected, list):
        return f"{_json(instance)} is not one of {_json(expected)}"
    if kind == "const":
        return f"{_json(instance)} is not {_json(expected)}, the one value the schema allows"
    if kind == "pattern" and isinstance(expected, str):
        return f"{_json(instance)} does not match the pattern {expected}"
    message = error.message
    said = repr(instance)
    if message.startswith(said + " "):
        message = _json(instance) + message[len(said):]
    value = repr(expected)
    if kind not in ("required", "dependencies", "dependentRequired", "format") and message.endswith(" " + value):
        message = message[: len(message) - len(value)] + _json(expected)
    return _unexpected_named(message, instance)


def _unexpected_named(message: str, instance: Any) -> str:
    """``message`` with the keys or items it names in jsonschema's ``"... are not allowed (%s %s unexpected)"``
    (``additionalProperties``, ``unevaluatedProperties``, ``additionalItems``, ``unevaluatedItems``: jsonschema
    4.26 ``_keywords.py`` and ``_legacy_keywords.py``, each written by ``_utils.extras_msg`` as ``repr(extra)``)
    written as JSON: those of ``instance``, the longest first (a list's repr holds its items')."""
    if not message.endswith(" unexpected)") or "(" not in message:
        return message
    head, _, said = message.rpartition("(")
    values = list(instance) if isinstance(instance, (Mapping, list)) else []
    for each in sorted(values, key=lambda v: -len(repr(v))):
        said = said.replace(repr(each), _json(each))
    return f"{head}({said}"


def _hint(error: ValidationError) -> str:
    kind = error.validator
    expected: Any = error.validator_value
    instance: Any = error.instance
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        text = f"value must be of type {' or '.join(str(n) for n in names)}"
        top_level = len(error.absolute_path) == 1
        if top_level and isinstance(instance, str) and set(names) & {"integer", "number", "boolean"}:
            text += (
                "; ConfigMap data values are strings, so declare this key as a string in the schema"
                ' (with a "pattern"), or write the value inside a YAML map or list'
            )
        return text
    if kind == "enum":
        return "value must be one of " + ", ".join(_json(v) for v in expected)
    if kind == "const":
        return f"value must be {_json(expected)}"
    if kind == "pattern":
        return f"value must match the pattern {expected}"
    if kind == "format":
        return f"value must be a valid {expected}"
    if kind in ("anyOf", "oneOf") and error.context:
        return f"closest match: {_shorten(message_of(best_match(error.context)))}"
    return f"change the value so that it satisfies {kind}: {_shorten(_json(expected))}"
