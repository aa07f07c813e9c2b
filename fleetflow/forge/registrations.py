"""Reading ``Workload`` documents from the repos that ``WorkloadRegistration``s point at (git edge).

Each repo is mirrored once into a cache folder (bare), fetched at the registered branch, and read straight from
the commit's tree (no checkout), so a given commit is parsed at most once per process. Any git URL works,
``file://`` included. User text never reaches a git option: URLs and branches are passed after ``--``-safe
positions and checked not to start with ``-``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from fleetflow.errors import GitError, Location, Problem, Problems
from fleetflow.forge.git import BareRepo, split_credentials
from fleetflow.model.controlplane import Resource
from fleetflow.model.documents import YAML_SUFFIXES, Document, parse_documents
from fleetflow.model.resources import WorkloadRegistrationSpec
from fleetflow.progress import NO_PROGRESS, Progress


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fleetflow" / "repos"


@dataclass(frozen=True)
class _Read:
    """One repo path at one commit, parsed: its documents and what was wrong in them."""

    documents: list[Document]
    problems: list[Problem]


@dataclass
class RegistrationFetcher:
    """A ``WorkloadFetcher`` backed by git: problems in the documents go to the caller's ``Problems``; a repo git
    cannot fetch raises :class:`GitError` (the loader reports every such registration, and the CLI exits 3)."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    progress: Progress = NO_PROGRESS
    _parsed: dict[tuple[str, str, str], _Read] = field(default_factory=dict)
    _repos: dict[str, BareRepo] = field(default_factory=dict)
    # (the repo URL without credentials, the branch) -> the commit read: what a sharded schedule's jobs compare,
    # each having fetched the branch on its own runner
    commits: dict[tuple[str, str], str] = field(default_factory=dict)

    def __call__(self, reg: Resource[WorkloadRegistrationSpec], problems: Problems) -> list[Document]:
        src = reg.spec.workload
        where = reg.where("spec", "workload", "repo")
        for value, what in ((src.repo, "repo"), (src.branch, "branch")):
            if value.startswith("-"):
                problems.add(f"WorkloadRegistration {reg.name}: {what} may not start with '-'", where)
                return []
        self.progress.begin(f"fetching workload {reg.name} from {src.repo} ({src.branch})")
        try:
            repo, commit = self._fetch(src.repo, src.branch)
        except GitError as exc:
            problem = Problem(
                f"WorkloadRegistration {reg.name}: cannot fetch branch {src.branch!r} of {src.repo}: "
                + (exc.reason or "git failed"),
                where,
                "check the repo URL, the branch name and the credentials",
            )
            raise GitError(str(problem), command=exc.command, reason=exc.reason) from exc
        finally:
            self.progress.end()
        key = (src.repo, commit, src.path)
        if key not in self._parsed:
            found = Problems()
            at = reg.where("spec", "workload", "path")  # a path problem is at the registration's path line
            self._parsed[key] = _Read(self._read(repo, commit, src.repo, src.path, found, at), found.items)
        read = self._parsed[key]
        problems.extend(read.problems)
        return read.documents

    def _fetch(self, url: str, branch: str) -> tuple[BareRepo, str]:
        repo = self._repos.get(url)
        if repo is None:
            clean = split_credentials(url)[0]
            repo = self._repos[url] = BareRepo(self.cache_dir / hashlib.sha256(clean.encode()).hexdigest()[:24])
        ref = f"refs/fleetflow/{hashlib.sha256(branch.encode()).hexdigest()[:16]}"
        repo.fetch(url, [f"+refs/heads/{branch}:{ref}"])
        commit = repo.resolve(f"{ref}^{{commit}}")
        if commit is None:
            raise GitError(f"no commit at {ref}", command="rev-parse", reason=f"branch {branch!r} has no commit")
        self.commits[(split_credentials(url)[0], branch)] = commit
        return repo, commit

    @staticmethod
    def _read(
        repo: BareRepo, commit: str, url: str, path: str, problems: Problems, at: Location | None = None
    ) -> list[Document]:
        clean = PurePosixPath(path.strip("/") or ".")
        if ".." in clean.parts:
            problems.add(f"workload path {path!r} leaves the repository", at, "use a path inside the repo")
            return []
        where = [] if str(clean) == "." else [str(clean)]
        entries = [e for e in repo.ls_tree(commit, where, recursive=True, trees=False) if e.kind == "blob"]
        if where:
            inside = f"{where[0]}/"
            entries = [e for e in entries if e.path == where[0] or e.path.startswith(inside)]
            if not entries and not repo.ls_tree(commit, where):
                problems.add(f"path {path!r} not found in {url} at {commit[:12]}", at,
                             "name a folder or file of that branch (spec.workload.path; '.' is the whole repo)")
                return []
        documents: list[Document] = []
        wanted = sorted((e for e in entries if e.path.endswith(YAML_SUFFIXES)), key=lambda e: e.path)
        data = repo.blobs(e.sha for e in wanted)
        for entry in wanted:
            display = f"{url}@{commit[:12]}:{entry.path}"
            documents.extend(parse_documents(data[entry.sha].decode("utf-8", "replace"), display, problems))
        return documents
