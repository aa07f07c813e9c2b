"""A key written twice in one mapping of a manifest a template renders (fleetflow/render/duplicate_keys.py).

Flux's kustomize-controller fails the Kustomization: after the build it calls ``resMap.AsYaml()``
(fluxcd/kustomize-controller ``internal/controller/kustomization_controller.go``, "kustomize build failed"), which
decodes each resource's node into a map (kustomize ``api/resource/resource.go`` ``AsYAML``, ``kyaml/yaml/rnode.go``
``MarshalJSON``), and go-yaml v3 refuses two keys of the same kind and text in one mapping: "mapping key %#v already
defined at line %d" (go-yaml v3 ``decode.go``, ``decoder.mapping`` with ``uniqueKeys``; kustomize
``api/krusty/duplicatekeys_test.go``: ``env`` twice, ``AsYaml`` fails). Argo CD reads the file with apimachinery's
``YAMLOrJSONDecoder`` (argo-cd ``reposerver/repository/repository.go`` ``splitYAMLOrJSON``; apimachinery
``pkg/util/yaml/decoder.go``: ``sigs.k8s.io/yaml.Unmarshal``, go-yaml v2 not strict), which keeps the later value
without a word (go-yaml v2 ``decode.go`` ``setMapIndex``: only ``strict`` says "already set in map"). Until
2026-11-29 such a manifest was written and pushed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetflow.render import duplicate_keys
from fleetflow.render.duplicate_keys import _exact, duplicate_key
from fleetflow.render.explain import problem_line
from fleetflow.render.templates import TemplateEngine, TemplateRenderError
from tests.helpers import ENV_FILES, make_plane, run_cli, tree_bytes
from tests.test_rendering import SUBJECT, source, variables


@pytest.fixture(scope="module")
def engine() -> TemplateEngine:
    return TemplateEngine()


def test_a_key_two_branches_both_write_fails_the_assignment(engine: TemplateEngine) -> None:
    """The mistake as it is made: two ``{% if %}`` blocks that each write ``replicas``, both true for some
    assignment. The key and both lines of what it renders are named; the value is not (it is the assignment's)."""
    manifest = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n"
        "{% if ConfigData.REPLICAS %}\n  replicas: {{ ConfigData.REPLICAS }}\n{% endif %}\n"
        "  selector: {}\n"
        "{% if ConfigData.DEBUG %}\n  replicas: 1\n{% endif %}\n")
    compiled = engine.compile(source(manifest, first_line=20))
    with pytest.raises(TemplateRenderError) as caught:
        compiled.render(variables(), SUBJECT)
    problem = caught.value.problem
    assert str(problem.location) == "templates/tpl.yaml:20"
    assert problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders the key 'replicas' twice in one mapping "
        "(contentType: yaml): at lines 7 and 11 of what it renders")
    assert problem.hint is not None and "Flux refuses the file" in problem.hint and "Argo CD" in problem.hint
    assert caught.value.in_text  # the hint names explain --rendered, which shows those lines
    # an assignment for which only one branch holds renders
    assert compiled.render(variables(ConfigData={"REPLICAS": 2, "DEBUG": False}), SUBJECT) is not None


def test_labels_written_twice(engine: TemplateEngine) -> None:
    """A template that writes its own labels and then the assignment's, each under ``labels:``: Argo CD would
    apply only the assignment's."""
    manifest = ("kind: Namespace\nmetadata:\n  name: {{ Namespace }}\n  labels:\n    team: a\n"
                "  labels: {{ Labels | toJson }}\n")
    with pytest.raises(TemplateRenderError) as caught:
        engine.compile(source(manifest)).render(variables(), SUBJECT)
    assert caught.value.problem.message.endswith(
        "renders the key 'labels' twice in one mapping (contentType: yaml): at lines 4 and 6 of what it renders")


@pytest.mark.parametrize(("doc", "found"), [
    ("a: 1\nb: 2\na: 3\n", ("a", 1, 3)),
    ("spec:\n  template:\n    spec:\n      replicas: 1\n      x: {}\n      replicas: 2\n", ("replicas", 4, 6)),
    ("env:\n- name: A\n  value: x\n  name: B\n", ("name", 2, 4)),  # in one item: the first key after its "- "
    ("env:\n  - - name: A\n      name: B\n", ("name", 2, 3)),
    ('a: 1\n"a": 2\n', ("a", 1, 2)),  # quoted or not, one key (go-yaml v3 compares the text)
    ("'a': 1\n\"a\": 2\n", ("a", 1, 2)),
    ('"\\x61": 1\na: 2\n', ("a", 1, 2)),
    ("a : 1\na: 2\n", ("a", 1, 2)),
    ("m: {a: 1, b: 2, a: 3}\n", ("a", 1, 1)),
    ('m: {"a": 1, a: 3}\n', ("a", 1, 1)),
    ("m: {\n  a: 1,\n    a: 2}\n", ("a", 2, 3)),  # a flow mapping over lines: any column
    ("? a\n: 1\na: 2\n", ("a", 1, 3)),
    ("a: 1\n!!str a: 2\n", ("a", 1, 2)),
    ("x: &k a\ny:\n  *k : 1\n  *k : 2\n", ("k", 3, 4)),  # an alias by its anchor's name, as go-yaml v3
    ("kind: A\n---\nb: 1\nb: 2\n", ("b", 3, 4)),
    ("a:\tx\nb: 1\na: y\n", ("a", 1, 3)),
    ("# a: 1\na: 1\n# a: 2\nb:\n  - c\na: 2\n", ("a", 2, 6)),
    # a line less indented that does not end the mapping: a comment, the rest of a quoted scalar or of a flow
    # sequence (libyaml reads those at any column)
    ("- x:\n  a: 1\n# c: 1\n  a: 2\n", ("a", 2, 4)),
    ('a:\n  b: "x\ny: 1"\n  b: 2\n', ("b", 2, 4)),
    ("a:\n  b: 'x\ny: 1'\n  b: 2\n", ("b", 2, 4)),
    ("a:\n  b: [x,\ny: 1]\n  b: 2\n", ("b", 2, 4)),
])
def test_a_key_twice_in_one_mapping_is_found(doc: str, found: tuple[str, int, int]) -> None:
    assert duplicate_key(doc) == found
    assert _exact(doc) == found
    assert _reference(doc) == ("a" if "*k" in doc else found[0])  # PyYAML's node of an alias is its anchor's


@pytest.mark.parametrize("doc", [
    # sibling items of a list: each its own mapping
    "env:\n- name: A\n  value: x\n- name: B\n  value: y\n",
    "containers:\n  - name: a\n    ports:\n      - name: http\n      - name: metrics\n  - name: b\n",
    # one key in different mappings
    "metadata:\n  name: a\nspec:\n  sourceRef:\n    name: a\n  name: b\n",
    "a:\n  x: 1\nb:\n  x: 2\n",
    # inside a block scalar: the app's text, one string to the agents
    "kind: ConfigMap\ndata:\n  config.yaml: |\n    a: 1\n    a: 2\n  other: >-\n    b: 1\n    b: 2\n",
    "data:\n  s: |2\n     a: 1\n     a: 2\n",
    # separate documents
    "a: 1\n---\na: 2\n",
    "a: 1\n...\n---\na: 2\n",
    # flow mappings, each its own; JSON text in a quoted value
    "m: {a: 1}\nn: {a: 2}\nl: [{a: 1}, {a: 2}]\n",
    "m: {a: {b: 1}, b: 2}\n",
    'FLAGS: "{\\"a\\":1,\\"a\\":2}"\n',
    "x: 'a: 1, a: 2'\n",
    "s: [a: 1, a: 2]\n",  # two mappings of one pair each
    # not one key: go-yaml v3 compares the text
    "1: a\n1.0: b\n",
    "a: 1\nA: 2\n'a ': 3\n",
    "a:b: 1\na:c: 2\n",
    # a key that only looks twice
    "a: 1\nb: |\n  text\na2: 1\n",
    "url: http://x/?a=1&b=2\nc: '*'\n",
])
def test_the_same_key_text_where_it_is_no_duplicate_passes(doc: str) -> None:
    assert duplicate_key(doc) is None
    assert _exact(doc) is None
    assert _reference(doc) is None


def test_a_json_manifest_with_a_key_twice_fails_the_assignment(engine: TemplateEngine) -> None:
    """Argo CD reads a ``.json`` manifest with Go's JSON decoding into an ``Unstructured`` (argo-cd
    ``reposerver/repository/repository.go`` ``getObjsFromYAMLOrJSON``; apimachinery ``pkg/util/json/json.go``:
    sigs.k8s.io/json ``UnmarshalCaseSensitivePreserveInts``), which keeps the later value (golang/go#24415)."""
    manifest = '{"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}, "labels": {}}, "data": {}}'
    with pytest.raises(TemplateRenderError) as caught:
        engine.compile(source(manifest, content_type="json")).render(variables(), SUBJECT)
    assert caught.value.problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders the key 'labels' twice in one object "
        "(contentType: json): at line 1, columns 49 and 71 of what it renders")
    assert caught.value.in_text and "Argo CD keeps the later value" in (caught.value.problem.hint or "")
    # the same key in different objects, and whatever toJson writes, passes
    fine = ('{"metadata": {"name": "a", "labels": {"name": "b"}}, '
            '"data": {{ {"name": Workload, "labels": Labels} | toJson }}}')
    assert engine.compile(source(fine, content_type="json")).render(variables(), SUBJECT) is not None


def test_a_json_key_twice_is_named_at_both_its_lines_and_columns(engine: TemplateEngine) -> None:
    """As a YAML manifest's duplicate key names both lines, a JSON one names both places (line and column) in what
    it renders; an inner object's key written twice is the one ``json.loads`` meets first (its hook runs as each
    object ends), whatever the outer object holds twice. ``explain --rendered`` marks the later line. Until
    2026-11-29 the message named the key only: in a manifest of 40 lines, which of its objects?"""
    manifest = ('{\n  "kind": "ConfigMap",\n  "metadata": {"name": "a"},\n  "data": {\n    "A": "1",\n'
                '    "B": {{ Workload | toJson }},\n    "A": "2"\n  },\n  "kind": "ConfigMap"\n}')
    with pytest.raises(TemplateRenderError) as caught:
        engine.compile(source(manifest, content_type="json")).render(variables(), SUBJECT)
    problem = caught.value.problem
    assert problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders the key 'A' twice in one object "
        "(contentType: json): at line 5, column 5 and line 7, column 5 of what it renders")
    rendered = engine.compile(source(manifest, content_type="json")).render_each(variables(), SUBJECT)
    [shown] = rendered.manifests
    assert problem_line(shown.text, shown.problem) == 7
    assert (shown.text or "").splitlines()[6] == '    "A": "2"'
    # a key written with an escape is the text it stands for: the same key, at its own column
    escaped = '{"x": 1, "\\u0078": 2}'
    with pytest.raises(TemplateRenderError) as caught:
        engine.compile(source(escaped, content_type="json")).render(variables(), SUBJECT)
    assert caught.value.problem.message.endswith(
        "renders the key 'x' twice in one object (contentType: json): at line 1, columns 2 and 10 of what it renders")


@pytest.mark.parametrize(("doc", "found"), [
    ('{"a": 1, "b": [{"a": 1}, {"c": "}", "c": 2}], "a": 2}', ("c", (1, 27), (1, 37))),
    ('[{"a": "x,\\"a\\": 1"}, {"b": 1, "b": 2}]', ("b", (1, 24), (1, 32))),
    ('{"a": {"b": -1.5e3, "b": true}}', ("b", (1, 8), (1, 21))),
    ('{"a": 1}', None),
])
def test_json_twice_finds_the_key_the_hook_names(doc: str, found: object) -> None:
    """:func:`json_twice` walks the text the hook refused and gives the key it named: strings holding ``}``, ``,``
    and escaped quotes are skipped as strings, arrays hold no keys."""
    assert duplicate_keys.json_twice(doc) == found
    if found is not None:
        with pytest.raises(duplicate_keys.KeyTwice) as caught:
            json.loads(doc, object_pairs_hook=duplicate_keys.json_object)
        assert caught.value.key == found[0]  # type: ignore[index]


def test_a_yaml_key_twice_is_marked_at_its_later_line_in_explain(engine: TemplateEngine) -> None:
    """``explain --rendered`` marks the line a problem names; for a key written twice, the later of the two (it
    marked none: "at lines 5 and 7" is not "at line N")."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  A: '1'\n  A: '2'\n"
    rendered = engine.compile(source(manifest)).render_each(variables(), SUBJECT)
    [shown] = rendered.manifests
    assert shown.problem is not None and "at lines 6 and 7 of what it renders" in shown.problem.message
    assert problem_line(shown.text, shown.problem) == 7


def test_two_manifests_of_a_template_may_write_the_same_keys(engine: TemplateEngine) -> None:
    """Each manifest is its own document in the file (joined with ``---``)."""
    manifest = "kind: ConfigMap\nmetadata:\n  name: {{ Workload }}\ndata:\n  A: x\n"
    assert engine.compile(source(manifest, manifest)).render(variables(), SUBJECT) == (
        (manifest.replace("{{ Workload }}", "app") + "---\n") + manifest.replace("{{ Workload }}", "app")).encode()


@pytest.mark.parametrize("environment", ["dev", "prod"])
def test_the_example_takes_the_quick_look(environment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every manifest the example renders passes on the regular expressions: none is read as events."""
    examples = Path(__file__).resolve().parent.parent / "examples" / "control-plane"

    def no_events(doc: str) -> None:
        raise AssertionError(f"read as events:\n{doc}")

    monkeypatch.setattr(duplicate_keys, "_exact", no_events)
    result = run_cli("validate", "--main", examples / "main", "--env", examples / "envs" / environment,
                     "--environment", environment)
    assert result.exit_code == 0, result.output


def _reference(doc: str) -> str | None:
    """go-yaml v3's rule on PyYAML's nodes (another reader than :func:`_exact`'s events): the first scalar key text
    found twice in one mapping."""
    def walk(node: Any) -> str | None:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        return str(key.value)
                    seen.add(key.value)
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            for child in node.value:
                for part in child if isinstance(child, tuple) else (child,):
                    found = walk(part)
                    if found is not None:
                        return found
        return None

    for document in yaml.compose_all(doc, Loader=yaml.CSafeLoader):
        found = walk(document)
        if found is not None:
            return found
    return None


_KEYS = st.sampled_from(["a", "b", "name", '"a"', "'b'", "a b", "x:y"])
_SCALARS = st.sampled_from(["1", "x", '"q: r"', "'s'", "|\n  a: 1\n  a: 2", ">-\n  b: 1", "{a: 1}", "{a: 1, a: 2}",
                            "[a, {b: 1}]", "http://h/?a=1&b=2", '"{\\"a\\":1}"'])


def _block(depth: int) -> st.SearchStrategy[list[tuple[str, Any]]]:
    value: st.SearchStrategy[Any] = _SCALARS
    if depth > 0:
        value = st.one_of(_SCALARS, _block(depth - 1), st.lists(_block(depth - 1), min_size=1, max_size=3))
    return st.lists(st.tuples(_KEYS, value), min_size=1, max_size=4)


def _write(mapping: list[tuple[str, Any]], indent: int, first_prefix: str = "") -> str:
    """A block mapping at ``indent``; its first line starts with ``first_prefix`` (a ``- `` item) if given."""
    out = []
    for i, (key, value) in enumerate(mapping):
        pad = first_prefix if i == 0 and first_prefix else " " * indent
        if isinstance(value, str):
            text = value.replace("\n", "\n" + " " * (indent + 2))
            out.append(f"{pad}{key}: {text}\n")
        elif value and isinstance(value[0], list):  # a list of mappings
            out.append(f"{pad}{key}:\n")
            for item in value:
                out.append(_write(item, indent + 4, " " * (indent + 2) + "- "))
        else:
            out.append(f"{pad}{key}:\n" + _write(value, indent + 2))
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(st.lists(_block(2), min_size=1, max_size=2))
def test_the_quick_look_misses_no_duplicate_the_events_find(documents: list[list[tuple[str, Any]]]) -> None:
    """Block mappings, lists of them, quoted keys, block scalars and flow mappings that hold key-like text: the
    quick look (regular expressions, a scan of the key lines) says what libyaml's events say, and those what
    PyYAML's nodes say."""
    doc = "---\n".join(_write(d, 0) for d in documents)
    try:
        reference = _reference(doc)
    except yaml.YAMLError:
        return
    found = duplicate_key(doc)
    assert found == _exact(doc), doc
    assert (found is None) == (reference is None), doc  # which one comes first: the events go depth first


def test_each_bad_configmap_that_applies_is_its_own_problem(tmp_path: Path) -> None:
    """Two ConfigMaps that apply to one assignment, each with a string holding a key Kubernetes refuses, and one of
    them with two such strings: three problems, each at its data key, each once for the assignments it fails (the
    same-problem-once rule, tests/test_problem_rule.py). Until 2026-11-29 only the first was named (the
    assignment stopped at it): fixed and pushed, the next run found the next. ``explain`` names all three too."""
    bad = "            on: true\n            ~: false\n"
    configs = ENV_FILES["configs.yaml"].replace(
        'REPLICAS: "1"\n', f'REPLICAS: "1"\n          FLAGS: |\n{bad}          MORE: |\n{bad}', 1).replace(
        "LOG_LEVEL: debug\n", f"LOG_LEVEL: debug\n          FLAGS: |\n{bad}", 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output",
                     tmp_path / "out", "--format", "json")
    assert result.exit_code == 1, result.output
    problems = json.loads(result.output)["problems"]
    said = "a key that is null (null, ~ or nothing before ':'): Kubernetes refuses it (line 2, column 1 of the value)"
    assert [(p["location"]["line"], p["message"]) for p in problems] == [
        (10, f"cloud-eu/app-dev: ConfigMap env-wide, data key FLAGS (a string holding YAML): {said} (and the same "
             "in 1 more assignment: edge-line1/app-dev)"),
        (13, f"cloud-eu/app-dev: ConfigMap env-wide, data key MORE (a string holding YAML): {said} (and the same "
             "in 1 more assignment: edge-line1/app-dev)"),
        (26, f"edge-line1/app-dev: ConfigMap edge, data key FLAGS (a string holding YAML): {said}"),
    ]
    result = run_cli("explain", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--assignment",
                     "edge-line1/app-dev", "--format", "json")
    assert result.exit_code == 1, result.output
    assert [p["location"]["line"] for p in json.loads(result.output)["problems"]] == [10, 13, 26]


def test_a_configmap_string_with_a_refused_key_fails_its_assignments_not_the_render(tmp_path: Path) -> None:
    """A ConfigMap value holding YAML with a key Kubernetes refuses (composition's ``_key_refused``) fails the
    assignments the ConfigMap applies to, as a template error does: one problem naming them, and with
    ``--keep-last-good`` the other assignments render. It stopped the whole render at the first such ConfigMap,
    ``--keep-last-good`` or not (2026-11-29)."""
    configs = ENV_FILES["configs.yaml"].replace(
        "LOG_LEVEL: debug\n", "LOG_LEVEL: debug\n          FLAGS: |\n            on: true\n            ~: false\n", 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    out = tmp_path / "out"
    args = ("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    result = run_cli(*args)
    assert result.exit_code == 1, result.output
    assert ("configs.yaml:20:3: edge-line1/app-dev: ConfigMap edge, data key FLAGS (a string holding YAML): a key "
            "that is null (null, ~ or nothing before ':'): Kubernetes refuses it (line 2, column 1 of the value)"
            ) in result.output
    assert "Traceback" not in result.output and not out.exists()
    result = run_cli(*args, "--keep-last-good")
    assert result.exit_code == 1, result.output
    assert "1 held back" in result.output
    written = tree_bytes(out)
    assert "cloud-eu/app-dev/platform-config.yaml" in written
    assert not any(path.startswith("edge-line1/") for path in written)
