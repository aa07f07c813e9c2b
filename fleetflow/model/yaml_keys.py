"""Mapping keys as Kubernetes reads them: a key that YAML resolves to a boolean or a number becomes text.

JSON keys are text, so the tools that hand YAML to Kubernetes (kubectl, Flux, Argo CD: all through
sigs.k8s.io/yaml) turn every other key into text first. What they write is ``convertToJSONableObject`` in
``yaml.go`` of github.com/kubernetes-sigs/yaml (read at commit aadfabb, go.yaml.in/yaml/v2 v2.4.2 underneath):

* a string stays itself; ``true``/``false`` become ``"true"``/``"false"``;
* an ``int`` becomes ``strconv.Itoa``, an ``int64`` ``strconv.FormatInt(k, 10)``: the decimal digits;
* a ``float64`` becomes ``strconv.FormatFloat(k, 'g', -1, 32)``, the shortest text that reads back as the same
  *float32* (``1.0`` → ``"1"``, ``1e3`` → ``"1000"``, ``1e6`` → ``"1e+06"``, ``3.14159265358979`` →
  ``"3.1415927"``), with ``"+Inf"``, ``"-Inf"`` and ``"NaN"`` written ``".inf"``, ``"-.inf"`` and ``".nan"``;
* any other key (null, a ``uint64``, which go-yaml gives for an integer above 2^63-1) is refused: "unsupported
  map key of type ...".

A ``!!binary`` key is a string to it: go-yaml v2 decodes the base64 into a Go string of the bytes (``decoder.scalar``
in ``decode.go``), which ``json.Marshal`` writes with U+FFFD for each byte that is not UTF-8; fleetflow makes it the
decoded text, and refuses one that is not UTF-8 text (a lossy key).

fleetflow resolves scalars by YAML 1.2 (``yes`` stays text; see :mod:`fleetflow.model.documents`); this module
only says which text a key it resolved to a boolean, an integer or a float becomes, and refuses a null key and an
integer key outside int64 (Kubernetes refuses the ``uint64`` ones and would read larger ones as a float, another
key). :class:`KubernetesKeys` does it while ruamel.yaml builds each mapping, so that a duplicate is judged on the
text (``true`` and ``1.0`` are two keys, ``"true"`` and ``"1"``; ``1`` and ``1.0`` are one), at the repeated key.

YAML held in a value (a ConfigMap string that holds a map or a list, the text given to ``fromYaml``) is read with
:class:`ValueKeys` (:func:`value_yaml`): the same keys, by the same :func:`kubernetes_key`. Both constructors leave
a timestamp the text it is written as, as go-yaml does (:func:`_timestamp_as_written`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import RoundTripConstructor, SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import MappingNode, ScalarNode

_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT64 = range(-(2**63), 2**63)
_GO_SPECIALS = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}  # yaml.go's own spelling of these


def float32(value: float) -> float:
    """Go's ``float32(value)``: the nearest float32 (ties to even), ±Inf past its range."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:  # struct refuses what rounds past float32's largest value; Go makes it infinite
        return math.copysign(math.inf, value)


def _shortest_digits(value: float) -> tuple[str, int]:
    """The fewest significant digits that read back as the float32 ``value`` (finite, above zero), the nearer of
    two when two do (the even one when both are as near: 430737.625 is 430737.62), and where the decimal point
    goes: ``value`` ≈ 0.DIGITS × 10**point. This is what Go's shortest formatting (``roundShortest`` in
    strconv/ftoa.go) finds, worked out exactly with fractions: a decimal reads back as ``value`` when it lies
    between the midpoints to the neighbouring float32 values (on them too when ``value``'s mantissa is even: ties
    round to even)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    biased, mantissa = bits >> 23, bits & 0x7FFFFF
    if biased:
        mantissa |= 1 << 23
    exact = mantissa * Fraction(2) ** (max(biased, 1) - 150)
    gap_up = Fraction(2) ** (max(biased, 1) - 151)
    gap_down = gap_up / 2 if mantissa == 1 << 23 and biased > 1 else gap_up  # below a power of two: closer
    low, high, inclusive = exact - gap_down, exact + gap_up, mantissa % 2 == 0
    top = len(str(exact.numerator)) - len(str(exact.denominator))  # 10**top <= exact < 10**(top + 1)
    if exact < Fraction(10) ** top:
        top -= 1
    for count in range(1, 10):  # nine significant digits tell every float32 apart
        shift = top - count + 1
        step = Fraction(10) ** shift
        down = exact // step
        for scaled in sorted((down, down + 1), key=lambda n: (abs(n * step - exact), n % 2)):  # a tie: even
            candidate = scaled * step
            if low < candidate < high or (inclusive and candidate in (low, high)):
                text = str(scaled)
                return text.rstrip("0"), len(text) + shift
    raise AssertionError(f"no float32 has more than 9 significant digits: {value!r}")


def go_float32_text(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)``: the value as a float32, in its shortest digits; an exponent
    (``1e+06``, ``1e-05``) when the exponent is below -4 or at least 6 (Go's ``%g`` with its shortest precision
    decides at 6), else plain digits."""
    value = float32(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, point = _shortest_digits(abs(value))
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if len(digits) <= point:
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


class KeyProblem(YAMLError):
    """A key Kubernetes would not read as fleetflow does: what is wrong, where (a ruamel mark), how to fix it."""

    def __init__(self, message: str, mark: Any, hint: str) -> None:
        super().__init__(message)
        self.message, self.mark, self.hint = message, mark, hint


class DuplicateKey(KeyProblem):
    """Two keys of one mapping that are written two ways and become one text (``1`` and ``1.0``)."""


def kubernetes_key(tag: str | None, value: Any, node: Any) -> str:
    """The text sigs.k8s.io/yaml makes of a scalar key that fleetflow resolved (``tag``) to ``value``: a boolean,
    an integer, a float as above; ``!!binary`` its decoded bytes as text (go-yaml v2's ``decoder.scalar`` makes
    them a Go string); any other scalar its text. :class:`KeyProblem` for a null key, an integer outside int64 and
    a ``!!binary`` key that is not UTF-8 text (``node`` says where). The one function that says what a key becomes,
    for documents (:class:`KubernetesKeys`) and for YAML held in a value (:class:`ValueKeys`, ``fromYaml``)."""
    if tag == _BOOL:
        return "true" if value else "false"
    if tag == _INT:
        number = int(value)
        if number not in _INT64:
            raise KeyProblem(
                f"the number {number} is too large for a key (Kubernetes reads integer keys up to 2^63-1)",
                node.start_mark,
                f'quote the key ("{number}": ...) to keep it as written: Kubernetes refuses a larger integer key '
                "or reads it as a float, another key")
        return str(number)
    if tag == _FLOAT:
        text = go_float32_text(float(value))
        return _GO_SPECIALS.get(text, text)
    if tag == _NULL:
        raise KeyProblem(
            "a key that is null (null, ~ or nothing before ':'): Kubernetes refuses it", node.start_mark,
            'write the key as text, in quotes ("null": ...) if that is the name meant, or remove the entry')
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyProblem(
                "a !!binary key whose bytes are not UTF-8 text: Kubernetes makes it a key with U+FFFD in place of "
                "each byte that is not (encoding/json), another key", node.start_mark,
                "write the key as text; keep binary data in a value (a ConfigMap's binaryData)") from None
    return str(value)


def _spelling(node: Any) -> str:
    """How a key is written in the file (its text between its marks), shortened for a message."""
    start, end = node.start_mark, node.end_mark
    buffer = getattr(start, "buffer", None)
    text = buffer[start.pointer:end.pointer] if isinstance(buffer, str) and end is not None else ""
    text = " ".join(text.split()) or str(node.value)
    return text if len(text) <= 40 else text[:37] + "..."


def _named(node: Any, line: bool) -> str:
    """A key as a message names it: its spelling, its line if ``line``, and for a key written as an alias
    (``*name``) the anchor it repeats and that anchor's line."""
    notes = [f"line {node.start_mark.line + 1}"] if line else []
    if isinstance(node, AliasKey):
        notes.append(f"the alias of &{node.anchor} on line {node.anchored.start_mark.line + 1}")
    return _spelling(node) + (f" ({', '.join(notes)})" if notes else "")


class AliasKey(ScalarNode):
    """A key written as an alias of a scalar (``*name : value``): the anchored node's tag and value, at the place
    the alias is written (``anchored`` is the node it repeats). ruamel's composer hands back the anchored node
    itself, so a problem with the key (a duplicate, a null) was placed at the anchor, lines away."""

    __slots__ = ("anchored",)

    def __init__(self, tag: Any, value: str, anchored: ScalarNode, start_mark: Any, end_mark: Any,
                 anchor: str) -> None:
        super().__init__(tag, value, start_mark, end_mark, style=anchored.style, anchor=anchor)
        self.anchored = anchored


class AliasKeys(Composer):
    """ruamel.yaml's composer, with a key that is an alias of a scalar composed as an :class:`AliasKey`: where it
    is written. Any other alias stays the anchored node itself (a value's position is the anchor's, on both read
    paths)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if index is None and isinstance(parent, MappingNode) and self.parser.check_event(AliasEvent):
            event = self.parser.peek_event()
            node = super().compose_node(parent, index)
            if isinstance(node, ScalarNode):
                return AliasKey(node.ctag, node.value, node, event.start_mark, event.end_mark, event.anchor)
            return node
        return super().compose_node(parent, index)


class _TextKeys:
    """What :class:`KubernetesKeys` and :class:`ValueKeys` share: every key node made a plain text node (by
    :func:`kubernetes_key`) before the mapping is built, and a duplicate written two ways named with both
    spellings."""

    # what the ruamel constructor this is mixed into has (annotations only: its own are the ones used)
    constructed_objects: dict[Any, Any]
    allow_duplicate_keys: bool | None
    construct_object: Callable[..., Any]

    def _text_keys(self, pairs: list[Any]) -> None:
        for index, (key, value) in enumerate(pairs):
            text = self._as_text(key)
            if text is not key:
                pairs[index] = (text, value)

    def _as_text(self, key: Any) -> Any:
        """A key node as a plain text node: a boolean, integer or float key as Kubernetes writes it, any other
        scalar that is not plain text (a date, ``!!str 1``, ``!!binary``, a tag of the user's) by
        :func:`kubernetes_key` too, so that the duplicate check compares what later steps get. A key that is a
        list or a mapping is refused (in a document :func:`documents._complex_key` found it first)."""
        if not isinstance(key, ScalarNode):
            raise KeyProblem(
                "a key that is a list or a mapping", key.start_mark,
                "write each key as plain text: '?' before a key, or a key in [ ] or { }, makes it a list or a "
                "mapping")
        tag = key.ctag.trval
        if tag == _MERGE or (tag == _STR and not key.ctag.handle):
            return key  # text already, or a merge key ("<<")
        text = kubernetes_key(tag, self.construct_object(key, deep=True), key)
        if isinstance(key, AliasKey):
            return AliasKey(_STR, text, key.anchored, key.start_mark, key.end_mark, key.anchor)
        return ScalarNode(_STR, text, key.start_mark, key.end_mark, comment=key.comment)

    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        if key in mapping and not self.allow_duplicate_keys:
            first = next((k for k, _ in node.value if k is not key_node and self.constructed_objects.get(k) == key),
                         None)
            if first is not None and _spelling(first) != _spelling(key_node):
                raise DuplicateKey(
                    f'duplicate key: {_named(first, line=True)} and {_named(key_node, line=False)} both become '
                    f'the key "{key}"',
                    key_node.start_mark,
                    "each key may appear once per mapping, and a key that is a number, true/false or a date is "
                    'read as text (1.0 and 1 are both "1"): remove or rename the repeated one')
        return bool(super().check_mapping_key(node, key_node, mapping, key, value))  # type: ignore[misc]


class KubernetesKeys(_TextKeys, RoundTripConstructor):
    """ruamel.yaml's round-trip constructor, with every boolean, integer and float key made the text Kubernetes
    makes of it (:func:`kubernetes_key`) before the mapping is built: its duplicate check, and every later step,
    see the keys Kubernetes would see. A duplicate written two ways names both spellings."""

    # ruamel's round-trip constructor takes the mapping to fill (its own override carries the same ignore)
    def construct_mapping(self, node: Any, maptyp: Any, deep: bool = False) -> Any:  # type: ignore[override]
        self._text_keys(node.value)
        return super().construct_mapping(node, maptyp, deep)


class ValueKeys(_TextKeys, SafeConstructor):
    """ruamel.yaml's safe constructor with the keys of :class:`KubernetesKeys` and timestamps left as the text they
    are written as (:func:`_timestamp_as_written`): for YAML held in a value (a ConfigMap's, which Kalypso (Go)
    reads the same way, and the text a template hands to ``fromYaml``). Keys merged in by ``<<`` are made text
    too."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        self.flatten_mapping(node)  # the merged pairs are in node.value (and node.merge) from here on
        self._text_keys(node.value)
        if getattr(node, "merge", None):
            self._text_keys(node.merge)
        return super().construct_mapping(node, deep)


def _timestamp_as_written(constructor: Any, node: Any, values: Any = None) -> str:
    """A timestamp (``2024-01-01T10:00:00Z``) stays the text it is written as, as go-yaml v2 leaves one read into
    an ``interface{}`` ("for backward compatibility reasons we set it as a string", ``decode.go``) and as the quick
    path leaves a date: ruamel built a datetime, which ``to_plain`` wrote back as ``2024-01-01 10:00:00+00:00``
    (a bad-input hunt, 2026-11-28)."""
    return str(constructor.construct_scalar(node))


KubernetesKeys.add_constructor(_TIMESTAMP, _timestamp_as_written)
ValueKeys.add_constructor(_TIMESTAMP, _timestamp_as_written)


def where_in(mark: Any, of: str) -> str:
    """`` (line L, column C of <of>)``: where a mark (0-based) stands in YAML held in a value, for a message that
    names the value itself (a ConfigMap's data key, ``fromYaml``); "" without a mark."""
    return f" (line {mark.line + 1}, column {mark.column + 1} of {of})" if mark is not None else ""


def value_yaml() -> YAML:
    """The reader of YAML held in a value: a ConfigMap value that holds a map or a list, ``fromYaml``'s text. The
    keys and timestamps of the documents (:class:`ValueKeys`), aliases used as keys where they are written."""
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = ValueKeys
    yaml.Composer = AliasKeys
    return yaml
