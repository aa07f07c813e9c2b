"""How long work tells the person waiting: a small interface the core calls, with no terminal in sight.

The core (rendering, fetching workload repos, talking to the forge) reports ``begin`` / ``advance`` / ``end`` on a
``Progress`` it is given; it never imports rich or click. The command line passes an implementation that draws a
progress bar on a terminal, prints plain lines in CI, or stays silent (``fleetflow.cli.terminal``). The default,
``NO_PROGRESS``, does nothing, so library callers and tests pay nothing.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def begin(self, what: str, total: int | None = None) -> None:
        """A piece of work starts: ``what`` for people, ``total`` steps when known."""

    def advance(self, steps: int = 1) -> None:
        """``steps`` more steps of the current work are done."""

    def end(self) -> None:
        """The current work is over (done or failed)."""


class NoProgress:
    def begin(self, what: str, total: int | None = None) -> None:
        return None

    def advance(self, steps: int = 1) -> None:
        return None

    def end(self) -> None:
        return None


NO_PROGRESS: Progress = NoProgress()
