"""Durations as people write them in YAML: ``90``, ``90s``, ``15m``, ``1h30m``.

They are parsed once, when a resource is read (``RolloutPolicy.soak_time`` and ``timeout`` are ``timedelta``
fields), and shown back with :func:`format_duration`.
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value: str | int) -> timedelta:
    """``90``, ``"90s"``, ``"2m"``, ``"1h30m"`` → timedelta. Raises ValueError with the accepted forms, or when
    the duration is longer than a ``timedelta`` holds (999,999,999 days: an OverflowError until 2026-11-28)."""
    try:
        if isinstance(value, int):
            return timedelta(seconds=value)
        text = value.strip()
        if text.isdigit():
            return timedelta(seconds=int(text))
        match = _DURATION.match(text)
        if not text or not match:
            raise ValueError(f"invalid duration {value!r}: use e.g. 90s, 15m, 1h30m")
        hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
        return timedelta(hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise ValueError(f"duration {value!r} is too long: give one under 999,999,999 days") from None


def format_duration(value: timedelta) -> str:
    """``timedelta`` → ``1h30m``, ``15m``, ``90s`` → ``1m30s``, zero → ``0s`` (the form ``parse_duration`` reads)."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{seconds}s" if seconds else "")
    return text or "0s"
