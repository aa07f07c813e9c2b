"""The data of a v1 ConfigMap a template renders: text, under keys a ConfigMap may have (fleetflow/render/
configmap_data.py). Kubernetes keeps ConfigMap data as map[string]string (k8s.io/api core/v1/types.go,
ConfigMap.Data) and checks each key with IsConfigMapKey (k8s.io/apimachinery pkg/util/validation/validation.go:
[-._a-zA-Z0-9]+, at most 253, not '.', '..' or '..'-prefixed); the API server refuses a number, boolean, map or list
("json: cannot unmarshal number into Go struct field ConfigMap.data of type string", BorisPolonsky/dify-helm#44;
"... unmarshal object ...", ansible-collections/kubernetes.core#682) and takes a null ("ReadString: expects \\" or n",
cloud-bulldozer/e2e-benchmarking#231). Until 2026-11-29 such a ConfigMap was written and pushed, and refused on every
cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetflow.render.configmap_data import _CLEAN_DATA, _DATA, json_mistake, yaml_mistake
from fleetflow.render.templates import TemplateEngine, TemplateRenderError
from fleetflow.render.yamlemit import to_yaml
from tests.test_rendering import SUBJECT, source, variables

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform-config\n"


def config_map(data: str) -> str:
    return HEAD + "data:\n" + data


@pytest.mark.parametrize(("doc", "said"), [
    (config_map("  A: x\n  B: \"3\"\n  C: 'true'\n  D: |\n    3\n    yes: 1\n  E: 10.20.1.10:502\n"), None),
    (config_map("  REPLICAS: 3\n"), "data key 'REPLICAS' holds the number 3, not text"),
    (config_map("  DEBUG: true\n  X: 1.5\n  Y: 0x1F\n"),
     "data key 'DEBUG' holds the boolean true, not text (and 2 more: 'X', 'Y')"),
    (config_map("  FLAGS:\n    a: true\n"), "data key 'FLAGS' holds a map, not text"),
    (config_map("  HOSTS:\n  - a\n"), "data key 'HOSTS' holds a list, not text"),
    (config_map("  DB HOST: x\n"), "data key 'DB HOST' is not a key a ConfigMap may have: it holds characters "
                                   "other than letters, digits, '-', '_' and '.'"),
    (config_map("  ..data: x\n  db/host: 1\n"), "data key '..data' is not a key a ConfigMap may have: it is '.' or "
                                                "'..' or starts with '..' (and 1 more: 'db/host'); data key 'db/host' "
                                                "holds the number 1, not text"),
    (config_map("  " + "k" * 254 + ": x\n"), f"data key {'k' * 254!r} is not a key a ConfigMap may have: it is "
                                              "longer than 253 characters"),
    (HEAD + "data: {A: 1}\n", "data key 'A' holds the number 1, not text"),
    (HEAD + "data: [a]\n", "data is a list, not a mapping of keys to text"),
    ("kind: Namespace\n---\n" + config_map("  A: 1\n"), "data key 'A' holds the number 1, not text"),
    ('{"apiVersion": "v1", "kind": "ConfigMap", "data": {"A": false}}',
     "data key 'A' holds the boolean false, not text"),
    # an explicit tag decides, whatever the text and quotes (go-yaml v3 decode.go: a scalar is a string when its
    # tag is !!str, or when it has no tag and is quoted; otherwise resolve(tag, value)): "4" tagged !!int is 4
    (config_map("  A: !!int \"4\"\n  B: !!bool 'true'\n"),
     "data key 'A' holds the number 4, not text (and 1 more: 'B')"),
    # taken by the API server, or by one of the agents: not refused
    (config_map("  A: yes\n  B: on\n  C:\n  D: null\n  E: ~\n"), None),  # YAML 1.1 booleans, nulls
    (config_map("  A: !!str 3\n  B: !!str true\n"), None),  # a number or boolean's text, tagged as text
    (HEAD + "data:\n", None),
    (HEAD.replace("v1", "example.com/v1") + "data:\n  A: 1\n", None),  # another group's kind
    ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nspec:\n  postBuild:\n    substituteFrom:\n"
     "      - kind: ConfigMap\n        name: x\ndata:\n  A: 1\n", None),
])
def test_config_map_data(doc: str, said: str | None) -> None:
    assert yaml_mistake(doc) == said


def test_the_quick_look_takes_what_stringify_and_to_yaml_write() -> None:
    """Every ConfigMap written with ``stringify | toYaml`` passes the quick look (two regular expressions), so a
    render of sound ConfigMaps builds no YAML nodes."""
    data = {"A": "x", "B": "3", "C": "true", "D": "a\nb\n", "E": "10.20.1.10:502", "F": "", "G": "- x", "H": "#x",
            "I": '{"a":1}', "J": "yes", "K": "a: b", "L": " padded ", "M": "null", "N": "1e3"}
    doc = config_map(to_yaml(data).replace("\n", "\n  ").rstrip(" ").join(["  ", ""]))
    match = _DATA.search(doc)
    assert match is not None and _CLEAN_DATA.fullmatch(match.group(1))
    assert yaml_mistake(doc) is None


_VALUES = st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False),
                    st.lists(st.text(max_size=3), max_size=2),
                    st.dictionaries(st.text(max_size=3), st.text(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(alphabet="aZ09-._/ :", min_size=1, max_size=6), _VALUES, max_size=5))
def test_refused_exactly_when_kubernetes_refuses(data: dict[str, Any]) -> None:
    """Whatever a template writes with toYaml, the check refuses exactly the data Kubernetes refuses, on the quick
    look and on the nodes alike."""
    doc = config_map("".join("  " + line + "\n" for line in to_yaml(data).splitlines()) if data else "")
    refused = any(
        not (key not in (".", "..") and not key.startswith("..") and all(c.isascii() and (c.isalnum() or c in "-._")
                                                                          for c in key))
        or not (value is None or isinstance(value, str))
        for key, value in data.items())
    assert (yaml_mistake(doc) is not None) == refused, doc
    assert (json_mistake({"apiVersion": "v1", "kind": "ConfigMap", "data": data}) is not None) == refused


@pytest.mark.parametrize("content_type", ["yaml", "json"])
def test_a_config_map_without_stringify_fails_its_assignment(engine: TemplateEngine, content_type: str) -> None:
    """The mistake as it is made: ``ConfigData`` written into a ConfigMap without ``stringify``."""
    manifest = (HEAD + "data:{{ ConfigData | toYaml | nindent(2) }}" if content_type == "yaml" else
                '{{ {"apiVersion": "v1", "kind": "ConfigMap", "data": ConfigData} | toJson }}')
    compiled = engine.compile(source(manifest, content_type=content_type))
    with pytest.raises(TemplateRenderError) as caught:
        compiled.render(variables(), SUBJECT)
    assert caught.value.problem.message == (
        f"template 'tpl', manifest 1, rendering {SUBJECT}: renders a ConfigMap whose data Kubernetes refuses "
        f"(contentType: {content_type}): data key 'DB' holds a map, not text (and 2 more: 'DEBUG', 'REPLICAS')")
    assert caught.value.in_text
    assert "stringify" in (caught.value.problem.hint or "")
    fixed = manifest.replace("ConfigData |", "ConfigData | stringify |").replace("ConfigData}",
                                                                                 "ConfigData | stringify}")
    out = engine.compile(source(fixed, content_type=content_type)).render(variables(), SUBJECT)
    assert out is not None and (content_type == "yaml" or json.loads(out)["data"]["REPLICAS"] == "3")


@pytest.fixture(scope="module")
def engine() -> TemplateEngine:
    return TemplateEngine()
