"""Options and setup shared by the commands that talk to git and the forge (promote, schedule, ...)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import click

from fleetflow.cli.github_actions import ActionsStep, Report
from fleetflow.cli.paths import CommandPath
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import Problem
from fleetflow.forge.factory import make_forge
from fleetflow.forge.git import GitRepos
from fleetflow.promotion.context import Context
from fleetflow.promotion.fullplan import run_url
from fleetflow.promotion.status import as_markdown, fleet_status
from fleetflow.settings import load_settings

F = TypeVar("F", bound=Callable[..., Any])


def fleet_options(func: F) -> F:
    func = click.option(
        "--config", type=CommandPath("file"),
        help="Config file (default: $FLEETFLOW_CONFIG, or .fleetflow.yaml here).",
    )(func)
    func = click.option(
        "--control-plane", help="Control-plane repo: owner/name on GitHub, a path or git URL for the local forge "
        "(default: $FLEETFLOW_CONTROL_PLANE, $GITHUB_REPOSITORY, the config file).",
    )(func)
    func = click.option(
        "--forge", type=click.Choice(["github", "local"]),
        help="Where PRs and statuses live (default: $FLEETFLOW_FORGE, the config file, github when a token is set).",
    )(func)
    return func


def plan_option(func: F) -> F:
    """``--plan-dir``: the commands that schedule write each environment's full plan there."""
    return click.option(
        "--plan-dir", type=CommandPath(exists=False), envvar="FLEETFLOW_PLAN_DIR",
        help="Write each scheduled environment's full plan (summary + the whole diff, which a PR body cuts at "
        "64 KB) to DIR/<environment>.diff (default: $FLEETFLOW_PLAN_DIR; none).",
    )(func)


def plan_outputs(plan_dir: Path | None) -> dict[str, str]:
    """The ``plan-dir`` step output: the folder when a plan was written in it (for actions/upload-artifact),
    empty when none was; nothing without ``--plan-dir``."""
    if plan_dir is None:
        return {}
    return {"plan-dir": str(plan_dir) if plan_dir.is_dir() and any(plan_dir.glob("*.diff")) else ""}


def report_step(step: ActionsStep | None, ctx: Context, report: Report, plan_dir: Path | None = None) -> None:
    """With ``--github-actions``: the step's outputs, annotations and job summary from ``report``, plus the
    ``plan-dir`` output (:func:`plan_outputs`) and, under the summary, the fleet's status (read only when a summary
    is written)."""
    if step is None:
        return
    report.outputs.update(plan_outputs(plan_dir))
    step.report(report, lambda: as_markdown(fleet_status(ctx)))


@contextmanager
def make_context(
    forge: str | None, control_plane: str | None, config: Path | None, fmt: str, *, narrate: bool = True,
    plan_dir: Path | None = None, on_step: Callable[[], None] | None = None,
    warn: Callable[[Problem], None] | None = None,
) -> Iterator[Context]:
    """The run's context. On a terminal a spinner shows the current step and the time spent while git or the forge
    is slow (an unreachable GitHub is retried for a while: the spinner says so); the narration (``ctx.say``) goes
    to stderr, plain, unless ``--format json``, ``narrate=False`` or ``--quiet``. ``on_step`` is called at every
    step said, printed or not (:meth:`fleetflow.cli.errors.Reply.stepped`), not at a step that only starts
    (``Context.starting``). ``warn``: where the run's warnings go (the command's ``Reply.warn``)."""
    settings = load_settings(forge=forge, control_plane=control_plane, config=config)
    text = fmt != "json"
    where = f"{settings.forge} forge, control plane {settings.control_plane}"
    with TERMINAL.activity(f"working with the {where}") if text else nullcontext() as line:

        def narrate_step(message: str) -> None:
            if line is not None:
                line.update(f"{message} …")
            if narrate and line is not None:
                line.print(message)

        def say(message: str) -> None:
            if on_step is not None:
                on_step()
            narrate_step(message)

        with closing(make_forge(settings)) as the_forge, Context(
            forge=the_forge,
            git=GitRepos(settings.cache_dir / "git"),
            control_plane=settings.control_plane,
            say=say,
            say_started=narrate_step,  # a step that starts has not finished: a failure in it is before any step
            plan_dir=plan_dir,
            run_url=run_url(os.environ),
            server_url=os.environ.get("GITHUB_SERVER_URL") or None,
            warn=warn or (lambda _problem: None),
        ) as ctx:
            yield ctx
