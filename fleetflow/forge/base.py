"""The forge protocol: what fleetflow needs from GitHub (or the local stand-in), and nothing more.

A repo is named by a string the forge understands: ``owner/name`` for GitHub, a path or git URL for the local
forge. Every write is idempotent: calling it again with the same arguments leaves the same state and makes no
second object (a retried create finds what the first attempt made).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from fleetflow.errors import ForgeError
from fleetflow.forge.rulesets import BranchRule, Ruleset

StatusState = Literal["pending", "success", "failure", "error"]
CombinedState = Literal["pending", "success", "failure"]

# The hidden marker that identifies fleetflow's pull requests (the environment follows it).
PR_MARKER = "<!-- fleetflow:environment="

# GitHub's rules, applied by every forge so that the local one refuses what GitHub would.
STATUS_STATES: tuple[StatusState, ...] = ("pending", "success", "failure", "error")
STATUS_DESCRIPTION_LIMIT = 140  # "description is too long (maximum is 140 characters)"
EVENT_TYPE_LIMIT = 100
PAYLOAD_KEYS_LIMIT = 10
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def full_sha(sha: str) -> str:
    """``sha`` lower-cased; a ForgeError unless it is a full 40-digit commit sha."""
    if not _FULL_SHA.fullmatch(sha.lower()):
        raise ForgeError(f"not a full commit sha: {sha!r}")
    return sha.lower()


def check_status(sha: str, state: str, context: str, description: str) -> str:
    """The arguments of a commit status as GitHub checks them; returns the normalised sha."""
    sha = full_sha(sha)
    if state not in STATUS_STATES:
        raise ForgeError(f"invalid status state {state!r}: one of {', '.join(STATUS_STATES)}")
    if not context:
        raise ForgeError("a commit status needs a context")
    if len(description) > STATUS_DESCRIPTION_LIMIT:
        raise ForgeError(
            f"status description is too long ({len(description)} > {STATUS_DESCRIPTION_LIMIT} characters)"
        )
    return sha


def check_dispatch(event_type: str, payload: dict[str, object]) -> int:
    """A repository_dispatch's event type and payload as GitHub checks them; returns the payload's JSON size."""
    if not event_type or len(event_type) > EVENT_TYPE_LIMIT:
        raise ForgeError(f"event type must have 1 to {EVENT_TYPE_LIMIT} characters, not {len(event_type)}")
    if len(payload) > PAYLOAD_KEYS_LIMIT:
        raise ForgeError(f"dispatch payload has {len(payload)} top-level keys; at most {PAYLOAD_KEYS_LIMIT}")
    try:
        return len(json.dumps(payload).encode())
    except (TypeError, ValueError) as exc:
        raise ForgeError(f"dispatch payload is not JSON: {exc}") from None


@dataclass(frozen=True)
class CommitStatus:
    """The latest report of one context on one commit (a commit status, or a check run mapped onto one)."""

    context: str
    state: StatusState
    description: str = ""
    updated_at: datetime | None = None
    kind: Literal["status", "check"] = "status"


_SEVERITY = {"success": 0, "pending": 1, "failure": 2, "error": 3}


def newer_report(candidate: CommitStatus, current: CommitStatus) -> bool:
    """Between two reports of one context on one commit (a commit status and a check run of the same name): the
    later one wins; a tie, or a missing time, goes to the worse state."""
    if candidate.updated_at is not None and current.updated_at is not None \
            and candidate.updated_at != current.updated_at:
        return candidate.updated_at > current.updated_at
    if (candidate.updated_at is None) != (current.updated_at is None):
        return candidate.updated_at is not None
    return _SEVERITY[candidate.state] > _SEVERITY[current.state]


def combined_state(reports: Sequence[CommitStatus]) -> CombinedState:
    """GitHub's combined state over the latest status per context: ``failure`` if any is ``error`` or
    ``failure``, ``pending`` if there is none or any is ``pending``, else ``success`` ("Get the combined status
    for a specific reference", REST API docs)."""
    states = {r.state for r in reports}
    if states & {"failure", "error"}:
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


@dataclass(frozen=True)
class ReportPage:
    """One page of what was reported on a commit: commit statuses (latest per context, from the combined status)
    or check runs (latest per name). ``total`` counts every context (or check run name) on the commit, on all
    pages; ``state`` is GitHub's combined state of the commit statuses (None for check runs: GitHub has none)."""

    reports: list[CommitStatus]
    total: int
    state: CombinedState | None = None


@dataclass(frozen=True)
class PullRequest:
    number: int
    head: str  # branch name, without owner
    base: str
    title: str
    body: str
    state: Literal["open", "closed"]
    merged: bool = False
    head_sha: str = ""
    merge_commit_sha: str | None = None
    url: str = ""
    labels: tuple[str, ...] = field(default_factory=tuple)
    auto_merge: bool = False  # the forge's own auto-merge is enabled: it merges once the branch rules are met
    author: str = ""  # the login that opened it ("" where the forge keeps none)
    # the reviews requested and not given yet, as :func:`reviewer_key` names them (GitHub drops a reviewer from the
    # list once they review)
    review_requests: tuple[str, ...] = field(default_factory=tuple)
    draft: bool = False  # a person marked it not ready for review (GitHub refuses to merge a draft)


# A status context as GitHub tells contexts apart: without case. GitHub's REST description of "Create a commit status"
# (github/rest-api-description, ``context``): "A string label to differentiate this status from the status of other
# systems. This field is case-insensitive." So ``Flux/dev-1`` posted by a cluster is the context ``flux/dev-1`` its
# ``statusContext`` names, and two Clusters whose contexts differ only in case share one. ``str.lower`` itself, not a
# function around it: the gate keys every report and cluster of a commit by it (30,000 Python-level calls cost
# 20 ms an evaluation); the local forge stores a context's posts under it.
context_key = str.lower


def reviewer_key(reviewer: str) -> str:
    """One name for a reviewer as the policy, a PR and the forge's records give it: a login lowercased (GitHub
    logins ignore case), a team ``ORG/TEAM-SLUG`` as ``team:<slug>`` (GitHub names a requested team by its slug)."""
    if "/" in reviewer:
        return team_key(reviewer.split("/", 1)[1])
    return reviewer.lower()


def team_key(slug: str) -> str:
    """:func:`reviewer_key` of a team the forge names by its slug."""
    return "team:" + slug.lower()


@dataclass(frozen=True)
class MergeRules:
    """What the base branch asks before a merge: the status/check contexts branch protection and rulesets require,
    and whether the repository lets the forge merge on its own once they pass (GitHub: "Allow auto-merge")."""

    required: tuple[str, ...] = ()
    auto_merge_allowed: bool = False


@dataclass(frozen=True)
class BranchProtection:
    """A classic branch protection rule (Settings → Branches) as "Get a branch" shows it to anyone with read access:
    whether one applies to the branch, and the status check contexts it requires. Its other settings (a pull request
    required, who may bypass it) are shown only to admins ("Get branch protection")."""

    protected: bool = False
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeploymentEnvironment:
    """A GitHub Environment (Settings → Environments) as its deployment protection rules describe it: the jobs that
    name it wait for one of ``reviewers`` (when any) and ``wait_timer`` minutes."""

    name: str
    reviewers: int = 0  # required reviewers (users or teams); 0: no approval
    wait_timer: int = 0  # minutes


@dataclass(frozen=True)
class WorkflowPermissions:
    """A repository's Settings → Actions → General → Workflow permissions (GitHub's "Get default workflow
    permissions for a repository"): what a workflow's GITHUB_TOKEN gets where the workflow declares no
    ``permissions:`` (``default``: ``read`` or ``write``), and whether that token may create and approve pull
    requests (``can_approve_pull_request_reviews``; off in new repositories)."""

    default: str
    actions_can_create_pulls: bool


# Whom the forge's requests act as: a GitHub App (its installation tokens, minted by fleetflow), an installation token
# given as a token (``ghs_``: a workflow's GITHUB_TOKEN is one), a person's token (``ghp_``, ``github_pat_``,
# ``gho_``, ``ghu_``), a token of no known format, or nobody (the local forge).
CredentialKind = Literal["app", "installation-token", "personal-token", "token", "none"]


class Forge(Protocol):
    """What fleetflow asks of a forge. Implementations: ``GitHubForge``, ``LocalForge``."""

    name: str  # "github" | "local"

    def git_url(self, repo: str) -> str:
        """A URL git can fetch from and push to (with credentials where needed; never printed)."""
        ...

    def default_branch(self, repo: str) -> str: ...

    def statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        """Latest state per context on ``sha``: commit statuses and check runs (completed conclusions mapped:
        success/neutral/skipped → success, failure/timed_out/cancelled/action_required → failure;
        queued/in_progress → pending)."""
        ...

    def status_history(self, repo: str, sha: str) -> list[CommitStatus]:
        """Every commit status posted on ``sha``, oldest first (check runs not included): the record of each
        ``fleetflow/<env>`` decision and when it was made, for the status page and the delivery metrics."""
        ...

    def commit_url(self, repo: str, sha: str) -> str | None:
        """The forge's web page of a commit, or None when the forge has no web pages (the local forge)."""
        ...

    def status_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """The commit statuses of ``sha`` (latest per context), a page at a time, each page one request at most:
        the caller stops reading when it knows enough. The first page carries the totals and the combined state."""
        ...

    def check_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """The check runs of ``sha`` (latest per name, mapped onto states as in ``statuses``), a page at a time."""
        ...

    def set_status(self, repo: str, sha: str, context: str, state: StatusState, description: str,
                   target_url: str | None = None, *, known: Sequence[CommitStatus] | None = None) -> bool:
        """Post a commit status unless the latest one for ``context`` already has this state and description.
        ``known``: the commit's statuses as the caller just read them (no second read). Returns True when
        something was written."""
        ...

    def open_pull(self, repo: str, head: str, base: str) -> PullRequest | None:
        """The open PR from branch ``head`` into ``base``, if any."""
        ...

    def pulls(self, repo: str, head: str, state: Literal["open", "closed", "all"] = "all", *,
              limit: int | None = None) -> list[PullRequest]:
        """PRs whose head branch is ``head``, newest first; the newest ``limit`` only (GitHub: the pages they are
        on, one request for up to 100), else every one (a head fleetflow keeps for years has hundreds closed)."""
        ...

    def create_pull(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        """Open a PR; if one is already open for head → base (e.g. a retried create), return that one."""
        ...

    def update_pull(self, repo: str, number: int, *, title: str | None = None, body: str | None = None,
                    state: Literal["open", "closed"] | None = None) -> PullRequest: ...

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None: ...

    def labels_removed(self, repo: str, number: int) -> set[str]:
        """Every label (lowercased) anyone took off the PR, as the forge's records keep it: a label a person removed
        is not added again. GitHub: the PR's ``unlabeled`` issue events."""
        ...

    def request_reviewers(self, repo: str, number: int, reviewers: list[str]) -> None: ...

    def review_requests_made(self, repo: str, number: int) -> set[str]:
        """Every reviewer (:func:`reviewer_key`) a review of the PR was ever requested from, by anyone: one still
        waiting, one who has reviewed since, one a person took back. GitHub: the PR's ``review_requested`` issue
        events."""
        ...

    def merge_pull(self, repo: str, number: int, *, expected_head: str | None = None) -> str:
        """Merge (merge commit). Returns the merge commit sha. Merging a merged PR returns its sha again.
        ``expected_head``: merge only if the head is still that commit (else a ForgeError with status 409)."""
        ...

    def merge_rules(self, repo: str, branch: str) -> MergeRules:
        """What ``branch`` requires before a merge, and whether the forge may auto-merge there."""
        ...

    def enable_auto_merge(self, repo: str, number: int) -> str | None:
        """Ask the forge to merge the PR itself once the branch's rules are met (merge commit). None when it is
        enabled (or already was); otherwise the forge's reason for refusing (auto-merge not allowed in the
        repository, the PR needs no waiting, ...): the caller then decides itself."""
        ...

    def dispatch(self, repo: str, event_type: str, payload: dict[str, object]) -> None:
        """Fire a repository_dispatch event (the local forge records it)."""
        ...

    def set_default_branch(self, repo: str, branch: str) -> bool:
        """Make the existing ``branch`` the repository's default branch (the one whose workflow files GitHub runs
        for ``status``, ``schedule``, ``workflow_dispatch`` and ``repository_dispatch``). False when it already
        was."""
        ...

    def installation_permissions(self, repo: str) -> dict[str, str] | None:
        """The GitHub App installation's permissions on ``repo`` (``GET /repos/{owner}/{repo}/installation``:
        ``permissions``), or None when the forge does not act as an App (a token, the local forge)."""
        ...

    def auto_merge_allowed(self, repo: str) -> bool | None:
        """Whether the repository lets the forge merge a PR on its own once the branch rules pass (GitHub:
        ``allow_auto_merge``); None when the forge has no such setting (the local forge)."""
        ...

    def deployment_environments(self, repo: str) -> dict[str, DeploymentEnvironment] | None:
        """The repository's GitHub Environments by name (``GET /repos/{owner}/{repo}/environments``); None when
        the forge has none (the local forge)."""
        ...

    def credential_kind(self) -> CredentialKind:
        """What the forge's requests act as (:data:`CredentialKind`); no request."""
        ...

    def workflow_permissions(self, repo: str) -> WorkflowPermissions | None:
        """The repository's GitHub Actions workflow permissions (``GET /repos/{owner}/{repo}/actions/permissions/
        workflow``, which needs Administration: read); None when the forge runs no workflows (the local forge)."""
        ...

    def branch_rules(self, repo: str, branch: str) -> list[BranchRule] | None:
        """The active rules that apply to ``branch`` (which need not exist), each with its ruleset's id; None when
        the forge has no rulesets (the local forge)."""
        ...

    def branch_protection(self, repo: str, branch: str) -> BranchProtection | None:
        """The classic branch protection of the existing ``branch`` (not its rulesets: :meth:`branch_rules`); None
        when the forge has no such rules that decline a push (the local forge)."""
        ...

    def ruleset(self, repo: str, ident: int) -> Ruleset:
        """One ruleset that applies to ``repo`` (its own or its organization's), whole."""
        ...

    def rulesets(self, repo: str, target: str) -> list[Ruleset] | None:
        """The rulesets that apply to ``repo`` and target ``target`` refs (``tag``, ``branch``), the repository's
        own and those of its organization, each with its conditions and rules where it is ``active``; None when
        the forge has no rulesets (the local forge)."""
        ...

    def tried_once(self) -> AbstractContextManager[None]:
        """While inside: every request is tried once, with no retry and no wait for a rate limit's reset; what
        fails raises ForgeError at once (``ForgeError.request.status`` 403 or 429: rate limited). For a caller
        whose next attempt is its own retry and whose deadline must hold: the hold's polls
        (:mod:`fleetflow.promotion.hold`). The local forge never retries or waits: a no-op there."""
        ...

    def close(self) -> None:
        """Release what the forge holds open (GitHub: its HTTP connections). The forge stays usable: what it needs
        is made again on demand. Whoever makes a forge closes it (``contextlib.closing``)."""
        ...
