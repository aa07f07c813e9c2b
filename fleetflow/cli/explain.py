"""``fleetflow explain``: where each composed config value of one assignment came from; with ``--rendered``, what
its templates render, manifest by manifest."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, head_branch_name, load, trees
from fleetflow.cli.errors import handled
from fleetflow.errors import InputError, Problem, Problems, UsageError, meant
from fleetflow.model.references import check_tree_belongs
from fleetflow.render.composition import Provenance
from fleetflow.render.explain import Explanation, RenderedResult, explain_assignment, key_text, render_explained
from fleetflow.render.templates import under_time_budget


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


@click.command()
@trees
@click.option("--environment", required=True, help="Environment the assignment belongs to.")
@click.option(
    "--assignment",
    required=True,
    metavar="CLUSTERTYPE/TARGET",
    help="The assignment, as its output folder: cluster type / <workload>-<target> (a trailing / is fine).",
)
@click.option("--key", help="Only this key (dotted path, e.g. db.host) and what is below it.")
@click.option(
    "--rendered",
    is_flag=True,
    help="Show what the assignment's templates render instead: each manifest with numbered lines, even text that "
    "is not YAML or JSON (the lines an error's 'line N of what it renders' counts).",
)
@FORMAT
def explain(
    main_dir: Path, env_dir: Path, environment: str, assignment: str, key: str | None, rendered: bool, fmt: str
) -> None:
    """Show where an assignment's config values came from.

    Use it when a rendered value is not the one you expected, or an error names a line of what a template
    renders. Each composed config value of the assignment: its value, the ConfigMap, file and line it came
    from, and the lower-precedence values it overrode (highest first). Writes nothing.

    \b
    Examples (cp-main, cp-dev: checkouts of main and of the dev branch):
      fleetflow explain --main cp-main --env cp-dev --environment dev \\
          --assignment aks-westeurope/observability-dev --key LOG_LEVEL
      fleetflow explain --main cp-main --env cp-dev --environment dev \\
          --assignment aks-westeurope/observability-dev --rendered

    Precedence, lowest first: annotation fleetflow.dev/priority, then the number of matching labels,
    then the ConfigMap name. Works on invalid assignments too: it is how you find out why.

    With --rendered: every manifest of the assignment's templates (reconciler, namespaceService, configType), in
    order, each headed by its template, its manifest number and the file render writes it to (inside --output),
    its lines numbered as they are in what it renders. A manifest that renders text that is not YAML or JSON is
    shown with its problem below it, the line the problem names marked '>'; one that fails to render shows its
    problem instead: the way to read an error such as "... not YAML (contentType: yaml): ... at line 9 of
    what it renders".

    Exit 0 when it could show them (validate and render say whether the assignment renders), 1 when the
    trees do not load or the assignment or key is not there, 2 usage error (docs/design.md section 6).
    """
    with handled(fmt) as reply:
        if rendered and key is not None:
            raise UsageError("--key and --rendered do not go together: --key picks config values, --rendered "
                             "shows the rendered manifests instead of the values")
        plane = load(main_dir, env_dir, fmt)
        check_environment(plane, environment)
        # --env another environment's checkout: its values, said to be ENVIRONMENT's (render refuses it)
        belongs = Problems()
        check_tree_belongs(plane, environment, belongs, checked_out_branch=head_branch_name(env_dir))
        belongs.raise_if_any()
        explanation = explain_assignment(plane, environment, assignment)
        if rendered:
            shown = under_time_budget(render_explained)(plane, explanation)
            reply.done(shown, lambda: _rendered_text(shown))
            return
        entries = explanation.entries(key)
        if key is not None and not entries:
            raise InputError(
                [
                    Problem(
                        f"key {key!r} is not set for {explanation.assignment}",
                        None,
                        _key_hint(key, explanation.entries(None)),
                    )
                ]
            )
        reply.done(explanation.result(key), lambda: _text(explanation, entries, explanation.assignment, environment))


def _key_hint(key: str, entries: list[Provenance]) -> str:
    """The key meant (``log_level`` for ``LOG_LEVEL``, a typo), else how to list them all."""
    near = meant(key, {key_text(e.path[:n]) for e in entries for n in range(1, len(e.path) + 1)})
    every = "run without --key to list every key"
    return f"did you mean --key {near}? Or {every}" if near else every


def _text(explanation: Explanation, entries: list[Provenance], assignment: str, environment: str) -> None:
    click.echo(f"{assignment} (environment {environment})")
    click.echo(f"  selected by policies: {', '.join(explanation.policies)}")
    click.echo(
        f"  ConfigMaps applied, lowest precedence first: {', '.join(explanation.composed.sources) or 'none'}"
    )
    for entry in entries:
        click.echo(f"{key_text(entry.path)} = {_show(entry.winner.value)}")
        click.echo(f"    from {entry.winner.source} at {entry.winner.location}")
        for lost in entry.overridden:
            click.echo(f"    overrides {_show(lost.value)} from {lost.source} at {lost.location}")


def _rendered_text(shown: RenderedResult) -> None:
    click.echo(f"{shown.assignment} (environment {shown.environment}): what its templates render")
    for m in shown.manifests:
        click.echo("")
        click.echo(f"== {m.file}: template {m.template!r} ({m.role}), manifest {m.manifest}, at {m.location}")
        if m.text is not None:
            lines = m.text.splitlines()
            width = len(str(len(lines)))
            for number, line in enumerate(lines, 1):  # '>': the line the problem names
                mark = ">" if number == m.problem_line else " "
                click.echo(f"{mark} {number:>{width}} | {line}".rstrip())
        elif m.problem is None:
            click.echo("   (renders nothing: not in the file)")
        if m.problem is not None:
            click.echo(f"   {'error' if m.text is not None else 'does not render'}: {m.problem}")
    for problem in shown.problems:
        click.echo("")
        click.echo(f"error: {problem}")
