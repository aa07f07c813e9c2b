"""The one place where a command's outcome becomes output and an exit code.

Every command, and every error (click's own usage errors included), ends in one :class:`Reply`. With
``--format json`` it prints one envelope::

    {"ok": bool, "exitCode": int, "problems": [...], "warnings": [...], "result": {...} | null}

``ok`` is true exactly when ``exitCode`` is 0; ``problems`` and ``warnings`` are lists of
``{"message", "location": {"file", "line", "column"} | null, "hint"}``; ``result`` is the command's own data
(null when the command stopped before it had any). The exit codes are :class:`fleetflow.errors.ExitCode`:
0 done, 1 the input or the gate says no, 2 usage error, 3 forge or git failure. With ``--format text`` the
result goes to stdout, problems and warnings to stderr (one line each), followed by one sentence that says what
was and was not written when the command writes anything.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from fleetflow.cli.github_actions import ActionsStep, reporting
from fleetflow.cli.paths import PathProblem
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import ExitCode, FleetflowError, ForgeError, Location, Problem, UsageError
from fleetflow.results import to_data

FLEET_WRITTEN = (
    "Stopped at this error. The steps finished before it are printed above; running the same command again is "
    "safe (each write is idempotent)."
)
FLEET_NO_STEP = (  # FLEET_WRITTEN's sentence until a step is said (Reply's until_a_step): nothing is above yet
    "Stopped at this error, before any step finished; running the same command again is safe (each write is "
    "idempotent)."
)
LABELS = {ExitCode.REFUSED: "error", ExitCode.USAGE: "usage error", ExitCode.FORGE: "forge/git error"}


def envelope(
    exit_code: int, result: Any, problems: Iterable[Problem] = (), warnings: Iterable[Problem] = ()
) -> dict[str, Any]:
    """The JSON every command prints with ``--format json`` (``result``: a model, dumped by alias)."""
    return {
        "ok": exit_code == ExitCode.DONE,
        "exitCode": int(exit_code),
        "problems": to_data(list(problems)),
        "warnings": to_data(list(warnings)),
        "result": to_data(result),
    }


def print_envelope(data: dict[str, Any]) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


class Reply:
    """What one command run says: warnings as they come, then either :meth:`done` or a failure.

    ``written`` is the sentence printed (text format) when the run fails: what was and was not written. Commands
    that write set it and update it as they go (``"Nothing was written to out/dev."`` before the first write);
    read-only commands leave it empty and say nothing about writing. ``until_a_step``: the sentence to print
    instead until the run says its first step (:meth:`stepped`), for a ``written`` that points at the steps
    printed above it (the fleet commands: :data:`FLEET_NO_STEP` until then, :data:`FLEET_WRITTEN` after).
    """

    def __init__(self, fmt: str, written: str = "", step: ActionsStep | None = None,
                 until_a_step: str | None = None) -> None:
        self.json = fmt == "json"
        self.written = written if until_a_step is None else until_a_step
        self._after_a_step = written
        self.step = step  # --github-actions: the step gets the envelope, its problems and warnings too
        self.warnings: list[Problem] = []
        self.result: Any = None

    def stepped(self) -> None:
        """A step of the run was said (``Context.say``): from now on a failure's sentence points at the steps."""
        self.written = self._after_a_step

    def warn(self, problem: Problem | str) -> None:
        warning = problem if isinstance(problem, Problem) else Problem(problem)
        self.warnings.append(warning)
        if not self.json:
            TERMINAL.warn(str(warning))  # stderr; coloured on a terminal; silent with --quiet

    def done(
        self,
        result: Any,
        text: Callable[[], None] | None = None,
        *,
        problems: Sequence[Problem] = (),
        exit_code: ExitCode | None = None,
    ) -> None:
        """The command finished: print ``result`` (JSON) or run ``text`` (text); exit with ``exit_code`` (default:
        1 when there are problems, else 0). Problems here are part of a finished run (e.g. held-back assignments):
        the text already says what was written, so no ``written`` sentence follows."""
        code = exit_code if exit_code is not None else (ExitCode.REFUSED if problems else ExitCode.DONE)
        self.result = result
        if self.step is not None:
            self.step.done(envelope(code, result, problems, self.warnings), problems, self.warnings)
        with reader_may_leave():
            if self.json:
                print_envelope(envelope(code, result, problems, self.warnings))
            elif text is not None:
                text()
        if not self.json:
            for problem in problems:
                click.echo(f"{LABELS.get(code, 'error')}: {problem}", err=True)
        if code != ExitCode.DONE:
            sys.exit(int(code))

    def fail(self, error: FleetflowError) -> NoReturn:
        problems = error.problems()
        if self.step is not None:
            self.step.failed(error, self.warnings)
        if self.json:
            print_envelope(envelope(error.exit_code, self.result, problems, self.warnings))
        else:
            label = LABELS.get(error.exit_code, "error")
            for problem in problems:
                click.echo(f"{label}: {problem}", err=True)
            if len(problems) > 1:
                click.echo(f"{len(problems)} problems found.", err=True)
            if self.written:
                click.echo(self.written, err=True)
        sys.exit(int(error.exit_code))


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """A command's output piped to a reader that stops reading (``fleetflow plan ... | head``, ``less`` quit early):
    the rest of the output is dropped and the command exits with its own code (its work is done: render wrote the
    tree before it printed what it wrote). Python ignores
    SIGPIPE and raises BrokenPipeError on the next write instead (docs.python.org, ``signal``, "Note on SIGPIPE",
    which points stdout at ``os.devnull`` so that the final flush does not raise again). Until 2026-11-29 the error
    reached :func:`handled` as a ``ConnectionError``: "forge/git error: connection failed: [Errno 32] Broken pipe
    (hint: check the network and the forge's address ...)", exit 3, after a render that had written everything."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@contextmanager
def handled(fmt: str, written: str = "", step: ActionsStep | None = None,
            until_a_step: str | None = None) -> Iterator[Reply]:
    """Run a command body; a FleetflowError ends the process with its exit code and clear messages. With a GitHub
    Actions ``step`` (``--github-actions``), the step also reports the run: outputs, annotations, job summary.
    ``written`` and ``until_a_step``: :class:`Reply`'s."""
    reply = Reply(fmt, written, step, until_a_step)
    with reporting(step):
        try:
            yield reply
        except FleetflowError as error:
            reply.fail(error)
        except OSError as error:  # a path the system refuses: one problem, not a traceback
            reply.fail(system_error(error))


def system_error(error: OSError) -> FleetflowError:
    """What an :class:`OSError` that reached a command says: the path and the system's words, and how to fix it.
    A folder given on the command line that cannot be made or written (``--output``, ``--plan-dir``,
    ``--artifact``, the cache folder) is a usage error (2); a connection that failed (``requests`` raises
    ``OSError`` subclasses) a forge failure (3). Until 2026-11-28 each was a traceback."""
    where = Location(os.fsdecode(error.filename)) if error.filename is not None else None
    if isinstance(error, ConnectionError | TimeoutError) or type(error).__module__.startswith(("requests", "urllib3")):
        return ForgeError(f"connection failed: {error} (hint: check the network and the forge's address, then run "
                          "the command again)")
    words = error.strerror or str(error)
    hint = ("check the path: its folders must exist (or be creatable), a folder must not be a file or the "
            "reverse, and you must be allowed to read and write there")
    return UsageError(Problem(f"{words} (errno {error.errno})" if error.errno else words, where, hint))


def json_requested(args: Sequence[str]) -> bool:
    """Whether the command line asks for ``--format json`` (looked at before click has parsed it)."""
    for i, arg in enumerate(args):
        if arg == "--format" and i + 1 < len(args) and args[i + 1] == "json":
            return True
        if arg == "--format=json":
            return True
    return False


class FleetflowGroup(click.Group):
    """click's group, except that click's own usage errors (a missing option, a bad choice, an unknown command)
    also come as the JSON envelope (exit 2) when the command line asked for ``--format json``."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        wants_json = json_requested(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            self._usage_json(error, wants_json)
            raise
        ctx.meta["fleetflow.json"] = wants_json
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            self._usage_json(error, bool(ctx.meta.get("fleetflow.json")))
            raise

    @staticmethod
    def _usage_json(error: click.ClickException, wants_json: bool) -> None:
        if not wants_json:
            return
        if isinstance(error, PathProblem):  # a path option: its own message and hint, as in the text
            problem = error.problem
        elif isinstance(error, click.UsageError) and error.ctx is not None:
            problem = Problem(error.format_message(), None, f"see `{error.ctx.command_path} --help`")
        else:
            problem = Problem(error.format_message())
        print_envelope(envelope(error.exit_code, None, [problem]))
        raise click.exceptions.Exit(error.exit_code)
