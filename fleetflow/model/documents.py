"""Reading resource documents from a directory tree.

A tree (the ``main`` checkout, an environment branch checkout, a workload repo) holds YAML files anywhere; each
holds one or more Kubernetes-style documents. This module turns them into :class:`Document` objects: plain data
plus the file/line/column of every key, so that later stages can point at the exact place a value came from.

Hidden folders are skipped except ``.environments/`` (where Kalypso keeps environments); ``.fleetflowignore``
(gitignore syntax) at the root of the tree excludes more. Errors are collected, never raised one at a time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from fleetflow import __version__
from fleetflow.errors import Location, Problem

FLEETFLOW_API = "fleetflow.dev/v1alpha1"
KALYPSO_API = "scheduler.kalypso.io/v1alpha1"
ACCEPTED_APIS = (FLEETFLOW_API, KALYPSO_API)
IGNORE_FILE = ".fleetflowignore"
CACHE_FORMAT = f"fleetflow {__version__} documents 1"
VISIBLE_HIDDEN_DIRS = frozenset({".environments"})
YAML_SUFFIXES = (".yaml", ".yml")


Position = tuple[int, int]  # 1-based line, column
PathKey = tuple[str | int, ...]


@dataclass
class Document:
    """One YAML document: its plain data, and where each part of it stands in its file.

    Positions are kept as flat maps (path → line/column) rather than the parser's node tree, so that documents are
    small, quick to pickle (the parse cache) and free of parser types.
    """

    body: dict[str, Any]
    location: Location
    value_positions: dict[PathKey, Position] = field(default_factory=dict, repr=False)
    key_positions: dict[PathKey, Position] = field(default_factory=dict, repr=False)
    block_scalars: frozenset[PathKey] = field(default_factory=frozenset, repr=False)

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
        """Location of the deepest existing key on ``path`` (the value's line when the value is a scalar)."""
        for end in range(len(path), 0, -1):
            found = self.value_positions.get(path[:end])
            if found is not None:
                return Location(self.location.file, found[0], found[1])
        return self.location

    def is_block_scalar(self, *path: str | int) -> bool:
        """True when the value at ``path`` is written as a ``|`` or ``>`` block (its text starts a line later)."""
        return path in self.block_scalars

    def key_locations(self, *path: str) -> dict[tuple[str, ...], Location]:
        """Location of every key below ``path`` (used for ConfigMap data provenance)."""
        depth = len(path)
        return {
            tuple(str(p) for p in key[depth:]): Location(self.location.file, line, col)
            for key, (line, col) in self.key_positions.items()
            if len(key) > depth and key[:depth] == path and all(isinstance(p, str) for p in key[depth:])
        }


def _positions(
    node: Any, prefix: PathKey, values: dict[PathKey, Position], keys: dict[PathKey, Position], blocks: set[PathKey]
) -> None:
    if isinstance(node, CommentedMap):
        for key in node:
            path = (*prefix, str(key))
            child = node[key]
            kline, kcol = node.lc.key(key)
            keys[path] = (kline + 1, kcol + 1)
            if isinstance(child, CommentedMap | CommentedSeq):
                values[path] = (kline + 1, kcol + 1)
                _positions(child, path, values, keys, blocks)
            else:
                vline, vcol = node.lc.value(key)
                values[path] = (vline + 1, vcol + 1)
                if isinstance(child, LiteralScalarString | FoldedScalarString):
                    blocks.add(path)
    elif isinstance(node, CommentedSeq):
        for index, child in enumerate(node):
            path = (*prefix, index)
            line, col = node.lc.item(index)
            values[path] = (line + 1, col + 1)
            if isinstance(child, CommentedMap | CommentedSeq):
                _positions(child, path, values, keys, blocks)
            elif isinstance(child, LiteralScalarString | FoldedScalarString):
                blocks.add(path)


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
        values: dict[PathKey, Position] = {}
        keys: dict[PathKey, Position] = {}
        blocks: set[PathKey] = set()
        _positions(node, (), values, keys, blocks)
        documents.append(Document(to_plain(node), start, values, keys, frozenset(blocks)))
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


Parsed = tuple[list[Document], list[Problem]]


@dataclass(frozen=True)
class ParseCache:
    """Parsed files by content: a file whose bytes (and displayed name) did not change is not parsed again.

    YAML parsing is most of the time of a re-render with a small change, so incremental runs depend on this.
    Entries are pickles under ``folder``, keyed by a hash of fleetflow's version, the name and the bytes; an
    unreadable entry is ignored and rewritten.
    """

    folder: Path

    def _path(self, display: str, data: bytes) -> Path:
        digest = hashlib.sha256(f"{CACHE_FORMAT}\0{display}\0".encode() + data).hexdigest()
        return self.folder / digest[:2] / f"{digest}.pickle"

    def get(self, display: str, data: bytes) -> Parsed | None:
        try:
            with self._path(display, data).open("rb") as handle:
                found = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        return found if isinstance(found, tuple) and len(found) == 2 else None

    def put(self, display: str, data: bytes, parsed: Parsed) -> None:
        path = self._path(display, data)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_bytes(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs time


def read_tree(tree: Tree, cache: ParseCache | None = None) -> Parsed:
    """Parse every YAML file of a tree. Returns the documents and every problem found."""
    documents: list[Document] = []
    problems: list[Problem] = []
    if not tree.root.is_dir():
        return [], [
            Problem(f"directory not found: {tree.label}", None, "check the path given on the command line")
        ]
    for path in yaml_files(tree):
        display = tree.display(path)
        data = path.read_bytes()
        parsed = cache.get(display, data) if cache is not None else None
        if parsed is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                problems.append(Problem("file is not UTF-8 text", Location(display), "save it as UTF-8"))
                continue
            parsed = parse_documents(text, display)
            if cache is not None:
                cache.put(display, data, parsed)
        documents.extend(parsed[0])
        problems.extend(parsed[1])
    return documents, problems
