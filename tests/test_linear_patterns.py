"""Patterns a control plane writes (``.fleetflowignore`` lines, ConfigSchema ``pattern`` and ``patternProperties``)
run in time linear in the text they are matched against, so no commit can hold a check for hours.

Until 2026-11-28 they ran on Python's backtracking ``re``: ``*a*a*a*a*a*a*a*a*a*a*a*b`` took 80 s on a
42-character file name and ``^(a+)+$`` 0.8 s on 24 ``a`` and a ``b``, each further character doubling it. Each run
here is a fleetflow process with a time limit, since on that code it would not end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft7Validator, Draft201909Validator, Draft202012Validator
from jsonschema.protocols import Validator

from fleetflow.errors import Location
from fleetflow.render.schema_regex import linear
from fleetflow.render.validation import SchemaSource, check_schema
from tests.helpers import make_plane
from tests.test_bad_input import SCHEMA, deep

ROOT = Path(__file__).resolve().parents[1]
LONG = "a" * 60 + "b"  # the 24 of the note above take most of a second; 60 would take longer than anyone waits


def configmap(value: str, key: str = "k") -> str:
    """A ConfigMap (cm.yaml, the key at line 7) whose one key ``key`` holds ``value``."""
    return deep(1).replace("k: []", f"{key}: {value}")


def validate(tmp_path: Path, main: dict[str, str], env: dict[str, str]) -> tuple[int, str]:
    """``fleetflow validate`` of a small control plane with these files, in a process given 60 s (each takes a few):
    its exit code and what it printed (problems go to stderr)."""
    main_dir, env_dir = make_plane(tmp_path, main, env)
    code = "import sys; from fleetflow.cli import run; sys.argv[0] = 'fleetflow'; run()"
    done = subprocess.run(
        [sys.executable, "-c", code, "validate", "--main", str(main_dir), "--env", str(env_dir), "--environment",
         "dev"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_an_ignore_pattern_cannot_hang_the_read(tmp_path: Path) -> None:
    """The file is read (its broken YAML reported): the pattern, which it does not match, took no time."""
    name = "a" * 60 + ".yaml"
    code, output = validate(tmp_path, {}, {".fleetflowignore": "*a*a*a*a*a*a*a*a*a*a*a*b\n", name: "x: [\n"})
    assert code == 1, output[-2000:]
    assert f"{name}:" in output and "invalid YAML" in output, output


def test_a_long_ignore_file_is_read(tmp_path: Path) -> None:
    """Each line is its own RE2 regular expression: pathspec's own RE2 backend puts them all in one RE2 set, which
    does not compile past about 1,900 plain lines (an uncaught re2.error where google-re2 is installed)."""
    lines = "".join(f"old-{i}.yaml\n" for i in range(3000))
    code, output = validate(tmp_path, {}, {".fleetflowignore": lines, "old-2999.yaml": "x: [\n"})
    assert code == 0, output[-2000:]


SLOW = "^(a+)+$"

CASES = [
    ("pattern", f"{{type: object, properties: {{k: {{pattern: '{SLOW}'}}}}}}", configmap(LONG),
     "does not match", "cm.yaml:7"),
    ("patternProperties", f"{{type: object, patternProperties: {{'{SLOW}': {{}}, '^a': {{type: integer}}}}}}",
     configmap("x", key=LONG), "is not of type 'integer'", "cm.yaml:7"),
    # additionalProperties runs patternProperties' patterns too, in jsonschema and in fleetflow's own message
    ("additionalProperties", f"{{type: object, patternProperties: {{'{SLOW}': {{}}}}, additionalProperties: false}}",
     configmap("x", key=LONG), "key is not allowed by the schema", "cm.yaml:7"),
    ("unevaluatedProperties", f"{{type: object, patternProperties: {{'{SLOW}': {{}}}}, "
     "unevaluatedProperties: false}", configmap("x", key=LONG), f'"{LONG}" were unexpected', "s.yaml:6"),
]


@pytest.mark.parametrize(("schema", "cm", "message", "where"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_schema_pattern_cannot_hang_validation(
    tmp_path: Path, schema: str, cm: str, message: str, where: str
) -> None:
    code, output = validate(tmp_path, {"schemas/s.yaml": SCHEMA.format(name="s", schema=schema)}, {"cm.yaml": cm})
    assert code == 1, output[-2000:]
    assert message in output and where in output, output


REFUSED = [
    # RE2 has no lookaround and no backreferences: the schema is refused where it is written, not skipped
    ("lookahead", "{properties: {k: {pattern: '^(?!x)'}}}",
     "the pattern '^(?!x)' at properties.k.pattern does not compile on RE2"),
    ("backreference-in-patternProperties", r"{patternProperties: {'(a)\1': {}}}",
     "does not compile on RE2, the linear-time engine fleetflow matches patterns with: invalid escape sequence: \\1"),
    # Draft 4's metaschema does not mark patternProperties' names as patterns: fleetflow walks the schema for them
    ("draft-4-patternProperties", "{$schema: 'http://json-schema.org/draft-04/schema#', "
     "patternProperties: {'(?<=a)b': {}}}", "the pattern '(?<=a)b' at patternProperties does not compile on RE2"),
]


@pytest.mark.parametrize(("schema", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_pattern_re2_cannot_run_is_one_problem_at_the_schema(tmp_path: Path, schema: str, message: str) -> None:
    main = {"schemas/s.yaml": SCHEMA.format(name="s", schema=schema)}
    code, output = validate(tmp_path, main, {"cm.yaml": configmap("ab")})
    assert code == 1, output[-2000:]
    assert message in output and "s.yaml:6" in output, output
    assert "fleetflow matches schema patterns in time linear in the text" in output
    assert "Traceback" not in output


def test_draft_3_and_4_pattern_names_re2_refuses_are_found_in_the_schema_itself() -> None:
    """Draft 3's and 4's metaschemas give ``patternProperties``' names no ``format: regex`` (Draft 6's on do, through
    ``propertyNames``: json-schema.org/draft-04/schema and draft-06/schema), so the metaschema check cannot refuse
    them; until 2026-11-29 such a name was refused only when a config first reached it, and never when none did.
    Every keyword that holds subschemas is walked, in both drafts (Draft 3's ``extends`` and ``type`` union too),
    each refusal at its path; a ``patternProperties`` inside an ``enum`` value is data, not a schema."""
    bad, backreference, good = "(?<=a)b", "(a)\\1", "^[a-z]+$"
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"db": {"patternProperties": {bad: {}, good: {}}}},
        "items": [{}, {"patternProperties": {bad: {}}}],
        "definitions": {"d": {"not": {"patternProperties": {backreference: {}}}}},
        "anyOf": [{"patternProperties": {good: {}}}],
        "enum": [{"patternProperties": {bad: 1}}],
    }
    draft3 = {
        "$schema": "http://json-schema.org/draft-03/schema#",
        "extends": {"patternProperties": {bad: {}}},
        "type": ["string", {"patternProperties": {bad: {}}}],
    }
    where = Location(file="s.yaml", line=6)
    found = {name: [p.message for p in check_schema(SchemaSource(name, schema, where))]
             for name, schema in (("four", draft4), ("three", draft3))}
    engine = "does not compile on RE2, the linear-time engine fleetflow matches patterns with:"
    assert found["four"] == [
        f"schema four: the pattern {backreference!r} at definitions.d.not.patternProperties {engine} invalid escape "
        "sequence: \\1",
        f"schema four: the pattern {bad!r} at items[1].patternProperties {engine} invalid perl operator: (?<=",
        f"schema four: the pattern {bad!r} at properties.db.patternProperties {engine} invalid perl operator: (?<=",
    ], found["four"]
    assert found["three"] == [
        f"schema three: the pattern {bad!r} at extends.patternProperties {engine} invalid perl operator: (?<=",
        f"schema three: the pattern {bad!r} at type[1].patternProperties {engine} invalid perl operator: (?<=",
    ], found["three"]
    good_only = {"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {good: {}}}
    assert check_schema(SchemaSource("fine", good_only, where)) == []


def test_patterns_nested_deeper_than_python_compiles_are_no_traceback(tmp_path: Path) -> None:
    """A schema pattern and a ``format: regex`` value nested 10,000 parentheses deep: Python's ``re`` raised a
    RecursionError (until 2026-11-28 a traceback from the metaschema check); RE2 compiles the pattern, and the value
    is reported as no regex. And ECMA-262's ``\\uXXXX`` escape, which RE2 does not know, is read."""
    nested = "(" * 10_000 + "a" + ")" * 10_000
    schema = (f"{{type: object, properties: {{k: {{pattern: '{nested}'}}, f: {{format: regex}}, "
              r"e: {pattern: '^caf\u00e9$'}}}")  # ECMA-262's \u00e9 (RE2 writes it \x{00e9})
    cm = configmap("b") + f"  f: '{'(' * 10_000}'\n  e: cafe\n"
    code, output = validate(tmp_path, {"schemas/s.yaml": SCHEMA.format(name="s", schema=schema)}, {"cm.yaml": cm})
    assert "Traceback" not in output, output[-3000:]
    assert code == 1, output[-2000:]
    assert '"b" does not match' in output, output[-2000:]
    assert "value must be a valid regex" in output and "cm.yaml:8" in output, output[-2000:]
    assert '"cafe" does not match' in output and "cm.yaml:9" in output, output[-2000:]


# --- the keywords fleetflow replaces decide as jsonschema's do (for patterns both engines read alike) -------------
PARTS = [
    {"patternProperties": {"^a": {"type": "integer"}}},
    {"properties": {"b": {"type": "string"}}},
    {"additionalProperties": {"type": "string"}},
    {"additionalProperties": False},
    {"unevaluatedProperties": False},
    {"unevaluatedProperties": {"type": "integer"}},
    {"allOf": [{"patternProperties": {"c$": {}}}]},
    {"anyOf": [{"properties": {"x": {"const": 1}}, "required": ["x"]}, {"patternProperties": {"^y": {}}}]},
    {"if": {"required": ["a1"]}, "then": {"properties": {"z": {}}}, "else": {"patternProperties": {"z": {}}}},
    {"dependentSchemas": {"b": {"patternProperties": {"^d": {}}}}},
    {"$ref": "#/$defs/p"},
    {"propertyNames": {"pattern": "^[a-z0-9]+$"}},
    {"properties": {"s": {"pattern": "^[0-9]+$"}}},
]
DIALECTS = [Draft202012Validator, Draft201909Validator, Draft7Validator, Draft4Validator]


@given(
    dialect=st.sampled_from(DIALECTS),
    parts=st.lists(st.sampled_from(PARTS), min_size=1, max_size=4),
    instance=st.dictionaries(st.sampled_from(["a1", "ab", "b", "c", "abc", "x", "y1", "z", "d2", "s", "B", "zz"]),
                             st.sampled_from([1, "s", "12", True]), max_size=6),
)
@settings(max_examples=500, deadline=None)
def test_the_linear_keywords_decide_as_jsonschema_does(
    dialect: type[Validator], parts: list[dict[str, Any]], instance: dict[str, Any]
) -> None:
    """unevaluatedProperties' walk over the schema is jsonschema's copied with its ``re.search`` replaced (Draft
    2019-09's and 2020-12's differ): the same errors, at the same places."""
    schema: dict[str, Any] = {"$defs": {"p": {"patternProperties": {"b$": {"type": "string"}}}}}
    for part in parts:
        schema.update(part)

    def errors(cls: type[Validator]) -> list[tuple[str, list[Any]]]:
        return sorted((e.message, list(e.path)) for e in cls(schema).iter_errors(instance))

    assert errors(linear(dialect)) == errors(dialect)


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    (r"^\S+$", "a\u00a0b", False),  # a no-break space is whitespace to ECMA-262 (and to Python's re); not to RE2
    (r"^\s$", "\u3000", True),  # an ideographic space (Zs)
    (r"^[\s-]+$", " -\u2028", True),  # inside a class too
    (r"^[\S\s]+$", "any thing", True),  # the "any character" idiom
    (r"^\\s$", "\\s", True),  # an escaped backslash, then an s: no whitespace class
    (r"^\w+$", "caf\u00e9", False),  # ECMA-262's \w is ASCII (Python's re took é)
    (r"^\p{L}+$", "caf\u00e9", True),  # what to write instead
    (r"^\u00e9\d{3}$", "\u00e9123", True),
])
def test_schema_patterns_read_whitespace_as_ecma_262_does(pattern: str, text: str, matches: bool) -> None:
    """JSON Schema's patterns are ECMA-262 regular expressions (JSON Schema 2020-12 Validation, 6.3.3 "pattern"),
    whose ``\\s`` is WhiteSpace and LineTerminator: tab, vertical tab, form feed, space, U+00A0, U+FEFF, every Zs
    space, LF, CR, U+2028, U+2029 (ECMA-262, "CharacterClassEscape"). RE2's ``\\s`` is ``[\\t\\n\\f\\r ]``
    alone, so ``^\\S+$`` passed a value holding a no-break space when schema patterns moved to RE2 (a bug hunt,
    2026-11-28): ``\\s`` and ``\\S`` are now written out for RE2."""
    from fleetflow.render.schema_regex import search

    assert search(pattern, text) is matches
