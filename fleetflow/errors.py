"""One error family for fleetflow, and the one exit-code table.

Every error a user can cause is a :class:`Problem` (what is wrong, where, how to fix it). Problems are
collected, never raised one by one, so that a run reports all of them at once. Each error class carries its
exit code from :class:`ExitCode`, the one table (``fleetflow.cli.errors`` turns errors into messages and the
JSON envelope; ``docs/design.md`` shows the same table):

* 0 :attr:`ExitCode.DONE`: done.
* 1 :attr:`ExitCode.REFUSED`: :class:`InputError` (the input is wrong: YAML, schema, template, selector, names,
  an event payload...) or :class:`GateError` (the rollout gate or the promotion guarantee says no).
* 2 :attr:`ExitCode.USAGE`: :class:`UsageError`, the command line itself is wrong (a missing option, a bad
  value, an ``--environment`` that main does not define, a config file that is not right).
* 3 :attr:`ExitCode.FORGE`: :class:`ForgeError` / :class:`GitError`, the forge or git failed after retries.

The one way problems travel (the rule every module follows):

1. Code that checks input takes a :class:`Problems` collector, named ``problems``, and adds to it; it returns
   only its result, never ``(result, problems)`` tuples or ``result | list[Problem]`` unions.
2. The stage that owns the collector (loading a control plane, a render, a gate decision, a promotion step) ends
   with ``problems.raise_if_any()``: one :class:`InputError` carrying all of them. A problem that ends the stage
   on its own is raised at once as the error of its class (``raise InputError(Problem(...))``,
   ``raise UsageError("...")``); every error class takes a message, one problem, or many.
   A stage that reads several repos (a control plane's ``WorkloadRegistration``s) tries each and raises one
   :class:`GitError` naming every one git could not fetch.
3. A pydantic refusal becomes problems through :func:`validation_problems` (field path, the value given, where).
4. Nobody catches ``Exception``: code catches what a library documents (``YAMLError``, ``ValidationError``,
   ``OSError``, ``git.exc.GitError``, ``FleetflowError``...) and turns it into a problem. The only exceptions are
   the places where a user's own code runs: a template's expressions (``render/templates.py``), a JSON schema
   (``render/validation.py``) and YAML inside a config value (``render/composition.py``); each says so.
5. Only ``fleetflow.cli.errors`` turns an error into output and an exit code.

``tests/test_problem_rule.py`` holds rules 1 and 4 over the whole package (with :mod:`ast`). A warning travels
the same way: ``fleetflow.render.output.read_state`` adds "previous state is unreadable" to the collector it is
given and returns only the state.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple, cast

from pydantic import ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic_core import CoreSchema
from pydantic_core.core_schema import UnionSchema

from fleetflow.results import Result


class ExitCode(IntEnum):
    """What every fleetflow command exits with; the same mistake gives the same code in every command."""

    DONE = 0
    REFUSED = 1  # the input is wrong, or the gate says no
    USAGE = 2  # the command line is wrong
    FORGE = 3  # the forge or git failed after retries

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.DONE: "done",
    ExitCode.REFUSED: "the input (or the gate) says no",
    ExitCode.USAGE: "usage error",
    ExitCode.FORGE: "forge or git failure",
}

EXIT_CODES_HELP = ", ".join(f"{code.value} {code.meaning}" for code in ExitCode)


class Location(Result):
    """A place in a file. ``line`` and ``column`` are 1-based; either may be unknown."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    column: int | None = None

    def __init__(self, file: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(file=file, line=line, column=column)

    def __str__(self) -> str:
        text = self.file
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        return text


class Problem(Result):
    """One thing wrong with the input: a message, where it is, and how to fix it."""

    model_config = ConfigDict(frozen=True)

    message: str
    location: Location | None = None
    hint: str | None = None

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None) -> None:
        super().__init__(message=message, location=location, hint=hint)

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class FleetflowError(Exception):
    """Base of every error fleetflow raises on purpose. ``exit_code`` is what the CLI exits with."""

    exit_code: ExitCode = ExitCode.REFUSED

    def __init__(self, problems: str | Problem | Iterable[Problem]) -> None:
        """A message, one problem, or every problem found (reported sorted by place, each once)."""
        if isinstance(problems, str):
            found = [Problem(problems)]
        elif isinstance(problems, Problem):
            found = [problems]
        else:
            found = sorted(set(problems), key=problem_order)
        self._problems = found
        super().__init__("\n".join(str(p) for p in found))

    def problems(self) -> list[Problem]:
        return list(self._problems)


class InputError(FleetflowError):
    """The input is wrong. Carries every problem found, not just the first."""

    exit_code = ExitCode.REFUSED


class GateError(FleetflowError):
    """The rollout gate or the promotion guarantee refuses."""

    exit_code = ExitCode.REFUSED


class UsageError(FleetflowError):
    """The command line is wrong (missing option, conflicting flags, a name that does not exist)."""

    exit_code = ExitCode.USAGE


class GitError(FleetflowError):
    """A git operation failed (clone, fetch, push), after retries where retrying makes sense. ``command`` is the
    git subcommand that failed and ``reason`` git's own words (credentials masked), when known."""

    exit_code = ExitCode.FORGE

    def __init__(self, message: str, *, command: str | None = None, reason: str | None = None) -> None:
        self.command = command
        self.reason = reason
        super().__init__(message)


def shown_path(path: str) -> str:
    """A path as people read it: the bytes of a name that is not UTF-8 (Linux and git allow any; Python and
    fleetflow's git reads give them as surrogate escapes, so that they can be written back as they were) as
    ``\\xNN``. A message, a PR body, a JSON answer or a terminal holds UTF-8 only: listing a kept
    ``notes-caf\\xe9.txt`` stopped ``schedule`` with a UnicodeEncodeError until 2026-11-28."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def and_list(names: Sequence[str]) -> str:
    """``["a", "b", "c"]`` -> ``"a, b and c"``: names a message lists in a sentence."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def some_of(names: Sequence[str], shown: int) -> str:
    """The first ``shown`` of ``names``, comma-separated, and ", ..." when there are more: what a problem that
    stands for many names lists of them."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


@dataclass
class ForgeRequest:
    method: str
    url: str
    status: int | None = None


class ForgeError(FleetflowError):
    """The forge (GitHub, or the local forge) failed after retries. Carries the request that failed."""

    exit_code = ExitCode.FORGE

    def __init__(self, message: str, request: ForgeRequest | None = None) -> None:
        self.request = request
        if request is not None:
            status = f" -> {request.status}" if request.status is not None else ""
            message = f"{message} [{request.method} {request.url}{status}]"
        super().__init__(message)


def problem_order(problem: Problem) -> tuple[str, int, int, str]:
    """Where a problem is reported among others: by file, then line and column as numbers (line 2 before line 11),
    then message; one with no place first."""
    loc = problem.location
    if loc is None:
        return ("", 0, 0, problem.message)
    return (loc.file, loc.line or 0, loc.column or 0, problem.message)


@dataclass
class Problems:
    """Collects problems while a stage runs; ``raise_if_any`` ends the stage with all of them."""

    items: list[Problem] = field(default_factory=list)

    def add(self, message: str, location: Location | None = None, hint: str | None = None) -> None:
        self.items.append(Problem(message, location, hint))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.items.extend(problems)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise InputError(self.items)


ONE_OF = "one_of"
"""The error type of a union field's one refusal (:class:`OneOf`), and of a validator's refusal of a value of a kind
the field does not take (a duration, ``RolloutPolicy``); its context holds ``expected`` (what the field may be, in a
message's words) and ``hint`` (how to write it)."""


class OneOf:
    """What a union field may be, for its refusal: one problem saying so (``validation_problems``), not one per
    member of the union in pydantic's words ("spec.schema.dict[str,any]: Input should be a valid dictionary" and
    "spec.schema.str: Input should be a valid string" for one ``schema: true``, until 2026-11-28). Every union
    field of the specs and of the config file carries one (tests/test_documents_and_state.py holds that). A refusal
    inside a member is not shown: for a union of whole types. Written
    ``Annotated[str | dict[str, Any], OneOf(expected, hint)]``."""

    def __init__(self, expected: str, hint: str) -> None:
        self.expected = expected
        self.hint = hint

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        if schema["type"] != "union":
            raise TypeError(f"OneOf is for a union, not {source!r}")
        union = cast(UnionSchema, schema)
        union["custom_error_type"] = ONE_OF
        union["custom_error_message"] = f"must be {self.expected}"
        union["custom_error_context"] = {"expected": self.expected, "hint": self.hint}
        return union


class _Kind(NamedTuple):
    """What a field takes, by the type error pydantic gives for a value it refuses."""

    words: str  # what the field takes, in a message's words ("is a number, not text")
    fill: str | None  # how to fill it when left empty ({key}: the key, or '-' for a list item); None: not said


_WHOLE = _Kind("a whole number", "write a whole number after {key}")
_NUMBER = _Kind("a number", "write a number after {key}")
_BOOL = _Kind("true or false", "write true or false after {key}")
_MAPPING = _Kind("a mapping", "write its keys on the lines below {key}, indented more")
_LIST = _Kind("a list", "write its items on the lines below {key}, each after '- '")
_KINDS = {
    "string_type": _Kind("text", "write text after {key}"),
    "int_type": _WHOLE,
    "int_parsing": _WHOLE,
    "int_from_float": _Kind(_WHOLE.words, None),  # a value was given: never one left empty
    "float_type": _NUMBER,
    "float_parsing": _NUMBER,
    "finite_number": _Kind("a finite number", None),
    "bool_type": _BOOL,
    "bool_parsing": _BOOL,
    "dict_type": _MAPPING,
    "model_type": _MAPPING,
    "model_attributes_type": _MAPPING,
    "list_type": _LIST,
    "tuple_type": _LIST,
}


def validation_problems(
    error: ValidationError,
    where: Callable[..., Location],
    *,
    prefix: str = "",
    path: tuple[str | int, ...] = (),
    unknown_hint: str = "check the spelling (keys are camelCase)",
    empty: str = "",
    missing_hints: Mapping[str, str] | None = None,
    unknown_hints: Mapping[str, str] | None = None,
    written: Callable[..., str | None] | None = None,
) -> list[Problem]:
    """One problem per pydantic error, the one way a model's refusal becomes problems: the field path (``path``
    plus pydantic's), what is wrong, where it is (``where(*field path)``), and how to fix it; a union field's
    refusal (:class:`OneOf`) in one problem. A value left empty (``repo:`` and nothing after it, or ``null``) is
    said to be empty, with what to write there, not in pydantic's words ("Input should be a valid string, got
    None", until 2026-11-28); so is a value of the wrong kind (:func:`_wrong_kind`: "spec.repo is a number, not
    text", "Input should be a valid string, got 5" until 2026-11-29). ``missing_hints``: how to write a required
    field that is missing (or written empty), by its pydantic path (``deploymentTargetSelector.labelSelector``);
    ``unknown_hints``: where a field that is unknown at its place belongs, by its pydantic path (``workspace``).
    ``written(*field path)``: a number or boolean as the file writes it (``1.10``), for a hint that quotes it."""
    problems: list[Problem] = []
    for item in error.errors():
        loc: tuple[str | int, ...] = (*path, *item["loc"])
        field_path = ".".join(str(p) for p in loc) or empty
        kind = item["type"]
        given = item.get("input")
        ctx = item.get("ctx") or {}
        hint: str | None = None
        if kind == "missing":  # not written, or (a model's own "missing") written with no value
            what = ": required field is missing" if given is not None else " is empty"
            hint = (missing_hints or {}).get(".".join(str(p) for p in item["loc"])) or f"add {field_path}"
        elif kind == "extra_forbidden":
            what = ": unknown field"
            hint = (unknown_hints or {}).get(".".join(str(p) for p in item["loc"])) or unknown_hint
        elif given is None and loc and (fill := _fill(kind, ctx, item["msg"], loc[-1])) is not None:
            what, hint = " is empty", fill
        elif kind == ONE_OF:
            what, hint = f" is {value_kind(given)}, not {ctx['expected']}", str(ctx["hint"])
        elif loc and (wrong := _wrong_kind(kind, given, ctx, loc[-1], written(*loc) if written else None)):
            what, hint = wrong
        else:
            what = ": " + item["msg"].removeprefix("Value error, ")
            if kind != "value_error":  # our own value errors already name the value
                what += _got(given)
            if kind in ("literal_error", "enum"):
                hint = "use one of the values listed"
        problems.append(Problem(f"{prefix}{field_path}{what}", where(*loc), hint))
    return problems


def _fill(kind: str, ctx: Mapping[str, Any], message: str, last: str | int) -> str | None:
    """How to fill a field (``last``: its key, or its index in a list) that refused to be empty with the error
    ``kind``; None when not known."""
    key = f"'{last}:'" if isinstance(last, str) else "'-'"
    if kind == ONE_OF:
        return f"write {ctx['expected']} after {key}"
    if kind in ("literal_error", "enum"):
        return f"write one of {ctx['expected']} after {key}"
    if kind == "value_error":  # our own validator's words say what the field takes
        return message.removeprefix("Value error, ")
    found = _KINDS.get(kind)
    return found.fill.format(key=key) if found is not None and found.fill is not None else None


_BOUNDS = {  # a number out of its range: (its bound in the error's context, how the value stands to the bound,
    # what to write instead)
    "greater_than_equal": ("ge", "less than", "{bound} or more"),
    "greater_than": ("gt", "not more than", "more than {bound}"),
    "less_than_equal": ("le", "more than", "{bound} or less"),
    "less_than": ("lt", "not less than", "less than {bound}"),
}


def _wrong_kind(
    kind: str, given: object, ctx: Mapping[str, Any], last: str | int, written: str | None
) -> tuple[str, str] | None:
    """A value of the wrong kind (or out of what its type allows) in fleetflow's words: what it is and what the field
    takes (" is a number, not text"), and how to write it, for the field ``last`` (its key, or its index in a
    list); None for an error this does not word. ``written``: the number or boolean as the file writes it."""
    key = f"'{last}:'" if isinstance(last, str) else "the item"
    at = f"after {key}" if isinstance(last, str) else "as the item"
    line = f"{yaml_text(last)}: " if isinstance(last, str) else ""  # how the hint's YAML starts its line
    expected = _KINDS[kind].words if kind in _KINDS else None
    if kind in ("literal_error", "enum"):
        allowed = re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected", "")))
        what = f" is {_shown(given)}, not {ctx['expected']}"
        close = [v for v in allowed if isinstance(given, str) and v.lower() == given.strip().lower()]
        if close:
            return what, f"write {line}{yaml_text(close[0])}; the values are case-sensitive"
        return what, f"write one of {ctx['expected']} {at}"
    if kind in _BOUNDS and isinstance(given, int | float) and not isinstance(given, bool):
        name, relation, instead = _BOUNDS[kind]
        bound = ctx.get(name)
        return f" is {given!r}, {relation} {bound}", f"write {instead.format(bound=bound)} {at}"
    if kind in ("too_short", "too_long") and isinstance(given, list | tuple):
        least, most = ctx.get("min_length"), ctx.get("max_length")
        items = "one item" if (least or most) == 1 else f"{least or most} items"
        if kind == "too_long":
            return f" has {len(given)} items, more than {most}", f"keep at most {items} below {key}"
        what = " is an empty list" if not given else f" has {len(given)} items, fewer than {least}"
        return what, f"write at least {items} below {key}, each after '- '"
    if kind == "string_too_short" and given == "":  # ``statusContext: ""``: text a field needs, written empty
        return " is empty text", f"write the text {at}, or leave {key} out"
    if expected is None:
        return None
    if kind == "int_from_float":
        return f" is {written or repr(given)}, not {expected}", f"write a whole number {at}"
    if kind == "finite_number":  # .inf, .nan, or a float too large for one (1e400)
        return f" is {written or repr(given)}, not {expected}", f"write a number {at}"
    what = f" is {value_kind(given)}, not {expected}"
    if expected == "text":
        if isinstance(given, bool | int | float):
            as_written = written or (str(given).lower() if isinstance(given, bool) else repr(given))
            return what, f"quote it if it is meant as text: {line}{json.dumps(as_written)}"
        return what, f"write the text {at}; quote text that starts with '[' or '{{'"
    if expected == "true or false":
        return what, f"write {line}true or {line}false" if line else "write true or false"
    if expected == "a list":
        flow = _flow_items(given) if isinstance(given, str) and isinstance(last, str) else None
        if flow is not None:
            return what, f"write a list: {line}[{flow}]"
        return what, str(_fill("list_type", ctx, "", last))
    if expected == "a mapping":
        fill = str(_fill("dict_type", ctx, "", last))
        return what, fill + (", without '- '" if isinstance(given, list) else "")
    return what, f"write {expected} {at}"


def _flow_items(text: str) -> str | None:
    """The items of a list written in flow style (``dev, qa`` for the text ``dev, qa``): each plain when YAML reads
    it back as that text, quoted otherwise; None for a text too long to show."""
    if not text.strip() or len(text) > 60 or "\n" in text:
        return None
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 1 and all(_PLAIN_TEXT.fullmatch(part) for part in parts):
        return ", ".join(yaml_text(part) for part in parts)
    return yaml_text(text)


_PLAIN_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null"})  # booleans and null in
# YAML 1.1 or 1.2, in any case (a hint is right for every reader): https://yaml.org/type/bool.html (1.1: y, yes, on,
# ... too), https://yaml.org/spec/1.2.2/ (core schema: true, false, null)


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate ``word`` is most likely a typo of, for a hint's "did you mean": :func:`difflib.get_close_matches`
    (``cutoff`` 0.6 is its own default; the label hints take 0.5), None when none is close enough."""
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def meant(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` names in other letters (``Dev`` for ``dev``), else the one it is most likely a typo of
    (:func:`closest`): the "did you mean" of a name given by hand (``--environment``, a manual promotion's input)."""
    names = sorted(candidates)
    return next((n for n in names if n.lower() == word.lower()), None) or closest(word, names)


def yaml_text(text: str) -> str:
    """``text`` written so that YAML reads it back as that text, in a block or in a flow (``[...]``, ``{...}``):
    plain when it is a word of letters, digits, '.', '_', '/' and '-' that starts with a letter or '_' and is no
    word a YAML reads as a boolean or null; double-quoted otherwise (JSON's quoting: YAML 1.2 takes JSON as "an
    official subset", https://yaml.org/spec/1.2.2/, and fleetflow's own reader reads the hint back in the tests)."""
    if _PLAIN_TEXT.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _shown(value: object) -> str:
    """A value in a message: a text quoted (cut at 80 characters), anything else by its kind."""
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 80 else f"{text[:77]}..."
    return value_kind(value)


def value_kind(value: object) -> str:
    """What a loaded value is, in a message's words: "a list", "a mapping", "a boolean", "a number", "text" (a
    document that is a list was "a CommentedSeq", ruamel's class name, until 2026-11-28)."""
    if value is None:
        return "empty"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "text" if isinstance(value, str) else f"a {type(value).__name__}"


def _got(value: object) -> str:
    """``, got 'Like'``: the value given, for a scalar short enough to quote (an enum typo names what was typed)."""
    if value is None or isinstance(value, bool | int | float | str):
        text = repr(value)
        return f", got {text}" if len(text) <= 80 else f", got {text[:77]}..."
    return ""


def unknown_environment(name: str, known: Iterable[str]) -> UsageError:
    """``--environment NAME`` names no Environment on main: the same usage error (exit 2) from every command."""
    known = sorted(known)
    names = ", ".join(known) or "none"
    message = f"unknown environment {name!r}; environments on main: {names}"
    # Dev for dev, prdo for prod: said in the hint (the message stays what scripts match)
    near = meant(name, known)
    return UsageError(Problem(message, None, f"did you mean --environment {near}?") if near else message)
