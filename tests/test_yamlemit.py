"""The YAML emitter: exact layout for the common cases, round-trip for everything (hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from fleetflow.render.yamlemit import to_yaml

_SAFE = YAML(typ="safe")
_SAFE_11 = YAML(typ="safe")
_SAFE_11.version = (1, 1)


def load(text: str) -> Any:
    return _SAFE.load(text)


def test_kubernetes_layout() -> None:
    value = {
        "metadata": {"name": "app", "labels": {"tier": "web"}},
        "spec": {"containers": [{"name": "c", "ports": [80, 443]}], "empty": {}, "none": []},
        "kind": "Deployment",
    }
    assert to_yaml(value) == (
        "kind: Deployment\n"
        "metadata:\n"
        "  labels:\n"
        "    tier: web\n"
        "  name: app\n"
        "spec:\n"
        "  containers:\n"
        "  - name: c\n"
        "    ports:\n"
        "    - 80\n"
        "    - 443\n"
        "  empty: {}\n"
        "  none: []\n"
    )


def test_nested_lists_and_root_values() -> None:
    assert to_yaml([[1, [2, 3]], {"a": 1, "b": 2}]) == "- - 1\n  - - 2\n    - 3\n- a: 1\n  b: 2\n"
    assert to_yaml({}) == "{}\n"
    assert to_yaml([]) == "[]\n"
    assert to_yaml(None) == "null\n"
    assert to_yaml("plain") == "plain\n"
    assert to_yaml("two\nlines") == "|-\n  two\n  lines\n"
    assert to_yaml((1, 2)) == "- 1\n- 2\n"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (0, "0"),
        (-12, "-12"),
        (1.5, "1.5"),
        (1e20, "1.0e+20"),
        (float("inf"), ".inf"),
        (float("-inf"), "-.inf"),
        ("hello world", "hello world"),
        ("10Gi", "10Gi"),
        ("1.2.3", "1.2.3"),
        ("a:b", "a:b"),
        ("a#b", "a#b"),
        ("https://example.com/x?y=1#z", "https://example.com/x?y=1#z"),
        ("ünïcødé", "ünïcødé"),
    ],
)
def test_plain_scalars(value: object, expected: str) -> None:
    assert to_yaml({"k": value}) == f"k: {expected}\n"


@pytest.mark.parametrize(
    "text",
    [
        "",
        " lead",
        "trail ",
        "true",
        "False",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "n",
        "null",
        "~",
        "Null",
        "1",
        "-1",
        "+1",
        "0o17",
        "017",
        "0x1F",
        "0b101",
        "1_000",
        "_",
        "1e3",
        "1.5",
        ".5",
        "1.",
        "1e+5",
        ".inf",
        "-.Inf",
        ".nan",
        "1:30",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "- item",
        "-x",
        "?x",
        ":x",
        ",x",
        "[x",
        "]x",
        "{x",
        "}x",
        "#x",
        "&x",
        "*x",
        "!x",
        "|x",
        ">x",
        "'x",
        '"x',
        "%x",
        "@x",
        "`x",
        "a: b",
        "a #b",
        "key:",
        "...",
        "<<",
        "=",
        "tab\there",
        "nbsp\xa0",
        "nul\x00",
        "bell\x07",
        "del\x7f",
        "nel\x85",
        "ls\u2028",
        "bom\ufeff",
    ],
)
def test_ambiguous_strings_are_quoted(text: str) -> None:
    emitted = to_yaml({"k": text})
    assert emitted.startswith('k: "'), emitted
    assert load(emitted) == {"k": text}
    assert _SAFE_11.load(emitted) == {"k": text}


def test_multiline_strings() -> None:
    assert to_yaml({"s": "a\nb\n"}) == "s: |\n  a\n  b\n"
    assert to_yaml({"s": "a\n\nb"}) == "s: |-\n  a\n\n  b\n"
    assert to_yaml([{"s": "a\nb"}]) == "- s: |-\n    a\n    b\n"
    assert to_yaml(["a\nb"]) == "- |-\n  a\n  b\n"
    # Not representable as a clean literal block: quoted instead.
    for text in ["trailing \nspace", " indented\nfirst", "two newlines\n\n", "\n", "cr\r\nlf"]:
        emitted = to_yaml({"s": text})
        assert emitted.startswith('s: "'), emitted
        assert load(emitted) == {"s": text}


def test_long_keys_use_explicit_syntax() -> None:
    key = "k" * 1500
    value = {key: [1, {"a": 2}], "b": 1}
    emitted = to_yaml(value)
    assert f"? {key}\n:\n- 1\n" in emitted
    assert load(emitted) == value


def test_non_string_keys_and_subclasses() -> None:
    assert load(to_yaml({1: "a", "b": 2, None: 3})) == {1: "a", "b": 2, None: 3}

    class Name(str):
        pass

    assert to_yaml({Name("k"): Name("true")}) == 'k: "true"\n'


def test_unsupported_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="cannot represent a value of type object"):
        to_yaml({"k": object()})


def test_deterministic_regardless_of_insertion_order() -> None:
    a = {"b": 1, "a": {"y": 1, "x": 2}}
    b = {"a": {"x": 2, "y": 1}, "b": 1}
    assert to_yaml(a) == to_yaml(b)


def test_nan_round_trips_as_nan() -> None:
    assert math.isnan(load(to_yaml({"k": float("nan")}))["k"])


# -- property: everything round-trips ------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.text(alphabet=st.sampled_from(list("ab \t\n:#-.'\"01eE+_xo")), max_size=12)
    | st.sampled_from(["true", "no", "0o17", "1e5", ".inf", "2024-01-01", "- x", "a: b", "~", "<<", "..."])
)
_keys = st.text(max_size=20) | st.sampled_from(["true", "1", "", "a: b", "- x", "null", "k\nl"])
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_round_trip(value: Any) -> None:
    emitted = to_yaml(value)
    assert emitted.endswith("\n")
    assert load(emitted) == value


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_round_trip_yaml_1_1(value: Any) -> None:
    """Readers still on YAML 1.1 (yes/no booleans, sexagesimal, octal 017) read the same data."""
    assert _SAFE_11.load(to_yaml(value)) == value


@settings(max_examples=300)
@given(st.text())
def test_strings_round_trip_at_every_position(text: str) -> None:
    for value in (text, [text], {text: text}, {"k": [{"n": text}]}):
        assert load(to_yaml(value)) == value
