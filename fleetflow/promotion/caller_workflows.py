"""What a caller workflow file says, read from its text alone (pure: YAML text in, facts out; no git, no forge).

A caller is a workflow in ``.github/workflows/`` with a job that ``uses:`` one of fleetflow's reusable workflows.
Read here: whether a job calls a reusable workflow (:func:`calls`), the ``with:`` inputs the callers pass, the
environments a file calls the shards workflow for, the jobs that pass ``secrets: inherit``, and whether the file's
``on:`` runs for a branch (:func:`trigger_gap`, with GitHub's branch filter patterns, :func:`filter_matches`).
``fleetflow doctor`` (:mod:`fleetflow.promotion.doctor`) fetches the files and turns these into its checks;
``fleetflow init`` (:mod:`fleetflow.promotion.bootstrap`) finds the callers with :func:`calls_reusable`.

A branch filter pattern is chosen by whoever wrote the workflow and matched against branch names: it is compiled
into a regular expression with no nested repetition (a run of ``?`` and ``+`` on one character is one quantifier)
and matched by RE2 (:mod:`fleetflow.linear_regex`), in time linear in the name. Until 2026-11-29 Python's ``re``
matched ``a++++`` (compiled as ``(?:(?:(?:(?:a)+)+)+)+``) against ``aaaaaaaaaaaaaa!`` in 8 seconds and each further
``a`` multiplied that by four: doctor never ended.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from fleetflow.linear_regex import RegexError, compile_linear

SHARDS_WORKFLOW = "fleetflow-schedule-shards.yml"

FILTER_PATTERNS = ("https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax"
                   "#filter-pattern-cheat-sheet")

# The secrets fleetflow's reusable workflows declare (on.workflow_call.secrets of each; tests/test_workflow_files.py
# holds them to the files). A GitHub secret's name holds only alphanumerics and underscores ("Naming your secrets",
# https://docs.github.com/en/actions/reference/security/secrets), so ``secrets: inherit``, which passes the caller's
# secrets under their own names, can never fill one with a '-' in its name.
REUSABLE_SECRETS = ("app-id", "app-private-key", "token")
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def unfilled_secrets() -> list[str]:
    """The secrets of :data:`REUSABLE_SECRETS` that ``secrets: inherit`` can never fill (no secret has their name)."""
    return [s for s in REUSABLE_SECRETS if not SECRET_NAME.fullmatch(s)]


# -- the file and its jobs ------------------------------------------------------------------------------------------


def load(text: str | None) -> Any:
    """The workflow file's YAML; None when there is no text or it is not YAML (the workflows check reports that)."""
    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return None


def named_jobs(text: str | None) -> dict[str, dict[str, Any]]:
    """The jobs of a workflow file by name; none when the file is missing or not YAML."""
    data = load(text)
    jobs = data.get("jobs") if isinstance(data, dict) else None
    return {str(name): job for name, job in jobs.items() if isinstance(job, dict)} if isinstance(jobs, dict) else {}


def workflow_jobs(text: str | None) -> list[dict[str, Any]]:
    """The jobs of a workflow file; none when the file is missing or not YAML (the workflows check reports that)."""
    return list(named_jobs(text).values())


def calls(job: object, reusable: str) -> bool:
    """Whether a workflow's job calls ``reusable`` (``uses: <owner>/<repo>/.github/workflows/<reusable>@<ref>``, or
    a vendored ``./.github/workflows/<reusable>``)."""
    return isinstance(job, dict) and str(job.get("uses", "")).split("@")[0].endswith("/" + reusable)


def calls_reusable(text: str | None, reusable: str) -> bool:
    """Whether the workflow ``text`` has a job that calls ``reusable``; a file that is not YAML calls nothing."""
    data = load(text)
    jobs = data.get("jobs") if isinstance(data, dict) else None
    return isinstance(jobs, dict) and any(calls(job, reusable) for job in jobs.values())


def passed_inputs(jobs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The ``with:`` inputs of ``jobs``, merged in order."""
    inputs: dict[str, Any] = {}
    for job in jobs:
        if isinstance(job.get("with"), dict):
            inputs.update(job["with"])
    return inputs


def caller_inputs(texts: Iterable[str], reusable: str) -> dict[str, Any]:
    """The ``with:`` inputs the callers ``texts`` pass to ``reusable`` (every calling job's, merged)."""
    return passed_inputs(job for text in texts for job in workflow_jobs(text) if calls(job, reusable))


def fleetflow_inputs(text: str | None) -> dict[str, Any]:
    """The ``with:`` inputs of the jobs of ``text`` that use anything of fleetflow's (a pipeline of one's own)."""
    return passed_inputs(job for job in workflow_jobs(text) if "fleetflow" in str(job.get("uses", "")))


def shards_environments(text: str | None) -> set[str]:
    """The environments the workflow ``text`` calls the shards workflow (:data:`SHARDS_WORKFLOW`) for ("*": one
    passes an expression, which cannot be read here)."""
    envs: set[str] = set()
    for job in workflow_jobs(text):
        if not str(job.get("uses", "")).split("@")[0].endswith(SHARDS_WORKFLOW):
            continue
        inputs = job.get("with")
        value = str(inputs.get("environment", "")) if isinstance(inputs, dict) else ""
        envs.add("*" if "${{" in value else value)
    return envs


@dataclass(frozen=True)
class Inheriting:
    """A job that passes ``secrets: inherit`` to a reusable workflow, and the line of its ``secrets:``."""

    job: str
    line: int | None


def inheriting_jobs(text: str, reusable: str) -> list[Inheriting]:
    """The jobs of ``text`` that call ``reusable`` with ``secrets: inherit``."""
    return [Inheriting(name, key_line(text, "jobs", name, "secrets"))
            for name, job in named_jobs(text).items() if calls(job, reusable) and job.get("secrets") == "inherit"]


def key_line(text: str, *keys: str) -> int | None:
    """The line (1-based) of the deepest of ``keys`` (a path of mapping keys) found in the YAML ``text``."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            break
        match = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if match is None:
            break
        line = match[0].start_mark.line + 1
        node = match[1]
    return line


# -- the branches its triggers run for ------------------------------------------------------------------------------


class FilterPatternError(ValueError):
    """A branch filter pattern that is no regular expression once translated (a range ``[z-a]``); ``reason`` is
    RE2's words."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"{pattern!r}: {reason}")
        self.pattern = pattern
        self.reason = reason


def filter_matches(patterns: list[str], name: str) -> bool:
    """Whether GitHub's branch filter ``patterns`` (``on.<event>.branches``) lets ``name`` run, per "Filter pattern
    cheat sheet" (:data:`FILTER_PATTERNS`): ``*`` matches any characters but ``/``, ``**`` any characters, ``?`` and
    ``+`` make the preceding character optional or repeatable, ``[...]`` one character of a set, ``\\`` escapes
    one; patterns are read in order, and one starting with ``!`` that matches excludes the name again ("A matching
    negative pattern (prefixed with !) after a positive match will exclude the Git ref. A matching positive pattern
    after a negative match will include the Git ref again", "Including and excluding branches" on that page).
    :class:`FilterPatternError` for a pattern that does not translate (a character range from high to low)."""
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _filter_regex(pattern[1:] if negated else pattern).fullmatch(name):
            matched = not negated
    return matched


_ANY = -1  # no upper bound


@functools.lru_cache(maxsize=1024)
def _filter_regex(pattern: str) -> Any:
    """``pattern`` as an RE2 regular expression. Each atom (a character, a set, ``*``, ``**``) carries one
    quantifier: a ``?`` or ``+`` after it widens that quantifier ((x+)? is x*, (x*)+ is x*) rather than wrap it in
    another, so the expression never nests repetitions however many follow."""
    atoms: list[tuple[str, int, int]] = []  # (regex of one character, least, most or _ANY)
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i):
            atoms.append((".", 0, _ANY))
            i += 1
        elif char == "*":
            atoms.append(("[^/]", 0, _ANY))
        elif char in "?+" and atoms:
            body, least, most = atoms[-1]
            atoms[-1] = (body, 0, most) if char == "?" else (body, least, _ANY)
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            atoms.append(("[" + "".join(c if c.isalnum() or c == "-" else re.escape(c)
                                        for c in pattern[i + 1:end]) + "]", 1, 1))
            i = end
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            atoms.append((re.escape(pattern[i]), 1, 1))
        else:
            atoms.append((re.escape(char), 1, 1))
        i += 1
    quantifier = {(1, 1): "", (0, 1): "?", (1, _ANY): "+", (0, _ANY): "*"}
    try:
        return compile_linear("".join(body + quantifier[least, most] for body, least, most in atoms))
    except RegexError as exc:
        raise FilterPatternError(pattern, exc.reason) from None


def on_event(data: Any, event: str) -> tuple[bool, dict[str, Any]]:
    """Whether the workflow ``data`` runs on ``event``, and that event's filters. PyYAML reads the key ``on`` as
    the boolean true (YAML 1.1), GitHub as the string: both are looked for."""
    on = data.get("on", data.get(True)) if isinstance(data, dict) else None
    if isinstance(on, str):
        return on == event, {}
    if isinstance(on, list):
        return event in on, {}
    if isinstance(on, dict) and event in on:
        return True, on[event] if isinstance(on[event], dict) else {}
    return False, {}


def as_patterns(value: Any) -> list[str]:
    return [str(p) for p in value] if isinstance(value, list) else [str(value)] if value is not None else []


def flow(patterns: list[str]) -> str:
    """A YAML flow sequence of ``patterns``, each with a character other than letters, digits, ``_-./`` quoted
    ("If you start a pattern with *, [, or !, you must enclose the pattern in quotes", :data:`FILTER_PATTERNS`; a
    ``?`` in a plain flow scalar is an error to PyYAML, so it is quoted too)."""
    return "[" + ", ".join(p if re.fullmatch(r"[\w./-]+", p) else f"'{p}'" for p in patterns) + "]"


@dataclass(frozen=True)
class TriggerGap:
    """Why a caller starts no run for a branch: ``at`` is the file (``path:line`` of the key to change), ``problem``
    what its ``on:`` says, ``fix`` the change."""

    at: str
    problem: str
    fix: str


def trigger_gap(path: str, text: str, event: str, branch: str, wanted: list[str]) -> TriggerGap | None:
    """Why the workflow ``text`` (at ``path``) does not run on ``event`` for ``branch``, or None when it does or is
    no readable workflow (the workflows check reports that). The fix names every branch of ``wanted`` the filter
    misses, so one line fixes the file wherever it is copied. A ``pull_request`` trigger must list ``closed`` ("By
    default, a workflow only runs when a pull_request event's activity type is opened, synchronize, or reopened",
    workflow syntax, ``on.<event_name>.types``). Filters are read as :func:`filter_matches` does; ``branches`` with
    only ``tags`` run for no branch ("If you define only tags/tags-ignore or only branches/branches-ignore, the
    workflow won't run for events affecting the undefined Git ref")."""
    data = load(text)
    if not isinstance(data, dict):
        return None
    runs, filters = on_event(data, event)
    if not runs:
        line = key_line(text, "on")
        body = f"{event}:\n    branches: {flow(wanted)}"
        if event == "pull_request":
            body = f"{event}:\n    types: [closed]\n    branches: {flow(wanted)}"
        return TriggerGap(f"{path}{f':{line}' if line else ''}", f"no {event} trigger",
                          f"add under on: in {path} (examples/workflows/): {body}")
    problems: list[str] = []
    fixes: list[str] = []
    keys: tuple[str, ...] = ("on", event)
    if event == "pull_request":
        types = as_patterns(filters.get("types"))
        if "closed" not in types:
            listed = ", ".join(types) if types else "none: GitHub's default, opened, synchronize and reopened"
            problems.append(f"on.pull_request.types ({listed}) lacks closed")
            fixes.append(f"types: {flow([*types, 'closed'])}")
            keys = ("on", event, "types") if types else keys
    key = "branches" if "branches" in filters else "branches-ignore" if "branches-ignore" in filters else None
    patterns = as_patterns(filters[key]) if key else []
    if key and (bad := _untranslatable(patterns)):
        problems.append(f"on.{event}.{key} holds {', '.join(repr(e.pattern) for e in bad)}, no filter pattern "
                        f"({'; '.join(e.reason for e in bad)})")
        fixes.append(f"correct {', '.join(e.pattern for e in bad)} (a range runs from low to high: [a-z])")
        keys = ("on", event, key)
    elif key == "branches":
        if not filter_matches(patterns, branch):
            missing = [b for b in wanted if not filter_matches(patterns, b)]
            problems.append(f"on.{event}.branches ({', '.join(patterns) or 'empty'}) does not match {branch}")
            fixes.append(f"branches: {flow([*patterns, *missing])}")
            keys = ("on", event, "branches")
    elif key == "branches-ignore":
        if filter_matches(patterns, branch):
            ignored = [p for p in patterns if filter_matches([p], branch)]
            problems.append(f"on.{event}.branches-ignore ({', '.join(patterns)}) matches {branch}")
            fixes.append(f"remove {', '.join(ignored)} from on.{event}.branches-ignore")
            keys = ("on", event, "branches-ignore")
    elif event == "push" and ("tags" in filters or "tags-ignore" in filters):
        problems.append("on.push filters tags only, so it runs for no branch")
        fixes.append(f"branches: {flow(wanted)} beside tags")
    if not problems:
        return None
    line = key_line(text, *keys)
    return TriggerGap(f"{path}{f':{line}' if line else ''}", "; ".join(problems),
                      f"in {path}, on.{event}: {'; '.join(fixes)} (patterns: {FILTER_PATTERNS})")


PATHS_FILTERS = ("https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax"
                 "#onpushpull_requestpull_request_targetpathspaths-ignore")
SHOWN_PATHS = 3  # of the files a paths filter misses, named in its problem


def paths_gap(path: str, text: str, event: str, files: list[str], whose: str) -> TriggerGap | None:
    """The files of ``files`` (those fleetflow reads on the branch, ``whose`` says so in the message) whose change
    alone starts no run of the workflow ``text`` because of its ``on.<event>.paths`` or ``paths-ignore``, or None
    when every one starts it (or the workflow has neither). GitHub's rules (:data:`PATHS_FILTERS`, "Example:
    Including paths"/"Excluding paths"): "If at least one path matches a pattern in the paths filter, the workflow
    runs"; "When all the path names match patterns in paths-ignore, the workflow will not run"; ``!`` patterns and
    their order as for branches (:func:`filter_matches`), "If you define both branches/branches-ignore and
    paths/paths-ignore, the workflow will only run when both filters are satisfied". fleetflow renders the whole
    commit, so a push it skips (a template changed, a promotion's pin) reaches the fleet only with a later push or
    the cron tick."""
    data = load(text)
    if not isinstance(data, dict) or not files:
        return None
    runs, filters = on_event(data, event)
    key = "paths" if "paths" in filters else "paths-ignore" if "paths-ignore" in filters else None
    if not runs or key is None:
        return None
    patterns = as_patterns(filters[key])
    line = key_line(text, "on", event, key)
    at = f"{path}{f':{line}' if line else ''}"
    if bad := _untranslatable(patterns):
        return TriggerGap(at, f"on.{event}.{key} holds {', '.join(repr(e.pattern) for e in bad)}, no filter "
                          f"pattern ({'; '.join(e.reason for e in bad)})",
                          f"correct {', '.join(e.pattern for e in bad)} in {path} (patterns: {FILTER_PATTERNS})")
    if key == "paths":
        missed = [f for f in files if not filter_matches(patterns, f)]
    else:
        missed = [f for f in files if filter_matches(patterns, f)]
    if not missed:
        return None
    shown = ", ".join(missed[:SHOWN_PATHS]) + (f" and {len(missed) - SHOWN_PATHS} more" if len(missed) > SHOWN_PATHS
                                               else "")
    listed = ", ".join(patterns) or "empty"
    if key == "paths":
        problem = f"on.{event}.paths ({listed}) leaves out {len(missed)} of the {whose}: {shown}"
        folders = sorted({f"{f.split('/', 1)[0]}/**" if "/" in f else f for f in missed})
        fix = (f"in {path}, remove on.{event}.paths (fleetflow renders the whole commit: every push counts), or "
               f"add {flow(folders)} to it ({PATHS_FILTERS})")
    else:
        ignoring = [p for p in patterns if not p.startswith("!") and any(filter_matches([p], f) for f in missed)]
        problem = f"on.{event}.paths-ignore ({listed}) ignores {len(missed)} of the {whose}: {shown}"
        fix = f"in {path}, remove {', '.join(ignoring)} from on.{event}.paths-ignore ({PATHS_FILTERS})"
    return TriggerGap(at, problem, fix)


def _untranslatable(patterns: list[str]) -> list[FilterPatternError]:
    bad: list[FilterPatternError] = []
    for pattern in patterns:
        try:
            _filter_regex(pattern.removeprefix("!"))
        except FilterPatternError as exc:
            bad.append(exc)
    return bad
