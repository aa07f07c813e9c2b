"""Reading YAML: the quick path (libyaml) and the careful path (ruamel.yaml) mean the same thing, and the parse
cache holds data that cannot run code, in a folder only the user can read.

The YAML 1.2 core schema is what ruamel.yaml reads by default (https://yaml.org/spec/1.2.2/#103-core-schema;
ruamel/yaml/resolver.py, the entries for version (1, 2)); PyYAML's own resolver is YAML 1.1
(https://pyyaml.org/wiki/PyYAMLDocumentation: "yes", "on" are booleans, "0777" is octal). fleetflow keeps 1.2,
as it always read: docs/design.md ("YAML").
"""

from __future__ import annotations

import math
import os
import pickle
import random
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetflow.errors import Problems
from fleetflow.model import documents
from fleetflow.model.documents import MAX_DEPTH, Document, ParseCache, Tree, parse_documents
from tests.helpers import build_file_tree, parsed, tree_read

ROOT = Path(__file__).resolve().parent.parent


def _careful(text: str, display: str = "f.yaml") -> tuple[list[Document], list[Any]]:
    documents._quick_enabled = False
    try:
        return parsed(text, display)
    finally:
        documents._quick_enabled = True


def _quick(text: str, display: str = "f.yaml") -> list[Document] | None:
    """The quick path's documents, or None when it hands the file to the careful path."""
    try:
        return documents._quick_parse(text, documents.Source(display, text))
    except documents._Careful:
        return None


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN and types compared (1 is not 1.0, True is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _yaml_files() -> Iterator[Path]:
    for folder in ("examples", "tests", "actions", ".github", "docs"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                yield path


def test_both_paths_read_every_yaml_file_of_the_repo_alike() -> None:
    """Data, document starts and the position of every key and value agree, file by file."""
    compared = 0
    for path in _yaml_files():
        text = path.read_text(encoding="utf-8")
        careful, problems = _careful(text, path.name)
        quick = _quick(text, path.name)
        if problems or quick is None:
            continue
        compared += 1
        assert len(quick) == len(careful), path
        for q, c in zip(quick, careful, strict=True):
            assert _same(q.body, c.body), path
            assert q.location == c.location, path
            assert q.index == c.index, path
            assert q.positions == c.positions, path
    assert compared >= 100  # the examples, the golden trees and the workflows


SCALARS = [
    # (YAML text, what fleetflow reads: YAML 1.2 core schema, as ruamel.yaml)
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("y", "y"), ("Yes", "Yes"),
    ("true", True), ("False", False), ("TRUE", True),
    ("~", None), ("null", None), ("", None),
    ("0777", 777), ("0o17", 15), ("017", 17), ("0x1F", 31), ("0b101", 5), ("1_000", 1000), ("-12", -12),
    ("1e3", 1000.0), ("1.5", 1.5), ("1.", 1.0), ("-.5", -0.5), (".inf", math.inf), ("-.Inf", -math.inf),
    ("1:20", "1:20"), ("12:30:00", "12:30:00"),
    ("2024-01-01", "2024-01-01"), ("2024-1-1", "2024-1-1"),
    ("'0777'", "0777"), ('"yes"', "yes"), ("!!str 12", "12"), ("!!int '12'", 12), ("=", "="), ("<<", "<<"),
]


@pytest.mark.parametrize(("text", "expected"), SCALARS)
def test_scalars_mean_what_yaml_1_2_says(text: str, expected: Any) -> None:
    doc = f"v: {text}\n"
    quick = _quick(doc)
    careful, problems = _careful(doc)
    assert problems == []
    assert _same(careful[0].body["v"], expected)
    assert quick is not None and _same(quick[0].body["v"], expected)
    docs, _ = parsed(doc, "f.yaml")
    assert _same(docs[0].body["v"], expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # merge keys, date-times, non-string keys, a %YAML directive, other tags: the careful path reads them
        ("a: &x {k: 1}\nb:\n  <<: *x\n  j: 2\n", {"a": {"k": 1}, "b": {"j": 2, "k": 1}}),
        ("t: 2001-12-14 21:59:43.10 -5\n", {"t": "2001-12-14 21:59:43.10 -5"}),  # as written (go-yaml v2 too)
        ("1: one\n", {"1": "one"}),
        ("%YAML 1.1\n---\nv: yes\n", {"v": True}),
        ("v: !custom {a: 1}\nw: !x 12\n", {"v": {"a": 1}, "w": "12"}),
        # tagged lists, an inline mapping merged in: ruamel keeps no position for what they hold, and reading the
        # positions stopped with a TypeError until 2026-11-28 (a bad-input hunt); no code runs for a Python tag
        ("v: !x [1, 2]\nw: 3\n", {"v": [1, 2], "w": 3}),
        ("v: !!omap [a: 1]\n", {"v": {"a": 1}}),
        ("v: !!python/object/apply:os.system [id]\n", {"v": ["id"]}),
        ("v:\n  <<: {a: 1}\n", {"v": {"a": 1}}),
    ],
)
def test_what_the_quick_path_leaves_out_is_read_the_careful_way(text: str, expected: dict[str, Any]) -> None:
    assert _quick(text) is None
    docs, problems = parsed(text, "f.yaml")
    assert problems == [] and docs[0].body == expected


@pytest.mark.parametrize(("text", "where"), [
    ("kind: A\nspec:\n  x:\t1\n", "f.yaml:3:5"),  # between a key and its value
    ("kind: A\nspec:\n  x\t: 1\n", "f.yaml:3:4"),  # before the colon
    ("kind: A\nspec:\n  s\tx: 1\n", "f.yaml:3:4"),  # inside a plain key
])
def test_a_tab_between_tokens_is_the_same_one_problem_whatever_else_the_file_holds(text: str, where: str) -> None:
    """YAML 1.2 lets a tab separate tokens on a line (https://yaml.org/spec/1.2.2/#rule-s-white); libyaml reads it
    so, ruamel.yaml (fleetflow's meaning, docs/design.md "YAML") refuses it: its scanner skips only spaces there
    (ruamel/yaml/scanner.py, ``scan_to_next_token``). The quick path read such a file, and the same file with a
    merge key in it, which the careful path reads, was refused; and ``base-repo.yaml``, which fleetflow reads and
    rewrites with ruamel, crashed every fleet command. Now the file is refused in both cases, at the tab, with how
    to fix it. Found by the mutated files below."""
    for extra in ("", "m: &x {k: 1}\nn:\n  <<: *x\n"):
        docs, problems = parsed(text + extra, "f.yaml")
        assert docs == [] and len(problems) == 1, problems
        assert str(problems[0].location) == where and "'\\t'" in problems[0].message
        assert problems[0].hint is not None and problems[0].hint.startswith("replace the tab with spaces")


def test_a_tab_inside_quotes_block_scalars_and_comments_still_reads() -> None:
    text = 'kind: A\nspec:\n  x: "a\tb"  # c\td\n  y: |\n    p\tq\n'
    (doc,), problems = parsed(text, "f.yaml")
    assert problems == [] and doc.body == {"kind": "A", "spec": {"x": "a\tb", "y": "p\tq\n"}}
    assert str(doc.where("spec", "x")) == "f.yaml:3:6" and doc.is_block_scalar("spec", "y")


# --- both paths on mutated files --------------------------------------------------------------------------------

# how many mutated files the test below reads (about 2 ms each); a search runs more, e.g.
# FLEETFLOW_YAML_MUTATIONS=50000 (read on import: tests/conftest.py unsets every FLEETFLOW_* around each test)
MUTATIONS = int(os.environ.get("FLEETFLOW_YAML_MUTATIONS", "2000"))
INSERTS = [*":-?[]{},#&*!|>'\"%@` \t\n\\", "~", "null", "yes", "0x1", "1e3", "<<", "---", "...", "- ", ": ",
           "\u00e9", "\ufeff", "0o7", ".5", "1_0", "&a ", "*a", "!!str ", "!x ", "? "]
VALUES = ["", "~", "[]", "{}", "1", "1.0", "true", "'x'", '"a\\tb"', "|", ">-", "- a", "&x y", "*x", "2024-01-01",
          "2024-01-01T00:00:00Z", ".inf", "-.nan", "0b101", "+1", "00", "1__0", "!!binary aGk=", "{a: 1, a: 2}",
          "[a, b, [c]]", "? x", '"\\u00e9"', "\t1"]


def _mutated(text: str, rng: random.Random) -> str:
    """``text`` with one to three edits of the kinds people make by mistake: a line dropped, repeated, moved,
    indented by one or two more or less, a character deleted or inserted, a value replaced."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        line = lines[i]
        edit = rng.randrange(7)
        if edit == 0 and len(lines) > 1:
            del lines[i]
        elif edit == 1:
            lines.insert(i, rng.choice(lines))
        elif edit == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif edit == 3:
            shift = rng.choice([-2, -1, 1, 2])
            lines[i] = " " * shift + line if shift > 0 else line[-shift:] if line[:-shift].strip() == "" else line
        elif edit == 4 and line:
            at = rng.randrange(len(line))
            lines[i] = line[:at] + line[at + 1:]
        elif edit == 5 and ": " in line:
            lines[i] = line.partition(": ")[0] + ": " + rng.choice(VALUES)
        else:
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + rng.choice(INSERTS) + line[at:]
    return "\n".join(lines)


def test_mutated_files_of_the_repo_read_the_same_both_ways() -> None:
    """A differential search: every YAML file of the repo, edited at random (seeded, so a failure repeats), read
    with the quick path on and with the careful path alone gives the same problems, or the same documents with the
    same data, start and position of every key and value. It found two ways the paths parted, both fixed: a tab
    between tokens (test above) and a byte-order mark inside the file, after which libyaml counts columns one
    fewer and which at a file's end ruamel refuses; a file holding either is now read the careful way."""
    texts = [path.read_text(encoding="utf-8") for path in _yaml_files()]
    rng = random.Random(0)
    quick = 0
    for _ in range(MUTATIONS):
        text = _mutated(rng.choice(texts), rng)
        careful, careful_problems = _careful(text)
        docs, problems = parsed(text, "f.yaml")
        assert problems == careful_problems, text
        assert len(docs) == len(careful), text
        for d, c in zip(docs, careful, strict=True):
            assert _same(d.body, c.body) and d.location == c.location and d.index == c.index, text
            assert d.positions == c.positions, text
        quick += _quick(text) is not None
    assert quick >= MUTATIONS // 5  # the quick path read a fair share of them (about a third)


def test_aliases_are_copies_as_before() -> None:
    docs, _ = parsed("a: &x {k: [1]}\nb: *x\n", "f.yaml")
    body = docs[0].body
    assert body["a"] == body["b"] and body["a"] is not body["b"]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("a: 1\nb: [\n", "f.yaml:3:1", "invalid YAML"),
        ("a: 1\nb: 2\na: 3\n", "f.yaml:3:1", "duplicate key"),
        ("kind: A\n---\n- x\n", "f.yaml:3", "document 2 is a list, not a mapping"),
        ("v: -_\n", "f.yaml", "invalid YAML"),  # ruamel's int constructor raised IndexError: crashed before
        # a key that is a mapping with a list in it: ruamel raised TypeError (unhashable), a crash, found by the
        # mutated files; a list or mapping key without one became its Python text ("('x',)") as a key
        ("a: 1\nspec:\n  ? events:\n    - kind: K\n  : 1\n", "f.yaml:3:5", "a key that is a list or a mapping"),
        ("a:\n  [x]: 1\n", "f.yaml:2:3", "a key that is a list or a mapping"),
        ("a: 1\n? {b: 1}\n: 2\n", "f.yaml:2:3", "a key that is a list or a mapping"),
        # the same in a first document, with a second one libyaml cannot read: it was not looked for, a crash again
        # (found by FLEETFLOW_YAML_MUTATIONS=50000)
        ("kind: A\n? metadata:\n  labels:\n    a: b\n---\nkind: B\nspec:\n  i: 5m\n   s: 1\n", "f.yaml:2:3",
         "a key that is a list or a mapping"),
    ],
)
def test_errors_keep_their_line_and_column(text: str, where: str, message: str) -> None:
    _, problems = parsed(text, "f.yaml")
    assert len(problems) == 1
    assert str(problems[0].location).startswith(where) and message in problems[0].message


def test_an_anchor_defined_again_names_the_later_node_without_a_python_warning() -> None:
    """YAML 1.2.2, 3.2.2.2 "Anchors and Aliases": an alias refers to the most recent node with its anchor. libyaml
    refuses such a file and ruamel reads it, with a ``ReusedAnchorWarning`` that reached the terminal as a Python
    warning naming "<unicode string>" (an error here, so that it fails the test)."""
    text = "a: &x 1\nb: &x 2\nc: *x\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (doc,), problems = parsed(text, "f.yaml")
        # a file read from the parse cache works its positions out when first asked: the same reader, no warning
        cached = documents.Source("f.yaml", text).positions(0, doc.location)
    assert problems == [] and doc.body == {"a": 1, "b": 2, "c": 2}
    assert cached.values[("b",)] == (2, 4)


def test_positions_are_worked_out_only_when_asked_for() -> None:
    text = "kind: A\nspec:\n  items:\n    - |\n      text\n    - b\n"
    (doc,), _ = parsed(text, "f.yaml")
    assert doc.source is not None and doc.source._positions is None  # nothing parsed for positions yet
    assert str(doc.where("spec", "items", 1)) == "f.yaml:6:7"
    assert doc.is_block_scalar("spec", "items", 0) and not doc.is_block_scalar("spec", "items", 1)
    assert str(doc.key_locations("spec")[("items",)]) == "f.yaml:3:3"


@pytest.mark.parametrize(
    ("text", "path", "where"),
    [
        ("kind: A\nspec:\n  clusterType:\n  other: x\n", ("spec", "clusterType"), "f.yaml:3:15"),
        ("kind: A\nspec:\n  clusterType :\n  other: x\n", ("spec", "clusterType"), "f.yaml:3:16"),
        # at the end of the file: ruamel named the line after the last one
        ("kind: A\nspec:\n  clusterType:\n", ("spec", "clusterType"), "f.yaml:3:15"),
        ("kind: A\nspec:\n  clusterType:\n\n# later\n\nother: x\n", ("spec", "clusterType"), "f.yaml:3:15"),
        ("kind: A\nspec:\n  items:\n  - name:\n    env: dev\n", ("spec", "items", 0, "name"), "f.yaml:4:10"),
    ],
)
def test_an_empty_value_stands_just_after_its_key(text: str, path: tuple[str | int, ...], where: str) -> None:
    """An empty value (``clusterType:`` and nothing after it) is placed just after its key's ':', on the key's
    line, by both paths: where a value of the wrong type is placed, and where the value would be written.
    ruamel placed it at the next token, and the quick path sent such files to ruamel: a message about line 3 named
    line 4 (the next key), or at the end of a file a line that is not there (a bad-input hunt, 2026-11-28)."""
    (doc,), _ = parsed(text, "f.yaml")
    (careful,), _ = _careful(text)
    assert str(doc.where(*path)) == where
    assert str(careful.where(*path)) == where


def test_empty_values_placed_right_before_stay_there() -> None:
    """The empty values ruamel placed just after their ':' or '-' already (after a comment, at the end of a file
    without a last line break, a list item, in a flow mapping): the same place as above, on both paths (a guard
    written with the test above; these passed before it)."""
    for text, path, where in [
        ("kind: A\nspec:\n  clusterType:   # to do\n  other: x\n", ("spec", "clusterType"), "f.yaml:3:15"),
        ("kind: A\nspec:\n  clusterType:", ("spec", "clusterType"), "f.yaml:3:15"),
        ("kind: A\nspec:\n  items:\n  - a\n  -\n  - b\n", ("spec", "items", 1), "f.yaml:5:4"),
        ("kind: A\nspec:\n  items:\n  - a\n  -\n", ("spec", "items", 1), "f.yaml:5:4"),
        ("kind: A\nspec: {clusterType: , other: x}\n", ("spec", "clusterType"), "f.yaml:2:20"),
    ]:
        (doc,), _ = parsed(text, "f.yaml")
        (careful,), _ = _careful(text)
        assert str(doc.where(*path)) == where == str(careful.where(*path)), text


PLAIN = st.text(alphabet="0123456789._-+eEoxbO:tTrufalsFnNy~ ", min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(PLAIN)
def test_any_plain_scalar_reads_the_same_both_ways(text: str) -> None:
    doc = f"v: {text}\n"
    quick = _quick(doc)
    careful, problems = _careful(doc)
    if quick is None:
        return  # the careful path reads it: the same by construction
    assert problems == [], text
    assert _same(quick[0].body, careful[0].body), text


# --- the parse cache ------------------------------------------------------------------------------------------


class _Planted:
    """Unpickling this creates a file: what a planted cache entry would do if the cache loaded pickles."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def _tree(tmp_path: Path) -> Tree:
    root = build_file_tree(tmp_path / "tree", {"a.yaml": "kind: A\nmetadata:\n  name: a\n"})
    return Tree(root, "t")


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def test_a_planted_file_in_the_cache_is_never_executed(tmp_path: Path) -> None:
    tree, folder = _tree(tmp_path), tmp_path / "cache"
    tree_read(tree, ParseCache(folder))
    (entry,) = _entries(folder)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Planted(marker))
    entry.write_bytes(payload)  # in place of the entry for a.yaml
    entry.with_suffix(".pickle").write_bytes(payload)  # and where the old cache kept it
    docs, problems = tree_read(tree, ParseCache(folder))
    assert not marker.exists()
    assert problems == [] and [d.body for d in docs] == [{"kind": "A", "metadata": {"name": "a"}}]


def test_a_corrupt_entry_is_ignored_parsed_again_and_rewritten(tmp_path: Path) -> None:
    tree, folder = _tree(tmp_path), tmp_path / "cache"
    tree_read(tree, ParseCache(folder))
    (entry,) = _entries(folder)
    good = entry.read_bytes()
    for bad in (b"{not json", b'{"a": 1}', b"[[0, 1, 1, []]]", b""):
        entry.write_bytes(bad)
        docs, problems = tree_read(tree, ParseCache(folder))
        assert problems == [] and docs[0].name == "a" and str(docs[0].where("metadata", "name")) == "t/a.yaml:3:9"
        assert entry.read_bytes() == good or bad == b"[[0, 1, 1, []]]"


def test_cached_documents_are_read_back_with_the_same_data_and_positions(tmp_path: Path) -> None:
    tree, folder = _tree(tmp_path), tmp_path / "cache"
    first, _ = tree_read(tree, ParseCache(folder))
    again, _ = tree_read(tree, ParseCache(folder))
    assert [(d.body, d.location, d.positions) for d in again] == [(d.body, d.location, d.positions) for d in first]


def test_the_cache_folder_is_the_users_alone(tmp_path: Path) -> None:
    tree, folder = _tree(tmp_path), tmp_path / "cache" / "parsed"
    tree_read(tree, ParseCache(folder))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for entry in _entries(folder):
        assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(entry.stat().st_mode) & 0o077 == 0


def test_an_own_folder_that_others_may_read_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "parsed"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    tree_read(_tree(tmp_path), ParseCache(folder))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and _entries(folder)


@pytest.mark.parametrize("mode", [0o775, 0o777, 0o722])
def test_a_folder_others_may_write_to_is_not_used(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "parsed"
    folder.mkdir()
    os.chmod(folder, mode)
    docs, problems = tree_read(_tree(tmp_path), ParseCache(folder))
    assert problems == [] and docs[0].name == "a"
    assert _entries(folder) == [] and stat.S_IMODE(folder.stat().st_mode) == mode  # untouched


def test_a_folder_of_someone_else_or_a_link_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "parsed"
    folder.mkdir(mode=0o700)
    real_uid = os.getuid()
    monkeypatch.setattr(documents.os, "getuid", lambda: real_uid + 1)  # as if another user owned it
    tree_read(_tree(tmp_path), ParseCache(folder))
    assert _entries(folder) == []
    monkeypatch.undo()
    link = tmp_path / "link"
    link.symlink_to(folder)
    tree_read(_tree(tmp_path), ParseCache(link))
    assert _entries(folder) == []


def test_the_cli_cache_folder_comes_from_platformdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fleetflow.cli.common import parse_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FLEETFLOW_PARSE_CACHE", raising=False)
    cache = parse_cache()
    assert cache is not None and cache.folder == tmp_path / "fleetflow" / "parsed"
    monkeypatch.setenv("FLEETFLOW_PARSE_CACHE", "0")
    assert parse_cache() is None


def test_merged_keys_point_at_their_mapping() -> None:
    """ruamel keeps no position for a key merged in by "<<"; reading such a file crashed before."""
    (doc,), problems = parsed("a: &x {k: 1}\nb:\n  <<: *x\n  j: 2\n", "f.yaml")
    assert problems == [] and str(doc.where("b", "j")) == "f.yaml:4:6" and str(doc.where("b", "k")) == "f.yaml:2:1"


def test_a_document_may_nest_100_levels_and_no_more() -> None:
    """:data:`fleetflow.model.documents.MAX_DEPTH`: mappings and lists nested 100 levels read, 101 are one problem
    at the document (the steps that walk a document nest calls per level, and Python stops at 1,000), and a file
    nested past what the parsers take is one problem at the file, not a RecursionError (until 2026-11-28)."""
    def nested(levels: int) -> str:  # the root mapping is a level: {"k": [[...]]}
        return f"k: {'[' * (levels - 1)}{']' * (levels - 1)}\n"

    for levels, problem in ((MAX_DEPTH, None), (MAX_DEPTH + 1, "document nested more than 100 levels deep"),
                            (20_000, "YAML nested too deeply to read (fleetflow reads up to 100 levels)")):
        problems = Problems()
        docs = parse_documents(nested(levels), "deep.yaml", problems)
        assert [p.message for p in problems] == ([problem] if problem else []), levels
        assert len(docs) == (1 if problem is None else 0)
