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
import stat
from pathlib import Path
from typing import IO, Any, Literal

import click
from click.core import ParameterSource

from fleetflow.errors import Problem

Kind = Literal["folder", "file"]


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
        path = Path(text)
        found = path_problem(path, self.kind, self.exists)
        if found is not None:
            said, hint = found
            if hint is None:  # the wrong kind: which kind the option takes is in its help
                hint = f"{flag} takes a {self.kind}" + (f"; see `{ctx.command_path} --help`" if ctx else "")
            raise PathProblem(Problem(f"{flag} {text} {said}", None, hint), ctx)
        return path


def path_problem(path: Path, kind: Kind, exists: bool = True) -> tuple[str, str | None] | None:
    """What is wrong with ``path`` as a ``kind`` given on the command line, or None: what it is (``does not
    exist``) and a hint (None for the wrong kind: the option's own words say which kind it takes)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if exists:
            return "does not exist", f"check the path; relative paths start from the current folder, {Path.cwd()}"
        return _above(path)
    except NotADirectoryError:
        return _above(path)
    except PermissionError:
        return "cannot be reached (permission denied on a folder above it)", _permission_hint(path.parent)
    except OSError as error:
        return f"cannot be read ({error.strerror or error})", "check the path and the file system it is on"
    if kind == "folder" and not stat.S_ISDIR(mode):
        what = "a file" if stat.S_ISREG(mode) else "not a folder"
        return f"is {what}, not a folder", None
    if kind == "file" and stat.S_ISDIR(mode):
        return "is a folder, not a file", None
    if not _readable(path, kind):
        return "cannot be read (permission denied)", _permission_hint(path)
    return None


def _above(path: Path) -> tuple[str, str | None] | None:
    """A path that does not exist: the nearest existing path above it must be a folder (None when it is)."""
    for parent in path.absolute().parents:
        try:
            mode = parent.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None  # the write says what the system refuses (fleetflow.cli.errors.system_error)
        if stat.S_ISDIR(mode):
            return None
        return f"is below {parent}, which is a file, not a folder", "give a path whose folders are folders"
    return None


def _readable(path: Path, kind: Kind) -> bool:
    """Whether this process may read ``path`` (a folder: list it and enter it). As root every folder is readable:
    the kernel's permission checks do not apply to it."""
    if kind == "file":
        return os.access(path, os.R_OK)
    try:
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError:
        return False
    return os.access(path, os.X_OK)


def _permission_hint(path: Path) -> str:
    return f"run as a user who may read it, or change its permissions (ls -ld {path})"


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
