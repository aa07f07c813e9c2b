"""``check-rollout``: has the environment rolled out its pinned ``main`` commit? If so, promote it onwards.

Finds the GitOps commits that carry the pinned commit (the run of first-parent commits at the branch tip whose
state.json names it; the oldest is the merge), reads what the clusters reported on every one of them
(fleetflow.promotion.reports: newest report per context, as few pages as the decision needs), decides the gate
(fleetflow.promotion.gate), records the decision as ``fleetflow/<env>`` on the ``main`` commit, and on success
promotes the same commit to every environment that comes after this one and whose other upstreams have also
succeeded (fan-in). A recorded success stands: a later check reads no GitOps status again (it only repeats the
fan-out, which changes nothing when it was done). A run makes no request while waiting for the merge: it decides
and exits; the next event runs it again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import Field, PrivateAttr, computed_field

from fleetflow.errors import Problems
from fleetflow.forge.base import CommitStatus, context_key
from fleetflow.promotion.context import (
    Context,
    Pinned,
    head_branch,
    pinned,
    refuse_foreign_state,
    short,
    status_context,
)
from fleetflow.promotion.gate import GateDecision, reporters
from fleetflow.promotion.promote import SHARDED_SCHEDULE, PromoteOutcome, promote
from fleetflow.promotion.reports import ReportWatch, read_and_decide
from fleetflow.promotion.shards import SHARDS_WORKFLOW, sharded_due
from fleetflow.render.incremental import RenderState
from fleetflow.results import Result


class StrayContext(Result):
    """A context on the rollout's GitOps commits that the gate does not count, close to the context of an expected
    cluster that has no report (``fleetflow.promotion.gate.find_strays``)."""

    cluster: str
    expected_context: str
    context: str
    state: str
    how: str


class ClusterCounts(Result):
    """The gate's view of the clusters: how many it expects, and which succeeded, failed or are missing; and the
    contexts that most likely are missing clusters posting under another name."""

    expected: int
    succeeded: list[str]
    failed: list[str]
    missing: list[str]
    strays: list[StrayContext] = Field(default_factory=list)
    elsewhere: list[str] = Field(default_factory=list)  # at a timeout: missing clusters seen on other commits


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
    # the gate as read, when it was decided from the GitOps reports: what a hold watches (fleetflow.promotion.hold)
    _watch: ReportWatch | None = PrivateAttr(default=None)

    @property
    def watch(self) -> ReportWatch | None:
        return self._watch

    @computed_field  # type: ignore[prop-decorator]
    @property
    def clusters(self) -> ClusterCounts | None:
        d = self.decision
        if d is None:
            return None
        strays = [StrayContext(cluster=s.cluster, expected_context=s.expected, context=s.context, state=s.state,
                               how=s.how) for s in d.strays]
        return ClusterCounts(expected=d.expected, succeeded=d.succeeded, failed=d.failed, missing=d.missing,
                             strays=strays, elsewhere=d.elsewhere)



def _waiting(ctx: Context, environment: str, at: Pinned, tip: str | None) -> str:
    """What the gate waits for when no commit of the GitOps branch carries the pin yet, as far as git tells
    (no API request): the branch is missing; the PR branch carries the pin (its PR awaits a merge, or was closed
    without one); or nothing carries it (the schedule has not pushed it, or failed). Until 2026-11-29 every case
    said "waiting for the PR that carries main@... to be merged", also with no PR and no branch. An environment with
    ``shardedSchedule`` is rendered by its shards workflow only: for it the text says how long its schedule has been
    due and where a failure shows (one request, :func:`~fleetflow.promotion.shards.sharded_due`); until 2026-11-29
    it sent people to ``fleetflow schedule --environment``, which that environment never runs."""
    main_sha, g_repo, g_url, g_branch = at.main_sha, at.gitops_repo, at.gitops_url, at.gitops_branch
    pin = f"main@{short(main_sha)}"
    sharded = at.env_at_pin.spec.sharded_schedule
    if tip is None:
        return (f"waiting for {pin}: {g_repo} has no branch {g_branch}, which its PR is merged into: create it, or "
                "correct the GitOpsRepo's spec.branch on the environment branch")
    head = head_branch(environment)
    head_tip = ctx.git.fetch_branch(g_url, head)
    proposed = ctx.render_state(g_url, head_tip, at.gitops_path) if head_tip is not None else None
    again = (f"running the {SHARDS_WORKFLOW} workflow for {environment} by hand (workflow_dispatch)"
             if sharded else f"`fleetflow schedule --environment {environment}`")
    again += " renders it and proposes it again in a new PR"
    if proposed is not None and proposed.main_commit == main_sha:
        return (f"waiting for the PR from {head} that carries {pin} to be merged into {g_branch} (if it was closed "
                f"without a merge, {again})")
    holds = (f"{head} holds main@{short(proposed.main_commit)}" if proposed is not None and proposed.main_commit
             else f"no branch {head}" if head_tip is None else f"{head} holds no fleetflow render")
    if sharded:
        overdue = Problems()
        due = sharded_due(ctx, at, SHARDED_SCHEDULE, overdue)
        start = f"waiting for {pin} to be proposed to {g_branch}: no PR branch carries it yet ({holds}): "
        if overdue:
            return "".join(f"{start}{p.message}; {p.hint}" for p in overdue)
        return f"{start}{due}; if its run failed, the failed shard or stitch job says why, and {again}"
    return (f"waiting for {pin} to be proposed to {g_branch}: no PR branch carries it yet ({holds}): the schedule of "
            f"{environment} has not pushed it, or it failed (its workflow run says why; {again})")


def check_rollout(ctx: Context, environment: str, *, fan_out: bool = True,
                  name_missing_again: bool = True) -> RolloutOutcome:
    """The gate of ``environment`` at its pin; ``fan_out``: on success promote onwards (reconcile promotes
    downstream itself, forward only). Past the timeout the missing clusters are named, which takes every page of
    reports (``read_and_decide``'s ``name_missing``); ``name_missing_again=False`` (reconcile, which re-evaluates
    a recorded failure on every event) names them only while no failure is recorded: the check that records the
    timeout."""
    at = pinned(ctx, environment, required=False)
    if at is None:
        return RolloutOutcome(environment=environment, main_commit=None, gitops_commit=None, state="pending",
                              description=f"{environment} has no promoted commit yet")
    main_sha, envs_at, policy = at.main_sha, at.envs_at_pin, at.env_at_pin.spec.rollout
    g_repo, g_branch, g_path, g_url = at.gitops_repo, at.gitops_branch, at.gitops_path, at.gitops_url
    tip = ctx.git.fetch_branch(g_url, g_branch)
    run: list[str] = []  # newest first: the tip ... the merge
    before: str | None = None  # the branch's commit before the merge (the previous rollout's, usually)
    tip_state: RenderState | None = None
    if tip is not None:
        for sha in ctx.git.log(g_url, tip, limit=50, first_parent=True):
            state = ctx.render_state(g_url, sha, g_path)
            if not run:  # the tip: another environment's rollout is not this one's
                refuse_foreign_state(at, state)
            if state is None or state.main_commit != main_sha:
                before = sha
                break
            run.append(sha)
            tip_state = tip_state or state
    if not run or tip_state is None:
        text = _waiting(ctx, environment, at, tip)
        ctx.say(f"{environment}: {text}")
        return RolloutOutcome(environment=environment, main_commit=main_sha, gitops_commit=None,
                              state="waiting-for-merge", description=text)
    carrier = run[-1]
    recorded = _recorded(ctx, main_sha)
    mine = next((s for s in recorded if s.context == status_context(environment)), None)
    if mine is not None and mine.state == "success":  # decided once: the statuses are not read again
        recorded_decision = GateDecision("success", mine.description, len(tip_state.clusters), counted=False)
        ctx.say(f"{environment}: gate success (recorded): {mine.description}")
        outcome = RolloutOutcome(environment=environment, main_commit=main_sha, gitops_commit=carrier,
                                 state="success", description=mine.description, decision=recorded_decision)
        if fan_out:
            _fan_out(ctx, environment, main_sha, envs_at, outcome, recorded)
        return outcome
    started = datetime.fromtimestamp(ctx.git.commit_time(g_url, carrier), UTC)
    name_missing = name_missing_again or mine is None or mine.state != "failure"
    reading = read_and_decide(ctx.forge, g_repo, run, policy, tip_state.clusters, started, ctx.clock(),
                              name_missing=name_missing)
    decision = reading.decision
    if decision.state == "failure" and not decision.counted and not decision.failed:
        decision.description += (f"; the missing clusters were named when the gate timed out (reconcile reads "
                                 f"only the counts since): `fleetflow check-rollout --environment {environment}` "
                                 "reads every report and names them")
    if decision.state == "failure" and decision.counted and not decision.failed and decision.missing:
        _reported_elsewhere(ctx, decision, at, run, before, tip_state, environment)
    description = decision.status_description()
    ctx.forge.set_status(ctx.control_plane, main_sha, status_context(environment), decision.state, description,
                         known=recorded)
    ctx.say(f"{environment}: gate for main@{short(main_sha)} {decision.state}: {description}")
    outcome = RolloutOutcome(environment=environment, main_commit=main_sha, gitops_commit=carrier,
                             state=decision.state, description=description, decision=decision)
    outcome._watch = ReportWatch(environment, g_repo, tuple(run), policy, tip_state.clusters, started,
                                 reading.baseline, reading.needed)
    if decision.state == "success" and fan_out:
        now = [s for s in recorded if s.context != status_context(environment)]
        now.append(CommitStatus(status_context(environment), "success", description))
        _fan_out(ctx, environment, main_sha, envs_at, outcome, now)
    return outcome


def _reported_elsewhere(ctx: Context, decision: GateDecision, at: Pinned, run: list[str], before: str | None,
                        state: RenderState, environment: str) -> None:
    """A timeout with clusters missing: did they report on a commit the gate does not read? The PR's head: a
    cluster reconciling the PR's branch (``fleetflow/<env>``) instead of the GitOps branch applies and reports
    there (Flux and Argo CD post on the revision they applied). Merged with a merge commit (fleetflow's own merge),
    the head is the merge's second parent; squashed or rebased (GitHub's "Squash and merge" and "Rebase and merge"
    make new commits on the base branch, and are what auto-merge uses on a repository that allows no merge
    commits) the head is no commit of the branch, and the ``fleetflow/<env>`` branch still holds it when it carries
    the pin (one git fetch; a head branch deleted after the merge is not found). The branch's commit before the
    merge: a cluster that reported the previous rollout and nothing since has not applied this one (its source
    does not fetch, or its reconciler is stuck). The first page of each (two requests, only at a timeout) is read;
    what it shows is added to the decision (``GateDecision.elsewhere``) and its description."""
    repo, url, branch, merge = at.gitops_repo, at.gitops_url, at.gitops_branch, run[-1]
    wanted = {context_key(r.context): r.cluster for r in reporters(at.env_at_pin.spec.rollout, state.clusters,
                                                                   Problems())
              if r.cluster in decision.missing}
    pr_branch = head_branch(environment)
    fix = (f"does it reconcile the PR's branch {pr_branch} instead of {branch}? Point its source (Flux: the "
           f"GitRepository's spec.ref.branch; Argo CD: the Application's targetRevision) at {branch}")
    head = ctx.git.mirror(url).resolve(f"{merge}^2")
    if head is not None:
        places = [(head, f"the PR's head {short(head)}, not on {branch}: {fix}")]
    else:  # squashed or rebased: the PR's head, if its branch still holds it, is not on the branch
        head = ctx.git.fetch_branch(url, pr_branch)
        proposed = ctx.render_state(url, head, at.gitops_path) if head is not None and head not in run else None
        places = [] if head is None or proposed is None or proposed.main_commit != at.main_sha else [
            (head, f"the PR's head {short(head)}, which {branch} took as a squash or rebase (a new commit), so the "
                   f"gate does not read it: {fix}")]
    if before is not None:
        places.append((before, f"{short(before)}, {branch}'s commit before this rollout, and not since: it has not "
                               "applied this rollout (does its source fetch the branch?)"))
    for sha, where in places:
        page = next(ctx.forge.status_pages(repo, sha), None) if wanted else None
        for report in page.reports if page is not None else ():
            cluster = wanted.pop(context_key(report.context), None)
            if cluster is not None:
                decision.elsewhere.append(f"{cluster} reported {report.state} on {where}")
    decision.description += "".join(f"; {note}" for note in sorted(decision.elsewhere))


def _recorded(ctx: Context, sha: str) -> list[CommitStatus]:
    """fleetflow's records on a main commit: its commit statuses (every page; a few contexts, one request)."""
    return [s for page in ctx.forge.status_pages(ctx.control_plane, sha) for s in page.reports]


def _fan_out(ctx: Context, environment: str, sha: str, envs: dict[str, Any], outcome: RolloutOutcome,
             recorded: list[CommitStatus]) -> None:
    downstream = sorted(name for name, e in envs.items() if environment in e.spec.after)
    if not downstream:
        return
    statuses = {s.context: s.state for s in recorded}
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
