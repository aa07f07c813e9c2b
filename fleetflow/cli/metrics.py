"""``fleetflow metrics``: lead time, deployment frequency, change failure rate and time to restore, per
environment and for the chain, from the promotion history recorded in git and on the forge."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.delivery.metrics import MetricsReport, rows
from fleetflow.errors import UsageError
from fleetflow.model.durations import parse_duration
from fleetflow.promotion.context import Context
from fleetflow.promotion.history import DEFAULT_LIMIT, read_history
from fleetflow.report import render_report


def parse_since(text: str | None, now: datetime) -> datetime | None:
    """``--since``: a date (2026-01-31), a UTC time (2026-01-31T12:00:00) or a duration back from now (30d, 2w, 12h).

    A bare number is refused (until 2026-11-29 ``--since 30`` meant 30 seconds and ``--since 2026`` 2026 seconds:
    an empty window, exit 0), and so is a start after ``now`` (a mistyped year gave "since 2027-01-01 until
    2026-11-29 (0.0 days)"). Something shaped like a date (digits and dashes) that is none says why."""
    if not text:
        return None
    stripped = text.strip()
    if stripped.isdigit():
        raise UsageError(f"--since {text!r} has no unit: give a duration back from now with its unit ({stripped}d "
                         f"for {stripped} days, {stripped}h for hours) or a date (2026-01-31)")
    when: datetime | None = None
    try:
        when = datetime.fromisoformat(stripped)
    except ValueError as exc:
        if re.fullmatch(r"\d{4}-\d{1,2}(-\d{1,2})?([T ].*)?", stripped):  # a date, but not a valid one
            raise UsageError(f"--since {text!r} is not a date: {exc} (give 2026-01-31 or 2026-01-31T12:00:00Z)"
                             ) from None
    if when is None:
        try:
            days = re.fullmatch(r"(\d+)([dw])", stripped)  # weeks too: "2w" was "invalid duration" (2026-11-29)
            back = (timedelta(days=int(days.group(1)) * (7 if days.group(2) == "w" else 1)) if days
                    else parse_duration(stripped))
            if not back:  # "0d" measured an empty window, exit 0 (until 2026-11-29)
                raise UsageError(f"--since {text!r} is now: the window would hold no promotion; give a duration "
                                 "back from now (30d, 2w, 12h) or a date (2026-01-31)")
            when = now - back
        except OverflowError:  # a timedelta past 999,999,999 days, or a date before year 1
            raise UsageError(f"--since {text!r} goes back further than dates go: give a later date or a shorter "
                             "duration (30d, 12h)") from None
        except (ValueError, TypeError) as exc:  # the durations of YAML's "e.g. 90s, 15m, 1h30m" have no days:
            # until 2026-11-29 "30 days" and "-5d" were told to use them; a duration too long still says so
            why = f": {exc}" if "too long" in str(exc) else ""
            raise UsageError(f"--since {text!r}: give a date (2026-01-31), a time (2026-01-31T12:00:00Z) or a "
                             f"duration back from now, digits then one unit: d, w, h, m or s (30d, 2w, 12h, "
                             f"1h30m){why}") from None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    if when > now:
        raise UsageError(f"--since {text!r} is after now ({now:%Y-%m-%d %H:%M} UTC): the window would hold no "
                         "promotion; give an earlier date, or a duration back from now (30d)")
    return when


@click.command()
@fleet_options
@click.option("--since", help="Only promotions pinned since: a date (2026-01-31), a UTC time, or a duration back "
              "from now with its unit (30d, 2w, 12h); no zone means UTC. Default: the whole history read (--limit "
              "promotions per environment).")
@click.option("--limit", type=click.IntRange(1, 1000), default=DEFAULT_LIMIT, show_default=True,
              help="Promotions read per environment (newest first).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
def metrics(forge: str | None, control_plane: str | None, config: Path | None, since: str | None, limit: int,
            fmt: str) -> None:
    """Lead time, deploy frequency, failure rate, time to restore.

    Delivery metrics per environment and for the whole chain, read from the promotion history in git and on
    the forge; writes nothing. Lead time from a commit landing on main to its success there (median, p90),
    deployment frequency, change failure rate (gate failures and rollbacks over promotions), time to restore
    (failure to the next success). See docs/status-page.md.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow metrics --since 30d
      fleetflow metrics --since 2026-01-01 --format markdown >> "$GITHUB_STEP_SUMMARY"
      fleetflow metrics --forge local --control-plane control-plane.git --since 30d

    Exit 0 done, 2 usage error, 3 forge or git failure (docs/design.md section 6)."""
    with handled(fmt) as reply, make_context(forge, control_plane, config, "json", warn=reply.warn) as ctx:
        now = ctx.clock()
        start = parse_since(since, now)
        history = read_history(ctx, limit)
        report = history.metrics(now, start)
        reply.done({"metrics": report.model_dump(by_alias=True, mode="json"), "statusReads": history.status_reads},
                   lambda: click.echo(render_metrics(report, "md" if fmt == "markdown" else "txt"), nl=False))


def metrics_markdown(ctx: Context, limit: int = DEFAULT_LIMIT) -> str:
    """The delivery metrics over the whole history read, as Markdown (the status-page action's job summary)."""
    history = read_history(ctx, limit)
    return render_metrics(history.metrics(ctx.clock()), "md")


def window_text(report: MetricsReport) -> str:
    start = f"since {report.since:%Y-%m-%d %H:%M} UTC" if report.since else "the whole history read"
    return f"{start} until {report.until:%Y-%m-%d %H:%M} UTC ({report.days:.1f} days)"


def render_metrics(report: MetricsReport, kind: str) -> str:
    return render_report(f"metrics.{kind}.j2", report=report, rows=rows, window=window_text(report))
