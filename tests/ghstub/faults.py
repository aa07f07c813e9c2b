"""Fault injection: make the next matching request(s) fail the way GitHub fails.

Kinds:

* ``status_5xx``: 502 ``Server Error`` (GitHub's body), the request is not performed.
* ``secondary_rate_limit``: 403 with ``Retry-After`` and the secondary rate limit message.
* ``rate_limit``: 403 (or ``status=429``) ``API rate limit exceeded ...`` with ``x-ratelimit-remaining: 0``
  and ``x-ratelimit-reset`` ``reset_after`` seconds ahead (default one).
* ``drop_after``: the request **is** performed, then the connection is closed without a response, so the client
  sees a connection error after e.g. the create succeeded.
* ``pr_already_exists``: 422 ``A pull request already exists for owner:head.``, the request is not performed.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from .errors import ApiError, pr_already_exists

FaultKind = Literal["status_5xx", "secondary_rate_limit", "rate_limit", "drop_after", "pr_already_exists", "forbidden"]
KINDS: tuple[str, ...] = ("status_5xx", "secondary_rate_limit", "rate_limit", "drop_after", "pr_already_exists",
                          "forbidden")
# What GitHub answers a GitHub App's installation token whose permissions do not cover the request (for example an
# App with contents: write but pull requests read-only: its push works, its "Create a pull request" does not):
# https://github.com/orgs/community/discussions/24374 ("results in 403 and {'message': 'Resource not accessible by
# integration', ...}", answered "the github app permissions did not cover" it).
FORBIDDEN_MESSAGE = "Resource not accessible by integration"

SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out "
    "to GitHub Support for help, please include the request ID {request_id}."
)
PRIMARY_MESSAGE = (
    "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the "
    "request ID {request_id} and timestamp {timestamp}."
)
RATE_LIMIT_DOCS = (
    "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)


@dataclass
class Fault:
    """One injected fault; ``times`` is how many more matching requests it hits."""

    method: str
    path_regex: str
    kind: FaultKind
    times: int = 1
    status: int | None = None
    retry_after: int = 1
    reset_after: int = 1
    hits: int = 0
    # GitHub's answer to a GitHub App or fine-grained token names the permissions the endpoint accepts, sets separated
    # by "; " (github.blog changelog 2023-08-10, "X-Accepted-GitHub-Permissions header for fine-grained permission
    # actors"; GitHub Docs, "Permissions required for GitHub Apps")
    accepted_permissions: str | None = None
    pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {KINDS}")
        self.method = self.method.upper()
        self.pattern = re.compile(self.path_regex)

    @property
    def active(self) -> bool:
        return self.times > 0

    def matches(self, method: str, path: str) -> bool:
        return self.active and self.method in ("*", method.upper()) and bool(self.pattern.search(path))

    def error(self, request_id: str, owner: str | None, head: str | None) -> ApiError:
        """The response of a fault that replaces the request (every kind but ``drop_after``)."""
        if self.kind == "status_5xx":
            return ApiError(self.status or 502, "Server Error", documentation_url="https://docs.github.com/rest")
        if self.kind == "secondary_rate_limit":
            return ApiError(
                self.status or 403,
                SECONDARY_MESSAGE.format(request_id=request_id),
                documentation_url=RATE_LIMIT_DOCS,
                headers={"Retry-After": str(self.retry_after), "X-RateLimit-Remaining": "4000"},
            )
        if self.kind == "rate_limit":
            now = int(time.time())
            return ApiError(
                self.status or 403,
                PRIMARY_MESSAGE.format(request_id=request_id, timestamp=time.strftime("%Y-%m-%d %H:%M:%S UTC")),
                documentation_url=RATE_LIMIT_DOCS.replace("secondary", "primary"),
                headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(now + self.reset_after),
                         "X-RateLimit-Used": "5000"},
            )
        if self.kind == "forbidden":
            accepted = {"X-Accepted-GitHub-Permissions": self.accepted_permissions} if self.accepted_permissions else {}
            return ApiError(self.status or 403, FORBIDDEN_MESSAGE, documentation_url="https://docs.github.com/rest",
                            headers=accepted)
        if self.kind == "pr_already_exists":
            return pr_already_exists(owner or "owner", head or "head")
        raise AssertionError(f"{self.kind} does not replace the response")


class Faults:
    """The stub's fault table."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """The first active fault for this request, consumed once."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    fault.hits += 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        with self._lock:
            return [f for f in self._faults if f.active]
