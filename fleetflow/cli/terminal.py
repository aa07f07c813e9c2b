"""The terminal: progress, narration, warnings and colour, decided once from where the output goes.

* Progress and narration go to **stderr**, so stdout stays the command's result (text or JSON).
* On a terminal: a ``rich`` progress bar (or a spinner showing the current step, with the time spent) that
  disappears when the work is done. In CI (``CI=true``, as GitHub Actions sets it): plain lines, one when a piece
  of work starts and one when it ends. Elsewhere (a pipe, a file) and with ``--format json``: no progress.
* Colour only on a terminal, and never when ``NO_COLOR`` is set to a non-empty value (https://no-color.org).
* ``--quiet``: no progress, no narration, no warnings (errors and the result only). ``--verbose``: every file
  written or deleted, and how long each piece of work took.

The core never imports this module: it reports through ``fleetflow.progress.Progress``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click

from fleetflow.progress import NO_PROGRESS, Progress


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def colour_allowed() -> bool:
    return _stderr_is_terminal() and not os.environ.get("NO_COLOR", "")


@dataclass
class Terminal:
    quiet: bool = False
    verbose: bool = False

    def interactive(self) -> bool:
        """Draw progress bars: stderr is a terminal and this is not a CI run."""
        return _stderr_is_terminal() and not in_ci()

    def style(self, text: str, colour: str, bold: bool = False) -> str:
        return click.style(text, fg=colour, bold=bold) if colour_allowed() else text

    def say(self, text: str) -> None:
        """Narration (what is being done), on stderr; silent with --quiet."""
        if not self.quiet:
            click.echo(text, err=True, color=colour_allowed())

    def detail(self, text: str) -> None:
        """Only with --verbose."""
        if self.verbose and not self.quiet:
            click.echo(text, err=True, color=colour_allowed())

    def warn(self, text: str) -> None:
        if not self.quiet:
            click.echo(f"{self.style('warning:', 'yellow', bold=True)} {text}", err=True, color=colour_allowed())

    def progress(self, fmt: str = "text") -> Progress:
        """A progress bar on a terminal, plain lines in CI, nothing otherwise (a pipe, --quiet, --format json)."""
        if self.quiet or fmt == "json":
            return NO_PROGRESS
        if self.interactive():
            return RichProgress(self)
        if in_ci():
            return PlainProgress(self)
        return NO_PROGRESS

    @contextmanager
    def activity(self, text: str) -> Iterator[ActivityLine]:
        """A spinner with the current step and the time spent (on a terminal) while waiting on git or the forge;
        in CI a plain line. ``line.update(text)`` shows the next step."""
        line = ActivityLine(self, text)
        with line:
            yield line


@dataclass
class ActivityLine:
    terminal: Terminal
    text: str
    _status: Any = field(default=None, repr=False)

    def __enter__(self) -> ActivityLine:
        if self.terminal.quiet:
            return self
        if self.terminal.interactive():
            from rich.console import Console  # imported when drawn: commands in pipes never load rich

            console = Console(stderr=True, no_color=not colour_allowed())
            self._status = console.status(self.text, spinner="dots")
            self._status.start()
        elif in_ci():
            self.terminal.say(self.text)
        return self

    def print(self, text: str) -> None:
        """A line of narration: above the spinner on a terminal, plain otherwise; nothing with --quiet."""
        if self.terminal.quiet:
            return
        if self._status is not None:
            self._status.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            self.terminal.say(text)

    def update(self, text: str) -> None:
        self.text = text
        if self._status is not None:
            self._status.update(text)

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


@dataclass
class PlainProgress:
    """CI and pipes: a line when work starts, one when it ends (with the time it took)."""

    terminal: Terminal
    _what: str = ""
    _started: float = 0.0
    _total: int | None = None

    def begin(self, what: str, total: int | None = None) -> None:
        self._what, self._total, self._started = what, total, time.monotonic()
        count = f" ({total})" if total is not None else ""
        self.terminal.say(f"{what}{count}…")

    def advance(self, steps: int = 1) -> None:
        return None

    def end(self) -> None:
        if self._what:
            self.terminal.say(f"{self._what}: done in {time.monotonic() - self._started:.1f}s")
            self._what = ""


@dataclass
class RichProgress:
    """A terminal: a transient rich progress bar on stderr."""

    terminal: Terminal
    _bar: Any = field(default=None, repr=False)
    _task: Any = None
    _what: str = ""
    _started: float = 0.0

    def begin(self, what: str, total: int | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.end()
        console = Console(stderr=True, no_color=not colour_allowed())
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             console=console, transient=True)
        self._bar.start()
        self._task = self._bar.add_task(what, total=total)
        self._what, self._started = what, time.monotonic()

    def advance(self, steps: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, steps)

    def end(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            self.terminal.detail(f"{self._what}: done in {time.monotonic() - self._started:.1f}s")


TERMINAL = Terminal()
