"""The hold after a reconcile run that left a gate waiting for reports: keep the run (and with it the workflow's
concurrency slot) alive until a deadline, so that the status events of the reports that arrive meanwhile coalesce
into the one pending run, but stop holding as soon as those reports may have changed the gate (the run then
reconciles again itself: :func:`fleetflow.promotion.reconcile.reconcile_holding`).

A rollout's clusters report over minutes, one ``status`` event each. GitHub keeps one running and one pending
run per concurrency group, a newer pending run cancelling the older ("Control the concurrency of workflows and
jobs", GitHub docs), so a run that keeps its slot turns every event of that time into one run. Holding to the
deadline whatever happens delays the last report's gate by up to the whole hold; instead, every ``poll_seconds``
the hold reads the first page of each watched commit's statuses and check runs (GitHub's combined status brings
``state`` and ``total_count``: two requests a commit) and applies the gate's own count rule
(:func:`fleetflow.promotion.gate.estimate`, via :func:`fleetflow.promotion.reports.counts_decision`), then
:meth:`fleetflow.promotion.reports.ReportWatch.may_have_changed`. It ends on a failure or a timeout, or once the
counts no longer prove the gate waits and at least as many contexts are new since the run read them as the gate
still needs (a CI status already on the commit then does not end it).

The deadline holds whatever GitHub does: a poll's requests are tried once (``Forge.tried_once``), because PyGithub
would otherwise retry a 5xx with backoff and sleep out a rate limit until its reset, up to an hour past the
deadline, with the concurrency slot held and the runner billed. A read that fails with a 5xx or a dropped connection
is tried again at the next poll; one that GitHub refuses (403 or 429: the rate limit, or permissions) stops the
polling, and the hold lasts to the deadline, as before it polled (GitHub's "Troubleshooting the REST API": no
request before ``x-ratelimit-reset`` or ``retry-after``; continuing "may result in the banning of your
integration"). The hold only ever saves time: the pending run and the cron tick read everything anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

from fleetflow.errors import FleetflowError, ForgeError
from fleetflow.forge.base import Forge
from fleetflow.promotion.reports import CountsLook, ReportWatch, counts_decision
from fleetflow.results import Result

HoldEnd = Literal["reports", "deadline", "poll-failed"]


class HoldOutcome(Result):
    """How the hold ended: ``reports`` (the counts of ``environment`` may now change its gate: ended early),
    ``deadline`` (held to the end, every gate still waiting), or ``poll-failed`` (a read failed: held to the end
    without looking again). ``seconds``: how long it held; ``polls``: how often it read the counts; ``passes``:
    how often the run reconciled again after a hold ended on the reports (``reconcile_holding`` sums its holds
    into one outcome)."""

    ended: HoldEnd
    seconds: float
    polls: int
    environment: str | None = None
    message: str
    passes: int = 0  # how often the run reconciled again after a hold ended on the reports
    failed_polls: int = 0  # polls whose read failed (tried once each: the next poll is the retry)

    @classmethod
    def of(cls, holds: Sequence[HoldOutcome], passes: int, note: str = "") -> HoldOutcome:
        """One outcome for a run's holds, in order, ``passes`` of which ended in a second pass (the first
        ``passes``); it ended as the last did, and its counts are their sums. ``note``: said at the end."""
        parts = [h.message + ("; reconciled again in this run" if i < passes else "") for i, h in enumerate(holds)]
        end = holds[-1]
        return cls(ended=end.ended, seconds=sum(h.seconds for h in holds), polls=sum(h.polls for h in holds),
                   failed_polls=sum(h.failed_polls for h in holds), environment=end.environment,
                   message="; then ".join(parts) + note, passes=passes)


def refused(error: ForgeError) -> bool:
    """GitHub refused the read: 403 or 429, a rate limit (retries are off: ``Forge.tried_once``) or missing
    permissions. Another poll would be refused too, and against a rate limit it spends requests the next runs
    need, so the hold stops polling. Any other failure (a 5xx, a dropped connection) is tried at the next poll."""
    return error.request is not None and error.request.status in (403, 429)


def first_changed(forge: Forge, watches: Sequence[ReportWatch], now: datetime) -> tuple[ReportWatch, CountsLook] | None:
    """The first watched gate that may decide otherwise now (:meth:`ReportWatch.may_have_changed`), with what its
    counts said (None: every gate still waits). Two requests per watched commit, until one is found; raises
    ForgeError when a read fails."""
    for watch in watches:
        look = counts_decision(forge, watch, now)
        if watch.may_have_changed(look):
            return watch, look
    return None


def hold_while_waiting(forge: Forge, watches: Sequence[ReportWatch], until: float, poll_seconds: float,
                       now: Callable[[], datetime], *, clock: Callable[[], float] = time.time,
                       sleep: Callable[[float], None] = time.sleep,
                       say: Callable[[str], None] = lambda _m: None) -> HoldOutcome:
    """Hold until ``until`` (Unix seconds, on ``clock``), reading the counts of every watched gate each
    ``poll_seconds`` and ending as soon as one may have changed. ``now``: the gate's clock (soak and timeout)."""
    began, polls, failed = clock(), 0, 0
    last_error: ForgeError | None = None
    names = ", ".join(w.environment for w in watches)
    say(f"{names}: waiting for reports; holding the concurrency slot up to {max(until - began, 0):.0f} s, "
        f"reading the counts every {poll_seconds:g} s")
    while True:
        left = until - clock()
        if left <= 0:
            failures = f" ({failed} of {polls} reads of the counts failed, the last: {last_error})" if failed else ""
            return HoldOutcome(ended="deadline", seconds=clock() - began, polls=polls, failed_polls=failed,
                               message=f"held the slot {clock() - began:.0f} s, to the end: {names} still "
                                       f"waiting for reports{failures}")
        sleep(min(poll_seconds, left))
        if clock() >= until:
            continue
        polls += 1
        try:
            with forge.tried_once():  # the next poll is the retry; a wait for a rate limit's reset would overrun
                changed = first_changed(forge, watches, now())
        except FleetflowError as error:
            if isinstance(error, ForgeError) and not refused(error):
                failed, last_error = failed + 1, error
                say(f"reading the counts failed ({error}); trying again in {poll_seconds:g} s")
                continue
            sleep(max(until - clock(), 0))
            return HoldOutcome(ended="poll-failed", seconds=clock() - began, polls=polls, failed_polls=failed + 1,
                               message=f"held the slot {clock() - began:.0f} s, to the end, without reading the "
                                       f"counts again: {error}")
        if changed is not None:
            watch, look = changed
            why = "one failed" if look.failure_seen else (
                look.decision.description if look.decision is not None else "as many as the gate needs")
            return HoldOutcome(ended="reports", seconds=clock() - began, polls=polls, failed_polls=failed,
                               environment=watch.environment,
                               message=f"ended the hold after {clock() - began:.0f} s: {watch.environment} has "
                                       f"{look.reported} reports now ({why})")
