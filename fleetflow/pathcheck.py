"""What is wrong with a path a user named (a command-line option, ``$FLEETFLOW_CONFIG``): missing, of the wrong
kind, below a file, unreadable. One wording for all of them; ``fleetflow.cli.paths`` makes it a usage error for
every path option, ``fleetflow.settings`` for the config file an environment variable names."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

Kind = Literal["folder", "file"]


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
