"""Storage of the local forge: JSON files in the tree of one ref of a git repository, and merges done with git.

Pull requests, commit statuses and dispatched events live under ``refs/fleetflow/forge`` in the repository itself,
so every clone sees them. A :class:`Mirror` is a bare copy of one repository in the cache. It fetches that ref (and
the branches), builds a new commit with plumbing only (``hash-object -w``, ``mktree``, ``commit-tree``: no index, no
work tree) and pushes it with ``--force-with-lease`` against the commit it read. When another writer got there first
the push is rejected, and the edit is applied again to the fresh state (a bounded number of times).

Only fleetflow's own values reach a git command line as options: commit ids, ref names built from validated branch
names, and paths of its own folders. User text (titles, bodies, descriptions) travels inside blobs and messages.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar

from fleetflow.errors import ForgeError, ForgeRequest, GitError

STORE_REF = "refs/fleetflow/forge"
_MIRROR_PREFIX = "refs/mirror/"
_MIRROR_STORE = "refs/mirror/fleetflow/forge"
_MIRROR_HEADS = "refs/mirror/heads/"
_IDENTITY = ("fleetflow local forge", "local-forge@fleetflow.invalid")
# Rejections that mean "someone else wrote first" (or is writing: the remote's ref lock was taken): fetch again and
# re-apply. Anything else is final.
_RETRYABLE = ("stale info", "fetch first", "non-fast-forward", "atomic push failed", "failed to update ref",
              "failed to lock", "cannot lock ref")
# Variables that would point git at another repository than the one we name (e.g. when run from a git hook).
_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX")

R = TypeVar("R")


class MergeConflict(Exception):
    """A merge that git cannot do on its own; carries the conflicting paths."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        super().__init__(", ".join(self.paths) or "conflict")


@dataclass
class Edit(Generic[R]):
    """What one write changes: files of the store (None deletes), other refs (ref -> (new, expected old; "" =
    must not exist)) pushed atomically with it, and the value handed back to the caller."""

    result: R
    files: Mapping[str, bytes | None] = field(default_factory=dict)
    refs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    message: str = "update"


def dump_json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C")
    env.update(extra or {})
    return env


def run_git(args: Sequence[str], *, cwd: Path | None = None, stdin: bytes | None = None,
            env: Mapping[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run git; on failure (``check``) raise :class:`GitError` with git's own reason."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, env=git_env(env), check=False)
    if check and proc.returncode != 0:
        raise GitError(f"git {args[0] if args[0][0] != '-' else args[1]} failed: {git_reason(proc.stderr)}")
    return proc


def git_reason(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or ["git failed"])[0]


@cache
def has_merge_tree() -> bool:
    """``git merge-tree --write-tree`` exists from git 2.38 on."""
    found = re.search(rb"(\d+)\.(\d+)", run_git(["version"]).stdout)
    return found is not None and (int(found[1]), int(found[2])) >= (2, 38)


@dataclass(frozen=True)
class Snapshot:
    """The store at one commit (``None``: not created yet), and the branch tips of the repo when fetched."""

    mirror: Mirror
    commit: str | None
    entries: Mapping[str, tuple[str, str, str]]  # path -> (mode, type, sha), trees included
    heads: Mapping[str, str]

    def names(self, folder: str) -> list[str]:
        """File names directly in ``folder``."""
        prefix = folder.rstrip("/") + "/"
        return [p[len(prefix):] for p, (_, kind, _) in self.entries.items()
                if kind == "blob" and p.startswith(prefix) and "/" not in p[len(prefix):]]

    def read(self, path: str) -> bytes | None:
        entry = self.entries.get(path)
        return None if entry is None or entry[1] != "blob" else self.mirror.blobs([entry[2]])[entry[2]]

    def read_json(self, path: str) -> Any:
        data = self.read(path)
        return None if data is None else json.loads(data)

    def read_all_json(self, folder: str) -> list[Any]:
        paths = [f"{folder}/{name}" for name in self.names(folder) if name.endswith(".json")]
        shas = [self.entries[p][2] for p in paths]
        found = self.mirror.blobs(shas)
        return [json.loads(found[sha]) for sha in shas]


class Mirror:
    """A bare mirror of the repository at ``url`` in ``folder``: the store ref and the branches, read and written."""

    def __init__(self, url: str, folder: Path, clock: Callable[[], datetime], attempts: int = 10) -> None:
        self.url = url
        self.folder = folder = folder.absolute()
        self.clock = clock
        self.attempts = attempts
        self._trees: dict[str, dict[str, tuple[str, str, str]]] = {}
        self._blobs: dict[str, bytes] = {}
        if not (folder / "HEAD").exists():  # made aside and renamed: runs sharing the cache may race here
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".new-", dir=folder.parent)
            try:
                run_git(["init", "--quiet", "--bare", tmp])
                os.rename(tmp, folder)
            except OSError:
                if not (folder / "HEAD").exists():
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def git(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return run_git([f"--git-dir={self.folder}", *args], stdin=stdin, env=env, check=check)

    def out(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> str:
        return self.git(*args, stdin=stdin, env=env).stdout.decode().strip()

    # -- reading ------------------------------------------------------------------------------------------

    def fetch(self, heads: bool = False) -> Snapshot:
        """Fetch the store ref (and all branches when ``heads``) and return the store as fetched."""
        specs = ["+refs/fleetflow/*:refs/mirror/fleetflow/*"]
        if heads:
            specs.append(f"+refs/heads/*:{_MIRROR_HEADS}*")
        for attempt in range(3):  # two runs sharing a cache may race for the mirror's ref locks
            proc = self.git("fetch", "--quiet", "--no-tags", "--prune", "--", self.url, *specs, check=False)
            if proc.returncode == 0:
                break
            if b"lock" not in proc.stderr or attempt == 2:
                raise ForgeError(f"cannot fetch from {self.url}: {git_reason(proc.stderr)}",
                                 ForgeRequest("git fetch", self.url))
            time.sleep(0.05 * (attempt + 1))
        refs = self.out("for-each-ref", "--format=%(objectname) %(refname)", _MIRROR_PREFIX)
        commit, tips = None, {}
        for line in refs.splitlines():
            sha, ref = line.split(" ", 1)
            if ref == _MIRROR_STORE:
                commit = sha
            elif heads and ref.startswith(_MIRROR_HEADS):
                tips[ref[len(_MIRROR_HEADS):]] = sha
        return Snapshot(self, commit, self._entries(commit), tips)

    def _entries(self, commit: str | None) -> dict[str, tuple[str, str, str]]:
        if commit is None:
            return {}
        if commit not in self._trees:
            listing: dict[str, tuple[str, str, str]] = {}
            for item in self.git("ls-tree", "-r", "-t", "-z", commit).stdout.split(b"\0"):
                if item:
                    info, path = item.decode().split("\t", 1)
                    mode, kind, sha = info.split(" ")
                    listing[path] = (mode, kind, sha)
            self._trees[commit] = listing
        return self._trees[commit]

    def blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Contents of blobs (cached: a blob id names its content)."""
        missing = sorted({s for s in shas if s not in self._blobs})
        if missing:
            out = self.git("cat-file", "--batch", stdin="".join(f"{s}\n" for s in missing).encode()).stdout
            pos = 0
            for sha in missing:
                end = out.index(b"\n", pos)
                size = int(out[pos:end].split(b" ")[2])
                self._blobs[sha] = out[end + 1:end + 1 + size]
                pos = end + 1 + size + 1
        return {s: self._blobs[s] for s in shas}

    def has_commit(self, sha: str) -> bool:
        return self.git("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    # -- writing ------------------------------------------------------------------------------------------

    def update(self, change: Callable[[Snapshot], Edit[R]], heads: bool = False) -> tuple[R, bool]:
        """Apply ``change`` to the latest store and push the result with compare-and-swap; on a lost race, fetch
        and apply again. Returns the edit's result and whether anything was written."""
        for attempt in range(self.attempts):
            snap = self.fetch(heads)
            edit = change(snap)
            blobs = {path: None if data is None else self._blob(data) for path, data in edit.files.items()}
            blobs = {p: s for p, s in blobs.items() if (snap.entries[p][2] if p in snap.entries else None) != s}
            if not blobs and not edit.refs:
                return edit.result, False
            updates = dict(edit.refs)
            if blobs:
                tree = self._tree(snap.entries, blobs)
                new = self.commit(tree, [snap.commit] if snap.commit else [], f"fleetflow forge: {edit.message}")
                updates[STORE_REF] = (new, snap.commit or "")
            if self._push(updates):
                return edit.result, True
            if attempt + 1 < self.attempts:  # exponential backoff with full jitter
                time.sleep(random.uniform(0, min(1.0, 0.02 * 2**attempt)))
        raise ForgeError(f"gave up writing {STORE_REF} of {self.url} after {self.attempts} attempts: other writers "
                         "kept changing it", ForgeRequest("git push", self.url))

    def _blob(self, data: bytes) -> str:
        sha = self.out("hash-object", "-w", "--stdin", stdin=data)
        self._blobs[sha] = data
        return sha

    def _tree(self, entries: Mapping[str, tuple[str, str, str]], changes: Mapping[str, str | None]) -> str:
        """Write the tree of ``entries`` with ``changes`` (path -> blob sha, None deletes); only the folders on the
        way to a change are rebuilt (one ``mktree`` each), the others keep their ids."""
        children: dict[str, dict[str, tuple[str, str, str]]] = defaultdict(dict)
        for path, entry in entries.items():
            parent, _, name = path.rpartition("/")
            children[parent][name] = entry
        dirty = {""}
        for path, sha in changes.items():
            parent, _, name = path.rpartition("/")
            if sha is None:
                children[parent].pop(name, None)
            else:
                children[parent][name] = ("100644", "blob", sha)
            while parent:
                dirty.add(parent)
                grand, _, base = parent.rpartition("/")
                children[grand].setdefault(base, ("040000", "tree", ""))
                parent = grand

        def build(folder: str) -> str:
            lines = []
            for name, (mode, kind, sha) in sorted(children[folder].items()):
                full = f"{folder}/{name}" if folder else name
                if kind == "tree" and full in dirty:
                    if not children[full]:
                        continue
                    sha = build(full)
                lines.append(f"{mode} {kind} {sha}\t{name}\n")
            return self.out("mktree", stdin="".join(lines).encode())

        return build("")

    def commit_env(self) -> dict[str, str]:
        now = self.clock()
        stamp = f"{int((now if now.tzinfo else now.replace(tzinfo=UTC)).timestamp())} +0000"
        name, email = _IDENTITY
        return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": stamp,
                "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp}

    def commit(self, tree: str, parents: Sequence[str], message: str) -> str:
        args = ["commit-tree", "--no-gpg-sign", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.out(*args, stdin=message.encode(), env=self.commit_env())

    def _push(self, updates: Mapping[str, tuple[str, str]]) -> bool:
        """Push ``ref -> (new, expected old)`` all or nothing. False when a writer got there first."""
        leases = [f"--force-with-lease={ref}:{old}" for ref, (_, old) in updates.items()]
        specs = [f"{new}:{ref}" for ref, (new, _) in updates.items()]
        atomic = ["--atomic"] if len(updates) > 1 else []
        proc = self.git("push", "--porcelain", *atomic, *leases, "--", self.url, *specs, check=False)
        if proc.returncode == 0:
            return True
        reasons = [line.split("\t")[-1] for line in proc.stdout.decode().splitlines() if line.startswith("!\t")]
        if reasons and all(any(r in reason for r in _RETRYABLE) for reason in reasons):
            return False
        final = [r for r in reasons if not any(k in r for k in _RETRYABLE)]
        raise ForgeError(f"cannot push to {self.url}: {final[0] if final else git_reason(proc.stderr)}",
                         ForgeRequest("git push", self.url))

    # -- merging ------------------------------------------------------------------------------------------

    def merge(self, base: str, head: str, message: str) -> str:
        """A merge commit of ``head`` into ``base`` (always a new commit, like ``--no-ff``); MergeConflict when git
        cannot merge on its own. Nothing is pushed."""
        tree = self._merge_tree(base, head) if has_merge_tree() else self._merge_in_worktree(base, head)
        return self.commit(tree, [base, head], message)

    def _merge_tree(self, base: str, head: str) -> str:
        proc = self.git("merge-tree", "--write-tree", "--name-only", "--no-messages", base, head, check=False)
        lines = proc.stdout.decode().splitlines()
        if proc.returncode == 0:
            return lines[0]
        if proc.returncode == 1:
            raise MergeConflict([line for line in lines[1:] if line])
        raise GitError(f"git merge-tree failed: {git_reason(proc.stderr)}")

    def _merge_in_worktree(self, base: str, head: str) -> str:
        """For git < 2.38: merge in a throw-away work tree of the mirror."""
        with tempfile.TemporaryDirectory(prefix="fleetflow-merge-") as tmp:
            work = Path(tmp) / "work"
            self.git("worktree", "add", "--quiet", "--detach", str(work), base)
            try:
                args = ["merge", "--quiet", "--no-ff", "--no-commit", "--no-edit", head]
                proc = run_git(args, cwd=work, env=self.commit_env(), check=False)
                if proc.returncode != 0:
                    unmerged = run_git(["diff", "--name-only", "--diff-filter=U"], cwd=work, check=False)
                    raise MergeConflict(unmerged.stdout.decode().split() or [git_reason(proc.stdout + proc.stderr)])
                return run_git(["write-tree"], cwd=work).stdout.decode().strip()
            finally:
                self.git("worktree", "remove", "--force", str(work), check=False)
                self.git("worktree", "prune", check=False)
