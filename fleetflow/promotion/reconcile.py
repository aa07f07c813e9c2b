"""``reconcile``: read the whole state from git and the forge, and take every step that is due.

Level-triggered, as a Kubernetes controller: what happens depends only on the state found, never on which event
woke us, how often, or in what order. Events are hints; a dropped one is caught by the next run (any event, or the
cron tick). For every environment (upstreams first), one step at a time, re-reading after each write:

1. **gate**: the GitOps branch carries the pinned main commit (its PR was merged) and ``fleetflow/<env>`` on that
   commit is not ``success`` yet → run the gate (``check_rollout`` without its fan-out) and record it;
2. **promote**: a first environment whose pin is not ``main``'s tip (and is not held) gets the tip; a downstream
   environment gets the newest commit, newer than its pin, that every upstream records ``success`` on (candidates:
   the upstreams' recent pins). Forward only: reconcile never rolls back; ``promote`` does that by hand;
3. **schedule**: the pin or the environment branch is not what the GitOps branch or the open PR carries (also a
   half-done promotion: pin pushed, schedule failed);
4. **merge**: the PR carries the pin, the environment has ``pullRequest.autoMerge`` and the merge conditions hold.
   The decision is recorded in git (:mod:`merge_records`: the forge's auto-merge is on for the head, or fleetflow
   merges it once its checks are green): later runs see the record with the ``ls-remote`` they make anyway and wait
   at no API cost, except a run that verifies (``verify_merges``: the cron tick) and, for a when-green record, a
   run woken by a status on the head (``rechecks``).

Each step runs at most once per environment and run, so a run ends. Every write is idempotent (compare-and-swap
pushes, deterministic commits, create-or-adopt PRs, statuses skipped when identical), so runs may overlap.
While nothing is due the run reads git refs and, per distinct pinned commit, the control plane's statuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import Field, PrivateAttr, computed_field

from fleetflow.errors import FleetflowError, InputError, Problem, Problems
from fleetflow.forge.base import CommitStatus, PullRequest
from fleetflow.forge.git import PULL_HEADS, heads_of, pull_refs
from fleetflow.model.controlplane import Resource
from fleetflow.model.resources import EnvironmentSpec
from fleetflow.promotion.check_rollout import RolloutOutcome, check_rollout
from fleetflow.promotion.context import Context, Pinned, chain_order, head_branch, pinned, short, status_context
from fleetflow.promotion.hold import HoldOutcome, hold_while_waiting
from fleetflow.promotion.merge_records import (
    MergeRecord,
    RecordKind,
    drop_records,
    read_record,
    record_refs,
    seen_records,
    write_record,
)
from fleetflow.promotion.merging import MergeOutcome, merge_if_due, merge_when_green
from fleetflow.promotion.pin import PIN_FILE, past_pin, promote_command
from fleetflow.promotion.promote import SHARDED_SCHEDULE, PromoteOutcome, promote
from fleetflow.promotion.reports import ReportWatch
from fleetflow.promotion.schedule import (
    PullRequestLink,
    ScheduleOutcome,
    ask_and_label,
    named_warnings,
    schedule_environment,
)
from fleetflow.promotion.shards import sharded_due
from fleetflow.promotion.status import GateRecord
from fleetflow.render.incremental import RenderState
from fleetflow.results import Result

StepName = Literal["gate", "promote", "schedule", "merge"]
PIN_HISTORY = 10  # upstream pins looked at for a downstream candidate (git only)
MAX_CANDIDATES = 5  # candidates whose statuses are read (one request each, only when newer than the pin)


class Step(Result):
    step: StepName
    message: str
    result: RolloutOutcome | PromoteOutcome | ScheduleOutcome | None = None


class Found(Result):
    """What one environment looked like when reconcile last read it."""

    pin: str | None = Field(default=None, serialization_alias="pinnedCommit")
    held: str | None = None
    env_commit: str | None = None
    gitops: str | None = None  # "repo branch"
    gitops_main: str | None = Field(default=None, serialization_alias="gitopsMainCommit")  # what the GitOps tip carries
    gitops_env: str | None = Field(default=None, serialization_alias="gitopsEnvCommit")
    # the main commit the fleetflow/<env> head branch carries
    proposed_main: str | None = Field(default=None, serialization_alias="proposedMainCommit")
    proposed_env: str | None = Field(default=None, serialization_alias="proposedEnvCommit")
    pull_request: PullRequest | None = Field(default=None, exclude=True)
    # git's view: the newest pull request whose refs/pull/<N>/head is the head branch's tip (GitHub keeps that ref)
    pull_ref: int | None = Field(default=None, serialization_alias="pullRequestRef")
    # a PR this run's merge step merged without reading it (a merge record: its number from git); the run's
    # ``merge`` says so in JSON
    merged_pull: int | None = Field(default=None, exclude=True)
    # fleetflow's merge record (merge_records: a tag on the head it was written for), when it was read
    merge_record: MergeRecord | None = None
    # the fleetflow/<env> record on the pin: none, pending, success, failure, error
    gate: str = Field(default="none", exclude=True)
    gate_description: str = Field(default="", exclude=True)

    @computed_field(alias="pullRequest")  # type: ignore[prop-decorator]
    @property
    def pull_request_link(self) -> PullRequestLink | None:
        return PullRequestLink.of(self.pull_request)

    @computed_field(alias="gate")  # type: ignore[prop-decorator]
    @property
    def gate_record(self) -> GateRecord:
        return GateRecord(state=self.gate, description=self.gate_description)

    def summary(self) -> str:
        if self.pin is None:
            return "not promoted yet"
        parts = [f"pinned to main@{short(self.pin)}"]
        if self.held:
            parts.append(f"held ({self.held})")
        if self.gitops:
            parts.append(f"GitOps {self.gitops} carries main@{short(self.gitops_main)}")
        if self.pull_request is not None:
            state = "merged" if self.pull_request.merged else self.pull_request.state
            parts.append(f"PR #{self.pull_request.number} {state}")
        elif self.merged_pull is not None:
            parts.append(f"PR #{self.merged_pull} merged")
        elif self.pull_ref is not None:
            parts.append(f"PR #{self.pull_ref} proposes it (git)")
        parts.append(f"gate {self.gate}" + (f": {self.gate_description}" if self.gate_description else ""))
        return "; ".join(parts)


class EnvironmentReconcile(Result):
    environment: str
    found: Found = Field(default_factory=Found)
    did: list[Step] = Field(default_factory=list)
    waiting: str = ""  # what the environment waits for when nothing is due
    merge: MergeOutcome | None = None  # the merge step's outcome in this run (merged, auto-merge, waiting, ...)
    problems: list[Problem] = Field(default_factory=list)
    # what the run warns of without failing (a sharded schedule due for too long): the envelope's warnings
    warnings: list[Problem] = Field(default_factory=list, exclude=True)
    # the step this run was taking when ``problems`` stopped it ("promote main@abc"): what ``found`` cannot say (it
    # was read before the step, whose writes before the failure stand; the next run finishes it)
    stopped_in: str = ""
    exit_code: int = Field(default=0, exclude=True)
    _pull: PullRequest | None = PrivateAttr(default=None)  # the PR a step of this run wrote or read
    _closed: bool = PrivateAttr(default=False)  # the PR was found closed without merging in this run
    _earlier: int = PrivateAttr(default=0)  # how many of ``did`` are earlier passes' steps (reconcile_holding)

    def after(self, earlier: list[Step]) -> EnvironmentReconcile:
        """This pass's result with the steps of the run's earlier passes in front (``did``); what it waits for is
        still this pass's alone (``waits_for_reports``, ``report_watch``)."""
        merged = self.model_copy(update={"did": [*earlier, *self.did]})
        merged._earlier = len(earlier)
        return merged

    def merged_step(self, outcome: MergeOutcome | None, pull: PullRequest | None) -> None:
        """Keep what a schedule (or promote) step of this run found about the PR and its merge step."""
        if outcome is not None:
            self.merge = outcome
        if pull is not None:
            self._pull = as_merged(pull, outcome)

    def wait(self, text: str) -> None:
        self.waiting = f"{self.waiting}; {text}" if self.waiting and text not in self.waiting else text

    @property
    def waits_for_reports(self) -> bool:
        """This run left the gate pending because clusters have not all reported yet (not soaking, not failed):
        more status events are coming, and none can change the gate until the count is complete."""
        gate = self._last_gate()
        decision = gate.decision if gate is not None else None
        return decision is not None and decision.waits_for_reports

    @property
    def report_watch(self) -> ReportWatch | None:
        """The gate this run left waiting for reports, as it read it (None when it does not wait for reports)."""
        gate = self._last_gate()
        return gate.watch if gate is not None and self.waits_for_reports else None

    def _last_gate(self) -> RolloutOutcome | None:
        """The last gate this pass took (not an earlier pass's: a pass that took none, or failed, left none)."""
        gates = [s.result for s in self.did[self._earlier:]
                 if s.step == "gate" and isinstance(s.result, RolloutOutcome)]
        return gates[-1] if gates else None


class StalePull(Result):
    """An open PR from ``fleetflow/<environment>`` for an environment main no longer defines (removed or renamed):
    fleetflow neither updates, gates nor merges it any more."""

    environment: str
    repo: str
    number: int
    url: str = ""
    base: str = ""

    def problem(self, main_commit: str) -> Problem:
        where = f" ({self.url})" if self.url else ""
        return Problem(
            f"{self.repo}: PR #{self.number}{where} from {head_branch(self.environment)} into {self.base} is still "
            f"open, and main@{short(main_commit)} does not define environment {self.environment} any more "
            "(removed or renamed): merging it would deploy a render no gate follows", None,
            f"close it and delete the branch {head_branch(self.environment)} if {self.environment} is gone for good; "
            f"or define {self.environment} on main again",
        )


class ReconcileOutcome(Result):
    """``fleetflow reconcile``'s result: per environment, what it found and the steps it took."""

    main_commit: str
    environments: list[EnvironmentReconcile]
    hold: HoldOutcome | None = None  # --hold-until: how the run held the concurrency slot afterwards
    # open PRs of environments main no longer defines, in the GitOps repos this run read (a run over every one)
    stale_pulls: list[StalePull] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def waiting_for_reports(self) -> list[str]:
        """The environments whose gate this run left pending on missing reports. The gitops workflow holds its
        concurrency slot for a while then (``hold-seconds``), so the status events of those reports coalesce into
        one pending run instead of starting one run each (docs/setup.md, "3. Add the workflows"); the run keeps what it
        read (``report_watch``) so that the hold can end early (fleetflow.promotion.hold)."""
        return [e.environment for e in self.environments if e.waits_for_reports]

    @property
    def exit_code(self) -> int:
        return max((e.exit_code for e in self.environments), default=0)

    def warnings(self) -> list[Problem]:
        """What the renders of the schedules this run took (also inside a promotion) warned of."""
        scheduled = (s.result.schedule if isinstance(s.result, PromoteOutcome) else s.result
                     for e in self.environments for s in e.did
                     if isinstance(s.result, (PromoteOutcome, ScheduleOutcome)))
        return [*named_warnings(scheduled), *(w for e in self.environments for w in e.warnings),
                *(p.problem(self.main_commit) for p in self.stale_pulls)]

    def report_watches(self) -> list[ReportWatch]:
        """The gates this run left waiting for reports, as it read them (what a hold watches)."""
        return [w for w in (e.report_watch for e in self.environments) if w is not None]


@dataclass
class _View:
    """One environment as read now: the facts the decision needs."""

    found: Found
    at: Pinned | None
    tip_state: RenderState | None = None
    auto_merge: bool = False
    head_sha: str | None = None  # the tip of fleetflow/<env> in the GitOps repo
    sharded: bool = False  # shardedSchedule: shard jobs and a stitch job render it, never this run
    records: dict[str, str] = field(default_factory=dict)  # the merge record refs as listed (for compare-and-swap)


class _Run:
    """One reconcile run: caches of the control plane's statuses per commit (dropped after every write)."""

    def __init__(self, ctx: Context, verify_merges: bool = False, rechecks: Collection[str] = ()) -> None:
        self.ctx = ctx
        self.verify_merges = verify_merges  # read the PR even where a merge record says auto-merge is on
        self.rechecks = frozenset(rechecks)  # heads whose checks changed (a status event): when-green records re-read
        self._statuses: dict[str, dict[str, CommitStatus]] = {}
        self.found: dict[str, Found] = {}  # each environment as last read in this run
        self.gitops: dict[str, str] = {}  # the GitOps repos read: git URL -> repository

    def statuses(self, sha: str) -> dict[str, CommitStatus]:
        if sha not in self._statuses:
            self._statuses[sha] = {s.context: s for s in self.ctx.forge.statuses(self.ctx.control_plane, sha)}
        return self._statuses[sha]

    def wrote(self) -> None:
        self._statuses.clear()



def _observe(run: _Run, name: str, envs: dict[str, Resource[EnvironmentSpec]]) -> _View:
    ctx = run.ctx
    env = ctx.environment(envs, name)
    branch = ctx.env_branch(env)
    env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
    if env_sha is None:
        # deleted (GitHub's "Automatically delete head branches" after a PR from it was merged, a push --delete) or
        # never made: the pin and the environment's files are gone. Until 2026-11-29 the run said "not promoted
        # yet, nothing due" and exited 0.
        raise InputError([Problem(
            f"environment {name}: branch {branch!r} does not exist in the control-plane repo {ctx.control_plane}",
            None, f"push it back at its last commit (the deletion's push event names it as 'before'), or create "
            f"it with the environment's files; fleetflow writes {PIN_FILE} there",
        )])
    pin = ctx.pin(env_sha, branch)
    found = run.found[name] = Found(pin=pin.commit, held=pin.hold, env_commit=env_sha)
    if pin.commit is None:
        return _View(found, None)
    at = pinned(ctx, name, required=True)
    assert at is not None
    found.pin = at.main_sha
    found.gitops = f"{at.gitops_repo} {at.gitops_branch}"
    run.gitops.setdefault(at.gitops_url, at.gitops_repo)
    heads = ctx.git.fetch(at.gitops_url, [at.gitops_branch, head_branch(name)])
    tip_state = ctx.render_state(at.gitops_url, heads[at.gitops_branch], at.gitops_path)
    head_state = ctx.render_state(at.gitops_url, heads[head_branch(name)], at.gitops_path)
    if tip_state is not None:
        found.gitops_main, found.gitops_env = tip_state.main_commit, tip_state.env_commit
    if head_state is not None:
        found.proposed_main, found.proposed_env = head_state.main_commit, head_state.env_commit
    head_sha = heads[head_branch(name)]
    auto_merge = at.env_at_pin.spec.pull_request.auto_merge
    if head_sha is not None and head_state is not None and not (
            tip_state is not None and (tip_state.main_commit, tip_state.env_commit) == (
                head_state.main_commit, head_state.env_commit)):
        # one ls-remote: GitHub's pull refs and fleetflow's merge records (no API request)
        refs = ctx.git.remote_refs(at.gitops_url, [PULL_HEADS, *record_refs(name)])
        found.pull_ref = next(iter(heads_of(pull_refs(refs), head_sha)), None)
        records: dict[str, str] | None = seen_records(refs, name)
    else:
        records = None
    if found.gitops_main == at.main_sha:
        if _taken_downstream(ctx, name, envs, at.main_sha):
            found.gate, found.gate_description = "success", "every next environment was promoted to it"
        else:
            record = run.statuses(at.main_sha).get(status_context(name))
            if record is not None:
                found.gate, found.gate_description = record.state, record.description
    if records is None and auto_merge and found.gate != "success" and found.gitops_main == at.main_sha \
            and found.gitops_env == found.env_commit:
        # merged, the gate is due: a record left from the wait is removed (_settle_record); one ls-remote per
        # gate run, none once the gate succeeded
        records = seen_records(ctx.git.remote_refs(at.gitops_url, record_refs(name)), name)
    found.merge_record = read_record(records or {}, name)
    spec = at.env_at_pin.spec
    return _View(found, at, tip_state, auto_merge, head_sha, spec.sharded_schedule, records or {})


def _taken_downstream(ctx: Context, name: str, envs: dict[str, Resource[EnvironmentSpec]], main_sha: str) -> bool:
    """Every environment after ``name`` is pinned to ``main_sha`` (git only). ``promote`` pins an environment only
    when each of its upstreams records ``success`` on the commit, so ``name``'s gate for it was decided: its record
    need not be read. False for the last environments of the chain (they have no next one)."""
    nexts = [n for n, e in envs.items() if name in e.spec.after]

    def pinned_there(env: str) -> bool:
        branch = ctx.env_branch(envs[env])
        try:
            commit = ctx.pin(ctx.git.fetch_branch(ctx.cp_url, branch), branch).commit
        except InputError:  # that environment's pin does not read: its own reconcile says so; here, not pinned
            return False
        return commit is not None and (commit == main_sha or ctx.git.resolve(ctx.cp_url, commit) == main_sha)

    return bool(nexts) and all(pinned_there(n) for n in nexts)


def _carried(view: _View) -> bool:
    """The GitOps branch carries the pin and the environment branch (merged, or nothing rendered changed)."""
    f = view.found
    return f.gitops_main == f.pin and f.gitops_env == f.env_commit


def _proposed(view: _View) -> bool:
    f = view.found
    return f.proposed_main == f.pin and f.proposed_env == f.env_commit


def _recent_pins(ctx: Context, envs: dict[str, Resource[EnvironmentSpec]], name: str) -> list[str]:
    """The main commits ``name`` was pinned to lately, newest first (git only)."""
    env_sha = ctx.git.fetch_branch(ctx.cp_url, ctx.env_branch(envs[name]))
    if env_sha is None:
        return []
    pins: list[str] = []
    for sha in ctx.git.log(ctx.cp_url, env_sha, PIN_FILE, limit=PIN_HISTORY):
        commit = past_pin(ctx.git.read_bytes(ctx.cp_url, sha, PIN_FILE)).commit
        if commit and commit not in pins:
            pins.append(commit)
    return pins


def _promotion_due(run: _Run, name: str, envs: dict[str, Resource[EnvironmentSpec]], main_tip: str,
                   found: Found) -> str | None:
    """The main commit ``name`` should move to now, or None. Forward only: a candidate must be newer than the pin."""
    ctx = run.ctx
    after = envs[name].spec.after

    def newer(candidate: str) -> bool:
        if candidate == found.pin:
            return False
        return found.pin is None or not ctx.git.is_ancestor(ctx.cp_url, candidate, found.pin)

    if not after:
        return main_tip if newer(main_tip) else None
    candidates: list[str] = []
    for upstream in after:
        seen = run.found.get(upstream)
        for commit in _recent_pins(ctx, envs, upstream):
            sha = ctx.git.resolve(ctx.cp_url, commit)
            if seen is not None and sha == seen.pin and seen.gitops_main != seen.pin:
                continue  # the upstream has not even merged it (read in this run): no record to look for
            if sha and sha not in candidates and newer(sha) and ctx.git.is_ancestor(ctx.cp_url, sha, main_tip):
                candidates.append(sha)
    candidates.sort(key=lambda sha: ctx.git.commit_time(ctx.cp_url, sha), reverse=True)
    for sha in candidates[:MAX_CANDIDATES]:
        # the Environment as this commit defines it decides who is upstream (what promote re-checks). A commit
        # from before the environment was added (or renamed to this name) is not promoted to it: the new chain
        # applies from the commit that defines it (until 2026-11-29 promote refused it as "unknown environment"
        # on every run, until the upstream rolled out a commit that defines it)
        defined = ctx.environments(sha).get(name)
        if defined is None:
            continue
        upstreams = defined.spec.after
        records = run.statuses(sha)
        if all((s := records.get(status_context(u))) is not None and s.state == "success" for u in upstreams):
            return sha
    return None


def reconcile_environment(run: _Run, name: str, main_tip: str) -> EnvironmentReconcile:
    ctx = run.ctx
    result = EnvironmentReconcile(environment=name)
    done: set[StepName] = set()
    view: _View | None = None
    try:
        envs = ctx.current_environments(main_tip)
        for _ in range(6):
            view = _observe(run, name, envs)
            result.found = run.found[name] = view.found
            known = result._pull
            if view.found.pull_request is None and known is not None and (
                    known.merged or (known.state == "open" and known.head_sha == view.head_sha)):
                view.found.pull_request = known  # what a step of this run wrote or merged: not read again
            elif view.found.pull_request is None and result.merge is not None and result.merge.state == "merged":
                view.found.merged_pull = result.merge.number
            step = _next_step(run, name, envs, main_tip, view, done, result)
            result.stopped_in = ""  # the step (if any) was taken
            if step is None:
                break
            done.add(step.step)
            result.did.append(step)
            if not _said(step.result):  # once, not twice
                ctx.say(f"{name}: {step.message}")
        if view is not None:
            _settle_record(run, name, view, result)
    except FleetflowError as error:
        # what was read before the error (a pin that is not on main is still the pin): not "not promoted yet"
        result.found = run.found.get(name, result.found)
        result.problems = error.problems()
        result.exit_code = error.exit_code
        ctx.say(f"{name}: {'; '.join(str(p) for p in result.problems)}")
    return result


def _said(result: RolloutOutcome | PromoteOutcome | ScheduleOutcome | None) -> bool:
    """The run's narration already has what a step did: a schedule's PR line (``ScheduleOutcome.said``), and for a
    promotion also its pin line (pinned now, not held: a hold is said only in the step's message)."""
    if isinstance(result, ScheduleOutcome):
        return result.said
    if isinstance(result, PromoteOutcome):
        return result.pinned and not result.held and result.schedule is not None and result.schedule.said
    return False


def _next_step(run: _Run, name: str, envs: dict[str, Resource[EnvironmentSpec]], main_tip: str, view: _View,
               done: set[StepName], result: EnvironmentReconcile) -> Step | None:
    """Decide the next due step for one environment and take it (None: nothing is due)."""
    ctx, f, at = run.ctx, view.found, view.at
    # 1. the gate, when the GitOps branch carries the pin and no success is recorded yet
    if at is not None and "gate" not in done and f.gitops_main == f.pin and f.gate != "success":
        result.stopped_in = f"gate of main@{short(f.pin)}"
        gate = check_rollout(ctx, name, fan_out=False, name_missing_again=False)
        run.wrote()
        return Step(step="gate", message=f"gate {gate.state}: {gate.description}", result=gate)
    # 2. promotion: the newest commit this environment may have, newer than its pin
    if "promote" not in done:
        target = _promotion_due(run, name, envs, main_tip, f)
        if target is not None:
            if f.held:
                # the workflows' run says how to end the hold (until 2026-11-29 only a promotion by hand said it)
                result.wait(f"held ({f.held}); main@{short(target)} is due but not promoted; to release: "
                            f"{promote_command(name, short(target), release=True)}")
            else:
                result.stopped_in = f"promote main@{short(target)}"
                outcome = promote(ctx, name, target, skip_held=True)
                run.wrote()
                if outcome.schedule is not None:
                    result.merged_step(outcome.schedule.merge, outcome.schedule.pull)
                    if outcome.schedule.merge is not None:
                        done.add("merge")
                return Step(step="promote", message=outcome.message, result=outcome)
    if at is None:
        result.wait("nothing promoted here yet")
        return None
    if not _carried(view) and name not in at.envs_at_pin:
        result.wait(_renamed_wait(ctx, name, at, envs))
        return None
    if not _carried(view):
        return _propose_and_merge(run, name, view, done, result)
    if f.gitops_main == f.pin:
        result.wait({
            "success": f"main@{short(f.pin)} rolled out",
            "failure": f"main@{short(f.pin)} failed its gate: {f.gate_description}",
            "error": f"main@{short(f.pin)} failed its gate: {f.gate_description}",
        }.get(f.gate, f"the clusters roll out main@{short(f.pin)}: {f.gate_description}".rstrip(": ")))
    return None


def _renamed_wait(ctx: Context, name: str, at: Pinned, envs: dict[str, Resource[EnvironmentSpec]]) -> str:
    """``name`` is pinned to a commit that does not define it (renamed on main, its branch kept, while that commit
    was on its way): that commit cannot be rendered under the new name (its workloads name the old one). Until
    2026-11-29 every run tried, and failed with "unknown environment" and the hint that main defines the old name.
    The PR the old name opened, if still open, is named (one request, only in this state)."""
    old = sorted(n for n, e in at.envs_at_pin.items() if ctx.env_branch(e) == at.branch)
    text = f"pinned to main@{short(at.main_sha)}, which does not define {name}"
    if old:
        text += f" (it names branch {at.branch}'s environment {old[0]}: renamed since)"
    upstreams = envs[name].spec.after
    text += (f"; not scheduled under the new name: {name} gets the first commit that defines it once "
             f"{', '.join(upstreams)} rolled it out" if upstreams else "")
    if old:
        pr = ctx.forge.open_pull(at.gitops_repo, head_branch(old[0]), at.gitops_branch)
        if pr is not None:
            text += (f"; PR #{pr.number} from {head_branch(old[0])} is still open under the old name: merge it (the "
                     f"gate of {name} then reads its rollout) or close it")
    return text


def _propose_and_merge(run: _Run, name: str, view: _View, done: set[StepName],
                       result: EnvironmentReconcile) -> Step | None:
    """Steps 3 and 4 for an environment whose GitOps branch does not carry its pin and environment branch.

    While waiting for a merge, git alone decides when it can: the head branch proposes exactly the pin and the
    environment branch, and the forge's ``refs/pull/<N>/head`` is that head (a PR was made for it), so a person
    merges it (``autoMerge`` off) and no API request is made. Anything else (no such ref: a half-done promotion,
    or a forge that keeps no pull refs; ``autoMerge`` on: fleetflow's merge step) reads the PR from the API."""
    ctx, f, at = run.ctx, view.found, view.at
    assert at is not None
    policy = at.env_at_pin.spec.pull_request
    # the cron tick (verify_merges) reads the PR of an environment whose policy labels its PRs or asks reviewers:
    # a run that opened it and stopped before its labels or review requests (GitHub refused them) left nothing git
    # shows
    if _proposed(view) and f.pull_ref is not None and not view.auto_merge and f.pull_request is None \
            and not (run.verify_merges and (policy.labels or policy.reviewers)):
        result.wait(f"PR #{f.pull_ref} proposes main@{short(f.pin)} and is not merged: a person merges it "
                    "(autoMerge off); if it was closed without merging, promote again or push the environment "
                    "branch to propose it anew")
        return None
    record = f.merge_record
    if _proposed(view) and view.auto_merge and f.pull_request is None and "merge" not in done \
            and record is not None and record.head == view.head_sha and not run.verify_merges:
        which = f"PR #{f.pull_ref}" if f.pull_ref is not None else f"the PR from {head_branch(name)}"
        at_head = f"{head_branch(name)}@{short(view.head_sha)}"
        if record.kind == "auto-merge":
            return _merge_step(run, result, MergeOutcome(
                state="auto-merge", number=f.pull_ref, message=f"{which}: auto-merge is on (recorded in git for "
                f"{at_head}); {ctx.forge.name} merges it once the branch rules are met"))
        if view.head_sha not in run.rechecks:
            return _merge_step(run, result, MergeOutcome(
                state="waiting", number=f.pull_ref, message=f"{which} waits for its checks (recorded in git for "
                f"{at_head}: {ctx.forge.name}'s auto-merge unavailable); a status on the head or the cron tick "
                "checks again", reason="waiting for checks (recorded)"))
        if f.pull_ref is not None:  # a status on the head: decide from its checks, the PR need not be read
            done.add("merge")
            result.stopped_in = f"merge PR #{f.pull_ref}"
            return _merge_step(run, result, merge_when_green(
                ctx.forge, at.gitops_repo, f.pull_ref, at.gitops_branch, view.head_sha,
                "auto-merge unavailable (recorded in git)"))
    if f.pull_request is None and _proposed(view):
        f.pull_request = ctx.forge.open_pull(at.gitops_repo, head_branch(name), at.gitops_branch)
    pr = f.pull_request
    if pr is None and "schedule" not in done:
        if _proposed(view) and _closed_by_hand(ctx, at, name):
            result._closed = True
            result.wait(f"the PR for main@{short(f.pin)} was closed without merging; promote or push the "
                        "environment branch to propose it again")
            return None
        if view.sharded:
            overdue = Problems()  # until 2026-11-29 "schedule due" on every run, for days, exit 0 and no word
            result.wait(sharded_due(ctx, at, SHARDED_SCHEDULE, overdue))
            result.warnings.extend(Problem(f"{name}: {p.message}", p.location, p.hint) for p in overdue)
            return None
        result.stopped_in = f"schedule main@{short(at.main_sha)} + {at.branch}@{short(at.env_sha)}"
        scheduled = schedule_environment(ctx, name)  # a PR a person closed stays closed (its head branch deleted too)
        if scheduled.operation == "rejected":
            result._closed = True
            result.wait(scheduled.message)
            return None
        run.wrote()
        result.merged_step(scheduled.merge, scheduled.pull)
        if scheduled.merge is not None:
            done.add("merge")  # schedule took the merge step on the PR it wrote
        return Step(step="schedule", message=scheduled.message, result=scheduled)
    if pr is None or pr.state != "open":
        return None
    if "merge" in done:
        if result.merge is not None and result.merge.state != "merged":
            result.wait(result.merge.message)
        return None
    result._pull = pr
    refused = Problems()
    wrote = ask_and_label(ctx, at.gitops_repo, name, at.env_at_pin, pr, refused)
    for problem in refused:
        ctx.say(f"{name}: warning: {problem}")
    if wrote:
        run.wrote()
    result.stopped_in = f"merge PR #{pr.number}"
    return _merge_step(run, result, merge_if_due(ctx.forge, at.gitops_repo, pr, auto_merge=view.auto_merge))


def as_merged(pull: PullRequest, outcome: MergeOutcome | None) -> PullRequest:
    """``pull`` as the forge has it after ``outcome``: merged (GitHub: ``state`` closed, ``merged`` true) when the
    merge step merged it. Until 2026-11-28 the PR kept the state it had before the merge, and the run's summary said
    "PR #N open" right after merging it."""
    if outcome is None or outcome.state != "merged" or pull.merged:
        return pull
    return replace(pull, state="closed", merged=True, merge_commit_sha=outcome.merge_commit or pull.merge_commit_sha)


def _merge_step(run: _Run, result: EnvironmentReconcile, outcome: MergeOutcome) -> Step | None:
    """Keep the merge step's ``outcome``: a merge is this run's step (a write); anything else is what it waits for."""
    result.merge = outcome
    if result._pull is not None:
        result._pull = as_merged(result._pull, outcome)
    if outcome.state == "merged":
        run.wrote()
        return Step(step="merge", message=outcome.message)
    result.wait(outcome.message)
    return None


def _settle_record(run: _Run, name: str, view: _View, result: EnvironmentReconcile) -> None:
    """Keep the merge record true after the run's steps (:mod:`merge_records`): ``auto-merge`` on the head when the
    forge's auto-merge is on for it, ``merge-when-green`` when fleetflow merges it once its checks are green; none
    when the PR was merged (the GitOps branch carries the pin), found closed, or autoMerge is off.
    Compare-and-swap against what this run listed."""
    ctx, f, at = run.ctx, view.found, view.at
    if at is None:
        return
    merge, pull, head = result.merge, result._pull, view.head_sha
    for_head = head is not None and (pull is None or (pull.state == "open" and pull.head_sha == head))
    kinds: dict[str, RecordKind] = {"auto-merge": "auto-merge", "waiting": "merge-when-green"}
    kind = kinds.get(merge.state) if merge else None
    if view.auto_merge and merge is not None and kind is not None and for_head and not _carried(view) \
            and (pull is not None or f.merge_record is not None):
        assert head is not None
        if write_record(ctx.git, at.gitops_url, name, kind, head, view.records):
            f.merge_record = MergeRecord(kind=kind, head=head)
            ctx.say(f"{name}: recorded in git: {kind} for {head_branch(name)}@{short(head)} (tag fleetflow/{kind}/"
                    f"{name})")
        return
    stale = _carried(view) or result._closed or not view.auto_merge or (
        merge is not None and merge.state in ("closed", "merged", "manual"))
    if view.records and stale and drop_records(ctx.git, at.gitops_url, view.records):
        tags = ", ".join(r.removeprefix("refs/tags/") for r in view.records)
        ctx.say(f"{name}: removed fleetflow's merge record ({tags})")
        f.merge_record = None


def _closed_by_hand(ctx: Context, at: Pinned, name: str) -> bool:
    """A closed, unmerged PR proposes exactly the head branch's commit: a person rejected it; do not re-open."""
    head = ctx.git.fetch_branch(at.gitops_url, head_branch(name))
    return any(p.head_sha == head and not p.merged and p.state == "closed"
               for p in ctx.forge.pulls(at.gitops_repo, head_branch(name), "closed", limit=5))


def environments_to_reconcile(envs: dict[str, Resource[EnvironmentSpec]], environment: str | None) -> list[str]:
    """Every environment in chain order, or the one named and its neighbours (its upstreams and downstreams)."""
    order = chain_order(envs)
    if environment is None:
        return order
    if environment not in envs:
        return [environment]  # Context.environment raises the usage error with the known names
    near = {environment, *envs[environment].spec.after}
    near |= {n for n, e in envs.items() if environment in e.spec.after}
    return [n for n in order if n in near]


def reconcile(ctx: Context, environment: str | None = None, *, verify_merges: bool = False,
              rechecks: Collection[str] = ()) -> ReconcileOutcome:
    """``verify_merges``: read every waiting ``autoMerge`` PR from the forge, even where a merge record says what
    is decided (catches a person turning auto-merge off or closing the PR; one request per such PR), and every
    waiting PR of an environment whose policy labels its PRs or asks reviewers (adds the labels and asks the
    reviewers a stopped run did not).
    ``rechecks``: GitOps commits whose checks changed (the sha of a ``status`` event): a PR head among them that
    fleetflow merges once green is decided again from its checks."""
    main_tip = ctx.main_tip()
    envs = ctx.current_environments(main_tip)
    if environment is not None:
        ctx.environment(envs, environment)
    run = _Run(ctx, verify_merges, rechecks)
    results = [reconcile_environment(run, name, main_tip) for name in environments_to_reconcile(envs, environment)]
    stale = _stale_pulls(run, envs) if environment is None else []
    return ReconcileOutcome(main_commit=main_tip, environments=results, stale_pulls=stale)


def _stale_pulls(run: _Run, envs: dict[str, Resource[EnvironmentSpec]]) -> list[StalePull]:
    """The open PRs from ``fleetflow/<name>`` head branches of the GitOps repos this run read, for names main does
    not define: an environment removed from the chain, or renamed, leaves its last PR open, and until 2026-11-29
    no run said so (a person could merge a render no gate follows, or, after a rename, have two PRs into one
    GitOps branch). One ``ls-remote`` per GitOps repo (head branches and GitHub's ``refs/pull/<N>/head``, which
    GitHub keeps for every PR: docs "Checking out pull requests locally"); the forge is asked only about a head
    branch some PR was made from (a forge that keeps no pull refs: about every such branch)."""
    ctx = run.ctx
    stale: list[StalePull] = []
    for url, repo in sorted(run.gitops.items()):
        try:
            refs = ctx.git.remote_refs(url, [f"refs/heads/{head_branch('*')}", PULL_HEADS])
        except FleetflowError as error:
            ctx.say(f"{repo}: could not list its fleetflow/* branches ({error}); PRs of removed environments unseen")
            continue
        pulls = pull_refs(refs)
        prefix = f"refs/heads/{head_branch('')}"
        for ref, sha in sorted(refs.items()):
            name = ref[len(prefix):] if ref.startswith(prefix) else None
            if not name or name in envs or (pulls and not heads_of(pulls, sha)):
                continue
            for pr in ctx.forge.pulls(repo, head_branch(name), "open", limit=5):
                stale.append(StalePull(environment=name, repo=repo, number=pr.number, url=pr.url, base=pr.base))
    return stale


def reconcile_holding(ctx: Context, first: ReconcileOutcome, again: Callable[[], ReconcileOutcome], until: float,
                      poll_seconds: float, *, clock: Callable[[], float] = time.time,
                      sleep: Callable[[float], None] = time.sleep,
                      say: Callable[[str], None] = lambda _m: None) -> ReconcileOutcome:
    """After ``first``, while a gate waits for reports and ``until`` (Unix seconds) has not passed: hold
    (:func:`fleetflow.promotion.hold.hold_while_waiting`), and when the reports may have changed a gate, reconcile
    again in this run (``again``) instead of leaving it to the next run, which would first have to start. The
    result is the last pass, with every pass's steps per environment and one ``hold`` for them all."""
    passes, holds = [first], []
    note = ""
    while True:
        watches = passes[-1].report_watches()
        if not watches or clock() >= until:
            break
        hold = hold_while_waiting(ctx.forge, watches, until, poll_seconds, ctx.clock, clock=clock, sleep=sleep,
                                  say=say)
        holds.append(hold)
        if hold.ended != "reports":
            break
        say(f"{hold.message}; reconciling again in this run")
        try:
            passes.append(again())
        except FleetflowError as error:
            note = f"; reconciling again failed ({error}): the next run does it"
            break
    last = passes[-1]
    if len(passes) > 1:
        earlier: dict[str, list[Step]] = {}
        for outcome in passes[:-1]:
            for env in outcome.environments:
                earlier.setdefault(env.environment, []).extend(env.did)
        environments = [e.after(earlier.get(e.environment, [])) for e in last.environments]
        last = last.model_copy(update={"environments": environments})
    if holds:
        last.hold = HoldOutcome.of(holds, len(passes) - 1, note)
    return last
