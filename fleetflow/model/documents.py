"""Reading resource documents from a directory tree.

A tree (the ``main`` checkout, an environment branch checkout, a workload repo) holds YAML files anywhere; each
holds one or more Kubernetes-style documents. This module turns them into :class:`Document` objects: plain data,
the file/line/column where each document starts, and, on demand, the file/line/column of every key, so that later
stages can point at the exact place a value came from.

Two parsers, one meaning (YAML 1.2 core schema, as ruamel.yaml reads it; see docs/yaml.md):

* the **quick path**: libyaml's C parser (PyYAML's ``CParser``) with YAML 1.2 resolution rules and a small
  constructor that builds plain data directly. It covers what control planes are written in: string keys, plain
  and quoted scalars, block and flow collections, anchors. Anything else (a ``%YAML`` directive, merge keys,
  timestamps with a time, non-string keys, duplicate keys, tags beyond the core ones, a document that is not a
  mapping, a syntax error, a tab or a byte-order mark inside the file) sends the file to
* the **careful path**: ruamel.yaml's round-trip parser, which knows where every key is and words every error
  with its line and column. A key that is a boolean or a number becomes the text Kubernetes makes of it (``1.0``
  is ``"1"``, :mod:`fleetflow.model.yaml_keys`), and duplicates are judged on that text. Positions of a file read
  on the quick path come from the same careful parse, done the first time something asks where a value is (an
  error message, explain), for that file only.

Hidden folders are skipped except ``.environments/`` (where Kalypso keeps environments); ``.fleetflowignore``
(gitignore syntax) at the root of the tree excludes more. Errors are collected, never raised one at a time.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, cast

import pathspec
import yaml
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, StringMark, YAMLError
from ruamel.yaml.nodes import ScalarNode as RuamelScalar
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from yaml._yaml import CParser
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fleetflow import __version__
from fleetflow.errors import Location, Problem, Problems, shown_path, value_kind
from fleetflow.linear_regex import Re2Error, RegexError, compile_linear
from fleetflow.model.yaml_keys import AliasKeys, KeyProblem, KubernetesKeys

FLEETFLOW_API = "fleetflow.dev/v1alpha1"
KALYPSO_API = "scheduler.kalypso.io/v1alpha1"
ACCEPTED_APIS = (FLEETFLOW_API, KALYPSO_API)
# Kalypso's kinds that its controllers make from the others (kalypso-scheduler controllers/workload_controller.go
# makes a DeploymentTarget per Workload deploymentTargets entry, named <workload>-<target>;
# schedulingpolicy_controller.go an Assignment per target and cluster type a policy selects;
# assignment_controller.go an AssignmentPackage of its rendered manifests): a copy of one (kubectl get -o yaml) is
# no input here, and the "list it in .fleetflowignore" of an unknown kind left a hand-written DeploymentTarget out
# without a word. Kind -> the hint.
KALYPSO_OUTPUT_KINDS = {
    "DeploymentTarget": (
        "Kalypso makes a DeploymentTarget from each entry of a Workload's spec.deploymentTargets; fleetflow reads "
        "those entries itself: write the target there (name, environment, manifests, labels), in its Workload, "
        "and delete this document"),
    "Assignment": (
        "Kalypso makes an Assignment for each deployment target and cluster type a SchedulingPolicy selects; "
        "fleetflow works the assignments out from the SchedulingPolicies on every render: delete this document"),
    "AssignmentPackage": (
        "Kalypso's AssignmentPackage holds an Assignment's rendered manifests; fleetflow renders them into the "
        "GitOps repo on every render: delete this document"),
}
IGNORE_FILE = ".fleetflowignore"
CACHE_FORMAT = f"fleetflow {__version__} documents 7"  # 3: a tab is read the careful way; 4: MAX_DEPTH; 5: keys
# that are numbers or booleans are the text Kubernetes makes of them (yaml_keys.py), not Python's; 6: timestamps stay
# their text, !!binary is its decoded text, !!set a mapping of nulls; 7: a !!binary key is its decoded text too
VISIBLE_HIDDEN_DIRS = frozenset({".environments"})
YAML_SUFFIXES = (".yaml", ".yml")

# The quick path is on unless a test turns it off to compare both paths.
_quick_enabled = True


Position = tuple[int, int]  # 1-based line, column
PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Positions:
    """Where the parts of one document stand in its file: flat maps (path → line/column), no parser types."""

    values: dict[PathKey, Position] = field(default_factory=dict)
    keys: dict[PathKey, Position] = field(default_factory=dict)
    block_scalars: frozenset[PathKey] = frozenset()


_NO_POSITIONS = Positions()


class Source:
    """One file's text, kept so that the positions of its documents can be worked out when first asked for. The
    content may be a function that reads it: a file of a git tree that the parse cache held was not read, and is
    read only if a message needs a position in it (:func:`read_tree` on :class:`GitFiles`)."""

    __slots__ = ("_content", "_lines", "_positions", "display")

    def __init__(self, display: str, content: str | bytes | Callable[[], bytes]) -> None:
        self.display = display
        self._content = content
        self._positions: list[Positions | None] | None = None
        self._lines: list[str] | None = None

    def line(self, number: int) -> str:
        """The text of line ``number`` (1-based) of the file, "" past its end; read when first asked for (a message
        that quotes what a value is written as)."""
        if self._lines is None:
            content = self._read()
            text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
            self._lines = text.split("\n")
        return self._lines[number - 1] if 0 < number <= len(self._lines) else ""

    def positions(self, index: int, start: Location) -> Positions:
        """Positions of the ``index``-th document of the file (counting empty ones), which starts at ``start``."""
        if self._positions is None:
            self._positions = _careful_positions(self._read())
        found = self._positions[index] if index < len(self._positions) else None
        return found if found is not None else _NO_POSITIONS

    def _read(self) -> str | bytes:
        """The file's content, read once: a message may need both its positions and a line of it."""
        if callable(self._content):
            self._content = self._content()
        return self._content

    def known(self, positions: list[Positions | None]) -> None:
        self._positions = positions


@dataclass
class Document:
    """One YAML document: its plain data, where it starts, and (through its :class:`Source`) where each of its
    parts stands in its file."""

    body: dict[str, Any]
    location: Location
    source: Source | None = field(default=None, repr=False, compare=False)
    index: int = field(default=0, repr=False, compare=False)  # among the file's documents, empty ones included

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.body.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        name = self.metadata.get("name")
        return name if isinstance(name, str) else ""

    @property
    def positions(self) -> Positions:
        if self.source is None:
            return _NO_POSITIONS
        return self.source.positions(self.index, self.location)

    def where(self, *path: str | int) -> Location:
        """Location of the deepest existing key on ``path`` (the value's line when the value is a scalar)."""
        values = self.positions.values
        for end in range(len(path), 0, -1):
            found = values.get(path[:end])
            if found is not None:
                return Location(self.location.file, found[0], found[1])
        return self.location

    def written(self, *path: str | int) -> str | None:
        """The plain scalar at ``path`` as its file writes it (``1.10``, ``0777``, ``True``), when YAML read it as a
        number or a boolean; None otherwise. A hint that says how to quote such a value quotes what was written:
        ``branch: 1.10`` is the number 1.1, and ``branch: "1.1"`` would be another branch."""
        value: Any = self.body
        for part in path:
            try:
                value = value[part]
            except (KeyError, IndexError, TypeError):  # not there (pydantic's path of a model it built, not the file)
                return None
        found = self.positions.values.get(path)
        if found is None or self.source is None or not isinstance(value, bool | int | float):
            return None
        match = _PLAIN_TOKEN.match(self.source.line(found[0]), found[1] - 1)
        if match is None:
            return None
        token = match.group()
        read = _plain_scalar(token)
        same = type(read) is type(value) and (
            read == value or (isinstance(read, float) and math.isnan(read) and math.isnan(value)))
        return token if same else None

    def is_block_scalar(self, *path: str | int) -> bool:
        """True when the value at ``path`` is written as a ``|`` or ``>`` block (its text starts a line later)."""
        return path in self.positions.block_scalars

    def key_locations(self, *path: str) -> Mapping[tuple[str, ...], Location]:
        """Location of every key below ``path`` (used for ConfigMap data provenance), worked out on first use."""
        return _KeyLocations(self, path)


class _KeyLocations(Mapping[tuple[str, ...], Location]):
    """:meth:`Document.key_locations`, worked out on first use (composition asks only to explain a value)."""

    def __init__(self, doc: Document, path: tuple[str, ...]) -> None:
        self._doc = doc
        self._path = path
        self._found: dict[tuple[str, ...], Location] | None = None

    @property
    def _all(self) -> dict[tuple[str, ...], Location]:
        if self._found is None:
            doc, path, depth = self._doc, self._path, len(self._path)
            self._found = {
                tuple(str(p) for p in key[depth:]): Location(doc.location.file, line, col)
                for key, (line, col) in doc.positions.keys.items()
                if len(key) > depth and key[:depth] == path and all(isinstance(p, str) for p in key[depth:])
            }
        return self._found

    def __getitem__(self, key: tuple[str, ...]) -> Location:
        return self._all[key]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


# --- the quick path: libyaml, YAML 1.2 core schema, plain data ---------------------------------------------

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


class _Resolver12(yaml.resolver.BaseResolver):
    """Plain scalars resolved as ruamel.yaml resolves them for YAML 1.2 (its default): ``yes``/``no``/``on``/
    ``off`` stay strings, ``0777`` is the decimal 777 and ``0o777`` the octal one, ``1e3`` is a float, ``1:20``
    a string. The expressions and first characters are ruamel.yaml's (``ruamel/yaml/resolver.py``, version 1.2)."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 (PyYAML's class-level registry)

    # PyYAML's resolve, less its path resolvers (none are registered): called for every node of every file.
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            if implicit[0]:
                for tag, expression in self.yaml_implicit_resolvers.get(value[:1], ()):
                    if expression.match(value):
                        return str(tag)
            return _STR
        return _SEQ if kind is SequenceNode else _MAP


for _tag, _expression, _first in (
    (_BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        _FLOAT,
        r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    (
        _INT,
        r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""",
        "-+0123456789",
    ),
    (_MERGE, r"^(?:<<)$", "<"),
    (_NULL, r"^(?: ~ |null|Null|NULL | )$", ["~", "n", "N", ""]),
    (
        _TIMESTAMP,
        r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
        "0123456789",
    ),
):
    _Resolver12.add_implicit_resolver(_tag, re.compile(_expression, re.X), list(_first))


class _Loader(CParser, _Resolver12):
    """libyaml's parser and composer (C) with YAML 1.2 resolution. Construction is :func:`_plain_of`."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        _Resolver12.__init__(self)


class _Careful(Exception):
    """The quick path does not handle this file the way the careful path would: read it carefully."""


def _int(text: str) -> int:
    digits = text.replace("_", "")
    sign = -1 if digits[:1] == "-" else 1
    digits = digits.lstrip("+-")
    if digits[:2] == "0b":
        return sign * int(digits[2:], 2)
    if digits[:2] == "0o":
        return sign * int(digits[2:], 8)
    if digits[:2] == "0x":
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)  # YAML 1.2: a leading 0 does not make an octal


def _float(text: str) -> float:
    value = text.replace("_", "").lower()
    if value in (".inf", "+.inf"):
        return math.inf
    if value == "-.inf":
        return -math.inf
    if value == ".nan":
        return math.nan
    return float(value)


def _scalar(node: ScalarNode) -> Any:
    tag, text = node.tag, node.value
    if tag == _STR:
        return text
    if tag == _INT:
        return _int(text)
    if tag == _BOOL:
        if text in ("true", "True", "TRUE"):
            return True
        if text in ("false", "False", "FALSE"):
            return False
    elif tag == _FLOAT:
        return _float(text)
    elif tag == _NULL:
        if text in ("", "~", "null", "Null", "NULL"):
            return None
    elif tag == _MERGE:
        return text  # "<<" as a value is a string; as a key, _plain_of leaves it to the careful path
    elif tag == _TIMESTAMP and _DATE.fullmatch(text):
        return text  # a date stays its text, as on the careful path (yaml_keys._timestamp_as_written); a date-time
        # goes the careful way
    raise _Careful(tag)


_PLAIN_TOKEN = re.compile(r"[-+.0-9A-Za-z_]+")  # every plain number or boolean (0x1F, -1.5e+3, .inf, True)


def _plain_scalar(text: str) -> Any:
    """What YAML 1.2 reads the plain scalar ``text`` as (a timestamp with a time: None, as never a number)."""
    tag = _Resolver12().resolve(ScalarNode, text, (True, False))
    try:
        return _scalar(ScalarNode(tag, text))
    except _Careful:
        return None


def _plain_of(node: Node) -> Any:
    """Plain data of a composed node. An alias is built again where it is used (no shared objects)."""
    if node.__class__ is ScalarNode:
        return _scalar(node)
    if node.__class__ is MappingNode:
        if node.tag != _MAP:
            raise _Careful(node.tag)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode or key_node.tag != _STR:
                raise _Careful("key")  # merge keys, non-string keys
            key = key_node.value
            if key in out:
                raise _Careful("duplicate key")  # the careful path words the error
            out[key] = _plain_of(value_node)
        return out
    if node.__class__ is SequenceNode and node.tag == _SEQ:
        return [_plain_of(item) for item in node.value]
    raise _Careful(node.tag)


def _quick_nodes(text: str) -> Iterator[Node]:
    """The root node of each document, one at a time (holding every node of a large file at once would wake
    the garbage collector again and again)."""
    loader = _Loader(text)
    while loader.check_node():
        yield cast(Node, loader.get_node())  # not None after check_node()


def _quick_may_read(text: str) -> None:
    """:class:`_Careful` for a file libyaml would read otherwise than ruamel.yaml, whatever else it holds."""
    if text.startswith("%") or "\n%" in text:
        raise _Careful("directive")  # %YAML 1.1 changes what scalars mean
    if "\t" in text or text.find("\ufeff", 1) != -1:
        # libyaml reads a tab between a key and its value, which ruamel refuses, and counts columns after a
        # byte-order mark inside the file one fewer (tests/test_yaml_reading.py, the mutated files)
        raise _Careful("tab or byte-order mark")


def _quick_parse(text: str, source: Source) -> list[Document]:
    """Every document of ``text``, or :class:`_Careful` when the careful path must read it."""
    _quick_may_read(text)
    documents = []
    display = source.display
    may_alias = _may_alias(text)
    try:
        for index, node in enumerate(_quick_nodes(text)):
            if node.__class__ is ScalarNode and node.tag == _NULL:
                continue  # empty document ("---" at the end of a file)
            if node.__class__ is not MappingNode:
                raise _Careful("not a mapping")
            if may_alias and _alias_trouble(node, _node_children, display) is not None:
                raise _Careful("aliases")  # the careful path says what is wrong
            start = Location(display, node.start_mark.line + 1, node.start_mark.column + 1)
            documents.append(Document(_plain_of(node), start, source, index))
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise _Careful("syntax or value") from exc
    return documents


def _node_positions(
    node: Node,
    prefix: PathKey,
    values: dict[PathKey, Position],
    keys: dict[PathKey, Position],
    blocks: set[PathKey],
    text: str,
) -> None:
    """What :func:`_ruamel_positions` finds, from libyaml's nodes: the same lines and columns. An empty value stands
    just after its key's ':' (or its item's '-') on both paths; one libyaml places elsewhere (in a flow mapping, at
    the next token) sends the file to ruamel."""
    if node.__class__ is MappingNode:
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode or key_node.tag != _STR:
                raise _Careful("key")  # a number or boolean key is the text Kubernetes makes of it: ruamel's path
            path = (*prefix, key_node.value)
            mark = key_node.start_mark
            keys[path] = (mark.line + 1, mark.column + 1)
            if value_node.__class__ is ScalarNode:
                if _empty(value_node) and _after_colon(text, key_node.end_mark.index) != value_node.start_mark.index:
                    raise _Careful("empty value")
                _scalar_position(value_node, path, values, blocks)
            else:
                values[path] = keys[path]
                _node_positions(value_node, path, values, keys, blocks, text)
    elif node.__class__ is SequenceNode:
        for index, item in enumerate(node.value):
            path = (*prefix, index)
            if item.__class__ is ScalarNode:
                at = item.start_mark.index
                if _empty(item) and text[at - 1:at] != "-":
                    raise _Careful("empty item")
                _scalar_position(item, path, values, blocks)
            else:
                mark = item.start_mark
                values[path] = (mark.line + 1, mark.column + 1)
                _node_positions(item, path, values, keys, blocks, text)


def _empty(node: ScalarNode) -> bool:
    """Whether a scalar is written as nothing at all (plain style is "" in libyaml's nodes)."""
    return node.value == "" and not node.style


def _scalar_position(node: ScalarNode, path: PathKey, values: dict[PathKey, Position], blocks: set[PathKey]) -> None:
    mark = node.start_mark
    values[path] = (mark.line + 1, mark.column + 1)
    if node.style in ("|", ">"):
        blocks.add(path)


# what may be a key written as an alias: "*name :" (block or flow), "? *name"; text in quotes may match too (then
# ruamel places the keys, as libyaml would)
_ALIAS_KEY = re.compile(r"\*[^\s,\[\]{}]+[ \t]*:(?:[ \t\r\n]|$)|\?[ \t]+\*", re.MULTILINE)


def _quick_positions(text: str) -> list[Positions | None]:
    _quick_may_read(text)
    if _may_alias(text) and _ALIAS_KEY.search(text):
        raise _Careful("a key written as an alias")  # libyaml places it at its anchor, ruamel (AliasKeys) where the
        # alias is written
    found: list[Positions | None] = []
    for node in _quick_nodes(text):
        values: dict[PathKey, Position] = {}
        keys: dict[PathKey, Position] = {}
        blocks: set[PathKey] = set()
        _node_positions(node, (), values, keys, blocks, text)
        found.append(Positions(values, keys, frozenset(blocks)))
    return found


def _careful_positions(content: str | bytes) -> list[Positions | None]:
    """Positions of every document of a file read on the quick path (libyaml's marks, or ruamel's)."""
    text = content.decode("utf-8") if isinstance(content, bytes) else content
    if _quick_enabled:
        try:
            return _quick_positions(text)
        except (_Careful, yaml.YAMLError):
            pass
    loaded = ruamel_documents(_yaml(), text, "", Problems())  # read cleanly before: no problem expected
    return [] if loaded is None else [_ruamel_positions(node) for node in loaded]


# --- the careful path: ruamel.yaml round trip -----------------------------------------------------------------


def _ruamel_positions(node: Any) -> Positions | None:
    if not isinstance(node, CommentedMap):
        return None
    values: dict[PathKey, Position] = {}
    keys: dict[PathKey, Position] = {}
    blocks: set[PathKey] = set()
    _positions(node, (), values, keys, blocks)
    return Positions(values, keys, frozenset(blocks))


def _positions(
    node: Any, prefix: PathKey, values: dict[PathKey, Position], keys: dict[PathKey, Position], blocks: set[PathKey]
) -> None:
    # ruamel keeps no position for what a tag it does not know holds (``!x [1, 2]``, ``!!omap``: lc.data is None, or
    # an item's position is): such values have none here (a TypeError until 2026-11-28), their documents read
    if isinstance(node, CommentedMap):
        placed = node.lc.data or {}
        for key in node:
            if key not in placed:
                continue  # merged in by "<<": it stands where its own mapping is
            path = (*prefix, str(key))
            child = node[key]
            kline, kcol = node.lc.key(key)
            keys[path] = (kline + 1, kcol + 1)
            if isinstance(child, CommentedMap | CommentedSeq):
                values[path] = (kline + 1, kcol + 1)
                _positions(child, path, values, keys, blocks)
            else:
                vline, vcol = node.lc.value(key)
                values[path] = (vline + 1, vcol + 1)
                if isinstance(child, LiteralScalarString | FoldedScalarString):
                    blocks.add(path)
    elif isinstance(node, CommentedSeq):
        placed_items = node.lc.data or []
        for index, child in enumerate(node):
            path = (*prefix, index)
            at = placed_items[index] if index < len(placed_items) else None
            if not at:
                continue
            line, col = at[0], at[1]
            values[path] = (line + 1, col + 1)
            if isinstance(child, CommentedMap | CommentedSeq):
                _positions(child, path, values, keys, blocks)
            elif isinstance(child, LiteralScalarString | FoldedScalarString):
                blocks.add(path)


def to_plain(value: Any) -> Any:
    """ruamel's round-trip types → plain dict/list/str/int/float/bool/None (templates get plain data only)."""
    if isinstance(value, Mapping):  # keys are text already (yaml_keys.KubernetesKeys made them so)
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):  # !!binary: the decoded text, as go-yaml v2 gives it (base64 again if not UTF-8)
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    if isinstance(value, AbstractSet):  # !!set: the mapping of null values YAML defines it as, not a Python repr
        return {str(k): None for k in value}
    # other YAML types: their text form (timestamps are their text already, yaml_keys._timestamp_as_written)
    return str(value)


def _after_colon(text: str, at: int) -> int | None:
    """Where the empty value of a key that ends at index ``at`` of ``text`` stands: just after the ':' that follows
    the key on its line (spaces or tabs between); None when no ':' follows it there (an explicit ``? key``)."""
    line_end = text.find("\n", at)
    rest = text[at:line_end if line_end != -1 else len(text)]
    colon = len(rest) - len(rest.lstrip(" \t"))
    return at + colon + 1 if rest[colon:colon + 1] == ":" else None


class _PlacedEmpties(KubernetesKeys):
    """:class:`KubernetesKeys`, with an empty value (``repo:`` and nothing after it) placed just after its key's
    ':', where libyaml places it and where the value would be written. ruamel places it at the next token: a message
    about ``repo:`` on line 8 named line 9, and at the end of a file the line after the last (a bad-input hunt,
    2026-11-28). :func:`_node_positions` takes the same place on the quick path."""

    def construct_mapping(self, node: Any, maptyp: Any, deep: bool = False) -> Any:  # type: ignore[override]
        for key, value in node.value:
            if (value.__class__ is RuamelScalar and value.value == "" and value.style is None
                    and value.anchor is None and not value.ctag.handle):
                mark = key.end_mark
                buffer = getattr(mark, "buffer", None)
                after = _after_colon(buffer, mark.pointer) if isinstance(buffer, str) else None
                if after is not None:
                    moved = after - mark.pointer
                    value.start_mark = value.end_mark = StringMark(
                        mark.name, mark.index + moved, mark.line, mark.column + moved, buffer, after)
        return super().construct_mapping(node, maptyp, deep)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Constructor = _PlacedEmpties  # keys that are numbers or booleans: the text Kubernetes makes of them
    # (yaml_keys.KubernetesKeys); an empty value just after its key's ':'
    yaml.Composer = AliasKeys  # a key written as an alias stands where the alias is, not at its anchor
    yaml.allow_duplicate_keys = False
    return yaml


_NOT_YAML = (YAMLError, ValueError, IndexError, TypeError, KeyError)  # what ruamel raises for a file that does not
# read: a date such as 2024-02-30 raises ValueError, ruamel's int of "-_" IndexError, a key it cannot hash (a list
# or a mapping holding one) TypeError, when _complex_key could not find it first, "!!bool maybe" KeyError


def _complex_key_problem(where: Location) -> Problem:
    return Problem("invalid YAML: a key that is a list or a mapping", where,
                   "write each key as plain text: '?' before a key, or a key in [ ] or { }, makes it a list or a "
                   "mapping")


def _complex_key(text: str, display: str) -> Problem | None:
    """The first key that is a list or a mapping (``? [a]: 1``, ``{a: 1}: 2``), by libyaml's marks, or the first
    alias that makes a document infinite or huge (:func:`_alias_trouble`), looking document by document as ruamel
    builds them; None when there is none before the first document libyaml cannot read (ruamel then says why)."""
    may_alias = _may_alias(text)
    try:
        for root in _quick_nodes(text):
            trouble = _alias_trouble(root, _node_children, display) if may_alias else None
            if trouble is not None:
                return trouble
            found: list[Position] = []
            seen: set[int] = set()
            stack: list[Node] = [root]
            while stack:
                node = stack.pop()
                if id(node) in seen:
                    continue  # an alias: its node is looked at once
                seen.add(id(node))
                if node.__class__ is MappingNode:
                    for key_node, value_node in node.value:
                        if key_node.__class__ is not ScalarNode:
                            found.append((key_node.start_mark.line + 1, key_node.start_mark.column + 1))
                        stack.append(value_node)
                elif node.__class__ is SequenceNode:
                    stack.extend(node.value)
            if found:
                return _complex_key_problem(Location(display, *min(found)))
    except yaml.YAMLError:
        pass
    return None


ALIAS_GROWTH = 100_000
"""How many values aliases may add to one document. An alias (``*a``) stands for the whole node it names, and
every later step gets plain data, with each alias built out: ten nested lists of ten aliases each (the "billion
laughs") are a few hundred bytes of YAML and ten billion values. Real files repeat a block or a few: room enough."""


def _may_alias(text: str) -> bool:
    """Whether ``text`` may hold an alias at all (an anchor ``&`` and an alias ``*``): most files hold neither, and
    then nothing is walked."""
    return "&" in text and "*" in text


def _node_children(node: Any) -> list[Any] | None:
    """The nodes directly inside a composed node (keys and values of a mapping), None for a scalar."""
    if node.__class__ is MappingNode:
        return [n for pair in node.value for n in pair]
    if node.__class__ is SequenceNode:
        return list(node.value)
    return None


def _loaded_children(value: Any) -> list[Any] | None:
    """The values directly inside a value ruamel.yaml loaded (keys and values of a mapping), None for a scalar."""
    if isinstance(value, Mapping):
        return [v for pair in value.items() for v in pair]
    if isinstance(value, list):
        return list(value)
    return None


def _alias_trouble(root: Any, children: Callable[[Any], list[Any] | None], display: str) -> Problem | None:
    """What is wrong with the aliases of one document, as composed (``children`` of a node) or loaded: an alias
    inside the node it names (the document would be infinite: YAML 1.2.2 allows it, no later step could walk it),
    or aliases adding more than :data:`ALIAS_GROWTH` values once built out. Each mapping and list is walked once
    (its size kept by identity; not a scalar's: loaded ones are shared objects, ``True`` is one), without
    recursion."""
    sizes: dict[int, int] = {}  # mappings and lists by identity; a scalar counts one
    walking: set[int] = set()  # the mappings and lists on the path to the one looked at
    distinct = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            sizes[key] = 1 + sum(sizes.get(id(child), 1) for child in children(node) or ())
            walking.discard(key)
            continue
        inside = children(node)
        if inside is None:
            distinct += 1
            continue
        if key in sizes:
            continue  # an alias of a node already walked
        if key in walking:
            return Problem(
                "invalid YAML: an alias inside the node it names (the document would be endless)",
                _start(node, display),
                "an alias (*name) must name a node it is not part of: write the value out, or name another node")
        distinct += 1
        walking.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(inside))
    total = sizes.get(id(root), 1)
    if total - distinct > ALIAS_GROWTH:
        return Problem(
            f"invalid YAML: its aliases build the document out to {total:,} values from {distinct:,} "
            f"(more than {ALIAS_GROWTH:,} added)",
            _start(root, display),
            "write the repeated values out, or repeat them with fewer aliases (an alias of a node that holds "
            "aliases multiplies them)")
    return None


def _start(node: Any, display: str) -> Location:
    """Where a composed node (libyaml's marks) or a loaded value (ruamel's ``lc``) starts, as far as it is known."""
    mark = getattr(node, "start_mark", None)
    if mark is not None:
        return Location(display, mark.line + 1, mark.column + 1)
    lc = getattr(node, "lc", None)
    if lc is not None and lc.line is not None:
        return Location(display, lc.line + 1, lc.col + 1)
    return Location(display)


def ruamel_documents(yaml: YAML, text: str, display: str, problems: Problems) -> list[Any] | None:
    """Every document of ``text`` as ``yaml`` (ruamel.yaml) loads it, or None with what is wrong (line, column, how
    to fix it) added to ``problems``. A key that is a list or a mapping is refused: ruamel turns one into a key
    nothing can name (its Python text) or, with a list inside, raises TypeError. So are aliases that would make a
    document endless or huge once built out (:func:`_alias_trouble`)."""
    trouble = _complex_key(text, display)
    if trouble is not None:
        problems.extend([trouble])
        return None
    try:
        with warnings.catch_warnings():
            # an anchor defined again names the later node from there on (YAML 1.2.2, 3.2.2.2 "Anchors and
            # Aliases"), as ruamel reads it; its warning (ruamel/yaml/composer.py) would reach the user's terminal
            # as a Python warning naming "<unicode string>"
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            loaded = list(yaml.load_all(text))
    except _NOT_YAML as exc:
        problems.extend([_yaml_problem(exc, display, text)])
        return None
    if _may_alias(text):  # what libyaml could not compose, ruamel may have read: its aliases checked as loaded
        for value in loaded:
            trouble = _alias_trouble(value, _loaded_children, display)
            if trouble is not None:
                problems.extend([trouble])
                return None
    escape = _SURROGATE_ESCAPE.search(text)
    if escape is not None and any(_holds_surrogate(value) for value in loaded):
        line = text.count("\n", 0, escape.start()) + 1
        column = escape.start() - (text.rfind("\n", 0, escape.start()) + 1) + 1
        problems.add(f"invalid YAML: the escape {escape[0]} is half of a UTF-16 surrogate pair, not a character",
                     Location(display, line, column),
                     "write the character itself, or its code point as \\U followed by 8 hex digits (\\U0001F600); "
                     "UTF-8 cannot hold a surrogate, and libyaml and go-yaml refuse the escape")
        return None
    return loaded


# a \u or \U escape of a UTF-16 surrogate (D800-DFFF): ruamel.yaml reads it into a lone surrogate, which no UTF-8
# text can hold (every later write or hash of it was a UnicodeEncodeError traceback until 2026-11-28); libyaml and
# go-yaml (what Kubernetes reads YAML with) refuse it as "found invalid Unicode character escape code"
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _holds_surrogate(value: Any) -> bool:
    """Whether a loaded value holds a string (or a key) with a UTF-16 surrogate in it (a loop, not a recursion)."""
    level: list[Any] = [value]
    while level:
        below: list[Any] = []
        for item in level:
            if isinstance(item, str):
                if _SURROGATE.search(item):
                    return True
            else:
                below.extend(_loaded_children(item) or ())
        level = below
    return False


def ruamel_document(yaml: YAML, text: str, display: str, problems: Problems) -> Any:
    """The one document of ``text`` (a config file, a schema's text) as :func:`ruamel_documents` loads it; None when
    the text is empty, or when it does not read or holds more than one document (said in ``problems``)."""
    loaded = ruamel_documents(yaml, text, display, problems)
    if loaded is not None and len(loaded) > 1:
        problems.add("more than one YAML document", Location(display), "keep one: remove the '---' lines")
        return None
    return loaded[0] if loaded else None


def _yaml_problem(exc: Exception, display: str, text: str = "") -> Problem:
    """What an exception of :data:`_NOT_YAML` that ruamel.yaml raised for the file ``display`` says to the user:
    the line and column it names, what is wrong and how to fix it."""
    conflict = _CONFLICT_MARKER.search(text)
    if conflict is not None:  # the YAML error is the conflict's, wherever the parser noticed it
        return _conflict_problem(conflict, display, text)
    if isinstance(exc, TypeError):
        return _complex_key_problem(Location(display))
    if isinstance(exc, KeyProblem):  # a key Kubernetes would read otherwise (yaml_keys.py): at the key
        return Problem(f"invalid YAML: {exc.message}", Location(display, exc.mark.line + 1, exc.mark.column + 1),
                       exc.hint)
    if isinstance(exc, ReaderError) and isinstance(exc.position, int):  # a character YAML does not allow (NUL):
        # at its line and column, not "position 776 of <unicode string>" (until 2026-11-28)
        before = text[:exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        return Problem(f"invalid YAML: the character U+{code:04X} is not allowed in YAML",
                       Location(display, line, column), "remove it (a control character, often pasted by accident)")
    if isinstance(exc, KeyError):  # ruamel's constructor looked the text up in its tag's values: not there
        return Problem(f"invalid YAML: {exc.args[0]!r} is not a value its tag allows", Location(display),
                       "remove the tag (!!bool, !!int, ...) or write a value it allows")
    if not isinstance(exc, MarkedYAMLError):
        return Problem(f"invalid YAML: {exc}", Location(display), "fix the YAML syntax")
    mark = exc.problem_mark or exc.context_mark
    where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display)
    what = (exc.problem or exc.context or "invalid YAML").strip()
    if "duplicate key" in what:
        hint = "each key may appear once per mapping; remove or rename the repeated one"
    elif "'\\t'" in what:
        hint = "replace the tab with spaces: fleetflow reads a tab only inside quotes, block scalars and comments"
    else:
        hint = "fix the YAML syntax (indentation, quotes, ':' after keys)"
    return Problem(f"invalid YAML: {what}", where, hint)


# a line git writes around a conflict it left for the user: "<<<<<<< HEAD", "=======", ">>>>>>> side" (and diff3's
# "||||||| base"), seven characters unless a conflict-marker-size attribute says otherwise, at the start of the line
# (git-merge(1), "How conflicts are presented": https://git-scm.com/docs/git-merge#_how_conflicts_are_presented;
# gitattributes(5), conflict-marker-size; libgit2's GIT_MERGE_CONFLICT_MARKER_SIZE is 7)
_CONFLICT_MARKER = re.compile(r"^(?:<{7,}|>{7,}|\|{7,})(?: .*)?$|^={7,}$", re.MULTILINE)


def _conflict_problem(marker: re.Match[str], display: str, text: str) -> Problem:
    """A file git left in conflict (a merge, a rebase, a cherry-pick, a stash pop), or committed so: at its first
    marker line. Until 2026-11-29 it was the YAML error the marker caused, often on the line below it ("could not
    find expected ':'", hint: "':' after keys"), which never said "conflict"."""
    line = text.count("\n", 0, marker.start()) + 1
    shown = marker[0] if len(marker[0]) <= 40 else f"{marker[0][:37]}..."
    return Problem(
        f"invalid YAML: an unresolved merge conflict (git's conflict marker {shown!r})",
        Location(display, line, 1),
        "keep the lines you want from each side and delete the <<<<<<<, ======= and >>>>>>> lines (`git status` "
        "lists the files in conflict), then commit the result",
    )


def _careful_parse(text: str, source: Source, problems: Problems) -> list[Document]:
    """Parse every document in ``text`` with ruamel.yaml, which words every error with its line and column."""
    display = source.display
    documents: list[Document] = []
    loaded = ruamel_documents(_yaml(), text, display, problems)
    if loaded is None:
        return []
    for index, node in enumerate(loaded):
        if node is None:
            continue  # empty document ("---" at the end of a file)
        if not isinstance(node, CommentedMap):
            line = getattr(getattr(node, "lc", None), "line", None)
            problems.add(
                f"document {index + 1} is {value_kind(node)}, not a mapping",
                Location(display, line + 1 if line is not None else None),
                "each document must be a resource with apiVersion, kind, metadata and spec",
            )
            continue
        start = Location(display, node.lc.line + 1, node.lc.col + 1)
        documents.append(Document(to_plain(node), start, source, index))
    source.known([_ruamel_positions(node) for node in loaded])
    return documents


def parse_documents(text: str, display: str, problems: Problems, source: Source | None = None) -> list[Document]:
    """Parse every document in ``text``, adding what is wrong to ``problems``; ``display`` is the file name used in
    messages. ``source`` (the file's bytes, when the caller has them) is kept for positions; by default the text
    is."""
    source = source if source is not None else Source(display, text)
    try:
        documents = None
        if _quick_enabled:
            with contextlib.suppress(_Careful):  # what the quick parser cannot read exactly: the careful one
                documents = _quick_parse(text, source)
        if documents is None:
            documents = _careful_parse(text, source, problems)
    except RecursionError:  # the parsers nest a call per level: a file thousands of levels deep ends them
        problems.add(f"YAML nested too deeply to read (fleetflow reads up to {MAX_DEPTH} levels)", Location(display),
                     "flatten the document")
        return []
    kept = []
    for doc in documents:
        if _deeper_than(doc.body, MAX_DEPTH):
            problems.add(f"document nested more than {MAX_DEPTH} levels deep", doc.location, "flatten the document")
        else:
            kept.append(doc)
    return kept


MAX_DEPTH = 100
"""How deep a document's mappings and lists may nest. Every later step that walks a document (the parse cache's
JSON, ConfigMap composition, hashing, templates) nests a call or more per level, and Python stops at 1,000
(``sys.getrecursionlimit``): a document 500 levels deep stopped ``validate`` with a RecursionError. Manifests and
config nest a few levels; 100 leaves room and keeps every step far from the limit."""


def unwalkable(loaded: Any, text: str) -> bool:
    """Whether a value ruamel.yaml loaded from ``text`` (a ConfigMap value holding YAML) would be endless, huge or
    nested more than :data:`MAX_DEPTH` levels once built out as plain data: what a document may not be either."""
    if _may_alias(text) and _alias_trouble(loaded, _loaded_children, "") is not None:
        return True
    return _deeper_than(loaded, MAX_DEPTH)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value``'s mappings and lists nest more than ``limit`` levels (a loop, not a recursion)."""
    level: list[Any] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                below.extend(v for v in node.values() if isinstance(v, dict | list))
            elif isinstance(node, list):
                below.extend(v for v in node if isinstance(v, dict | list))
        level = below
    return False


@dataclass(frozen=True)
class Tree:
    """A directory tree of resource files. ``label`` prefixes file names in messages (the path as given)."""

    root: Path
    label: str

    def display(self, path: Path) -> str:
        return os.path.join(self.label, path.relative_to(self.root).as_posix())


class GitFiles(Protocol):
    """A tree's files as a git commit holds them (``fleetflow.promotion.context.CommitTree``): listed with their
    blob ids and read by id, so that :func:`read_tree` reads only the files the parse cache does not hold and
    writes none. ``label`` prefixes file names in messages, as :attr:`Tree.label` does; ``cache_label`` prefixes
    them in the parse cache's keys, and stays the same from commit to commit (a branch's name) where ``label`` may
    name the commit (``dev@abc123``): a file that did not change between two commits is then one entry, and the
    tree one snapshot, however many commits a runner reads."""

    @property
    def label(self) -> str: ...

    @property
    def cache_label(self) -> str: ...

    def listing(self) -> Sequence[tuple[str, str]]:
        """(path from the root, blob id) of every regular file: no symbolic link, no submodule."""
        ...

    def read(self, blob_ids: Sequence[str]) -> Mapping[str, bytes]:
        """The bytes of the blobs, by id."""
        ...


def _folder_ignore(root: Path, display: str, problems: Problems) -> tuple[bool, pathspec.GitIgnoreSpec | None]:
    """:func:`_read_ignore` of the folder ``root``'s ``.fleetflowignore`` (``display``: its name in messages)."""
    ignore = root / IGNORE_FILE
    return _read_ignore(ignore.read_bytes() if ignore.is_file() else None, display, problems)


def _read_ignore(data: bytes | None, display: str, problems: Problems) -> tuple[bool, pathspec.GitIgnoreSpec | None]:
    """Whether the tree whose ``.fleetflowignore`` holds ``data`` (None: it has none) can be read, and its patterns.
    One that is not UTF-8 text is a problem, and then none of the tree is read: the patterns say which files are
    not fleetflow's, so reading without them would report problems in files meant to be left out."""
    if data is None:
        return True, None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark first is skipped, as git skips it in .gitignore
    except UnicodeDecodeError:
        problems.add("file is not UTF-8 text", Location(display),
                     "save it as UTF-8: it names the files fleetflow leaves out, so none of this tree is read until "
                     "then")
        return False, None
    try:
        return True, _spec_of(text)
    except (ValueError, re.error):
        pass
    # a line that is no pattern ("!" alone, "[z-a]"): a ValueError or re.error traceback until 2026-11-28; each is a
    # problem at its line, and none of the tree is read, as for a file that is not UTF-8
    for number, line in enumerate(text.splitlines(), 1):
        try:
            _spec_of(line)
        except (ValueError, re.error) as exc:
            # RE2's words name the regular expression pathspec made of the line ("missing ]: [[:alpha:]\]z(?:..."):
            # the reason alone, the line as written (a bug hunt, 2026-11-28)
            why = exc.reason.partition(": ")[0] if isinstance(exc, RegexError) else str(exc)
            posix = "[:" in line and ":]" in line
            problems.add(f"not a pattern: {line.strip()!r} ({why})", Location(display, number),
                         ("fleetflow does not read POSIX classes such as [[:alpha:]] (git does): write the "
                          "characters out, e.g. [a-zA-Z]; " if posix else "fix or remove the line (gitignore's "
                          "pattern format); ") + "it names the files fleetflow leaves out, so none of this tree is "
                         "read until then")
    return False, None


def _spec_of(text: str) -> pathspec.GitIgnoreSpec:
    """The patterns of a ``.fleetflowignore``, matched in time linear in the path (:mod:`fleetflow.linear_regex`):
    pathspec turns each line into a regular expression and decides as git does, on RE2. Until 2026-11-28 they ran
    on Python's ``re``, where ``*a*a*a*a*a*a*a*a*a*a*a*b`` took 80 seconds on a 42-character name (and more than
    doubled with each further character).

    pathspec's RE2 backend matches all lines in one pass of an RE2 set, twice as fast as ``re`` was; a set outgrows
    RE2's memory budget at about 1,900 plain lines, and then each line is its own RE2 regular expression, under
    pathspec's "simple" backend (the last pattern that matches wins, with git's rules for folders), several times
    slower. :class:`~fleetflow.linear_regex.RegexError` (a ValueError) for a line RE2 does not compile."""
    lines = [line for line in text.splitlines() if line]
    with warnings.catch_warnings():
        # pathspec compiles each line on Python's re too, which warns of "[[" ("Possible nested set"): a Python
        # FutureWarning on the user's terminal; the line is refused in fleetflow's words (_read_ignore)
        warnings.simplefilter("ignore", FutureWarning)
        return _spec_of_lines(lines)


def _spec_of_lines(lines: list[str]) -> pathspec.GitIgnoreSpec:
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")
    except Re2Error:
        pass
    patterns = [GitIgnoreSpecPattern(line) for line in lines]
    for pattern in patterns:
        if pattern.regex is not None:
            pattern.regex = compile_linear(pattern.regex.pattern)
    return pathspec.GitIgnoreSpec(patterns, backend="simple")


def _walk_key(path: str) -> tuple[tuple[int, str], ...]:
    """The place of ``path`` in :func:`yaml_files`' order (``os.walk``, top down, names sorted): in each folder its
    files, then its folders, each in turn."""
    *folders, name = path.split("/")
    return (*((1, f) for f in folders), (0, name))


def yaml_paths(paths: Iterable[str], spec: pathspec.GitIgnoreSpec | None) -> list[str]:
    """The paths (from a tree's root, ``/``-separated) that :func:`yaml_files` would give for a folder holding
    them, in its order: YAML files, not hidden, in no hidden folder (but :data:`VISIBLE_HIDDEN_DIRS`), neither they
    nor a folder above them matched by ``.fleetflowignore`` (``spec``; a folder it matches is not entered, as git
    does not re-include a file whose folder is excluded)."""
    folder_kept: dict[str, bool] = {"": True}

    def kept_folder(folder: str) -> bool:
        found = folder_kept.get(folder)
        if found is None:
            parent, _, name = folder.rpartition("/")
            found = kept_folder(parent) and _visible_folder(name) and not _ignored(spec, f"{folder}/")
            folder_kept[folder] = found
        return found

    kept = []
    for path in paths:
        folder, _, name = path.rpartition("/")
        if _yaml_file(name) and kept_folder(folder) and not _ignored(spec, path):
            kept.append(path)
    return sorted(kept, key=_walk_key)


def yaml_files(tree: Tree) -> Iterator[Path]:
    """Every YAML file of the tree, in a stable order, minus hidden folders and ignored paths (none when the
    ``.fleetflowignore`` does not read: :func:`read_tree` reads none then, and says why)."""
    readable, spec = _folder_ignore(tree.root, IGNORE_FILE, Problems())
    if readable:
        for rel in _yaml_relpaths(tree.root, spec):
            yield tree.root / rel


def _yaml_relpaths(root: Path, spec: pathspec.GitIgnoreSpec | None) -> Iterator[str]:
    """:func:`yaml_files` as paths from ``root`` (``/``-separated strings): what :func:`read_tree` reads, with no
    ``Path`` made per file (pathlib's parsing was a third of reading a 3,270-file folder whose files the parse
    cache held). ``spec``: the tree's ``.fleetflowignore``.

    Regular files only, as a commit is read (:meth:`fleetflow.forge.git.BareRepo.regular_files`): a symbolic link
    (git holds one as the path it points to) is not followed, whether to a file, a folder or nowhere, and a named
    pipe or a device is not opened. Until 2026-11-28 links to files were followed here, so a folder could read
    what its commit would not, a link to nowhere stopped the read with a traceback, and a named pipe or
    ``/dev/zero`` named ``x.yaml`` hung it. Top down, each folder's files then its folders, names sorted
    (``os.walk``'s order)."""
    top = os.fspath(root)
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        above = f"{rel_dir}/" if rel_dir else ""
        try:
            with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as listed:
                entries = sorted(listed, key=lambda e: e.name)
        except OSError:
            continue  # a folder that cannot be listed (os.walk's default): nothing in it is read
        folders = []
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                if _visible_folder(name) and not _ignored(spec, f"{above}{name}/"):
                    folders.append(f"{above}{name}")
            elif entry.is_file(follow_symlinks=False) and _yaml_file(name) and not _ignored(spec, f"{above}{name}"):
                yield f"{above}{name}"
        pending.extend(reversed(folders))


def _visible_folder(name: str) -> bool:
    """A folder :func:`yaml_files` and :func:`yaml_paths` enter: not hidden, but :data:`VISIBLE_HIDDEN_DIRS`."""
    return not name.startswith(".") or name in VISIBLE_HIDDEN_DIRS


def _yaml_file(name: str) -> bool:
    """A file name :func:`yaml_files` and :func:`yaml_paths` read: YAML, not hidden."""
    return name.endswith(YAML_SUFFIXES) and not name.startswith(".")


def _ignored(spec: pathspec.GitIgnoreSpec | None, path: str) -> bool:
    """Matched by ``.fleetflowignore`` (a folder's path ends with ``/``)."""
    return spec is not None and spec.match_file(path)



@dataclass(frozen=True)
class ParseCache:
    """Parsed files by content: a file whose bytes (and displayed name) did not change is not parsed again.

    YAML parsing is most of the time of a re-render with a small change, so incremental runs depend on this.
    An entry is JSON (plain data cannot run code, unlike the pickles this cache once held), keyed by a hash of
    fleetflow's version, the name and the bytes, and holds a file's documents only when it parsed cleanly (a
    file with problems is parsed again, so that its messages are always fresh). Positions are not kept: they are
    worked out from the file's bytes when something asks for them.

    The folder is created for the user alone (0700). A folder that is a link, belongs to someone else or that
    others may write to is not used at all (they could plant entries that change what fleetflow reads); one of
    the user's own that others may only read is made private. An entry that does not read back as expected is
    ignored, parsed again and rewritten.
    """

    folder: Path

    @cached_property
    def usable(self) -> bool:
        """Whether the folder is (now) private to this user. Checked once per cache."""
        try:
            self.folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.folder, 0o700)
            found = os.lstat(self.folder)
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
                return False
            if found.st_mode & 0o022:
                return False  # others could have written entries: do not trust any of them
            if stat.S_IMODE(found.st_mode) != 0o700:
                os.chmod(self.folder, 0o700)
        except OSError:
            return False
        return True

    @staticmethod
    def digest(display: str, data: bytes) -> str:
        """The key of the file ``display`` whose bytes are ``data``: a hash of fleetflow's version, name and bytes."""
        return hashlib.sha256(f"{CACHE_FORMAT}\0{display}\0".encode() + data).hexdigest()

    def _file(self, digest: str) -> str:
        """The entry's file (a string: building a ``Path`` per entry cost more than reading the entry)."""
        return f"{self._root}/{digest[:2]}/{digest}.json"

    def _path(self, display: str, data: bytes) -> str:
        return self._file(self.digest(display, data))

    @cached_property
    def _root(self) -> str:
        return os.fspath(self.folder)

    def _blob_path(self, display: str, blob: str) -> str:
        """The entry of a file of a git tree, by its blob id (which names its bytes: the file need not be read to
        find its entry). Its own key space: a file read from a folder is keyed by its bytes."""
        return self._path(display, f"\0git blob {blob}".encode())

    def get_digest(self, digest: str, source: Source) -> list[Document] | None:
        """The documents of the file whose key (:meth:`digest`) is ``digest``, or None; ``source`` gives their
        positions."""
        return self._get(self._file(digest), source)

    def put_digest(self, digest: str, documents: list[Document]) -> None:
        self._put(self._file(digest), documents)

    def get_blob(self, display: str, blob: str, source: Source) -> list[Document] | None:
        """The documents of the file ``display`` whose blob id is ``blob``, or None; ``source`` (which reads the
        blob when asked) gives their positions."""
        return self._get(self._blob_path(display, blob), source)

    def put_blob(self, display: str, blob: str, documents: list[Document]) -> None:
        self._put(self._blob_path(display, blob), documents)

    def _get(self, path: str, source: Source) -> list[Document] | None:
        if not self.usable:
            return None
        try:
            with open(path, "rb") as handle:
                entry = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        return self.documents(entry, source)

    @staticmethod
    def documents(entry: Any, source: Source) -> list[Document] | None:
        """The documents an entry holds (with ``source`` for their positions); None when it is not an entry."""
        try:
            found = [
                Document(body, Location(source.display, line, column), source, index)
                for index, line, column, body in entry
                if type(index) is int and type(line) is int and type(column) is int and type(body) is dict
            ]
        except (ValueError, TypeError):
            return None
        return found if len(found) == len(entry) else None

    def _snapshot_path(self, label: str) -> str:
        digest = hashlib.sha256(f"{CACHE_FORMAT}\0snapshot\0{label}".encode()).hexdigest()
        return f"{self._root}/trees/{digest}.json"

    def snapshot(self, label: str) -> dict[str, Any]:
        """The files of the tree labelled ``label`` as a run last wrote them down (:meth:`put_snapshot`): file ->
        [blob id, entry]. Empty when there is none or it does not read; each entry is checked where it is used."""
        if not self.usable:
            return {}
        try:
            with open(self._snapshot_path(label), "rb") as handle:
                found = json.loads(handle.read())
        except (OSError, ValueError):
            return {}
        files = found.get("files") if isinstance(found, dict) and found.get("label") == label else None
        return files if isinstance(files, dict) else {}

    def put_snapshot(self, label: str, files: dict[str, list[Any]]) -> None:
        """Write down the entries of every file of a tree (file -> [blob id, entry]) in one file: a later run reads
        it with one open where it opened an entry per file (:func:`_read_git_files`)."""
        if not self.usable:
            return
        path = self._snapshot_path(label)
        try:
            folder = os.path.dirname(path)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=".", delete=False) as handle:
                handle.write(json.dumps({"label": label, "files": files}, ensure_ascii=False,
                                        separators=(",", ":")).encode())
            os.replace(handle.name, path)
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs time

    def _put(self, path: str, documents: list[Document]) -> None:
        if not self.usable:
            return
        entry = _entry(documents)
        try:
            folder = os.path.dirname(path)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=".", delete=False) as handle:
                handle.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode())
            os.replace(handle.name, path)
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs time


def read_tree(tree: Tree | GitFiles, problems: Problems, cache: ParseCache | None = None) -> list[Document]:
    """Parse every YAML file of a tree (a folder, or a commit's files: :class:`GitFiles`): its documents; every
    problem found goes to ``problems``. Both give the same documents, in the same order, with the same problems."""
    if not isinstance(tree, Tree):
        return _read_git_files(tree, problems, cache)
    documents: list[Document] = []
    if not tree.root.is_dir():
        problems.add(f"directory not found: {tree.label}", None, "check the path given on the command line")
        return []
    # A folder's files are read to know their content; what the parse cache holds of them comes, past 64 files, from
    # one snapshot of the folder's entries (keyed by the label and checked by each file's key), not an entry file
    # opened per file: a folder of 3,270 files (one document a file, at 100k assignments) opened 6,540 files.
    prefix, top = _prefix(tree.label), os.fspath(tree.root)
    readable, spec = _folder_ignore(tree.root, prefix + IGNORE_FILE, problems)
    if not readable:
        return []
    held = _TreeEntries(cache, f"folder\0{tree.label}") if cache is not None else None  # not a commit's key space
    count = 0
    for rel in _yaml_relpaths(tree.root, spec):
        count += 1
        display = prefix + rel
        if not _name_reads(display, problems):
            continue
        with open(os.path.join(top, rel), "rb") as handle:
            data = handle.read()
        source = Source(display, data)
        digest = ParseCache.digest(display, data)
        found = None
        if held is not None:
            found = held.in_snapshot(display, digest, source)
            if found is None:
                found = held.own_entry(display, digest, held.cache.get_digest(digest, source))
        if found is not None:
            documents.extend(found)
            continue
        parsed, clean = _parse_file(display, data, source, problems)
        if held is not None and clean:
            held.cache.put_digest(digest, parsed)
            held.parsed(display, digest, parsed)
        documents.extend(parsed)
    if held is not None:
        held.save(count)
    return documents


def _parse_file(display: str, data: bytes, source: Source, problems: Problems) -> tuple[list[Document], bool]:
    """The documents of one file's bytes, and whether it read cleanly: only then does the parse cache keep them
    (a file with problems is parsed again, so that its messages are always fresh). Problems go to ``problems``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        problems.add("file is not UTF-8 text", Location(display), "save it as UTF-8")
        return [], False
    before = len(problems)
    parsed = parse_documents(text, display, problems, source)
    return parsed, len(problems) == before


def read_paths(tree: GitFiles) -> list[str]:
    """The files of a commit :func:`read_tree` reads (YAML, not hidden, not left out by ``.fleetflowignore``),
    in its order; none when the ``.fleetflowignore`` does not read (:func:`read_tree` reports that)."""
    blob_of = dict(tree.listing())
    ignore = blob_of.get(IGNORE_FILE)
    readable, spec = _read_ignore(tree.read([ignore])[ignore] if ignore else None, IGNORE_FILE, Problems())
    return yaml_paths(blob_of, spec) if readable else []


def _read_git_files(tree: GitFiles, problems: Problems, cache: ParseCache | None) -> list[Document]:
    """:func:`read_tree` of a commit's files: the parse cache is asked by blob id, so a file it holds is never read
    (its text is read only if a message needs a position in it); the rest are read in one batch. Nothing is
    written to disk: before 2026-11-28 every run exported the control plane to a folder and read it back, which at
    one document a file (Kalypso's layout) cost more than everything else the schedule did with the plane."""
    blob_of = dict(tree.listing())
    label, key_label = tree.label, tree.cache_label
    shown, keyed = _prefix(label), _prefix(key_label)  # os.path.join's result, without its cost per file
    ignore = blob_of.get(IGNORE_FILE)
    readable, spec = _read_ignore(tree.read([ignore])[ignore] if ignore else None, shown + IGNORE_FILE, problems)
    if not readable:
        return []
    paths = yaml_paths(blob_of, spec)
    unnamed: set[str] = set()  # files whose names are not UTF-8: a problem each, not read
    found: dict[str, list[Document]] = {}
    unread: list[str] = []
    later = _ReadLater(tree)
    held = _TreeEntries(cache, key_label) if cache is not None else None
    for path in paths:
        blob = blob_of[path]
        display, key = shown + path, keyed + path
        if not _name_reads(display, problems):
            unnamed.add(path)
            continue
        source = Source(display, later.reader(blob))
        hit = None
        if held is not None:
            hit = held.in_snapshot(key, blob, source)
            if hit is None:
                hit = held.own_entry(key, blob, held.cache.get_blob(key, blob, source))
        if hit is None:
            unread.append(path)
        else:
            found[path] = hit
            later.add(blob, hit)
    if unread:
        data = tree.read([blob_of[p] for p in unread])
        for path in unread:
            blob = blob_of[path]
            display, key = shown + path, keyed + path
            parsed, clean = _parse_file(display, data[blob], Source(display, data[blob]), problems)
            if held is not None and clean:
                held.cache.put_blob(key, blob, parsed)
                held.parsed(key, blob, parsed)
            found[path] = parsed
    if held is not None:
        held.save(len(paths))
    return [doc for path in paths if path not in unnamed for doc in found[path]]


def _name_reads(display: str, problems: Problems) -> bool:
    """Whether the file's name is UTF-8 text; if not (Python and git give the bytes that are not as surrogates), a
    problem that shows them escaped: every message, cache key and output names files as text."""
    try:
        display.encode("utf-8")
    except UnicodeEncodeError:
        problems.add("file name is not UTF-8 text", Location(shown_path(display)),
                     "rename it with a UTF-8 name, or match it with a pattern in .fleetflowignore")
        return False
    return True


def _prefix(label: str) -> str:
    """What ``os.path.join(label, path)`` puts before a relative ``path``."""
    return label if not label or label.endswith("/") else label + "/"


class _TreeEntries:
    """The parse cache's entries of one tree as a read takes them (a folder's files, or a commit's): from the
    snapshot of the tree (``label``) where it holds a file as it is (``ident``: its key, or its blob id), else from
    the file's own entry; then written down again (:meth:`save`) when more than :data:`SNAPSHOT_SLACK` files (or 5%)
    came from elsewhere, or when the snapshot holds twice as many files as the tree now has."""

    def __init__(self, cache: ParseCache, label: str) -> None:
        self.cache, self.label = cache, label
        self.held = cache.snapshot(label)
        self.entries: dict[str, list[Any]] = {}  # the snapshot to write down: file (as keyed) -> [ident, entry]
        self.elsewhere = 0  # files the snapshot did not give

    def in_snapshot(self, key: str, ident: str, source: Source) -> list[Document] | None:
        """The documents of the file ``key`` as the snapshot holds them, or None (then ask its own entry)."""
        held = self.held.get(key)
        if isinstance(held, list) and len(held) == 2 and held[0] == ident:
            found = ParseCache.documents(held[1], source)
            if found is not None:
                self.entries[key] = held
                return found
        return None

    def own_entry(self, key: str, ident: str, found: list[Document] | None) -> list[Document] | None:
        """What the file's own entry gave (None: none, then it is to be parsed), counted as found elsewhere."""
        self.elsewhere += 1
        if found is not None:
            self.entries[key] = [ident, _entry(found)]
        return found

    def parsed(self, key: str, ident: str, documents: list[Document]) -> None:
        """A file parsed cleanly (its own entry written by the caller): in the next snapshot too."""
        self.entries[key] = [ident, _entry(documents)]

    def save(self, files: int) -> None:
        """Write the snapshot again if it is out of date (``files``: how many the tree has)."""
        if self.elsewhere > max(SNAPSHOT_SLACK, files // 20) or len(self.held) > len(self.entries) * 2:
            self.cache.put_snapshot(self.label, self.entries)


SNAPSHOT_SLACK = 64
"""How many files of a tree :func:`_read_git_files` may find outside the parse cache's snapshot of it (each one an
entry file opened, or a file parsed) before it writes the snapshot again: a change of a few files costs a few
opens, not a rewrite of the whole tree's entries on every run (5% of the files, if more than this)."""


def _entry(documents: list[Document]) -> list[list[Any]]:
    """A file's parse-cache entry: each document's index, line, column and body."""
    return [[doc.index, doc.location.line, doc.location.column, doc.body] for doc in documents]


class _ReadLater:
    """The files :func:`_read_git_files` took from the parse cache without reading them, read when a position in
    one is first asked for: that file and every other of the same kinds of documents, in one batch. The normal
    path asks for some (each deployment target's location, each template's lines), one kind at a time; a batch
    per file cost one ``git cat-file`` each (0.3 s for 100 Workload files), a batch of every file cost reading
    the whole tree again."""

    def __init__(self, tree: GitFiles) -> None:
        self.tree = tree
        self.groups: dict[frozenset[str], list[str]] = {}
        self.group_of: dict[str, list[str]] = {}
        self.read: dict[str, bytes] = {}

    def add(self, blob: str, documents: list[Document]) -> None:
        group = self.groups.setdefault(frozenset(d.kind for d in documents), [])
        group.append(blob)
        self.group_of[blob] = group

    def reader(self, blob: str) -> Callable[[], bytes]:
        return lambda: self.get(blob)

    def get(self, blob: str) -> bytes:
        if blob not in self.read:
            wanted = [b for b in self.group_of.get(blob, [blob]) if b not in self.read]
            self.read.update(self.tree.read(wanted))
        return self.read[blob]
