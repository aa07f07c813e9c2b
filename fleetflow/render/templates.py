"""Render ``Template`` manifests with sandboxed Jinja2.

Pure: a :class:`TemplateSource` and plain variables in, bytes out. One :class:`TemplateEngine` holds one
sandboxed Jinja2 environment (strict undefined, no autoescape, trailing newlines kept) with the
fleetflow filters registered both as filters and as globals, so ``{{ ConfigData | toYaml }}`` and
``{{ toYaml(ConfigData) }}`` both work. Templates are compiled once and rendered many times; a render does no
per-call setup beyond Jinja's own context.

Every failure becomes a :class:`~fleetflow.errors.Problem` that points at the file and line of the template
line that failed (``manifest_locations`` give the first content line of each manifest string).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, ParamSpec, TypeVar

import yaml
from jinja2 import StrictUndefined, Template, TemplateSyntaxError, Undefined, UndefinedError, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import internalcode, missing
from ruamel.yaml.error import MarkedYAMLError
from yaml._yaml import CParser

from fleetflow.errors import InputError, Location, Problem, closest
from fleetflow.model.documents import to_plain, unwalkable
from fleetflow.model.yaml_keys import KeyProblem, value_yaml, where_in
from fleetflow.render import configmap_data, duplicate_keys
from fleetflow.render.canonical import canonical_json
from fleetflow.render.yamlemit import to_yaml

__all__ = [
    "CompiledTemplate",
    "TemplateEngine",
    "TemplateRenderError",
    "TemplateSource",
    "convert_go_template",
]

_YAML_TYPES = frozenset({"yaml", "yml"})
_MAX_REPEAT = 1_000_000  # longest string/list a template may build with * or **
_MAX_INDENT = 1_000  # widest indent(width) (10**9 spaces on every line was a MemoryError)
MAX_FILE_BYTES = 100 * 1000 * 1000
"""The largest file a template may render: GitHub refuses a push with a file over 100 MB ("GitHub blocks files
larger than 100 MiB", docs.github.com, "About large files on GitHub"; we count the stricter 100 MB). A loop that
would render gigabytes stops here instead of filling memory: the output is counted as it is made."""
_GO_SYNTAX = re.compile(r"\{\{-?\s*(?:\.|/\*|(?:if|range|with|end|include|template|define)\b|[^}]*\s\$?\.[A-Za-z])")
_GO_HINT = "templates are Jinja2, not Go templates: write {{ Namespace }}, not {{ .Namespace }}"
# Go's forms whose leading dots are gone (the conversion the docs give) and that Jinja still cannot parse, found on
# the line the syntax error is at; only on the error path
_GO_FORMS = (
    (re.compile(r"\{\{-?\s*range\b"), "templates are Jinja2, not Go templates: {{ range $k, $v := .ConfigData }} "
     "... {{ end }} is {% for k, v in ConfigData.items() %} ... {% endfor %}"),
    (re.compile(r"\{\{-?\s*(?:if|else|end|with)\b"), "templates are Jinja2, not Go templates: {{ if .X }} ... "
     "{{ else }} ... {{ end }} is {% if X %} ... {% else %} ... {% endif %}"),
    (re.compile(r"\{\{-?\s*[A-Za-z_]\w*\s+(?!(?:and|or|not|in|is|if|else)\b)[\w.\"'$`]"),
     "templates are Jinja2, not Go templates: a function takes its value through a pipe and its other arguments "
     "in parentheses, {{ ConfigData | toYaml | indent(2) }}, not {{ toYaml ConfigData | indent 2 }} "
     "(fleetflow.render.templates.convert_go_template converts Kalypso's templates)"),
)


def _go_syntax_hint(text: str, exc: TemplateSyntaxError) -> str | None:
    """The hint for a manifest Jinja cannot parse: the Go form on the line of the error, else the general one when
    the manifest looks like a Go template anywhere. Until 2026-11-29 ``{{ toYaml ConfigData | indent 2 }}`` (a
    Kalypso template whose dots were dropped, as the docs said to) got "expected token 'end of print statement',
    got 'ConfigData'" and no hint, and ``{{ trunc 63 .X }}`` the hint to drop the dot."""
    lines = text.splitlines()
    line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
    for form, hint in _GO_FORMS:
        if form.search(line):
            return hint
    return _GO_HINT if _GO_SYNTAX.search(text) else None
# Where an alias may stand: libyaml's scanner reads a token at the start of the text, after white space, after a
# flow indicator ([ { ,) or after the ':' of a JSON-like key in flow ({"a":*x}), and an alias is '*' and at least
# one anchor character (yaml_parser_scan_anchor: ASCII letters, digits, '_' and '-'). A '*' anywhere else (in
# quotes: "*.example.com", "*/5 * * * *") is text, or a mistake the syntax check finds.
_MAYBE_ALIAS = re.compile(r"(?:^|[\s\[{,:\ufeff])\*[0-9A-Za-z_-]")


@dataclass(frozen=True)
class TemplateSource:
    """One ``Template`` document, as the loader read it."""

    name: str
    type: str
    content_type: str
    manifests: tuple[str, ...]
    location: Location
    manifest_locations: tuple[Location, ...]


class TemplateRenderError(InputError):
    """A template failed to render for one assignment. Carries exactly one problem. ``in_text``: the problem is in
    the text the template rendered (its YAML or JSON, at a line of what it renders), which ``fleetflow explain
    --rendered`` shows, rather than in the template's own lines."""

    def __init__(self, problem: Problem, in_text: bool = False) -> None:
        super().__init__([problem])
        self.problem = problem
        self.in_text = in_text


@dataclass(frozen=True)
class RenderedManifest:
    """One manifest of a template as it renders for one assignment (``fleetflow explain --rendered``).

    ``text``: what it adds to the file, blank lines at both ends dropped (the text whose lines a YAML or JSON
    problem counts), None when it renders nothing (it adds nothing) or fails to render. ``problem``: what fails the
    assignment at this manifest, if anything; with a text, the text fails its YAML or JSON check."""

    index: int  # 0-based
    location: Location  # the manifest's first line in its template file
    text: str | None
    problem: Problem | None


@dataclass(frozen=True)
class RenderedManifests:
    """Every manifest of a template as it renders for one assignment (:meth:`CompiledTemplate.render_each`), and
    ``file_problem``: what fails the file they make together (several JSON documents in one), None if nothing."""

    manifests: list[RenderedManifest]
    file_problem: Problem | None


class _TooLarge(Exception):
    """A template rendering past :data:`MAX_FILE_BYTES` (counted in characters, each at least a byte)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"more than {size} characters")


RENDER_SECONDS = 10.0  # the longest one template may render for one assignment (a manifest renders in about 0.1 ms)
_TICK = 1.0  # how often the budget is looked at (seconds)


class _TooLong(Exception):
    """A template rendering for longer than :data:`RENDER_SECONDS` (raised by :func:`time_budget`'s alarm)."""


class _Watch:
    since: float | None = None  # when the template rendering now started (time.monotonic), None between renders


_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextmanager
def time_budget() -> Iterator[None]:
    """While it holds, a template that renders for more than :data:`RENDER_SECONDS` for one assignment is stopped
    there (its assignment fails at the template, as a template error does). Jinja's sandbox bounds what a template
    makes (``range`` to 100,000 items, the output by :data:`MAX_FILE_BYTES`), not how long it runs: two nested
    ``range(100000)`` loops that render nothing ran for hours and stopped every job that rendered (the pull-request
    check too) until 2026-11-28. An alarm looks every :data:`_TICK` seconds (``signal.setitimer``, one signal a
    second, not a check per step). Python runs signal handlers in the main thread only, so elsewhere, or when
    something else owns ``SIGALRM``, there is no budget."""
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer")
            or signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL):
        yield
        return

    def look(_signum: int, _frame: object) -> None:
        since = _Watch.since
        if since is not None and time.monotonic() - since > RENDER_SECONDS:
            raise _TooLong()  # again at the next look, should something in the template swallow it

    previous = signal.signal(signal.SIGALRM, look)
    signal.setitimer(signal.ITIMER_REAL, _TICK, _TICK)
    try:
        yield
    finally:  # in this order: once ``since`` is None the alarm raises nothing, so the rest cannot be cut short
        _Watch.since = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def under_time_budget(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` run under :func:`time_budget`."""

    @functools.wraps(func)
    def budgeted(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with time_budget():
            return func(*args, **kwargs)

    return budgeted


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a rendered JSON manifest: Python's ``json`` reads them, JSON does
    not (RFC 8259, section 6: "Numeric values that cannot be represented ... such as Infinity and NaN are not
    permitted"), nor do the parsers GitOps agents use."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value")


class TemplateRequiredError(Exception):
    """Raised by the ``required`` filter; its message is the template author's."""


# -- filters -------------------------------------------------------------------------------------------


def _defined(value: Any) -> Any:
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
    return value


def to_yaml_filter(value: Any) -> str:
    """``toYaml``: block YAML without the final newline (as sprig's ``toYaml``)."""
    return to_yaml(_defined(value))[:-1]


class _IndentedYamlError(ValueError):
    """A map or a list written with ``toYaml`` on a line indented before it, without ``indent``/``nindent``."""

    def __init__(self, width: int) -> None:
        super().__init__(f"toYaml writes a map or a list on several lines after {width} spaces on its line")
        self.width = width


def to_yaml_indented_filter(value: Any, width: int) -> str:
    """``toYaml`` where the template writes it after ``width`` spaces on its line (``  {{ X | toYaml }}``; the
    engine puts it there when it compiles the template, :func:`_mark_indented_to_yaml`). Only its first line
    follows those spaces, the others start at the beginning of theirs: a map's second key is read one level up
    (``data:\n  a: 1\nb: 2`` is YAML, ``b`` no longer under ``data``), and the file is wrong with no error. A map
    or a list that writes more than one line is an error there; a value of one line, or a text (a block scalar
    whose lines YAML reads by their own indentation), is written as ``toYaml`` writes it."""
    text = to_yaml_filter(value)
    if "\n" in text and isinstance(value, Mapping | list | tuple):
        raise _IndentedYamlError(width)
    return text


def _mark_indented_to_yaml(template: nodes.Template) -> None:
    """Every ``toYaml`` written right after spaces at the start of a line (``  {{ X | toYaml }}``, its last step,
    not piped on) made :func:`to_yaml_indented_filter`, told how many spaces: it is checked when it renders, the
    rest of the template pays nothing. A ``toYaml`` after a tag (``{% if %}``) is left as it is: the text before it
    on its line is not known here."""
    for output in template.find_all(nodes.Output):
        before: nodes.Node | None = None
        for node in output.nodes:
            if isinstance(before, nodes.TemplateData):
                line = before.data.rsplit("\n", 1)[-1]
                width = len(line)
                if width and not line.strip(" "):
                    if isinstance(node, nodes.Filter) and node.name == "toYaml" and not node.args:
                        node.name = "_toYamlIndented"
                        node.args = [nodes.Const(width)]
                    elif (isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name)
                          and node.node.name == "toYaml" and len(node.args) == 1):
                        node.node = nodes.Name("_toYamlIndented", "load")
                        node.args = [*node.args, nodes.Const(width)]
            before = node


def to_json_filter(value: Any, indent: int | None = None) -> str:
    """``toJson``: sorted keys; compact unless ``indent`` is given."""
    if indent is None:
        return json.dumps(_defined(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(_defined(value), sort_keys=True, indent=indent, ensure_ascii=False)


_yaml_loader = value_yaml()


class _FromYamlError(ValueError):
    """The text given to ``fromYaml`` does not read as YAML, or holds a key Kubernetes refuses: what and where in
    the text, and how to fix it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def from_yaml_filter(text: str) -> Any:
    """``fromYaml``: parse a YAML string into plain data, read as a document is: a key that YAML resolves to a
    boolean or a number is the text sigs.k8s.io/yaml makes of it (``1.0:`` is ``"1"``), as Helm's ``fromYaml``
    gives it (``yaml.Unmarshal`` of sigs.k8s.io/yaml, ``pkg/engine/funcs.go``); a null key, an integer key outside
    int64 or a list as a key is an error, as it is in a document; a date-time stays its text, ``!!binary`` is its
    decoded text. Aliases that would build the value out endless or huge, or nesting deeper than a document may,
    are an error too (until 2026-11-29 keys were Python's: ``True``, ``1.0``, a key ``1.0`` and a key ``true`` one
    duplicate)."""
    text = str(_defined(text))
    try:
        loaded = _yaml_loader.load(text)
    except KeyProblem as exc:
        raise _FromYamlError(f"fromYaml: in its text, {exc.message}{where_in(exc.mark, 'its text')}",
                             exc.hint) from None
    except MarkedYAMLError as exc:
        what = (exc.problem or exc.context or "not YAML").strip()
        where = where_in(exc.problem_mark or exc.context_mark, "its text")
        raise _FromYamlError(f"fromYaml: its text is not YAML: {what}{where}",
                             "fix the YAML of the text given to fromYaml") from None
    if unwalkable(loaded, text):
        raise _FromYamlError("fromYaml: its text builds out endless or huge (aliases), or nests too deep",
                             "give fromYaml YAML without aliases of aliases, nested less deep")
    return to_plain(loaded)


def from_json_filter(text: str) -> Any:
    """``fromJson``: parse a JSON string."""
    return json.loads(str(_defined(text)))


def indent_filter(text: Any, width: int = 4, first: bool = True, blank: bool = False) -> str:
    """``indent``: prefix lines with ``width`` spaces, **sprig semantics**.

    This deliberately replaces Jinja's builtin ``indent``, which leaves the first line alone: Kalypso
    templates write ``data:\\n{{ toYaml(ConfigData) | indent(2) }}`` and need every line indented.
    ``first=False`` skips the first line (Jinja's default behaviour); blank lines stay blank unless
    ``blank=True``.
    """
    if not isinstance(width, int) or not 0 <= width <= _MAX_INDENT:
        raise ValueError(f"indent width {width!r}: give a whole number from 0 to {_MAX_INDENT}")
    pad = " " * width
    lines = str(_defined(text)).split("\n")
    out = [line if not (blank or line.strip()) else pad + line for line in lines]
    if not first:
        out[0] = lines[0]
    return "\n".join(out)


def nindent_filter(text: Any, width: int = 4) -> str:
    """``nindent``: a newline, then ``indent(width)`` (sprig)."""
    return "\n" + indent_filter(text, width)


def hash_filter(value: Any, length: int | None = None) -> str:
    """``hash``: sha256 hex of a string (other values: of their compact sorted JSON), optionally truncated."""
    value = _defined(value)
    text = value if isinstance(value, str) else canonical_json(value)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return digest if length is None else digest[: int(length)]


def _stringify_scalar(value: Any) -> str:
    if type(value) is str or isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return canonical_json(value)


def stringify_filter(value: Any) -> Any:
    """``stringify``: a mapping whose values are all strings (for ConfigMap ``data``), or one string.

    str unchanged, bool → ``true``/``false``, None → ``""``, numbers → ``str``, maps and lists → compact
    sorted JSON.
    """
    value = _defined(value)
    if isinstance(value, Mapping):
        return {str(k): _stringify_scalar(v) for k, v in value.items()}
    return _stringify_scalar(value)


def quote_filter(value: Any) -> str:
    """``quote``: a double-quoted string (JSON escaping), non-strings stringified first."""
    return json.dumps(_stringify_scalar(_defined(value)), ensure_ascii=False)


def required_filter(value: Any, message: str = "a required value is missing") -> Any:
    """``required``: the value, or a render error with ``message`` if it is undefined, None or empty."""
    if (
        isinstance(value, Undefined)
        or value is None
        or (isinstance(value, str | Mapping | list) and not value)
    ):
        raise TemplateRequiredError(str(message))
    return value


def default_filter(value: Any, default_value: Any = "", boolean: bool = False) -> Any:
    """``default``: Jinja's, except that null is a value not given, as it is to Helm's and Go's ``default``: ``db:``
    with nothing after it in a ConfigMap takes the default (with Jinja's own it rendered ``None``). ``boolean``:
    every empty or false value too, as Jinja's."""
    if value is None or isinstance(value, Undefined) or (boolean and not value):
        return default_value
    return value


def finalize(value: Any) -> Any:
    """What ``{{ ... }}`` writes for a value: a string as it is; null as nothing, true and false as ``true`` and
    ``false`` (as Helm and Kalypso's Go templates write them, and ``stringify``); a map or a list as compact JSON
    (``toJson``), which YAML reads as the same map or list. Python's own words (``None``, ``True``, ``{'a': 'b'}``)
    were written until 2026-11-29: ``image: None`` is the text "None" to go-yaml (v3 ``resolve.go``: null is
    ``~``, ``null``, ``Null``, ``NULL`` or nothing), and a quote or a backslash in a Python repr is not YAML's.
    Jinja calls it for every ``{{ }}``: a string costs one type check."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, Mapping | list | tuple):
        return to_json_filter(value)
    return value


FILTERS: dict[str, Any] = {
    "toYaml": to_yaml_filter,
    "toJson": to_json_filter,
    "fromYaml": from_yaml_filter,
    "fromJson": from_json_filter,
    "indent": indent_filter,
    "nindent": nindent_filter,
    "hash": hash_filter,
    "stringify": stringify_filter,
    "quote": quote_filter,
    "required": required_filter,
}
_ENGINE_ONLY = {"_toYamlIndented": to_yaml_indented_filter}  # put in by the engine (_mark_indented_to_yaml)


# -- environment ---------------------------------------------------------------------------------------


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox, immutable flavour, plus a size limit on ``*`` and ``**``.

    Immutable: the variables are shared between renders (never copied, for speed), so a template must not be
    able to ``update``/``pop``/``append`` them. The size limit keeps a template from exhausting memory.
    """

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > 1000:
                raise SecurityError("exponent too large in the template sandbox")
            return left**right
        if (
            isinstance(left, str | list | tuple)
            and isinstance(right, int)
            and len(left) * right > _MAX_REPEAT
        ) or (
            isinstance(right, str | list | tuple)
            and isinstance(left, int)
            and len(right) * left > _MAX_REPEAT
        ):
            raise SecurityError("repetition too large in the template sandbox")
        return left * right


class _MissingError(UndefinedError):
    """A name or a key a template looked up that is not there, with what it was looked up in (``obj``: Jinja's
    ``missing`` for a variable) and the name or key: enough to say which value lacked which key, and what it has
    instead (:func:`_undefined_detail`)."""

    def __init__(self, message: str, obj: Any, name: Any) -> None:
        super().__init__(message)
        self.obj = obj
        self.name = name


class _Undefined(StrictUndefined):
    """Jinja's :class:`StrictUndefined` whose error keeps what was looked up and where (:class:`_MissingError`).
    Only a failed lookup makes one, and only using it costs more than Jinja's own: a render that finds every name
    pays nothing."""

    __slots__ = ()

    @internalcode
    def _fail_with_undefined_error(self, *args: Any, **kwargs: Any) -> NoReturn:
        if self._undefined_exception is not UndefinedError:  # the sandbox's SecurityError for an unsafe attribute
            raise self._undefined_exception(self._undefined_message)
        raise _MissingError(self._undefined_message, self._undefined_obj, self._undefined_name)


# StrictUndefined's operators are Undefined's function itself (class attributes bound when Jinja's class was made),
# not a look-up of the method by name: each is pointed at the override
for _name, _value in list(vars(Undefined).items()) + list(vars(StrictUndefined).items()):
    if _value is Undefined._fail_with_undefined_error and _name != "_fail_with_undefined_error":
        setattr(_Undefined, _name, _Undefined._fail_with_undefined_error)


_SHOWN_KEYS = 20  # of a map's keys, named in a missing key's hint
_HELM = {
    "Values": "Helm's .Values is ConfigData here: {{ ConfigData.replicas }}",
    "Release": "Helm's .Release.Namespace is Namespace here: {{ Namespace }}",
    "Chart": "there is no Chart: a template renders one workload's deployment target, its name is Workload",
}


def _undefined_detail(
    exc: UndefinedError, variables: Mapping[str, Any], subject: str, line: str | None
) -> tuple[str, str]:
    """The message (after the template and the assignment) and the hint for a name or a key that is not there. The
    message names the value that lacks the key as the template's ``line`` writes it, or by its path in the variables
    when it is found there (the same for every assignment, so that one mistake stays one problem), and the hint the
    nearest name or key there is
    (:func:`_nearest`), then the keys that value has ``for`` the assignment (``same_problem_once`` keeps those of
    the first assignment it names). Only on the error path: a render that finds every name never comes here."""
    if not isinstance(exc, _MissingError):
        what = "missing key" if "has no attribute" in str(exc.message) else "undefined variable"
        return f"{what}: {exc.message}", "variables: " + ", ".join(sorted(variables))
    name, obj = exc.name, exc.obj
    if obj is missing:  # a variable
        names = sorted(variables)
        hint = f"variables: {', '.join(names)}"
        if isinstance(name, str) and name in _HELM:
            hint = f"{_HELM[name]}; {hint}"
        elif isinstance(name, str):
            near = _nearest(name, [*names, *FILTERS])
            if near is not None:
                hint = f"did you mean {near!r}? {hint}"
        return f"undefined variable: {exc.message}", hint
    path = _written(line, name, obj, variables) or _path_of(obj, variables)
    kind = _kind_of(obj)
    if isinstance(obj, Mapping):
        keys = sorted(str(k) for k in obj)
        shown = ", ".join(keys[:_SHOWN_KEYS]) + (f", ... ({len(keys)} in all)" if len(keys) > _SHOWN_KEYS else "")
        has = f"for {subject}, {path or 'that map'} " + (f"has: {shown}" if keys else "is empty")
        near = _nearest(str(name), keys)
        looked = f"{path}.{name}" if path and isinstance(name, str) and name.isidentifier() else None
        if looked is not None and line is not None and "default" in line and re.search(
                rf"{re.escape(looked)}\s*(?:\.|\[)", line):  # ConfigData.db.host | default(..): db is missing
            tail = (f"a default covers only the key right before it: a map that some assignments do not set needs "
                    f"its own, ({looked} | default({{}})).KEY | default(...)")
        else:
            tail = "a key that some assignments do not set needs | default(...)"
        hint = f"did you mean {near!r}? {has}" if near is not None else f"{has}; {tail}"
        return f"missing key: {path or 'a map'} has no key {name!r}", hint
    if callable(obj) and not isinstance(obj, Mapping | list | tuple | str):  # {{ quote .Values.x }}: Go's way
        return (f"missing key: {path or 'a function'} is a function, it has no key {name!r}",
                "templates are Jinja2, not Go templates: give a function its value with a pipe, {{ ConfigData.x | "
                "quote }}, or in parentheses, quote(ConfigData.x), not as {{ quote .x }}")
    if obj is None:
        hint = "a value written with nothing after its ':' is null: give it its map, or test it with {% if %} first"
    elif isinstance(obj, list | tuple):
        hint = "loop over a list ({% for item in ... %}) or take one of its items ([0]); a list has no keys"
    else:
        hint = "only a map has keys: read the value itself, or give the map the key belongs to"
    return f"missing key: {path or 'the value'} is {kind}, it has no key {name!r}", hint


def _nearest(name: str, candidates: list[str]) -> str | None:
    """The candidate ``name`` is most likely a typo of: the same but for case, else the closest
    (:func:`~fleetflow.errors.closest`)."""
    folded = name.casefold()
    for candidate in candidates:
        if candidate.casefold() == folded:
            return candidate
    return closest(name, candidates)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return f"a {type(value).__name__}"


_STEP = r"""(?:\.[A-Za-z_]\w*|\[\s*(?:"[^"\\]*"|'[^'\\]*'|-?\d+)\s*\])"""
_CHAIN = re.compile(rf"(?<![\w.\]\)'\"])([A-Za-z_]\w*)((?:\s*{_STEP})+)")
_STEPS = re.compile(_STEP)


def _written(line: str | None, name: Any, obj: Any, variables: Mapping[str, Any]) -> str | None:
    """The value that lacks key ``name`` as ``line`` (the template line that failed) writes it: the expression
    before the look-up of ``name`` that reads ``obj`` from the variables (``ConfigData.db`` of ``{{
    ConfigData.db.host }}``), or, when only one expression there looks ``name`` up, that one as written (``item`` of
    ``{{ item.host }}`` in a loop). None when the line does not tell."""
    if line is None:
        return None
    found: list[str] = []
    for match in _CHAIN.finditer(line):
        head, steps = match.group(1), _STEPS.findall(match.group(2))
        value: Any = variables.get(head, missing)
        for at, step in enumerate(steps):
            written = head + "".join(re.sub(r"\s+", "", s) for s in steps[:at])
            if _step_key(step) == name:
                if value is obj:
                    return written
                if head not in variables:  # a loop's or a set's name: its value is not known here
                    found.append(written)
            try:
                value = value[_step_key(step)]
            except (LookupError, TypeError):
                value = missing
    return found[0] if len(found) == 1 else None


def _step_key(step: str) -> Any:
    if step.startswith("."):
        return step[1:]
    inner = step[1:-1].strip()
    return inner[1:-1] if inner[:1] in "\"'" else int(inner)


_PATH_BUDGET = 10_000  # values looked at to find where a value sits in the variables


def _path_of(obj: Any, variables: Mapping[str, Any]) -> str | None:
    """Where ``obj`` sits in the variables, as a template writes it (``ConfigData.db``, ``Labels["app.kubernetes.io
    /name"]``, ``ConfigData.ports[0]``); None when it is not found (a value the template made) within
    :data:`_PATH_BUDGET` values. A variable is found by identity at the top; deeper, only a map or a list is
    looked for (the same text or number may stand in many places)."""
    for name, value in variables.items():
        if value is obj:
            return str(name)
    if not isinstance(obj, Mapping | list):
        return None
    queue: list[tuple[str, Any]] = [(str(n), v) for n, v in variables.items()]
    seen = 0
    while queue and seen < _PATH_BUDGET:
        nxt: list[tuple[str, Any]] = []
        for path, value in queue:
            seen += 1
            items: Any = value.items() if isinstance(value, Mapping) else (
                enumerate(value) if isinstance(value, list) else ())
            for key, child in items:
                step = (f".{key}" if isinstance(key, str) and key.isidentifier() else
                        f"[{key}]" if isinstance(key, int) else f"[{json.dumps(str(key), ensure_ascii=False)}]")
                if child is obj:
                    return path + step
                if isinstance(child, Mapping | list):
                    nxt.append((path + step, child))
        queue = nxt
    return None


class TemplateEngine:
    """Compiles :class:`TemplateSource` objects; holds the one sandboxed environment."""

    def __init__(self) -> None:
        env = _Sandbox(
            undefined=_Undefined,
            autoescape=False,
            keep_trailing_newline=True,
            auto_reload=False,
            finalize=finalize,
        )
        env.filters.update(FILTERS)
        env.filters["default"] = env.filters["d"] = default_filter  # a filter only: a global default() is not Jinja's
        env.globals.update(FILTERS)
        env.filters.update(_ENGINE_ONLY)
        env.globals.update(_ENGINE_ONLY)
        self.environment = env

    def compile(self, template: TemplateSource) -> CompiledTemplate:
        """Compile every manifest; raise :class:`InputError` with one problem per broken manifest."""
        env = self.environment
        globals_ = dict(env.make_globals(None))  # a plain dict: Jinja copies it on every render
        compiled: list[tuple[Template, str, Location]] = []
        problems: list[Problem] = []
        for index, text in enumerate(template.manifests):
            location = _manifest_location(template, index)
            filename = f"<fleetflow-template {template.name}#{index}>"
            try:
                parsed = env.parse(text, name=template.name, filename=filename)
                if template.content_type.lower() in _YAML_TYPES:
                    _mark_indented_to_yaml(parsed)
                code = env.compile(parsed, name=template.name, filename=filename)
            except TemplateSyntaxError as exc:
                hint = _go_syntax_hint(text, exc)
                message = (
                    f"template {template.name!r}, manifest {index + 1}: syntax error: {exc.message or exc}"
                )
                problems.append(Problem(message, _line_in(location, exc.lineno), hint))
                continue
            compiled.append((env.template_class.from_code(env, code, globals_), filename, location))
        if problems:
            raise InputError(problems)
        return CompiledTemplate(template, tuple(compiled))


class CompiledTemplate:
    """A template ready to render; cheap to render many times."""

    __slots__ = ("_json", "_manifests", "_stopped", "_yaml", "empty", "renders", "source")

    def __init__(self, source: TemplateSource, manifests: tuple[tuple[Template, str, Location], ...]) -> None:
        self.source = source
        self._manifests = manifests
        self._yaml = source.content_type.lower() in _YAML_TYPES
        self._json = source.content_type.lower() == "json"
        # the assignment whose render the time budget stopped, and its problem: the template is not rendered again
        self._stopped: tuple[str, Problem] | None = None
        # how many times :meth:`render` rendered it, and each manifest's count of those in which it rendered nothing
        # (only whitespace): a manifest empty in every one of them probably has an {% if %} never true
        # (:mod:`fleetflow.render.empty_manifests`). Two increments, no more, on the hot path.
        self.renders = 0
        self.empty = [0] * len(manifests)

    def render(self, variables: Mapping[str, Any], subject: str) -> bytes | None:
        """Render every manifest and join the non-empty ones; None when all of them are empty.

        Leading and trailing blank lines of each rendered manifest are dropped and each ends with one newline;
        YAML documents are then joined with ``---`` lines, other content types simply follow each other (a
        single ``\\n`` between manifests, no blank line). The result ends with exactly one newline.
        """
        if self._stopped is not None:  # 10 s for every assignment would be days at 100,000: the run fails anyway
            first, stopped = self._stopped
            raise TemplateRenderError(Problem(
                f"template {self.source.name!r}, rendering {subject}: not rendered, it ran past its "
                f"{RENDER_SECONDS:g} s time budget rendering {first}", stopped.location, stopped.hint))
        _Watch.since = time.monotonic()  # the time budget (time_budget), when one holds
        try:
            return self._render(variables, subject)
        except _TooLong as exc:  # past the budget outside a manifest's own render (trimming it, the JSON check)
            problem = Problem(
                f"template {self.source.name!r}, rendering {subject}: still rendering after {RENDER_SECONDS:g} s",
                self.source.location, "a manifest far too large: check the template's loops and repeats")
            self._stopped = (subject, problem)
            raise TemplateRenderError(problem) from exc
        finally:  # whatever ends the render (until 2026-11-28 a failed JSON check left the clock running, and the
            _Watch.since = None  # alarm raised in whatever ran 10 s later)

    def render_each(self, variables: Mapping[str, Any], subject: str) -> RenderedManifests:
        """Every manifest as it renders, each on its own, with the problem that fails it, if any: what
        ``fleetflow explain --rendered`` shows. A manifest that fails does not stop the others, and a text that
        fails its YAML or JSON check is kept (that text is what its problem's line counts in)."""
        shown: list[RenderedManifest] = []
        docs = 0
        for index, (_, _, location) in enumerate(self._manifests):
            _Watch.since = time.monotonic()  # the time budget, when one holds: each manifest its own
            text: str | None = None
            try:
                text = _trim_blank_lines(self._text(index, variables, subject, 0)[0])
                if text is not None:
                    docs += 1
                    self._check(text, index, location, subject)
                problem = None
            except TemplateRenderError as exc:
                problem = exc.problem
            except _TooLong:  # past the budget outside the manifest's own render (trimming it, its check)
                text, problem = None, Problem(
                    f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: still rendering "
                    f"after {RENDER_SECONDS:g} s", location)
            finally:
                _Watch.since = None
            shown.append(RenderedManifest(index, location, text, problem))
        return RenderedManifests(shown, self._several_json(docs, subject) if self._json and docs > 1 else None)

    def _render(self, variables: Mapping[str, Any], subject: str) -> bytes | None:
        docs: list[str] = []
        size = 0
        self.renders += 1
        for index in range(len(self._manifests)):
            text, size = self._text(index, variables, subject, size)
            doc = _trim_blank_lines(text)
            if doc is not None:
                self._check(doc, index, self._manifests[index][2], subject)
                docs.append(doc)
            else:
                self.empty[index] += 1
        if not docs:
            return None
        if self._yaml:
            return "---\n".join(docs).encode("utf-8")
        if self._json and len(docs) > 1:  # each is JSON, the file they make is not
            raise TemplateRenderError(self._several_json(len(docs), subject))
        return "".join(docs).encode("utf-8")  # each ends with its newline: one "\n" between manifests

    def _text(self, index: int, variables: Mapping[str, Any], subject: str, size: int) -> tuple[str, int]:
        """Manifest ``index`` rendered, and ``size`` (the characters the template rendered before it) plus its
        own; :class:`TemplateRenderError` when it fails to render."""
        template, filename, location = self._manifests[index]
        try:
            chunks: list[str] = []
            for chunk in template.generate(variables):  # counted as made: the budget stops a runaway loop
                size += len(chunk)
                if size > MAX_FILE_BYTES:
                    raise _TooLarge(size)
                chunks.append(chunk)
            return "".join(chunks), size
        except Exception as exc:  # MemoryError too: one expression building more than memory holds
            _Watch.since = None  # no alarm while the problem is worded
            problem = self._problem(exc, index, filename, location, variables, subject)
            if isinstance(exc, _TooLong):
                self._stopped = (subject, problem)
            raise TemplateRenderError(problem) from exc

    def _check(self, doc: str, index: int, location: Location, subject: str) -> None:
        """Manifest ``index``'s text, as rendered, checked as its content type is (YAML or JSON; others not)."""
        if self._json:
            self._check_json(doc, index, location, subject)
        elif self._yaml:
            self._check_yaml(doc, index, location, subject)

    def _several_json(self, count: int, subject: str) -> Problem:
        return Problem(
            f"template {self.source.name!r}, rendering {subject}: its {count} manifests render {count} JSON "
            f"documents into one file, which is not JSON (contentType: {self.source.content_type})",
            self.source.location,
            "a GitOps agent refuses the file on every cluster: write one manifest, or make the others render "
            "nothing for this assignment",
        )

    def _check_json(self, doc: str, index: int, location: Location, subject: str) -> None:
        """Raise :class:`TemplateRenderError` when ``doc`` (one manifest as rendered, ``contentType: json``) is not
        JSON: a GitOps agent would refuse the file on every cluster. :func:`json.loads` (C) costs about a quarter
        of rendering the example's JSON ConfigMap template, 2 to 3% of an assignment's render. YAML is not
        checked so: libyaml's parser alone (events, nothing built) added 70 to 80% to a render's CPU time
        (10,000 assignments, 2026-11-28)."""
        try:
            obj = json.loads(doc, parse_constant=_no_constant, object_pairs_hook=duplicate_keys.json_object)
        except duplicate_keys.KeyTwice as exc:  # Argo CD keeps the later value (Flux reads no .json file)
            raise TemplateRenderError(Problem(
                f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: renders the key "
                f"{exc.key!r} twice in one object (contentType: {self.source.content_type}){_json_twice_at(doc)}",
                location,
                "Argo CD keeps the later value without a word: write each key once, or the whole document as "
                "{{ {...} | toJson }}"), in_text=True) from None
        except (json.JSONDecodeError, _NotJson) as exc:
            what = (f"{exc.msg} at line {exc.lineno} of what it renders" if isinstance(exc, json.JSONDecodeError)
                    else str(exc))
            raise TemplateRenderError(Problem(
                f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: renders text that is "
                f"not JSON (contentType: {self.source.content_type}): {what}",
                location,
                "a GitOps agent refuses the file on every cluster: write values with toJson (a string, a number, "
                "a map), or the whole document as {{ {...} | toJson }}",
            ), in_text=True) from None
        said = configmap_data.json_mistake(obj)  # the data of a v1 ConfigMap: text under keys it may have
        if said is not None:
            self._refuse_config_map(said, index, location, subject)

    def _refuse_config_map(self, said: str, index: int, location: Location, subject: str) -> None:
        """Raise :class:`TemplateRenderError`: the manifest renders a ``v1`` ConfigMap whose data Kubernetes refuses
        (:mod:`fleetflow.render.configmap_data`), ``said`` saying how."""
        raise TemplateRenderError(Problem(
            f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: renders a ConfigMap whose "
            f"data Kubernetes refuses (contentType: {self.source.content_type}): {said}",
            location,
            "the API server refuses the ConfigMap on every cluster: its data is text, under keys of letters, "
            "digits, '-', '_' and '.'; give ConfigData through stringify ({{ ConfigData | stringify | toYaml | "
            "nindent(2) }}), quote a number or boolean the template writes, and rename a key in the ConfigMap "
            "that sets it",
        ), in_text=True)

    def _check_yaml(self, doc: str, index: int, location: Location, subject: str) -> None:
        """Raise :class:`TemplateRenderError` when ``doc`` (one manifest as rendered, ``contentType: yaml``) is not
        YAML: Flux's kustomize-controller and Argo CD read it with go-yaml, a port of libyaml, and refuse the file on
        every cluster. libyaml's own parser checks it: ``CParser.raw_parse`` walks the events in C without making a
        Python object of each (PyYAML's ``_yaml.pyx``), about 10 µs a manifest, where making the events
        (``yaml.parse``) cost 70-80% of a render's CPU time. Syntax, and the aliases of a text that holds a ``*``
        (:func:`_alias_mistake`), a key written twice in one mapping (:mod:`fleetflow.render.duplicate_keys`) and
        a ``v1`` ConfigMap's data (:mod:`fleetflow.render.configmap_data`); the rest of what it holds is the
        agent's."""
        hint = ("a GitOps agent refuses the file on every cluster: write values with toJson (a JSON string is YAML "
                "too) or quote, and nested blocks with nindent")
        try:
            if "*" not in doc or not _MAYBE_ALIAS.search(doc):  # no alias: the syntax is all there is to check
                CParser(doc).raw_parse()
                mistake = None
            else:
                mistake = _alias_mistake(doc)
                if mistake is not None:
                    hint += ("; a plain value that starts with '*' is an alias, and an alias needs its anchor "
                             "(&name) before it, outside it, in the same document")
        except yaml.MarkedYAMLError as exc:
            mistake = _yaml_mistake(exc)
        if mistake is None:
            twice = duplicate_keys.duplicate_key(doc)  # Flux refuses the file, Argo CD keeps the later value
            if twice is not None:
                key, first, second = twice
                lines = f"line {first}" if first == second else f"lines {first} and {second}"
                raise TemplateRenderError(Problem(
                    f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: renders the key "
                    f"{key!r} twice in one mapping (contentType: {self.source.content_type}): at {lines} of what "
                    "it renders", location,
                    "Flux refuses the file on every cluster (kustomize: mapping key already defined) and Argo CD "
                    "keeps the later value without a word: write each key once; where two {% if %} branches or a "
                    "loop each write it, write the key once and choose its value in one place"), in_text=True)
            said = configmap_data.yaml_mistake(doc)  # the data of a v1 ConfigMap: text under keys it may have
            if said is not None:
                self._refuse_config_map(said, index, location, subject)
            return
        raise TemplateRenderError(Problem(
            f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}: renders text that is not "
            f"YAML (contentType: {self.source.content_type}): {mistake}", location, hint), in_text=True)

    def _problem(
        self,
        exc: Exception,
        index: int,
        filename: str,
        location: Location,
        variables: Mapping[str, Any],
        subject: str,
    ) -> Problem:
        lineno = _template_lineno(exc, filename)
        where = f"template {self.source.name!r}, manifest {index + 1}, rendering {subject}"
        hint: str | None = None
        if isinstance(exc, _TooLarge):
            detail = f"renders more than {MAX_FILE_BYTES // 1_000_000} MB (GitHub refuses a file over 100 MB)"
            hint = "a loop or a repeated value renders far more than a manifest holds: check the template's loops"
        elif isinstance(exc, _TooLong):
            detail = f"still rendering after {RENDER_SECONDS:g} s (one assignment's manifests render in about 1 ms)"
            hint = ("a loop that runs far too long, such as range() inside range(): loop over the values you are "
                    "given, and keep the loops small")
        elif isinstance(exc, MemoryError):
            detail = "ran out of memory building a value"
            hint = "a value too large for memory: check the template's loops, repeats and filters"
        elif isinstance(exc, SecurityError):
            detail = f"blocked by the template sandbox: {exc}"
            hint = "templates may only read the variables they are given, not Python internals"
        elif isinstance(exc, UndefinedError):
            lines = self.source.manifests[index].splitlines()
            line = lines[lineno - 1] if lineno is not None and 0 < lineno <= len(lines) else None
            detail, hint = _undefined_detail(exc, variables, subject, line)
        elif isinstance(exc, TypeError) and "no loader" in str(exc):  # {% include %}, {% extends %}, {% import %}
            detail = "include, extends and import are not available: a template reads no other file"
            hint = "write the shared text into this manifest (a macro defined in it can repeat it)"
        elif isinstance(exc, TemplateRequiredError):
            detail = f"required value missing: {exc}"
        elif isinstance(exc, _FromYamlError):
            detail, hint = str(exc), exc.hint
        elif isinstance(exc, _IndentedYamlError):
            detail = (f"{exc}: only its first line follows them, the others start at the beginning of theirs, and "
                      "YAML reads what they hold one level up (a wrong file, not an error, to a GitOps agent)")
            hint = (f"indent every line after the first: {{{{ ... | toYaml | indent({exc.width}, first=False) }}}}, "
                    f"or write it after its key: key:{{{{ ... | toYaml | nindent({exc.width}) }}}}")
        else:
            detail = f"{type(exc).__name__}: {exc}"
            hint = _python_hint(exc)
        return Problem(f"{where}: {detail}", _line_in(location, lineno), hint)


def _json_twice_at(doc: str) -> str:
    """Where the key written twice in ``doc`` stands, both times, as the duplicate-key error of a YAML manifest says
    it (": at line 3, column 5 and line 7, column 5 of what it renders"); the error path only."""
    found = duplicate_keys.json_twice(doc)
    if found is None:  # not expected: the hook found the key in this text
        return ""
    _, (line, column), (again, again_column) = found
    if line == again:
        return f": at line {line}, columns {column} and {again_column} of what it renders"
    return f": at line {line}, column {column} and line {again}, column {again_column} of what it renders"


def _python_hint(exc: Exception) -> str | None:
    """What to fix for the Python errors a template's loops make: ``{% for key, value in ConfigData %}`` (a map
    gives its keys, and a key's letters do not unpack into two names) and ``ConfigData.items`` without its
    parentheses (a method is not a list)."""
    said = str(exc)
    if isinstance(exc, ValueError) and ("values to unpack" in said or "not enough values" in said):
        return ("a loop over a map gives its keys: loop over its keys and values with {% for key, value in "
                "ConfigData.items() %}; a loop over a list of pairs needs as many names as each item has")
    if isinstance(exc, TypeError) and "'builtin_function_or_method' object is not iterable" in said:
        return "call the method: ConfigData.items(), not ConfigData.items"
    return None


def _manifest_location(template: TemplateSource, index: int) -> Location:
    if index < len(template.manifest_locations):
        return template.manifest_locations[index]
    return template.location


def _yaml_mistake(exc: yaml.MarkedYAMLError) -> str:
    """libyaml's words for a YAML mistake and the lines of the rendered text it names (its marks are 0-based). The
    text itself is left out: it holds each assignment's values, and the same mistake in every assignment it renders
    is one problem (``same_problem_once``)."""
    what = exc.problem or exc.context or "not YAML"
    if exc.problem_mark is not None:
        what += f" at line {exc.problem_mark.line + 1} of what it renders"
    if exc.problem and exc.context and exc.context_mark is not None:
        what += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return what


def _alias_mistake(doc: str) -> str | None:
    """What is wrong with the aliases in ``doc``, None when nothing is (raises :class:`yaml.MarkedYAMLError` when
    ``doc`` is not YAML at all). libyaml's parser leaves aliases to the one who builds the nodes, and go-yaml
    builds them as it reads: an alias to an anchor not defined before it in its document is "unknown anchor '%s'
    referenced", and one inside the node its anchor names is "anchor '%s' value contains itself" when the document
    is decoded (go-yaml v3.0.1 ``decode.go``, ``parser.alias`` and ``decoder.alias``; v2 the same, its anchors kept
    per document). Flux (kustomize's kyaml: ``kio.ByteReader.Read`` gives each document of a file its own go-yaml
    v3 decoder) and Argo CD (gitops-engine ``kube.SplitYAML``: each document to ``sigs.k8s.io/yaml.Unmarshal``,
    go-yaml v2) read anchors per document too. The events are made as Python objects, several times the cost of
    :meth:`CParser.raw_parse`: only text with a ``*`` where an alias may stand (:data:`_MAYBE_ALIAS`) comes
    here."""
    parser = CParser(doc)
    defined: dict[str, int] = {}  # anchor -> the number of its newest definition in this document
    open_: list[int | None] = []  # the collections being read, each its anchor's definition number (None: none)
    count = 0
    while True:
        event = parser.get_event()
        if isinstance(event, yaml.AliasEvent):  # a NodeEvent too: first
            number = defined.get(event.anchor or "")
            if number is None or number in open_:
                where = "" if event.start_mark is None else f" at line {event.start_mark.line + 1} of what it renders"
                return f"found an alias to {'an undefined anchor' if number is None else 'the node it is in'}{where}"
        elif isinstance(event, yaml.NodeEvent):  # a scalar, or the start of a sequence or a mapping
            number = None
            if event.anchor is not None:
                count += 1
                number = defined[event.anchor] = count
            if isinstance(event, yaml.CollectionStartEvent):
                open_.append(number)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_.pop()
        elif isinstance(event, yaml.DocumentStartEvent):
            defined.clear()
        elif event is None or isinstance(event, yaml.StreamEndEvent):
            return None


def _line_in(location: Location, lineno: int | None) -> Location:
    if lineno is None or location.line is None:
        return location
    return Location(location.file, location.line + lineno - 1)


def _template_lineno(exc: BaseException, filename: str) -> int | None:
    """The template line of the innermost ``filename`` frame (Jinja rewrites tracebacks to template lines)."""
    lineno: int | None = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    return lineno


def _trim_blank_lines(text: str) -> str | None:
    """Drop whole blank lines at both ends and end with one newline; None if only whitespace is left."""
    body = text.rstrip()
    if not body:
        return None
    begin = text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1
    end = text.find("\n", len(body))
    return (text[begin:end] if end != -1 else text[begin:]) + "\n"


# -- Go template conversion ----------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-?)(\s*)(.*?)(\s*)(-?)\}\}", re.DOTALL)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|\|\||\||[^\s|]+')
_FIELD = re.compile(r"\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?|true|false')
_FUNCTIONS = frozenset(FILTERS) | {"upper", "lower", "trim", "default"}
_GO_FUNCTIONS = {"sha256sum": "hash"}
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def convert_go_template(text: str) -> str:
    """Convert the simple Go-template forms Kalypso templates use into Jinja2.

    * ``{{ .Namespace }}`` → ``{{ Namespace }}``, ``{{ .Manifests.repo }}`` → ``{{ Manifests.repo }}``;
    * ``{{ toYaml .ConfigData | indent 2 }}`` → ``{{ ConfigData | toYaml | indent(2) }}`` (sprig functions
      take the piped value last, so ``fn a .X`` is ``X | fn(a)``);
    * ``{{ index .Labels "k" }}`` → ``{{ Labels["k"] }}``;
    * ``{{ if .X }}`` / ``{{ else if eq .X "a" }}`` / ``{{ else }}`` / ``{{ end }}`` → ``{% if %}``...;
    * ``{{/* comment */}}`` → ``{# comment #}``.

    Anything else (variables, ``range``, ``with``, parentheses, unknown functions) is left untouched.
    """
    blocks: list[bool] = []  # for each open Go block: converted to a Jinja {% if %}?

    def action(match: re.Match[str]) -> str:
        ltrim, lspace, body, rspace, rtrim = match.groups()
        if body.startswith("/*") and body.endswith("*/"):
            return "{#" + ltrim + " " + body[2:-2].strip() + " " + rtrim + "#}"
        words = body.split(None, 1)
        keyword = words[0] if words else ""
        rest = words[1] if len(words) > 1 else ""
        statement: str | None = None
        if keyword == "if":
            condition = _condition(rest)
            blocks.append(condition is not None)
            if condition is not None:
                statement = f"if {condition}"
        elif keyword == "else" and blocks and blocks[-1]:
            if not rest:
                statement = "else"
            elif rest.startswith("if "):
                condition = _condition(rest[3:])
                statement = None if condition is None else f"elif {condition}"
        elif keyword == "end":
            if blocks and blocks.pop():
                statement = "endif"
        elif keyword in {"range", "with", "define", "block"}:
            blocks.append(False)
        else:
            expression = _pipeline(body)
            if expression is not None:
                return "{{" + ltrim + lspace + expression + rspace + rtrim + "}}"
        if statement is None:
            return match.group(0)
        return "{%" + ltrim + lspace + statement + rspace + rtrim + "%}"

    return _ACTION.sub(action, text)


def _operand(token: str) -> str | None:
    if _FIELD.fullmatch(token):
        return token[1:]
    if token.startswith("`") and token.endswith("`") and len(token) >= 2:
        return json.dumps(token[1:-1])
    if _LITERAL.fullmatch(token):
        return token
    if token == "nil":
        return "none"
    return None


def _command(tokens: list[str], piped: str | None) -> str | None:
    """One pipeline stage. ``piped`` is the expression flowing in from the previous stage, if any."""
    head, args = tokens[0], tokens[1:]
    if piped is None and not args:
        return _operand(head)
    operands = [_operand(a) for a in args]
    if any(o is None for o in operands):
        return None
    values: list[str] = [o for o in operands if o is not None]
    if head == "index" and piped is None and len(values) >= 2:
        return values[0] + "".join(f"[{key}]" for key in values[1:])
    name = _GO_FUNCTIONS.get(head, head)
    if name not in _FUNCTIONS:
        return None
    if piped is None:
        if not values:
            return None
        piped, values = values[-1], values[:-1]
    if name == "default":
        values.append("true")  # Go's default also replaces empty values
    return f"{piped} | {name}({', '.join(values)})" if values else f"{piped} | {name}"


def _pipeline(body: str) -> str | None:
    tokens = _TOKEN.findall(body)
    if not tokens or "||" in tokens or any(t.startswith(("(", "$")) or t.endswith(")") for t in tokens):
        return None
    stages: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            stages.append([])
        else:
            stages[-1].append(token)
    if any(not stage for stage in stages):
        return None
    expression: str | None = None
    for stage in stages:
        expression = _command(stage, expression)
        if expression is None:
            return None
    return expression


def _condition(body: str) -> str | None:
    tokens = _TOKEN.findall(body)
    if not tokens:
        return None
    head, args = tokens[0], [_operand(t) for t in tokens[1:]]
    if head in _COMPARISONS or head in {"and", "or", "not"}:
        if any(a is None for a in args) or not args:
            return None
        values = [a for a in args if a is not None]
        if head == "not":
            return f"not {values[0]}" if len(values) == 1 else None
        if head in {"and", "or"}:
            return f" {head} ".join(values)
        return f"{values[0]} {_COMPARISONS[head]} {values[1]}" if len(values) == 2 else None
    return _pipeline(body)
