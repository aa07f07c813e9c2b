"""Config composition: which ConfigMaps apply, precedence, merging, provenance, caching."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, cast

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from fleetflow.errors import Location
from fleetflow.render.composition import (
    Composer,
    ConfigSource,
    Subject,
    _may_be_collection,
    _parse_value,
    applies,
    precedence_key,
)

SUBJECT = Subject(
    environment="dev",
    cluster_type="edge",
    cluster_type_labels={"region": "eu", "size": "small"},
    deployment_target="shop-web",
    target_labels={"tier": "front", "workload": "shop", "workspace": "retail"},
    workload="shop",
)


def source(
    name: str,
    data: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
    priority: int = 0,
    file: str | None = None,
) -> ConfigSource:
    """A ConfigMap whose data keys sit on lines 10, 11, ... of ``<name>.yaml``."""
    path = file or f"{name}.yaml"
    key_locations: dict[tuple[str, ...], Location] = {
        (key,): Location(path, 10 + i) for i, key in enumerate(data)
    }
    return ConfigSource(name, Location(path, 1), dict(labels or {}), priority, dict(data), key_locations)


def compose(*sources: ConfigSource, subject: Subject = SUBJECT) -> Any:
    return Composer(sources).compose(subject)


# --- applies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, True),
        ({"platform-config": "true"}, True),
        ({"cluster-type": "edge"}, True),
        ({"cluster-type": "core"}, False),
        ({"deployment-target": "shop-web"}, True),
        ({"deployment-target": "web"}, False),
        ({"workload": "shop"}, True),
        ({"workload": "bank"}, False),
        ({"environment": "dev"}, True),
        ({"environment": "prod"}, False),
        ({"region": "eu"}, True),  # carried by the cluster type
        ({"tier": "front"}, True),  # carried by the deployment target
        ({"workspace": "retail"}, True),  # the target's effective labels include workspace=
        ({"region": "us"}, False),
        ({"team": "a"}, False),  # carried by neither
        ({"region": "eu", "tier": "front", "cluster-type": "edge", "environment": "dev"}, True),
        ({"region": "eu", "tier": "back"}, False),  # every label must match
    ],
)
def test_applies(labels: dict[str, str], expected: bool) -> None:
    assert applies(labels, SUBJECT) is expected


def test_reserved_keys_only_match_the_subject_itself() -> None:
    subject = Subject("dev", "edge", {"workload": "bank", "cluster-type": "core"}, "shop-web", {}, "shop")
    assert not applies({"workload": "bank"}, subject)
    assert not applies({"cluster-type": "core"}, subject)
    assert applies({"workload": "shop", "cluster-type": "edge"}, subject)


def test_composer_selects_the_same_sources_as_applies() -> None:
    candidates = [
        source("all", {"a": "1"}),
        source("ct", {"a": "2"}, {"cluster-type": "edge"}),
        source("other-ct", {"a": "3"}, {"cluster-type": "core"}),
        source("region", {"a": "4"}, {"region": "eu"}),
        source("mixed", {"a": "5"}, {"region": "eu", "tier": "front"}),
        source("mixed-no", {"a": "6"}, {"region": "eu", "tier": "back"}),
        source("wl", {"a": "7"}, {"workload": "shop", "environment": "dev"}),
        source("prod", {"a": "8"}, {"environment": "prod"}),
    ]
    composed = Composer(candidates).compose(SUBJECT)
    assert set(composed.sources) == {s.name for s in candidates if applies(s.labels, SUBJECT)}
    assert set(composed.sources) == {"all", "ct", "region", "mixed", "wl"}


# --- precedence ---------------------------------------------------------------------------------------------


def test_priority_beats_specificity() -> None:
    specific = source("specific", {"x": "specific"}, {"cluster-type": "edge", "region": "eu"})
    important = source("important", {"x": "important"}, priority=5)
    assert compose(specific, important).values["x"] == "important"
    assert compose(important, specific).sources == ("specific", "important")


def test_specificity_beats_name() -> None:
    general = source("zzz", {"x": "general"})
    specific = source("aaa", {"x": "specific"}, {"cluster-type": "edge"})
    assert compose(general, specific).values["x"] == "specific"


def test_platform_config_label_does_not_count_for_specificity() -> None:
    a = source("b-general", {"x": "b"}, {"platform-config": "true"})
    b = source("a-ct", {"x": "a"}, {"cluster-type": "edge"})
    assert precedence_key(a)[:2] == (0, 0)
    assert compose(a, b).values["x"] == "a"


def test_name_breaks_ties() -> None:
    assert compose(source("b", {"x": "b"}), source("a", {"x": "a"})).values["x"] == "b"


def test_negative_priority_goes_first() -> None:
    low = source("zz", {"x": "low"}, {"cluster-type": "edge"}, priority=-1)
    assert compose(low, source("aa", {"x": "plain"})).values["x"] == "plain"


# --- merging ------------------------------------------------------------------------------------------------


def test_maps_merge_deeply_and_scalars_replace() -> None:
    base = source("a", {"db": {"host": "db", "pool": {"min": 1, "max": 5}}, "log": "info"})
    over = source("b", {"db": {"pool": {"max": 9}}, "log": "debug"})
    assert compose(base, over).values == {"db": {"host": "db", "pool": {"min": 1, "max": 9}}, "log": "debug"}


def test_lists_replace() -> None:
    result = compose(source("a", {"ports": "[80, 443]"}), source("b", {"ports": "[8080]"}))
    assert result.values["ports"] == [8080]


def test_strings_holding_yaml_maps_and_lists_are_parsed() -> None:
    base = source("a", {"db": "host: db\nport: 5432", "hosts": "- a\n- b", "flow": "{x: 1}"})
    over = source("b", {"db": "{port: 6432}"})
    assert compose(base, over).values == {
        "db": {"host": "db", "port": 6432},
        "hosts": ["a", "b"],
        "flow": {"x": 1},
    }


@pytest.mark.parametrize(
    "text",
    [
        "3",
        "true",
        "",
        "~",
        "null",
        "hello world",
        "http://example.com:80/x",
        "[unclosed",
        "a: 1\na: 2",
        "|\n  x",
    ],
)
def test_strings_that_are_not_maps_or_lists_stay_strings(text: str) -> None:
    assert compose(source("a", {"v": text})).values["v"] == text


LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))


@pytest.mark.parametrize(
    "text",
    [
        "&a [1, *a]",  # an alias inside the node it names: endless (a RecursionError until 2026-11-28)
        "a: &a {b: *a}",
        LAUGHS,  # nine levels of nine aliases: 3.9 billion values built out (hung at 4 GB until 2026-11-28)
        "[" * 150 + "]" * 150,  # deeper than a document may nest (documents.MAX_DEPTH)
    ],
    ids=["alias-in-its-list", "alias-in-its-map", "billion-laughs", "too-deep"],
)
def test_strings_that_would_build_out_endless_or_huge_stay_strings(text: str) -> None:
    """A value holding YAML that plain data could not hold (YAML 1.2.2, 3.2.2.2 "Anchors and Aliases": an alias
    stands for the node it names, and may be inside it) stays the text it is, as any text the parser refuses."""
    assert compose(source("a", {"v": text})).values["v"] == text


def test_strings_with_a_few_aliases_are_built_out() -> None:
    text = "base: &b {x: 1}\none: *b\ntwo: [*b, *b]"
    assert compose(source("a", {"v": text})).values["v"] == {"base": {"x": 1}, "one": {"x": 1},
                                                             "two": [{"x": 1}, {"x": 1}]}


class _Recording:
    """A YAML parser that only records what it was given (``_parse_value`` takes any error as "a string")."""

    def __init__(self) -> None:
        self.given: list[str] = []

    def load(self, text: str) -> Any:
        self.given.append(text)
        return text


@pytest.mark.parametrize("text", ["https://api.example.com", "http://example.com:80/x", "10:30", "a:b:c", "x:y\nz"])
def test_strings_without_a_key_indicator_are_not_parsed(text: str) -> None:
    """A ":" not followed by a space, a tab, a line break or the end is no key indicator (YAML 1.2.2, 7.4 and
    8.2.2: "https://api.example.com" is one plain scalar); nor does such a string start a flow collection or a
    block sequence. It stays a string without going through the parser (before: every string with a ":")."""
    parser = _Recording()
    assert _parse_value(cast(YAML, parser), text) == text
    assert parser.given == []


_YAML_SIGNIFICANT = "ab1:/ -\n\t\r[]{},#?&*!|>%'\".=\ufeff\x85\u2028\u2029"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=_YAML_SIGNIFICANT, min_size=1, max_size=12))
@example("a:\x85b").via("a map: ruamel.yaml's scanner takes NEL for a line break")
@example("a:\u2028b").via("a map: so is the line separator")
@example("\ufeff? ax/:]").via("a map behind a byte-order mark, with no key indicator after its ':'")
def test_the_pre_check_skips_only_what_the_parser_leaves_a_string(text: str) -> None:
    """What the pre-check lets through unparsed, ruamel.yaml (the parser the composer uses) would not have made a
    map or a list (a scalar, or an error: the string stays). The alphabet is the characters YAML gives a meaning
    to, with the line breaks ruamel.yaml's scanner knows and a byte-order mark. A string that starts with the
    mark is parsed when it holds a ":", as every string with a ":" was before; without one it stays a string
    (before too), though ruamel.yaml reads "\\ufeff?" as a map."""
    if text.lstrip().startswith("\ufeff"):  # hides the first character: parsed if it holds a ":", as before
        assert _may_be_collection(text) == (":" in text)
        return
    if not _may_be_collection(text):
        try:
            parsed = YAML(typ="safe", pure=True).load(text)
        except Exception:  # any parser error leaves the string as it is
            return
        assert not isinstance(parsed, Mapping | list), f"{text!r} is {parsed!r} to the parser"


def test_parsed_values_are_plain_json_data() -> None:
    values = compose(source("a", {"m": "day: 2024-01-02\n2: two\ntrue: yes"})).values
    assert values == {"m": {"day": "2024-01-02", "2": "two", "true": "yes"}}
    json.dumps(values)


def test_a_map_replaces_a_scalar_and_a_scalar_replaces_a_map() -> None:
    assert compose(source("a", {"x": "plain"}), source("b", {"x": "k: v"})).values["x"] == {"k": "v"}
    assert compose(source("a", {"x": "k: v"}), source("b", {"x": "plain"})).values["x"] == "plain"


def test_merging_leaves_the_sources_untouched() -> None:
    a = source("a", {"db": {"host": "a"}})
    b = source("b", {"db": {"port": "1"}})
    compose(a, b)
    assert a.data == {"db": {"host": "a"}}
    assert b.data == {"db": {"port": "1"}}


def test_nothing_applies_gives_empty_config() -> None:
    result = compose(source("a", {"x": "1"}, {"cluster-type": "core"}))
    assert result.values == {}
    assert result.sources == ()
    assert dict(result.provenance) == {}


# --- provenance ---------------------------------------------------------------------------------------------


def test_provenance_keeps_the_overridden_chain() -> None:
    result = compose(
        source("base", {"log": "info", "db": "host: a\nport: 1"}),
        source("region", {"log": "warn"}, {"region": "eu"}),
        source("edge", {"log": "debug", "db": "port: 2"}, {"cluster-type": "edge", "tier": "front"}),
    )
    log = result.provenance[("log",)]
    assert log.winner.source == "edge"
    assert log.winner.value == "debug"
    assert log.winner.location == Location("edge.yaml", 10)
    assert [(c.source, c.value) for c in log.overridden] == [("region", "warn"), ("base", "info")]
    port = result.provenance[("db", "port")]
    assert (port.winner.source, port.winner.value) == ("edge", 2)
    assert port.winner.location == Location("edge.yaml", 11)  # parsed from a string: its top-level key's line
    assert [c.value for c in port.overridden] == [1]
    host = result.provenance[("db", "host")]
    assert (host.winner.source, host.overridden) == ("base", ())
    assert set(result.provenance) == {("log",), ("db", "host"), ("db", "port")}
    assert len(result.provenance) == 3
    assert ("db",) not in result.provenance


def test_provenance_uses_exact_key_locations_and_falls_back_to_the_document() -> None:
    nested = ConfigSource(
        "nested",
        Location("n.yaml", 3),
        {},
        0,
        {"db": {"host": "h", "port": "1"}},
        {("db",): Location("n.yaml", 5), ("db", "host"): Location("n.yaml", 6)},
    )
    bare = ConfigSource("bare", Location("b.yaml", 7), {}, 0, {"x": "1"}, {})
    result = compose(nested, bare)
    assert result.provenance[("db", "host")].winner.location == Location("n.yaml", 6)
    assert result.provenance[("db", "port")].winner.location == Location("n.yaml", 5)
    assert result.provenance[("x",)].winner.location == Location("b.yaml", 7)


def test_empty_map_is_a_leaf() -> None:
    result = compose(source("a", {"x": "plain"}), source("b", {"x": "{}"}))
    assert result.values == {"x": {}}
    assert result.provenance[("x",)].winner.source == "b"
    assert [c.value for c in result.provenance[("x",)].overridden] == ["plain"]


def test_locate_uses_the_longest_prefix() -> None:
    result = compose(source("a", {"ports": "[80, 443]", "db": "host: h\nport: 1"}))
    assert result.locate(("ports", 1)) == result.provenance[("ports",)]
    assert result.locate(("db", "host", "x")) == result.provenance[("db", "host")]
    located = result.locate(("db",))  # a map: its first leaf
    assert located is not None
    assert located.path == ("db", "host")
    assert result.locate(("missing",)) is None
    assert result.locate(()) is None


# --- caching -----------------------------------------------------------------------------------------------


def test_identical_source_sets_share_one_result() -> None:
    sources = [source("all", {"x": "1"}), source("eu", {"y": "2"}, {"region": "eu"})]
    composer = Composer(sources)
    first = composer.compose(SUBJECT)
    other = Subject("dev", "edge2", {"region": "eu"}, "bank-api", {"workload": "bank"}, "bank")
    assert composer.compose(other) is first
    assert Composer(sources).compose(SUBJECT) == first
    assert first.fingerprint == Composer(list(reversed(sources))).compose(SUBJECT).fingerprint


def test_fingerprint_is_sha256_of_canonical_json() -> None:
    result = compose(source("a", {"b": "2", "a": "x: 1"}))
    canonical = json.dumps({"a": {"x": 1}, "b": "2"}, sort_keys=True, separators=(",", ":"))
    assert result.fingerprint == hashlib.sha256(canonical.encode()).hexdigest()


def test_prefixes_are_merged_once_and_results_stay_independent() -> None:
    composer = Composer(
        [source("a", {"db": "host: a"}), source("b", {"db": "port: 1"}, {"cluster-type": "edge"})]
    )
    with_b = composer.compose(SUBJECT)
    without_b = composer.compose(Subject("dev", "core", {}, "x-y", {}, "x"))
    assert with_b.values == {"db": {"host": "a", "port": 1}}
    assert without_b.values == {"db": {"host": "a"}}


# --- properties ---------------------------------------------------------------------------------------------

LABEL_POOL = [
    ("cluster-type", "edge"),
    ("cluster-type", "core"),
    ("deployment-target", "shop-web"),
    ("workload", "shop"),
    ("workload", "bank"),
    ("environment", "dev"),
    ("region", "eu"),
    ("region", "us"),
    ("tier", "front"),
    ("size", "small"),
]

source_specs = st.lists(
    st.tuples(
        st.text("abcde", min_size=1, max_size=3),  # name
        st.integers(-1, 2),  # priority
        st.sets(st.sampled_from(LABEL_POOL), max_size=3),  # labels
        st.one_of(st.none(), st.text("xyz", max_size=2)),  # value for key "k", if any
    ),
    max_size=8,
    unique_by=lambda spec: spec[0],
)


def build(specs: list[tuple[str, int, set[tuple[str, str]], str | None]]) -> list[ConfigSource]:
    return [
        source(name, {"k": value} if value is not None else {"other": name}, dict(labels), priority)
        for name, priority, labels, value in specs
        if len(dict(labels)) == len(labels)  # one value per label key
    ]


subjects = st.builds(
    Subject,
    environment=st.sampled_from(["dev", "prod"]),
    cluster_type=st.sampled_from(["edge", "core"]),
    cluster_type_labels=st.dictionaries(
        st.sampled_from(["region", "size", "workload"]),
        st.sampled_from(["eu", "us", "small", "bank"]),
        max_size=2,
    ),
    deployment_target=st.sampled_from(["shop-web", "bank-api"]),
    target_labels=st.dictionaries(
        st.sampled_from(["tier", "region"]), st.sampled_from(["front", "eu"]), max_size=2
    ),
    workload=st.sampled_from(["shop", "bank"]),
)


@settings(max_examples=200, deadline=None)
@given(source_specs, subjects)
def test_highest_precedence_setter_of_a_scalar_wins(
    specs: list[tuple[str, int, set[tuple[str, str]], str | None]], subject: Subject
) -> None:
    sources = build(specs)
    setters = [s for s in sources if "k" in s.data and applies(s.labels, subject)]
    result = Composer(sources).compose(subject)
    if not setters:
        assert "k" not in result.values
        return
    winner = max(setters, key=precedence_key)
    assert result.values["k"] == winner.data["k"]
    provenance = result.provenance[("k",)]
    assert provenance.winner.source == winner.name
    expected = sorted(setters, key=precedence_key, reverse=True)[1:]
    assert [c.source for c in provenance.overridden] == [s.name for s in expected]


@settings(max_examples=200, deadline=None)
@given(source_specs, st.lists(subjects, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_composing_is_order_independent_and_matches_applies(
    specs: list[tuple[str, int, set[tuple[str, str]], str | None]], many: list[Subject], rnd: Any
) -> None:
    sources = build(specs)
    shuffled = list(sources)
    rnd.shuffle(shuffled)
    forward, backward = Composer(sources), Composer(shuffled)
    for subject in many:
        a, b = forward.compose(subject), backward.compose(subject)
        assert a.values == b.values
        assert a.sources == b.sources
        assert a.fingerprint == b.fingerprint
        expected = sorted((s for s in sources if applies(s.labels, subject)), key=precedence_key)
        assert a.sources == tuple(s.name for s in expected)


def test_sources_fingerprint_is_the_applied_layers_hashes_in_order() -> None:
    """The sources fingerprint goes into every assignment's input hash in state.json: its formula is pinned, so a
    state written before layers were parsed lazily still matches (an unchanged assignment is not rendered again)."""
    low = source("a-low", {"db": "host: db\nport: 5432"}, {"region": "eu"})
    high = source("b-high", {"db": "{port: 6432}"}, {"tier": "front"}, priority=5)
    other = source("c-other", {"x": "1"}, {"region": "us"})

    def layer_hash(src: ConfigSource, data: dict[str, Any]) -> str:
        canonical = json.dumps([src.name, src.priority, dict(src.labels), data], sort_keys=True,
                               separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    composer = Composer([other, high, low])
    found = composer.sources_fingerprint("dev", SUBJECT.cluster_type, SUBJECT.cluster_type_labels,
                                         SUBJECT.deployment_target, SUBJECT.workload, SUBJECT.target_labels)
    assert found == (layer_hash(low, {"db": {"host": "db", "port": 5432}}) + "|"
                     + layer_hash(high, {"db": {"port": 6432}}))


def test_only_the_config_maps_a_composed_subject_uses_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schedule composes only the assignments a change touched: the ConfigMaps none of them uses are neither
    parsed nor hashed (at 100,000 assignments parsing all 1,100 of the benchmark fleet grew with the fleet)."""
    import fleetflow.render.composition as composition

    parsed: list[str] = []
    real = composition._parse_value

    def counting(yaml: Any, text: str) -> Any:
        parsed.append(text)
        return real(yaml, text)

    monkeypatch.setattr(composition, "_parse_value", counting)
    used = source("a-used", {"db": "host: db"}, {"region": "eu"})
    unused = [source(f"ct-{i}", {"db": f"host: db{i}"}, {"cluster-type": f"ct-{i}"}) for i in range(50)]
    composer = Composer([used, *unused])
    assert parsed == []
    assert composer.compose(SUBJECT).values == {"db": {"host": "db"}}
    composer.sources_fingerprint("dev", SUBJECT.cluster_type, SUBJECT.cluster_type_labels,
                                 SUBJECT.deployment_target, SUBJECT.workload, SUBJECT.target_labels)
    assert parsed == ["host: db"]


_KEYS = st.sampled_from(["region", "tier", "cluster-type", "environment", "workload", "deployment-target", "site"])
_VALUES = st.sampled_from(["a", "b", "dev", "ct-1", "ct-2", "wl", "wl-t1", "None", ""])


@settings(max_examples=300, deadline=None)
@given(
    wanted=st.dictionaries(_KEYS, _VALUES, max_size=3),
    types=st.dictionaries(st.sampled_from(["ct-1", "ct-2", "ct-3"]), st.dictionaries(_KEYS, _VALUES, max_size=3),
                          max_size=3),
    target_labels=st.lists(st.dictionaries(_KEYS, _VALUES, max_size=3), min_size=1, max_size=3),
    environment=st.sampled_from(["dev", "a"]),
)
def test_the_pairs_a_changed_config_map_touches_are_where_it_applies(
    wanted: dict[str, str], types: dict[str, dict[str, str]], target_labels: list[dict[str, str]], environment: str,
) -> None:
    """``_targets_touched_by`` (which cluster type x target pairs a changed ConfigMap can change) looks up only
    the facts the ConfigMap wants; it must pick exactly the pairs ``applies`` says the ConfigMap applies to."""
    from fleetflow.errors import Location as Loc
    from fleetflow.render.incremental import _targets_touched_by
    from fleetflow.render.scheduling import Target

    targets = {
        f"wl-t{i}": Target(f"wl-t{i}", "wl", f"t{i}", "ws", environment, labels, {}, (), Loc("t.yaml"))
        for i, labels in enumerate(target_labels, start=1)
    }
    expected: dict[str, set[str]] = {}
    for ct, ct_labels in types.items():
        for tid, target in targets.items():
            if applies(wanted, Subject(environment, ct, ct_labels, tid, target.labels, target.workload)):
                expected.setdefault(ct, set()).add(tid)
    assert _targets_touched_by(wanted, environment, types, targets) == expected
