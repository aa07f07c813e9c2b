"""Folders and files named on the command line: one check for every command's path options, one message style
(``usage error: --main /x: no such folder (hint: ...)``, or the JSON envelope's problem) and one exit code.

A path option that names nothing usable is a usage error (exit 2), whatever the option: the command line is what
is wrong, not the control plane it points at (exit 1 is for the trees' content, with a file:line:col), and the fix
is to change the command line (a workflow's ``--main`` path, a script's ``--output``). Until 2026-11-29 the same
mistake gave click's ``Error: Invalid value for '--main': Directory '/x' is a file.`` (2), ``directory not found``
(1), ``forge/git error: cannot run git rev-parse`` (3, ``validate --repo``) or ``no shard manifest`` (1,
``schedule --stitch``), depending on the option and the mistake.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import click
from click.core import ParameterSource

from fleetflow.errors import Problem
from fleetflow.pathcheck import Kind, path_problem


class PathProblem(click.UsageError):
    """A path option that names nothing usable: said like every other fleetflow error (``usage error: ...``; with
    ``--format json`` :class:`fleetflow.cli.errors.FleetflowGroup` prints :attr:`problem` in the envelope)."""

    def __init__(self, problem: Problem, ctx: click.Context | None) -> None:
        super().__init__(str(problem), ctx)
        self.problem = problem

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"usage error: {self.problem}", file=file, err=file is None)


class CommandPath(click.ParamType[Path, "str | os.PathLike[str]"]):
    """A folder (``kind="folder"``) or file option, as a :class:`~pathlib.Path`. It must not be empty, must be of
    its kind and readable when it exists, and must exist unless ``exists=False`` (a folder the command makes, e.g.
    ``--output``: then the nearest existing folder above it must be a folder)."""

    def __init__(self, kind: Kind = "folder", *, exists: bool = True) -> None:
        self.kind = kind
        self.exists = exists
        self.name = "directory" if kind == "folder" else "file"  # the metavar click.Path showed: DIRECTORY, FILE

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        text = os.fspath(value)
        flag = _flag(param, ctx)
        if not text.strip():  # Path("") is the current folder: `--output ''` rendered into it until 2026-11-28
            raise PathProblem(Problem(f"{flag} is empty", None, f"give a {self.kind}"
                                      + (" ('.' for the current one)" if self.kind == "folder" else "")), ctx)
        path = Path(_home(text))
        found = path_problem(path, self.kind, self.exists)
        if found is not None:
            said, hint = found
            if hint is None:  # the wrong kind: which kind the option takes is in its help
                hint = f"{flag} takes a {self.kind}" + (f"; see `{ctx.command_path} --help`" if ctx else "")
            raise PathProblem(Problem(f"{flag} {text} {said}", None, hint), ctx)
        return path


def _home(text: str) -> str:
    """``text`` with a leading ``~`` or ``~user`` made the home folder, as a shell does for a word that starts with
    one. A shell expands it only at the start of a word (glibc manual, "Details of Tilde Expansion":
    https://sourceware.org/glibc/manual/2.42/html_node/Tilde-Expansion.html), so ``--output=~/gitops/dev`` (or a
    quoted ``"~/x"``, or a path from a config or CI variable) reached fleetflow as it was typed: until 2026-11-29
    ``render`` then made a folder named ``~`` in the current folder and wrote there (exit 0), and ``--main=~/cp``
    was "does not exist" for a folder that does. A user who means a folder named ``~`` writes ``./~``."""
    return os.path.expanduser(text) if text.startswith("~") else text


def _flag(param: click.Parameter | None, ctx: click.Context | None) -> str:
    """The option as the user gave it: ``--plan-dir``, or ``--plan-dir ($FLEETFLOW_PLAN_DIR)`` when the value came
    from its environment variable."""
    if param is None:
        return "the path"
    flag = max(param.opts, key=len) if isinstance(param, click.Option) else param.human_readable_name
    envvar = getattr(param, "envvar", None)
    if ctx is not None and param.name and ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
        flag += f" (${envvar})" if isinstance(envvar, str) else " (from its environment variable)"
    return flag
