"""``promote``: move one ``main`` commit into an environment, only if every upstream environment rolled it out.

1. The commit must be on ``main``; every environment in ``after`` must have ``fleetflow/<env>`` = success on it in
   the control-plane repo (re-checked here, never taken from a dispatch payload).
2. Pin: ``BaseRepo.spec.commit`` on the environment branch (a commit pushed with a lease, retried if the branch
   moved). Promoting an older commit is a rollback: the environment is held there (annotation
   ``fleetflow.dev/hold``) until a promotion with ``release`` moves it on.
3. ``fleetflow/<env>`` pending "scheduled" on the commit, then ``schedule``.

The pin commit is rendered before it is pushed (an environment with ``shardedSchedule``, which promote does not
render, gets the render's checks instead): a commit the render refuses is not pinned, and nothing is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleetflow.errors import GateError, InputError, Problem, UsageError
from fleetflow.forge.base import CommitStatus
from fleetflow.forge.git import retry_races
from fleetflow.model.controlplane import Resource
from fleetflow.model.resources import EnvironmentSpec
from fleetflow.promotion.context import (
    SCHEDULED,
    Context,
    check_before_pinning,
    doctor_names_the_rule,
    misplaced_pin,
    short,
    status_context,
)
from fleetflow.promotion.pin import PIN_FILE, pin_text, promote_command, read_pin, write_pin
from fleetflow.promotion.schedule import (
    Rendered,
    ScheduleOutcome,
    named_warnings,
    render_commit,
    schedule_environment,
)
from fleetflow.results import Result

SHARDED_SCHEDULE = ("the sharded schedule renders it (shardedSchedule: true; the fleetflow-schedule-shards "
                    "workflow, or fleetflow schedule --shard K/N then --stitch)")


class PromoteOutcome(Result):
    """One environment's promotion: the pin, the hold, and the schedule that followed (none when held)."""

    environment: str
    commit: str
    pinned: bool  # a pin commit was pushed now (False: it was already pinned)
    held: str | None
    message: str
    schedule: ScheduleOutcome | None


class PromoteResult(Result):
    """``fleetflow promote``'s result: one promotion per environment."""

    promotions: list[PromoteOutcome]

    def warnings(self) -> list[Problem]:
        """What the renders of the schedules that followed warned of (``schedule`` gives the same)."""
        return named_warnings(p.schedule for p in self.promotions)


def first_environments(ctx: Context, commit: str) -> list[str]:
    envs = ctx.environments(commit)
    return sorted(name for name, env in envs.items() if not env.spec.after)


def resolve_main_commit(ctx: Context, commit: str) -> tuple[str, str]:
    """The full sha of ``commit`` and main's tip, fetched once (a promotion reads the tip again to tell an
    environment removed or added since ``commit``: until 2026-11-29 each of those fetched main again)."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}", commit):  # '', HEAD, main, -x: "not on main" (exit 1) until 2026-11-28
        raise UsageError(f"--commit {commit!r} is not a commit sha: give 4 to 40 hex digits of a {ctx.main_branch} "
                         "commit (a branch name or HEAD is not taken: the commit promoted is named exactly)")
    main_tip = ctx.main_tip()
    sha = ctx.git.resolve(ctx.cp_url, commit)
    if sha is None and len(commit) < 40 and ctx.git.ambiguous(ctx.cp_url, commit):
        raise UsageError(f"--commit {commit} names more than one object of {ctx.control_plane}: give more digits")
    if sha is None or not ctx.git.is_ancestor(ctx.cp_url, sha, main_tip):
        raise InputError([Problem(
            f"commit {commit} is not on {ctx.main_branch} of {ctx.control_plane}", None,
            f"promote a commit of {ctx.main_branch} (a full or abbreviated sha)",
        )])
    return sha, main_tip


def check_guarantee(environment: str, env: Resource[EnvironmentSpec], sha: str,
                    statuses: dict[str, CommitStatus]) -> None:
    """Every upstream environment of ``env`` (as main@``sha`` defines it) must have a recorded successful rollout of
    ``sha``."""
    if not env.spec.after:
        return
    missing = []
    for upstream in env.spec.after:
        status = statuses.get(status_context(upstream))
        if status is None or status.state != "success":
            state = f"{status.state}: {status.description}" if status else "no record"
            missing.append(f"{upstream} ({state})")
    if missing:
        raise GateError(
            f"refusing to promote main@{short(sha)} to {environment}: not rolled out successfully in "
            + ", ".join(missing)
            + f". {environment} comes after {', '.join(env.spec.after)}; each must report "
            f"{status_context(env.spec.after[0])} = success on this commit first."
        )


def _removed_since(ctx: Context, environment: str, sha: str, tip: str) -> Problem | None:
    """``environment`` is defined at main@``sha`` but no longer by main's tip (removed from the chain since, or
    renamed): nothing is promoted there. Until 2026-11-29 check-rollout's fan-out along an older commit's chain
    tried, and failed (exit 2) with "unknown environment 'prod-eu'; environments on main: ...", an environment the
    person never named, on every check of the upstream."""
    if tip == sha or environment not in ctx.environments(sha):
        return None
    current = ctx.current_environments(tip)
    if environment in current:
        return None
    return Problem(
        f"{environment} is not in the chain any more: main@{short(tip)} does not define it (main@{short(sha)} "
        f"does); environments on main: {', '.join(sorted(current))}", None,
        f"promote to an environment main defines, or define {environment} on main again; its branch, GitOps "
        "branch and any open PR from fleetflow/" + environment + " are left as they are (close or delete them by hand)",
    )


def _defined_at(ctx: Context, envs: dict[str, Resource[EnvironmentSpec]], environment: str,
                sha: str, tip: str) -> Resource[EnvironmentSpec]:
    """``environment`` as main@``sha`` defines it. One that main's tip defines and ``sha`` does not (added, or
    renamed to this name, in a later commit) is not promoted that commit: until 2026-11-29 the refusal said
    "unknown environment; environments on main: ..." without it, as if main did not define it."""
    if environment in envs:
        return envs[environment]
    if tip != sha and environment in ctx.current_environments(tip):
        raise InputError([Problem(
            f"main@{short(sha)} does not define environment {environment!r} (main@{short(tip)} does: it was added "
            f"or renamed after that commit); environments on main@{short(sha)}: {', '.join(sorted(envs))}", None,
            f"promote a commit of {ctx.main_branch} that defines {environment} (e.g. --commit {short(tip)}): the "
            "new chain applies from the commit that brings it",
        )])
    return ctx.environment(envs, environment)


def promote(ctx: Context, environment: str, commit: str, *, release: bool = False,
            skip_held: bool = False) -> PromoteOutcome:
    sha, tip = resolve_main_commit(ctx, commit)
    return _promote(ctx, environment, sha, tip, release=release, skip_held=skip_held)


def _promote(ctx: Context, environment: str, sha: str, tip: str, *, release: bool,
             skip_held: bool) -> PromoteOutcome:
    removed = _removed_since(ctx, environment, sha, tip)
    if removed is not None:
        if not skip_held:  # by hand
            raise InputError([removed])
        # check-rollout's fan-out along the chain of an older commit: said among what it skipped, not an error
        return PromoteOutcome(environment=environment, commit=sha, pinned=False, held=None, schedule=None,
                              message=f"{removed.message}: not promoted")
    env = _defined_at(ctx, ctx.environments(sha), environment, sha, tip)
    statuses = {s.context: s for s in ctx.forge.statuses(ctx.control_plane, sha)}
    check_guarantee(environment, env, sha, statuses)
    branch = ctx.env_branch(env)
    render = not env.spec.sharded_schedule
    pin = retry_races(lambda: _pin_once(ctx, environment, branch, sha, tip, release=release, skip_held=skip_held,
                                        render=render), 5)
    if pin.newer is not None:  # an automatic promotion of an older commit: never a rollback
        return PromoteOutcome(
            environment=environment, commit=sha, pinned=False, held=pin.held, schedule=None,
            message=f"{environment} runs main@{short(pin.newer)}, newer than main@{short(sha)}: not rolled back "
            f"(automatic promotions only move forward); to roll it back: {promote_command(environment, short(sha))}",
        )
    if pin.skipped:
        return PromoteOutcome(
            environment=environment, commit=sha, pinned=False, held=pin.held, schedule=None,
            message=f"{environment} is held ({pin.held}); main@{short(sha)} not promoted; "
            f"release it with: {promote_command(environment, release=True)}",
        )
    if pin.pinned or status_context(environment) not in statuses:
        # a re-run of an earlier promotion keeps the gate's record (it may already say success)
        ctx.forge.set_status(ctx.control_plane, sha, status_context(environment), "pending", SCHEDULED)
    if env.spec.sharded_schedule:
        return PromoteOutcome(environment=environment, commit=sha, pinned=pin.pinned, held=pin.held, schedule=None,
                              message=f"main@{short(sha)} pinned in {environment}; {SHARDED_SCHEDULE}")
    # the render of the pin just pushed, if made. What a person closed without merging: a promotion by hand proposes
    # it again; an automatic one (skip_held: a push to main, check-rollout's fan-out, reconcile) leaves it closed
    outcome = schedule_environment(ctx, environment, pin.rendered, propose_rejected=not skip_held, tip=tip)
    verb = "pinned in" if outcome.operation == "rejected" else "promoted to"  # no PR: a person closed it
    message = f"main@{short(sha)} {verb} {environment}: {outcome.message}"
    if pin.held:
        message += f" (held: {pin.held})"
    return PromoteOutcome(environment=environment, commit=sha, pinned=pin.pinned, held=pin.held,
                          schedule=outcome, message=message)


@dataclass(frozen=True)
class PinResult:
    pinned: bool  # a pin commit was pushed now
    held: str | None
    skipped: bool = False  # held, and this promotion may not move it (skip_held)
    newer: str | None = None  # the pinned commit, newer than the one an automatic promotion (skip_held) brought
    rendered: Rendered | None = None  # the render of the pin commit, made before it was pushed (not published)


def _pin_once(ctx: Context, environment: str, branch: str, sha: str, tip: str, *, release: bool, skip_held: bool,
              render: bool) -> PinResult:
    """Read the environment branch, write the pin, push it with a lease (PushRejected when the branch moved).
    ``render``: render the pin commit (the GitOps commit written, nothing pushed) before pushing it; otherwise run
    the render's checks. Either way a commit the render refuses raises before anything is written."""
    env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
    if env_sha is None:
        raise InputError([Problem(
            f"environment {environment}: branch {branch!r} does not exist in {ctx.control_plane}", None,
            f"create it with the environment's files (cluster types, configs, GitOpsRepo); "
            f"fleetflow writes {PIN_FILE} there",
        )])
    text = pin_text(ctx.git.read_bytes(ctx.cp_url, env_sha, PIN_FILE), f"{branch}/{PIN_FILE}")
    current = read_pin(text, f"{branch}/{PIN_FILE}")
    if not current.present:  # the first pin, unless a BaseRepo outside the pin file would make it a second one
        misplaced_pin(ctx, environment, branch, env_sha)
    hold = None if release else current.hold
    if current.commit and current.commit != sha:
        older = ctx.git.is_ancestor(ctx.cp_url, sha, current.commit)
        if older and skip_held and not release:
            # an automatic promotion (a push's run that came late or was re-run, check-rollout's fan-out after an
            # upstream's rollback) is never a rollback: until 2026-11-29 it rolled the environment back and held it
            return PinResult(False, current.hold, newer=current.commit)
        if older and release:
            # until 2026-11-29 this rolled the environment back with no hold: the next push moved it forward again,
            # the pin said "pin", and metrics did not count it as a rollback
            raise GateError(
                f"main@{short(sha)} is older than {environment}'s pin main@{short(current.commit)}: --release "
                "ends a hold and moves the environment forward, it does not roll back; to roll back (held until "
                f"released): {promote_command(environment, short(sha))}"
            )
        if current.hold and not release and not older:
            if skip_held:
                return PinResult(False, current.hold, skipped=True)
            raise GateError(
                f"{environment} is held at main@{short(current.commit)} ({current.hold}); "
                f"promote with --release to move it to main@{short(sha)}"
            )
        if older and not release:
            hold = f"rollback from {short(current.commit)} to {short(sha)}"
    if current.commit == sha and current.hold == hold:
        return PinResult(False, hold)
    if not render:  # nothing written for a commit that cannot render
        check_before_pinning(ctx, environment, branch, sha, env_sha)
    new_text = write_pin(text, commit=sha, repo=ctx.control_plane, hold=hold)
    verb = "roll back" if hold and hold.startswith("rollback") else "pin"
    message = f"fleetflow: {verb} {environment} to main@{short(sha)}"
    when = ctx.git.commit_time(ctx.cp_url, sha)
    new_sha = ctx.git.commit_files(ctx.cp_url, env_sha, {PIN_FILE: new_text.encode()}, message, when)
    if new_sha is None:
        return PinResult(False, hold)
    # the pin commit exists in the mirror only: rendered now, what only the render finds (a template naming a
    # variable no assignment has, a composed config failing its schema) stops the run with nothing pushed
    rendered = render_commit(ctx, environment, new_sha, tip) if render else None
    with doctor_names_the_rule(f"pushing the pin to {branch}", "push-rules"):
        ctx.git.push(ctx.cp_url, new_sha, branch, env_sha)
    done = "rolled back" if verb == "roll back" else "pinned"
    ctx.say(f"{environment}: {done} to main@{short(sha)} on branch {branch}")
    return PinResult(True, hold, rendered=rendered)


def promote_many(ctx: Context, environment: str | None, commit: str, *, release: bool = False) -> list[PromoteOutcome]:
    """``--environment`` given: that one. Otherwise every first environment (a push to main)."""
    if environment is not None:
        return [promote(ctx, environment, commit, release=release)]
    sha, tip = resolve_main_commit(ctx, commit)
    names = first_environments(ctx, sha)
    if not names:
        raise UsageError("no first environment (every Environment has `after`): pass --environment")
    return [_promote(ctx, name, sha, tip, release=release, skip_held=True) for name in names]
