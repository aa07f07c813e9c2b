"""In-memory forge state: repositories (backed by bare git repos), pull requests, statuses, check runs.

The HTTP handlers and the test helpers call the same operations here, so a test that merges a PR "by hand"
(``repo.merge_pull(1)``) gets exactly what ``PUT .../pulls/1/merge`` would have done.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .apps import AppRegistry
from .errors import (
    ACTIONS_BOT,
    ApiError,
    actions_may_not_create_pulls,
    not_found,
    pr_already_exists,
    unprocessable,
    validation_failed,
)
from .gitbackend import BareRepo, MergeConflict

STATUS_STATES = ("error", "failure", "pending", "success")
GREEN_CONCLUSIONS = ("success", "neutral", "skipped")  # what satisfies a required check (GitHub docs, "About
# protected branches": a required check passes with success, skipped or neutral)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str = ""


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created_at: str
    updated_at: str


@dataclass
class PullRequest:
    number: int
    id: int
    title: str
    body: str | None
    head_ref: str
    base_ref: str
    head_sha: str
    base_sha: str
    user: str
    created_at: str
    updated_at: str
    draft: bool = False
    maintainer_can_modify: bool = False
    state: str = "open"
    closed_at: str | None = None
    merged_at: str | None = None
    merge_commit_sha: str | None = None
    merged_by: str | None = None
    labels: list[str] = field(default_factory=list)
    requested_reviewers: list[str] = field(default_factory=list)
    requested_teams: list[str] = field(default_factory=list)
    # the issue's timeline events the stub records: ``review_requested`` and ``review_request_removed``, each
    # {"id", "event", "actor", "created_at", "reviewer" or "team"} (GitHub's "Issue event types")
    events: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)  # {"id", "user", "state", "body", "commit_id", "at"}
    auto_merge: dict[str, Any] | None = None  # {"enabled_by": login, "merge_method": "merge"|"squash"|"rebase"}

    @property
    def merged(self) -> bool:
        return self.merged_at is not None


@dataclass
class CommitStatus:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: str
    updated_at: str


@dataclass
class CheckRun:
    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    started_at: str | None
    completed_at: str | None
    details_url: str | None = None
    external_id: str | None = None
    output: dict[str, Any] = field(default_factory=dict)


@dataclass
class Dispatch:
    """A ``repository_dispatch`` the stub received."""

    owner: str
    repo: str
    event_type: str
    client_payload: dict[str, Any]
    received_at: str


@dataclass
class Ruleset:
    """A ruleset that applies to the repository ("Get a repository ruleset"): ``include`` / ``exclude`` are its
    ``conditions.ref_name``, ``rules`` its rules as the API returns them (``{"type": "deletion"}``, ...).
    ``bypass`` is the ``current_user_can_bypass`` every caller is told; ``organization``: the ruleset is the
    owner's (``source_type`` Organization), listed with ``includes_parents`` (GitHub's default). The stand-in does
    not evaluate ``include`` / ``exclude``: a branch ruleset's rules are returned by "Get rules for a branch" for
    the branches a test names in ``branches`` (GitHub evaluates the conditions itself there)."""

    id: int
    name: str
    target: str = "tag"
    enforcement: str = "active"  # active | evaluate | disabled
    include: list[str] = field(default_factory=lambda: ["~ALL"])
    exclude: list[str] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    bypass: str = "never"  # always | pull_requests_only | never | exempt
    organization: bool = False
    branches: list[str] = field(default_factory=list)


# GitHub keeps a read-only ref ``refs/pull/<N>/head`` for every pull request, open or closed, and moves it with
# the head branch while the pull request is open ("Checking out pull requests locally", GitHub docs:
# ``git fetch origin pull/ID/head:BRANCH_NAME``; https://docs.github.com/en/pull-requests/how-tos/
# review-pull-requests/checking-out-pull-requests-locally). The stand-in keeps them too: the API side writes them
# (create, refresh) and a post-receive hook moves them on a ``git push`` (which reaches the bare repo directly).
# "Create a commit status": "Note: there is a limit of 1000 statuses per sha and context within a repository.
# Attempts to create more than 1000 statuses will result in a validation error." (REST docs,
# https://docs.github.com/en/rest/commits/statuses#create-a-commit-status); the message is quoted from a public run
# log (labelflow/labelflow actions run 5054760537: 'Validation Failed: {"resource":"Status","code":"custom",
# "message":"This SHA and context has reached the maximum number of statuses."}').
STATUSES_PER_CONTEXT = 1000

OPEN_PULLS_FILE = "ghstub-open-pulls"
PULL_REF_HOOK = f"""#!/bin/sh
# ghstub: move refs/pull/<N>/head of open pull requests with their head branch, as GitHub does
[ -f {OPEN_PULLS_FILE} ] || exit 0
while read old new ref; do
  case "$ref" in refs/heads/*) ;; *) continue ;; esac
  case "$new" in 0000000000000000000000000000000000000000) continue ;; esac
  while read number head; do
    if [ "refs/heads/$head" = "$ref" ]; then git update-ref "refs/pull/$number/head" "$new"; fi
  done < {OPEN_PULLS_FILE}
done
"""


# A ruleset declines a push with its own words before any ref moves (public threads quote them, e.g.
# guardian/gha-scala-library-release-workflow#126, opensearch-project/.github#531: "remote: error: GH013: Repository
# rule violations found for refs/tags/v42.0.0." / "Review all repository rules at https://github.com/<o>/<r>/rules?
# ref=refs%2Ftags%2Fv42.0.0" / "- Cannot create ref due to creations being restricted."; a pull request rule's
# "- Changes must be made through a pull request.", henne49/dbus-opendtu#235). The stand-in does not
# evaluate its rulesets on a push: a test names the writes to decline (:meth:`Repo.decline_ref_writes`), and this
# pre-receive hook declines them (the whole push, as GitHub does) with those words.
DECLINED_FILE = "ghstub-declined-writes"
RULE_HOOK = f"""#!/bin/sh
# ghstub: decline the ref writes a test marked as restricted by a ruleset, in GitHub's words
[ -f {DECLINED_FILE} ] || exit 0
zero=0000000000000000000000000000000000000000
status=0
while read old new ref; do
  if [ "$old" = "$zero" ]; then write=create; why="Cannot create ref due to creations being restricted."
  elif [ "$new" = "$zero" ]; then write=delete; why="Cannot delete this protected ref."
  else write=update; why="Cannot update this protected ref."; fi
  while read w r said; do
    [ "$w $r" = "$write $ref" ] || continue
    [ -n "$said" ] && why="$said"
    echo "error: GH013: Repository rule violations found for $ref." >&2
    echo "Review all repository rules at $(head -n 1 ghstub-rules-url)?ref=$(echo "$ref" | sed 's,/,%2F,g')" >&2
    echo "" >&2
    echo "- $why" >&2
    echo "" >&2
    status=1
  done < {DECLINED_FILE}
done
exit $status
"""


def install_pull_ref_hook(git_dir: Path) -> None:
    hooks = git_dir / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name, text in (("post-receive", PULL_REF_HOOK), ("pre-receive", RULE_HOOK)):
        (hooks / name).write_text(text)
        (hooks / name).chmod(0o755)


@dataclass
class Repo:
    """One repository: its bare git repo plus the forge objects around it."""

    owner: str
    name: str
    id: int
    git: BareRepo
    default_branch: str
    private: bool
    created_at: str
    store: Store
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    comments: list[Comment] = field(default_factory=list)
    labels: dict[str, Label] = field(default_factory=dict)
    statuses: list[CommitStatus] = field(default_factory=list)
    check_runs: list[CheckRun] = field(default_factory=list)
    dispatches: list[Dispatch] = field(default_factory=list)
    delete_branch_on_merge: bool = False
    allow_auto_merge: bool = False  # the repository setting "Allow auto-merge"
    # The setting "Allow GitHub Actions to create and approve pull requests" (Settings → Actions → General → Workflow
    # permissions; the REST API's ``can_approve_pull_request_reviews``), off in every new repository (GitHub Docs,
    # "Managing GitHub Actions settings for a repository", "Preventing GitHub Actions from creating or approving pull
    # requests"; github.blog changelog 2022-05-03). While off, a workflow's GITHUB_TOKEN (actor
    # :data:`ACTIONS_BOT`) cannot open a pull request: :meth:`create_pull` answers GitHub's 403.
    actions_can_create_pulls: bool = False
    # The other half of that settings block, "Workflow permissions" (the REST API's ``default_workflow_permissions``):
    # what a workflow's GITHUB_TOKEN may do where the workflow sets no ``permissions:``; "read" in new repositories.
    default_workflow_permissions: str = "read"
    # Branch protection: branch -> required status check contexts; rulesets likewise (``required_status_checks``
    # rules of active rulesets that target the branch). ``bypass``: merges ignore both (an App on the bypass list).
    protection: dict[str, list[str]] = field(default_factory=dict)
    rulesets: dict[str, list[str]] = field(default_factory=dict)
    # Rulesets as the rulesets endpoints list and return them (tag rulesets; the branch ones above serve merges)
    ruleset_list: list[Ruleset] = field(default_factory=list)
    # GitHub Environments (Settings → Environments): name -> {"reviewers": [login, ...], "wait_timer": minutes}
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    # who can be asked to review (users and team slugs); None: anyone (the stub keeps no collaborators otherwise)
    reviewers_allowed: set[str] | None = None
    bypass: bool = False
    # When set, the API reports this (e.g. ``https://git.example.com/acme/app.git``) as ``clone_url``: for clients
    # that put a token into an https clone URL. The stub serves git only at the ``file://`` URL (``clone_url``).
    https_clone_url: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def decline_ref_writes(self, writes: dict[str, list[str]], why: str = "") -> None:
        """Make pushes that write these refs fail as a ruleset makes them (``{ref: ["create", "update",
        "delete"]}``; empty: decline nothing), saying ``why`` (by default what GitHub says of a restricted
        creation, update or deletion). Pair it with the ``ruleset_list`` entry that explains it."""
        lines = [f"{write} {ref} {why}".rstrip() + "\n" for ref, kinds in sorted(writes.items()) for write in kinds]
        (self.path / "ghstub-rules-url").write_text(f"https://github.com/{self.full_name}/rules\n")  # as GitHub says
        (self.path / DECLINED_FILE).write_text("".join(lines))

    @property
    def path(self) -> Path:
        return self.git.path

    @property
    def clone_url(self) -> str:
        return self.git.path.resolve().as_uri()

    # -- git ------------------------------------------------------------------------------------------------
    def branch_sha(self, branch: str) -> str | None:
        return self.git.ref_sha(f"refs/heads/{branch}")

    def commit_sha(self, ref: str) -> str:
        """Resolve a branch, tag or sha the way ``/commits/{ref}`` does (422 when unknown)."""
        sha = self.git.resolve(ref)
        if sha is None:
            raise unprocessable(f"No commit found for SHA: {ref}")
        return sha

    def commit_files(
        self,
        branch: str,
        files: dict[str, str | bytes | None],
        message: str = "Update files",
        base: str | None = None,
    ) -> str:
        """Commit ``files`` (None deletes) on ``branch``, creating it from ``base`` (default branch) if new.

        A test helper standing in for a clone-edit-push round trip.
        """
        with self.store.lock:
            old = self.branch_sha(branch)
            parent = old or self.git.resolve(base or self.default_branch)
            sha = self.git.write_commit(parent, files, message, (self.store.login, f"{self.store.login}@example.com"))
            self.git.update_ref(f"refs/heads/{branch}", sha, old or "0" * 40)
            for pr in self.pulls.values():
                if pr.state == "open" and pr.head_ref == branch:  # what the post-receive hook does on a push
                    self.git.update_ref(f"refs/pull/{pr.number}/head", sha)
            return sha

    # -- pull requests --------------------------------------------------------------------------------------
    def pull(self, number: int) -> PullRequest:
        with self.store.lock:
            if number not in self.pulls:
                raise not_found()
            return self.refresh(self.pulls[number])

    def list_pulls(self) -> list[PullRequest]:
        with self.store.lock:
            return [self.refresh(pr) for pr in self.pulls.values()]

    def refresh(self, pr: PullRequest) -> PullRequest:
        """Follow the branches of an open PR; a deleted head branch closes it, as on GitHub (Mergify's
        ``delete_head_branch`` docs: "GitHub will therefore close the dependent pull requests",
        https://docs.mergify.com/workflow/actions/delete_head_branch)."""
        if pr.state != "open":
            return pr
        head, base = self.branch_sha(pr.head_ref), self.branch_sha(pr.base_ref)
        if head is None:
            pr.state, pr.closed_at = "closed", self.store.now()
            pr.updated_at = pr.closed_at
            self.track_pull_refs()
            return pr
        pr.head_sha = head
        pr.base_sha = base or pr.base_sha
        if self.git.ref_sha(f"refs/pull/{pr.number}/head") != head:
            self.git.update_ref(f"refs/pull/{pr.number}/head", head)
        return pr

    def track_pull_refs(self) -> None:
        """Write the open pull requests' head branches where the post-receive hook reads them."""
        lines = "".join(f"{pr.number} {pr.head_ref}\n" for pr in self.pulls.values() if pr.state == "open")
        (self.git.path / OPEN_PULLS_FILE).write_text(lines)

    def create_pull(
        self,
        head: str,
        base: str,
        title: str,
        body: str | None = None,
        draft: bool = False,
        user: str | None = None,
    ) -> PullRequest:
        with self.store.lock:
            if (user or self.store.login) == ACTIONS_BOT and not self.actions_can_create_pulls:
                raise actions_may_not_create_pulls()
            owner, _, branch = head.rpartition(":")
            if owner and owner.lower() != self.owner.lower():
                raise validation_failed({"resource": "PullRequest", "field": "head", "code": "invalid"})
            head_sha, base_sha = self.branch_sha(branch), self.branch_sha(base)
            if base_sha is None:
                raise validation_failed({"resource": "PullRequest", "field": "base", "code": "invalid"})
            if head_sha is None:
                raise validation_failed({"resource": "PullRequest", "field": "head", "code": "invalid"})
            for other in self.list_pulls():
                if other.state == "open" and other.head_ref == branch and other.base_ref == base:
                    raise pr_already_exists(self.owner, branch)
            if self.git.is_ancestor(head_sha, base_sha):
                raise validation_failed(
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"No commits between {base} and {branch}",
                    }
                )
            now = self.store.now()
            number = self.store.next_issue_number(self)
            pr = PullRequest(
                number=number,
                id=self.store.next_id(),
                title=title,
                body=body,
                head_ref=branch,
                base_ref=base,
                head_sha=head_sha,
                base_sha=base_sha,
                user=user or self.store.login,
                created_at=now,
                updated_at=now,
                draft=draft,
            )
            self.pulls[number] = pr
            self.git.update_ref(f"refs/pull/{number}/head", head_sha)
            self.track_pull_refs()
            return pr

    def update_pull(self, number: int, **changes: Any) -> PullRequest:
        """Change ``title``, ``body``, ``base`` or ``state`` (``open``/``closed``)."""
        with self.store.lock:
            pr = self.pull(number)
            if "base" in changes and changes["base"] != pr.base_ref:
                if pr.state != "open":
                    raise unprocessable("Cannot change the base branch of a closed pull request.")
                if self.branch_sha(changes["base"]) is None:
                    raise validation_failed({"resource": "PullRequest", "field": "base", "code": "invalid"})
                pr.base_ref = changes["base"]
            for key in ("title", "body"):
                if key in changes and changes[key] is not None:
                    setattr(pr, key, changes[key])
            state = changes.get("state")
            if state == "closed" and pr.state == "open":
                pr.state, pr.closed_at = "closed", self.store.now()
            elif state == "open" and pr.state == "closed":
                if pr.merged or self.branch_sha(pr.head_ref) is None:
                    raise validation_failed(
                        {"resource": "PullRequest", "code": "custom", "message": "state cannot be changed."}
                    )
                pr.state, pr.closed_at = "open", None
            pr.updated_at = self.store.now()
            self.track_pull_refs()
            return self.refresh(pr)

    def merge_pull(
        self,
        number: int,
        method: str = "merge",
        commit_title: str | None = None,
        commit_message: str | None = None,
        sha: str | None = None,
        user: str | None = None,
    ) -> str:
        """Merge as GitHub does: a merge commit, a squash commit or a rebase onto the base branch."""
        with self.store.lock:
            pr = self.pull(number)
            if pr.state != "open":
                raise ApiError(405, "Pull Request is not mergeable")
            if pr.draft:  # as alexwlchan/auto_merge_my_pull_requests#1 and lindell/multi-gitter#622 quote GitHub
                raise ApiError(405, "Pull Request is still a draft")
            if sha is not None and sha != pr.head_sha:
                raise ApiError(409, "Head branch was modified. Review and try the merge again.")
            blocking = self.blocking_check(pr.base_ref, pr.head_sha)
            if blocking is not None and not self.bypass:
                raise ApiError(405, blocking)
            actor = user or self.store.login
            author = (actor, f"{actor}@users.noreply.github.com")
            base_sha = pr.base_sha
            try:
                if method == "rebase":
                    new = self.git.rebase(base_sha, pr.head_sha, author)
                else:
                    tree = self.git.merge_tree(base_sha, pr.head_sha)
                    if method == "squash":
                        title = commit_title or f"{pr.title} (#{pr.number})"
                        parents = [base_sha]
                    else:
                        title = commit_title or f"Merge pull request #{pr.number} from {self.owner}/{pr.head_ref}"
                        parents = [base_sha, pr.head_sha]
                    message = commit_message if commit_message is not None else (pr.title if method == "merge" else "")
                    full = f"{title}\n\n{message}".rstrip() + "\n"
                    new = self.git.commit_tree(tree, parents, full, author, when=self.store.clock())
            except MergeConflict:
                raise ApiError(405, "Pull Request is not mergeable") from None
            self.git.update_ref(f"refs/heads/{pr.base_ref}", new, base_sha)
            now = self.store.now()
            pr.state, pr.merged_at, pr.closed_at, pr.updated_at = "closed", now, now, now
            pr.merge_commit_sha, pr.merged_by, pr.base_sha = new, actor, base_sha
            self.track_pull_refs()
            if self.delete_branch_on_merge:
                self.git.delete_ref(f"refs/heads/{pr.head_ref}")
            return new

    # -- branch rules and auto-merge ------------------------------------------------------------------------
    def required_contexts(self, branch: str) -> list[str]:
        return list(dict.fromkeys([*self.protection.get(branch, []), *self.rulesets.get(branch, [])]))

    def check_state(self, sha: str, context: str) -> str | None:
        """``success``/``failure``/``pending`` of a required check: the latest commit status of that context, or
        the latest check run of that name (completed with a green conclusion: success); None when neither."""
        status = next((s for s in self.statuses_for(sha) if s.context == context), None)
        run = next((r for r in self.check_runs_for(sha) if r.name == context), None)
        if run is not None and (status is None or run.id > status.id):
            if run.status != "completed":
                return "pending"
            return "success" if run.conclusion in GREEN_CONCLUSIONS else "failure"
        if status is None:
            return None
        return {"error": "failure"}.get(status.state, status.state)

    def blocking_check(self, base: str, sha: str) -> str | None:
        """GitHub's refusal of a merge into a protected branch, or None when every required check passed."""
        for context in self.required_contexts(base):
            state = self.check_state(sha, context)
            if state is None or state == "pending":
                return f'Required status check "{context}" is expected.'
            if state != "success":
                return f'Required status check "{context}" is failing.'
        return None

    def enable_auto_merge(self, number: int, method: str, actor: str) -> str | None:
        """``enablePullRequestAutoMerge``: None when enabled, else GitHub's refusal."""
        with self.store.lock:
            pr = self.pull(number)
            if not self.allow_auto_merge:
                return "Auto merge is not allowed for this repository"
            if pr.state != "open":
                return "Pull request is closed" if not pr.merged else "Pull request is already merged"
            if pr.auto_merge is None:
                if not self.required_contexts(pr.base_ref) or self.blocking_check(pr.base_ref, pr.head_sha) is None:
                    return "Pull request is in clean status"
                pr.auto_merge = {"enabled_by": actor, "merge_method": method.lower()}
                pr.updated_at = self.store.now()
            return None

    def auto_merge_due(self, sha: str) -> None:
        """What GitHub does when a check completes: merge the auto-merge PRs whose head is ``sha`` once every
        required check of their base passed."""
        with self.store.lock:
            for pr in self.list_pulls():
                if pr.state == "open" and pr.auto_merge is not None and pr.head_sha == sha \
                        and self.blocking_check(pr.base_ref, sha) is None:
                    self.merge_pull(pr.number, pr.auto_merge["merge_method"], user=pr.auto_merge["enabled_by"])

    def label(self, name: str) -> Label:
        with self.store.lock:
            key = name.lower()
            if key not in self.labels:
                self.labels[key] = Label(self.store.next_id(), name)
            return self.labels[key]

    def comment(self, number: int, body: str, user: str | None = None) -> Comment:
        with self.store.lock:
            self.pull(number)
            now = self.store.now()
            comment = Comment(self.store.next_id(), number, body, user or self.store.login, now, now)
            self.comments.append(comment)
            return comment

    # -- statuses and checks --------------------------------------------------------------------------------
    def add_status(
        self,
        sha: str,
        state: str,
        context: str = "default",
        description: str | None = None,
        target_url: str | None = None,
        creator: str | None = None,
    ) -> CommitStatus:
        """Post a commit status (what a cluster reporting back does); ``sha`` may be any commit-ish."""
        with self.store.lock:
            if state not in STATUS_STATES:
                raise validation_failed({"resource": "Status", "field": "state", "code": "custom"})
            full = self.commit_sha(sha)
            key = context.lower()
            if sum(1 for s in self.statuses if s.sha == full and s.context.lower() == key) >= STATUSES_PER_CONTEXT:
                raise validation_failed({"resource": "Status", "code": "custom",
                                         "message": "This SHA and context has reached the maximum number of "
                                                    "statuses."})
            now = self.store.now()
            status = CommitStatus(
                self.store.next_id(),
                full,
                state,
                context,
                description,
                target_url,
                creator or self.store.login,
                now,
                now,
            )
            self.statuses.append(status)
            self.auto_merge_due(full)
            return status

    def statuses_for(self, ref: str) -> list[CommitStatus]:
        """All statuses of a commit, newest first (``GET /commits/{ref}/statuses``)."""
        sha = self.commit_sha(ref)
        return sorted((s for s in self.statuses if s.sha == sha), key=lambda s: -s.id)

    def combined_status(self, ref: str) -> tuple[str, str, list[CommitStatus]]:
        """``(sha, state, latest status per context)`` with GitHub's rules for the combined state.

        Contexts that differ only in case are one context: GitHub's "Create a commit status" says of ``context``
        "This field is case-insensitive" (github/rest-api-description). The latest post of that context counts and
        is listed as it was posted, in its own spelling: the combined status lists "the latest status" of each
        context as a status object (``simple-commit-status``). That the newest post's spelling is shown, not the
        first one's, is an assumption: no GitHub document says."""
        sha = self.commit_sha(ref)
        latest: dict[str, CommitStatus] = {}
        for status in self.statuses_for(sha):  # newest first
            latest.setdefault(status.context.lower(), status)
        states = {s.state for s in latest.values()}
        if states & {"error", "failure"}:
            state = "failure"
        elif not states or "pending" in states:
            state = "pending"
        else:
            state = "success"
        return sha, state, sorted(latest.values(), key=lambda s: s.context)

    def add_check_run(self, head_sha: str, name: str, **fields: Any) -> CheckRun:
        """Create a check run; ``status`` defaults to ``queued`` (``completed`` when a conclusion is given)."""
        with self.store.lock:
            sha = self.commit_sha(head_sha)
            conclusion = fields.get("conclusion")
            status = fields.get("status") or ("completed" if conclusion else "queued")
            now = self.store.now()
            run = CheckRun(
                id=self.store.next_id(),
                head_sha=sha,
                name=name,
                status=status,
                conclusion=conclusion if status == "completed" else None,
                started_at=fields.get("started_at") or now,
                completed_at=(fields.get("completed_at") or now) if status == "completed" else None,
                details_url=fields.get("details_url"),
                external_id=fields.get("external_id"),
                output=dict(fields.get("output") or {}),
            )
            if status == "completed" and not run.conclusion:
                raise validation_failed({"resource": "CheckRun", "field": "conclusion", "code": "missing_field"})
            self.check_runs.append(run)
            self.auto_merge_due(sha)
            return run

    def check_runs_for(self, ref: str) -> list[CheckRun]:
        sha = self.commit_sha(ref)
        return sorted((r for r in self.check_runs if r.head_sha == sha), key=lambda r: -r.id)


class RateWindow:
    """The primary rate limit as GitHub counts it: 5000 requests per hour, ``X-RateLimit-*`` headers."""

    def __init__(self, limit: int = 5000) -> None:
        self.limit = limit
        self.used = 0
        self.reset = int(time.time()) + 3600
        self._lock = threading.Lock()

    def hit(self) -> dict[str, str]:
        with self._lock:
            if time.time() >= self.reset:
                self.used, self.reset = 0, int(time.time()) + 3600
            self.used += 1
            return self.headers()

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.limit - self.used, 0)),
            "X-RateLimit-Reset": str(self.reset),
            "X-RateLimit-Used": str(self.used),
            "X-RateLimit-Resource": "core",
        }

    def snapshot(self) -> dict[str, int]:
        """``rate-limit``."""
        return {
            "limit": self.limit,
            "remaining": max(self.limit - self.used, 0),
            "reset": self.reset,
            "used": self.used,
        }


class Store:
    """All repositories of one stub, its GitHub Apps, the id counters and the clock, behind one lock."""

    def __init__(self, root: Path, login: str, clock: Callable[[], datetime] | None = None) -> None:
        self.root = root
        self.login = login
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.lock = threading.RLock()
        self.repos: dict[tuple[str, str], Repo] = {}
        self.rate = RateWindow()
        self._ids = itertools.count(1001)
        self._issue_numbers: dict[tuple[str, str], int] = {}
        self.people: dict[str, str] = {}  # a person's token -> their login (:meth:`person_token`)
        self.apps = AppRegistry(self.next_id, lambda: self.clock())

    def now(self) -> str:
        return iso(self.clock())

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def person_token(self, login: str) -> str:
        """A token that acts as the person ``login`` (their review, their removal of a review request): GitHub
        attributes what a personal token writes to its user."""
        with self.lock:
            token = f"person-{login}"
            self.people[token] = login
            return token

    def next_issue_number(self, repo: Repo) -> int:
        with self.lock:
            key = (repo.owner.lower(), repo.name.lower())
            self._issue_numbers[key] = self._issue_numbers.get(key, 0) + 1
            return self._issue_numbers[key]

    def repo(self, owner: str, name: str) -> Repo:
        with self.lock:
            try:
                return self.repos[(owner.lower(), name.lower())]
            except KeyError:
                raise not_found() from None

    def add_repo(self, owner: str, name: str, git: BareRepo, default_branch: str, private: bool) -> Repo:
        with self.lock:
            key = (owner.lower(), name.lower())
            if key in self.repos:
                raise ValueError(f"repository {owner}/{name} already exists")
            install_pull_ref_hook(git.path)
            repo = Repo(owner, name, self.next_id(), git, default_branch, private, self.now(), self)
            self.repos[key] = repo
            return repo
