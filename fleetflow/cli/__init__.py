"""fleetflow's command line: one thin module per command (parse, call the core, print), the demo included.

``common`` holds the shared options and loaders, ``errors`` turns every outcome and every error into the
one JSON envelope and the one exit-code table (``fleetflow.errors.ExitCode``). The cli may import every other
folder; nothing imports the cli.
"""

from __future__ import annotations

import click

from fleetflow import __version__
from fleetflow.cli.check_rollout import check_rollout_command
from fleetflow.cli.demo import demo
from fleetflow.cli.doctor import doctor_command
from fleetflow.cli.errors import FleetflowGroup
from fleetflow.cli.explain import explain
from fleetflow.cli.init import init_command
from fleetflow.cli.metrics import metrics
from fleetflow.cli.plan import plan
from fleetflow.cli.promote import promote
from fleetflow.cli.reconcile import reconcile_command
from fleetflow.cli.render import render
from fleetflow.cli.route import route_command
from fleetflow.cli.schedule import schedule
from fleetflow.cli.status import status
from fleetflow.cli.terminal import TERMINAL
from fleetflow.cli.validate import validate
from fleetflow.collector import tune


@click.group(cls=FleetflowGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="fleetflow")
@click.option("-q", "--quiet", is_flag=True, help="No progress, narration or warnings: errors and the result only.")
@click.option("-v", "--verbose", is_flag=True, help="Also every file written or deleted, and how long work took.")
def main(quiet: bool, verbose: bool) -> None:
    """fleetflow: promote one control-plane commit through your fleet, dev → qa → prod.

    \b
    The control-plane repo's main branch holds what is promoted (environments, templates, workloads);
    each environment branch holds what belongs to that environment (cluster types, clusters, config,
    scheduling policies, where its GitOps output goes). fleetflow schedules, composes, validates and
    renders them into the platform GitOps repo.

    \b
    Try it, in fleetflow's source folder (or run `fleetflow demo` anywhere: the whole flow on local repos):
      fleetflow validate --main examples/control-plane/main --env examples/control-plane/envs/dev
      fleetflow render   --main examples/control-plane/main --env examples/control-plane/envs/dev \\
                         --environment dev --output out/dev
      fleetflow explain  --main examples/control-plane/main --env examples/control-plane/envs/dev \\
                         --environment dev --assignment aks-westeurope/observability-dev --key LOG_LEVEL

    \b
    validate, plan, render and explain read checkouts of the control-plane repo and write at most --output;
    promote, schedule, check-rollout, reconcile, status, metrics, doctor and init work on the repos through
    git and the forge (GitHub, or --forge local). `fleetflow COMMAND --help` shows each with examples.

    Exit codes: 0 done, 1 the input (or the gate) says no, 2 usage error, 3 forge or git failure.

    Progress and narration go to stderr: a progress bar on a terminal, plain lines in CI (CI=true); colour only
    on a terminal and never with NO_COLOR set.
    """
    TERMINAL.quiet, TERMINAL.verbose = quiet, verbose and not quiet


main.add_command(render)
main.add_command(validate)
main.add_command(explain)
main.add_command(plan)
main.add_command(promote)
main.add_command(schedule)
main.add_command(check_rollout_command)
main.add_command(status)
main.add_command(metrics)
main.add_command(demo)
main.add_command(route_command)
main.add_command(reconcile_command)
main.add_command(init_command)
main.add_command(doctor_command)


def run() -> None:
    """The ``fleetflow`` executable: one command in a process of its own (:func:`fleetflow.collector.tune`)."""
    tune()
    main()
