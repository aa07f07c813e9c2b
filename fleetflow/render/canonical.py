"""Canonical JSON: the one text of a value that fingerprints hash and the ``sha256`` template filter reads.

Sorted keys, no spaces, UTF-8 text as is (not ``\\u`` escapes), anything JSON has no type for as its ``str``.
Equal data, equal text, whatever order its maps were built in.
"""

from __future__ import annotations

import json
from typing import Any

# one encoder, made once: ``json.dumps`` with any non-default option makes a new JSONEncoder on every call, which
# is a third of the cost of a short value (fingerprints are taken of thousands of them per render); same text
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode


def canonical_json(value: Any) -> str:
    return _ENCODE(value)
