"""Canonical JSON: the one text of a value that fingerprints hash and the ``sha256`` template filter reads.

Sorted keys, no spaces, UTF-8 text as is (not ``\\u`` escapes), anything JSON has no type for as its ``str``.
Equal data, equal text, whatever order its maps were built in.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
