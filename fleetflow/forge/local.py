"""The local forge: plain git repositories, no server. Powers ``fleetflow demo``, the tests and air-gapped sites.

A repo is a path to a (usually bare) git repository or any git URL. Pull requests, commit statuses and dispatched
events are kept in the repository itself, as JSON files under ``refs/fleetflow/forge`` (see
:mod:`fleetflow.forge.localstore`), so every clone and every concurrent run sees the same state::

    meta.json                            {"format": 1, "next_pull": N, "next_dispatch": M,
                                          "allow_auto_merge": bool, "branch_rules": {branch: {"required": [...]}}}
    pulls/<number>.json                  one pull request (reviewers and timestamps included)
    statuses/<sha>/<kk>/<key>.json       one context on one commit: every post, oldest first (the last one is its
                                         state); <key> = sha256(context lowercased)[:24], <kk> its first two
                                         digits: contexts differing only in case are one context, as on GitHub
    dispatches/<number>.json             one repository_dispatch event

A status post reads and rewrites one small file (one context's posts) and the four trees above it, whatever the
number of statuses on the commit (at 30,000 contexts a folder ``<kk>`` holds about 120 files): its cost does not
grow with the fleet. Reading the statuses of a commit lists ``statuses/<sha>/`` once and reads its blobs in one
batch (:func:`status_posts`). Files of the older layout (``statuses/<sha>.json``, every post of a commit in one
file) are still read; new posts go to the new layout and win over them.

Semantics follow GitHub's: a merge is a real merge commit pushed to the base branch, a PR needs an existing head
branch with commits not in the base (and is closed when that branch is deleted), a status needs an existing commit
and a description of at most 140 characters, a dispatch payload at most 10 top-level keys. Branch rules and
auto-merge follow GitHub's too: a branch may require status contexts (``protect_branch``), a repository may allow
auto-merge (``allow_auto_merge``); a PR with auto-merge enabled is merged by the status post that makes every
required context of its head ``success``, and enabling it is refused when the repository does not allow it or the PR
needs no waiting.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from fleetflow.clock import utc_now
from fleetflow.errors import ForgeError, ForgeRequest
from fleetflow.forge.base import (
    STATUS_STATES,
    BranchProtection,
    CommitStatus,
    CredentialKind,
    DeploymentEnvironment,
    MergeRules,
    PullRequest,
    ReportPage,
    StatusState,
    WorkflowPermissions,
    check_dispatch,
    check_status,
    combined_state,
    context_key,
    full_sha,
    reviewer_key,
)
from fleetflow.forge.git import MergeConflict, run_git
from fleetflow.forge.localstore import Edit, Mirror, Snapshot, bad_record, dump_json, merged_posts
from fleetflow.forge.rulesets import BranchRule, Ruleset

R = TypeVar("R")
Record = dict[str, Any]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/\\@]+@[^/\\:]+:")
_MAX_PAYLOAD_BYTES = 64 * 1024
# GitHub's "Create a commit status": "there is a limit of 1000 statuses per sha and context within a repository.
# Attempts to create more than 1000 statuses will result in a validation error"
# (https://docs.github.com/en/rest/commits/statuses#create-a-commit-status). The local forge took any number until
# 2026-11-29: a gate that posts a new description on every run passed locally and failed on GitHub.
STATUSES_PER_CONTEXT = 1000


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fleetflow" / "forge"


class LocalForge:
    """A :class:`~fleetflow.forge.base.Forge` made of git repositories.

    ``cache_dir`` holds one bare mirror per repository (default ``$XDG_CACHE_HOME/fleetflow/forge``); ``clock``
    gives every timestamp (statuses' ``updated_at``, PR times, commit dates); ``attempts`` bounds the retries of a
    write that lost a race. ``operations`` lists every write that changed something, by method name.
    """

    name = "local"

    def __init__(self, cache_dir: Path | None = None, clock: Callable[[], datetime] = utc_now,
                 attempts: int = 10) -> None:
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self.clock = clock
        self.attempts = attempts
        self.operations: list[str] = []
        self._mirrors: dict[str, Mirror] = {}

    # -- repositories --------------------------------------------------------------------------------------

    def git_url(self, repo: str) -> str:
        """The URL as given; a relative path is made absolute."""
        if not repo or repo.startswith("-") or any(c in repo for c in "\0\r\n"):
            raise ForgeError(f"invalid repository {repo!r}: give a path or a git URL (not starting with '-')")
        return repo if _URL.match(repo) else os.path.abspath(os.path.expanduser(repo))

    def default_branch(self, repo: str) -> str:
        url = self.git_url(repo)
        proc = run_git(["ls-remote", "--symref", "--", url, "HEAD"], check=False)
        found = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", proc.stdout.decode(), re.MULTILINE)
        if found is None and not _URL.match(url) and Path(url).is_dir():  # empty repo: HEAD is not advertised
            local = run_git(["symbolic-ref", "-q", "HEAD"], cwd=Path(url), check=False).stdout.decode().strip()
            found = re.fullmatch(r"refs/heads/(\S+)", local)
        if found is None:
            raise ForgeError(f"cannot read the default branch (HEAD) of {url}")
        return found[1]

    def tried_once(self) -> AbstractContextManager[None]:
        """Nothing to change: the local forge never retries or waits for a rate limit."""
        return nullcontext()

    def close(self) -> None:
        """Nothing to release: the mirrors are folders and every git call is its own process."""

    def _mirror(self, repo: str) -> Mirror:
        url = self.git_url(repo)
        if url not in self._mirrors:
            folder = self.cache_dir / hashlib.sha256(url.encode()).hexdigest()[:24]
            self._mirrors[url] = Mirror(url, folder, self.clock, self.attempts)
        return self._mirrors[url]

    def _write(self, repo: str, operation: str, change: Callable[[Snapshot], Edit[R]], heads: bool = False) -> R:
        result, wrote = self._mirror(repo).update(change, heads)
        if wrote:
            self.operations.append(operation)
        return result

    def _now(self) -> str:
        now = self.clock()
        return (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC).isoformat()

    # -- commit statuses -----------------------------------------------------------------------------------

    def statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        """Latest status per context, sorted by context."""
        latest = {posts[-1]["context"]: posts[-1] for posts in status_posts(self._mirror(repo).fetch(), full_sha(sha))}
        return [
            CommitStatus(context=c, state=p["state"], description=p["description"],
                         updated_at=datetime.fromisoformat(p["created_at"]))
            for c, p in sorted(latest.items())
        ]

    def status_history(self, repo: str, sha: str) -> list[CommitStatus]:
        """Every status posted on ``sha``, oldest first (by post time; posts of one context keep their order)."""
        by_context = status_posts(self._mirror(repo).fetch(), full_sha(sha))
        every = [post for posts in by_context for post in posts]
        posts = sorted(every, key=lambda post: datetime.fromisoformat(post["created_at"]))
        return [
            CommitStatus(context=p["context"], state=p["state"], description=p["description"],
                         updated_at=datetime.fromisoformat(p["created_at"]))
            for p in posts
        ]

    def commit_url(self, repo: str, sha: str) -> str | None:
        """The local forge has no web pages."""
        return None

    def status_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """One page: everything (reading it is one fetch, whatever the count)."""
        reports = self.statuses(repo, sha)
        yield ReportPage(reports, len(reports), combined_state(reports))

    def check_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """The local forge has no check runs."""
        full_sha(sha)
        yield ReportPage([], 0)

    def set_status(self, repo: str, sha: str, context: str, state: StatusState, description: str,
                   target_url: str | None = None, *, known: Sequence[CommitStatus] | None = None) -> bool:
        """``known`` is not needed here: the check against the latest post is part of the compare-and-swap
        write. A post that makes every required context of an auto-merge PR's head ``success`` merges it."""
        sha = check_status(sha, state, context, description)
        mirror = self._mirror(repo)
        if not mirror.has_commit(sha):
            mirror.fetch(heads=True)
            if not mirror.has_commit(sha):
                raise ForgeError(f"no commit {sha} in {mirror.url}: a status needs a commit of a branch")
        path = status_path(sha, context)
        waiting: list[int] = []

        def change(snap: Snapshot) -> Edit[bool]:
            posts: list[Record] = snap.read_json(path) or _older_posts(snap, sha, context)
            last = posts[-1] if posts else None
            if last is not None and (last["context"], last["state"], last["description"]) == (context, state,
                                                                                             description):
                return Edit(False)
            if len(posts) >= STATUSES_PER_CONTEXT:
                raise ForgeError(
                    f"cannot post {context!r} on commit {sha[:12]} of {mirror.url}: it has {len(posts)} statuses of "
                    f"that context already, and GitHub refuses more than {STATUSES_PER_CONTEXT} per commit and "
                    "context (\"This SHA and context has reached the maximum number of statuses.\")",
                    ForgeRequest("set_status", mirror.url, 422))
            waiting[:] = [r["number"] for r in _records(snap) if r["state"] == "open" and r.get("auto_merge")]
            post = {"context": context, "state": state, "description": description, "target_url": target_url,
                    "created_at": self._now()}
            return Edit(True, {path: dump_json([*posts, post])}, message=f"status {context}={state} on {sha}")

        wrote = self._write(repo, "set_status", change)
        if wrote and state == "success" and waiting:
            self._auto_merge(repo, sha, waiting)
        return wrote

    def _auto_merge(self, repo: str, sha: str, numbers: list[int]) -> None:
        """Merge the auto-merge PRs whose head is ``sha`` once every context their base requires is success."""
        snap = self._mirror(repo).fetch(heads=True)
        latest = {context_key(s.context): s.state for s in self.statuses(repo, sha)}
        for number in numbers:
            rec = snap.read_json(f"pulls/{number}.json")
            if rec is None or rec["state"] != "open" or snap.heads.get(rec["head"]) != sha:
                continue
            required = _rules(snap, rec["base"]).required
            if required and all(latest.get(context_key(c)) == "success" for c in required):
                self.merge_pull(repo, number)

    # -- branch rules and auto-merge -------------------------------------------------------------------------

    def protect_branch(self, repo: str, branch: str, required: Sequence[str]) -> None:
        """Require these status contexts on ``branch`` (an empty list lifts the rule)."""
        _branch(branch)

        def change(snap: Snapshot) -> Edit[None]:
            meta = _meta(snap)
            rules = {**meta.get("branch_rules", {}), branch: {"required": list(dict.fromkeys(required))}}
            if not required:
                rules.pop(branch)
            return Edit(None, {"meta.json": dump_json({**meta, "branch_rules": rules})},
                        message=f"protect {branch}")

        self._write(repo, "protect_branch", change)

    def allow_auto_merge(self, repo: str, allowed: bool = True) -> None:
        """The repository setting "Allow auto-merge"."""
        def change(snap: Snapshot) -> Edit[None]:
            meta = _meta(snap)
            if meta.get("allow_auto_merge", False) == allowed:
                return Edit(None)
            return Edit(None, {"meta.json": dump_json({**meta, "allow_auto_merge": allowed})},
                        message=f"allow auto-merge: {allowed}")

        self._write(repo, "allow_auto_merge", change)

    def merge_rules(self, repo: str, branch: str) -> MergeRules:
        _branch(branch)
        return _rules(self._mirror(repo).fetch(), branch)

    def enable_auto_merge(self, repo: str, number: int) -> str | None:
        """As GitHub: refused when the repository does not allow it, and when the PR needs no waiting (no
        required context, or all of them already success: "clean status")."""
        snap = self._mirror(repo).fetch(heads=True)
        rec = _record(snap, repo, number)
        if rec.get("auto_merge"):
            return None
        if rec["state"] != "open":
            return f"pull request #{number} is {'merged' if rec['merged'] else 'closed'}"
        rules = _rules(snap, rec["base"])
        if not rules.auto_merge_allowed:
            return "Auto merge is not allowed for this repository"
        head = snap.heads.get(rec["head"], rec["head_sha"])
        latest = {context_key(s.context): s.state for s in self.statuses(repo, head)}
        if not rules.required or all(latest.get(context_key(c)) == "success" for c in rules.required):
            return "Pull request is in clean status"

        def change(snap: Snapshot) -> Edit[Record]:
            current = _record(snap, repo, number)
            return self._edit_pull(current, {**current, "auto_merge": True}, f"auto-merge pull request #{number}")

        self._write(repo, "enable_auto_merge", change)
        return None

    # -- pull requests -------------------------------------------------------------------------------------

    def open_pull(self, repo: str, head: str, base: str) -> PullRequest | None:
        _branch(head)
        _branch(base)
        snap = self._heads_checked(repo)
        rec = _open_record(snap, head, base)
        return None if rec is None else self._pull(repo, rec, snap)

    def pulls(self, repo: str, head: str, state: Literal["open", "closed", "all"] = "all", *,
              limit: int | None = None) -> list[PullRequest]:
        _branch(head)
        snap = self._heads_checked(repo)
        recs = [r for r in _records(snap) if r["head"] == head and state in ("all", r["state"])][:limit]
        return [self._pull(repo, r, snap) for r in recs]

    def _heads_checked(self, repo: str) -> Snapshot:
        """The store with the branches, after closing the open PRs whose head branch is gone: GitHub closes a pull
        request when its head branch is deleted (its web UI refuses to delete the branch of an open PR, "Deleting
        and restoring branches in a pull request"; a ``git push --delete`` or the REST "Delete a reference" is not
        refused, and the PR is closed: Mergify's ``delete_head_branch`` docs, "GitHub will therefore close the
        dependent pull requests"; the stand-in tests/ghstub does the same, ``Repo.refresh``). The local forge has
        no hook on a push, so it closes them when it next reads the PRs (a write only when one is found); a branch
        deleted and pushed again between two reads goes unseen. Until 2026-11-29 such a PR stayed open, and
        schedule said "PR #1 already proposes exactly this" of a branch that was gone."""
        snap = self._mirror(repo).fetch(heads=True)
        if not any(r["state"] == "open" and r["head"] not in snap.heads for r in _records(snap)):
            return snap

        def change(snap: Snapshot) -> Edit[Snapshot]:
            now, files = self._now(), {}
            for rec in _records(snap):
                if rec["state"] == "open" and rec["head"] not in snap.heads:
                    new = {**rec, "state": "closed", "closed_at": now, "updated_at": now, "head_deleted": True}
                    files[f"pulls/{rec['number']}.json"] = dump_json(new)
            return Edit(snap, files, message="close pull requests whose head branch is gone")

        self._write(repo, "close_pull", change, heads=True)
        return self._mirror(repo).fetch(heads=True)

    def pull_record(self, repo: str, number: int) -> Record:
        """Everything stored about one PR (reviewers, created/updated/merged/closed times): for tests and demo."""
        return _record(self._mirror(repo).fetch(), repo, number)

    def create_pull(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        _branch(head)
        _branch(base)
        if head == base:
            raise ForgeError(f"cannot open a pull request from {head!r} into itself")
        if not title.strip():
            raise ForgeError("a pull request needs a title")
        mirror = self._mirror(repo)

        def change(snap: Snapshot) -> Edit[PullRequest]:
            existing = _open_record(snap, head, base)
            if existing is not None:
                return Edit(self._pull(repo, existing, snap))
            for branch, what in ((base, "base"), (head, "head")):
                if branch not in snap.heads:
                    raise ForgeError(f"cannot open a pull request {head} → {base} in {mirror.url}: "
                                     f"the {what} branch {branch!r} does not exist")
            if mirror.is_ancestor(snap.heads[head], snap.heads[base]):
                raise ForgeError(f"cannot open a pull request {head} → {base} in {mirror.url}: "
                                 f"no commits between {base} and {head}")
            meta = _meta(snap)
            number, now = meta["next_pull"], self._now()
            rec: Record = {
                "number": number, "head": head, "base": base, "title": title, "body": body, "state": "open",
                "merged": False, "head_sha": snap.heads[head], "merge_commit_sha": None, "labels": [],
                "reviewers": [], "created_at": now, "updated_at": now, "closed_at": None, "merged_at": None,
            }
            files = {f"pulls/{number}.json": dump_json(rec), "meta.json": dump_json({**meta, "next_pull": number + 1})}
            return Edit(self._pull(repo, rec, snap), files, message=f"open pull request #{number} {head} -> {base}")

        return self._write(repo, "create_pull", change, heads=True)

    def update_pull(self, repo: str, number: int, *, title: str | None = None, body: str | None = None,
                    state: Literal["open", "closed"] | None = None) -> PullRequest:
        if state not in (None, "open", "closed"):
            raise ForgeError(f"invalid pull request state {state!r}")

        def change(snap: Snapshot) -> Edit[PullRequest]:
            rec = _record(snap, repo, number)
            new = {**rec, "title": rec["title"] if title is None else title}
            new["body"] = rec["body"] if body is None else body
            if state is not None and state != rec["state"]:
                if rec["merged"]:
                    raise ForgeError(f"pull request #{number} is merged: its state cannot change")
                if state == "open":
                    if _open_record(snap, rec["head"], rec["base"]) is not None:
                        raise ForgeError(f"cannot reopen pull request #{number}: another one is open for "
                                         f"{rec['head']} → {rec['base']}")
                    if rec["head"] not in snap.heads:
                        raise ForgeError(f"cannot reopen pull request #{number}: branch {rec['head']!r} is gone")
                new.update(state=state, closed_at=None if state == "open" else self._now())
                if state == "closed" and rec["head"] in snap.heads:  # as GitHub: a closed PR keeps its last head
                    new["head_sha"] = snap.heads[rec["head"]]
            edit = self._edit_pull(rec, new, f"update pull request #{number}")
            return Edit(self._pull(repo, edit.result, snap), edit.files, message=edit.message)

        return self._write(repo, "update_pull", change, heads=True)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        if any(not label.strip() for label in labels):
            raise ForgeError("a label needs a name")

        def change(snap: Snapshot) -> Edit[Record]:
            rec = _record(snap, repo, number)
            merged = list(dict.fromkeys([*rec["labels"], *labels]))
            return self._edit_pull(rec, {**rec, "labels": merged}, f"label pull request #{number}")

        self._write(repo, "add_labels", change)

    def request_reviewers(self, repo: str, number: int, reviewers: list[str]) -> None:
        def change(snap: Snapshot) -> Edit[Record]:
            rec = _record(snap, repo, number)
            merged = list(dict.fromkeys([*rec["reviewers"], *reviewers]))
            return self._edit_pull(rec, {**rec, "reviewers": merged}, f"request reviews on pull request #{number}")

        self._write(repo, "request_reviewers", change)

    def remove_label(self, repo: str, number: int, label: str) -> None:
        """A person takes a label off the PR (for tests and the demo); the record keeps that it was taken off."""

        def change(snap: Snapshot) -> Edit[Record]:
            rec = _record(snap, repo, number)
            kept = [name for name in rec["labels"] if name.lower() != label.lower()]
            removed = list(dict.fromkeys([*rec.get("labels_removed", []), label.lower()]))
            return self._edit_pull(rec, {**rec, "labels": kept, "labels_removed": removed},
                                   f"unlabel pull request #{number}")

        self._write(repo, "remove_label", change)

    def labels_removed(self, repo: str, number: int) -> set[str]:
        """The labels a person took off (:meth:`remove_label`)."""
        return set(self.pull_record(repo, number).get("labels_removed", []))

    def review_requests_made(self, repo: str, number: int) -> set[str]:
        """The local forge keeps every reviewer requested (no one reviews here, nor takes a request back)."""
        return {reviewer_key(r) for r in self.pull_record(repo, number)["reviewers"]}

    def merge_pull(self, repo: str, number: int, *, expected_head: str | None = None) -> str:
        """A real merge commit of the head branch (as it is now) into the base branch, pushed together with the
        PR's new state (atomically, compare-and-swap on both). Merging a merged PR returns its sha again."""
        mirror = self._mirror(repo)

        def change(snap: Snapshot) -> Edit[str]:
            rec = _record(snap, repo, number)
            if rec["merged"]:
                return Edit(cast(str, rec["merge_commit_sha"]))
            head, base = rec["head"], rec["base"]
            if rec["state"] != "open":
                raise ForgeError(f"pull request #{number} is closed: only an open pull request can be merged")
            for branch in (head, base):
                if branch not in snap.heads:
                    raise ForgeError(f"cannot merge pull request #{number}: branch {branch!r} does not exist")
            head_sha, base_sha = snap.heads[head], snap.heads[base]
            if expected_head is not None and head_sha != expected_head:
                raise ForgeError(f"pull request #{number}: head branch was modified ({head_sha[:12]}, expected "
                                 f"{expected_head[:12]}); review and try the merge again",
                                 ForgeRequest("merge", mirror.url, 409))
            refs: dict[str, tuple[str, str]] = {}
            if mirror.is_ancestor(head_sha, base_sha):  # already in the base (e.g. our own earlier attempt)
                sha = base_sha
            else:
                message = f"Merge pull request #{number} from {head}\n\n{rec['title']}\n"
                try:
                    sha = mirror.merge(base_sha, head_sha, message)
                except MergeConflict as exc:
                    raise ForgeError(f"pull request #{number} ({head} → {base}) cannot be merged: "
                                     f"conflicts in {exc}") from None
                refs[f"refs/heads/{base}"] = (sha, base_sha)
            now = self._now()
            new = {**rec, "state": "closed", "merged": True, "merge_commit_sha": sha, "head_sha": head_sha,
                   "merged_at": now, "closed_at": now, "updated_at": now}
            return Edit(sha, {f"pulls/{number}.json": dump_json(new)}, refs, f"merge pull request #{number}")

        return self._write(repo, "merge_pull", change, heads=True)

    def _edit_pull(self, rec: Record, new: Record, message: str) -> Edit[Record]:
        if new == rec:
            return Edit(rec)
        new["updated_at"] = self._now()
        return Edit(new, {f"pulls/{rec['number']}.json": dump_json(new)}, message=message)

    def _pull(self, repo: str, rec: Record, snap: Snapshot) -> PullRequest:
        head_sha, state = rec["head_sha"], rec["state"]
        if state == "open" and rec["head"] in snap.heads:  # an open PR follows its branch, as on GitHub
            head_sha = snap.heads[rec["head"]]
        elif state == "open" and snap.heads:  # its head branch is gone: closed, as on GitHub (_heads_checked)
            state = "closed"
        return PullRequest(
            number=rec["number"], head=rec["head"], base=rec["base"], title=rec["title"], body=rec["body"],
            state=state, merged=rec["merged"], head_sha=head_sha, merge_commit_sha=rec["merge_commit_sha"],
            url=f"local://{self.git_url(repo)}/pull/{rec['number']}", labels=tuple(rec["labels"]),
            auto_merge=bool(rec.get("auto_merge")) and state == "open",
            review_requests=tuple(reviewer_key(r) for r in rec.get("reviewers") or ()),
        )

    # -- repository_dispatch -------------------------------------------------------------------------------

    def dispatch(self, repo: str, event_type: str, payload: dict[str, object]) -> None:
        size = check_dispatch(event_type, payload)
        if size >= _MAX_PAYLOAD_BYTES:
            raise ForgeError(f"dispatch payload is {size} bytes; it must be under {_MAX_PAYLOAD_BYTES}")

        def change(snap: Snapshot) -> Edit[None]:
            meta = _meta(snap)
            number = meta["next_dispatch"]
            event = {"number": number, "event_type": event_type, "client_payload": payload, "created_at": self._now()}
            files = {f"dispatches/{number}.json": dump_json(event),
                     "meta.json": dump_json({**meta, "next_dispatch": number + 1})}
            return Edit(None, files, message=f"dispatch {event_type}")

        self._write(repo, "dispatch", change)

    # -- repository settings -------------------------------------------------------------------------------

    def set_default_branch(self, repo: str, branch: str) -> bool:
        """Point the repository's ``HEAD`` at ``branch`` (a repository on this machine only: git cannot change a
        remote's HEAD)."""
        url = self.git_url(repo)
        check = run_git(["check-ref-format", "--branch", branch], check=False)
        if check.returncode != 0 or branch.startswith("-"):
            raise ForgeError(f"invalid branch name {branch!r}")
        if _URL.match(url) or not Path(url).is_dir():
            raise ForgeError(f"cannot set the default branch of {url}: not a repository on this machine; set it on "
                             f"the server (git symbolic-ref HEAD refs/heads/{branch})")
        folder = Path(url)
        if run_git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=folder, check=False).returncode:
            raise ForgeError(f"cannot make {branch} the default branch of {url}: no such branch")
        if self.default_branch(repo) == branch:
            return False
        run_git(["symbolic-ref", "HEAD", f"refs/heads/{branch}"], cwd=folder)
        self.operations.append("set_default_branch")
        return True

    def installation_permissions(self, repo: str) -> dict[str, str] | None:
        """The local forge has no Apps."""
        return None

    def deployment_environments(self, repo: str) -> dict[str, DeploymentEnvironment] | None:
        """The local forge runs no workflow, so it has no GitHub Environments."""
        return None

    def credential_kind(self) -> CredentialKind:
        """The local forge needs no credentials."""
        return "none"

    def workflow_permissions(self, repo: str) -> WorkflowPermissions | None:
        """The local forge runs no workflow."""
        return None

    def auto_merge_allowed(self, repo: str) -> bool | None:
        """The local forge has no auto-merge setting (fleetflow merges by its own rules)."""
        return None

    def branch_rules(self, repo: str, branch: str) -> list[BranchRule] | None:
        """The local forge has no rulesets."""
        return None

    def branch_protection(self, repo: str, branch: str) -> BranchProtection | None:
        """The local forge declines no push (its required checks, :meth:`protect_branch`, are asked before a merge)."""
        return None

    def ruleset(self, repo: str, ident: int) -> Ruleset:
        raise ForgeError(f"the local forge has no rulesets (asked for {ident} of {repo})")

    def rulesets(self, repo: str, target: str) -> list[Ruleset] | None:
        """The local forge has no rulesets (its branch rules are :meth:`protect_branch`'s required checks)."""
        return None

    def dispatches(self, repo: str) -> list[Record]:
        """Every dispatched event, oldest first: ``number``, ``event_type``, ``client_payload``, ``created_at``."""
        events = self._mirror(repo).fetch().read_all_json("dispatches")
        return sorted(events, key=lambda e: int(e["number"]))



def status_path(sha: str, context: str) -> str:
    """Where the posts of ``context`` on commit ``sha`` are stored (see the module docstring): keyed by the context
    lowercased, so the posts of ``Flux/dev-1`` and ``flux/dev-1`` are one file in post order. GitHub's "Create a
    commit status" says of ``context``: "This field is case-insensitive"; the local forge listed them as two
    contexts until 2026-11-29 (a stale failure of one spelling failed the combined state and merges)."""
    key = hashlib.sha256(context_key(context).encode()).hexdigest()[:24]
    return f"statuses/{sha}/{key[:2]}/{key}.json"


def status_posts(snap: Snapshot, sha: str) -> list[list[Record]]:
    """Every context's posts on commit ``sha`` (each list oldest first), older layout included: the storage API
    for readers of statuses (one listing of ``statuses/<sha>/`` and one batch read of its blobs)."""
    by_context: dict[str, list[list[Record]]] = {}  # context_key -> its records
    legacy = f"statuses/{sha}.json"
    older: dict[str, list[Record]] = {}
    for post in _posts(snap.read_json(legacy), legacy):  # the older layout: one file per commit
        older.setdefault(context_key(post["context"]), []).append(post)
    for key, posts in older.items():
        by_context[key] = [posts]
    for posts in snap.read_all_json(f"statuses/{sha}", recursive=True):
        checked = _posts(posts, f"statuses/{sha}/")
        if checked:
            by_context.setdefault(context_key(checked[0]["context"]), []).append(checked)
    return [records[0] if len(records) == 1 else merged_posts(records) for records in by_context.values()]


def _posts(found: Any, path: str) -> list[Record]:
    """A status record as the local forge writes it (a list of posts, each with a text context and description,
    one of GitHub's four states, an ISO time), or :class:`ForgeError` naming it: a record written by hand stopped
    check-rollout and reconcile with a KeyError, an AttributeError or a ValueError until 2026-11-28."""
    if found is None:
        return []
    if not isinstance(found, list):
        raise bad_record(path, "it is not a list of posts")
    for post in found:
        ok = (isinstance(post, dict) and isinstance(post.get("context"), str) and post.get("state") in STATUS_STATES
              and isinstance(post.get("description", ""), str | None) and isinstance(post.get("created_at"), str))
        if ok:
            try:
                datetime.fromisoformat(post["created_at"])
            except ValueError:
                ok = False
        if not ok:
            raise bad_record(path, f"a post is not as the local forge writes it: {str(post)[:200]}")
        if post.get("description") is None:
            post["description"] = ""
    return found


def _older_posts(snap: Snapshot, sha: str, context: str) -> list[Record]:
    """The posts of ``context`` in a store written before: in the file of its exact spelling (until 2026-11-29),
    or in the file of the whole commit (the older layout). A new post copies them into its file; the posts of other
    spellings stay where they are (:func:`status_posts` reads them all)."""
    key = hashlib.sha256(context.encode()).hexdigest()[:24]
    exact = f"statuses/{sha}/{key[:2]}/{key}.json"
    if exact != status_path(sha, context) and (posts := snap.read_json(exact)):
        return cast(list[Record], posts)
    key = context_key(context)
    return [p for p in snap.read_json(f"statuses/{sha}.json") or [] if context_key(p["context"]) == key]


_VALID_BRANCHES: set[str] = set()


def _branch(name: str) -> str:
    """A branch name git accepts and that cannot be mistaken for an option."""
    if name not in _VALID_BRANCHES:
        bad = not name or name.startswith("-") or name == "HEAD" or run_git(
            ["check-ref-format", f"refs/heads/{name}"], check=False).returncode != 0
        if bad:
            raise ForgeError(f"invalid branch name {name!r}")
        _VALID_BRANCHES.add(name)
    return name


def _meta(snap: Snapshot) -> Record:
    return {"format": 1, "next_pull": 1, "next_dispatch": 1, **(snap.read_json("meta.json") or {})}


def _rules(snap: Snapshot, branch: str) -> MergeRules:
    meta = _meta(snap)
    required = (meta.get("branch_rules") or {}).get(branch, {}).get("required") or []
    return MergeRules(tuple(required), bool(meta.get("allow_auto_merge", False)))


def _records(snap: Snapshot) -> list[Record]:
    """Every PR, newest first."""
    return sorted(snap.read_all_json("pulls"), key=lambda r: -int(r["number"]))


def _record(snap: Snapshot, repo: str, number: int) -> Record:
    rec = snap.read_json(f"pulls/{int(number)}.json")
    if rec is None:
        raise ForgeError(f"no pull request #{number} in {repo}")
    return cast(Record, rec)


def _open_record(snap: Snapshot, head: str, base: str) -> Record | None:
    return next((r for r in _records(snap) if r["state"] == "open" and (r["head"], r["base"]) == (head, base)), None)
