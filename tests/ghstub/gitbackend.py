"""The stub's git side: one bare repository per GitHub repository, driven by ``git`` plumbing.

Every ref the API reads or writes is the bare repository's own ref, so ``git push``/``git fetch`` through the
``file://`` clone URL and the REST API always agree. Revisions that come from requests are checked to be
plain names before they reach a git command line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ZERO_SHA = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
SAFE_REV = re.compile(r"^[A-Za-z0-9._/@{}^~+-]+$")
FIELD, RECORD = "\x1f", "\x1e"
LOG_FORMAT = FIELD.join(["%H", "%T", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B"]) + RECORD


class GitError(Exception):
    """A git command failed."""


class MergeConflict(GitError):
    """The head cannot be merged into the base without conflicts."""


@dataclass(frozen=True)
class Signature:
    name: str
    email: str
    date: str  # ISO 8601 as git prints it (%aI)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Signature
    committer: Signature
    message: str


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # GitHub's words: added, removed, modified, ...
    additions: int
    deletions: int
    sha: str | None


def git_env(name: str = "GitHub", email: str = "noreply@github.com") -> dict[str, str]:
    """An environment free of the caller's git configuration, with a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME="GitHub",
        GIT_COMMITTER_EMAIL="noreply@github.com",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


def is_safe_rev(rev: str) -> bool:
    return bool(SAFE_REV.match(rev)) and not rev.startswith("-") and ".." not in rev


class BareRepo:
    """A bare git repository on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    # -- plumbing -----------------------------------------------------------------------------------------
    def git(self, *args: str, stdin: str | None = None, check: bool = True, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env or git_env(),
        )
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    @classmethod
    def init(cls, path: Path, default_branch: str) -> BareRepo:
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path)],
            check=True,
            env=git_env(),
        )
        return cls(path).serving_partial_clones()

    @classmethod
    def clone_bare(cls, source: Path, path: Path) -> BareRepo:
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "--quiet", "--bare", "--no-local", "--", str(source), str(path)],
            check=True,
            env=git_env(),
            capture_output=True,
        )
        return cls(path).serving_partial_clones()

    def serving_partial_clones(self) -> BareRepo:
        """As GitHub, which serves partial clones (``git clone --filter=blob:none``; "Get up to speed with partial
        clone and shallow clone", github.blog, 2020-12-21): ``--filter`` fetches and blobs asked for by id."""
        for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
            self.git("config", key, "true")
        return self

    def import_tree(self, directory: Path, branch: str, message: str) -> str:
        """Commit the files of a plain directory as the first commit of ``branch``."""
        with tempfile.TemporaryDirectory() as tmp:
            env = git_env() | {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(directory)}
            self.git("add", "--all", "--force", ".", env=env)
            tree = self.git("write-tree", env=env).strip()
        sha = self.commit_tree(tree, [], message)
        self.update_ref(f"refs/heads/{branch}", sha, ZERO_SHA)
        return sha

    # -- reading ------------------------------------------------------------------------------------------
    def resolve(self, rev: str) -> str | None:
        """The commit a branch name, full ref or (abbreviated) sha names; None when there is none."""
        if not is_safe_rev(rev):
            return None
        if rev.startswith("refs/") or re.fullmatch(r"[0-9a-f]{40}", rev):
            candidates = [rev]
        else:
            candidates = [f"refs/heads/{rev}", f"refs/tags/{rev}", rev]
        for candidate in candidates:
            out = self.git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", check=False).strip()
            if out:
                return out
        return None

    def ref_sha(self, refname: str) -> str | None:
        """The object a full ref name points at (exact match only)."""
        return self.refs(refname).get(refname)

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        """Full ref name → object sha, for refs whose name starts with ``prefix`` (string prefix)."""
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)")
        pairs = (line.split(" ", 1) for line in out.splitlines() if line)
        return {name: sha for sha, name in pairs if name.startswith(prefix)}

    def object_type(self, sha: str) -> str | None:
        if not is_safe_rev(sha):
            return None
        out = self.git("cat-file", "-t", sha, check=False).strip()
        return out or None

    def commits(self, shas: list[str]) -> list[CommitInfo]:
        """Commit details, in the order given."""
        if not shas:
            return []
        out = self.git("log", "--no-walk=unsorted", f"--format={LOG_FORMAT}", *shas)
        infos = {}
        for record in out.split(RECORD):
            fields = record.lstrip("\n").split(FIELD)
            if len(fields) < 10:
                continue
            sha, tree, parents, an, ae, ad, cn, ce, cd, message = fields[:10]
            infos[sha] = CommitInfo(
                sha, tree, tuple(parents.split()), Signature(an, ae, ad), Signature(cn, ce, cd), message
            )
        return [infos[sha] for sha in shas]

    def commit(self, sha: str) -> CommitInfo:
        return self.commits([sha])[0]

    def rev_list(self, include: str, exclude: str | None = None, path: str | None = None) -> list[str]:
        """Commits reachable from ``include`` and not from ``exclude``, newest first."""
        args = ["rev-list", include] + ([f"^{exclude}"] if exclude else []) + ["--"] + ([path] if path else [])
        return self.git(*args).split()

    def merge_base(self, a: str, b: str) -> str | None:
        return self.git("merge-base", a, b, check=False).strip() or None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = subprocess.run(
            ["git", "-C", str(self.path), "merge-base", "--is-ancestor", ancestor, descendant],
            env=git_env(),
            capture_output=True,
        )
        return proc.returncode == 0

    def diff(self, base: str | None, head: str) -> list[FileChange]:
        """Files changed from ``base`` (None: the empty tree) to ``head``, as GitHub lists them."""
        old = base or EMPTY_TREE
        statuses = self.git("diff", "--no-renames", "--name-status", "-z", old, head).split("\0")
        numstat = self.git("diff", "--no-renames", "--numstat", "-z", old, head).split("\0")
        counts: dict[str, tuple[int, int]] = {}
        for entry in numstat:
            if entry:
                plus, minus, name = entry.split("\t", 2)  # "-" for binary files
                counts[name] = (int(plus) if plus.isdigit() else 0, int(minus) if minus.isdigit() else 0)
        words = {"A": "added", "D": "removed", "M": "modified", "T": "changed"}
        blobs = self.blobs(head)
        changes = []
        for code, name in zip(statuses[0::2], statuses[1::2], strict=False):
            if name:
                added, deleted = counts.get(name, (0, 0))
                changes.append(FileChange(name, words.get(code[:1], "modified"), added, deleted, blobs.get(name)))
        return changes

    def blobs(self, commit: str) -> dict[str, str]:
        out = self.git("ls-tree", "-r", "-z", commit)
        return {line.split("\t", 1)[1]: line.split()[2] for line in out.split("\0") if line}

    # -- writing ------------------------------------------------------------------------------------------
    def update_ref(self, refname: str, new: str, old: str | None = None) -> None:
        """Point ``refname`` at ``new``; with ``old``, only if it still points there (ZERO_SHA: absent)."""
        self.git("update-ref", "--no-deref", refname, new, *([old] if old else []))

    def delete_ref(self, refname: str, old: str | None = None) -> None:
        self.git("update-ref", "--no-deref", "-d", refname, *([old] if old else []))

    def write_commit(
        self,
        parent: str | None,
        files: Mapping[str, str | bytes | None],
        message: str,
        author: tuple[str, str] | None = None,
    ) -> str:
        """A commit on top of ``parent`` with ``files`` written (None deletes); no worktree involved."""
        with tempfile.TemporaryDirectory() as tmp:
            env = git_env() | {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if parent:
                self.git("read-tree", parent, env=env)
            for path, content in files.items():
                if content is None:
                    self.git("update-index", "--force-remove", "--", path, env=env)
                    continue
                data = content.encode() if isinstance(content, str) else content
                blob = (
                    subprocess.run(
                        ["git", "-C", str(self.path), "hash-object", "-w", "--stdin"],
                        input=data,
                        capture_output=True,
                        check=True,
                        env=env,
                    )
                    .stdout.decode()
                    .strip()
                )
                self.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
            tree = self.git("write-tree", env=env).strip()
        return self.commit_tree(tree, [parent] if parent else [], message, author)

    def head_branch(self) -> str | None:
        out = self.git("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
        return out or None

    def commit_tree(
        self, tree: str, parents: list[str], message: str, author: tuple[str, str] | None = None,
        when: datetime | None = None,
    ) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        env = git_env(*author) if author else git_env()
        if when is not None:  # the stub's clock, so merge commits carry the time tests simulate
            stamp = f"{int(when.timestamp())} +0000"
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        return self.git(*args, "-F", "-", stdin=message, env=env).strip()

    def merge_tree(self, base: str, head: str) -> str:
        """The tree of merging ``head`` into ``base``; raises MergeConflict."""
        proc = subprocess.run(
            [
                "git",
                "-C",
                str(self.path),
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                base,
                head,
            ],
            capture_output=True,
            text=True,
            env=git_env(),
        )
        if proc.returncode == 1:
            raise MergeConflict(proc.stdout.strip())
        if proc.returncode != 0:
            raise GitError(f"git merge-tree: {proc.stderr.strip()}")
        return proc.stdout.split()[0]

    def mergeable(self, base: str, head: str) -> bool:
        try:
            self.merge_tree(base, head)
        except MergeConflict:
            return False
        return True

    def rebase(self, base: str, head: str, author: tuple[str, str]) -> str:
        """Replay the commits of ``base..head`` on ``base`` (in a throw-away worktree); returns the new tip."""
        commits = self.git("rev-list", "--reverse", "--no-merges", head, f"^{base}").split()
        with tempfile.TemporaryDirectory() as tmp:
            worktree = Path(tmp) / "wt"
            self.git("worktree", "add", "--detach", "--quiet", str(worktree), base)
            env = git_env(*author)
            try:
                for sha in commits:
                    proc = subprocess.run(
                        [
                            "git",
                            "-C",
                            str(worktree),
                            "cherry-pick",
                            "--allow-empty",
                            "--keep-redundant-commits",
                            sha,
                        ],
                        capture_output=True,
                        text=True,
                        env=env,
                    )
                    if proc.returncode != 0:
                        raise MergeConflict(proc.stdout + proc.stderr)
                tip = subprocess.run(
                    ["git", "-C", str(worktree), "rev-parse", "HEAD"],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                ).stdout.strip()
            finally:
                shutil.rmtree(worktree, ignore_errors=True)
                self.git("worktree", "prune")
        return tip
