"""``fleetflow reconcile``: take every promotion step that is due, for every environment (what the workflows run)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_NO_STEP, FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context, plan_option, report_step
from fleetflow.cli.github_actions import actions_step, github_actions_options, reconcile_report
from fleetflow.errors import ExitCode, Problem
from fleetflow.model.durations import format_duration
from fleetflow.promotion.reconcile import reconcile, reconcile_holding

FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")
LONGEST_HOLD = 6 * 3600  # a job's execution time limit on a GitHub-hosted runner (seconds)


def commit_shas(_ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """``--recheck``: full commit shas, lower-cased. A PR head is matched by its whole sha, so anything else (a
    prefix, a branch name, a typo) matched nothing and the option was ignored without a word until 2026-11-28."""
    bad = [value for value in values if not FULL_SHA.fullmatch(value)]
    if bad:
        named = ", ".join(repr(value) for value in bad)
        raise click.BadParameter(
            f"{named} {'is not a commit sha' if len(bad) == 1 else 'are not commit shas'}: give the full 40 hex "
            "digits of the GitOps commit whose checks changed (a status event's sha; a prefix matches no PR head)",
            param=param)
    return tuple(value.lower() for value in values)


def hold_deadline(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """``--hold-until``: at most :data:`LONGEST_HOLD` ahead. The hold runs inside the reconcile job and keeps the
    repository's reconcile concurrency slot; a GitHub-hosted runner stops a job after 6 hours ("Usage limits,
    billing, and administration", job execution time), so a later deadline is a mistake (a date decades away was
    taken until 2026-11-28). Self-hosted runners allow 5 days, but every reconcile of the repository would wait
    behind such a hold, so the bound is the same for them."""
    if value is None:
        return None
    ahead = value - int(time.time())  # whole seconds: a float of 10**400 is an OverflowError (a traceback)
    if ahead > LONGEST_HOLD:
        try:
            when = f" ({datetime.fromtimestamp(value, UTC):%Y-%m-%d %H:%M} UTC)"
        except (OverflowError, ValueError, OSError):  # past year 9999
            when = ""
        span = (f"{ahead // 86400:,} days" if ahead < 10**9 * 86400 else "more than a billion days"
                ) if ahead >= 2 * 86400 else format_duration(timedelta(seconds=ahead))
        raise click.BadParameter(
            f"{value}{when} is {span} from now, further than a job runs (6 hours on a GitHub-hosted runner; and "
            "every reconcile of the repository waits behind the hold): give a time at most 6 hours ahead, in "
            "seconds since 1970, e.g. $(( $(date +%s) + 50 ))",
            param=param)
    return value


@click.command("reconcile")
@click.option("--environment", help="Reconcile this environment and its neighbours (the environments right before "
              "and after it) only. Default: every environment.")
@click.option("--verify-merges/--trust-merge-records", default=None,
              help="Read every waiting autoMerge PR from the forge, even where fleetflow's merge record "
              "(tag fleetflow/auto-merge/<environment>) says auto-merge is on: catches a person turning it off or "
              "closing the PR, at one API request per such PR; and every waiting PR of an environment whose "
              "pullRequest names labels or reviewers, adding the labels it lacks and asking the reviewers no review "
              "was ever requested from (a run stopped before them; one more request when a reviewer is not "
              "waiting on it). Default: on for a scheduled run "
              "(GITHUB_EVENT_NAME=schedule, the cron tick), off otherwise (those runs wait at no API cost).")
@click.option("--recheck", "rechecks", multiple=True, metavar="SHA", callback=commit_shas,
              help="A GitOps commit whose checks changed, its full 40-hex sha (repeatable): a PR head fleetflow "
              "merges itself once green (the repository does not allow the forge's auto-merge) is decided again "
              "from its checks. Default: "
              "the commit of a status event (GITHUB_EVENT_NAME=status, its sha in GITHUB_EVENT_PATH); other runs "
              "leave such a PR at no API cost.")
@click.option("--hold-until", type=click.IntRange(min=0), metavar="UNIX_SECONDS", callback=hold_deadline,
              help="When a gate is left waiting for clusters that have not reported yet, keep running until this "
              "time (seconds since 1970, e.g. $(( $(date +%s) + 50 ))): the gitops workflow's hold of its concurrency "
              "slot, so that the reports' status events coalesce into one pending run. Every --hold-poll-seconds it "
              "reads the first page of the watched commits' statuses and check runs (two requests a commit); as soon "
              "as the counts say the gate may have changed (enough reports to be complete, or a failure), it "
              "reconciles again itself, and holds again if a gate still waits. A poll's requests are tried once, "
              "so the hold never outlasts this time: a 5xx is read again at the next poll, a rate limit (403/429) "
              "ends the polling, not waited out. At most 6 hours ahead (a GitHub-hosted runner's job limit). "
              "Default: no hold.")
@click.option("--hold-poll-seconds", type=click.IntRange(min=1), default=10, show_default=True,
              help="How often the hold reads the counts.")
@fleet_options
@plan_option
@FORMAT
@github_actions_options
def reconcile_command(environment: str | None, verify_merges: bool | None, rechecks: tuple[str, ...],
                      hold_until: int | None, hold_poll_seconds: int, forge: str | None,
                      control_plane: str | None, config: Path | None, plan_dir: Path | None, fmt: str,
                      github_actions: bool, job_summary: bool) -> None:
    """Take every promotion step that is due; safe to rerun.

    What the workflows run on every event and on the cron tick; run it by hand to move a stuck fleet on. It
    reads pins, environment branches, GitOps branches and PRs and the statuses, and takes every step that is
    due: run the gate where a PR was merged, promote main's tip to the first environments and a rolled-out
    commit to the next ones, schedule where the pin or the environment branch is not what the GitOps repo
    carries (also a half-done promotion), merge with autoMerge once the checks pass.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow reconcile
      fleetflow reconcile --environment qa --forge local --control-plane control-plane.git

    \b
    Idempotent and safe to run at any time, also concurrently: what it does depends only on the state it
    finds, never on the event that started it. Prints, per environment, what it found and what it did.
    Exit 0 when every due step was taken (a failed rollout is a state it reports, recorded as
    fleetflow/<environment> = failure on the main commit), 1 bad input on a branch, 3 forge or git failure;
    an error in one environment does not stop the others.
    """
    step = actions_step("reconcile", github_actions, job_summary)
    with handled(fmt, FLEET_WRITTEN, step, FLEET_NO_STEP) as reply, \
            make_context(forge, control_plane, config, fmt, plan_dir=plan_dir, on_step=reply.stepped,
                         warn=reply.warn) as ctx:
        if verify_merges is None:
            verify_merges = os.environ.get("GITHUB_EVENT_NAME") == "schedule"
        checks = rechecks or status_event_sha(os.environ)
        outcome = reconcile(ctx, environment, verify_merges=verify_merges, rechecks=checks)
        if hold_until is not None:
            # on stderr whatever the format: the run is about to wait, and the log (or terminal) should say why
            outcome = reconcile_holding(
                ctx, outcome, lambda: reconcile(ctx, environment, verify_merges=verify_merges, rechecks=checks),
                hold_until, hold_poll_seconds, say=lambda line: click.echo(line, err=True))
        for warning in outcome.warnings():
            reply.warn(warning)
        report_step(step, ctx, reconcile_report(outcome), plan_dir)

        def text() -> None:
            click.echo(f"main@{outcome.main_commit[:12]}")
            for env in outcome.environments:
                # a problem before anything was read (its branch deleted): not "not promoted yet" above the error
                unread = env.found.pin is None and env.problems and not env.did
                click.echo(f"{env.environment}: " + ("not read: " + env.problems[0].message if unread
                                                      else env.found.summary()))
                for step in env.did:
                    click.echo(f"  did {step.step}: {step.message}")
                if env.merge is not None and env.merge.state != "merged":
                    click.echo(f"  merge: {env.merge.state}" + (f" ({env.merge.reason})" if env.merge.reason else ""))
                if env.stopped_in:
                    why = env.problems[0].message if env.problems else "an error"
                    click.echo(f"  stopped in {env.stopped_in} ({why}): what it wrote before that stands; the next "
                               "run finishes it")
                if not env.did and not env.problems:
                    click.echo("  nothing due" + (f": {env.waiting}" if env.waiting else ""))
                elif env.waiting:
                    click.echo(f"  now: {env.waiting}")
            if outcome.hold is not None:
                click.echo(outcome.hold.message)

        problems = [Problem(f"{env.environment}: {p.message}", p.location, p.hint)
                    for env in outcome.environments for p in env.problems]
        reply.done(outcome, text, problems=problems, exit_code=ExitCode(outcome.exit_code))


def status_event_sha(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The commit of the ``status`` event this run was started by (GitHub Actions: ``GITHUB_EVENT_NAME`` and the
    payload file ``GITHUB_EVENT_PATH``, whose ``sha`` is "the commit SHA", "Webhook events and payloads": status);
    nothing for any other event or an unreadable payload (a hint only: the cron tick re-checks anyway)."""
    if environ.get("GITHUB_EVENT_NAME") != "status" or not environ.get("GITHUB_EVENT_PATH"):
        return ()
    try:
        payload = json.loads(Path(environ["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    sha = payload.get("sha") if isinstance(payload, dict) else None
    return (sha,) if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{40}", sha) else ()
