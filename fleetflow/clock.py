"""What time it is, in one place.

A clock is a callable that returns the time now (timezone-aware, UTC): :func:`utc_now` is the real one (the default
of every forge and promotion context); :class:`Clock` stands still until moved, so that the demo's soak times pass
at once and tests say exactly when things happen. Imports nothing of fleetflow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

Now = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Clock:
    """A clock that stands still at ``now`` until :meth:`advance` moves it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta
