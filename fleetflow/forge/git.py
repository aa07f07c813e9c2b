"""Git at the edge of promotion: mirrors, reading files at commits, making commits, pushing with a lease.

Every repo is mirrored (bare) into a cache folder and fetched by explicit refspecs. Commits are made with git
plumbing from a plain directory (no worktree state to clean up), with a fixed identity and dates derived from
the inputs, so the same inputs give the same commit sha and a re-run pushes nothing new. Pushes use
``--force-with-lease`` against the sha we read: a concurrent run's push makes ours fail (``PushRejected``) instead
of overwriting it; callers re-read and retry. Credentials in URLs are never printed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import git

from fleetflow.errors import GitError

SAFE_REF = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]+$")
FLEETFLOW_NAME = "fleetflow"
FLEETFLOW_EMAIL = "fleetflow@users.noreply.github.com"


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree


class PushRejected(GitError):
    """The remote branch moved since we read it (a concurrent run pushed first)."""


def check_ref(name: str) -> str:
    if not SAFE_REF.match(name) or name.endswith(("/", ".lock")):
        raise GitError(f"unsafe branch name {name!r}: use letters, digits, '.', '_', '-' and '/'")
    return name


def _scrub(text: str) -> str:
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """``https://user:token@host/x`` → (``https://host/x``, env that makes git send the credentials as an HTTP
    header). Keeps tokens off git's command line (process lists) and out of cache keys (tokens rotate)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, {}
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return clean, {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": f"http.{parts.scheme}://{host}/.extraheader",
        f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {token}",
    }


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    committed: int  # committer time, seconds since the epoch
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


@dataclass
class GitRepos:
    """Bare mirrors of the repos fleetflow works on, in ``cache_dir``."""

    cache_dir: Path
    name: str = FLEETFLOW_NAME
    email: str = FLEETFLOW_EMAIL
    _repos: dict[str, git.Repo] = field(default_factory=dict)

    def mirror(self, url: str) -> git.Repo:
        url = split_credentials(url)[0]
        if url in self._repos:
            return self._repos[url]
        folder = self.cache_dir / hashlib.sha256(url.encode()).hexdigest()[:24]
        if (folder / "HEAD").exists():
            repo = git.Repo(folder)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.init(folder, bare=True)
        self._repos[url] = repo
        return repo

    def _git(self, url: str, *args: str) -> str:
        """Run git in the mirror of ``url``; the literal ``url`` among ``args`` is replaced by its clean form and
        its credentials travel in the environment."""
        clean, auth = split_credentials(url)
        argv = ["git", *(clean if a == url else a for a in args)]
        try:
            return str(self.mirror(url).git.execute(argv, env={**os.environ, **auth} if auth else None))
        except git.GitCommandError as exc:
            stderr = _scrub((exc.stderr or "").strip().removeprefix("stderr:").strip().strip("'"))
            stdout = _scrub((exc.stdout or "").strip().removeprefix("stdout:").strip().strip("'"))
            detail = " ".join(t for t in (stderr, stdout) if t) or str(exc.status)
            raise GitError(f"git {args[0]} failed for {_scrub(clean)}: {detail}") from None

    def fetch(self, url: str, branches: Sequence[str]) -> dict[str, str | None]:
        """Fetch ``branches``; returns branch -> sha (None when the branch does not exist)."""
        for b in branches:
            check_ref(b)
        listing = self._git(url, "ls-remote", "--heads", "--", url)
        remote: dict[str, str] = {}
        for line in listing.splitlines():
            sha, _, ref = line.partition("\t")
            remote[ref.removeprefix("refs/heads/")] = sha
        wanted = [b for b in branches if b in remote]
        if wanted:
            specs = [f"+refs/heads/{b}:refs/mirror/{b}" for b in wanted]
            self._git(url, "fetch", "--quiet", "--no-tags", "--", url, *specs)
        return {b: remote.get(b) for b in branches}

    def fetch_branch(self, url: str, branch: str) -> str | None:
        return self.fetch(url, [branch])[branch]

    def resolve(self, url: str, rev: str) -> str | None:
        """Full sha of ``rev`` (a sha or an abbreviation) in the mirror, or None."""
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", rev):
            return None
        try:
            return str(self.mirror(url).git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}"))
        except git.GitCommandError:
            return None

    def is_ancestor(self, url: str, older: str, newer: str) -> bool:
        try:
            self.mirror(url).git.merge_base("--is-ancestor", older, newer)
            return True
        except git.GitCommandError:
            return False

    def read_file(self, url: str, sha: str, path: str) -> str | None:
        try:
            clean = "/".join(part for part in path.split("/") if part not in ("", "."))
            return str(self.mirror(url).git.show(f"{sha}:{clean}"))
        except git.GitCommandError:
            return None

    def commit_time(self, url: str, sha: str) -> int:
        return int(self.mirror(url).git.show("-s", "--format=%ct", sha))

    def log(self, url: str, sha: str, path: str | None = None, limit: int = 200) -> list[str]:
        args = ["--format=%H", f"--max-count={limit}", sha]
        if path:
            args += ["--", path]
        return [line for line in str(self.mirror(url).git.log(*args)).splitlines() if line]

    def commits(self, url: str, revs: Sequence[str], *, limit: int | None = None, first_parent: bool = False,
                no_walk: bool = False) -> list[CommitInfo]:
        """One ``git log`` over ``revs`` (newest first): sha, author, committer time and message of each commit.
        ``no_walk``: exactly ``revs``, not their history."""
        if not revs:
            return []
        args = ["--format=%H%x00%an%x00%ct%x00%B%x1e"]
        if limit is not None:
            args.append(f"--max-count={limit}")
        if first_parent:
            args.append("--first-parent")
        if no_walk:
            args += ["--no-walk=unsorted", "--ignore-missing"]
        out = str(self.mirror(url).git.log(*args, *revs, "--"))
        found: list[CommitInfo] = []
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x00")
            if len(fields) == 4:
                found.append(CommitInfo(fields[0], fields[1], int(fields[2]), fields[3].strip()))
        return found

    def export(self, url: str, sha: str, dest: Path) -> Path:
        """Write the tree of ``sha`` into ``dest`` (created)."""
        dest.mkdir(parents=True, exist_ok=True)
        if str(self.mirror(url).git.rev_parse(f"{sha}^{{tree}}")) == EMPTY_TREE:
            return dest  # git archive of an empty tree is no tar file tarfile reads (GitHub's "Initial commit")
        data = self.mirror(url).git.archive("--format=tar", sha, stdout_as_string=False)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
        return dest

    @contextmanager
    def checkout(self, url: str, sha: str | None) -> Iterator[Path]:
        """A temporary directory holding the tree of ``sha`` (empty when None)."""
        with tempfile.TemporaryDirectory(prefix="fleetflow-") as tmp:
            work = Path(tmp) / "tree"
            if sha is None:
                work.mkdir()
            else:
                self.export(url, sha, work)
            yield work

    def commit_directory(self, url: str, directory: Path, parent: str | None, message: str,
                         when: int) -> str | None:
        """Commit the content of ``directory`` on top of ``parent``. None when the tree equals the parent's."""
        repo = self.mirror(url)
        with tempfile.TemporaryDirectory(prefix="fleetflow-index-") as tmp:
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(directory)}
            repo.git.execute(["git", "--work-tree", str(directory), "add", "-A", "--", "."], env=env)
            tree = str(repo.git.execute(["git", "write-tree"], env=env)).strip()
        if parent is not None and str(repo.git.rev_parse(f"{parent}^{{tree}}")) == tree:
            return None
        return self.commit_tree(url, tree, [parent] if parent else [], message, when)

    def commit_tree(self, url: str, tree: str, parents: list[str], message: str, when: int) -> str:
        stamp = f"{when} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": self.name, "GIT_AUTHOR_EMAIL": self.email, "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": self.name, "GIT_COMMITTER_EMAIL": self.email, "GIT_COMMITTER_DATE": stamp,
        }
        args = ["git", "commit-tree", tree, "-m", message]
        for p in parents:
            args += ["-p", p]
        return str(self.mirror(url).git.execute(args, env=env)).strip()

    def push(self, url: str, sha: str, branch: str, expected: str | None) -> None:
        """Set ``branch`` to ``sha`` if it still points at ``expected`` (None: must not exist)."""
        check_ref(branch)
        lease = f"--force-with-lease=refs/heads/{branch}:{expected or ''}"
        try:
            self._git(url, "push", "--porcelain", lease, "--", url, f"{sha}:refs/heads/{branch}")
        except GitError as exc:
            text = str(exc)
            if "stale info" in text or "rejected" in text or "fetch first" in text or "non-fast-forward" in text:
                moved = f"{branch} moved on {_scrub(url)} while fleetflow worked; re-read and retry"
                raise PushRejected(moved) from None
            raise GitError(f"git push of {branch} to {_scrub(url)} failed: {text.strip()}") from None


def retrying(attempts: int, step: Callable[[], str | None]) -> str | None:
    """Run ``step`` until it does not raise PushRejected (a concurrent push), at most ``attempts`` times."""
    for attempt in range(attempts):
        try:
            return step()
        except PushRejected:
            if attempt == attempts - 1:
                raise
    return None
