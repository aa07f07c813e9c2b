"""``fleetflow validate``: check everything render (and later the gate) would check, write nothing."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, head_branch_name, load, trees
from fleetflow.cli.errors import handled
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import ExitCode, InputError, Problem, Problems, UsageError
from fleetflow.model.controlplane import ControlPlane
from fleetflow.model.references import check_trees_not_empty
from fleetflow.promotion.gate import configuration_problems
from fleetflow.render.pipeline import Meta, RenderResult, render_environment
from fleetflow.render.summary import ValidatedEnvironment, ValidateSummary


@click.command()
@trees
@click.option(
    "--environment", help="Environment to check (default: the one the --env branch belongs to, or all)."
)
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1), e.g. in CI.")
@FORMAT
def validate(main_dir: Path, env_dir: Path, environment: str | None, strict: bool, fmt: str) -> None:
    """Load, schedule, compose, validate and render in memory, check the rollout gate's configuration; report
    every problem and every warning; write nothing.

    \b
    Errors (exit 1): anything render or the gate would refuse later, an empty tree, an --env tree that
    belongs to another environment. Warnings (exit 0 unless --strict): selectors or ConfigMaps that select
    nothing (with the closest existing label), targets of environments main does not define, an environment
    that schedules nothing.

    Without --environment, the environment is taken from the env branch's GitOpsRepo (its name) or the branch
    checked out in --env when there is one, else every environment defined on main is checked.
    """
    with handled(fmt) as reply:
        plane = load(main_dir, env_dir, fmt)
        problems = Problems()
        check_trees_not_empty(plane, str(main_dir), str(env_dir), problems)
        problems.raise_if_any()
        branch = head_branch_name(env_dir)
        if environment:
            check_environment(plane, environment)
        names = _environments(plane, environment, branch)
        warnings: list[Problem] = []
        counts: dict[str, int] = {}
        for name in names:
            try:
                result = render_environment(plane, name, meta=Meta(env_branch=branch), progress=TERMINAL.progress(fmt))
            except InputError as exc:
                problems.extend(exc.problems())
                continue
            counts[name] = len(result.state.assignments)
            warnings.extend(result.warnings)
            problems.extend(_gate_problems(plane, name, result))
        for warning in sorted(set(warnings), key=lambda p: (str(p.location or ""), p.message)):
            reply.warn(warning)
        problems.raise_if_any()
        strict_fail = strict and bool(warnings)

        def text() -> None:
            for name, count in counts.items():
                click.echo(f"ok: {name}: {count} assignments scheduled, composed, validated and rendered")
            if strict_fail:
                click.echo(f"{len(reply.warnings)} warnings and --strict: failing.", err=True)

        reply.done(
            ValidateSummary(environments=[ValidatedEnvironment(name=n, assignments=c) for n, c in counts.items()]),
            text,
            exit_code=ExitCode.REFUSED if strict_fail else None,
        )


def _environments(plane: ControlPlane, environment: str | None, branch: str | None) -> list[str]:
    if environment:
        return [environment]
    gitops = plane.gitops_repo()
    if gitops is not None and gitops.name in plane.environments:
        return [gitops.name]
    by_branch = {
        (env.spec.branch or (env.spec.control_plane.branch if env.spec.control_plane else None) or name): name
        for name, env in plane.environments.items()
    }
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
        where = env.where("spec", "rollout")
        for cluster in result.state.clusters:
            if problem.message.startswith(f"Cluster {cluster.name} ") and cluster.name in plane.clusters:
                where = plane.clusters[cluster.name].location
        message = f"Environment {environment}: {problem.message}"
        found.append(Problem(message, where, problem.hint))
    return found
