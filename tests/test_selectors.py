from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fleetflow.model.resources import LabelSelector, LabelSelectorRequirement
from fleetflow.model.selectors import describe, matches

KEYS = st.sampled_from(["region", "site", "tier", "edge"])
VALUES = st.sampled_from(["a", "b", "c"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=4)


def req(key: str, op: str, values: list[str] | None = None) -> LabelSelectorRequirement:
    return LabelSelectorRequirement.model_validate({"key": key, "operator": op, "values": values or []})


def test_match_labels_and_operators() -> None:
    labels = {"region": "eu", "tier": "web"}
    assert matches(LabelSelector(), labels)
    assert matches(LabelSelector.model_validate({"matchLabels": {"region": "eu"}}), labels)
    assert not matches(LabelSelector.model_validate({"matchLabels": {"region": "us"}}), labels)
    assert matches(LabelSelector(match_expressions=[req("region", "In", ["eu", "us"])]), labels)
    assert not matches(LabelSelector(match_expressions=[req("site", "In", ["x"])]), labels)
    assert matches(LabelSelector(match_expressions=[req("site", "NotIn", ["x"])]), labels)  # absent key
    assert not matches(LabelSelector(match_expressions=[req("region", "NotIn", ["eu"])]), labels)
    assert matches(LabelSelector(match_expressions=[req("tier", "Exists")]), labels)
    assert not matches(LabelSelector(match_expressions=[req("tier", "DoesNotExist")]), labels)
    assert describe(
        LabelSelector(match_expressions=[req("a", "In", ["x", "y"]), req("b", "DoesNotExist")])
    ) == ("a in (x,y),!b")


@given(
    LABELS,
    st.lists(
        st.tuples(
            KEYS,
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
            st.lists(VALUES, min_size=1, max_size=3),
        ),
        max_size=4,
    ),
    LABELS,
)
def test_selector_is_a_conjunction(
    labels: dict[str, str], exprs: list[tuple[str, str, list[str]]], match_labels: dict[str, str]
) -> None:
    reqs = [req(k, op, vals if op in ("In", "NotIn") else None) for k, op, vals in exprs]
    selector = LabelSelector(match_labels=match_labels, match_expressions=reqs)
    each = all(matches(LabelSelector(match_labels={k: v}), labels) for k, v in match_labels.items()) and all(
        matches(LabelSelector(match_expressions=[r]), labels) for r in reqs
    )
    assert matches(selector, labels) == each


@given(LABELS, KEYS, st.lists(VALUES, min_size=1, max_size=3))
def test_in_and_notin_are_complements_when_key_present(
    labels: dict[str, str], key: str, values: list[str]
) -> None:
    in_ = matches(LabelSelector(match_expressions=[req(key, "In", values)]), labels)
    notin = matches(LabelSelector(match_expressions=[req(key, "NotIn", values)]), labels)
    assert in_ != notin
    exists = matches(LabelSelector(match_expressions=[req(key, "Exists")]), labels)
    absent = matches(LabelSelector(match_expressions=[req(key, "DoesNotExist")]), labels)
    assert exists != absent
    assert exists == (key in labels)


@given(LABELS, LABELS)
def test_adding_labels_never_unselects_a_match_labels_selector(
    labels: dict[str, str], extra: dict[str, str]
) -> None:
    selector = LabelSelector(match_labels=labels)
    assert matches(selector, {**extra, **labels})
