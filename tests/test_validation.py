"""Validation of composed config against JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetflow.errors import InputError, Location, Problem
from fleetflow.model.controlplane import load_control_plane
from fleetflow.render.composition import Composed, Composer, ConfigSource, Subject
from fleetflow.render.pipeline import assignment_schemas, checked_inputs, same_problem_once
from fleetflow.render.validation import ConfigValidator, SchemaSource, check_schema, format_path
from tests.helpers import MAIN_FILES, make_plane, run_cli

SUBJECT = Subject("dev", "edge", {}, "shop-web", {"workload": "shop"}, "shop")
SCHEMA_AT = Location("schemas/app.yaml", 4)


def composed(*data: dict[str, Any]) -> Composed:
    """Compose ConfigMaps ``cm0``, ``cm1``... whose keys sit on lines 10, 11... of ``cmN.yaml``."""
    sources = [
        ConfigSource(
            f"cm{n}",
            Location(f"cm{n}.yaml", 1),
            {},
            0,
            values,
            {(key,): Location(f"cm{n}.yaml", 10 + i) for i, key in enumerate(values)},
        )
        for n, values in enumerate(data)
    ]
    return Composer(sources).compose(SUBJECT)


def schema(body: dict[str, Any], name: str = "app-schema") -> SchemaSource:
    return SchemaSource(name, body, SCHEMA_AT, {})


APP_SCHEMA = schema(
    {
        "type": "object",
        "required": ["db", "replicas"],
        "properties": {
            "db": {
                "type": "object",
                "required": ["host", "user"],
                "properties": {"port": {"type": "integer"}, "host": {"type": "string"}},
            },
            "replicas": {"type": "string", "pattern": "^[0-9]+$"},
            "ports": {"type": "array", "items": {"type": "integer"}},
            "mode": {"enum": ["blue", "green"]},
        },
    }
)


def test_valid_config_has_no_problems() -> None:
    config = composed({"db": "host: db\nuser: app\nport: 5432", "replicas": "3"})
    assert ConfigValidator().validate("edge/shop-web", config, [APP_SCHEMA]) == []


def test_type_error_names_assignment_key_schema_and_line() -> None:
    config = composed({"db": "host: db\nuser: u"}, {"db": "port: abc", "replicas": "three"})
    problems = ConfigValidator().validate("edge/shop-web", config, [APP_SCHEMA])
    assert [p.location for p in problems] == [Location("cm1.yaml", 10), Location("cm1.yaml", 11)]
    port, replicas = problems
    assert "edge/shop-web" in port.message
    assert "db.port" in port.message
    assert "app-schema" in port.message
    assert '"abc" is not of type \'integer\'' in port.message
    assert "cm1" in port.message
    assert port.hint is not None and "integer" in port.hint
    assert "replicas" in replicas.message
    assert replicas.hint is not None and "pattern" in replicas.hint


def test_missing_required_keys_point_at_the_schema() -> None:
    config = composed({"db": "port: 1"})
    problems = ConfigValidator().validate("edge/shop-web", config, [APP_SCHEMA])
    assert [p.location for p in problems] == [SCHEMA_AT] * 3
    messages = " | ".join(p.message for p in problems)
    for key in ("db.host", "db.user", "replicas"):
        assert f"{key}: required key is missing" in messages
    assert problems[0].hint == "set db.host in a ConfigMap that applies to this assignment"


def test_nested_and_list_item_errors_point_at_the_value() -> None:
    nested = ConfigSource(
        "nested",
        Location("env/cm.yaml", 1),
        {},
        0,
        {"db": {"host": "h", "user": "u", "port": "x"}, "replicas": "1", "ports": "[80, http]"},
        {
            ("db",): Location("env/cm.yaml", 5),
            ("db", "port"): Location("env/cm.yaml", 8),
            ("ports",): Location("env/cm.yaml", 9),
        },
    )
    config = Composer([nested]).compose(SUBJECT)
    problems = ConfigValidator().validate("edge/shop-web", config, [APP_SCHEMA])
    assert [(p.location, p.message.split(":")[1].strip()) for p in problems] == [
        (Location("env/cm.yaml", 8), "db.port (from ConfigMap nested)"),
        (Location("env/cm.yaml", 9), "ports[1] (from ConfigMap nested)"),
    ]


def test_every_violation_is_reported_in_a_stable_order() -> None:
    config = composed({"db": "[1]", "replicas": "x", "mode": "red", "ports": "[a, b]"})
    first = ConfigValidator().validate("a", config, [APP_SCHEMA])
    second = ConfigValidator().validate("a", config, [APP_SCHEMA])
    assert first == second
    paths: list[list[str | int]] = [["db"], ["mode"], ["ports", 0], ["ports", 1], ["replicas"]]
    assert [format_path(p) for p in paths] == [m.message.split(": ")[1].split(" (")[0] for m in first]
    mode = first[1]
    assert mode.hint == 'value must be one of "blue", "green"'


def test_additional_properties_name_each_unexpected_key() -> None:
    strict = schema({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, "strict")
    config = composed({"a": "1", "b": "2", "c": "3"})
    problems = ConfigValidator().validate("x", config, [strict])
    assert [p.location for p in problems] == [Location("cm0.yaml", 11), Location("cm0.yaml", 12)]
    assert problems[0].hint == "remove b from the ConfigMap, or add it to the schema's properties"


def test_several_schemas_each_report() -> None:
    other = schema({"required": ["team"]}, "team-schema")
    problems = ConfigValidator().validate("x", composed({"replicas": "1"}), [APP_SCHEMA, other])
    assert [p.message.split("[schema ")[1] for p in problems] == ["app-schema]", "team-schema]"]


def test_results_are_cached_per_fingerprint_but_located_per_assignment() -> None:
    validator = ConfigValidator()
    a = composed({"replicas": "x", "db": "host: h\nuser: u"})
    b = composed({"db": "host: h\nuser: u"}, {"replicas": "x"})
    assert a.fingerprint == b.fingerprint
    first = validator.validate("a", a, [APP_SCHEMA])
    assert validator.validate("a", a, [APP_SCHEMA]) == first
    assert len(validator._results) == 1
    second = validator.validate("b", b, [APP_SCHEMA])
    assert len(validator._results) == 1
    assert first[0].location == Location("cm0.yaml", 10)
    assert second[0].location == Location("cm1.yaml", 10)
    assert "b:" in second[0].message


def test_schemas_are_compiled_once_per_content() -> None:
    validator = ConfigValidator()
    config = composed({"replicas": "1"})
    copy = SchemaSource(APP_SCHEMA.name, dict(APP_SCHEMA.schema), APP_SCHEMA.location, {})
    validator.validate("a", config, [APP_SCHEMA])
    validator.validate("a", config, [copy])
    assert len(validator._by_content) == 1


def test_invalid_schema_is_reported_by_check_schema() -> None:
    bad = schema({"type": "objekt", "properties": {"a": {"minimum": "one"}}}, "bad")
    problems = check_schema(bad)
    assert len(problems) == 2
    assert all(p.location == SCHEMA_AT for p in problems)
    assert "bad" in problems[0].message
    assert "properties.a.minimum" in problems[0].message
    assert "type" in problems[1].message


def test_invalid_schema_in_validate_gives_the_same_problems_once() -> None:
    bad = schema({"type": "objekt"}, "bad")
    validator = ConfigValidator()
    first = validator.validate("a", composed({}), [bad])
    second = validator.validate("b", composed({"x": "1"}), [bad])
    assert first == second == check_schema(bad)
    assert len(InputError(first + second).problems()) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"type": "object"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"type": "string"}}},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"x": {}}},
    ],
)
def test_valid_schemas_pass_check_schema(body: dict[str, Any]) -> None:
    assert check_schema(schema(body)) == []


def test_metaschema_follows_schema_keyword() -> None:
    # exclusiveMinimum is a boolean in draft 4 and a number in 2020-12
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 3}
    assert check_schema(schema(draft4)) != []
    assert check_schema(schema({"exclusiveMinimum": 3})) == []


def test_unknown_dialect_and_non_map_schema() -> None:
    unknown = check_schema(schema({"$schema": "https://example.com/my-schema"}))
    assert len(unknown) == 1
    assert "unknown $schema" in unknown[0].message
    not_a_map: Any = ["type", "object"]
    assert "must be a map" in check_schema(SchemaSource("list", not_a_map, SCHEMA_AT, {}))[0].message


def test_unresolvable_ref_is_a_problem_not_a_crash() -> None:
    remote = schema({"$ref": "https://example.com/schema.json"}, "remote")
    problems = ConfigValidator().validate("a", composed({"x": "1"}), [remote])
    assert len(problems) == 1
    assert problems[0].location == SCHEMA_AT
    assert "cannot be evaluated" in problems[0].message


def test_format_is_checked() -> None:
    ipv4 = schema({"properties": {"ip": {"type": "string", "format": "ipv4"}}}, "net")
    problems = ConfigValidator().validate("a", composed({"ip": "300.1.1.1"}), [ipv4])
    assert len(problems) == 1
    assert problems[0].hint == "value must be a valid ipv4"


NEEDS_SITE = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: ConfigSchema
    metadata:
      name: needs-site
      labels:
        tier: web
    spec:
      schema:
        type: object
        required: [SITE_ID]
"""


@pytest.mark.parametrize(("named_by", "labelled"), [("workload", True), ("target", True), ("both", True),
                                                    ("both", False)])
def test_a_schema_its_labels_apply_and_its_workload_names_is_checked_once(
    tmp_path: Path, named_by: str, labelled: bool
) -> None:
    """ConfigSchema needs-site applies to app's targets by its label (``tier: web``, a label of the workload) and
    is also named in ``configSchemas`` (of the workload, of the target, or of both). It was checked once per route:
    the same missing key reported twice per assignment, and the "(and the same in N more assignments: ...)" of the
    one message counted and listed an assignment twice. Now each ConfigSchema is checked once per assignment;
    the message names the ConfigSchema's own schema (both routes lead to it), and each assignment once. Named by
    both the workload and its target (its labels applying nowhere: ``tier: db``), it is checked once too."""
    app = MAIN_FILES["workloads/app.yaml"]
    schema_file = NEEDS_SITE if labelled else NEEDS_SITE.replace("tier: web", "tier: db")
    if named_by in ("workload", "both"):
        app = app.replace("workspace: team-a\n", "workspace: team-a\n          configSchemas: [needs-site]\n")
    if named_by in ("target", "both"):
        app = app.replace("purpose: test\n", "purpose: test\n              configSchemas: [needs-site]\n")
    assert app.count("configSchemas") == (2 if named_by == "both" else 1)
    main_dir, env_dir = make_plane(tmp_path, {"workloads/app.yaml": app, "schemas/needs-site.yaml": schema_file})
    checked = checked_inputs(load_control_plane(main_dir, env_dir), "dev")
    named = list(checked.schemas.values())
    target = checked.schedule.targets["app-dev"]
    subject = Subject("dev", "cloud-eu", {"region": "eu", "kind": "cloud"}, target.id, target.labels, target.workload)
    schemas = assignment_schemas(subject, [s for s in named if not s.labels], [s for s in named if s.labels],
                                 checked.target_schemas[target.id])
    assert [s.name for s in schemas] == ["needs-site"]
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--format", "json")
    assert result.exit_code == 1, result.output
    [problem] = json.loads(result.output)["problems"]
    assert problem["message"] == ("cloud-eu/app-dev: SITE_ID: required key is missing [schema needs-site] (and the "
                                  "same in 1 more assignment: edge-line1/app-dev)")
    assert problem["location"]["file"].endswith("schemas/needs-site.yaml") and problem["location"]["line"] == 8


def test_the_same_problem_twice_in_one_assignment_names_it_once() -> None:
    """However an assignment comes to report one problem twice, the "(and the same in N more ...)" line counts
    and lists each assignment once (it listed ``b`` twice, and counted 2, before)."""
    def twice(aid: str) -> list[Problem]:
        return [Problem(f"{aid}: SITE_ID: required key is missing [schema s]", SCHEMA_AT)] * 2

    [problem] = same_problem_once({"ct/a": twice("ct/a"), "ct/b": twice("ct/b")})
    assert problem.message == ("ct/a: SITE_ID: required key is missing [schema s] (and the same in 1 more "
                               "assignment: ct/b)")


# A ConfigMap is YAML, a schema JSON or YAML: a value the schema refuses is named as they write it. jsonschema's
# messages are Python's ("None is not of type 'string'"): fleetflow builds its own from ValidationError's
# ``validator``, ``validator_value`` and ``instance`` (jsonschema 4.26 ``jsonschema/exceptions.py``,
# ``_Error.__init__``; the messages it replaces: ``jsonschema/_keywords.py``, ``type``, ``enum``, ``const``,
# ``pattern``, ``not``, ``minItems``, each ``f"{instance!r} ..."``).
WORDED = schema({"type": "object", "properties": {
    "port": {"type": "integer"},
    "debug": {"type": "string"},
    "db": {"type": "string"},
    "mode": {"enum": ["blue", None, True]},
    "tier": {"const": {"level": [1, None]}},
    "replicas": {"pattern": "^[0-9]+$"},
    "flag": {"not": {"type": "boolean"}},
    "hosts": {"minItems": 2},
    "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "pair": {"prefixItems": [{}], "unevaluatedItems": False},
}})


@pytest.mark.parametrize(("values", "said", "hint"), [
    ({"port": None}, "port (from ConfigMap cm0): null is not of type 'integer'", "value must be of type integer"),
    ({"debug": True}, "true is not of type 'string'", None),
    ({"db": {"a": 1, "b": "x"}}, """{"a": 1, "b": "x"} is not of type 'string'""", None),
    ({"mode": "red"}, """"red" is not one of ["blue", null, true]""", 'value must be one of "blue", null, true'),
    ({"tier": {"level": [1]}}, """{"level": [1]} is not {"level": [1, null]}, the one value the schema allows""",
     None),
    ({"replicas": "three"}, '"three" does not match the pattern ^[0-9]+$', None),
    ({"flag": False}, """false should not be valid under {"type": "boolean"}""", None),
    ({"hosts": [None]}, "[null] is too short", None),
    ({"either": "x"}, '"x" is not valid under any of the given schemas', """closest match: "x" is not of type"""),
    ({"pair": [1, None, {"on": True}]}, """Unevaluated items are not allowed (null, {"on": true} were unexpected)""",
     None),
])
def test_a_refused_value_is_written_as_yaml_and_json_write_it(
    values: dict[str, Any], said: str, hint: str | None
) -> None:
    """null, true, "text" and {"a": 1}: not Python's None, True, 'text' and {'a': 1} (until 2026-11-29)."""
    [problem] = ConfigValidator().validate("edge/shop-web", composed(values), [WORDED])
    assert said in problem.message, problem.message
    for python in ("None", "True", "False", "{'", "['"):
        assert python not in problem.message, problem.message
    if hint is not None:
        assert problem.hint is not None and hint in problem.hint, problem.hint


def test_a_schema_mistake_is_written_as_json_writes_it() -> None:
    """The metaschema's errors name a part of the schema: in JSON too (``{'type': 'strin'}`` until 2026-11-29)."""
    [problem] = check_schema(schema({"properties": {"a": {"type": None}}}))
    assert "null is not valid under any of the given schemas" in problem.message, problem.message
