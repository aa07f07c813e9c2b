"""The mistakes a platform engineer really makes in a ``Template`` (a typo of a key, Helm's habits, a null where a map
was meant) and what fleetflow tells them: which value lacked the key, the nearest name there is, what to fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetflow.errors import InputError, Location, Problem
from fleetflow.render.pipeline import same_problem_once
from fleetflow.render.templates import TemplateEngine, TemplateRenderError, TemplateSource
from tests.helpers import run_cli

SUBJECT = "assignment eu-west/app-dev"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "control-plane"


def source(*manifests: str, content_type: str = "yaml") -> TemplateSource:
    return TemplateSource(
        name="tpl", type="config", content_type=content_type, manifests=tuple(manifests),
        location=Location("templates/tpl.yaml", 1),
        manifest_locations=tuple(Location("templates/tpl.yaml", 10 + 5 * i) for i in range(len(manifests))),
    )


def variables(**config: Any) -> dict[str, Any]:
    return {
        "DeploymentTargetName": "app-dev",
        "Namespace": "dev-team-a-app-dev",
        "Environment": "dev",
        "Workspace": "team-a",
        "Workload": "app",
        "ClusterType": "eu-west",
        "Labels": {"region": "eu", "workload": "app"},
        "Manifests": {"repo": "https://example.com/app.git", "branch": "main", "path": "deploy/dev"},
        "ConfigData": {"replicas": 3, "db": {"host": "db", "port": 5432}, "ports": [{"name": "http"}], **config},
    }


@pytest.fixture(scope="module")
def engine() -> TemplateEngine:
    return TemplateEngine()


def failure(engine: TemplateEngine, text: str, **config: Any) -> Problem:
    with pytest.raises(TemplateRenderError) as caught:
        engine.compile(source(text)).render(variables(**config), SUBJECT)
    return caught.value.problem


def said(problem: Problem) -> str:
    return problem.message.removeprefix(f"template 'tpl', manifest 1, rendering {SUBJECT}: ")


VARIABLES = ("ClusterType, ConfigData, DeploymentTargetName, Environment, Labels, Manifests, Namespace, Workload, "
             "Workspace")


def test_a_typo_of_a_key_names_the_value_that_lacks_it_and_the_nearest_key(engine: TemplateEngine) -> None:
    """Jinja says "'dict object' has no attribute 'hots'": which of the maps, and what it has, the engineer had to
    find out (until 2026-11-29). Now the value is named as the template line writes it, and the hint names the
    nearest key (difflib) and the keys the value has for this assignment."""
    problem = failure(engine, "kind: A\nhost: {{ ConfigData.db.hots }}\n")
    assert said(problem) == "missing key: ConfigData.db has no key 'hots'"
    assert problem.hint == f"did you mean 'host'? for {SUBJECT}, ConfigData.db has: host, port"
    assert problem.location == Location("templates/tpl.yaml", 11)
    # written with brackets, a key that differs only by case, a key a template looked up past the one missing
    bracketed = said(failure(engine, '{{ ConfigData["db"]["hots"] }}'))
    assert bracketed == """missing key: ConfigData["db"] has no key 'hots'"""
    problem = failure(engine, "{{ ConfigData.Replicas }}")
    assert said(problem) == "missing key: ConfigData has no key 'Replicas'"
    assert (problem.hint or "").startswith("did you mean 'replicas'? ")
    assert said(failure(engine, "{{ ConfigData.db.hots.name }}")) == "missing key: ConfigData.db has no key 'hots'"


def test_a_key_no_name_is_near_tells_how_to_give_a_default(engine: TemplateEngine) -> None:
    problem = failure(engine, "{{ ConfigData.timeout }}")
    assert said(problem) == "missing key: ConfigData has no key 'timeout'"
    assert problem.hint == (f"for {SUBJECT}, ConfigData has: db, ports, replicas; a key that some assignments do "
                            "not set needs | default(...)")
    # a default at the end of a chain covers its last key only: the map before it needs its own
    problem = failure(engine, "{{ ConfigData.owner.team | default('platform') }}")
    assert said(problem) == "missing key: ConfigData has no key 'owner'"
    assert (problem.hint or "").endswith(
        "; a default covers only the key right before it: a map that some assignments do not set needs its own, "
        "(ConfigData.owner | default({})).KEY | default(...)")
    many = {f"KEY_{n:02}": n for n in range(30)}
    hint = failure(engine, "{{ ConfigData.other }}", **many).hint or ""
    assert hint.endswith(", KEY_19, ... (33 in all); a key that some assignments do not set needs | default(...)")


def test_a_typo_of_a_variable_or_a_filter_gets_the_nearest_name(engine: TemplateEngine) -> None:
    problem = failure(engine, "{{ Namspace }}")
    assert said(problem) == "undefined variable: 'Namspace' is undefined"
    assert problem.hint == f"did you mean 'Namespace'? variables: {VARIABLES}"
    assert (failure(engine, "{{ toyaml(ConfigData) }}").hint or "").startswith("did you mean 'toYaml'? ")
    assert failure(engine, "{{ Nothing }}").hint == f"variables: {VARIABLES}"  # nothing near: the list


def test_helm_habits_are_named(engine: TemplateEngine) -> None:
    """``{{ .Values.x }}`` is a syntax error with its own hint (test_rendering); without the dot, Helm's names are
    undefined variables whose hint says what they are here."""
    problem = failure(engine, "replicas: {{ Values.replicaCount }}")
    assert said(problem) == "undefined variable: 'Values' is undefined"
    assert (problem.hint or "").startswith("Helm's .Values is ConfigData here: {{ ConfigData.replicas }}; variables: ")
    assert (failure(engine, "namespace: {{ Release.Namespace }}").hint or "").startswith(
        "Helm's .Release.Namespace is Namespace here: {{ Namespace }}; ")


def test_a_null_a_string_or_a_list_where_a_map_was_meant(engine: TemplateEngine) -> None:
    """``db:`` with nothing after it is null: the template that reads ``db.host`` now says so, not "'None' has no
    attribute 'host'"."""
    problem = failure(engine, "host: {{ ConfigData.db.host }}", db=None)
    assert said(problem) == "missing key: ConfigData.db is null, it has no key 'host'"
    assert problem.hint == ("a value written with nothing after its ':' is null: give it its map, or test it with "
                            "{% if %} first")
    assert said(failure(engine, "{{ Namespace.name }}")) == "missing key: Namespace is a string, it has no key 'name'"
    problem = failure(engine, "{{ ConfigData.ports.name }}")
    assert said(problem) == "missing key: ConfigData.ports is a list, it has no key 'name'"
    assert "{% for item in ... %}" in (problem.hint or "")
    assert said(failure(engine, "{{ ConfigData.replicas.min }}")) == (
        "missing key: ConfigData.replicas is a number, it has no key 'min'")


def test_a_loop_name_or_a_map_the_template_made(engine: TemplateEngine) -> None:
    problem = failure(engine, "{% for p in ConfigData.ports %}\n- {{ p.nmae }}\n{% endfor %}")
    assert said(problem) == "missing key: p has no key 'nmae'"
    assert problem.hint == f"did you mean 'name'? for {SUBJECT}, p has: name"
    problem = failure(engine, "{% set m = {'a': 1} %}{{ [m][0].b }}")
    assert said(problem) == "missing key: a map has no key 'b'"
    assert (problem.hint or "").startswith(f"for {SUBJECT}, that map has: a;")


def test_what_a_missing_key_does_not_touch(engine: TemplateEngine) -> None:
    """The look-ups that may miss still do (``default``, ``is defined``), and the sandbox's refusal stays its own."""
    out = engine.compile(source(
        "{{ ConfigData.timeout | default(30) }} {{ ConfigData.db.user is defined }}")).render(variables(), SUBJECT)
    assert out == b"30 false\n"
    assert said(failure(engine, "{{ ConfigData.__class__ }}")).startswith("blocked by the template sandbox: ")


def test_one_mistake_in_many_assignments_is_one_problem_though_their_keys_differ() -> None:
    """The keys a map has differ between assignments (each composes its own ConfigData): the hint names those of
    the first assignment the problem names, and the same mistake is still one problem (it was five in the example
    with the keys in the hint, before ``same_problem_once`` left them out of what makes two problems the same)."""
    def typo(aid: str, keys: str) -> list[Problem]:
        return [Problem(f"template 't', manifest 1, rendering assignment {aid}: missing key: ConfigData has no key "
                        "'LOG_LEVL'", Location("t.yaml", 3),
                        f"did you mean 'LOG_LEVEL'? for assignment {aid}, ConfigData has: {keys}")]

    [problem] = same_problem_once({"ct/a": typo("ct/a", "LOG_LEVEL, X"), "ct/b": typo("ct/b", "LOG_LEVEL, Y")})
    assert problem.message.endswith("(and the same in 1 more assignment: ct/b)")
    assert problem.hint == "did you mean 'LOG_LEVEL'? for assignment ct/a, ConfigData has: LOG_LEVEL, X"
    other = [Problem("m", Location("t.yaml", 3), "did you mean 'LOG'? for assignment ct/b, ConfigData has: LOG")]
    assert len(same_problem_once({"ct/a": typo("ct/a", "LOG_LEVEL"), "ct/b": other})) == 2


def test_a_typo_in_the_example_is_one_problem_with_the_nearest_key(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "cp")
    template = tmp_path / "cp" / "main" / "templates" / "configmap-config.yaml"
    text = template.read_text()
    template.write_text(text.replace("namespace: {{ Namespace }}",
                                     "namespace: {{ Namespace }}\n        level: {{ ConfigData.LOG_LEVL }}", 1))
    result = run_cli("validate", "--main", tmp_path / "cp" / "main", "--env", tmp_path / "cp" / "envs" / "dev",
                     "--format", "json")
    assert result.exit_code == 1
    [problem] = json.loads(result.output)["problems"]
    assert problem["message"].startswith(
        "template 'configmap-config', manifest 1, rendering assignment aks-westeurope/observability-dev: missing key: "
        "ConfigData has no key 'LOG_LEVL' (and the same in 4 more assignments: "), problem["message"]
    assert problem["hint"].startswith(
        "did you mean 'LOG_LEVEL'? for assignment aks-westeurope/observability-dev, ConfigData has: "), problem["hint"]
    assert problem["location"]["line"] == 23


# -- what {{ }} writes -----------------------------------------------------------------------------------


def test_null_renders_as_nothing_not_as_the_text_none(engine: TemplateEngine) -> None:
    """``image:`` with nothing after it in a ConfigMap is null; ``image: {{ ConfigData.image }}`` rendered
    ``image: None`` until 2026-11-29, the text "None" to go-yaml (go-yaml v3 ``resolve.go``, ``resolveMapList``:
    null is "", "~", "null", "Null" or "NULL"; v2 the same), so a wrong value reached every cluster with no error.
    Now null writes nothing (YAML reads ``image:`` as null again), as Helm writes a nil value and ``stringify``
    does."""
    out = engine.compile(source("image: {{ ConfigData.image }}\nname: app-{{ ConfigData.image }}x")).render(
        variables(image=None), SUBJECT)
    assert out == b"image: \nname: app-x\n"


def test_default_takes_a_null_as_a_value_not_given(engine: TemplateEngine) -> None:
    """Helm's ``default`` (sprig) replaces an empty value, nil included; Jinja's only an undefined one, so
    ``{{ ConfigData.image | default("nginx") }}`` rendered ``None`` for ``image:`` with nothing after it. Now null
    is a value not given, to ``default`` and ``d``; false, 0 and "" stay values unless ``boolean`` is true."""
    render = engine.compile(source(
        "{{ ConfigData.image | default('nginx') }} {{ ConfigData.nope | d('x') }} {{ ConfigData.off | default(1) }} "
        "{{ ConfigData.off | default(1, true) }}")).render
    assert render(variables(image=None, off=0), SUBJECT) == b"nginx x 0 1\n"
    assert render(variables(image="app:1", off=False), SUBJECT) == b"app:1 x false 1\n"


def test_booleans_maps_and_lists_render_as_helm_and_json_write_them(engine: TemplateEngine) -> None:
    """Python wrote ``True`` and ``{'a': 'b'}``: go-yaml reads ``True`` as a boolean (v3 ``resolve.go``: "true",
    "True", "TRUE"), but an env file or a script got ``DEBUG=True`` where Kalypso's Go template wrote ``true``, and
    a Python repr is not YAML (``'a\\nb'`` is the four characters to YAML). Now true/false, and a map or a list as
    compact JSON, which YAML reads as the same map or list."""
    render = engine.compile(source("DEBUG={{ ConfigData.debug }} {{ ConfigData.db }} {{ ConfigData.ports }}",
                                   content_type="env")).render
    assert render(variables(debug=True), SUBJECT) == (
        b'DEBUG=true {"host":"db","port":5432} [{"name":"http"}]\n')
    text = engine.compile(source("labels: {{ Labels }}\nlines: {{ ConfigData.lines }}\n")).render(
        variables(lines=["a\nb", "it's"]), SUBJECT)
    assert text is not None
    assert yaml.safe_load(text) == {"labels": {"region": "eu", "workload": "app"}, "lines": ["a\nb", "it's"]}


# -- Python's errors in a loop, Go's habits --------------------------------------------------------------


def test_a_loop_over_a_map_without_items_says_how_to_loop(engine: TemplateEngine) -> None:
    """``{% for key, value in Labels %}`` unpacks each key's letters ("too many values to unpack (expected 2)"):
    the message said nothing about the loop until 2026-11-29."""
    problem = failure(engine, "{% for k, v in Labels %}\n{{ k }}={{ v }}\n{% endfor %}")
    assert said(problem) == "ValueError: too many values to unpack (expected 2)"
    assert (problem.hint or "").startswith(
        "a loop over a map gives its keys: loop over its keys and values with {% for key, value in "
        "ConfigData.items() %}")
    problem = failure(engine, "{% for k, v in Labels.items %}{{ k }}{% endfor %}")
    assert problem.hint == "call the method: ConfigData.items(), not ConfigData.items"


def test_go_template_habits_are_named(engine: TemplateEngine) -> None:
    """``{{ quote .Values.x }}`` parses in Jinja (``quote.Values``, a look-up in the function) and ``{{ include
    "x" . }}`` does not: both now say that templates are Jinja2, not Go templates."""
    problem = failure(engine, "{{ quote .ConfigData.x }}")
    assert said(problem) == "missing key: quote is a function, it has no key 'ConfigData'"
    assert (problem.hint or "").startswith("templates are Jinja2, not Go templates: give a function its value with "
                                           "a pipe, {{ ConfigData.x | quote }}")
    for text in ('{{ include "labels" . }}', "{{ toYaml .Values.x | nindent 4 }}"):
        with pytest.raises(InputError) as caught:
            engine.compile(source(text))
        assert (caught.value.problems()[0].hint or "").startswith("templates are Jinja2, not Go templates"), text


def test_a_map_from_toyaml_after_spaces_without_nindent_is_an_error(engine: TemplateEngine) -> None:
    """``data:\\n  {{ ConfigData.db | toYaml }}`` rendered ``data:\\n  host: db\\nport: 5432``: YAML, so no check
    refused it, but ``port`` is read one level up, out of ``data`` (a wrong ConfigMap on every cluster, and the
    API server ignores or refuses the stray key). A map or a list that ``toYaml`` writes on several lines after
    spaces at the start of a line is now an error at that line; one line, a text, or ``nindent`` are fine."""
    problem = failure(engine, "kind: ConfigMap\ndata:\n  {{ ConfigData.db | toYaml }}\n")
    assert said(problem) == (
        "toYaml writes a map or a list on several lines after 2 spaces on its line: only its first line follows "
        "them, the others start at the beginning of theirs, and YAML reads what they hold one level up (a wrong "
        "file, not an error, to a GitOps agent)")
    assert problem.hint == ("indent every line after the first: {{ ... | toYaml | indent(2, first=False) }}, or "
                            "write it after its key: key:{{ ... | toYaml | nindent(2) }}")
    assert problem.location == Location("templates/tpl.yaml", 12)
    assert said(failure(engine, "spec:\n    {{ toYaml(ConfigData.ports + ConfigData.ports) }}")).startswith(
        "toYaml writes a map or a list on several lines after 4 spaces")

    def render(text: str, **config: Any) -> bytes | None:
        return engine.compile(source(text)).render(variables(**config), SUBJECT)

    assert render("data:\n  {{ ConfigData.one | toYaml }}", one={"a": 1}) == b"data:\n  a: 1\n"
    assert render("data:{{ ConfigData.db | toYaml | nindent(2) }}") == b"data:\n  host: db\n  port: 5432\n"
    assert render("data:\n  {{ ConfigData.db | toYaml | indent(2, first=False) }}") == (
        b"data:\n  host: db\n  port: 5432\n")
    assert render("{{ ConfigData.db | toYaml }}") == b"host: db\nport: 5432\n"  # at the start of its line
    env = engine.compile(source("  {{ ConfigData.db | toYaml }}", content_type="env"))
    assert env.render(variables(), SUBJECT) == b"  host: db\nport: 5432\n"  # not YAML: not its business
