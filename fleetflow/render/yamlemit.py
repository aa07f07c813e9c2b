"""A fast, deterministic YAML emitter for plain data.

:func:`to_yaml` writes ``dict`` / ``list`` / ``str`` / ``int`` / ``float`` / ``bool`` / ``None`` trees in the
block style Kubernetes users know from Go's ``yaml.v3`` and sprig's ``toYaml``:

* two-space indentation, mapping keys sorted, a list under a key starts at the key's indentation (``- ``);
* ``{}`` and ``[]`` for empty collections;
* strings plain when that reads back as the same string, in YAML 1.1 *and* 1.2 (``"true"``, ``"no"``,
  ``"0o17"``, ``"1e3"``, ``"2024-01-01"``, ``""`` are quoted); otherwise double-quoted with JSON escaping
  (a JSON string is a valid YAML double-quoted scalar); multi-line strings as literal blocks (``|`` / ``|-``)
  when that is unambiguous, quoted otherwise.

The output always ends with a newline and round-trips: ``YAML(typ="safe").load(to_yaml(v)) == v``.

It runs once per rendered ``toYaml`` call (hundreds of thousands of times in a big fleet), so the decision for
each string is computed once and cached, and the hot paths dispatch on exact types before falling back to
``isinstance``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["to_yaml"]

# A scalar is either one line of YAML, or a literal block: (header, content lines).
_Block = tuple[str, tuple[str, ...]]
_Scalar = str | _Block

#: Characters that may not start a plain scalar (YAML indicators, plus the quote characters).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")

#: Plain scalars that some YAML reader (1.1 or 1.2, ruamel, PyYAML, yaml.v3) would not read as a string.
#: Deliberately generous: quoting a string that did not need it is harmless, the reverse is a bug.
_RESOLVES = re.compile(
    r"""^(?:
        [-+]?[0-9_]+                                        # decimal ints (1.2 allows underscores anywhere)
       |[-+]?[0-9][0-9a-fA-FxXoObB_]*                       # 0x1F, 0o17, 0b101, 017, 1e5 ...
       |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+                    # 1e+5
       |[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)? # 1.5, .5, 1., 1.5e-3, and "." itself
       |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?    # YAML 1.1 sexagesimal 1:30, 1:30.5
       |[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)
       |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*                    # dates and timestamps
       |y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
       |~|null|Null|NULL|<<|=
    )$""",
    re.VERBOSE,
)

#: Characters a JSON string may hold raw that YAML does not accept raw in a double-quoted scalar:
#: C1 controls, DEL, NEL / LS / PS (YAML line breaks), BOM, surrogates and the two non-characters.
_UNSAFE_IN_QUOTES = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]")

#: Implicit (``key: value``) keys may not exceed 1024 characters; longer ones use ``? key``.
_MAX_IMPLICIT_KEY = 1000

#: Exact types that are never containers: lets the hot path skip the slow ``isinstance(x, Mapping)``.
_SCALARS = frozenset({str, int, float, bool, type(None)})

_CACHE_LIMIT = 100_000
_value_cache: dict[str, _Scalar] = {}
_key_cache: dict[str, str] = {}


def to_yaml(value: object) -> str:
    """Serialise plain data as block-style YAML ending with a newline (see the module docstring)."""
    out: list[str] = []
    if isinstance(value, Mapping):
        if not value:
            return "{}\n"
        _mapping(value, "", "", out)
    elif isinstance(value, list | tuple):
        if not value:
            return "[]\n"
        _sequence(value, "", "", out)
    else:
        rep = _scalar(value)
        if isinstance(rep, str):
            return rep + "\n"
        out.append(rep[0] + "\n")
        _block_lines(rep[1], "  ", out)
    return "".join(out)


def _mapping(mapping: Mapping[Any, Any], pad: str, first: str, out: list[str]) -> None:
    """Emit a non-empty mapping whose keys sit at ``pad``; the first line starts with ``first`` instead
    (``first`` is ``pad`` itself, or the parent's ``pad + "- "`` for a mapping inside a list)."""
    child = pad + "  "
    prefix = first
    try:
        keys = sorted(mapping)
    except TypeError:  # mixed key types (e.g. ints and strings from a YAML file): order by type, then text
        keys = sorted(mapping, key=lambda k: (type(k).__name__, str(k)))
    for key in keys:
        value = mapping[key]
        text = _key(key)
        line = f"{prefix}{text}:" if len(text) <= _MAX_IMPLICIT_KEY else f"{prefix}? {text}\n{pad}:"
        prefix = pad
        kind = type(value)
        if kind is dict or (kind not in _SCALARS and isinstance(value, Mapping)):
            if value:
                out.append(line + "\n")
                _mapping(value, child, child, out)
            else:
                out.append(line + " {}\n")
        elif kind is list or kind is tuple or (kind not in _SCALARS and isinstance(value, list | tuple)):
            if value:
                out.append(line + "\n")
                _sequence(value, pad, pad, out)
            else:
                out.append(line + " []\n")
        else:
            rep = _scalar(value)
            if isinstance(rep, str):
                out.append(f"{line} {rep}\n")
            else:
                out.append(f"{line} {rep[0]}\n")
                _block_lines(rep[1], child, out)


def _sequence(items: list[Any] | tuple[Any, ...], pad: str, first: str, out: list[str]) -> None:
    """Emit a non-empty list whose dashes sit at ``pad`` (the first line starts with ``first``)."""
    child = pad + "  "
    prefix = first
    for value in items:
        dash = prefix + "- "
        prefix = pad
        kind = type(value)
        if kind is dict or (kind not in _SCALARS and isinstance(value, Mapping)):
            if value:
                _mapping(value, child, dash, out)
            else:
                out.append(dash + "{}\n")
        elif kind is list or kind is tuple or (kind not in _SCALARS and isinstance(value, list | tuple)):
            if value:
                _sequence(value, child, dash, out)
            else:
                out.append(dash + "[]\n")
        else:
            rep = _scalar(value)
            if isinstance(rep, str):
                out.append(f"{dash}{rep}\n")
            else:
                out.append(f"{dash}{rep[0]}\n")
                _block_lines(rep[1], child, out)


def _block_lines(lines: tuple[str, ...], pad: str, out: list[str]) -> None:
    out.extend(f"{pad}{line}\n" if line else "\n" for line in lines)


def _scalar(value: object) -> _Scalar:
    kind = type(value)
    if kind is str:
        return _string(value)  # type: ignore[arg-type]
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _float(value)  # type: ignore[arg-type]
    # Subclasses (IntEnum, StrEnum, numpy-free plain subclasses) are written as their base type.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return _string(str(value))
    raise TypeError(f"cannot represent a value of type {type(value).__name__} in YAML: {value!r:.80}")


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text and "." not in text:  # 1e+16 is a string to YAML 1.1 readers; 1.0e+16 is a float to all
        text = text.replace("e", ".0e", 1)
    return text


def _string(text: str) -> _Scalar:
    rep = _value_cache.get(text)
    if rep is None:
        if _plain_ok(text):
            rep = text
        elif "\n" in text:
            rep = _literal(text) or _quote(text)
        else:
            rep = _quote(text)
        if len(_value_cache) >= _CACHE_LIMIT:
            _value_cache.clear()
        _value_cache[text] = rep
    return rep


def _key(key: object) -> str:
    if type(key) is not str:
        rep = _scalar(key)
        if isinstance(rep, str):
            return rep
        return _quote(str(key))  # a str subclass holding a newline: keys are never literal blocks
    rep_key = _key_cache.get(key)
    if rep_key is None:
        rep_key = key if _plain_ok(key) else _quote(key)
        if len(_key_cache) >= _CACHE_LIMIT:
            _key_cache.clear()
        _key_cache[key] = rep_key
    return rep_key


def _plain_ok(text: str) -> bool:
    """Whether ``text`` reads back as this very string when written without quotes."""
    # isprintable() rejects tabs, newlines, every control character, NEL/LS/PS, BOM and non-ASCII spaces.
    if not text or not text.isprintable():
        return False
    if text[0] in _INDICATORS or text[0] == " " or text[-1] == " " or text[-1] == ":":
        return False
    if ": " in text or " #" in text or text.startswith("..."):
        return False
    return _RESOLVES.match(text) is None


def _quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    if _UNSAFE_IN_QUOTES.search(quoted):
        quoted = _UNSAFE_IN_QUOTES.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    return quoted


def _literal(text: str) -> _Block | None:
    """A literal block for a multi-line string, or None when one would be ambiguous or lossy."""
    if text.endswith("\n"):
        if text.endswith("\n\n"):
            return None  # would need keep chomping (|+); quoting is clearer
        header, body = "|", text[:-1]
    else:
        header, body = "|-", text
    lines = tuple(body.split("\n"))
    seen_content = False
    for line in lines:
        if not line:
            continue
        if line[-1] in " \t" or not line.replace("\t", " ").isprintable():
            return None
        if not seen_content:
            if line[0] in " \t":
                return None  # the first content line sets the block's indentation
            seen_content = True
    return (header, lines) if seen_content else None
