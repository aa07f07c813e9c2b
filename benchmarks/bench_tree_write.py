"""How to write the GitOps commit as git objects: the candidates measured on a synthetic GitOps tree.

The tree has the shape ``fleetflow render`` gives: ``T`` cluster-type folders × ``W`` assignment folders × three
files (~400 bytes each), a ``_status/`` folder per cluster type and a state file (~196 bytes per assignment).
Three edits are applied on top of a commit of it, as schedule/promote do:

* ``no-change``: every ``_status/`` folder rewritten with the same bytes (the reporters are rendered each run);
* ``1%``: 1% of the assignment folders replaced (their files change) and the state file rewritten;
* ``full``: every file written onto an empty parent (a first promote).

Candidates:

* ``fast-import``: one ``git fast-import`` stream (delete + inline blobs), see ``BareRepo.fast_commit``;
* ``fast-import/glibc``: the same, with glibc's own trim threshold (``fast_commit`` before it raised it for
  fast-import: ``fleetflow.forge.git.FAST_IMPORT_TRIM_THRESHOLD``): the memory fast-import frees after each object is
  given back to the system and asked for again for the next;
* ``index``: ``read-tree`` of the parent into a temporary index, blobs with ``hash-object -w --stdin-paths``
  from a scratch folder, ``update-index --index-info``, ``write-tree`` (git's cache-tree reuses unchanged subtrees);
* ``pygit2``: libgit2 in process (``TreeBuilder`` along changed paths), only when pygit2 is installed.

    python benchmarks/bench_tree_write.py --workloads 100 --cluster-types 1000

Prints seconds per candidate and edit (one run each: the disk of a shared machine is noisy, run it twice). Each
candidate runs on its own copy of the base repository, so that each writes its objects (git skips an object the
repository already holds, and an earlier candidate would otherwise have written them for the later ones).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

from fleetflow.forge import git as forge_git
from fleetflow.forge.git import BareRepo, TreeEdit, run_git

IDENTITY = ("bench", "bench@fleetflow.invalid")
WHEN = 1_700_000_000


def files_of(workloads: int, cluster_types: int, version: int = 0,
             only: set[str] | None = None) -> Iterator[tuple[str, bytes]]:
    for t in range(cluster_types):
        for w in range(workloads):
            aid = f"ct-{t:04d}/wl-{w:03d}-dev"
            if only is not None and aid not in only:
                continue
            for name in ("reconciler.yaml", "namespace.yaml", "platform-config.yaml"):
                yield f"{aid}/{name}", (f"# {aid} {name} v{version}\n" + "x: 1\n" * 60).encode()


def status_files(cluster_types: int) -> Iterator[tuple[str, bytes]]:
    for t in range(cluster_types):
        yield f"ct-{t:04d}/_status/reporter.yaml", f"kind: Reporter # ct-{t:04d}\n".encode()


def state(workloads: int, cluster_types: int, version: int) -> bytes:
    lines = [f'    "ct-{t:04d}/wl-{w:03d}-dev": {{"content": "{version:032x}", "files": [...], "input": "x"}}'
             for t in range(cluster_types) for w in range(workloads)]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode()


def edits_for(case: str, workloads: int, cluster_types: int, changed: set[str]) -> list[TreeEdit]:
    edits: list[TreeEdit] = []
    if case == "full":
        edits += [TreeEdit(p, d) for p, d in files_of(workloads, cluster_types)]
    elif case == "1%":
        for aid in sorted(changed):
            edits.append(TreeEdit(aid))
        edits += [TreeEdit(p, d) for p, d in files_of(workloads, cluster_types, 1, changed)]
    for t in range(cluster_types):
        edits.append(TreeEdit(f"ct-{t:04d}/_status"))
    edits += [TreeEdit(p, d) for p, d in status_files(cluster_types)]
    if case != "no-change":
        edits.append(TreeEdit(".fleetflow/state.json", state(workloads, cluster_types, 1)))
    return edits


def with_fast_import(repo: BareRepo, parent: str | None, edits: list[TreeEdit]) -> str:
    return repo.tree_of(repo.fast_commit(parent, edits, "bench", IDENTITY, WHEN))


def glibc_trim_threshold() -> contextlib.AbstractContextManager[object]:
    """Within it, ``fast_commit`` starts fast-import with no trim threshold set: glibc's default, adjusted as the
    process goes (what fast-import ran with before ``fast_import_env``). Refuse to measure it with
    ``MALLOC_TRIM_THRESHOLD_`` set in the environment: fast-import would inherit it (:func:`refuse_a_set_threshold`)."""
    return mock.patch.object(forge_git, "fast_import_env", dict)


def refuse_a_set_threshold(parser: argparse.ArgumentParser) -> None:
    """A usage error when ``MALLOC_TRIM_THRESHOLD_`` is set: both sides of a comparison with
    :func:`glibc_trim_threshold` would run with it."""
    if "MALLOC_TRIM_THRESHOLD_" in os.environ:
        parser.error("unset MALLOC_TRIM_THRESHOLD_ first: the comparison measures glibc's own threshold")


def with_fast_import_glibc_default(repo: BareRepo, parent: str | None, edits: list[TreeEdit]) -> str:
    with glibc_trim_threshold():
        return with_fast_import(repo, parent, edits)


def with_index(repo: BareRepo, parent: str | None, edits: list[TreeEdit]) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent is not None:
            run_git(["read-tree", parent], git_dir=repo.folder, env=env)
        deleted = [e.path for e in edits if e.data is None]
        lines: list[str] = []
        if deleted and parent is not None:
            listed = run_git(["ls-files", "-z", "--", *deleted], git_dir=repo.folder, env=env).stdout
            lines += [f"0 {'0' * 40}\t{p.decode()}" for p in listed.split(b"\0") if p]
        writes = [e for e in edits if e.data is not None]
        scratch = Path(tmp) / "blobs"
        scratch.mkdir()
        paths = []
        for i, e in enumerate(writes):
            f = scratch / str(i)
            f.write_bytes(e.data or b"")
            paths.append(str(f))
        shas = run_git(["hash-object", "-w", "--no-filters", "--stdin-paths"], git_dir=repo.folder,
                       stdin="\n".join(paths).encode()).stdout.decode().split()
        lines += [f"100644 {sha}\t{e.path}" for sha, e in zip(shas, writes, strict=True)]
        run_git(["update-index", "--index-info"], git_dir=repo.folder, env=env, stdin="\n".join(lines).encode())
        return run_git(["write-tree"], git_dir=repo.folder, env=env).stdout.decode().strip()


def with_pygit2(repo: BareRepo, parent: str | None, edits: list[TreeEdit]) -> str:
    import pygit2

    r = pygit2.Repository(str(repo.folder))
    base = r[parent].peel(pygit2.Tree) if parent else None
    changes: dict[str, bytes | None] = {}
    for e in edits:
        if e.data is None:
            for key in [k for k in changes if k == e.path or k.startswith(e.path + "/")]:
                del changes[key]
            changes[e.path] = None
        else:
            changes[e.path] = e.data

    def build(tree: object, prefix: str, items: dict[str, bytes | None]) -> object:
        tb = r.TreeBuilder(tree) if tree is not None else r.TreeBuilder()
        sub: dict[str, dict[str, bytes | None]] = {}
        for path, data in items.items():
            head, _, rest = path.partition("/")
            if rest:
                sub.setdefault(head, {})[rest] = data
            elif data is None:
                if tb.get(head) is not None:
                    tb.remove(head)
            else:
                tb.insert(head, r.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
        for head, items_below in sub.items():
            old = tb.get(head)
            old_tree = r[old.id] if old is not None and old.type_str == "tree" else None
            tid = build(old_tree, f"{prefix}{head}/", items_below)
            if len(r[tid]) == 0:
                if tb.get(head) is not None:
                    tb.remove(head)
            else:
                tb.insert(head, tid, pygit2.GIT_FILEMODE_TREE)
        return tb.write()

    return str(build(base, "", changes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cluster-types", type=int, default=100)
    args = parser.parse_args()
    refuse_a_set_threshold(parser)
    w, t = args.workloads, args.cluster_types
    candidates: dict[str, Callable[[BareRepo, str | None, list[TreeEdit]], str]] = {
        "fast-import": with_fast_import, "fast-import/glibc": with_fast_import_glibc_default, "index": with_index}
    try:
        import pygit2  # noqa: F401

        candidates["pygit2"] = with_pygit2
    except ImportError:
        pass
    rng = random.Random(1)
    every = [f"ct-{i:04d}/wl-{j:03d}-dev" for i in range(t) for j in range(w)]
    changed = set(rng.sample(every, max(1, len(every) // 100)))
    with tempfile.TemporaryDirectory(prefix="bench-tree-", dir=os.environ.get("BENCH_DIR")) as tmp:
        repo = BareRepo(Path(tmp) / "repo.git")
        base_edits = [TreeEdit(p, d) for p, d in files_of(w, t)] + [TreeEdit(p, d) for p, d in status_files(t)]
        base_edits.append(TreeEdit(".fleetflow/state.json", state(w, t, 0)))
        base = repo.fast_commit(None, base_edits, "base", IDENTITY, WHEN)
        repo.git("update-ref", "refs/heads/base", base)
        subprocess.run(["git", f"--git-dir={repo.folder}", "repack", "-adq"], check=True)
        print(f"{w * t} assignments, {3 * w * t} files; seconds per candidate (one run each)")
        for case in ("no-change", "1%", "full"):
            edits = edits_for(case, w, t, changed)
            parent = None if case == "full" else base
            trees = {}
            for name, func in candidates.items():
                folder = Path(tmp) / f"{case}-{name.replace('/', '-')}.git"  # each candidate writes its
                if parent is not None:  # objects anew, on the base alone (full: on an empty repository)
                    shutil.copytree(repo.folder, folder)
                copy = BareRepo(folder)
                start = time.perf_counter()
                trees[name] = func(copy, parent, edits)
                print(f"  {case:>9}  {name:<17} {time.perf_counter() - start:7.2f} s")
            if len(set(trees.values())) != 1:
                print(f"  !! trees differ: {trees}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
