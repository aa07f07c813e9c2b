"""A command run as a GitHub Actions step (``--github-actions``): step outputs, annotations and the job summary.

What fleetflow's composite actions (``actions/*/action.yml``) need from a run, made here from the result models
(``fleetflow.results``) so that every caller (the actions, a user's own step) gets the same:

* everything the command prints goes out with workflow commands switched off (``::stop-commands::<token>`` ...
  ``::<token>::``), so no text from a commit, a PR or an event can act as a command;
* annotations are the only lines written with commands on: each is one line that is wholly one command, its data
  escaped so that it can neither end it nor start another;
* step outputs are appended to ``$GITHUB_OUTPUT`` in the multi-line form ``name<<delimiter`` with a random
  delimiter, so a value cannot end early or set another output;
* each problem of the run is an ``::error file=…,line=…,col=…::message`` annotation, each warning a ``::warning``;
  a run that ends with a result also gets its outputs and ``::notice`` lines;
* the job summary (``$GITHUB_STEP_SUMMARY``) is the report template ``job_summary.md.j2``: this run (with every
  problem and warning, up to 200 of each), then the fleet status as Markdown (tables and the Mermaid chain).

GitHub's limits, which would otherwise lose part of a run without a word: a step's annotations of each kind
(error, warning, notice) beyond the 10th are not shown (actions/toolkit ``docs/problem-matchers.md``,
"Limitations": "10 warning annotations, 10 error annotations, and 10 notice annotations per step"), so the 10th of a
kind says how many more there are and where they are; a step summary over 1 MiB is dropped whole (actions/runner
``src/Runner.Worker/FileCommandManager.cs``, ``CreateStepSummaryCommand``: "$GITHUB_STEP_SUMMARY upload aborted,
supports content up to a size of 1024k"), so this run's part is cut to what fits, and says so.

The rules are GitHub's, "Workflow commands for GitHub Actions"
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands): "Setting an output
parameter" and "Multiline strings" (``{name}<<{delimiter}`` ... ``{delimiter}``), "Adding a job summary",
"Stopping and starting workflow commands", "Setting an error message" (``::error file=,line=,col=,title=::``). The
escaping is the one the runner undoes (actions/runner ``src/Runner.Common/ActionCommand.cs``,
``_escapeDataMappings``: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``; ``_escapePropertyMappings``: the same and
``:`` → ``%3A``, ``,`` → ``%2C``).

This module imports no promotion code at run time (the result types are for the type checker only), so every
command can take ``--github-actions`` without paying for it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from fleetflow.errors import FleetflowError, Problem
from fleetflow.report import PROBLEMS_IN_SUMMARY, render_report

if TYPE_CHECKING:
    from fleetflow.promotion.check_rollout import RolloutOutcome
    from fleetflow.promotion.events import Route
    from fleetflow.promotion.promote import PromoteOutcome
    from fleetflow.promotion.reconcile import ReconcileOutcome
    from fleetflow.promotion.schedule import ScheduleOutcome
    from fleetflow.promotion.shards import ShardManifest
    from fleetflow.render.summary import ValidateSummary

Level = Literal["error", "warning", "notice"]
F = TypeVar("F", bound=Callable[..., Any])
ANNOTATIONS_PER_STEP = 10  # of each level: GitHub shows no more (the module's docstring)
SUMMARY_LIMIT = 1024 * 1024  # bytes of one step's summary file: above it GitHub shows none of it


# --- workflow commands ---

def escape_data(text: str) -> str:
    """A command's message as the runner reads it back (``_escapeDataMappings``): ``%`` first, then CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): the data escapes plus ``:`` and ``,``, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: object) -> str:
    """One workflow command line, ``::name key=value,...::message``; empty properties are left out."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items()
                     if value not in (None, ""))
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def problem_command(problem: Problem, title: str, level: Level = "error") -> str:
    """An ``::error`` (or ``::warning``) annotation at the problem's file, line and column when they are known."""
    message = problem.message + (f" (hint: {problem.hint})" if problem.hint else "")
    where = problem.location
    return command(level, message, title=title, file=where.file if where else None,
                   line=where.line if where else None, col=where.column if where else None)


def output_lines(outputs: Mapping[str, str]) -> str:
    """The ``$GITHUB_OUTPUT`` text for ``outputs``: each value between a random delimiter it does not contain."""
    parts = []
    for key, value in outputs.items():
        delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
        while delimiter in value:  # a 128-bit random name; checked all the same
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
        parts.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(parts)


# --- what each command reports ---

@dataclass
class Report:
    """What one run hands to the workflow: outputs, notices, and the job summary's own section."""

    outputs: dict[str, str]
    annotations: list[tuple[Level, str]] = field(default_factory=list)
    summary: str = ""


def _summary(command_name: str, **context: Any) -> str:
    base: dict[str, Any] = {"outcome": None, "promotions": [], "problems": [], "warnings": [], "exit_code": 0}
    return render_report("job_summary.md.j2", command=command_name, **{**base, **context})


def _pr_field(outcome: ScheduleOutcome | None, key: Literal["number", "url"]) -> str:
    pr = outcome.pull_request if outcome else None
    return "" if pr is None else str(getattr(pr, key))


def schedule_report(outcome: ScheduleOutcome) -> Report:
    outputs = {"operation": outcome.operation, "commit": outcome.main_commit,
               "pull-request-number": _pr_field(outcome, "number"), "pull-request-url": _pr_field(outcome, "url")}
    notices: list[tuple[Level, str]] = [("notice", outcome.message)] if outcome.message else []
    return Report(outputs, notices, _summary("schedule", outcome=outcome))


def shard_report(manifest: ShardManifest, artifact: Path) -> Report:
    """One shard job (``schedule --shard K/N``): ``artifact-dir`` names the folder to upload (manifest + bundle)."""
    changes = manifest.changes
    text = (f"{manifest.environment}: shard {manifest.shard}: {manifest.rendered} assignments rendered, "
            f"{len(manifest.folders)} cluster-type folders changed ({len(changes.added)} added, "
            f"{len(changes.changed)} changed, {len(changes.removed)} removed); the stitch job commits them")
    return Report({"artifact-dir": str(artifact), "shard": manifest.shard, "commit": manifest.main_commit},
                  [("notice", text)], f"### fleetflow schedule: shard {manifest.shard}\n\n{text}\n")


def promote_report(promotions: Sequence[PromoteOutcome]) -> Report:
    def operation(p: PromoteOutcome) -> str:
        return p.schedule.operation if p.schedule else ("held" if p.held else "none")

    outputs = {
        "operation": ",".join(operation(p) for p in promotions),
        "commit": promotions[0].commit if promotions else "",
        "environments": json.dumps([p.environment for p in promotions]),
        "pull-request-number": ",".join(_pr_field(p.schedule, "number") for p in promotions),
        "pull-request-url": ",".join(_pr_field(p.schedule, "url") for p in promotions),
    }
    return Report(outputs, [("notice", p.message) for p in promotions],
                  _summary("promote", promotions=list(promotions)))


def check_rollout_report(outcome: RolloutOutcome) -> Report:
    outputs = {"gate-state": outcome.state, "description": outcome.description,
               "promoted": json.dumps([p.environment for p in outcome.promoted])}
    notice = f"{outcome.environment}: {outcome.state}: {outcome.description}"
    # a failed gate is one of the run's problems: an ::error of its own
    notices: list[tuple[Level, str]] = [] if outcome.state == "failure" else [("notice", notice)]
    return Report(outputs, notices, _summary("check-rollout", outcome=outcome))


def reconcile_report(outcome: ReconcileOutcome) -> Report:
    steps = {e.environment: [s.step for s in e.did] for e in outcome.environments if e.did}
    outputs = {"steps": json.dumps(steps), "main-commit": outcome.main_commit,
               "waiting-for-reports": json.dumps(outcome.waiting_for_reports),
               "hold": outcome.hold.ended if outcome.hold else ""}
    # an environment's error is one of the run's problems: an ::error of its own
    notices: list[tuple[Level, str]] = [("notice", f"{e.environment}: {s.step}: {s.message}")
                                        for e in outcome.environments for s in e.did]
    if outcome.hold is not None:
        notices.append(("notice", outcome.hold.message))
    return Report(outputs, notices, _summary("reconcile", outcome=outcome))


def validate_report(summary: ValidateSummary, warnings: Sequence[Problem], failing: bool) -> Report:
    """``validate --into``: the environments checked (with the trees paired) and, in the summary, the warnings
    (each is also a ``::warning`` annotation at its file and line)."""
    checked = [e.model_dump(by_alias=True) for e in summary.environments]
    notices: list[tuple[Level, str]] = [
        ("notice", f"{e.name}: {e.assignments} assignments checked ({e.main_tree} + {e.env_tree})")
        for e in summary.environments
    ]
    return Report({"environments": json.dumps(checked)}, notices,
                  _summary("validate", outcome=summary, warnings=list(warnings), exit_code=int(failing)))


def route_report(decision: Route) -> Report:
    envs = list(decision.environments)
    outputs = {"action": decision.action, "environments": json.dumps(envs), "matrix": json.dumps(envs or [""]),
               "commit": decision.commit, "release": "true" if decision.release else "false",
               "reason": decision.reason}
    # an invalid request is one of the run's problems: an ::error of its own
    notices: list[tuple[Level, str]] = [("notice", decision.reason)] if decision.reason and not decision.invalid else []
    return Report(outputs, notices, _summary("route", outcome=decision))


def status_page_report(path: str) -> Report:
    """``status --format html --output DIR``: the page's absolute path (for actions/upload-pages-artifact); the
    summary is the delivery metrics alone (the page itself is the status)."""
    return Report({"path": path})


def failure_summary(command_name: str, error: FleetflowError, warnings: Sequence[Problem] = ()) -> str:
    return _summary(command_name, problems=error.problems(), warnings=list(warnings),
                    exit_code=int(error.exit_code))


def warnings_summary(warnings: Sequence[Problem]) -> str:
    """A finished run's warnings, under its own part of the summary (validate's summary has them already)."""
    return render_report("job_summary_warnings.md.j2", warnings=list(warnings)) if warnings else ""


def capped(level: Level, lines: Sequence[str], title: str, where: str) -> list[str]:
    """The annotations of one level as GitHub shows them: all of them up to :data:`ANNOTATIONS_PER_STEP`; past that,
    the first 9 and a 10th that says how many more there are and ``where`` to read them."""
    if len(lines) <= ANNOTATIONS_PER_STEP:
        return list(lines)
    shown = ANNOTATIONS_PER_STEP - 1
    kind = {"error": "errors", "warning": "warnings", "notice": "notices"}[level]
    more = (f"… and {len(lines) - shown} more {kind}, not shown as annotations (GitHub shows {ANNOTATIONS_PER_STEP} "
            f"{kind} per step): all {len(lines)} are in {where}")
    return [*lines[:shown], command(level, more, title=title)]


# --- the step ---

@dataclass
class ActionsStep:
    """One command run as a step. ``begin`` switches workflow commands off for everything the command prints;
    ``end`` switches them on again and writes what was gathered meanwhile: the command's :class:`Report`
    (``report``), the envelope with its problems and warnings (``done``, from ``Reply.done``) or the error
    (``failed``, from ``Reply.fail``)."""

    name: str
    environ: Mapping[str, str]
    job_summary: bool = True
    echo: Callable[[str], None] = field(default=lambda text: click.echo(text))
    _token: str = ""
    _report: Report | None = None
    _extra: str = ""
    _problems: list[Problem] = field(default_factory=list)
    _warnings: list[Problem] = field(default_factory=list)
    _failure: FleetflowError | None = None
    outputs_lost: bool = False  # $GITHUB_OUTPUT could not be written (end): the step must not pass

    @property
    def title(self) -> str:
        return f"fleetflow {self.name}"

    def begin(self) -> None:
        self._token = uuid.uuid4().hex
        self.echo(f"::stop-commands::{self._token}")

    def report(self, report: Report, extra: Callable[[], str] | None = None) -> None:
        """What the run reports; ``extra`` (the fleet status Markdown, or the metrics) is called only for a summary,
        and a forge or git failure there costs the summary that part, not the run."""
        self._report = report
        if self.job_summary and extra is not None:
            try:
                self._extra = extra()
            except FleetflowError as exc:
                self._warnings.append(Problem(f"the job summary's fleet tables could not be read ({exc}); "
                                              "the run itself is reported above"))

    def done(self, envelope: Mapping[str, Any], problems: Sequence[Problem], warnings: Sequence[Problem]) -> None:
        """The command finished (``Reply.done``): the envelope is the ``result`` output; its problems (a failed
        gate, an invalid request) and warnings become annotations."""
        if self._report is not None:
            self._report.outputs["result"] = json.dumps(envelope, indent=2, default=str)
        self._problems = list(problems)
        self._warnings = [*self._warnings, *warnings]

    def failed(self, error: FleetflowError, warnings: Sequence[Problem]) -> None:
        self._failure = error
        self._problems = error.problems()
        self._warnings = [*self._warnings, *warnings]

    def end(self) -> None:
        report = self._report if self._failure is None else None
        if report is not None:  # still inside the stopped region: a value may hold anything
            for key, value in report.outputs.items():
                if key != "result" and "\n" not in value:
                    self.echo(f"output {key}={value}")
        if self._token:
            self.echo(f"::{self._token}::")
            self._token = ""
        if report is not None:
            path = self.environ.get("GITHUB_OUTPUT")
            if path:
                try:
                    with open(path, "a", encoding="utf-8") as handle:
                        handle.write(output_lines(report.outputs))
                except OSError as error:  # the next steps would read empty outputs: the step fails (reporting)
                    self.outputs_lost = True
                    self._problems.append(unwritable("GITHUB_OUTPUT", "the step's outputs", error))
        summary = self.job_summary and bool(self.environ.get("GITHUB_STEP_SUMMARY"))
        annotations: dict[Level, list[str]] = {
            "warning": [problem_command(w, self.title, "warning") for w in self._warnings],
            "error": [problem_command(p, self.title) for p in self._problems],
            "notice": [],
        }
        for level, message in report.annotations if report is not None else ():
            annotations[level].append(command(level, message, title=self.title))
        for level in ("warning", "error", "notice"):
            listed = summary and len(annotations[level]) <= PROBLEMS_IN_SUMMARY
            where = "the job summary and the step's log" if listed else "the step's log"
            for line in capped(level, annotations[level], self.title, where):
                self.echo(line)
        if self._failure is not None:
            self._write_summary(failure_summary(self.name, self._failure, self._warnings))
        elif report is not None:
            warned = warnings_summary(self._warnings) if self.name != "validate" else ""
            self._write_summary("\n".join(part for part in (report.summary, warned, self._extra) if part))

    def _write_summary(self, text: str) -> None:
        """Append ``text`` to the step's summary, cut at a line to what keeps the file within GitHub's 1 MiB (an
        earlier run in the same step may have written to it too)."""
        path = self.environ.get("GITHUB_STEP_SUMMARY")
        if not (self.job_summary and path and text.strip()):
            return
        data = (text.strip("\n") + "\n\n").encode()
        try:
            used = os.path.getsize(path)
        except OSError:
            used = 0
        if used + len(data) > SUMMARY_LIMIT:
            note = (f"\n**… the summary stops here**: GitHub shows no step summary over {SUMMARY_LIMIT // 1024} KiB; "
                    "everything this run did is in the step's log.\n\n").encode()
            room = SUMMARY_LIMIT - used - len(note)
            if room <= 0:
                self.echo(command("warning", f"the job summary of this step is full (GitHub shows none over "
                                  f"{SUMMARY_LIMIT // 1024} KiB): this run's part was left out; it is in the log",
                                  title=self.title))
                return
            cut = data[:room]
            data = cut[:cut.rfind(b"\n") + 1] + note  # a whole line, so no UTF-8 character is split
        try:
            with open(path, "ab") as handle:
                handle.write(data)
        except OSError as error:  # the summary is for people: the run stands, a warning says what is missing
            self.echo(problem_command(unwritable("GITHUB_STEP_SUMMARY", "the job summary", error), self.title,
                                      "warning"))


def unwritable(variable: str, what: str, error: OSError) -> Problem:
    """``$GITHUB_OUTPUT`` or ``$GITHUB_STEP_SUMMARY`` names a file that cannot be written: the runner makes both for
    each step, so the variable came from elsewhere (a container the step started, a copied environment)."""
    words = error.strerror or str(error)
    return Problem(f"{what} could not be written to ${variable} ({os.fsdecode(error.filename or '')}): {words}",
                   None, "GitHub's runner makes this file for each step; when fleetflow runs in a container the step "
                   f"starts, pass the file in with the variable (docker run -e {variable} "
                   f"-v \"${variable}:${variable}\"), or leave out --github-actions")


def actions_step(name: str, enabled: bool, job_summary: bool = True) -> ActionsStep | None:
    return ActionsStep(name, dict(os.environ), job_summary) if enabled else None


@contextmanager
def reporting(step: ActionsStep | None) -> Iterator[None]:
    """Around a command body: workflow commands off while it prints (stderr joins stdout, so the two streams cannot
    overtake each other around the switch), then the outputs, annotations and summary. A bug (an exception that is
    not a FleetflowError; those end in ``Reply.fail``) is not caught: it becomes one ``::error`` annotation, and
    Python's own report of it (exit 1) prints the traceback with commands off (:func:`protected_excepthook`)."""
    if step is None:
        yield
        return
    step.begin()
    try:
        with redirect_stderr(sys.stdout):
            yield
    finally:
        in_flight = sys.exc_info()[1]  # the exception on its way out, if any (SystemExit: Reply's own exit)
        crashed = in_flight is not None and not isinstance(in_flight, SystemExit | KeyboardInterrupt | GeneratorExit)
        sys.stdout.flush()
        step.end()
        if crashed:
            step.echo(command("error", f"{step.title} crashed (a bug in fleetflow; the traceback is in the log)",
                              title=step.title))
            sys.excepthook = protected_excepthook
        elif step.outputs_lost and (in_flight is None or (isinstance(in_flight, SystemExit) and not in_flight.code)):
            raise SystemExit(2)  # a usage error: the step's environment; a run that failed keeps its own code


def protected_excepthook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """Python's report of an uncaught exception, between ``::stop-commands::`` and its token: a traceback may quote
    anything (event data in an exception's message), and none of it may act as a workflow command."""
    token = uuid.uuid4().hex
    print(f"::stop-commands::{token}", flush=True)
    traceback.print_exception(kind, error, trace, file=sys.stdout)
    print(f"::{token}::", flush=True)


def github_actions_options(func: F) -> F:
    """``--github-actions`` and ``--job-summary/--no-job-summary`` on a command."""
    func = click.option(
        "--job-summary/--no-job-summary", default=True, show_default=True,
        help="With --github-actions: write the job summary ($GITHUB_STEP_SUMMARY).",
    )(func)
    return click.option(
        "--github-actions", is_flag=True,
        help="Run as a GitHub Actions step: set step outputs ($GITHUB_OUTPUT), annotate problems, write the job "
        "summary; printed output has workflow commands switched off.",
    )(func)
