"""Reading resource documents from a directory tree.

A tree (the ``main`` checkout, an environment branch checkout, a workload repo) holds YAML files anywhere; each
holds one or more Kubernetes-style documents. This module turns them into :class:`Document` objects: plain data
plus the file/line/column of every key, so that later stages can point at the exact place a value came from.

Hidden folders are skipped except ``.environments/`` (where Kalypso keeps environments); ``.fleetflowignore``
(gitignore syntax) at the root of the tree excludes more. Errors are collected, never raised one at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from fleetflow.errors import Location, Problem

FLEETFLOW_API = "fleetflow.dev/v1alpha1"
KALYPSO_API = "scheduler.kalypso.io/v1alpha1"
ACCEPTED_APIS = (FLEETFLOW_API, KALYPSO_API)
IGNORE_FILE = ".fleetflowignore"
VISIBLE_HIDDEN_DIRS = frozenset({".environments"})
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class Document:
    """One YAML document: its plain data, and where each part of it stands in its file."""

    body: dict[str, Any]
    location: Location
    node: CommentedMap = field(repr=False)

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

    def where(self, *path: str | int) -> Location:
        """Location of the deepest existing key on ``path`` (the value's line when the key exists)."""
        node: Any = self.node
        best = self.location
        for part in path:
            if isinstance(node, CommentedMap) and part in node:
                line, col = node.lc.value(part) if _scalar(node[part]) else node.lc.key(part)
                best = Location(self.location.file, line + 1, col + 1)
                node = node[part]
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
                line, col = node.lc.item(part)
                best = Location(self.location.file, line + 1, col + 1)
                node = node[part]
            else:
                break
        return best

    def key_locations(self, *path: str) -> dict[tuple[str, ...], Location]:
        """Location of every key below ``path`` (used for ConfigMap data provenance)."""
        node: Any = self.node
        for part in path:
            if not isinstance(node, CommentedMap) or part not in node:
                return {}
            node = node[part]
        found: dict[tuple[str, ...], Location] = {}
        _collect_keys(node, (), self.location.file, found)
        return found


def _scalar(value: Any) -> bool:
    return not isinstance(value, CommentedMap | CommentedSeq)


def _collect_keys(
    node: Any, prefix: tuple[str, ...], file: str, out: dict[tuple[str, ...], Location]
) -> None:
    if not isinstance(node, CommentedMap):
        return
    for key in node:
        line, col = node.lc.key(key)
        path = (*prefix, str(key))
        out[path] = Location(file, line + 1, col + 1)
        _collect_keys(node[key], path, file, out)


def to_plain(value: Any) -> Any:
    """ruamel's round-trip types → plain dict/list/str/int/float/bool/None (templates get plain data only)."""
    if isinstance(value, Mapping):
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
    # dates, timestamps and other YAML types: keep their text form
    return str(value)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def parse_documents(text: str, display: str) -> tuple[list[Document], list[Problem]]:
    """Parse every document in ``text``; ``display`` is the file name used in messages."""
    problems: list[Problem] = []
    documents: list[Document] = []
    try:
        loaded = list(_yaml().load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display)
        what = (exc.problem or exc.context or "invalid YAML").strip()
        if "duplicate key" in what:
            hint = "each key may appear once per mapping; remove or rename the repeated one"
        else:
            hint = "fix the YAML syntax (indentation, quotes, ':' after keys)"
        return [], [Problem(f"invalid YAML: {what}", where, hint)]
    except YAMLError as exc:
        return [], [Problem(f"invalid YAML: {exc}", Location(display), "fix the YAML syntax")]
    for index, node in enumerate(loaded):
        if node is None:
            continue  # empty document ("---" at the end of a file)
        if not isinstance(node, CommentedMap):
            line = getattr(getattr(node, "lc", None), "line", None)
            problems.append(
                Problem(
                    f"document {index + 1} is a {type(node).__name__}, not a mapping",
                    Location(display, line + 1 if line is not None else None),
                    "each document must be a resource with apiVersion, kind, metadata and spec",
                )
            )
            continue
        start = Location(display, node.lc.line + 1, node.lc.col + 1)
        documents.append(Document(body=to_plain(node), location=start, node=node))
    return documents, problems


@dataclass(frozen=True)
class Tree:
    """A directory tree of resource files. ``label`` prefixes file names in messages (the path as given)."""

    root: Path
    label: str

    def display(self, path: Path) -> str:
        return os.path.join(self.label, path.relative_to(self.root).as_posix())


def _ignore_spec(root: Path) -> pathspec.GitIgnoreSpec | None:
    ignore = root / IGNORE_FILE
    if not ignore.is_file():
        return None
    return pathspec.GitIgnoreSpec.from_lines(ignore.read_text(encoding="utf-8").splitlines())


def yaml_files(tree: Tree) -> Iterator[Path]:
    """Every YAML file of the tree, in a stable order, minus hidden folders and ignored paths."""
    spec = _ignore_spec(tree.root)
    for dirpath, dirnames, filenames in os.walk(tree.root):
        current = Path(dirpath)
        rel_dir = current.relative_to(tree.root).as_posix()
        keep = []
        for name in sorted(dirnames):
            if name.startswith(".") and name not in VISIBLE_HIDDEN_DIRS:
                continue
            rel = f"{name}/" if rel_dir == "." else f"{rel_dir}/{name}/"
            if spec is not None and spec.match_file(rel):
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            if not name.endswith(YAML_SUFFIXES) or name.startswith("."):
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if spec is not None and spec.match_file(rel):
                continue
            yield current / name


def read_tree(tree: Tree) -> tuple[list[Document], list[Problem]]:
    """Parse every YAML file of a tree. Returns the documents and every problem found."""
    documents: list[Document] = []
    problems: list[Problem] = []
    if not tree.root.is_dir():
        return [], [
            Problem(f"directory not found: {tree.label}", None, "check the path given on the command line")
        ]
    for path in yaml_files(tree):
        display = tree.display(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            problems.append(Problem("file is not UTF-8 text", Location(display), "save it as UTF-8"))
            continue
        found, errors = parse_documents(text, display)
        documents.extend(found)
        problems.extend(errors)
    return documents, problems


def read_trees(trees: Sequence[Tree]) -> tuple[list[Document], list[Problem]]:
    documents: list[Document] = []
    problems: list[Problem] = []
    for tree in trees:
        found, errors = read_tree(tree)
        documents.extend(found)
        problems.extend(errors)
    return documents, problems
