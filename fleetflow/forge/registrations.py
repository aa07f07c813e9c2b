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

import git

from fleetflow.errors import Problem
from fleetflow.model.controlplane import Resource
from fleetflow.model.documents import YAML_SUFFIXES, Document, parse_documents
from fleetflow.model.resources import WorkloadRegistrationSpec
from fleetflow.progress import NO_PROGRESS, Progress


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fleetflow" / "repos"


@dataclass
class RegistrationFetcher:
    """A ``WorkloadFetcher`` backed by git. Git failures are kept in ``failures`` (the CLI exits 3 on them)."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    failures: list[Problem] = field(default_factory=list)
    progress: Progress = NO_PROGRESS
    _parsed: dict[tuple[str, str, str], tuple[list[Document], list[Problem]]] = field(default_factory=dict)

    def __call__(self, reg: Resource[WorkloadRegistrationSpec]) -> tuple[list[Document], list[Problem]]:
        src = reg.spec.workload
        where = reg.where("spec", "workload", "repo")
        for value, what in ((src.repo, "repo"), (src.branch, "branch")):
            if value.startswith("-"):
                problem = Problem(f"WorkloadRegistration {reg.name}: {what} may not start with '-'", where)
                return [], [problem]
        self.progress.begin(f"fetching workload {reg.name} from {src.repo} ({src.branch})")
        try:
            commit = self._fetch(src.repo, src.branch)
        except git.GitCommandError as exc:
            self.progress.end()
            text = (exc.stderr or str(exc)).strip().removeprefix("stderr:").strip().strip("'")
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
            reason = fatal or lines
            problem = Problem(
                f"WorkloadRegistration {reg.name}: cannot fetch branch {src.branch!r} of {src.repo}: "
                + (reason[0] if reason else "git failed"),
                where,
                "check the repo URL, the branch name and the credentials",
            )
            self.failures.append(problem)
            return [], [problem]
        self.progress.end()
        key = (src.repo, commit.hexsha, src.path)
        if key not in self._parsed:
            self._parsed[key] = self._read(commit, src.repo, src.path)
        return self._parsed[key]

    def _fetch(self, url: str, branch: str) -> git.Commit:
        folder = self.cache_dir / hashlib.sha256(url.encode()).hexdigest()[:24]
        if (folder / "HEAD").exists():
            repo = git.Repo(folder)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.init(folder, bare=True)
        ref = f"refs/fleetflow/{hashlib.sha256(branch.encode()).hexdigest()[:16]}"
        repo.git.fetch("--quiet", "--no-tags", "--", url, f"+refs/heads/{branch}:{ref}")
        return repo.commit(ref)

    @staticmethod
    def _read(commit: git.Commit, url: str, path: str) -> tuple[list[Document], list[Problem]]:
        clean = PurePosixPath(path.strip("/") or ".")
        if ".." in clean.parts:
            return [], [
                Problem(f"workload path {path!r} leaves the repository", None, "use a path inside the repo")
            ]
        tree = commit.tree
        if str(clean) != ".":
            try:
                tree = tree / str(clean)
            except KeyError:
                return [], [Problem(f"path {path!r} not found in {url} at {commit.hexsha[:12]}")]
        documents: list[Document] = []
        problems: list[Problem] = []
        blobs: list[git.Blob] = []
        if isinstance(tree, git.Blob):
            blobs.append(tree)
        elif isinstance(tree, git.Tree):
            blobs.extend(item for item in tree.traverse() if isinstance(item, git.Blob))
        for blob in sorted(blobs, key=lambda b: str(b.path)):
            blob_path = str(blob.path)
            if not blob_path.endswith(YAML_SUFFIXES):
                continue
            display = f"{url}@{commit.hexsha[:12]}:{blob_path}"
            found, errors = parse_documents(blob.data_stream.read().decode("utf-8", "replace"), display)
            documents.extend(found)
            problems.extend(errors)
        return documents, problems
