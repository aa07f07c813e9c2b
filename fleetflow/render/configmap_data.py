"""The ``data`` of a ``v1`` ConfigMap a template renders: text, under keys a ConfigMap may have.

Kubernetes keeps a ConfigMap's data as ``map[string]string`` (k8s.io/api ``core/v1/types.go``, ``ConfigMap.Data``:
"Each key must consist of alphanumeric characters, '-', '_' or '.'"), and checks each key with ``IsConfigMapKey``
(k8s.io/apimachinery ``pkg/util/validation/validation.go``: ``[-._a-zA-Z0-9]+``, at most 253 characters, not ``.``
or ``..``, not starting with ``..``). A number, a boolean, a map or a list as a value is refused when the object is
decoded ("ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct
field ConfigMap.data of type string", BorisPolonsky/dify-helm#44; "... unmarshal object ...",
ansible-collections/kubernetes.core#682), a bad key by validation, on every cluster, whichever agent applies it.
The usual cause: ``{{ ConfigData | toYaml }}`` without ``stringify``, or an unquoted ``REPLICAS: 3``.

A null value is left alone: the decoder takes it ("ReadString: expects \\" or n", cloud-bulldozer/e2e-benchmarking
#231). A value only YAML 1.1 reads as a boolean (``yes``, ``on``) is left alone too: go-yaml v3 (Flux's kustomize)
reads it as text, v2 (Argo CD, through sigs.k8s.io/yaml) as a boolean; only what YAML 1.2's core schema reads as a
number or a boolean, which both read so, is refused.

Cheap on the render's hot path: a manifest without the text ``ConfigMap`` costs a substring test; a block-style
ConfigMap whose ``data`` lines are each ``KEY: value`` with a key a ConfigMap may have and a value that is quoted,
a block scalar or plain text no YAML reads as a number, a boolean or null, costs two regular expressions
(:data:`_CLEAN_DATA`). Anything else is read as YAML nodes (PyYAML's C composer), which costs about 50 µs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

__all__ = ["json_mistake", "yaml_mistake"]

_MAX_KEY = 253  # DNS1123SubdomainMaxLength
_KEY_CHARACTERS = re.compile(r"[-._a-zA-Z0-9]+")
_SHOWN = 3  # keys named besides the first

# What YAML 1.2's core schema reads as a boolean or a number (yaml.org/spec/1.2.2, 10.3.2 "Tag Resolution").
_CORE_NOT_TEXT = re.compile(
    r"true|True|TRUE|false|False|FALSE|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# Plain text that some YAML reads as something other than text (1.1 and 1.2, null too): more than is refused, so
# that what passes the quick look is text for every reader.
_MAYBE_NOT_TEXT = (
    r"(?:[yYnN]|[yY]es|YES|[nN]o|NO|[tT]rue|TRUE|[fF]alse|FALSE|[oO]n|ON|[oO]ff|OFF|~|[nN]ull|NULL"
    r"|[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?|[-+]?0[xXoObB][0-9a-fA-F_]+"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
)
_KIND = re.compile(r"^kind:[ \t]*(?:ConfigMap|\"ConfigMap\"|'ConfigMap')[ \t]*(?:#[^\n]*)?$|^kind:", re.M)
_DATA = re.compile(r"^data:[ \t]*(?:#[^\n]*)?\n((?:[ \t]*(?:#[^\n]*)?\n|[ \t]+[^\n]*\n)*)|^data:", re.M)
_END = r"[ \t]*(?:#[^\n]*)?\n"  # the rest of a line: spaces, a comment
_KEY = r"[-_a-zA-Z0-9][-._a-zA-Z0-9]{0,252}"  # a key a ConfigMap may have (not starting with '.', to be quick)
_ENTRY = (
    rf"(?:{_KEY}|\"{_KEY}\"|'{_KEY}'):[ \t]+(?:"  # a key, plain or quoted (toYaml quotes N, yes, on, ...)
    rf"(?:\"(?:[^\"\\\n]|\\[^\n])*\"|'(?:[^'\n]|'')*'){_END}"  # quoted on its line
    rf"|(?!{_MAYBE_NOT_TEXT}{_END})[^-?:,\[\]{{}}#&*!|>'\"%@`\s][^\n]*\n"  # plain text
    rf"|[|>][-+1-9]{{0,2}}{_END}(?:\1[ \t]+[^\n]*\n|[ \t]*\n)*+)"  # a block scalar: its lines indented more
)
_CLEAN_DATA = re.compile(rf"(?:{_END})*+([ \t]+){_ENTRY}(?:{_END}|\1{_ENTRY})*+")
"""``data``'s lines, each ``KEY: value`` at one indentation, the key one a ConfigMap may have and the value text
for every YAML reader; blank and comment lines between them."""


def yaml_mistake(doc: str) -> str | None:
    """What is wrong with the data of the ``v1`` ConfigMaps in ``doc`` (YAML, one manifest as rendered, known to
    parse); None when nothing is. The keys are named, not the lines of what it renders: those differ between
    assignments with more or fewer keys, and one mistake of a template is one problem (``same_problem_once``)."""
    if "ConfigMap" not in doc:
        return None
    if "\n---" not in doc and not doc.startswith("---"):  # one document: the quick look, when it can tell
        kind = _KIND.search(doc)
        if kind is not None and kind.end() - kind.start() == 5:  # a block mapping whose kind is not ConfigMap
            return None
        if kind is not None:
            data = _DATA.search(doc)
            if data is None:
                return None
            block = data.group(1)
            if block is not None and (not block.strip() or _CLEAN_DATA.fullmatch(block)):
                return None
    try:
        nodes = list(yaml.compose_all(doc, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:  # not YAML as libyaml builds it (the syntax check said it parses): the agent's to say
        return None
    for node in nodes:
        if isinstance(node, yaml.MappingNode):
            found = _node_mistake(node, doc)
            if found is not None:
                return found
    return None


def json_mistake(obj: Any) -> str | None:
    """What is wrong with the data of ``obj`` (one manifest as ``json.loads`` read it) when it is a ``v1``
    ConfigMap; None when nothing is, or it is no ConfigMap."""
    if type(obj) is not dict or obj.get("kind") != "ConfigMap" or obj.get("apiVersion") != "v1":
        return None
    data = obj.get("data")
    if data is None:
        return None
    if not isinstance(data, dict):
        return f"data is {_kind_of(data)}, not a mapping of keys to text"
    return _say([key for key in data if _key_problem(key)],
                [(key, _kind_of(value)) for key, value in data.items()
                 if value is not None and not isinstance(value, str)])


def _node_mistake(node: yaml.MappingNode, doc: str) -> str | None:
    fields = {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
    if not (_is_text(fields.get("kind"), "ConfigMap") and _is_text(fields.get("apiVersion"), "v1")):
        return None
    data = fields.get("data")
    if data is None or (isinstance(data, yaml.ScalarNode) and not data.style
                        and data.value in ("", "~", "null", "Null", "NULL")):
        return None
    if not isinstance(data, yaml.MappingNode):
        return f"data is {_node_kind(data, doc) or 'text'}, not a mapping of keys to text"
    bad_keys: list[str] = []
    bad_values: list[tuple[str, str]] = []
    for key, value in data.value:
        text = key.value if isinstance(key, yaml.ScalarNode) else "?"
        if not isinstance(key, yaml.ScalarNode) or _key_problem(text):
            bad_keys.append(text)
        what = _node_kind(value, doc)
        if what is not None:
            bad_values.append((text, what))
    return _say(bad_keys, bad_values)


def _is_text(node: Any, text: str) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == text


_TAGGED = {"tag:yaml.org,2002:int": "the number", "tag:yaml.org,2002:float": "the number",
           "tag:yaml.org,2002:bool": "the boolean"}  # an explicit tag that makes a scalar no text, whatever its style


def _node_kind(node: Any, doc: str) -> str | None:
    """What ``node`` (of ``doc``) is when YAML 1.2's core schema reads it as no text and no null ("a map", "the
    number 3"); None when it is text or null. A scalar with an explicit tag is what its tag says, whatever its text
    and quotes: ``!!str 3`` is text, ``!!int "4"`` a number (go-yaml resolves both by the tag, as libyaml's
    composer gives it)."""
    if isinstance(node, yaml.MappingNode):
        return "a map"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if doc.startswith("!", node.start_mark.index):  # an explicit tag: the scalar's first character is it
        named = _TAGGED.get(node.tag)
        return None if named is None else f"{named} {node.value}"
    if node.style or not _CORE_NOT_TEXT.fullmatch(node.value):  # plain: "" from the C composer, None from Python
        return None
    return f"the boolean {node.value}" if node.value.lower() in ("true", "false") else f"the number {node.value}"


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return "text"


def _key_problem(key: str) -> str | None:
    """Why ``key`` is not a key a ConfigMap may have (apimachinery ``IsConfigMapKey``), None if it is one."""
    if len(key.encode()) > _MAX_KEY:
        return f"is longer than {_MAX_KEY} characters"
    if not _KEY_CHARACTERS.fullmatch(key):
        return "holds characters other than letters, digits, '-', '_' and '.'"
    if key in (".", "..") or key.startswith(".."):
        return "is '.' or '..' or starts with '..'"
    return None


def _say(keys: list[str], values: list[tuple[str, str]]) -> str | None:
    """The words for the keys and values a ConfigMap's data may not have: the first of each, and how many more."""
    parts: list[str] = []
    if keys:
        more = f" (and {len(keys) - 1} more: {_names(keys[1:])})" if len(keys) > 1 else ""
        parts.append(f"data key {keys[0]!r} is not a key a ConfigMap may have: it {_key_problem(keys[0])}{more}")
    if values:
        key, what = values[0]
        more = f" (and {len(values) - 1} more: {_names(k for k, _ in values[1:])})" if len(values) > 1 else ""
        parts.append(f"data key {key!r} holds {what}, not text{more}")
    return "; ".join(parts) or None


def _names(keys: Iterable[str]) -> str:
    listed = list(keys)
    shown = ", ".join(repr(k) for k in listed[:_SHOWN])
    return shown + (", ..." if len(listed) > _SHOWN else "")
