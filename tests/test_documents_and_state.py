from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from fleetflow.errors import Location, Problem, Problems
from fleetflow.model.controlplane import build_resource
from fleetflow.model.documents import Tree
from fleetflow.model.resources import KIND_ORIGINS, SPEC_MODELS
from fleetflow.render.diff import unified_diff
from fleetflow.settings import ConfigFile
from tests.helpers import build_file_tree, parsed, tree_read

TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  KEY: value
  nested:
    deep: 1
---
---
apiVersion: fleetflow.dev/v1alpha1
kind: Cluster
metadata:
  name: c
spec:
  clusterType: ct
  items: [x, y]
"""


def test_documents_keep_positions_and_plain_data() -> None:
    docs, problems = parsed(TEXT, "f.yaml")
    assert problems == [] and len(docs) == 2  # the empty document is skipped
    cm, cluster = docs
    assert type(cm.body["data"]) is dict and cm.body["data"]["nested"] == {"deep": 1}
    assert str(cm.location) == "f.yaml:1:1" and str(cluster.location) == "f.yaml:11:1"
    assert str(cm.where("data", "KEY")) == "f.yaml:6:8"
    assert str(cm.where("data", "missing")) == "f.yaml:5:1"  # the deepest key that exists
    assert str(cluster.where("spec", "items", 1)) == "f.yaml:17:14"
    keys = cm.key_locations("data")
    assert keys[("KEY",)].line == 6 and keys[("nested", "deep")].line == 8


def test_tree_scan_skips_hidden_folders_but_environments(tmp_path: Path) -> None:
    root = build_file_tree(tmp_path, {
        "a.yaml": "kind: X\n", ".environments/dev.yaml": "kind: E\n", ".github/w.yml": "kind: W\n",
        "b/c.yml": "kind: C\n", "notes.txt": "x", ".hidden.yaml": "kind: H\n",
        "skip/d.yaml": "kind: D\n", ".fleetflowignore": "skip/\n",
    })
    docs, problems = tree_read(Tree(root, "t"))
    assert problems == []
    assert sorted(d.kind for d in docs) == ["C", "E", "X"]


def test_unified_diff() -> None:
    text = unified_diff({"a": b"x\n", "gone": b"y\n"}, {"a": b"z\n", "new": b"w"})
    assert "--- a/a\n+++ b/a" in text and "-x\n+z" in text
    assert "+++ /dev/null" in text and "--- /dev/null" in text and "No newline at end of file" in text


def test_state_path_joins_the_gitops_path_one_way() -> None:
    from fleetflow.render.incremental import STATE_PATH, state_path

    for root in (".", "", "/", "./", "./."):
        assert state_path(root) == STATE_PATH
    for path in ("apps", "apps/", "/apps", "./apps/", "apps/./"):
        assert state_path(path) == f"apps/{STATE_PATH}"
    assert state_path("clusters/eu/") == f"clusters/eu/{STATE_PATH}"


def test_metadata_labels_and_annotations_are_strings_whatever_yaml_made_of_them() -> None:
    """A label or annotation written as a boolean, null or number is kept as the string a Kubernetes user means
    (``true``, ``false``, empty, ``3``); all-string maps (the fast path, once per document at fleet scale) are kept
    as written, and a bad label key among string values is still reported where it stands."""
    docs, found = parsed(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  labels:\n"
        "    edge: true\n    legacy: false\n    tier: null\n    rack: 3\n    region: eu\n"
        "  annotations:\n    note: hi\nspec:\n  clusterType: ct\n"
    )
    problems = Problems()
    res = build_resource(docs[0], "env", problems)
    assert not found and not problems.items and res is not None
    assert res.labels == {"edge": "true", "legacy": "false", "tier": "", "rack": "3", "region": "eu"}
    assert res.annotations == {"note": "hi"}

    docs, _ = parsed(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: c2\n  labels:\n"
        "    region: eu\n    bad key: x\nspec:\n  clusterType: ct\n"
    )
    problems = Problems()
    assert build_resource(docs[0], "env", problems) is None
    (problem,) = problems.items
    assert "invalid label key 'bad key'" in problem.message
    assert problem.location is not None and problem.location.line == 7


def _fields(model: type[BaseModel], prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The path of every field of ``model`` as written in YAML, its nested models' fields and the first item of
    each list too."""
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        yield path
        for inner in _types(info.annotation):
            if typing.get_origin(inner) is list:
                yield (*path, 0)
                item = typing.get_args(inner)[0]
                if isinstance(item, type) and issubclass(item, BaseModel):
                    yield from _fields(item, (*path, 0))
            elif isinstance(inner, type) and issubclass(inner, BaseModel):
                yield from _fields(inner, path)


def _types(annotation: Any) -> Iterator[Any]:
    """``annotation`` and the members of the unions in it (``X | None``)."""
    yield annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            yield from _types(member)


def _empty_at(path: tuple[str | int, ...]) -> tuple[str, int, int]:
    """The lines under ``spec:`` that leave ``path`` empty, and the line (among them) and column just after its
    ':' (or its item's '-')."""
    lines: list[str] = []
    indent, item = "  ", False
    for part in path:
        if isinstance(part, int):
            item = True
        elif item:
            lines.append(f"{indent}- {part}:")
            indent, item = indent + "    ", False
        else:
            lines.append(f"{indent}{part}:")
            indent += "  "
    if item:
        lines.append(f"{indent}-")
    return "\n".join(lines), len(lines), len(lines[-1]) + 1


@pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
def test_an_empty_field_is_said_to_be_empty_at_its_own_line(kind: str) -> None:
    """Every field of every kind (and each list's first item) left empty: reported as "<field> is empty" with
    what to write there, at the field's own line just after its ':' (or the item's '-'), not at the next line in
    pydantic's words ("spec.repo: Input should be a valid string, got None" at the line below ``repo:``, until
    2026-11-28). A field that may be left empty gives no problem."""
    said = 0
    for path in _fields(SPEC_MODELS[kind]):
        body, line, column = _empty_at(path)
        head = f"apiVersion: fleetflow.dev/v1alpha1\nkind: {kind}\nmetadata:\n  name: x\nspec:\n"
        (doc,), found = parsed(head + body + "\n")
        problems = Problems()
        build_resource(doc, sorted(KIND_ORIGINS[kind])[0], problems)
        field = "spec." + ".".join(str(p) for p in path)
        for problem in [*found, *problems]:
            assert not any(word in problem.message for word in ("Input should", "None", "dict[", "valid string")), \
                (field, problem)
        mine = [p for p in problems if p.message.startswith(f"{kind} x: {field} ")
                or p.message.startswith(f"{kind} x: {field}:")]
        if not mine:
            continue
        (problem,) = mine
        assert problem.message == f"{kind} x: {field} is empty", body
        assert problem.location == Location("f.yaml", 5 + line, column), body
        assert problem.hint, body
        said += 1
    assert said >= 1


def _models() -> list[type[BaseModel]]:
    """Every model a user's YAML is validated with: the specs of every kind and the config file, nested ones too."""
    found: list[type[BaseModel]] = []
    todo: list[Any] = [*SPEC_MODELS.values(), ConfigFile]
    while todo:
        model = todo.pop()
        if isinstance(model, type) and issubclass(model, BaseModel) and model not in found:
            found.append(model)
            for info in model.model_fields.values():
                todo.extend(_types(info.annotation))
                todo.extend(arg for inner in _types(info.annotation) for arg in typing.get_args(inner))
    return sorted(found, key=lambda m: m.__name__)


def test_a_value_of_no_type_the_field_takes_is_one_problem() -> None:
    """A union field (``schema: dict | str``, ``configSchemas`` items, the config file's ``appId``) refuses a value
    with one error, in words (``OneOf``), not one per member of the union named by pydantic's tags
    ("spec.schema.dict[str,any]: ..." and "spec.schema.str: ...", until 2026-11-28): every field of every model,
    given a value no type takes, and a list of one."""
    models = _models()
    assert len(models) >= 20
    for model in models:
        for name, info in model.model_fields.items():
            alias = info.alias or name
            for given in (object(), [object()]):
                try:
                    model.model_validate({alias: given})
                except ValidationError as exc:
                    mine = [error["loc"] for error in exc.errors() if error["loc"][:1] == (alias,)]
                    assert len(mine) <= 1, (model.__name__, alias, mine)


def test_no_field_that_takes_a_whole_number_reads_a_boolean_as_one() -> None:
    """pydantic's lax mode reads ``true`` as 1 and ``false`` as 0, so ``minClusters: true`` expected one cluster and
    passed validate (until 2026-11-29). Every field of every model that takes the number 3 refuses ``true`` and
    ``false``, as the fields that take text or a mapping refuse them; quoted digits ("3") are still read."""
    takers = 0
    for model in _models():
        for name, info in model.model_fields.items():
            alias = info.alias or name

            def refusals(given: object) -> list[tuple[Any, ...]]:
                try:
                    model.model_validate({alias: given})  # noqa: B023 (called before the loop moves on)
                except ValidationError as exc:
                    return [e["loc"] for e in exc.errors() if e["loc"][:1] == (alias,)]  # noqa: B023
                return []

            if refusals(3):
                continue
            takers += 1
            for given in (True, False):
                assert refusals(given), (model.__name__, alias, given)
    assert takers >= 3  # minClusters, soakTime and timeout; the config file's appId


@pytest.mark.parametrize(("text", "message", "where", "hint"), [
    ("apiVersion: fleetflow.dev/v1alpha1\nkind: ConfigSchema\nmetadata:\n  name: edge-site\nspec:\n  schema: true\n",
     "ConfigSchema edge-site: spec.schema is a boolean, not a JSON Schema (a mapping, or its JSON or YAML text)",
     Location("f.yaml", 6, 11), "write {}"),
    ("apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: app\nspec:\n"
     "  configSchemas:\n  - 5\n  - edge-site\n",
     "Workload app: spec.configSchemas.0 is a number, not the name of a ConfigSchema or an inline JSON Schema (a "
     "mapping)", Location("f.yaml", 7, 5), "ConfigSchema"),
], ids=["config-schema-true", "config-schemas-item-a-number"])
def test_a_value_of_a_one_of_field_it_cannot_take_is_one_problem_in_words(
    text: str, message: str, where: Location, hint: str
) -> None:
    """``spec.schema: true`` gave two messages in pydantic's names (``spec.schema.dict[str,any]: Input should be a
    valid dictionary``, ``spec.schema.str: ...``); a ``configSchemas`` item the same. One problem, in words."""
    (doc,), _ = parsed(text)
    problems = Problems()
    assert build_resource(doc, "main", problems) is None
    (problem,) = problems
    assert problem.message == message
    assert problem.location == where
    assert problem.hint is not None and hint in problem.hint


PYDANTIC_WORDS = ("Input should", "valid string", "valid list", "valid dictionary", "valid integer", "valid boolean",
                  "instance of", "got ", "List should")
WRONG_KINDS = {"a number": "5", "a boolean": "true", "text": "word", "a list": "[x]", "a mapping": "{a: b}"}


def _written_at(path: tuple[str | int, ...], value: str) -> tuple[str, int]:
    """The lines under ``spec:`` that give ``path`` the YAML ``value``, and the line (among them) it is on."""
    body, line, _ = _empty_at(path)
    return f"{body} {value}", line


def _said_in_words(problems: list[Problem], field: str, shown: str, line: int) -> Problem | None:
    """The one problem of ``field``, checked to be in fleetflow's words (what the value is, what the field takes, a
    hint) at the value's ``line``; None when the field took the value, or refused it inside (a mapping's keys)."""
    for problem in problems:
        assert not any(word in problem.message for word in PYDANTIC_WORDS), problem
    mine = [p for p in problems if p.message.split(": ", 1)[-1].startswith((f"{field} ", f"{field}:"))]
    if not mine:
        return None
    assert len(mine) == 1, mine
    (problem,) = mine
    said = problem.message.split(": ", 1)[-1]
    if not said.startswith(f"{field} is "):
        return None  # our own validator's words ("invalid duration 'word': use e.g. 90s, 15m, 1h30m")
    assert said.startswith((f"{field} is {shown}, not ", f"{field} is 'word', not ")), problem
    assert problem.hint, problem
    assert problem.location is not None and problem.location.line == line, problem
    return problem


@pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
def test_a_value_of_the_wrong_kind_is_said_in_words_with_how_to_write_it(kind: str) -> None:
    """Every field of every kind (and each list's first item) given a number, a boolean, text, a list and a mapping:
    a kind its type does not take is one problem, "<field> is a number, not text" with how to write it, at the
    value's line; not pydantic's words ("spec.repo: Input should be a valid string, got 5", "spec.after: Input
    should be a valid list, got 'dev'", until 2026-11-29). A hint that quotes a value as text is YAML that reads
    back as that text."""
    said = 0
    for path in _fields(SPEC_MODELS[kind]):
        for shown, value in WRONG_KINDS.items():
            body, line = _written_at(path, value)
            (doc,), found = parsed(f"apiVersion: fleetflow.dev/v1alpha1\nkind: {kind}\nmetadata:\n  name: x\nspec:\n"
                                   f"{body}\n")
            assert found == []
            problems = Problems()
            build_resource(doc, sorted(KIND_ORIGINS[kind])[0], problems)
            field = "spec." + ".".join(str(p) for p in path)
            problem = _said_in_words(problems.items, field, shown, 5 + line)
            if problem is None:
                continue
            said += 1
            if problem.hint is not None and "meant as text: " in problem.hint:
                quoted = problem.hint.split("meant as text: ", 1)[1]
                key = path[-1]
                (again,), _ = parsed(quoted if isinstance(key, str) else f"k:\n- {quoted}")
                assert again.body == ({key: value} if isinstance(key, str) else {"k": [value]}), problem
    assert said >= 3


def test_a_value_of_the_wrong_kind_in_the_config_file_is_said_in_words(tmp_path: Path) -> None:
    """The config file's fields, each given a value of every kind, read from a real file: the same words and
    positions as a resource's (``forge: Input should be 'github' or 'local'``, ``github: Input should be a valid
    dictionary``, until 2026-11-29), a usage error."""
    from fleetflow.errors import UsageError
    from fleetflow.settings import read_config

    config = tmp_path / "c.yaml"
    said = 0
    for path in _fields(ConfigFile):
        for shown, value in WRONG_KINDS.items():
            body, line = _written_at(path, value)
            config.write_text(body.replace("\n  ", "\n")[2:] + "\n")
            try:
                read_config(config, explicit=True)
            except UsageError as exc:
                problem = _said_in_words(exc.problems(), ".".join(str(p) for p in path), shown, line)
                said += problem is not None
    assert said >= 10


@pytest.mark.parametrize(("spec", "message", "where", "hint"), [
    # a number written as text would be: the hint quotes it as written (1.10 is the number 1.1, 0x1F is 31)
    ("kind: Environment\nspec:\n  branch: 0x1F\n", "spec.branch is a number, not text", (6, 11),
     'quote it if it is meant as text: branch: "0x1F"'),
    ("kind: Environment\nspec:\n  after: [5]\n", "spec.after.0 is a number, not text", (6, 11),
     'quote it if it is meant as text: "5"'),
    ("kind: Environment\nspec:\n  after: dev, qa\n", "spec.after is text, not a list", (6, 10),
     "write a list: after: [dev, qa]"),
    ("kind: Environment\nspec:\n  pullRequest:\n    reviewers: '@me'\n", "spec.pullRequest.reviewers is text, not a "
     "list", (7, 16), 'write a list: reviewers: ["@me"]'),
    ("kind: Environment\nspec:\n  pullRequest:\n    autoMerge: yes please\n", "spec.pullRequest.autoMerge is text, "
     "not true or false", (7, 16), "write autoMerge: true or autoMerge: false"),
    ("kind: Environment\nspec:\n  rollout:\n    minClusters: 1.50\n", "spec.rollout.minClusters is 1.50, not a "
     "whole number", (7, 18), "write a whole number after 'minClusters:'"),
    ("kind: Environment\nspec:\n  rollout:\n    minClusters: -1\n", "spec.rollout.minClusters is -1, less than 0",
     (7, 18), "write 0 or more after 'minClusters:'"),
    ("kind: Environment\nspec:\n  rollout:\n    minClusters: .inf\n", "spec.rollout.minClusters is .inf, not a finite "
     "number", (7, 18), "write a number after 'minClusters:'"),
    ("kind: Environment\nspec:\n  after: ''\n", "spec.after is text, not a list", (6, 10),
     "write its items on the lines below 'after:', each after '- '"),
    ("kind: Environment\nspec:\n  rollout:\n    soakTime: [15m]\n", "spec.rollout.soakTime is a list, not a "
     "duration (whole seconds, or a text like 90s, 15m, 1h30m)", (7, 5), "write soakTime: 90s or soakTime: 15m"),
    ("kind: Environment\nspec:\n  concurrency: Queue\n", "spec.concurrency is 'Queue', not 'supersede' or 'queue'",
     (6, 16), "write concurrency: queue; the values are case-sensitive"),
    ("kind: Template\nspec:\n  type: config\n  manifests: []\n", "spec.manifests is an empty list", (7, 3),
     "write at least one item below 'manifests:', each after '- '"),
    ("kind: Workload\nspec:\n  deploymentTargets:\n  - name: t\n    environment: dev\n    labels: {\"true\": 5}\n",
     "spec.deploymentTargets.0.labels.true is a number, not text", (9, 22),
     'quote it if it is meant as text: "true": "5"'),
], ids=["number-as-written", "list-item", "list-from-commas", "list-item-quoted", "boolean", "whole-number",
        "bound", "infinite", "list-from-empty-text", "duration", "literal-case", "empty-list", "key-quoted"])
def test_a_value_of_the_wrong_kind_names_what_to_write(
    spec: str, message: str, where: tuple[int, int], hint: str
) -> None:
    """What a field takes, and a hint that is YAML for the key as written: one problem each."""
    (doc,), _ = parsed(f"apiVersion: fleetflow.dev/v1alpha1\nmetadata:\n  name: x\n{spec}")
    problems = Problems()
    build_resource(doc, "main", problems)
    (problem,) = problems
    assert problem.message == f"{doc.kind} x: {message}"
    assert problem.location == Location("f.yaml", *where)
    assert problem.hint == hint
