"""Template manifests that render nothing for every assignment they apply to: a warning, not an error.

A manifest wrapped in ``{% if Environment == 'Dev' %}`` (environments are lower case) renders only whitespace for
every assignment; fleetflow drops empty renders (DESIGN §2, Template), so no file is written and, until
2026-11-29, nothing was said: ``validate`` printed "ok". A manifest meant for some environments only legitimately
renders nothing in the others, so this is a warning, and a manifest whose ``{% if %}`` compares ``Environment``
only with environments main defines, none of them this one, is taken as meant so and not warned about. Nor is a
manifest that holds no text at all (a comment only: the example's ``vm-namespace``, a cluster type's namespace
template for VMs).

The render counts, per compiled template, how many times it rendered and per manifest how many of those rendered
nothing (:class:`~fleetflow.render.templates.CompiledTemplate`, two increments per render); this module reads the
counts once, after every assignment is rendered. A render that did not render every assignment a template applies
to (an incremental render keeps unchanged assignments unread, ``--shard`` renders some cluster types, an
assignment held back) sees part of them, and says nothing about that template: a verdict needs every one.

A status reporter (a ``status`` template, rendered once per cluster type into ``<clusterType>/_status/``) is
counted the same way, per cluster type, after the reporters render: one that renders nothing for every cluster type
naming it writes no ``_status/`` file, so their clusters post no status for the gate to read (until 2026-11-29 no
word: ``validate`` said "ok" and the gate waited until its timeout). A reporter kept from the previous render
(nothing it is rendered from changed) is not rendered, and gives no verdict either.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from fleetflow.errors import Location, Problem, closest
from fleetflow.render.templates import CompiledTemplate

_IF_TAG = re.compile(r"\{%-?\s*(?:if|elif)\s+(.*?)\s*[-+]?%\}", re.DOTALL)
_FOR_TAG = re.compile(r"\{%-?\s*for\s+(.*?)\s*[-+]?%\}", re.DOTALL)
_PARSER = Environment()  # the syntax of fleetflow's sandbox (default delimiters, no extension): parsing only
_NO_STATUS = ("; with no file in their _status/ folders, the clusters of these cluster types have nothing that makes "
              "them report their rollout (unless set up otherwise), and the rollout gate waits for the statuses "
              "of the Clusters it expects until its timeout")


@dataclass(frozen=True)
class _Why:
    """Why a manifest may render nothing: the hint, and the line of its template the hint is about (1-based)."""

    hint: str
    lineno: int


def empty_manifest_warnings(
    environment: str,
    environments: Collection[str],
    applies: Mapping[str, int],
    compiled: Mapping[str, CompiledTemplate],
    *,
    reporters: bool = False,
) -> list[Problem]:
    """One warning per manifest that rendered nothing for every one of the assignments its template applies to in
    this render (``applies``: template name -> the number of assignments, one per role it fills), when the render
    rendered every one of them (``CompiledTemplate.renders``) and none failed at that manifest. ``reporters``: the
    templates are status reporters, ``applies`` counts cluster types (a reporter renders once per cluster type)."""
    found: list[Problem] = []
    for name in sorted(applies):
        template = compiled.get(name)
        count = applies[name]
        if template is None or count == 0 or template.renders != count:
            continue  # not rendered for every assignment it applies to here: part of the view, no verdict
        empty = [index for index, n in enumerate(template.empty) if n == count]
        every = len(empty) == len(template.empty)
        for index in empty:
            why = _why_empty(template.source.manifests[index], environment, environments)
            if why is None:
                continue
            source = template.source
            start = source.manifest_locations[index] if index < len(source.manifest_locations) else source.location
            where = start if start.line is None else Location(start.file, start.line + why.lineno - 1)
            unit = "cluster type" if reporters else "assignment"
            them = unit if count == 1 else f"{count} {unit}s"
            written = ": no file of it is written for them" if every else ""
            found.append(Problem(
                f"{'status reporter ' if reporters else ''}template {name!r}, manifest {index + 1} rendered nothing "
                f"for any of the {them} it applies to in environment {environment}{written}",
                where,
                why.hint + (_NO_STATUS if reporters and every else ""),
            ))
    return found


def _why_empty(text: str, environment: str, environments: Collection[str]) -> _Why | None:
    """What may make the manifest ``text`` render nothing, None when nothing is wrong: it holds no text to render
    (a comment only, on purpose), or its ``{% if %}`` is meant for other environments (:func:`_environments_of`)."""
    try:
        tree = _PARSER.parse(text)
    except TemplateSyntaxError:  # it compiled in the sandbox: not expected; say nothing rather than guess
        return None
    if not any(_renders_text(output) for output in tree.find_all(nodes.Output)):
        return None
    guards = sorted(
        (node for node in tree.find_all((nodes.If, nodes.For)) if any(map(_renders_text, node.find_all(nodes.Output)))),
        key=lambda node: node.lineno,
    )
    lines = text.splitlines()
    meant = "; a manifest meant for other environments only renders nothing in this one, as meant"
    if guards and isinstance(guards[0], nodes.If):
        guard = guards[0]
        compared = _environments_of(guard.test)
        named = [n for _, names in compared for n in names]
        if named and all(n in environments for n in named) and all(
                (environment in names) == (op in ("ne", "notin")) for op, names in compared):
            return None  # {% if Environment == 'prod' %} or {% if Environment != 'dev' %} in dev: meant so
        tag = _tag(_IF_TAG, lines, guard.lineno)
        hint = f"its {{% if %}} may never be true: {{% if {tag} %}} is false for every one of them" if tag else (
            "its {% if %} may never be true: it is false for every one of them")
        unknown = [n for n in named if n not in environments]
        if unknown:
            near = closest(unknown[0], environments, cutoff=0.5) or next(
                (n for n in environments if n.lower() == unknown[0].lower()), None)
            hint += (f"; no environment is named {unknown[0]!r}" + (f": did you mean {near!r}?" if near else "")
                     + f" Environment is {environment!r} here; the environments are {', '.join(sorted(environments))}")
        else:
            hint += meant
        return _Why(hint, guard.lineno)
    if guards:
        tag = _tag(_FOR_TAG, lines, guards[0].lineno)
        loop = f"{{% for {tag} %}}" if tag else "its {% for %}"
        return _Why(f"{loop} loops over nothing for every one of them: check the value it loops over" + meant,
                    guards[0].lineno)
    return _Why("every value it writes is empty for every one of them: check the values it renders" + meant, 1)


def _renders_text(output: nodes.Output) -> bool:
    """Whether ``output`` can add text: a value, or template text that is not only whitespace."""
    return any(not isinstance(child, nodes.TemplateData) or child.data.strip() for child in output.nodes)


def _environments_of(test: nodes.Node) -> list[tuple[str, list[str]]]:
    """Each comparison of ``Environment`` in ``test`` with strings (``==``, ``!=``, ``in``, ``not in`` a list of
    them): its operator (Jinja's ``eq``, ``ne``, ``in``, ``notin``) and the names, in order; empty when it compares
    it with nothing, or with something not a string."""
    named: list[tuple[str, list[str]]] = []
    for compare in test.find_all(nodes.Compare) if not isinstance(test, nodes.Compare) else [test]:
        left = compare.expr
        for op in compare.ops:
            right = op.expr
            if _is_environment(right) and isinstance(left, nodes.Const):
                left, right = right, left
            if _is_environment(left) and op.op in ("eq", "ne", "in", "notin"):
                named.append((op.op, list(_strings(right))))
            left = op.expr
    return named


def _is_environment(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "Environment"


def _strings(node: nodes.Node) -> Iterable[str]:
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (nodes.List, nodes.Tuple)):
        for item in node.items:
            yield from _strings(item)


def _tag(pattern: re.Pattern[str], lines: list[str], lineno: int) -> str | None:
    """The text of the tag ``pattern`` finds from line ``lineno`` (1-based) on, None when it finds none."""
    found = pattern.search("\n".join(lines[lineno - 1:]))
    return " ".join(found.group(1).split()) if found else None
