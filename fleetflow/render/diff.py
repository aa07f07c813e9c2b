"""Unified diffs between two file sets (path -> bytes), for ``plan`` and PR bodies."""

from __future__ import annotations

import difflib
from collections.abc import Mapping


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def unified_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> str:
    """A ``git diff``-like text of every path that differs, in path order."""
    return "".join(file_diff(path, old.get(path), new.get(path)) for path in sorted(set(old) | set(new)))


def file_diff(path: str, a: bytes | None, b: bytes | None) -> str:
    """The unified diff of one file (None: absent on that side); empty when both sides are equal."""
    if a == b:
        return ""
    diff = difflib.unified_diff(
        _lines(a),
        _lines(b),
        fromfile=f"a/{path}" if a is not None else "/dev/null",
        tofile=f"b/{path}" if b is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
