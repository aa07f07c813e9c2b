"""A key written twice in one mapping of a manifest a template renders (``contentType: yaml``).

The two GitOps agents read such a manifest differently from each other, and neither as the engineer meant:

- Flux's kustomize-controller builds the folder with kustomize and then calls ``resMap.AsYaml()``
  (fluxcd/kustomize-controller ``internal/controller/kustomization_controller.go``: "kustomize build failed"), which
  decodes each resource's go-yaml v3 node into a map (kustomize ``api/resource/resource.go`` ``AsYAML``,
  ``kyaml/yaml/rnode.go`` ``MarshalJSON``); go-yaml v3's decoder refuses a mapping whose two keys have the same kind
  and text: "mapping key %#v already defined at line %d" (go-yaml v3 ``decode.go``, ``decoder.mapping``,
  ``uniqueKeys``; kustomize ``api/krusty/duplicatekeys_test.go``). The Kustomization fails on every cluster.
- Argo CD reads a directory's YAML with apimachinery's ``YAMLOrJSONDecoder`` (argo-cd
  ``reposerver/repository/repository.go`` ``splitYAMLOrJSON``; gitops-engine ``pkg/utils/kube/kube.go``
  ``SplitYAML`` the same), that is ``sigs.k8s.io/yaml.Unmarshal`` (apimachinery ``pkg/util/yaml/decoder.go``),
  go-yaml v2 without ``strict``: the later value replaces the earlier without a word (go-yaml v2 ``decode.go``,
  ``setMapIndex``; sigs.k8s.io/yaml ``yaml.go``: only ``UnmarshalStrict`` refuses "duplicate field names").
- The API server never sees the two: both agents send the object they decoded.

So the key is refused where it is rendered, with go-yaml v3's rule: two keys of one mapping whose text is the same
(``a``, ``"a"`` and ``'a'`` are one key; ``1`` and ``1.0`` two), aliases by their anchor's name.

Cheap on the render's hot path (:func:`duplicate_key`): a regular expression takes each line's text up to its first
``:``, a ``- `` counted as indentation (two lines that write one key at one column give the same text); when no
text repeats, no key is quoted and none is explicit (``?``), anchored, tagged or an alias, and no flow mapping may
hold a key twice, that is all (about half the cost of the syntax check). Otherwise :func:`_scan` goes through the
key lines by mapping, each mapping's keys kept until a less indented key or a new ``- `` item at their column; only
what it flags, and what it cannot follow (a quoted key, a quoted scalar or flow collection over several lines),
is read as libyaml's events (:func:`_exact`, Python objects: about 8 times the cost). Text in a block scalar, a
comment or another document may look like keys to the quick look: it can only send a manifest to the events,
never refuse it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml._yaml import CParser

__all__ = ["KeyTwice", "duplicate_key", "json_object", "json_twice"]

_KEY_LINE = re.compile(r"\n[^:\n]*:")
"""A line that may hold a block mapping's key: its ``\n``, its indentation and what it holds up to its first
``:``. Two lines that write one key alike at one column give the same text (the first ``:`` is the key's own or
one in it); a quoted key or a space before the ``:`` sends the manifest on to :func:`_scan`. The pattern starts
with a character to look for, which :mod:`re` finds quickly (``^`` with ``re.M`` is tried at every character:
several times the cost)."""
_ITEM_KEY_LINE = re.compile(r"\n( *)((?:- +)*)([^#:\n][^:\n]*):")
"""The same with the ``- `` items the line starts apart: its indentation, the items, what it holds up to ``:``
(not a comment: a comment may stand at any column)."""
_OVER_LINES = re.compile(r"""(?:^|[\s\[{,])(?:'(?:[^'\n]|'')*|"(?:[^"\\\n]|\\.)*\\?)\n|\[[^\]\n]*\n""")
"""A quoted scalar or a flow sequence that goes on over lines: libyaml (and go-yaml, its port) reads their later
lines at any column, less indented than the mapping they are in too (``b: "x\ny: 1"``)."""
_EXPLICIT_KEY = re.compile(r"\n[ -]*\?[ \t\n]")
_PLAIN_START = r"(?:[^-?:,\[\]{}#&*!|>'\"%@`\s]|[-?:](?=[^\s,\[\]{}]))"
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\n]|'')*'"
_FLOW_KEY = re.compile(
    rf"[{{,][ \t]*({_QUOTED}(?=[ \t]*:)|{_PLAIN_START}[^:\s,\[\]{{}}]*(?:(?::(?=[^\s,\[\]{{}}])"
    rf"|[ \t]+(?=[^\s#:,\[\]{{}}]))[^:\s,\[\]{{}}]*)*(?=[ \t]*:[\s,\[\]{{}}]))")
"""A key after a ``{`` or a ``,``: a flow mapping's (and text that only looks so, which costs the exact check)."""
_ODD_FLOW = re.compile(r"[\[{,][ \t]*[?&!*]|\{[^}\n]*\n")
"""An explicit key, an anchor, a tag or an alias where a flow mapping's key may stand; a ``{`` not closed on its
line (a flow mapping over several lines: its keys at any column)."""


def duplicate_key(doc: str) -> tuple[str, int, int] | None:
    """The first key ``doc`` (one manifest as rendered, known to parse) writes twice in one mapping, with the lines
    of both (1-based, of ``doc``); None when no mapping has a key twice."""
    if ":" not in doc and "?" not in doc:  # no key at all ("? a" is one)
        return None
    lines = "\n" + doc  # each line after a "\n"
    placed = _KEY_LINE.findall(lines.replace("- ", "  "))  # a key after "- " at its column
    joined = "".join(placed)
    unsure = ("\t" in joined or "&" in joined or "!" in joined or "*" in joined  # an anchor, a tag, an alias: rare
              or ("?" in doc and _EXPLICIT_KEY.search(lines) is not None))
    if not unsure and (len(set(placed)) < len(placed) or "'" in joined or '"' in joined or " :" in joined):
        unsure = _scan(lines)  # one key text twice at one column, or keys written otherwise than plain
    if not unsure and "{" in doc and _may_flow(lines):
        unsure = _flow_twice(doc, placed)
    return _exact(doc) if unsure else None


def _may_flow(lines: str) -> bool:
    """Whether a ``{`` in ``lines`` may start a flow mapping: after white space or a flow indicator, not in a quoted
    JSON text (``"{\"a\":1}"``)."""
    return (" {" in lines or "\n{" in lines or "[{" in lines or ",{" in lines or "{{" in lines
            or "\t{" in lines)


def _scan(lines: str) -> bool:
    """Whether a key follows itself in one block mapping, as far as the lines tell: each mapping's keys kept until
    a less indented key or a ``- `` item at the key's column ends it. True also for a quoted key (``"a"`` is
    ``a``)."""
    if _OVER_LINES.search(lines):  # a line less indented may be inside a value: the scan would end the mapping
        return True
    open_: list[tuple[int, set[str]]] = []  # (column, the keys seen) of the mappings not ended, inner last
    for indent, items, written in _ITEM_KEY_LINE.findall(lines):
        key = written.rstrip(" ")
        if key[:1] in ("'", '"'):
            return True
        column = len(indent) + len(items)
        while open_ and open_[-1][0] > column:
            open_.pop()
        if items or not open_ or open_[-1][0] != column:
            if open_ and open_[-1][0] == column:
                open_.pop()
            open_.append((column, {key}))
        elif key in open_[-1][1]:
            return True
        else:
            open_[-1][1].add(key)
    return False


def _flow_twice(doc: str, placed: list[str]) -> bool:
    """Whether a flow mapping of ``doc`` may hold a key twice: a key text found twice after a ``{`` or ``,``, or
    also at the start of a line (a flow mapping may go on over lines), or what the quick look does not follow."""
    if _ODD_FLOW.search(doc):
        return True
    flow = [_text(key) for key in _FLOW_KEY.findall(doc)]
    if not flow:
        return False
    return None in flow or len(set(flow)) < len(flow) or not set(flow).isdisjoint(
        _text(key[:-1].strip(" \n")) for key in placed if key.strip(" \n:"))


def _text(key: str) -> str | None:
    """The text of ``key`` as written (plain or quoted); None for a double-quoted one with an escape."""
    if key[:1] == '"':
        return None if "\\" in key else key[1:-1]
    if key[:1] == "'":
        return key[1:-1].replace("''", "'")
    return key


def _exact(doc: str) -> tuple[str, int, int] | None:
    """go-yaml v3's rule on libyaml's events: two keys of one mapping of the same kind (a scalar, an alias, a
    collection) and text (the scalar's value, the alias's anchor name; a collection has none)."""
    parser = CParser(doc)
    # per collection being read: None for a sequence, else (its keys -> line, whether a key comes next)
    open_: list[tuple[dict[tuple[str, str], int], list[bool]] | None] = []
    while True:
        event = parser.get_event()
        if event is None or isinstance(event, yaml.StreamEndEvent):
            return None
        if isinstance(event, yaml.NodeEvent):  # a scalar, an alias, the start of a sequence or a mapping
            top = open_[-1] if open_ else None
            if top is not None:
                keys, expecting = top
                if expecting[0]:
                    if isinstance(event, yaml.ScalarEvent):
                        kind, text = "scalar", event.value
                    elif isinstance(event, yaml.AliasEvent):
                        kind, text = "alias", event.anchor or ""
                    else:
                        kind, text = type(event).__name__, ""
                    line = event.start_mark.line + 1 if event.start_mark is not None else 0
                    first = keys.get((kind, text))
                    if first is not None:
                        return text, first, line
                    keys[kind, text] = line
                expecting[0] = not expecting[0]
            if isinstance(event, yaml.MappingStartEvent):
                open_.append(({}, [True]))
            elif isinstance(event, yaml.SequenceStartEvent):
                open_.append(None)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_.pop()


class KeyTwice(ValueError):
    """A JSON object that holds ``key`` twice (raised by :func:`json_object`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: the object, or :class:`KeyTwice`. Argo CD reads a ``.json``
    manifest with Go's JSON decoding (argo-cd ``reposerver/repository/repository.go`` ``getObjsFromYAMLOrJSON``:
    ``json.NewDecoder`` into an ``Unstructured``, whose ``UnmarshalJSON`` is sigs.k8s.io/json's
    ``UnmarshalCaseSensitivePreserveInts``, apimachinery ``pkg/util/json/json.go``), which keeps the later value of
    a key written twice without a word (golang/go#24415; only sigs.k8s.io/json's strict options report it). About
    half a microsecond an object over building it in C (2.7 µs for a ConfigMap of 22 keys, 4 µs without)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise KeyTwice(key)
            seen.add(key)
    return obj


_JSON_SKIP = re.compile(r"[ \t\n\r:]*")  # white space, and the ':' after a key (json.loads took the text)
_JSON_WORD = re.compile(r"[^\s,:\]}]+")  # a number, true, false, null


def json_twice(doc: str) -> tuple[str, tuple[int, int], tuple[int, int]] | None:
    """The key :func:`json_object` finds twice in ``doc`` (one manifest as rendered, JSON but for that key) with
    the line and column (1-based, in characters) of where it is written first and again; None when no object holds
    a key twice. Only the error path reads ``doc`` so: :func:`json_object` is given no positions (``json.loads``
    builds each object in C). The same key as :class:`KeyTwice` names: ``json.loads`` calls the hook as each
    object ends, inner objects first, and the hook names the first key of its object that is written again."""
    scan = json.decoder.scanstring  # type: ignore[attr-defined]  # C, with a pure-Python fallback
    # per container being read: None for an array, else (its keys -> the offset of the first, the first key
    # written again with both offsets, whether a key comes next)
    open_: list[tuple[dict[str, int], list[tuple[str, int, int]], list[bool]] | None] = []
    i, end = 0, len(doc)
    while i < end:
        c = doc[i]
        if c == "{":
            open_.append(({}, [], [True]))
            i += 1
        elif c == "[":
            open_.append(None)
            i += 1
        elif c in "}]":
            top = open_.pop() if open_ else None
            if top is not None and top[1]:
                key, first, again = top[1][0]
                return key, _line_column(doc, first), _line_column(doc, again)
            i += 1
        elif c == ",":
            top = open_[-1] if open_ else None
            if top is not None:
                top[2][0] = True
            i += 1
        elif c == '"':
            text, after = scan(doc, i + 1)
            top = open_[-1] if open_ else None
            if top is not None and top[2][0]:
                top[2][0] = False
                seen = top[0].setdefault(text, i)
                if seen != i and not top[1]:
                    top[1].append((text, seen, i))
            i = after
        else:
            skipped = _JSON_SKIP.match(doc, i)
            i = skipped.end() if skipped is not None and skipped.end() > i else _word_end(doc, i)
    return None


def _word_end(doc: str, i: int) -> int:
    found = _JSON_WORD.match(doc, i)
    return found.end() if found is not None else i + 1


def _line_column(doc: str, offset: int) -> tuple[int, int]:
    return doc.count("\n", 0, offset) + 1, offset - doc.rfind("\n", 0, offset)
