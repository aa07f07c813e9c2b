"""Template rendering: joining, filters, error locations, the sandbox, Go-template conversion."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from fleetflow.errors import InputError, Location
from fleetflow.render.templates import (
    TemplateEngine,
    TemplateRenderError,
    TemplateSource,
    convert_go_template,
)

SUBJECT = "assignment eu-west/app-dev"
_SAFE = YAML(typ="safe")


def source(
    *manifests: str, content_type: str = "yaml", name: str = "tpl", first_line: int = 10
) -> TemplateSource:
    """A template whose manifests start at ``first_line``, 5 lines apart, in templates/tpl.yaml."""
    return TemplateSource(
        name=name,
        type="config",
        content_type=content_type,
        manifests=tuple(manifests),
        location=Location("templates/tpl.yaml", 1),
        manifest_locations=tuple(
            Location("templates/tpl.yaml", first_line + 5 * i) for i in range(len(manifests))
        ),
    )


def variables(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "DeploymentTargetName": "app-dev",
        "Namespace": "dev-team-a-app-dev",
        "Environment": "dev",
        "Workspace": "team-a",
        "Workload": "app",
        "ClusterType": "eu-west",
        "Labels": {"region": "eu", "workload": "app"},
        "Manifests": {"repo": "https://example.com/app.git", "branch": "main", "path": "deploy/dev"},
        "ConfigData": {"REPLICAS": 3, "DB": {"host": "db", "port": 5432}, "DEBUG": True, "NAME": "app"},
    }
    base.update(overrides)
    return base


@pytest.fixture(scope="module")
def engine() -> TemplateEngine:
    return TemplateEngine()


def render(engine: TemplateEngine, *manifests: str, content_type: str = "yaml", **vars_: Any) -> str | None:
    result = engine.compile(source(*manifests, content_type=content_type)).render(variables(**vars_), SUBJECT)
    return None if result is None else result.decode("utf-8")


# -- joining -------------------------------------------------------------------------------------------


def test_yaml_documents_are_joined_with_separators(engine: TemplateEngine) -> None:
    out = render(engine, "kind: A\nname: {{ Namespace }}\n", "kind: B\nns: {{ Namespace }}")
    assert out == "kind: A\nname: dev-team-a-app-dev\n---\nkind: B\nns: dev-team-a-app-dev\n"
    assert list(_SAFE.load_all(out)) == [
        {"kind": "A", "name": "dev-team-a-app-dev"},
        {"kind": "B", "ns": "dev-team-a-app-dev"},
    ]


def test_empty_renders_are_dropped(engine: TemplateEngine) -> None:
    out = render(
        engine,
        "{% if Environment == 'prod' %}kind: ProdOnly\n{% endif %}",
        "kind: Always\n",
        "  \n\n",
        content_type="yml",
    )
    assert out == "kind: Always\n"
    assert render(engine, "{% if false %}x{% endif %}", "\n\n   \n") is None
    assert render(engine) is None


def test_blank_lines_at_the_ends_are_trimmed_but_content_is_kept(engine: TemplateEngine) -> None:
    out = render(engine, "\n\n{% if true %}\n  indented: {{ Workload }}\n  last: x  \n{% endif %}\n\n")
    assert out == "  indented: app\n  last: x  \n"


@pytest.mark.parametrize("content_type", ["sh", "env", "properties"])
def test_other_content_types_join_with_a_newline(engine: TemplateEngine, content_type: str) -> None:
    out = render(engine, "A={{ Workload }}\n\n", "B={{ Environment }}", content_type=content_type)
    assert out == "A=app\nB=dev\n"


def test_json_content(engine: TemplateEngine) -> None:
    out = render(
        engine,
        '{"namespace": {{ Namespace | toJson }}, "config": {{ toJson(ConfigData) }}}',
        content_type="json",
    )
    assert out is not None
    assert json.loads(out) == {"namespace": "dev-team-a-app-dev", "config": variables()["ConfigData"]}


def test_json_that_does_not_parse_fails_at_its_manifest(engine: TemplateEngine) -> None:
    """The same for ``contentType: json``: a value written in without ``toJson`` is not JSON."""
    compiled = engine.compile(source('{\n  "workload": {{ Workload }}\n}', content_type="json"))
    with pytest.raises(TemplateRenderError) as caught:
        compiled.render(variables(), SUBJECT)
    problem = caught.value.problem
    assert problem.location == Location("templates/tpl.yaml", 10)
    assert problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders text that is not JSON (contentType: json): "
        "Expecting value at line 2 of what it renders"
    )


def test_yaml_that_does_not_parse_fails_at_its_manifest(engine: TemplateEngine) -> None:
    """``contentType: yaml``: a value written into a flow sequence or a plain scalar can break the file's structure,
    and Flux's kustomize-controller and Argo CD then refuse it on every cluster. Both read YAML with go-yaml
    (kubernetes' fork: vendor/sigs.k8s.io/yaml/goyaml.v3/README.md in kubernetes/kubernetes, "based on a pure Go
    port of the well-known libyaml C library"), so libyaml's parser is the check. Until 2026-11-29 such a file
    was written and pushed: the mistake showed when the agent applied it. The message names libyaml's lines of the
    rendered text, not the text (it holds each assignment's values: the same mistake in every assignment is one
    problem)."""
    compiled = engine.compile(source("kind: ConfigMap", "metadata:\n  labels: [{{ Workload }}\n  name: x",
                                     first_line=20))
    with pytest.raises(TemplateRenderError) as caught:
        compiled.render(variables(), SUBJECT)
    problem = caught.value.problem
    assert problem.location == Location("templates/tpl.yaml", 25)  # the second manifest's first line
    assert problem.message == (
        f"template 'tpl', manifest 2, rendering {SUBJECT}: renders text that is not YAML (contentType: yaml): "
        "did not find expected ',' or ']' at line 3 of what it renders (while parsing a flow sequence at line 2)")
    assert problem.hint is not None and "toJson" in problem.hint
    colon = engine.compile(source("data:\n  greeting: {{ ConfigData.NAME }}", content_type="yml"))
    with pytest.raises(TemplateRenderError) as caught:
        colon.render(variables(ConfigData={"NAME": "hello: world"}), SUBJECT)
    assert caught.value.problem.message.endswith(
        "not YAML (contentType: yml): mapping values are not allowed in this context at line 2 of what it renders")
    # quoted, the same value is YAML; several documents, anchors and block scalars are YAML too
    quoted = engine.compile(source("data:\n  greeting: {{ ConfigData.NAME | toJson }}",
                                   "a: &x 1\nb: *x\nc: |\n  text\n---\n- item"))
    assert quoted.render(variables(ConfigData={"NAME": "hello: world"}), SUBJECT) == (
        b'data:\n  greeting: "hello: world"\n---\na: &x 1\nb: *x\nc: |\n  text\n---\n- item\n')
    # other content types are not YAML's business
    shell = engine.compile(source("echo [{{ Workload }}", content_type="sh"))
    assert shell.render(variables(), SUBJECT) == b"echo [app\n"


def test_an_alias_without_its_anchor_is_not_yaml_the_agents_read(engine: TemplateEngine) -> None:
    """libyaml's parser (``CParser.raw_parse``, the syntax check) leaves aliases to whoever builds the nodes, so a
    value that starts with ``*`` rendered unquoted (a password ``*hunter2``) passed the check and was pushed. go-yaml
    builds the nodes as it reads and refuses it: "unknown anchor '%s' referenced" (go-yaml v3.0.1 ``decode.go``,
    ``parser.alias``; v2 ``decode.go`` the same, anchors kept per document in ``parser.document``), and an alias
    inside the node its anchor names is "anchor '%s' value contains itself" (``decoder.alias``, v2 and v3). Flux
    reads each document of a file with its own go-yaml v3 decoder (kustomize kyaml ``kio/byteio_reader.go``,
    ``ByteReader.Read``: ``splitDocuments``, then ``yaml.NewDecoder`` per document), Argo CD each document with
    ``sigs.k8s.io/yaml.Unmarshal`` (gitops-engine ``pkg/utils/kube/kube.go``, ``SplitYAML``): an anchor holds in
    its own document only. The value is not named (it is the assignment's: the same mistake everywhere is one
    problem)."""
    password = engine.compile(source("kind: Secret\nstringData:\n  password: {{ ConfigData.PASSWORD }}",
                                     first_line=20))
    with pytest.raises(TemplateRenderError) as caught:
        password.render(variables(ConfigData={"PASSWORD": "*hunter2"}), SUBJECT)
    problem = caught.value.problem
    assert problem.location == Location("templates/tpl.yaml", 20)
    assert problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders text that is not YAML (contentType: yaml): found "
        "an alias to an undefined anchor at line 3 of what it renders")
    assert problem.hint is not None and "an alias needs its anchor (&name) before it" in problem.hint
    assert "hunter2" not in problem.message + problem.hint
    assert caught.value.in_text
    # quoted, it is a string
    quoted = engine.compile(source("password: {{ ConfigData.PASSWORD | toJson }}"))
    assert quoted.render(variables(ConfigData={"PASSWORD": "*hunter2"}), SUBJECT) == b'password: "*hunter2"\n'

    def mistake(text: str) -> str | None:
        try:
            engine.compile(source(text, first_line=20)).render(variables(), SUBJECT)
        except TemplateRenderError as exc:
            return exc.problem.message.split("(contentType: yaml): ")[1]
        return None

    assert mistake("a: &x 1\nb: *x\nc: [*x, {d: *x}]") is None  # defined before: fine, in flow too
    assert mistake("a: &x 1\n---\nb: *x") == "found an alias to an undefined anchor at line 3 of what it renders"
    assert mistake("b: *x\na: &x 1") == "found an alias to an undefined anchor at line 1 of what it renders"
    assert mistake("a: &x\n  - 1\n  - *x") == "found an alias to the node it is in at line 3 of what it renders"
    assert mistake("a: &x [1]\nb: &x {c: *x}") == "found an alias to the node it is in at line 2 of what it renders"
    assert mistake('a: &x [1]\nb: "*x"\nc: *x') is None  # a * in quotes is no alias
    # wherever libyaml reads an alias: after a flow indicator, a JSON-like key's ':', a tab, a '- ', a '? '
    for text in ('{"a":*x}', "[a,*x]", "{a: 1,*x: 2}", "a:\t*x", "- *x", "? *x\n: 1", "a: [b, *x-y_1]"):
        assert mistake(text) == "found an alias to an undefined anchor at line 1 of what it renders", text
    assert mistake('a: "*.example.com"\nb: "*/5 * * * *"\nc: x*y\nd: |\n  *not-an-alias') is None
    # a text with a * is still told by its syntax: the first mistake in it, as go-yaml reads it
    assert mistake("a: b: c\nd: *x") == "mapping values are not allowed in this context at line 1 of what it renders"


def test_each_manifest_renders_on_its_own_for_explain(engine: TemplateEngine) -> None:
    """``render_each`` (``fleetflow explain --rendered``): every manifest with its text or its problem; one that
    fails does not hide the others, a text that fails its YAML check is kept with its problem (the user looks for
    its "line N of what it renders"), and the text is what the check counted lines in (blank lines at both ends
    dropped)."""
    compiled = engine.compile(source("\n\nkind: A\nname: {{ Workload }}\n\n", "labels: [{{ Workload }}\nx: 1",
                                     "{{ nope }}", "{% if false %}x{% endif %}", "kind: B"))
    rendered = compiled.render_each(variables(), SUBJECT)
    shown = rendered.manifests
    assert rendered.file_problem is None
    assert [(m.index, m.location.line, m.text) for m in shown] == [
        (0, 10, "kind: A\nname: app\n"), (1, 15, "labels: [app\nx: 1\n"), (2, 20, None), (3, 25, None),
        (4, 30, "kind: B\n")]
    assert [m.problem is None for m in shown] == [True, False, False, True, True]
    assert shown[1].problem is not None and shown[1].problem.message.endswith(
        "did not find expected ',' or ']' at line 2 of what it renders (while parsing a flow sequence at line 1)")
    assert shown[2].problem is not None and "undefined variable: 'nope' is undefined" in shown[2].problem.message
    two_json = engine.compile(source('{"a": 1}', '{"b": {{ Workload }}}', content_type="json"))
    rendered = two_json.render_each(variables(), SUBJECT)
    assert [m.text for m in rendered.manifests] == ['{"a": 1}\n', '{"b": app}\n']
    assert rendered.manifests[1].problem is not None and "not JSON" in rendered.manifests[1].problem.message
    whole = rendered.file_problem
    assert whole is not None and "its 2 manifests render 2 JSON documents into one file" in whole.message


def test_a_json_file_of_several_documents_or_a_nan_is_not_json(engine: TemplateEngine) -> None:
    """Each manifest parsing is not enough: two manifests that each render a JSON object make a file of two
    documents, which no JSON parser reads; and Python's ``json`` reads ``NaN`` (what ``toJson`` of a float NaN
    writes), which JSON does not allow (RFC 8259, section 6: "Numeric values that cannot be represented in the
    grammar below (such as Infinity and NaN) are not permitted"). Both passed the check until 2026-11-28."""
    two = engine.compile(source('{"a": 1}', '{"b": 2}', content_type="json"))
    with pytest.raises(TemplateRenderError) as caught:
        two.render(variables(), SUBJECT)
    assert caught.value.problem.message == (
        f"template 'tpl', rendering {SUBJECT}: its 2 manifests render 2 JSON documents into one file, which is not "
        "JSON (contentType: json)")
    nan = engine.compile(source('{"ratio": {{ ConfigData.RATIO | toJson }}}', content_type="json"))
    with pytest.raises(TemplateRenderError) as caught:
        nan.render(variables(ConfigData={"RATIO": float("nan")}), SUBJECT)
    assert caught.value.problem.message.endswith("renders text that is not JSON (contentType: json): NaN is not a "
                                                 "JSON value")
    assert caught.value.problem.location == Location("templates/tpl.yaml", 10)
    one = engine.compile(source('{"a": 1}', "{% if false %}{}{% endif %}", content_type="json"))
    assert one.render(variables(), SUBJECT) == b'{"a": 1}\n'  # a manifest that renders nothing adds nothing


def test_the_time_budget_is_given_back_whatever_ends_a_render(engine: TemplateEngine) -> None:
    """A render that fails after its manifests rendered (the JSON check) left the budget's clock running until
    2026-11-28, and the alarm then raised in whatever ran 10 s later, outside any render (a bug hunt found it).
    The clock stops however a render ends, and the budget gives ``SIGALRM`` and its timer back when it ends."""
    import signal

    from fleetflow.render import templates

    broken = engine.compile(source('{"workload": {{ Workload }}}', content_type="json"))
    with templates.time_budget():
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL)[1] > 0
        with pytest.raises(TemplateRenderError):
            broken.render(variables(), SUBJECT)
        assert templates._Watch.since is None
        assert engine.compile(source("a: 1")).render(variables(), SUBJECT) == b"a: 1\n"
        assert templates._Watch.since is None
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_shell_content(engine: TemplateEngine) -> None:
    template = (
        "#!/bin/sh\nset -eu\n"
        "{% for key, value in ConfigData | stringify | dictsort %}"
        "export {{ key }}={{ value | quote }}\n{% endfor %}"
    )
    out = render(engine, "\n" + template, content_type="sh")
    assert out == (
        "#!/bin/sh\nset -eu\n"
        'export DB="{\\"host\\":\\"db\\",\\"port\\":5432}"\n'
        'export DEBUG="true"\nexport NAME="app"\nexport REPLICAS="3"\n'
    )


def test_render_is_deterministic(engine: TemplateEngine) -> None:
    compiled = engine.compile(source("data:\n{{ toYaml(ConfigData) | indent(2) }}\n"))
    a = compiled.render(variables(ConfigData={"b": 1, "a": {"q": 2, "p": 1}}), SUBJECT)
    b = compiled.render(variables(ConfigData={"a": {"p": 1, "q": 2}, "b": 1}), SUBJECT)
    assert a == b == b"data:\n  a:\n    p: 1\n    q: 2\n  b: 1\n"
    assert compiled.render(variables(ConfigData={"a": {"p": 1, "q": 2}, "b": 1}), SUBJECT) == a


@pytest.mark.parametrize(
    "mutation",
    [
        "ConfigData.update({'x': 1})",
        "ConfigData.pop('NAME')",
        "Labels.clear()",
        "Manifests.setdefault('x', 1)",
    ],
)
def test_variables_cannot_be_modified(engine: TemplateEngine, mutation: str) -> None:
    """Variables are shared between renders (never copied), so templates may not mutate them."""
    vars_ = variables()
    before = json.dumps(vars_, sort_keys=True)
    compiled = engine.compile(source("{% set _ = " + mutation + " %}{{ ConfigData }}"))
    with pytest.raises(TemplateRenderError, match="sandbox"):
        compiled.render(vars_, SUBJECT)
    assert json.dumps(vars_, sort_keys=True) == before


# -- filters -------------------------------------------------------------------------------------------


def test_kalypso_config_map(engine: TemplateEngine) -> None:
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform-config\n  namespace: {{ Namespace }}\n"
        "data:\n{{ toYaml(stringify(ConfigData)) | indent(2) }}\n"
    )
    out = render(engine, template)
    assert out is not None
    assert _SAFE.load(out)["data"] == {
        "REPLICAS": "3",
        "DB": '{"host":"db","port":5432}',
        "DEBUG": "true",
        "NAME": "app",
    }


def test_to_yaml(engine: TemplateEngine) -> None:
    assert render(engine, "{{ ConfigData.DB | toYaml }}|") == "host: db\nport: 5432|\n"
    assert render(engine, "{{ toYaml(Labels) }}|") == "region: eu\nworkload: app|\n"
    assert render(engine, "v: {{ 'yes' | toYaml }}") == 'v: "yes"\n'


def test_to_json(engine: TemplateEngine) -> None:
    assert (
        render(engine, "{{ Labels | toJson }}", content_type="json") == '{"region":"eu","workload":"app"}\n'
    )
    assert render(engine, "{{ ConfigData.DB | toJson(indent=2) }}", content_type="json") == (
        '{\n  "host": "db",\n  "port": 5432\n}\n'
    )
    assert render(engine, "{{ toJson('é') }}", content_type="json") == '"é"\n'


def test_from_yaml_and_from_json(engine: TemplateEngine) -> None:
    out = render(
        engine,
        "{{ (Manifests.extra | fromYaml).a.b }} {{ (Manifests.j | fromJson)[1] }}",
        Manifests={"extra": "a:\n  b: deep\n", "j": "[1, 2]"},
    )
    assert out == "deep 2\n"


def test_indent_uses_sprig_semantics(engine: TemplateEngine) -> None:
    assert render(engine, "x:\n{{ 'a: 1\nb:\n\n  c: 2' | indent(2) }}") == "x:\n  a: 1\n  b:\n\n    c: 2\n"
    assert render(engine, "{{ 'a\nb' | indent }}|") == "    a\n    b|\n"
    assert render(engine, "x: {{ 'a\nb' | indent(2, first=False) }}") == "x: a\n  b\n"
    assert render(engine, "{{ indent('a\n\nb', 1, blank=True) }}|") == " a\n \n b|\n"


def test_nindent(engine: TemplateEngine) -> None:
    assert (
        render(engine, "data:{{ toYaml(Labels) | nindent(2) }}") == "data:\n  region: eu\n  workload: app\n"
    )


def test_hash(engine: TemplateEngine) -> None:
    digest = hashlib.sha256(b"app").hexdigest()
    assert render(engine, "{{ Workload | hash }}") == digest + "\n"
    assert render(engine, "{{ hash(Workload, 8) }}") == digest[:8] + "\n"
    labels_json = json.dumps({"region": "eu", "workload": "app"}, sort_keys=True, separators=(",", ":"))
    assert render(engine, "{{ Labels | hash }}") == hashlib.sha256(labels_json.encode()).hexdigest() + "\n"


def test_stringify(engine: TemplateEngine) -> None:
    config = {
        "s": "x",
        "t": True,
        "f": False,
        "n": None,
        "i": 3,
        "x": 1.5,
        "m": {"b": 1, "a": [1]},
        "l": [1, "a"],
    }
    out = render(engine, "{{ stringify(ConfigData) | toJson }}", content_type="json", ConfigData=config)
    assert out is not None
    assert json.loads(out) == {
        "s": "x",
        "t": "true",
        "f": "false",
        "n": "",
        "i": "3",
        "x": "1.5",
        "m": '{"a":[1],"b":1}',
        "l": '[1,"a"]',
    }
    assert render(engine, "{{ ConfigData.DEBUG | stringify }}") == "true\n"


def test_quote(engine: TemplateEngine) -> None:
    assert (
        render(engine, "{{ 'say \"hi\"' | quote }} {{ 3 | quote }} {{ true | quote }}", content_type="sh")
        == '"say \\"hi\\"" "3" "true"\n'
    )


def test_required(engine: TemplateEngine) -> None:
    assert render(engine, "{{ required(Manifests.repo, 'repo needed') }}") == "https://example.com/app.git\n"
    for expression in ["Manifests.nope", "Manifests.empty", "none"]:
        with pytest.raises(TemplateRenderError, match="required value missing: repo needed"):
            render(engine, f"{{{{ {expression} | required('repo needed') }}}}", Manifests={"empty": ""})


# -- errors --------------------------------------------------------------------------------------------


def test_syntax_errors_name_every_broken_manifest_and_its_file_line(engine: TemplateEngine) -> None:
    broken = source(
        "ok: {{ Namespace }}\n", "line1\nline2 {{ Namespace \n", "a\nb\n{% if x %}\n", first_line=7
    )
    with pytest.raises(InputError) as info:
        engine.compile(broken)
    problems = info.value.problems()
    assert len(problems) == 2
    assert problems[0].location == Location("templates/tpl.yaml", 13)  # manifest 2 starts at 12, line 2
    assert "template 'tpl', manifest 2: syntax error" in problems[0].message
    assert (
        problems[1].location is not None and problems[1].location.line == 19
    )  # manifest 3 at 17, ends line 3
    assert "manifest 3" in problems[1].message and "endif" in problems[1].message
    assert not isinstance(info.value, TemplateRenderError)


def test_go_syntax_gets_a_hint(engine: TemplateEngine) -> None:
    with pytest.raises(InputError) as info:
        engine.compile(source("name: {{ .Namespace }}\n"))
    assert "{{ Namespace }}" in (info.value.problems()[0].hint or "")


def test_undefined_variable_names_the_variable_and_the_line(engine: TemplateEngine) -> None:
    compiled = engine.compile(source("a: 1\nb: {{ Namespace }}\nc: {{ NoSuchVariable }}\n", first_line=20))
    with pytest.raises(TemplateRenderError) as info:
        compiled.render(variables(), SUBJECT)
    problem = info.value.problem
    assert problem.location == Location("templates/tpl.yaml", 22)
    assert "'NoSuchVariable' is undefined" in problem.message
    assert "template 'tpl'" in problem.message and SUBJECT in problem.message
    assert problem.hint is not None and "ConfigData" in problem.hint
    assert info.value.problems() == [problem]


def test_missing_key_is_an_error_not_an_empty_string(engine: TemplateEngine) -> None:
    with pytest.raises(TemplateRenderError, match="missing key: Manifests has no key 'nope'"):
        render(engine, "repo: {{ Manifests.nope }}")
    with pytest.raises(TemplateRenderError, match="is undefined"):
        render(engine, "{{ toYaml(Missing) }}")


@pytest.mark.parametrize(
    "expression",
    [
        "''.__class__.__mro__",
        "''.__class__.__mro__[1].__subclasses__()",
        "Labels.__class__",
        "toYaml.__globals__",
        "Labels.update({'x': 1})",
        "cycler.__init__.__globals__",
        "'a' * 100000000",
        "range(100000000) | list",
    ],
)
def test_sandbox_escapes_are_blocked(engine: TemplateEngine, expression: str) -> None:
    compiled = engine.compile(source("ok: 1\nbad: {{ " + expression + " }}\n", first_line=3))
    with pytest.raises(TemplateRenderError) as info:
        compiled.render(variables(), SUBJECT)
    problem = info.value.problem
    assert problem.location == Location("templates/tpl.yaml", 4)
    assert SUBJECT in problem.message
    assert "sandbox" in problem.message or "unsafe" in problem.message or "range" in problem.message


def test_sandbox_message_is_clear(engine: TemplateEngine) -> None:
    with pytest.raises(TemplateRenderError) as info:
        render(engine, "{{ ''.__class__.__mro__ }}")
    message = info.value.problem.message
    assert "blocked by the template sandbox" in message
    assert "'__class__'" in message and "unsafe" in message


def test_exceptions_inside_filters_become_render_errors(engine: TemplateEngine) -> None:
    compiled = engine.compile(source("a\n\n{{ Workload | fromJson }}\n", first_line=40))
    with pytest.raises(TemplateRenderError) as info:
        compiled.render(variables(), SUBJECT)
    assert info.value.problem.location == Location("templates/tpl.yaml", 42)
    assert "JSONDecodeError" in info.value.problem.message
    with pytest.raises(TemplateRenderError, match="cannot represent a value of type"):
        render(engine, "{{ toYaml(toYaml) }}")
    with pytest.raises(TemplateRenderError, match="ZeroDivisionError"):
        render(engine, "{{ 1 // 0 }}")
    with pytest.raises(InputError, match="No filter named 'nosuch'"):
        render(engine, "{{ 1 | nosuch }}")


def test_error_without_manifest_locations_uses_the_template_location(engine: TemplateEngine) -> None:
    bare = TemplateSource("t", "config", "yaml", ("{{ x }}",), Location("t.yaml", 5), ())
    with pytest.raises(TemplateRenderError) as info:
        engine.compile(bare).render({}, SUBJECT)
    assert info.value.problem.location == Location("t.yaml", 5)


# -- Go template conversion ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("go", "jinja"),
    [
        ("{{ .Namespace }}", "{{ Namespace }}"),
        ("{{.Namespace}}", "{{Namespace}}"),
        ('name: "{{ .DeploymentTargetName}}"', 'name: "{{ DeploymentTargetName}}"'),
        ("{{ .Manifests.repo }}", "{{ Manifests.repo }}"),
        ("{{ toYaml .ConfigData | indent 2 }}", "{{ ConfigData | toYaml | indent(2) }}"),
        ("{{- toYaml .ConfigData | nindent 4 -}}", "{{- ConfigData | toYaml | nindent(4) -}}"),
        ("{{ .ConfigData | toYaml }}", "{{ ConfigData | toYaml }}"),
        ("{{ indent 2 .X }}", "{{ X | indent(2) }}"),
        ('{{ index .Labels "k" }}', '{{ Labels["k"] }}'),
        ('{{ index .Manifests "a" "b" }}', '{{ Manifests["a"]["b"] }}'),
        ("{{ quote .Namespace }}", "{{ Namespace | quote }}"),
        ('{{ required "need repo" .Manifests.repo }}', '{{ Manifests.repo | required("need repo") }}'),
        ('{{ default "x" .Y }}', '{{ Y | default("x", true) }}'),
        ("{{ sha256sum .Y }}", "{{ Y | hash }}"),
        ("{{ .X | `raw` }}", "{{ .X | `raw` }}"),
        ("{{/* note */}}", "{# note #}"),
        ("{{- /* note */ -}}", "{#- note -#}"),
        ("{{ if .Flag }}a{{ else }}b{{ end }}", "{% if Flag %}a{% else %}b{% endif %}"),
        (
            '{{ if eq .Environment "prod" }}p{{ else if not .X }}n{{ end }}',
            '{% if Environment == "prod" %}p{% elif not X %}n{% endif %}',
        ),
        ("{{ if and .A .B }}x{{ end }}", "{% if A and B %}x{% endif %}"),
        # Left alone: already Jinja, variables, range, parentheses, unknown functions.
        ("{{ Namespace | indent(2) }}", "{{ Namespace | indent(2) }}"),
        ("{{ $x := .Y }}", "{{ $x := .Y }}"),
        ("{{ range .Items }}{{ . }}{{ end }}", "{{ range .Items }}{{ . }}{{ end }}"),
        ('{{ printf "%s" .X }}', '{{ printf "%s" .X }}'),
        ("{{ toYaml (index .A 1) }}", "{{ toYaml (index .A 1) }}"),
        ("plain text {not a template}", "plain text {not a template}"),
    ],
)
def test_convert_go_template(go: str, jinja: str) -> None:
    assert convert_go_template(go) == jinja


def test_converted_kalypso_templates_render(engine: TemplateEngine) -> None:
    reconciler = convert_go_template(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
        '  name: "{{ .DeploymentTargetName}}"\n  namespace: flux-system\nspec:\n'
        '  url: "{{ .Manifests.repo }}"\n  ref:\n    branch: "{{ .Manifests.branch }}"\n'
        '  region: {{ index .Labels "region" }}\n'
    )
    config = convert_go_template(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform-config\n  namespace: {{ .Namespace }}\n"
        "data:\n{{ toYaml .ConfigData | indent 2 }}\n"
    )
    # Kalypso's config values are ConfigMap data, text: toYaml of them is a ConfigMap Kubernetes takes (a number or
    # a map there is refused, tests/test_configmap_data.py)
    config_data = {"REPLICAS": "3", "NAME": "app", "DB_HOST": "db"}
    out = render(engine, reconciler, config, ConfigData=config_data)
    assert out is not None
    docs = list(_SAFE.load_all(out))
    assert docs[0]["metadata"]["name"] == "app-dev"
    assert docs[0]["spec"] == {
        "url": "https://example.com/app.git",
        "ref": {"branch": "main"},
        "region": "eu",
    }
    assert docs[1]["data"] == config_data
