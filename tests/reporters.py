"""Cluster reporters that post commit statuses exactly as the real ones do, for gate scenarios.

- :class:`FluxReporter`: Flux notification-controller's GitHub provider, ``internal/notifier/github.go`` and
  ``internal/notifier/util.go`` of fluxcd/notification-controller (v1.9.3, commit 2e46958): progressing events are
  skipped; severity ``info`` → ``success``, ``error`` → ``failure`` (never ``pending``); the description is the
  event's reason split at case changes and lower-cased (``HealthCheckFailed`` → ``health check failed``); before
  posting it lists the commit's statuses (50 newest) and skips a post whose state and description equal the newest
  one of the same context; it posts on the commit of the revision it applied.
- :class:`ArgoReporter`: Argo CD notifications' GitHub service, ``pkg/services/github.go`` of
  argoproj/notifications-engine (commit cf274d2): context = ``status.label``, state as templated (``pending`` on a
  sync start is the common template), description = ``trunc(message, 140)`` (140 runes, cut to 137 + ``...``),
  newlines kept, no de-duplication; posts on ``operationState.syncResult.revision``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.fleet import Fleet

PROGRESSING_REASON = "Progressing"  # meta.ProgressingReason in fluxcd/pkg/apis/meta


def split_camelcase(text: str) -> list[str]:
    """``splitCamelcase`` of util.go: runs of lower, upper, digit and other characters; an upper run followed by a
    lower run gives its last letter to the lower one ("PDFLoader" → "PDF", "Loader")."""
    runs: list[str] = []
    last = 0
    for char in text:
        kind = 1 if char.islower() else 2 if char.isupper() else 3 if char.isdigit() else 4
        if kind == last:
            runs[-1] += char
        else:
            runs.append(char)
        last = kind
    for i in range(len(runs) - 1):
        if runs[i][:1].isupper() and runs[i + 1][:1].islower():
            runs[i + 1] = runs[i][-1] + runs[i + 1]
            runs[i] = runs[i][:-1]
    return [r for r in runs if r]


def flux_description(reason: str) -> str:
    return " ".join(split_camelcase(reason)).lower()


def argo_trunc(message: str, limit: int = 140) -> str:
    """``trunc`` of github.go: counted in runes (Python characters)."""
    return message[: limit - 3] + "..." if len(message) > limit else message


@dataclass
class FluxReporter:
    fleet: Fleet
    context: str  # what commitStatusExpr gives, e.g. "flux/dev-1"
    posts: int = 0
    skipped: int = 0

    def event(self, sha: str, severity: str, reason: str) -> None:
        """An event of the watched Kustomization for revision ``sha`` (``main@sha1:<sha>`` in Flux)."""
        if reason == PROGRESSING_REASON:
            return
        state = {"info": "success", "error": "failure"}[severity]
        description = flux_description(reason)
        newest = next((s for s in self.fleet.forge.statuses(self.fleet.gitops_id, sha) if s.context == self.context),
                      None)
        if newest is not None and (newest.state, newest.description) == (state, description):
            self.skipped += 1
            return
        self.fleet.post_status(sha, self.context, state, description)
        self.posts += 1


@dataclass
class ArgoReporter:
    fleet: Fleet
    label: str  # github.status.label, e.g. "argocd/dev-2"

    def send(self, sha: str, state: str, message: str) -> None:
        self.fleet.post_status(sha, self.label, state, argo_trunc(message))

