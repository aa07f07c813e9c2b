"""``check-rollout``: has the environment rolled out its pinned ``main`` commit? If so, promote it onwards.

Finds the GitOps commit that carries the pinned commit (the oldest of the run of commits at the branch tip whose
state.json names it: the merged PR), reads the statuses the clusters posted on it and on the branch tip, decides
the gate (fleetflow.promotion.gate), records the decision as ``fleetflow/<env>`` on the ``main`` commit, and on success
promotes the same commit to every environment that comes after this one and whose other upstreams have also
succeeded (fan-in). A run makes no request while waiting: it decides and exits; the next event runs it again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import Field, computed_field

from fleetflow.forge.base import CommitStatus
from fleetflow.promotion.context import Context, pinned, short, status_context
from fleetflow.promotion.gate import GateDecision, evaluate
from fleetflow.promotion.promote import PromoteOutcome, promote
from fleetflow.render.incremental import RenderState
from fleetflow.results import Result


class ClusterCounts(Result):
    """The gate's view of the clusters: how many it expects, and which succeeded, failed or are missing."""

    expected: int
    succeeded: list[str]
    failed: list[str]
    missing: list[str]


class RolloutOutcome(Result):
    """``fleetflow check-rollout``'s result: the gate's decision and the promotions it started."""

    environment: str
    main_commit: str | None
    gitops_commit: str | None
    state: str = Field(serialization_alias="gateState")  # pending | success | failure | waiting-for-merge
    description: str
    decision: GateDecision | None = Field(default=None, exclude=True)
    promoted: list[PromoteOutcome] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def clusters(self) -> ClusterCounts | None:
        d = self.decision
        if d is None:
            return None
        return ClusterCounts(expected=d.expected, succeeded=d.succeeded, failed=d.failed, missing=d.missing)



def _merge_latest(*groups: list[CommitStatus]) -> dict[str, CommitStatus]:
    latest: dict[str, CommitStatus] = {}
    epoch = datetime.min.replace(tzinfo=UTC)
    for group in groups:
        for status in group:
            seen = latest.get(status.context)
            if seen is None or (status.updated_at or epoch) >= (seen.updated_at or epoch):
                latest[status.context] = status
    return latest


def check_rollout(ctx: Context, environment: str, *, fan_out: bool = True) -> RolloutOutcome:
    """The gate of ``environment`` at its pin; ``fan_out``: on success promote onwards (reconcile promotes
    downstream itself, forward only)."""
    at = pinned(ctx, environment, required=False)
    if at is None:
        return RolloutOutcome(environment=environment, main_commit=None, gitops_commit=None, state="pending",
                              description=f"{environment} has no promoted commit yet")
    main_sha, envs_at, policy = at.main_sha, at.envs_at_pin, at.env_at_pin.spec.rollout
    g_repo, g_branch, g_path, g_url = at.gitops_repo, at.gitops_branch, at.gitops_path, at.gitops_url
    tip = ctx.git.fetch_branch(g_url, g_branch)
    carrier: str | None = None
    tip_state: RenderState | None = None
    if tip is not None:
        for sha in ctx.git.log(g_url, tip, limit=50):
            state = ctx.render_state(g_url, sha, g_path)
            if state is None or state.main_commit != main_sha:
                break
            carrier = sha
            tip_state = tip_state or state
    if carrier is None or tip is None or tip_state is None:
        text = f"waiting for the PR that carries main@{short(main_sha)} to be merged into {g_branch}"
        ctx.say(f"{environment}: {text}")
        return RolloutOutcome(environment=environment, main_commit=main_sha, gitops_commit=None,
                              state="waiting-for-merge", description=text)
    started = datetime.fromtimestamp(ctx.git.commit_time(g_url, carrier), UTC)
    groups = [ctx.forge.statuses(g_repo, tip)]
    if carrier != tip:
        groups.insert(0, ctx.forge.statuses(g_repo, carrier))
    decision = evaluate(policy, tip_state.clusters, _merge_latest(*groups), started, ctx.clock())
    description = decision.status_description()
    ctx.forge.set_status(ctx.control_plane, main_sha, status_context(environment), decision.state, description)
    ctx.say(f"{environment}: gate for main@{short(main_sha)} {decision.state}: {description}")
    outcome = RolloutOutcome(environment=environment, main_commit=main_sha, gitops_commit=carrier,
                             state=decision.state, description=description, decision=decision)
    if decision.state == "success" and fan_out:
        _fan_out(ctx, environment, main_sha, envs_at, outcome)
    return outcome


def _fan_out(ctx: Context, environment: str, sha: str, envs: dict[str, Any], outcome: RolloutOutcome) -> None:
    downstream = sorted(name for name, e in envs.items() if environment in e.spec.after)
    if not downstream:
        return
    statuses = {s.context: s.state for s in ctx.forge.statuses(ctx.control_plane, sha)}
    for name in downstream:
        waiting = [u for u in envs[name].spec.after if statuses.get(status_context(u)) != "success"]
        if waiting:
            outcome.skipped.append(f"{name}: waits for {', '.join(waiting)}")
            continue
        result = promote(ctx, name, sha, skip_held=True)
        if result.schedule is None:
            outcome.skipped.append(f"{name}: {result.message}")
        else:
            outcome.promoted.append(result)
