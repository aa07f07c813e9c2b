"""Merging an environment's PR by the rules (``autoMerge``): the step ``schedule`` and ``reconcile`` both take.

1. The forge's own auto-merge first (GitHub: ``enablePullRequestAutoMerge``): the forge merges once branch
   protection and rulesets are satisfied, with no event and no later run needed.
2. Where the forge refuses it (the repository does not allow auto-merge, or the PR needs no waiting: GitHub's
   "clean status"), fleetflow merges itself, and only when every check on the head is complete and green and every
   context the base branch requires is among them (:func:`merge_verdict`). Otherwise the PR stays open and a later
   run (``fleetflow reconcile``) decides again.

A PR with no completed check is never merged when the branch requires any; a PR with no check at all on a branch
that requires none is merged (nothing to wait for). The merge names the head it checked: if the head moved in
between, the forge refuses (409) and the PR waits for the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from fleetflow.errors import ForgeError
from fleetflow.forge.base import CommitStatus, Forge, PullRequest, context_key
from fleetflow.results import Result

MergeState = Literal["merged", "auto-merge", "waiting", "manual", "closed"]
# GitHub refuses to merge a draft: 405 "Pull Request is still a draft" (alexwlchan/auto_merge_my_pull_requests#1,
# lindell/multi-gitter#622 quote it)
DRAFT = ("a person made it a draft: autoMerge merges it once it is marked ready for review "
         "(GitHub merges no draft)")


class MergeOutcome(Result):
    """What ``merge_if_due`` found and did. ``state``: ``merged`` (now, or earlier), ``auto-merge`` (the forge
    merges it once the rules are met), ``waiting`` (fleetflow will decide again later; ``reason`` says why:
    "waiting for checks: ...", "checks failed: ...", "blocked by the branch rules: ..."), ``manual``
    (``autoMerge`` is off: a person merges), ``closed`` (closed without merging). JSON: ``{state, pullRequest,
    message, reason, mergeCommit}``."""

    state: MergeState
    number: int | None = Field(serialization_alias="pullRequest")  # None: read from a merge record on a forge
    # without pull refs (the local forge), which gives no number
    message: str
    reason: str | None = None
    merge_commit: str | None = None


def merge_verdict(required: Sequence[str], reports: Sequence[CommitStatus]) -> str | None:
    """None when the head may be merged; otherwise why not. Every report (commit status or check run) must be
    complete and green, and every required context must have reported. Contexts compare without case
    (``context_key``): GitHub's "Create a commit status" says the context "is case-insensitive", so a required
    ``CI/build`` is met by a ``ci/build`` status (until 2026-11-29 the PR waited for it for ever)."""
    latest = {context_key(r.context): r for r in reports}
    failing = sorted(r.context for r in latest.values() if r.state in ("failure", "error"))
    if failing:
        return f"checks failed: {', '.join(failing)}"
    running = sorted(r.context for r in latest.values() if r.state == "pending")
    if running:
        return f"waiting for checks: {', '.join(running)}"
    missing = [c for c in required if context_key(c) not in latest]
    if missing:
        return f"waiting for required checks: {', '.join(missing)}"
    return None


def merge_if_due(forge: Forge, repo: str, pr: PullRequest, *, auto_merge: bool) -> MergeOutcome:
    """Take the merge step for ``pr`` if it is due (see the module docstring). Idempotent: a merged PR, or one
    whose auto-merge is on, is left as it is."""
    n = pr.number
    if pr.merged:
        return MergeOutcome(state="merged", number=n, message=f"PR #{n} is merged", merge_commit=pr.merge_commit_sha)
    if pr.state != "open":
        return MergeOutcome(state="closed", number=n, message=f"PR #{n} is closed without merging")
    if not auto_merge:
        return MergeOutcome(state="manual", number=n, message=f"PR #{n} waits for a person to merge it (autoMerge off)")
    if pr.draft:  # no request: GitHub refuses to merge a draft (405 "Pull Request is still a draft")
        return MergeOutcome(state="waiting", number=n, message=f"PR #{n} stays open: {DRAFT}", reason=DRAFT)
    if pr.auto_merge:
        return MergeOutcome(state="auto-merge", number=n,
                            message=f"PR #{n}: auto-merge is on; {forge.name} merges it once the branch rules are met")
    refusal = forge.enable_auto_merge(repo, n)
    if refusal is None:
        return MergeOutcome(state="auto-merge", number=n,
                            message=f"PR #{n}: auto-merge enabled; {forge.name} merges it once the branch rules are "
                            "met")
    return merge_when_green(forge, repo, n, pr.base, pr.head_sha, f"auto-merge unavailable: {refusal}")


def merge_when_green(forge: Forge, repo: str, number: int, base: str, head_sha: str, why_here: str) -> MergeOutcome:
    """fleetflow's own merge of PR ``number`` (into ``base``, at ``head_sha``): only when every check on the head is
    complete and green and every context ``base`` requires reported (:func:`merge_verdict`); else ``waiting``.
    ``why_here``: why fleetflow merges itself (the forge's refusal), for the message. The merge names the head it
    checked. Reads the branch rules and the head's checks (no read of the PR itself)."""
    n = number
    rules = forge.merge_rules(repo, base)
    why = merge_verdict(rules.required, forge.statuses(repo, head_sha))
    if why is not None:
        return MergeOutcome(state="waiting", number=n,
                            message=f"PR #{n} stays open: {why} ({why_here}); a later run merges it", reason=why)
    try:
        sha = forge.merge_pull(repo, n, expected_head=head_sha)
    except ForgeError as exc:
        if exc.request is not None and exc.request.status in (405, 409):  # the head moved, or a rule we cannot see
            reason = f"blocked by the branch rules: {str(exc).splitlines()[0]}"
            if "still a draft" in str(exc).lower():  # made a draft since the PR was read (a merge record's run)
                reason = DRAFT
            if exc.request.status == 409:
                reason = f"the head moved: {str(exc).splitlines()[0]}"
            return MergeOutcome(state="waiting", number=n, message=f"PR #{n} stays open: {reason}", reason=reason)
        raise
    return MergeOutcome(state="merged", number=n, message=f"PR #{n} merged: every check is green", merge_commit=sha)
