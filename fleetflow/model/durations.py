"""Durations as people write them in YAML: ``90``, ``90s``, ``15m``, ``1h30m``."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value: str | int) -> timedelta:
    """``90``, ``"90s"``, ``"2m"``, ``"1h30m"`` → timedelta. Raises ValueError with the accepted forms."""
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
