"""``fleetflow demo``: the whole flow on local repos."""

from __future__ import annotations

import shlex
import tempfile
import time
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import handled
from fleetflow.cli.paths import CommandPath
from fleetflow.errors import UsageError


@click.command()
@click.option("--dir", "directory", type=CommandPath(exists=False),
              help="Where to build the repos (default: a new temporary folder, kept so you can look around).")
@click.option("--examples", type=CommandPath(),
              help="Control plane to use: main/ and envs/<environment>/ (default: the example shipped with fleetflow, "
              "examples/control-plane in the source).")
@FORMAT
def demo(directory: Path | None, examples: Path | None, fmt: str) -> None:
    """Walk a commit through dev → qa → prod on local repos.

    The quickest way to see fleetflow work. Builds a control-plane repo and a GitOps repo from the examples,
    pushes a commit to main and walks it through dev → qa → prod (PRs, merges, simulated clusters reporting,
    gates), then a second commit whose qa rollout fails and stops before prod. Ends with `fleetflow status`
    and the commands to look around. Local only; no network; writes only in --dir.

    \b
    Examples:
      fleetflow demo
      fleetflow demo --dir fleetflow-demo
    """
    from fleetflow.demo.story import EXAMPLES, Demo, DemoResult

    with handled(fmt) as reply:
        source = examples or EXAMPLES
        if not (source / "main").is_dir() or not (source / "envs").is_dir():
            raise UsageError(f"no control plane at {source} (expected main/ and envs/): pass --examples DIR")
        # absolute: the repositories are made by git commands run inside it (until 2026-11-29 a relative --dir,
        # the help's own example, stopped at "git config failed: fatal: not in a git directory")
        root = directory.absolute() if directory is not None else Path(tempfile.mkdtemp(prefix="fleetflow-demo-"))
        if directory is not None and directory.exists() and any(directory.iterdir()):
            raise UsageError(f"--dir {directory} is not empty: give a new or empty folder")
        reply.written = f"The demo stopped; what it built so far is in {root}."
        say = click.echo if fmt == "text" else (lambda _text: None)
        started = time.monotonic()
        entries = Demo(root, say, source).run()
        seconds = time.monotonic() - started

        def text() -> None:
            click.echo(f"\nDone in {seconds:.1f}s.")
            for line in look_around(root, source):
                click.echo(line)

        reply.done(
            DemoResult(directory=str(root), seconds=round(seconds, 1), environments=entries), text
        )


def look_around(root: Path, examples: Path) -> list[str]:
    """Where the demo's files are and the exact commands to look at them (they work when copy-pasted)."""
    q = shlex.quote
    cp, gitops = root / "control-plane.git", root / "platform-gitops.git"
    return [
        "",
        "== Look around",
        f"   {root}/",
        "     control-plane.git     the control-plane repo: main + one branch per environment (dev, qa, prod)",
        "     platform-gitops.git   the GitOps repo: one branch per environment, written through fleetflow's PRs",
        "     work-control-plane/   a checkout of main (the commits above were made here)",
        "   PRs and commit statuses of the local forge live in the repos themselves (refs/fleetflow/forge).",
        "",
        f"   fleetflow status --forge local --control-plane {q(str(cp))}",
        f"   git --git-dir {q(str(gitops))} log --oneline qa",
        f"   git --git-dir {q(str(gitops))} show prod:.fleetflow/index/all.json",
        f"   git --git-dir {q(str(cp))} log --oneline --all --decorate",
        f"   fleetflow validate --main {q(str(examples / 'main'))} --env {q(str(examples / 'envs' / 'dev'))}",
    ]
