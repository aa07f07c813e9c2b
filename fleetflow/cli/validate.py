"""``fleetflow validate``: check everything render (and later the gate) would check, write nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, head_branch_name, load, parse_cache
from fleetflow.cli.errors import Reply, handled
from fleetflow.cli.github_actions import ActionsStep, actions_step, github_actions_options, validate_report
from fleetflow.cli.paths import CommandPath
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import ExitCode, InputError, Problem, Problems, UsageError, problem_order
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.references import check_trees_not_empty, environment_branch
from fleetflow.promotion.gate import configuration_problems, configuration_warnings
from fleetflow.promotion.proposed_change import plan_change
from fleetflow.render.pipeline import Meta, RenderResult, render_environment, trees_named
from fleetflow.render.summary import ValidatedEnvironment, ValidateSummary

TREE = CommandPath()


@dataclass
class Findings:
    """What the checks found, over every environment checked."""

    problems: Problems = field(default_factory=Problems)
    warnings: list[Problem] = field(default_factory=list)
    checked: list[ValidatedEnvironment] = field(default_factory=list)


@click.command()
@click.option("--main", "main_dir", type=TREE, help="Checkout of the control-plane main branch.")
@click.option("--env", "env_dir", type=TREE, help="Checkout of the environment branch.")
@click.option(
    "--into", "into", metavar="BRANCH",
    help="Check the change in --repo as it would land on BRANCH (a pull request's base): main, against every "
    "environment's branch; an environment branch, against the main commit it pins. Instead of --main/--env.",
)
@click.option(
    "--repo", "repo_dir", type=TREE, default=".", show_default=True,
    help="With --into: the checkout holding the change (every branch fetched, e.g. fetch-depth: 0).",
)
@click.option(
    "--environment", help="Environment to check (default: the one the --env branch belongs to, or all)."
)
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1), e.g. in CI.")
@FORMAT
@github_actions_options
def validate(main_dir: Path | None, env_dir: Path | None, into: str | None, repo_dir: Path,
             environment: str | None, strict: bool, fmt: str, github_actions: bool, job_summary: bool) -> None:
    """Check everything render and the gate would refuse.

    Run it on your edits before you push, and in CI on every pull request (the workflow's check job runs
    --into). It loads, schedules, composes, validates and renders in memory and checks the rollout gate's
    configuration; it reports every problem and every warning, and writes nothing.

    \b
    Examples, two ways to name what to check:
      fleetflow validate --main cp-main --env cp-dev     # checkouts of main and of the dev branch, side by side
      fleetflow validate --into main --strict            # a pull request into main, in its checkout (CI)

    \b
    Errors (exit 1): anything render or the gate would refuse later, an empty tree, an --env tree that
    belongs to another environment; with --into, an environment branch without a GitOpsRepo (schedule needs
    one). A shallow --repo without the environment branches is a git failure (exit 3: fetch-depth: 0).
    Warnings (exit 0 unless --strict): selectors or ConfigMaps that select
    nothing (with the closest existing label), targets of environments main does not define, an environment
    that schedules nothing, a rollout gate that passes without a report or counts any context, a rollout
    timeout or soakTime under 5 minutes written without a unit (timeout: 30 is 30 seconds), a Cluster
    statusContext in Flux's default form with capitals (Flux posts it lowercased), a template manifest that
    renders nothing for any assignment (an {% if %} never true), a ConfigMap value holding a Kalypso Go
    template such as {{ .Environment }} (Kalypso rendered it, fleetflow writes it as it is).

    With --main/--env and no --environment, the environment is taken from the env branch's GitOpsRepo (its
    name) or the branch checked out in --env when there is one, else every environment defined on main is
    checked. With --into, the working tree of --repo is the change (uncommitted edits included), and the other
    side is read from the repo's branches (origin/<branch>, else the local branch).
    """
    step = actions_step("validate", github_actions, job_summary)
    with handled(fmt, "", step) as reply:
        if into is not None:
            if main_dir is not None or env_dir is not None:
                raise UsageError("--into checks the change in --repo: leave out --main and --env")
            findings = _check_change(repo_dir, into, environment, fmt)
        else:
            if main_dir is None or env_dir is None:
                raise UsageError(
                    "name the trees to check: --main DIR --env DIR, or --into BRANCH for a change in --repo"
                )
            findings = _check_trees(main_dir, env_dir, environment, fmt)
        _reply(reply, findings, strict, into, step)


def _check_trees(main_dir: Path, env_dir: Path, environment: str | None, fmt: str) -> Findings:
    plane = load(main_dir, env_dir, fmt)
    found = Findings()
    check_trees_not_empty(plane, str(main_dir), str(env_dir), found.problems)
    found.problems.raise_if_any()
    branch = head_branch_name(env_dir)
    if environment:
        check_environment(plane, environment)
    for name in _environments(plane, environment, branch):
        _check_environment(plane, name, branch, fmt, found, (str(main_dir), str(env_dir)))
    found.problems.items = trees_named(found.problems, str(main_dir), str(env_dir))
    return found


def _check_change(repo_dir: Path, into: str, environment: str | None, fmt: str) -> Findings:
    found = Findings()
    change = plan_change(repo_dir, into, environment=environment, cache=parse_cache())
    found.warnings.extend(change.warnings)
    for pair in change.pairs:
        try:
            plane = load(pair.main.root, pair.env.root, fmt, main_label=pair.main.label, env_label=pair.env.label)
        except InputError as exc:
            found.problems.extend(exc.problems())
            continue
        trees = (pair.main.label or ".", pair.env.label or ".")
        if plane.gitops_repo() is None:  # render does without one (--output); schedule and promote stop
            found.problems.add(
                f"environment {pair.environment}: no GitOpsRepo on branch {pair.branch} ({trees[1]}): schedule and "
                f"promote stop for {pair.environment} without one (it says where its manifests go)",
                None,
                f"keep a GitOpsRepo (spec.repo, spec.branch, spec.path) on the {pair.branch} branch: "
                "fleetflow init writes it as gitops-repo.yaml",
            )
        _check_environment(plane, pair.environment, pair.branch, fmt, found, trees)
    return found


def _check_environment(plane: ControlPlane, name: str, branch: str | None, fmt: str, found: Findings,
                       trees: tuple[str, str]) -> None:
    try:
        result = render_environment(plane, name, meta=Meta(env_branch=branch), progress=TERMINAL.progress(fmt))
    except InputError as exc:
        found.problems.extend(exc.problems())
        return
    found.checked.append(ValidatedEnvironment(
        name=name, assignments=len(result.state.assignments), main_tree=trees[0], env_tree=trees[1]
    ))
    found.warnings.extend(result.warnings)
    found.problems.extend(_gate_problems(plane, name, result))
    found.warnings.extend(_gate_warnings(plane, name, result))


def _reply(reply: Reply, found: Findings, strict: bool, into: str | None, step: ActionsStep | None) -> None:
    # a problem of main's tree is found once per environment checked against it: say it once
    for warning in sorted(set(found.warnings), key=problem_order):  # line 2 before line 11
        reply.warn(warning)
    Problems(list(dict.fromkeys(found.problems))).raise_if_any()
    strict_fail = strict and bool(found.warnings)
    summary = ValidateSummary(environments=found.checked)
    if step is not None:
        step.report(validate_report(summary, reply.warnings, strict_fail))

    def text() -> None:
        said = "checked, with warnings" if strict_fail else "ok"  # not "ok" on a run that fails
        for env in found.checked:
            trees = f" ({env.main_tree} + {env.env_tree})" if into else ""
            click.echo(f"{said}: {env.name}: {env.assignments} assignments scheduled, composed, validated and "
                       f"rendered{trees}")
        if not found.checked:
            click.echo("nothing to check: no environment could be paired with the change (see the warnings)")

    # under --strict the warnings are why it fails: one problem says so (JSON's problems were empty, and the text
    # said "ok:" above an exit 1, until 2026-11-28)
    count = len(set(found.warnings))
    failing = [Problem(f"{count} warning{'s' if count != 1 else ''} and --strict: each warning fails the check",
                       None, "fix what the warnings say, or run without --strict")] if strict_fail else []
    reply.done(
        summary,
        text,
        problems=failing,
        exit_code=ExitCode.REFUSED if strict_fail else None,
    )


def _environments(plane: ControlPlane, environment: str | None, branch: str | None) -> list[str]:
    if environment:
        return [environment]
    gitops = plane.gitops_repo()
    if gitops is not None and gitops.name in plane.environments:
        return [gitops.name]
    by_branch = {environment_branch(env): name for name, env in plane.environments.items()}
    if branch is not None and branch in by_branch:
        return [by_branch[branch]]
    if plane.environments:
        return sorted(plane.environments)
    raise UsageError("no Environment on main: pass --environment NAME")


def _gate_problems(plane: ControlPlane, environment: str, result: RenderResult) -> list[Problem]:
    """The gate's configuration problems, located: the Environment's rollout, or the Cluster concerned."""
    env = plane.environments.get(environment)
    if env is None:
        return []
    found: list[Problem] = []
    for problem in configuration_problems(env.spec.rollout, result.state.clusters):
        where = env.where("spec", "rollout", *_rollout_key(problem.message))
        for cluster in result.state.clusters:
            if problem.message.startswith(f"Cluster {cluster.name} ") and cluster.name in plane.clusters:
                resource = plane.clusters[cluster.name]
                where = resource.where("spec", "statusContext") if cluster.status_context else resource.location
        message = f"Environment {environment}: {problem.message}"
        found.append(Problem(message, where, problem.hint))
    return found


def _rollout_key(message: str) -> tuple[str, ...]:
    """The key of ``rollout`` a gate message is about ("rollout.minClusters is 0 ..."), to point at its line."""
    if message.startswith("rollout."):
        return (message.removeprefix("rollout.").split(" ", 1)[0],)
    return ()


def _gate_warnings(plane: ControlPlane, environment: str, result: RenderResult) -> list[Problem]:
    """What the gate would decide, probably not as meant: its policy's (``configuration_warnings``). (A
    statusContext in Flux's default form with capitals was warned of until 2026-11-29; the gate now compares
    contexts without case, as GitHub does: ``forge.base.context_key``.)"""
    env = plane.environments.get(environment)
    if env is None:
        return []
    return [
        Problem(f"Environment {environment}: {w.message}", env.where("spec", "rollout", *_rollout_key(w.message)),
                w.hint)
        for w in configuration_warnings(env.spec.rollout, result.state.clusters)
    ]

