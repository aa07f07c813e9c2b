"""Delivery metrics (the four DORA keys) from promotion records, pure: records + chain + window in, numbers out.

Definitions (docs/status-page.md says the same for readers):

- **Window**: promotions pinned (or, without a recorded pin time, landed on ``main``) at or after ``since``; it
  ends at ``now``. Without ``since`` it starts at the first such promotion of the whole chain, so that every
  environment is measured over the same days.
- **Lead time** of an environment: for every ``main`` commit that succeeded there in the window, its first
  success (``decided_at``) minus when it landed on ``main`` (``landed_at``); a rollback delivers no change and
  is left out. Of the **chain**: a commit counts once
  it succeeded in every last environment (those no environment comes after) of the chain as it was at that
  commit, at the latest of those successes.
  Median and p90 (nearest rank: the smallest value with at least 90 % of the values at or below it).
  A success dated before its commit landed (the forge's clock behind the committer's) measures no delivery: it
  is left out of the median and p90 and listed apart (``lead_times_left_out``), not reported as a negative
  duration.
- **Deployment frequency**: successful promotions, rollbacks included (chain: commits through the whole chain,
  rollbacks not) per day of the window.
- **Change failure rate**: promotions that failed (the gate said ``failure``) or were rollbacks, over the
  promotions that are decided (pending ones are left out until they are, superseded ones for good). Chain: summed
  over environments.
- **Time to restore**: from the first failure of an outage (a gate failure when decided, a rollback when pinned)
  to the next success in that environment; an outage with no success yet is ``open`` and not averaged. Chain:
  every environment's outages together.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta

from pydantic import Field

from fleetflow.delivery.records import Promotion, Record

CHAIN = "chain"


class Summary(Record):
    """A distribution of durations in seconds."""

    count: int = 0
    median: float | None = None
    p90: float | None = None


class LeadTimePoint(Record):
    commit: str
    at: datetime  # when it succeeded
    seconds: float  # negative in ``lead_times_left_out``: by that much the success predates the landing


class DayCount(Record):
    day: date
    successes: int = 0
    failures: int = 0


class Outage(Record):
    started: datetime
    restored: datetime | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.restored is None else (self.restored - self.started).total_seconds()


class EnvironmentMetrics(Record):
    environment: str  # or "chain"
    promotions: int = 0
    decided: int = 0
    failed: int = 0  # decided promotions that failed or were rollbacks (a rolled-back failure counts once)
    successes: int = 0
    gate_failures: int = 0
    rollbacks: int = 0
    lead_time: Summary = Summary()
    deployments_per_day: float | None = None
    change_failure_rate: float | None = None
    time_to_restore: Summary = Summary()
    open_outage_since: datetime | None = None
    lead_times: list[LeadTimePoint] = Field(default_factory=list)
    lead_times_left_out: list[LeadTimePoint] = Field(default_factory=list)  # success dated before the landing
    outages: list[Outage] = Field(default_factory=list)


class MetricsReport(Record):
    since: datetime | None
    until: datetime
    days: float
    environments: list[EnvironmentMetrics]
    chain: EnvironmentMetrics
    daily: list[DayCount]


def p90(values: Sequence[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def summarise(values: Sequence[float]) -> Summary:
    if not values:
        return Summary()
    return Summary(count=len(values), median=float(statistics.median(values)), p90=float(p90(values)))


def _event_time(p: Promotion) -> datetime:
    return p.pinned_at or p.landed_at


def _first_successes(promotions: Iterable[Promotion]) -> dict[str, datetime]:
    """commit → its first success (rollbacks deliver no change: they are left out)."""
    first: dict[str, datetime] = {}
    for p in promotions:
        at = None if p.rollback else p.succeeded_at
        if at is not None and (p.commit not in first or at < first[p.commit]):
            first[p.commit] = at
    return first


def outages(promotions: Sequence[Promotion]) -> list[Outage]:
    """Failure → next success, per environment (``promotions`` of one environment)."""
    events: list[tuple[datetime, bool]] = []  # (when, is_success)
    for p in promotions:
        if p.rollback and p.pinned_at is not None:
            events.append((p.pinned_at, False))
        if p.outcome == "failure" and p.decided_at is not None:
            events.append((p.decided_at, False))
        if p.succeeded_at is not None:
            events.append((p.succeeded_at, True))
    found: list[Outage] = []
    started: datetime | None = None
    for when, success in sorted(events, key=lambda e: (e[0], e[1])):
        if success and started is not None:
            found.append(Outage(started=started, restored=when))
            started = None
        elif not success and started is None:
            started = when
    if started is not None:
        found.append(Outage(started=started))
    return found


def _per_day(count: int, days: float) -> float | None:
    return round(count / days, 4) if days > 0 else None


def _rate(failed: int, decided: int) -> float | None:
    return round(failed / decided, 4) if decided else None


def lead_time_points(successes: Mapping[str, datetime], landed: Mapping[str, datetime]
                     ) -> tuple[list[LeadTimePoint], list[LeadTimePoint]]:
    """commit → success and commit → landing on main: the lead times (by success time), and apart those whose
    success is dated before the landing. A commit is pinned only once it is on main, so such a point is a clock
    skew (the forge's clock behind the committer's), not a delivery: until 2026-11-28 it went into the median and
    p90 as a negative duration (the demo, whose forge clock starts on 2026-01-05: "-327d 7h")."""
    points = sorted(
        (LeadTimePoint(commit=c, at=at, seconds=(at - landed[c]).total_seconds()) for c, at in successes.items()),
        key=lambda point: point.at,
    )
    return [p for p in points if p.seconds >= 0], [p for p in points if p.seconds < 0]


def environment_metrics(name: str, promotions: Sequence[Promotion], days: float) -> EnvironmentMetrics:
    landed = {p.commit: p.landed_at for p in promotions}
    points, skewed = lead_time_points(_first_successes(promotions), landed)
    # a promotion superseded before its gate decided never will be: not decided (until 2026-11-29 it was, and every
    # commit a busy main replaced in dev lowered the change failure rate)
    decided = [p for p in promotions if p.outcome in ("success", "failure") or p.rollback]
    failed = [p for p in decided if p.failed]
    found = outages(promotions)
    restored = [o.seconds for o in found if o.seconds is not None]
    open_since = next((o.started for o in found if o.restored is None), None)
    return EnvironmentMetrics(
        environment=name,
        promotions=len(promotions),
        decided=len(decided),
        failed=len(failed),
        successes=sum(1 for p in promotions if p.outcome == "success"),
        gate_failures=sum(1 for p in promotions if p.outcome == "failure"),
        rollbacks=sum(1 for p in promotions if p.rollback),
        lead_time=summarise([p.seconds for p in points]),
        deployments_per_day=_per_day(sum(1 for p in promotions if p.outcome == "success"), days),
        change_failure_rate=_rate(len(failed), len(decided)),
        time_to_restore=summarise(restored),
        open_outage_since=open_since,
        lead_times=points,
        lead_times_left_out=skewed,
        outages=found,
    )


def last_environments(chain: Mapping[str, Sequence[str]]) -> list[str]:
    """The environments no other environment comes after."""
    upstreams = {u for after in chain.values() for u in after}
    return sorted(name for name in chain if name not in upstreams)


def chain_metrics(chain: Mapping[str, Sequence[str]], per_env: Mapping[str, Sequence[Promotion]],
                  results: Sequence[EnvironmentMetrics], days: float,
                  sinks_at: Mapping[str, Sequence[str]] | None = None) -> EnvironmentMetrics:
    """``sinks_at``: commit → the last environments of the chain as it was at that commit (those of ``chain``
    when not given): an environment added later does not hold back the commits before it. Until 2026-11-29 a
    region added mid-window left every earlier commit out of the chain's lead time and frequency."""
    sinks = last_environments(chain)
    landed: dict[str, datetime] = {}
    for promotions in per_env.values():
        for p in promotions:
            landed[p.commit] = p.landed_at
    needed = set(sinks).union(*(sinks_at or {}).values())
    firsts = {name: _first_successes(per_env.get(name, [])) for name in sorted(needed)}
    through: dict[str, datetime] = {}
    for commit in sorted(set().union(*firsts.values())):
        required = list((sinks_at or {}).get(commit) or sinks)
        if required and all(commit in firsts[name] for name in required):
            through[commit] = max(firsts[name][commit] for name in required)
    points, skewed = lead_time_points(through, landed)
    all_outages = sorted((o for r in results for o in r.outages), key=lambda o: o.started)
    restored = [o.seconds for o in all_outages if o.seconds is not None]
    decided, failed = sum(r.decided for r in results), sum(r.failed for r in results)
    return EnvironmentMetrics(
        environment=CHAIN,
        promotions=sum(r.promotions for r in results),
        decided=decided,
        failed=failed,
        successes=len(points) + len(skewed),
        gate_failures=sum(r.gate_failures for r in results),
        rollbacks=sum(r.rollbacks for r in results),
        lead_time=summarise([p.seconds for p in points]),
        deployments_per_day=_per_day(len(points) + len(skewed), days),
        change_failure_rate=_rate(failed, decided),
        time_to_restore=summarise(restored),
        open_outage_since=next((o.started for o in all_outages if o.restored is None), None),
        lead_times=points,
        lead_times_left_out=skewed,
        outages=all_outages,
    )


def daily_counts(promotions: Iterable[Promotion], start: datetime, end: datetime) -> list[DayCount]:
    """Successes and failures (gate failures and rollbacks) per UTC day, every day of the window."""
    days: dict[date, DayCount] = {}
    day = start.date()
    while day <= end.date():
        days[day] = DayCount(day=day)
        day += timedelta(days=1)
    for p in promotions:
        when = p.decided_at if p.outcome in ("success", "failure") else (p.pinned_at if p.rollback else None)
        if when is None or when.date() not in days:
            continue
        count = days[when.date()]
        if p.failed:
            days[when.date()] = count.model_copy(update={"failures": count.failures + 1})
        elif p.outcome == "success":
            days[when.date()] = count.model_copy(update={"successes": count.successes + 1})
    return list(days.values())


def compute(promotions: Sequence[Promotion], chain: Mapping[str, Sequence[str]], now: datetime,
            since: datetime | None = None, sinks_at: Mapping[str, Sequence[str]] | None = None) -> MetricsReport:
    """The metrics of every environment of ``chain`` (promotion order kept) and of the chain as a whole
    (``sinks_at``: see :func:`chain_metrics`)."""
    window = [p for p in promotions if since is None or _event_time(p) >= since]
    start = since or min((_event_time(p) for p in window), default=now)
    days = max(0.0, (now - start).total_seconds() / 86400)
    per_env: dict[str, list[Promotion]] = {name: [] for name in chain}
    for p in sorted(window, key=_event_time):
        per_env.setdefault(p.environment, []).append(p)
    results = [environment_metrics(name, per_env[name], days) for name in per_env]
    return MetricsReport(
        since=since, until=now, days=round(days, 4), environments=results,
        chain=chain_metrics(chain, per_env, results, days, sinks_at), daily=daily_counts(window, start, now),
    )


# -- for people: the same numbers as short strings (the text, Markdown and HTML reports share them) ----------------


def human_duration(seconds: float | None) -> str:
    """``None`` → "–"; 45 → "45s"; 3660 → "1h 1m"; 2 days 3 hours → "2d 3h"."""
    if seconds is None:
        return "–"
    if seconds < 0:
        return "-" + human_duration(-seconds)
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{value}{unit}" for value, unit in parts if value][:2]
    return " ".join(shown) or "0s"


def human_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.0f}%"


def human_frequency(per_day: float | None) -> str:
    if per_day is None:
        return "–"
    if per_day >= 1 or per_day == 0:
        return f"{per_day:.3g}/day"
    if per_day * 7 >= 1:
        return f"{per_day * 7:.3g}/week"
    return f"{per_day * 30:.2g}/month"


def rows(report: MetricsReport) -> list[dict[str, str]]:
    """One row per environment, then the chain: every metric as a short string."""
    out = []
    for m in [*report.environments, report.chain]:
        out.append({
            "environment": m.environment,
            "promotions": str(m.promotions),
            "lead_median": human_duration(m.lead_time.median),
            "lead_p90": human_duration(m.lead_time.p90),
            "frequency": human_frequency(m.deployments_per_day),
            "failure_rate": human_rate(m.change_failure_rate),
            "failures": f"{m.failed}/{m.decided}",
            "restore": human_duration(m.time_to_restore.median),
            "open": f"since {m.open_outage_since:%Y-%m-%d %H:%M} UTC" if m.open_outage_since else "",
            "left_out": left_out_text(m.lead_times_left_out),
        })
    return out


def left_out_text(skewed: Sequence[LeadTimePoint]) -> str:
    """Why the lead-time columns leave points out, or "" when they leave none."""
    if not skewed:
        return ""
    times = "lead time" if len(skewed) == 1 else "lead times"
    worst = human_duration(-min(p.seconds for p in skewed))
    return (f"{len(skewed)} {times} left out: success dated up to {worst} before the commit landed on main "
            "(the forge's clock and the committer's disagree)")
