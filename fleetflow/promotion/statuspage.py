"""The status page: one self-contained HTML file (inline CSS and SVG, no script, no font, no request) that shows
the environment chain as a graph, each environment's pinned commit, hold, open PR, gate clusters (failed and
missing ones by cluster type), last success and its last promotions, and the delivery metrics with small charts.

Everything is read here (status, history, the gate's clusters at each pin) and handed to the template
``status.html.j2`` as plain dicts and strings; links point at the forge's web pages only when it has them
(GitHub: commits and PRs; the local forge: none, so no dead links).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetflow.delivery.chain import layout
from fleetflow.delivery.metrics import MetricsReport, human_duration, rows
from fleetflow.delivery.records import Promotion
from fleetflow.errors import GitError, InputError, Problems
from fleetflow.forge.base import context_key
from fleetflow.forge.git import CommitInfo
from fleetflow.promotion.context import Context, pinned, short
from fleetflow.promotion.gate import newest_reports, reporters
from fleetflow.promotion.history import DEFAULT_LIMIT, History, read_history
from fleetflow.promotion.status import EnvironmentStatus, fleet_status
from fleetflow.render.incremental import RenderState
from fleetflow.report import render_report

PAGE = "index.html"
CHART_DAYS = 60


def web(url: str | None) -> str | None:
    """Only http(s) URLs become links (the local forge's ``local://`` ones would be dead)."""
    return url if url and url.startswith(("https://", "http://")) else None


def when(value: datetime | None) -> str:
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M} UTC" if value else "–"


@dataclass
class GateClusters:
    expected: int
    succeeded: int
    by_type: list[dict[str, Any]]  # {"clusterType", "failed": [{"name", "description"}], "missing": [names]}


def gate_clusters(ctx: Context, environment: str) -> GateClusters | None:
    """The clusters the gate waits for at the environment's pin, as the gate sees them now (the newest status
    per context across the GitOps commits from the merge that carries the pin to the tip, the gate's rule),
    grouped by cluster type."""
    at = pinned(ctx, environment, required=False)
    if at is None:
        return None
    tip = ctx.git.fetch_branch(at.gitops_url, at.gitops_branch)
    if tip is None:
        return None
    run: list[str] = []  # the first-parent commits from the tip back to the merge, as the gate reads them
    state: RenderState | None = None
    for sha in ctx.git.log(at.gitops_url, tip, limit=50, first_parent=True):
        found = ctx.render_state(at.gitops_url, sha, at.gitops_path)
        if found is None or found.main_commit != at.main_sha:
            break
        run.append(sha)
        state = state or found
    if not run or state is None:
        return None
    latest = newest_reports([ctx.forge.statuses(at.gitops_repo, sha) for sha in run])
    expected = reporters(at.env_at_pin.spec.rollout, state.clusters, Problems())  # the gate reports them
    types = {c.name: c.cluster_type for c in state.clusters}
    by_type: dict[str, dict[str, Any]] = {}
    succeeded = 0
    for reporter in expected:
        status = latest.get(context_key(reporter.context))  # newest_reports keys by context_key
        kind = types.get(reporter.cluster, "")
        group = by_type.setdefault(kind, {"clusterType": kind, "failed": [], "missing": [], "succeeded": 0})
        if status is not None and status.state == "success":
            succeeded += 1
            group["succeeded"] += 1
        elif status is not None and status.state in ("failure", "error"):
            group["failed"].append({"name": reporter.cluster, "description": status.description})
        else:
            group["missing"].append(reporter.cluster)
    return GateClusters(len(expected), succeeded, [by_type[k] for k in sorted(by_type)])


def _commit(ctx: Context, sha: str | None, infos: Mapping[str, CommitInfo]) -> dict[str, Any] | None:
    if not sha:
        return None
    info = infos.get(sha)
    return {"sha": sha, "short": short(sha), "subject": info.subject if info else "",
            "author": info.author if info else "", "url": web(ctx.forge.commit_url(ctx.control_plane, sha))}


def _promotion_row(ctx: Context, p: Promotion) -> dict[str, Any]:
    outcome = "rollback" if p.rollback and p.outcome in ("pending", "superseded") else p.outcome
    return {
        "commit": short(p.commit), "url": web(ctx.forge.commit_url(ctx.control_plane, p.commit)),
        "subject": p.subject, "pinned": when(p.pinned_at), "merged": when(p.merged_at), "decided": when(p.decided_at),
        "outcome": p.outcome, "label": outcome, "rollback": p.rollback, "description": p.description,
    }


def bar_chart(items: Sequence[tuple[str, float | None, float | None]], width: int = 360) -> dict[str, Any]:
    """Horizontal bars (label, median, p90) for lead times: the bar is the median, a tick marks the p90."""
    top = max((v for _, m, p in items for v in (m, p) if v is not None), default=0.0)
    row, label_w = 22, 70
    scale = (width - label_w - 80) / top if top > 0 else 0.0
    bars = []
    for i, (label, median, p90) in enumerate(items):
        bars.append({
            "label": label, "y": i * row + 4, "text_y": i * row + 16,
            "width": round((median or 0) * scale, 1), "p90_x": round(label_w + (p90 or 0) * scale, 1),
            "has_p90": p90 is not None, "value": human_duration(median),
            "value_x": round(label_w + max(median or 0, p90 or 0) * scale + 6, 1),
        })
    return {"width": width, "height": len(items) * row + 8, "label_w": label_w, "bars": bars}


def day_chart(report: MetricsReport, width: int = 360, height: int = 90) -> dict[str, Any]:
    """Promotions per day (successes up, failures and rollbacks stacked on top), from the first day with a
    promotion to the last one (at most CHART_DAYS)."""
    days = [d for d in report.daily]
    busy = [i for i, d in enumerate(days) if d.successes or d.failures]
    days = days[busy[0]: busy[-1] + 1][-CHART_DAYS:] if busy else []
    top = max((d.successes + d.failures for d in days), default=0)
    step = width / max(1, len(days))
    plot = height - 18
    columns = []
    for i, d in enumerate(days):
        ok = plot * d.successes / top if top else 0.0
        bad = plot * d.failures / top if top else 0.0
        columns.append({
            "x": round(i * step + 1, 1), "w": round(max(1.0, step - 2), 1), "ok_y": round(plot - ok, 1),
            "ok_h": round(ok, 1), "bad_y": round(plot - ok - bad, 1), "bad_h": round(bad, 1),
            "title": f"{d.day}: {d.successes} succeeded, {d.failures} failed or rolled back",
        })
    first, last = (str(days[0].day), str(days[-1].day)) if days else ("", "")
    return {"width": width, "height": height, "plot": plot, "columns": columns, "first": first, "last": last,
            "top": top}


def page_context(ctx: Context, entries: Sequence[EnvironmentStatus], history: History, report: MetricsReport,
                 now: datetime) -> dict[str, Any]:
    shas = {e.pinned for e in entries if e.pinned} | {e.last_success for e in entries if e.last_success}
    infos = {c.sha: c for c in ctx.git.commits(ctx.cp_url, sorted(shas), no_walk=True)}
    graph = layout(history.order, history.after)
    by_name = {e.name: e for e in entries}
    cards = []
    for node in graph.nodes:
        e = by_name.get(node.name)
        if e is None:
            continue
        try:
            gate = gate_clusters(ctx, e.name) if e.pinned else None
        except (InputError, GitError):  # a broken branch: its status line says why; the page still shows
            gate = None
        pr = e.pull_request
        cards.append({
            "name": e.name, "after": e.after, "branch": e.branch, "x": node.x, "y": node.y,
            "width": node.width, "height": node.height, "state": e.gate_state if e.gate_state in STATES else "none",
            "pinned": _commit(ctx, e.pinned, infos), "held": e.held, "release_command": e.release_command,
            "gate_state": e.gate_state, "gate_description": e.gate_description, "gitops": e.gitops,
            "pull_request": {"number": pr.number, "title": pr.title, "url": web(pr.url)} if pr else None,
            "last_success": _commit(ctx, e.last_success, infos),
            "gate": {"expected": gate.expected, "succeeded": gate.succeeded, "by_type": gate.by_type} if gate else None,
            "history": [_promotion_row(ctx, p) for p in reversed(history.promotions.get(e.name, []))],
        })
    lead = [(m.environment, m.lead_time.median, m.lead_time.p90) for m in [*report.environments, report.chain]]
    return {
        "title": f"fleetflow status: {ctx.control_plane.rstrip('/').split('/')[-1].removesuffix('.git')}",
        "control_plane": ctx.control_plane, "forge": ctx.forge.name, "generated": when(now),
        "graph": {"width": graph.width, "height": graph.height,
                  "edges": [e.model_dump() for e in graph.edges]},
        "environments": cards, "metrics": rows(report), "lead_chart": bar_chart(lead),
        "day_chart": day_chart(report), "limit": DEFAULT_LIMIT, "status_reads": history.status_reads,
        "window": f"{when(report.since) if report.since else 'the whole history read'} – {when(report.until)}",
    }


STATES = ("success", "failure", "pending", "error", "none")


def write_status_page(ctx: Context, output: Path, limit: int = DEFAULT_LIMIT) -> Path:
    """Write ``output/index.html`` (the folder is created; only that file is written). Returns its path."""
    now = ctx.clock()
    entries = fleet_status(ctx, warn_pins=True)
    history = read_history(ctx, limit, warn_missing=False)  # the status lines warn of a missing branch
    report = history.metrics(now)
    html = render_report("status.html.j2", **page_context(ctx, entries, history, report, now))
    output.mkdir(parents=True, exist_ok=True)
    path = output / PAGE
    tmp = path.with_name(f".{PAGE}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path
