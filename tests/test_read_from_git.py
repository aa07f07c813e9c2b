"""The control plane read from git objects (``CommitTree``), never from a folder: the same documents, order and
problems as the folder it would check out; the files the parse cache holds not read at all; nothing written."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pathspec
import pytest

from fleetflow.errors import Problems
from fleetflow.forge.git import BareRepo, TreeEdit
from fleetflow.model.documents import Document, ParseCache, Tree, read_tree, yaml_files, yaml_paths
from fleetflow.promotion.context import CommitTree
from tests.fleet import local_fleet

FILES: dict[str, bytes] = {
    "a.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    "b/x.yaml": b"kind: ClusterType\nmetadata:\n  name: x\n---\nkind: Cluster\nmetadata:\n  name: x-1\n",
    "b/c/deep.yml": b"kind: Cluster\nmetadata:\n  name: deep\n",
    "b/z.yaml": b"kind: Cluster\nmetadata: {name: z}\n",
    "c.yaml": b"kind: Cluster\nmetadata:\n  name: c\n---\n",
    "B-upper.yaml": b"kind: Cluster\nmetadata:\n  name: upper\n",
    ".environments/dev.yaml": b"kind: Environment\nmetadata:\n  name: dev\n",
    ".hidden/h.yaml": b"kind: Cluster\nmetadata:\n  name: hidden\n",
    ".dot.yaml": b"kind: Cluster\nmetadata:\n  name: dot\n",
    "notes.txt": b"not yaml\n",
    "ignored/i.yaml": b"kind: Cluster\nmetadata:\n  name: ignored\n",
    "keep/skip.yaml": b"kind: Cluster\nmetadata:\n  name: skipped\n",
    "keep/kept.yaml": b"kind: Cluster\nmetadata:\n  name: kept\n",
    "broken.yaml": b"kind: Cluster\nmetadata:\n  name: [unclosed\n",
    "latin1.yaml": "name: caf\u00e9\n".encode("latin-1"),
    "empty.yaml": b"",
    "tab.yaml": b"kind: Cluster\nmetadata:\n  name: tabbed  # a\ttab\n",
    ".fleetflowignore": b"ignored/\n*/skip.yaml\n",
}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _commit(root: Path, files: Mapping[str, bytes], *, link: bool = True) -> tuple[BareRepo, str]:
    work = root / "work"
    for rel, data in files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if link:
        os.symlink("a.yaml", work / "link.yaml")  # git keeps it as a link; it is never followed
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "files")
    _git(root, "clone", "-q", "--bare", str(work), str(root / "repo.git"))
    return BareRepo(root / "repo.git"), _git(work, "rev-parse", "HEAD")


class Recorded:
    """A commit's files (:class:`fleetflow.model.documents.GitFiles`) that records the blobs read."""

    def __init__(self, repo: BareRepo, sha: str, label: str) -> None:
        self.tree = CommitTree.of(repo, sha, label)
        self.reads: list[str] = []

    @property
    def label(self) -> str:
        return self.tree.label

    @property
    def cache_label(self) -> str:
        return self.tree.cache_label

    def listing(self) -> Sequence[tuple[str, str]]:
        return self.tree.listing()

    def read(self, blob_ids: Sequence[str]) -> Mapping[str, bytes]:
        self.reads.extend(blob_ids)
        return self.tree.read(blob_ids)


def _seen(docs: list[Document]) -> list[tuple[object, ...]]:
    return [(d.body, d.location, d.index) for d in docs]


def test_a_commit_reads_as_the_folder_it_checks_out(tmp_path: Path) -> None:
    """Documents, their order (``os.walk``'s: a folder's files, then its folders), locations and problems: the
    same from git objects as from the exported folder. Hidden folders (but ``.environments``), hidden files,
    files other than YAML, ``.fleetflowignore``'d folders and files, and symbolic links are left out alike; a file
    that is not UTF-8, one that does not parse and one with a tab give the same messages."""
    repo, sha = _commit(tmp_path, FILES)
    folder = repo.export(sha, tmp_path / "export")
    on_disk, disk_problems = Problems(), Problems()
    from_folder = read_tree(Tree(folder, "dev"), disk_problems)
    from_git = read_tree(CommitTree.of(repo, sha, "dev"), on_disk)
    assert _seen(from_git) == _seen(from_folder)
    assert [(p.message, p.location) for p in on_disk] == [(p.message, p.location) for p in disk_problems]
    names = [d.body.get("metadata", {}).get("name") for d in from_git]
    assert names == ["upper", "a", "c", "tabbed", "dev", "x", "x-1", "z", "deep", "kept"]
    assert len(disk_problems) == 2  # broken.yaml and latin1.yaml
    # the same paths as the folder's walk gives, whatever order they are listed in
    walked = [p.relative_to(folder).as_posix() for p in yaml_files(Tree(folder, "dev"))]
    spec = pathspec.GitIgnoreSpec.from_lines(FILES[".fleetflowignore"].decode().splitlines())
    assert yaml_paths(sorted(FILES, reverse=True), spec) == walked


def test_a_folder_reads_no_link_and_no_special_file_as_its_commit_reads_none(tmp_path: Path) -> None:
    """The folder a person checks out reads as its commit: a symbolic link is not followed (git holds it as the
    path it points to; ``regular_files`` leaves links out), whether to a file of the tree, out of it, to nowhere or
    to itself, nor is a folder link entered, and a named pipe or a device named ``x.yaml`` is not opened. Until
    2026-11-28 the folder read followed links to files (reading ``/etc/passwd`` as a document), stopped with a
    traceback at a link to nowhere or to itself, ran out of memory on ``/dev/zero`` and hung on a named pipe
    (found by a bad-input hunt)."""
    repo, sha = _commit(tmp_path, FILES)  # with link.yaml -> a.yaml
    folder = repo.export(sha, tmp_path / "export")
    os.symlink("a.yaml", folder / "link.yaml")  # what a checkout of the commit has
    os.symlink("/etc/passwd", folder / "outside.yaml")
    os.symlink("/nonexistent", folder / "b" / "nowhere.yaml")
    os.symlink("self.yaml", folder / "self.yaml")
    os.symlink("/dev/zero", folder / "zero.yaml")
    os.symlink("b", folder / "linked-folder")
    os.mkfifo(folder / "b" / "pipe.yaml")
    from_git_problems, folder_problems = Problems(), Problems()
    from_git = read_tree(CommitTree.of(repo, sha, "dev"), from_git_problems)
    from_folder = read_tree(Tree(folder, "dev"), folder_problems)
    assert _seen(from_folder) == _seen(from_git)
    assert [str(p) for p in folder_problems] == [str(p) for p in from_git_problems]
    assert [p.relative_to(folder).as_posix() for p in yaml_files(Tree(folder, "dev"))] == [
        "B-upper.yaml", "a.yaml", "broken.yaml", "c.yaml", "empty.yaml", "latin1.yaml", "tab.yaml",
        ".environments/dev.yaml", "b/x.yaml", "b/z.yaml", "b/c/deep.yml", "keep/kept.yaml"]


def test_files_the_parse_cache_holds_are_not_read(tmp_path: Path) -> None:
    """The parse cache is asked by blob id: the first read reads every YAML file (and the ignore file), the second
    reads the ignore file alone; a document of a file not read still has its lines and columns: asked for, its
    file is read then, with every other file of the same kinds of documents, in one batch (and no other)."""
    repo, sha = _commit(tmp_path, {k: v for k, v in FILES.items() if k not in ("broken.yaml", "latin1.yaml")},
                        link=False)
    cache = ParseCache(tmp_path / "parsed")
    first = Recorded(repo, sha, "dev")
    docs = read_tree(first, Problems(), cache)
    listed = dict(first.listing())
    wanted = {listed[p] for p in yaml_paths(listed, None) if not p.startswith(("ignored/", "keep/skip"))}
    assert set(first.reads) == wanted | {listed[".fleetflowignore"]}
    second = Recorded(repo, sha, "dev")
    again = read_tree(second, Problems(), cache)
    assert second.reads == [listed[".fleetflowignore"]]
    assert _seen(again) == _seen(docs)
    deep = next(d for d in again if d.body["metadata"]["name"] == "deep")
    assert deep.where("metadata", "name").line == 3
    clusters_only = {"b/c/deep.yml", "b/z.yaml", "c.yaml", "B-upper.yaml", "keep/kept.yaml", "tab.yaml"}
    assert sorted(second.reads[1:]) == sorted(listed[p] for p in clusters_only)
    upper = next(d for d in again if d.body["metadata"]["name"] == "upper")
    assert upper.where("metadata", "name").line == 3  # read in that batch already
    assert len(second.reads) == 1 + len(clusters_only)


def test_loading_a_plane_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Context.plane`` reads both trees from git: no folder is written for them (until 2026-11-28 each run
    exported them to a scratch folder under the temp dir, which at one document a file cost more than the rest
    of what the schedule did with the plane)."""
    fleet = local_fleet(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with fleet.context() as ctx:
        main_sha = ctx.main_tip()
        env_sha = ctx.git.fetch_branch(ctx.cp_url, "dev")
        assert env_sha is not None
        plane = ctx.plane(main_sha, "dev", env_sha)
        assert "dev" in plane.environments and plane.cluster_types
        assert list(scratch.iterdir()) == []


def test_a_big_tree_is_read_from_one_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``SNAPSHOT_SLACK`` files, the parse cache writes down every file's entry in one snapshot of the tree
    (by its label): the next read opens that instead of an entry per file, and a change of a few files opens
    only theirs (the snapshot is written again once more than the slack, or 5%, are found outside it). The
    documents are the same either way."""
    files = {f"clusters/c{i:03}.yaml": f"kind: Cluster\nmetadata:\n  name: c{i}\n".encode() for i in range(200)}
    repo, sha = _commit(tmp_path, files, link=False)
    cache = ParseCache(tmp_path / "parsed")
    asked: list[str] = []
    get_blob = ParseCache.get_blob

    def counted(self: ParseCache, display: str, blob: str, source: Any) -> Any:
        asked.append(display)
        return get_blob(self, display, blob, source)

    monkeypatch.setattr(ParseCache, "get_blob", counted)
    first = read_tree(CommitTree.of(repo, sha, "dev"), Problems(), cache)
    assert len(asked) == 200 and len(first) == 200  # no snapshot yet: every entry asked for (and parsed)
    asked.clear()
    second = read_tree(CommitTree.of(repo, sha, "dev"), Problems(), cache)
    assert asked == [] and _seen(second) == _seen(first)
    assert second[7].where("metadata", "name").line == 3
    work = tmp_path / "work"
    (work / "clusters/c007.yaml").write_text("kind: Cluster\nmetadata:\n  name: c7-renamed\n")
    _git(work, "commit", "-q", "-am", "one file")
    _git(tmp_path / "repo.git", "fetch", "-q", str(work), "+HEAD:refs/heads/next")
    changed = _git(work, "rev-parse", "HEAD")
    asked.clear()
    third = read_tree(CommitTree.of(repo, changed, "dev"), Problems(), cache)
    assert asked == ["dev/clusters/c007.yaml"]
    assert [d.body["metadata"]["name"] for d in third][6:9] == ["c6", "c7-renamed", "c8"]
    other = read_tree(CommitTree.of(repo, changed, "qa"), Problems(), cache)  # another label, its own snapshot
    assert len(asked) == 201 and len(other) == 200


def test_a_big_folder_is_read_from_one_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder's files (``render``, ``validate``, the change side of the pull-request check) are read to know their
    content, but past ``SNAPSHOT_SLACK`` files the parse cache's entries come from one snapshot of the folder: the
    next read opens no entry file, and a changed file opens only its own (or is parsed). Until 2026-11-28 every
    read opened an entry per file: 6,540 opens for the 3,270 files of a control plane kept one document a file at
    100k. The documents are the same either way, and a folder read under another label has its own snapshot."""
    folder = tmp_path / "dev"
    (folder / "clusters").mkdir(parents=True)
    for i in range(200):
        (folder / f"clusters/c{i:03}.yaml").write_text(f"kind: Cluster\nmetadata:\n  name: c{i}\n")
    cache = ParseCache(tmp_path / "parsed")
    asked: list[str] = []
    get_digest = ParseCache.get_digest

    def counted(self: ParseCache, digest: str, source: Any) -> Any:
        asked.append(source.display)
        return get_digest(self, digest, source)

    monkeypatch.setattr(ParseCache, "get_digest", counted)
    first = read_tree(Tree(folder, "dev"), Problems(), cache)
    assert len(asked) == 200 and len(first) == 200  # no snapshot yet: every entry asked for (and parsed)
    asked.clear()
    second = read_tree(Tree(folder, "dev"), Problems(), cache)
    assert asked == [] and _seen(second) == _seen(first)
    assert second[7].where("metadata", "name").line == 3
    (folder / "clusters/c007.yaml").write_text("kind: Cluster\nmetadata:\n  name: c7-renamed\n")
    third = read_tree(Tree(folder, "dev"), Problems(), cache)
    assert asked == ["dev/clusters/c007.yaml"]
    assert [d.body["metadata"]["name"] for d in third][6:9] == ["c6", "c7-renamed", "c8"]
    asked.clear()
    other = read_tree(Tree(folder, "qa"), Problems(), cache)  # another label: its own names, its own snapshot
    assert len(asked) == 200 and len(other) == 200
    assert other[0].location.file == "qa/clusters/c000.yaml"


def test_a_file_name_that_is_not_utf8_is_one_problem_not_a_traceback(tmp_path: Path) -> None:
    """A file name need not be UTF-8 on Linux or in git (git keeps a name's bytes; Python gives the bytes that are not
    UTF-8 as surrogates, PEP 383). Every message, cache key and output names files as text, so such a YAML file is
    one problem at its name, shown escaped, read neither from a folder nor from a commit; the other files are read.
    Until 2026-11-28 the folder's read stopped with a UnicodeEncodeError and the commit's listing with a
    UnicodeDecodeError. A listing of a commit holding one (a GitOps repo someone added it to) keeps its bytes, and
    reading or writing at that path gives the same file back."""
    work = tmp_path / "dev"
    work.mkdir()
    (work / "a.yaml").write_bytes(FILES["a.yaml"])
    bad = os.fsdecode(os.fsencode(work) + b"/caf\xe9.yaml")  # latin-1, not UTF-8
    Path(bad).write_bytes(b"kind: Cluster\nmetadata:\n  name: c\n")
    (work / "out").mkdir()
    Path(os.fsdecode(os.fsencode(work) + b"/out/caf\xe9.txt")).write_bytes(b"foreign\n")  # not YAML: not read
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "files")
    repo = BareRepo(work / ".git")
    sha = _git(work, "rev-parse", "HEAD")
    for tree in (Tree(work, "dev"), CommitTree.of(repo, sha, "dev")):
        problems = Problems()
        docs = read_tree(tree, problems, ParseCache(tmp_path / "parsed"))
        assert [d.name for d in docs] == ["a"]
        found = [(p.message, str(p.location)) for p in problems]
        assert found == [("file name is not UTF-8 text", "dev/caf\\xe9.yaml")]
    name = os.fsdecode(b"caf\xe9.yaml")
    assert name in {e.path for e in repo.ls_tree(sha)}
    assert repo.read_files(sha, [name])[name] == b"kind: Cluster\nmetadata:\n  name: c\n"
    foreign = os.fsdecode(b"out/caf\xe9.txt")
    assert [e.path for e in (repo.listings(sha, ["out"])["out"] or [])] == [foreign]
    again = repo.fast_commit(sha, [TreeEdit(foreign, b"rewritten\n")], "rewrite", ("t", "t@t"), 0)
    assert repo.read_files(again, [foreign])[foreign] == b"rewritten\n"
    assert repo.changed_paths(sha, again) == [foreign]
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "-z", again], cwd=work, capture_output=True,
                            check=True).stdout.split(b"\0")
    assert b"out/caf\xe9.txt" in listed and b"caf\xe9.yaml" in listed  # the same bytes, no second name


def test_an_ignore_file_that_is_not_utf8_is_one_problem_and_nothing_is_read(tmp_path: Path) -> None:
    """``.fleetflowignore`` names the files that are not fleetflow's; one that is not UTF-8 text is one problem at it,
    from a folder and from a commit alike, and no file of that tree is read (without its patterns, files meant to be
    left out would give problems of their own). Until 2026-11-28 both reads stopped with a UnicodeDecodeError."""
    files = {"a.yaml": FILES["a.yaml"], "other-tool/x.yaml": b"not: [fleetflow's\n",
             ".fleetflowignore": "other-tool/\ncaf\u00e9/\n".encode("latin-1")}
    repo, sha = _commit(tmp_path, files, link=False)
    for tree in (Tree(tmp_path / "work", "dev"), CommitTree.of(repo, sha, "dev")):
        problems = Problems()
        assert read_tree(tree, problems, ParseCache(tmp_path / "parsed")) == []
        assert [(p.message, str(p.location)) for p in problems] == [("file is not UTF-8 text", "dev/.fleetflowignore")]
