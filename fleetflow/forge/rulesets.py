"""GitHub rulesets as data, and which of fleetflow's ref writes an active one declines. Pure: no I/O.

A ruleset (REST "Get a repository ruleset", ``GET /repos/{owner}/{repo}/rulesets/{ruleset_id}``) targets refs
through ``conditions.ref_name``: ``include`` ("One of these patterns must match", ``~ALL`` for every ref of the
ruleset's target, ``~DEFAULT_BRANCH``) and ``exclude`` ("The condition will not pass if any of these patterns
match"). The patterns are fnmatch patterns matched with Ruby's ``File.fnmatch`` and ``File::FNM_PATHNAME``
(GitHub Docs, "Creating rulesets for a repository", "Using fnmatch syntax": "the wildcard does not match directory
separators (/) ... qa/* will match all branches beginning with qa/ and containing a single slash ... You can
include any number of slashes after qa with qa/**/*"); :func:`fnmatch_pathname` follows Ruby's ``fnmatch``
(``dir.c``): ``**/`` as a whole segment matches any number of segments, ``**`` elsewhere is ``*``.

The rules that decline a ref write (the OpenAPI description's ``repository-rule-*`` schemas): ``creation`` ("Only
allow users with bypass permission to create matching refs"), ``update`` (likewise, to update), ``deletion``
(likewise, to delete), ``non_fast_forward`` ("Prevent users with push access from force pushing to refs") and
``tag_name_pattern`` (``operator`` ``starts_with`` / ``ends_with`` / ``contains`` / ``regex`` on the tag's name,
``negate``: "the rule will fail if the pattern matches"). Only ``active`` enforcement declines anything
(``evaluate`` only reports, ``disabled`` does nothing).

For a branch GitHub evaluates the conditions itself: "Get rules for a branch" ("Returns all active rules that apply
to the specified branch. The branch does not need to exist") lists each rule with its ``ruleset_id``
(:class:`BranchRule`). A push of new commits is also declined by ``pull_request`` (changes go through a pull
request), ``required_status_checks`` (a push is refused until the commit has them: "Required status check ... is
expected", as GitHub answers a push, mxcube/mxcubecore#891; ``do_not_enforce_on_create`` lets a branch be created),
``required_deployments`` and ``required_signatures`` (fleetflow's commits are not signed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from fleetflow.errors import and_list
from fleetflow.linear_regex import RegexError, compile_linear

Write = Literal["create", "move", "delete"]  # what fleetflow does to a ref: point it first, repoint it, remove it
WRITES: tuple[Write, ...] = ("create", "move", "delete")
_OPERATOR_TEXT = {"starts_with": "start with", "ends_with": "end with", "contains": "contain", "regex": "match"}
WRITE_TEXT: dict[Write, str] = {"create": "creating", "move": "moving", "delete": "deleting"}


@dataclass(frozen=True)
class NamePattern:
    """A ``tag_name_pattern`` / ``branch_name_pattern`` rule's parameters."""

    operator: str  # starts_with | ends_with | contains | regex
    pattern: str
    negate: bool = False
    name: str = ""


@dataclass(frozen=True)
class Ruleset:
    """A ruleset as the forge describes it, with what :func:`declined_writes` needs."""

    id: int
    name: str
    target: str  # branch | tag | push | repository
    enforcement: str  # active | evaluate | disabled
    source: str = ""  # "Repository contoso/gitops", "Organization contoso"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()  # the rule types
    name_patterns: tuple[NamePattern, ...] = field(default_factory=tuple)
    can_bypass: str | None = None  # current_user_can_bypass: always | pull_requests_only | never | exempt


def ruleset_of(data: Any) -> Ruleset:
    """A ``repository-ruleset`` object of GitHub's REST API (listed: no ``conditions`` nor ``rules``)."""
    ref_name = ((data.get("conditions") or {}).get("ref_name") or {})
    rules = [r for r in data.get("rules") or [] if isinstance(r, dict)]
    patterns = tuple(
        NamePattern(str(params.get("operator", "")), str(params.get("pattern", "")), bool(params.get("negate")),
                    str(params.get("name") or ""))
        for r in rules if r.get("type") == "tag_name_pattern" and isinstance(params := r.get("parameters"), dict)
    )
    source = " ".join(str(data[k]) for k in ("source_type", "source") if data.get(k))
    return Ruleset(
        id=int(data["id"]), name=str(data.get("name", "")), target=str(data.get("target") or "branch"),
        enforcement=str(data.get("enforcement", "")), source=source,
        include=tuple(str(p) for p in ref_name.get("include") or []),
        exclude=tuple(str(p) for p in ref_name.get("exclude") or []),
        rules=tuple(str(r.get("type", "")) for r in rules), name_patterns=patterns,
        can_bypass=data.get("current_user_can_bypass"),
    )


@dataclass(frozen=True)
class BranchRule:
    """One active rule that applies to a branch, as "Get rules for a branch" lists it."""

    type: str
    ruleset_id: int
    parameters: dict[str, Any] = field(default_factory=dict)


Push = Literal["create", "update", "force"]  # a new branch, a fast-forward, a forced update

# rule type -> (the pushes of new commits it declines, the rule's name in GitHub's settings)
_BRANCH_RESTRICTIONS: dict[str, tuple[tuple[Push, ...], str]] = {
    "creation": (("create",), "Restrict creations"),
    "update": (("update", "force"), "Restrict updates"),
    "non_fast_forward": (("force",), "Block force pushes"),
    "pull_request": (("update", "force"), "Require a pull request before merging"),
    "required_status_checks": (("create", "update", "force"), "Require status checks to pass"),
    "required_deployments": (("create", "update", "force"), "Require deployments to succeed"),
    "required_signatures": (("create", "update", "force"), "Require signed commits"),
}


def declined_pushes(rules: list[BranchRule], pushes: tuple[Push, ...]) -> dict[int, list[str]]:
    """The rulesets (by id) whose rules decline one of ``pushes`` of fleetflow's unsigned commits, each with the
    names of those rules."""
    declined: dict[int, list[str]] = {}
    for rule in rules:
        writes, text = _BRANCH_RESTRICTIONS.get(rule.type, ((), ""))
        if rule.type == "required_status_checks" and rule.parameters.get("do_not_enforce_on_create"):
            writes = tuple(w for w in writes if w != "create")
        if set(writes) & set(pushes) and text not in declined.get(rule.ruleset_id, []):
            declined.setdefault(rule.ruleset_id, []).append(text)
    return declined


def fnmatch_pathname(pattern: str, name: str) -> bool:
    """Ruby's ``File.fnmatch(pattern, name, File::FNM_PATHNAME)``, without ``FNM_DOTMATCH``: ``*``, ``?`` and
    ``[...]`` never match ``/``; a whole segment ``**`` followed by ``/`` matches zero or more segments; a wildcard
    does not match a leading ``.`` of a segment; ``\\`` quotes the next character."""
    return _match(tuple(pattern.split("/")), tuple(name.split("/")))


def _match(pattern: tuple[str, ...], name: tuple[str, ...]) -> bool:
    if not pattern:
        return not name
    head, rest = pattern[0], pattern[1:]
    if head == "**" and rest:  # "**/": this segment and any number after it, none starting with "."
        for skip in range(len(name) + 1):
            if _match(rest, name[skip:]):
                return True
            if skip < len(name) and name[skip].startswith("."):
                return False
        return False
    if not name:
        return False
    if name[0].startswith(".") and not head.startswith("."):
        return False  # a leading period is matched only by a literal one (no FNM_DOTMATCH)
    return _segment(head).fullmatch(name[0]) is not None and _match(rest, name[1:])


@lru_cache(maxsize=256)
def _segment(pattern: str) -> re.Pattern[str]:
    """One segment of an fnmatch pattern as a regular expression (``/`` cannot occur in it)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1  # a run of stars is one wildcard ("**" that is not a whole segment is "*")
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1:end]
            negated = body[0] in "!^"
            out.append("[" + ("^" if negated else "") + re.escape(body[1:] if negated else body).replace(
                "\\-", "-") + "]")
            i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def targets_ref(ruleset: Ruleset, ref: str, default_branch: str | None = None) -> bool:
    """Whether ``ruleset``'s ``ref_name`` condition selects the full ref name ``ref`` (``refs/tags/...``)."""

    def one(pattern: str) -> bool:
        if pattern == "~ALL":
            kind = "refs/tags/" if ruleset.target == "tag" else "refs/heads/"
            return ref.startswith(kind)
        if pattern == "~DEFAULT_BRANCH":
            return default_branch is not None and ref == f"refs/heads/{default_branch}"
        return fnmatch_pathname(pattern, ref)

    return any(one(p) for p in ruleset.include) and not any(one(p) for p in ruleset.exclude)


def name_pattern_passes(rule: NamePattern, name: str) -> bool:
    """Whether the short name (``fleetflow/auto-merge/dev``) satisfies a name-pattern rule."""
    if rule.operator == "starts_with":
        found = name.startswith(rule.pattern)
    elif rule.operator == "ends_with":
        found = name.endswith(rule.pattern)
    elif rule.operator == "contains":
        found = rule.pattern in name
    else:  # regex: RE2, as on GitHub (Docs, "Creating rulesets for a repository": "Rulesets support RE2 syntax")
        try:
            found = compile_linear(rule.pattern).search(name) is not None
        except RegexError:
            return True  # a pattern GitHub would not have taken is not judged here
    return found != rule.negate


def declined_writes(ruleset: Ruleset, ref: str, default_branch: str | None = None) -> dict[Write, list[str]]:
    """The writes of ``ref`` that ``ruleset`` declines (a write -> the rules that decline it, as GitHub names
    them); empty when it is not active, does not target ``ref``, or restricts nothing fleetflow does."""
    if ruleset.enforcement != "active" or not targets_ref(ruleset, ref, default_branch):
        return {}
    declined: dict[Write, list[str]] = {}
    for write, rule, text in _RESTRICTIONS:
        if rule in ruleset.rules:
            declined.setdefault(write, []).append(text)
    short = ref.removeprefix("refs/tags/").removeprefix("refs/heads/")
    for pattern in ruleset.name_patterns:
        if not name_pattern_passes(pattern, short):
            how = "must not" if pattern.negate else "must"
            text = f"tag name {how} {_OPERATOR_TEXT.get(pattern.operator, pattern.operator)} {pattern.pattern!r}"
            for write in _NAMING:
                declined.setdefault(write, []).append(text)
    return declined


# (the write, the rule type that declines it, the rule's name in GitHub's settings); moving a record to a head that
# does not descend from the old one (a new schedule's) is a force push
_RESTRICTIONS: tuple[tuple[Write, str, str], ...] = (
    ("create", "creation", "Restrict creations"),
    ("move", "update", "Restrict updates"),
    ("move", "non_fast_forward", "Block force pushes"),
    ("delete", "deletion", "Restrict deletions"),
)
_NAMING: tuple[Write, ...] = ("create", "move")  # the writes that give a ref its name


def writes_text(writes: list[Write]) -> str:
    """``["create", "delete"]`` -> ``"creating and deleting"``."""
    return and_list([WRITE_TEXT[w] for w in WRITES if w in writes])
