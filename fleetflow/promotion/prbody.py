"""The body of a fleetflow pull request: what a reviewer needs to approve a promotion, under GitHub's limit."""

from __future__ import annotations

from dataclasses import dataclass

from fleetflow.forge.base import PR_MARKER
from fleetflow.model.durations import format_duration
from fleetflow.model.resources import RolloutPolicy
from fleetflow.render.incremental import ExpectedCluster
from fleetflow.render.pipeline import Changes

BODY_LIMIT = 65_536
LIST_LIMIT = 50


@dataclass(frozen=True)
class PullRequestFacts:
    environment: str
    main_commit: str
    env_branch: str
    env_commit: str
    previous_main_commit: str | None
    changes: Changes
    clusters: list[ExpectedCluster]
    rollout: RolloutPolicy
    next_environments: list[str]
    diff: str
    plan_hint: str  # how to see the full plan when the body is cut


def title(facts: PullRequestFacts) -> str:
    return f"fleetflow: promote main@{facts.main_commit[:12]} to {facts.environment}"


def marker(environment: str) -> str:
    return f"{PR_MARKER}{environment} -->"


def _items(title_text: str, items: list[str], limit: int = LIST_LIMIT) -> list[str]:
    if not items:
        return []
    lines = [f"<details><summary>{title_text} ({len(items)})</summary>", ""]
    lines += [f"- `{item}`" for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"- … and {len(items) - limit} more")
    lines += ["", "</details>", ""]
    return lines


def body(facts: PullRequestFacts) -> str:
    c = facts.changes
    gate_clusters = ", ".join(f"`{cl.status_context or cl.name}`" for cl in facts.clusters[:LIST_LIMIT]) or "none"
    if len(facts.clusters) > LIST_LIMIT:
        gate_clusters += f" and {len(facts.clusters) - LIST_LIMIT} more"
    policy = facts.rollout
    expected = (
        f"{policy.min_clusters} clusters" if policy.min_clusters is not None else f"{len(facts.clusters)} clusters"
    )
    previous = f"`{facts.previous_main_commit}`" if facts.previous_main_commit else "nothing yet"
    head = [
        marker(facts.environment),
        f"## Promote `main@{facts.main_commit[:12]}` to **{facts.environment}**",
        "",
        "| | |",
        "|---|---|",
        f"| Environment | `{facts.environment}` |",
        f"| main commit | `{facts.main_commit}` (was {previous}) |",
        f"| `{facts.env_branch}` branch commit | `{facts.env_commit}` |",
        f"| Assignments | {len(c.added)} added, {len(c.changed)} changed, {len(c.removed)} removed, "
        f"{c.unchanged} unchanged |",
        f"| Config keys changed | {len(c.config_keys)} |",
        "",
    ]
    lists = (
        _items("Assignments added", c.added)
        + _items("Assignments removed", c.removed)
        + _items("Assignments changed", c.changed)
        + _items("Config keys changed", c.config_keys)
    )
    nxt = ", ".join(f"`{n}`" for n in facts.next_environments) or "nothing (last environment)"
    gate = [
        "### Gate plan",
        "",
        f"Merging this PR approves the rollout. The clusters reconcile the merge commit; the gate waits for "
        f"{expected} to report success ({gate_clusters}), soaks {format_duration(policy.soak_time)}, and fails "
        f"after {format_duration(policy.timeout)} or on the first failure. On success "
        f"`fleetflow/{facts.environment}` turns green on `{facts.main_commit[:12]}` and the same commit is "
        f"promoted to: {nxt}.",
        "",
    ]
    text = "\n".join(head + lists + gate)
    if facts.diff:
        fence = "````"
        room = BODY_LIMIT - len(text) - 400
        diff = facts.diff
        cut = len(diff) > room
        if cut:
            diff = diff[: max(room, 0)].rsplit("\n", 1)[0] + "\n"
        text += "\n".join([
            "<details><summary>Rendered changes (diff)</summary>",
            "",
            f"{fence}diff",
            diff.rstrip("\n"),
            fence,
            "",
            "</details>",
            "",
        ])
        if cut:
            text += f"\n_The diff is cut to fit in a pull request. Full plan: {facts.plan_hint}_\n"
    if len(text) > BODY_LIMIT:  # lists alone too long: keep the head and the gate
        text = "\n".join(head + gate) + f"\n_Lists cut to fit. Full plan: {facts.plan_hint}_\n"
    return text


def environment_of(pr_body: str) -> str | None:
    """The environment named by a fleetflow PR's hidden marker, or None for other PRs."""
    start = pr_body.find(PR_MARKER)
    if start < 0:
        return None
    rest = pr_body[start + len(PR_MARKER):]
    end = rest.find(" -->")
    return rest[:end] if end > 0 else None
