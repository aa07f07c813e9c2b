"""The ``BaseRepo`` pin on an environment branch: which ``main`` commit the environment runs.

Pure text in, text out. The file is rewritten with ruamel's round-trip mode, so comments, key order and quoting
that people wrote stay as they were; only ``spec.commit`` (and the hold annotation) change. A file that does not
read as YAML is an :class:`InputError` naming its line and column (the wording of every YAML error,
:func:`fleetflow.model.documents.ruamel_documents`), never a crash: a person edits this file by hand too.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from fleetflow.errors import InputError, Location, Problem, Problems
from fleetflow.model.documents import FLEETFLOW_API, ruamel_documents

PIN_FILE = "base-repo.yaml"
PIN_MESSAGE = re.compile(r"fleetflow: (pin|roll back) \S+ to main@[0-9a-f]+")
"""The message of a pin commit ``promote`` writes (``promote._pin_once``); a pin commit with another message was
written by a person or another tool (the delivery history reads it as such)."""
HOLD_ANNOTATION = "fleetflow.dev/hold"
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Pin:
    commit: str | None
    hold: str | None  # why the environment is held (a rollback), or None
    present: bool = False  # the pin file holds a BaseRepo document (one without ``spec.commit`` included)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _base_repo_index(docs: list[object]) -> int | None:
    for i, doc in enumerate(docs):
        if isinstance(doc, CommentedMap) and doc.get("kind") == "BaseRepo":
            return i
    return None


def _load(yaml: YAML, text: str, display: str) -> list[Any]:
    problems = Problems()
    docs = ruamel_documents(yaml, text, display, problems)
    if docs is None:
        raise InputError(problems.items)
    return docs


def pin_text(data: bytes | None, display: str = PIN_FILE) -> str | None:
    """The pin file's bytes as text; :class:`InputError` at ``display`` when they are not UTF-8 (a traceback in
    every command until 2026-11-28). Not read with its bad bytes replaced: writing the pin writes the rest of the
    file back as it is."""
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(
            f"file is not UTF-8 text (byte {exc.start + 1} is not)", Location(display),
            "save it as UTF-8: fleetflow reads the pin from it and writes the pin back into it")]) from None


def read_pin(text: str | bytes | None, display: str = PIN_FILE) -> Pin:
    """The pin in ``text`` (the pin file's content, None when there is none; bytes: :func:`pin_text`). ``display``
    names the file in the :class:`InputError` raised when it does not read (``<branch>/base-repo.yaml``)."""
    if isinstance(text, bytes):
        text = pin_text(text, display)
    if not text:
        return Pin(None, None)
    docs = _load(_yaml(), text, display)
    odd = [(i, doc) for i, doc in enumerate(docs) if doc is not None and not isinstance(doc, CommentedMap)]
    if odd:  # a list or a value where the BaseRepo goes: "no pinned main commit" with no line until 2026-11-28
        raise InputError([Problem(
            f"document {i + 1} is {'a list' if isinstance(doc, list) else 'a value'}, not a mapping",
            Location(display, *_line_of(doc)),
            "the pin file holds the BaseRepo document fleetflow writes (apiVersion, kind: BaseRepo, metadata, "
            "spec.commit): restore it from the branch's history (git log -p base-repo.yaml), or delete the file and "
            "promote again") for i, doc in odd])
    index = _base_repo_index(docs)
    if index is None:
        return Pin(None, None)
    doc = docs[index]
    assert isinstance(doc, CommentedMap)
    commit = _part(doc, ("spec", "commit"), str, display)
    hold = _part(doc, ("metadata", "annotations", HOLD_ANNOTATION), str, display)
    if commit and not _FULL_SHA.fullmatch(commit):
        raise InputError(_not_a_sha(doc["spec"], commit, display))
    return Pin(commit or None, hold, present=True)


def _not_a_sha(spec: CommentedMap, commit: str, display: str) -> Problem:
    """``spec.commit`` is not a full sha (an edit by hand: a short sha, a branch or tag name, upper case). Until
    2026-11-29 ``schedule`` took a short sha (and said a name "is not on main"), while ``status`` stopped for every
    environment with "forge/git error: not a full commit sha" (exit 3)."""
    line, column = spec.lc.value("commit")
    if _FULL_SHA.fullmatch(commit.lower()):
        hint = "write it in lower case"
    elif re.fullmatch("[0-9a-fA-F]+", commit):
        hint = f"write the full sha: git rev-parse {commit}^{{commit}} prints it"
    else:  # a branch or tag name would move with it, past the gate
        hint = (f"a pin names one main commit by its full sha, not a branch or tag: restore it from the branch's "
                f"history (git log -p {PIN_FILE}), then promote the commit you meant with fleetflow promote")
    return Problem(f"BaseRepo spec.commit must be a full commit sha (40 lower-case hex digits), not {commit!r}",
                   Location(display, line + 1, column + 1),
                   f"{hint} (fleetflow compares the pin with the commits it promotes and reads statuses on it)")


def _line_of(value: object) -> tuple[int | None, int | None]:
    """Where a loaded list starts (ruamel's positions), when known; a scalar has none."""
    lc = getattr(value, "lc", None)
    if lc is None or lc.line is None:
        return None, None
    return lc.line + 1, lc.col + 1


def _kind(value: object) -> str:
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    return f"{value} (a number)" if isinstance(value, int | float) else "text"


def _as_text(key: str, value: object) -> str:
    """How to write ``value`` of ``key`` as text, for a hint."""
    if isinstance(value, dict | list):
        return f'write {key}: "..." with the text itself'
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    return f'quote it: {key}: "{shown}"'


def _part(doc: CommentedMap, path: tuple[str, ...], want: type, display: str) -> Any:
    """The value at ``path`` in the BaseRepo ``doc``: None when a part of the path is missing or empty; an
    InputError at the key when a part is there but not a mapping, or the value not a ``want``."""
    node: Any = doc
    for depth, key in enumerate(path):
        parent, node = node, node.get(key)
        if node is None:
            return None
        expected = want if depth == len(path) - 1 else dict
        if not isinstance(node, expected):
            line, column = parent.lc.key(key)
            name = ".".join(path[:depth + 1])
            what, hint = (("text", _as_text(key, node)) if expected is str else
                          ("a mapping", f"write {key}: on a line of its own, with its keys indented under it"))
            raise InputError(Problem(f"BaseRepo {name} must be {what}, not {_kind(node)}",
                                     Location(display, line + 1, column + 1), hint))
    return node


def past_pin(text: str | bytes | None) -> Pin:
    """The pin of an earlier commit of the branch (history, earlier successes): one that does not read counts as
    none, since the branch's tip is what a run acts on, and reading the tip's pin says what is wrong with it."""
    try:
        return read_pin(text)
    except InputError:
        return Pin(None, None)


def write_pin(text: str | None, *, commit: str, repo: str, hold: str | None) -> str:
    """Return the file with ``spec.commit = commit`` and the hold annotation set (or removed when None): ``text``
    as :func:`read_pin` read it."""
    yaml = _yaml()
    docs = _load(yaml, text, PIN_FILE) if text else []
    index = _base_repo_index(docs)
    if index is None:
        doc = CommentedMap()
        doc["apiVersion"] = FLEETFLOW_API
        doc["kind"] = "BaseRepo"
        doc["metadata"] = CommentedMap(name="main")
        doc["spec"] = CommentedMap(repo=repo, branch="main", path=".", commit=commit)
        docs.append(doc)
    else:
        doc = docs[index]
        assert isinstance(doc, CommentedMap)
        if not isinstance(doc.get("spec"), dict):
            doc["spec"] = CommentedMap()
        doc["spec"]["commit"] = commit
    metadata = doc.get("metadata")
    if hold is not None and not isinstance(metadata, dict):  # absent, or empty (read_pin refuses any other value)
        metadata = doc["metadata"] = CommentedMap()
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if hold is not None:
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = CommentedMap()
        annotations[HOLD_ANNOTATION] = hold
    elif isinstance(annotations, dict) and HOLD_ANNOTATION in annotations:
        del annotations[HOLD_ANNOTATION]
        if not annotations:
            del metadata["annotations"]
    out = io.StringIO()
    if len(docs) == 1:
        yaml.dump(docs[0], out)
    else:
        yaml.dump_all(docs, out)
    return out.getvalue()


def promote_command(environment: str, commit: str = "SHA", *, release: bool = False) -> str:
    """The command a message gives to promote ``commit`` to ``environment`` (an older one: a rollback, held), or
    with ``release`` to end a rollback's hold and move the environment to ``commit``."""
    return f"fleetflow promote --environment {environment} --commit {commit}" + (" --release" if release else "")
