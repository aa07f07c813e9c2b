"""JSON Schema's regular expressions matched on RE2, in time linear in the text (:mod:`fleetflow.linear_regex`).

jsonschema runs ``pattern``, ``patternProperties`` (and through it ``additionalProperties`` and
``unevaluatedProperties``) on Python's ``re``, which backtracks: a ConfigSchema's ``^(a+)+$`` against a config
value of 24 ``a`` and a ``b`` took 0.8 s, each further ``a`` doubling it. :func:`linear`
gives a validator class whose keywords that match a pattern run it on RE2 instead; everything else is
jsonschema's. :func:`schema_formats` checks, with the metaschema, that every pattern of a schema compiles on RE2,
so a pattern RE2 refuses (lookaround, a backreference) is one problem at the ConfigSchema before any config is
checked. JSON Schema patterns are ECMA-262 regular expressions; its ``\\uXXXX`` escape is read as RE2's
``\\x{XXXX}``, and like ECMA-262 (and unlike Python's ``re``) ``\\d``, ``\\w`` and ``\\s`` are ASCII and ``$`` is
the end of the text only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing.jsonschema import lookup_recursive_ref

from fleetflow.linear_regex import RegexError, searcher

__all__ = ["HINT", "RegexError", "additional_keys", "linear", "schema_formats", "search", "value_formats"]

HINT = (
    "fleetflow matches schema patterns in time linear in the text (RE2), so that no pattern can hang a check; "
    "RE2 has no lookaround ((?=, (?!, (?<=, (?<!) and no backreferences (\\1), and counts repetitions to 1000: "
    "write the pattern without them (a second keyword, e.g. not/pattern or allOf, can often say the rest)"
)

_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
# ECMA-262's \s: WhiteSpace and LineTerminator (ECMA-262, "CharacterClassEscape" and "White Space": tab, vertical
# tab, form feed, space, no-break space, the byte order mark, every Zs space, LF, CR, U+2028, U+2029). RE2's \s is
# the ASCII [\t\n\f\r ] alone: "a\u00a0b" matched ^\S+$ there, and ECMA-262 (and Python's re before) do not.
_ECMA_SPACE = r"\t\n\x{0b}\f\r \x{a0}\x{feff}\x{2028}\x{2029}\p{Zs}"


def _to_re2(pattern: str) -> str:
    """The pattern in RE2's syntax: ECMA-262's ``\\uXXXX`` as ``\\x{XXXX}``, ``\\s`` and ``\\S`` as ECMA-262's
    whitespace (inside a class, ``\\S`` stays RE2's); every other character and escape as written."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if escaped == "u" and _HEX4.fullmatch(pattern, i + 2, i + 6):
                out.append(f"\\x{{{pattern[i + 2:i + 6]}}}")
                i += 6
                continue
            if escaped == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{_ECMA_SPACE}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _searcher(pattern: str) -> Callable[[str], list[int] | None]:
    try:
        return searcher(_to_re2(pattern))
    except RegexError as exc:
        raise RegexError(pattern, exc.reason) from None  # the pattern as the schema writes it


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (a JSON Schema pattern) matches anywhere in ``text``; :class:`RegexError` when RE2 does
    not compile it."""
    return _searcher(pattern)(text) is not None


# --- keywords: jsonschema's (jsonschema/_keywords.py, _utils.py, _legacy_keywords.py of 4.26), with re.search
# --- replaced by search


def _pattern(validator: Any, patrn: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def additional_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    """The keys of ``instance`` that ``schema``'s ``properties`` and ``patternProperties`` do not name."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not any(search(p, key) for p in patterns):
            yield key


def _extras(extras: list[Any]) -> tuple[str, str]:
    return ", ".join(repr(extra) for extra in extras), "was" if len(extras) == 1 else "were"


def _additional_properties(
    validator: Any, ap: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = set(additional_keys(instance, schema))
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            joined, verb = _extras(sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> list[str]:
    """The keys of ``instance`` that ``schema`` evaluates (jsonschema's ``find_evaluated_property_keys_by_schema``,
    Draft 2020-12's; Draft 2019-09's differs in ``$recursiveRef`` and in how ``properties`` and
    ``additionalProperties`` count, see :func:`_evaluated_keys_2019`)."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys += _evaluated_keys(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver), instance, resolved.contents
            )
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys += (key for key, value in instance.items() if _valid(validator.descend(value, subschema)))
    keys += _common_evaluated(validator, instance, schema, _evaluated_keys)
    return keys


def _evaluated_keys_2019(validator: Any, instance: Mapping[str, Any], schema: Any) -> list[str]:
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    refs = [validator._resolver.lookup(schema["$ref"])] if schema.get("$ref") is not None else []
    if "$recursiveRef" in schema:
        refs.append(lookup_recursive_ref(validator._resolver))
    for resolved in refs:
        keys += _evaluated_keys_2019(
            validator.evolve(schema=resolved.contents, _resolver=resolved.resolver), instance, resolved.contents
        )
    for keyword in ("properties", "additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            value = schema[keyword]
            if validator.is_type(value, "boolean") and value:
                keys += instance.keys()
            elif validator.is_type(value, "object"):
                keys += (key for key in value if key in instance)
    keys += _common_evaluated(validator, instance, schema, _evaluated_keys_2019)
    return keys


def _common_evaluated(validator: Any, instance: Mapping[str, Any], schema: Any, walk: Any) -> list[str]:
    keys: list[str] = []
    if "patternProperties" in schema:
        keys += (key for key in instance for pattern in schema["patternProperties"] if search(pattern, key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys += walk(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys += walk(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += walk(validator, instance, schema["if"])
            if "then" in schema:
                keys += walk(validator, instance, schema["then"])
        elif "else" in schema:
            keys += walk(validator, instance, schema["else"])
    return keys


def _unevaluated(walk: Any) -> Any:
    def unevaluated_properties(
        validator: Any, up: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = walk(validator, instance, schema)
        unevaluated = [
            key for key in instance
            if key not in evaluated and not _valid(validator.descend(instance[key], up, path=key, schema_path=key))
        ]
        if unevaluated:
            if up is False:
                joined, verb = _extras(sorted(unevaluated, key=str))
                yield ValidationError(f"Unevaluated properties are not allowed ({joined} {verb} unexpected)")
            else:
                joined, verb = _extras(unevaluated)
                yield ValidationError(
                    f"Unevaluated properties are not valid under the given schema ({joined} {verb} unevaluated and "
                    "invalid)"
                )

    return unevaluated_properties


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def linear(cls: type[Validator]) -> type[Validator]:
    """``cls`` (a jsonschema validator class) with every keyword that matches a pattern running it on RE2."""
    keywords: dict[str, Any] = {k: v for k, v in _KEYWORDS.items() if k in cls.VALIDATORS}
    if "unevaluatedProperties" in cls.VALIDATORS:
        walk = _evaluated_keys if "$dynamicRef" in cls.VALIDATORS else _evaluated_keys_2019
        keywords["unevaluatedProperties"] = _unevaluated(walk)
    extended: type[Validator] = extend(cls, keywords)  # type: ignore[no-untyped-call]
    return extended


def _re2_regex(instance: object) -> bool:
    if isinstance(instance, str):
        _searcher(instance)
    return True


def _python_regex(instance: object) -> bool:
    if isinstance(instance, str):
        re.compile(instance)
    return True


def _formats(cls: type[Validator], regex: Any, raises: Any) -> FormatChecker:
    checker = FormatChecker(())
    checker.checkers = {**cls.FORMAT_CHECKER.checkers, "regex": (regex, raises)}
    return checker


@functools.cache
def schema_formats(cls: type[Validator]) -> FormatChecker:
    """``cls``'s formats for checking a schema against its metaschema, where ``regex`` (every ``pattern``, and the
    names of ``patternProperties`` from Draft 6 on) is a pattern RE2 compiles; the cause a :class:`RegexError`."""
    return _formats(cls, _re2_regex, RegexError)


@functools.cache
def value_formats(cls: type[Validator]) -> FormatChecker:
    """``cls``'s formats for checking config values: a ``format: regex`` value only has to compile on Python's
    ``re`` (fleetflow does not match it, and what reads it may know lookaround), where parentheses nested 10,000
    deep are a RecursionError: an invalid value, not a traceback."""
    return _formats(cls, _python_regex, (re.error, RecursionError, OverflowError))
