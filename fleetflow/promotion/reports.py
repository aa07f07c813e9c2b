"""What the clusters reported on the GitOps commits of a rollout, read no further than the gate's decision needs.

The commits are the first-parent line of the GitOps branch from its tip back to the commit that merged the
rollout, newest first. For each, the first page of commit statuses (GitHub's combined status: the ``state`` and
``total_count`` of every context come with it) and the first page of check runs are read: one request each. When
those counts decide the gate (:func:`fleetflow.promotion.gate.estimate`: too few reports to be complete and no
failure anywhere) nothing more is read. Otherwise the rest is read newest commit first, and reading stops as soon
as the answer is known: an expected cluster whose newest report failed (fail fast), or, when nothing failed
anywhere, one whose newest report is still pending. Only a success needs every page.

Cost on GitHub per check: 2 requests per commit in the run (usually one commit: the merge) while the counts
decide; a full read (``total_count`` / 100 pages per commit) when they cannot.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fleetflow.errors import Problems
from fleetflow.forge.base import CombinedState, CommitStatus, Forge, ReportPage, context_key
from fleetflow.model.durations import format_duration
from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.gate import (
    Counts,
    GateDecision,
    estimate,
    evaluate,
    failure_counted,
    newest_reports,
    reported_count,
    reporters,
)
from fleetflow.render.incremental import ExpectedCluster


@dataclass
class _Commit:
    sha: str
    status_pages: Iterator[ReportPage]
    check_pages: Iterator[ReportPage]
    statuses: list[CommitStatus] = field(default_factory=list)
    checks: list[CommitStatus] = field(default_factory=list)
    status_total: int = 0
    check_total: int = 0
    state: CombinedState = "pending"
    statuses_done: bool = False
    checks_done: bool = False

    def next_status_page(self) -> bool:
        page = next(self.status_pages, None)
        if page is None:
            self.statuses_done = True
            return False
        if not self.statuses:
            self.status_total, self.state = page.total, page.state or "pending"
        self.statuses.extend(page.reports)
        self.statuses_done = len(self.statuses) >= self.status_total or not page.reports
        return True

    def next_check_page(self) -> bool:
        page = next(self.check_pages, None)
        if page is None:
            self.checks_done = True
            return False
        if not self.checks:
            self.check_total = page.total
        self.checks.extend(page.reports)
        self.checks_done = len(self.checks) >= self.check_total or not page.reports
        return True

    def counts(self) -> Counts:
        return Counts(self.state, self.status_total, self.check_total,
                      checks_failed=any(c.state != "success" for c in self.checks), checks_read=self.checks_done)

    @property
    def done(self) -> bool:
        return self.statuses_done and self.checks_done


@dataclass(frozen=True)
class ReportWatch:
    """A gate left pending on missing reports, as the run that decided it read it: the GitOps commits (newest
    first), the policy, the expected clusters and the rollout's start. :func:`counts_decision` looks again at
    the counts alone, with the gate's own rule (``estimate``)."""

    environment: str
    repo: str
    commits: tuple[str, ...]
    policy: RolloutPolicy
    clusters: Sequence[ExpectedCluster]
    started: datetime
    baseline: int  # contexts and check runs on the commits' first pages when the gate was read
    needed: int  # new contexts the gate needs at least before it can succeed (a lower bound: Reading.needed)

    def may_have_changed(self, look: CountsLook) -> bool:
        """Whether the gate may decide otherwise now: a failure, a timeout, or counts that no longer prove it waits
        (enough reports to be complete, or soaking) with at least ``needed`` contexts more than at the reading. The
        last keeps other contexts (a CI status on the GitOps commit counts as one too) from ending a hold early."""
        if look.failure_seen or (look.decision is not None and look.decision.state == "failure"):
            return True
        if look.waits_for_reports:
            return False
        return look.reported - self.baseline >= self.needed


@dataclass(frozen=True)
class CountsLook:
    """What the first pages say: the count rule's decision (None: the counts cannot decide, the reports must be
    read), how many contexts and check runs there are over every commit, and whether any failed."""

    decision: GateDecision | None
    reported: int
    failure_seen: bool

    @property
    def waits_for_reports(self) -> bool:
        """The counts prove the gate still waits for reports (pending, not soaking)."""
        return self.decision is not None and self.decision.waits_for_reports


def counts_decision(forge: Forge, watch: ReportWatch, now: datetime) -> CountsLook:
    """The gate from the first page of each watched commit's statuses and check runs (two requests a commit),
    decided by :func:`fleetflow.promotion.gate.estimate`, the rule that spares a waiting gate from reading every
    page."""
    read, _pages = _first_pages(forge, watch.repo, watch.commits)
    counts = [c.counts() for c in read]
    return CountsLook(estimate(watch.policy, watch.clusters, counts, watch.started, now), reported_count(counts),
                      failure_counted(counts))


def _first_pages(forge: Forge, repo: str, commits: Sequence[str]) -> tuple[list[_Commit], int]:
    """Each commit with the first page of its statuses and of its check runs read, and how many pages that was."""
    read = [_Commit(sha, forge.status_pages(repo, sha), forge.check_pages(repo, sha)) for sha in commits]
    pages = 0
    for commit in read:
        pages += commit.next_status_page() + commit.next_check_page()
    return read, pages


@dataclass
class Reading:
    """The decision and what it cost: pages read, and whether every page of every commit was read."""

    decision: GateDecision
    commits: int
    pages: int
    enumerated: bool
    baseline: int = 0  # contexts and check runs on the commits' first pages, over every commit (0: none read)

    @property
    def needed(self) -> int:
        """How many more contexts must report at least before the gate can succeed: counted when every report was
        read (``GateDecision.new_reports_needed``), else bounded by the counts (each context already in might be
        an expected cluster's)."""
        counted = self.decision.new_reports_needed
        return max(0, self.decision.expected - self.baseline) if counted is None else counted


def read_and_decide(forge: Forge, repo: str, commits: Sequence[str], policy: RolloutPolicy,
                    clusters: Sequence[ExpectedCluster], started: datetime, now: datetime, *,
                    name_missing: bool = True) -> Reading:
    """Decide the gate over ``commits`` (newest first) of ``repo``, reading as few pages as the decision allows.
    Raises InputError (every problem) when the gate is misconfigured.

    Past the ``timeout`` with nothing failed, the gate fails, and a person needs the missing clusters' names: with
    ``name_missing`` every page is read (one full read, as a success costs) and the decision lists them; without
    it the counts decide as while waiting ("at most N/M clusters reported") and the read stops at the first pending
    cluster. Until 2026-11-29 a timeout decided by the counts named no cluster, and one with a cluster still
    pending (Argo CD's syncing trigger) and a context the gate does not watch stayed "rolling out" for ever."""
    problems = Problems()
    expected = reporters(policy, clusters, problems)
    problems.raise_if_any()
    if not expected and (policy.min_clusters or 0) == 0:  # allowEmpty, or a configuration error: nothing to read
        return Reading(evaluate(policy, clusters, {}, started, now), len(commits), 0, False)
    read, pages = _first_pages(forge, repo, commits)

    def decide(upto: int | None = None) -> GateDecision:
        """Over every commit (or, stopping early, the ones up to ``upto``: older ones were only partly read)."""
        chosen = read if upto is None else read[: upto + 1]
        return evaluate(policy, clusters, newest_reports([c.statuses + c.checks for c in chosen]), started, now)

    counts = [c.counts() for c in read]
    baseline = reported_count(counts)
    if all(c.done for c in read):
        return Reading(decide(), len(read), pages, True, baseline)
    timed_out = now - started >= policy.timeout
    guess = estimate(policy, clusters, counts, started, now)
    if guess is not None and not (name_missing and timed_out):
        return Reading(guess, len(read), pages, False, baseline)

    watched = {context_key(r.context): r.cluster for r in expected}
    failure_possible = failure_counted(counts) or not all(c.checks_done for c in read)
    pending_final = not failure_possible and not (name_missing and timed_out)  # a pending report decides alone
    newer: set[str] = set()  # context_keys reported on the commits already read in full (newer than this one)
    for index, commit in enumerate(read):
        while not commit.checks_done and commit.next_check_page():
            pages += 1
        checks = {context_key(c.context): c for c in commit.checks}
        while True:
            early = _final(commit.statuses, checks, newer, watched, pending_final)
            if early is not None and watched:
                decision = decide(index)
                decision.counted, decision.new_reports_needed = False, None  # older commits were not read
                if early == "failure" and decision.failed:
                    decision.state = "failure"
                    decision.description = f"failed: failing: {', '.join(decision.failed)}"
                elif timed_out:  # a cluster still pending past the timeout (not named: name_missing is off)
                    decision.state, decision.ready_at = "failure", None
                    decision.description = (f"timed out after {format_duration(policy.timeout)}: not every one of "
                                            f"{decision.expected} clusters succeeded")
                else:
                    decision.state = "pending"
                    decision.description = f"rolling out: waiting for {decision.expected} clusters"
                    decision.ready_at = None
                return Reading(decision, len(read), pages, False, baseline)
            if commit.statuses_done or not commit.next_status_page():
                break
            pages += 1
        newer.update(context_key(s.context) for s in commit.statuses)
        newer.update(checks)
    return Reading(decide(), len(read), pages, True, baseline)


def _final(statuses: Sequence[CommitStatus], checks: dict[str, CommitStatus], newer: set[str],
           watched: dict[str, str], pending_final: bool) -> str | None:
    """``failure`` when an expected context's newest report (nothing on a newer commit, no newer check run of
    that name here) failed; ``pending`` when one is still pending and that decides (``pending_final``: no failure
    possible anywhere, and not past a timeout whose missing clusters are to be named). Contexts by
    ``context_key`` (``watched``, ``checks`` and ``newer`` are keyed so)."""
    pending = False
    for status in statuses:
        key = context_key(status.context)
        if key not in watched or key in newer:
            continue
        check = checks.get(key)
        state = check.state if check is not None and check.updated_at and status.updated_at \
            and check.updated_at > status.updated_at else status.state
        if state in ("failure", "error"):
            return "failure"
        pending = pending or state == "pending"
    for key, check in checks.items():
        if key in watched and key not in newer and check.state == "failure":
            return "failure"
    return "pending" if pending and pending_final else None
