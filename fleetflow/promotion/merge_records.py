"""Merge records: what fleetflow decided about an ``autoMerge`` PR, kept in git where ``reconcile`` reads it for free.

After the merge step, fleetflow points one lightweight tag of the GitOps repo at the PR's head commit:

* ``fleetflow/auto-merge/<env>``: the forge's auto-merge is on for that head (GitHub merges it once the branch
  rules are met). Nothing is left for fleetflow to do;
* ``fleetflow/merge-when-green/<env>``: the forge refused its auto-merge (the repository does not allow it, or the
  PR needed no waiting) and the head's checks were not all green: fleetflow merges it itself once they are.

A later run lists both with the ``ls-remote`` it makes anyway (for ``refs/pull/*/head``), so the wait costs **no
API request** (:func:`read_record`). What may change the decision then:

* ``auto-merge``: only a person (turning auto-merge off, closing the PR), which raises no event the workflows
  receive: a run that verifies (``reconcile --verify-merges``, by default the cron tick) reads the PR: 1 request
  per waiting environment, 2 more to turn auto-merge on again if it was turned off;
* ``merge-when-green``: a status posted on the head (a ``status`` event with that sha: ``reconcile --recheck SHA``,
  by default taken from the event payload), a check run completing on it (check runs made by Actions raise no
  event), a change of the branch rules (no event), and the cron tick. Those runs read the branch rules and the
  head's checks (GitHub: 3 + 2 requests, one more page per further 100 statuses or check runs) and merge when
  green (1 more), without reading the PR (its number comes from ``refs/pull/<N>/head``). Every other run costs 0.

Why tags: GitHub documents pushing and deleting tags (``git push REMOTE TAG``, ``git push REMOTE :TAG``, "Pushing
commits to a remote repository"); pushing other namespaces (``refs/fleetflow/...``) is not documented for git
pushes, and GitHub refuses some (``refs/pull/...``: "deny updating a hidden ref"). A tag cannot collide with a
branch (the head branch ``fleetflow/<env>`` of an environment named ``auto-merge``), starts no branch ``push``
workflow, and is not listed in a status event's ``branches``.

The rules: written only by compare-and-swap (:meth:`GitRepos.push_refs`, both names in one atomic push) against what
the run listed; a lost race is left to the run that won. Bound to a head: a record on any other commit than the
head branch's tip is stale and the merge step is taken again. Removed by fleetflow once the PR is merged (the
GitOps branch carries the pin) or found closed, or when autoMerge is off, and only while it still points where
the run saw it; only these two tag names per environment are ever written or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from fleetflow.forge.git import GitRepos, PushRejected
from fleetflow.promotion.context import doctor_names_the_rule
from fleetflow.results import Result

RecordKind = Literal["auto-merge", "merge-when-green"]
KINDS: tuple[RecordKind, ...] = ("auto-merge", "merge-when-green")
TAG_PREFIX = "refs/tags/fleetflow/"
# The tag pattern that covers every record under GitHub's rulesets' fnmatch (``*`` stops at ``/`` and ``**`` spans
# levels only before one: ``fleetflow/**`` misses ``fleetflow/<kind>/<env>``); ``doctor``'s fix for a tag ruleset
RECORDS_PATTERN = TAG_PREFIX.removeprefix("refs/tags/") + "**/*"


class MergeRecord(Result):
    """A merge record as listed: its kind and the head commit it was written for."""

    kind: RecordKind
    head: str


def record_ref(environment: str, kind: RecordKind = "auto-merge") -> str:
    """The full ref of ``environment``'s record of ``kind``."""
    return f"{TAG_PREFIX}{kind}/{environment}"


def record_refs(environment: str) -> list[str]:
    """Both record refs of ``environment`` (``ls-remote`` patterns)."""
    return [record_ref(environment, kind) for kind in KINDS]


def seen_records(listing: Mapping[str, str], environment: str) -> dict[str, str]:
    """The record refs of ``environment`` in an ``ls-remote`` listing: ref -> sha (what a compare-and-swap expects)."""
    return {ref: listing[ref] for ref in record_refs(environment) if ref in listing}


def read_record(seen: Mapping[str, str], environment: str) -> MergeRecord | None:
    """The record that counts: exactly one of the two names (two at once is a race left half done: none counts)."""
    found = [MergeRecord(kind=kind, head=seen[record_ref(environment, kind)]) for kind in KINDS
             if record_ref(environment, kind) in seen]
    return found[0] if len(found) == 1 else None


def write_record(git: GitRepos, url: str, environment: str, kind: RecordKind, head: str,
                 seen: Mapping[str, str]) -> bool:
    """Point the ``kind`` record at ``head`` and remove the other kind, if both are still as ``seen``. True when
    written; False when it already was so, or another run changed them first (the next run reads them again)."""
    ref = record_ref(environment, kind)
    updates: dict[str, tuple[str | None, str | None]] = {ref: (head, seen.get(ref))}
    updates |= {other: (None, sha) for other, sha in seen.items() if other != ref}
    if seen.get(ref) == head and len(updates) == 1:
        return False
    return _push(git, url, updates)


def drop_records(git: GitRepos, url: str, seen: Mapping[str, str]) -> bool:
    """Delete the records ``seen``, if they still point where they were seen. True when deleted."""
    return bool(seen) and _push(git, url, {ref: (None, sha) for ref, sha in seen.items()})


def _push(git: GitRepos, url: str, updates: Mapping[str, tuple[str | None, str | None]]) -> bool:
    tags = ", ".join(ref.removeprefix("refs/tags/") for ref in updates)
    try:
        with doctor_names_the_rule(f"writing fleetflow's merge record ({tags})", "tag-rules"):
            git.push_refs(url, updates)
    except PushRejected:
        return False
    return True
