"""Commit status contexts that differ only in case are one context, in the local forge as on GitHub (the GitHub
stand-in's side is in tests/test_ghstub.py)."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

from fleetflow.clock import Clock
from fleetflow.forge.base import CommitStatus
from fleetflow.forge.local import LocalForge, status_path
from fleetflow.promotion.merging import merge_verdict
from tests import test_forge_local as local
from tests.test_forge_local import POST, _store_by_hand, git, tip

template, origin, clock, forge = local.template, local.origin, local.clock, local.forge  # fixtures, by name


def test_contexts_differing_only_in_case_are_one_context(forge: LocalForge, origin: Path, clock: Clock) -> None:
    """GitHub's "Create a commit status" (github/rest-api-description, ``context``): "A string label to
    differentiate this status from the status of other systems. This field is case-insensitive." The local forge
    kept ``Flux/dev-1`` and ``flux/dev-1`` apart until 2026-11-29: a cluster's stale failure under one spelling
    stayed in the combined state and refused merges ("checks failed: Flux/dev-1") after it reported success under
    the other, and a repeated post of the first spelling was skipped as "same as its last one" while the other
    spelling was newer. Now the newest post counts, in its own spelling (what the GitHub stand-in assumes too: no
    GitHub document says which spelling the combined status shows)."""
    repo, sha = str(origin), tip(origin, "main")
    assert forge.set_status(repo, sha, "Flux/dev-1", "failure", "health check failed") is True
    clock.advance(timedelta(minutes=1))
    assert forge.set_status(repo, sha, "flux/dev-1", "success", "reconciled") is True
    latest = forge.statuses(repo, sha)
    assert [(s.context, s.state) for s in latest] == [("flux/dev-1", "success")]
    assert next(forge.status_pages(repo, sha)).state == "success"
    assert merge_verdict(["flux/dev-1"], latest) is None
    clock.advance(timedelta(minutes=1))
    assert forge.set_status(repo, sha, "Flux/dev-1", "failure", "health check failed") is True
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("Flux/dev-1", "failure")]
    assert [s.context for s in forge.status_history(repo, sha)] == ["Flux/dev-1", "flux/dev-1", "Flux/dev-1"]
    files = git(origin, "ls-tree", "-r", "--name-only", "refs/fleetflow/forge", f"statuses/{sha}/").split()
    assert files == [status_path(sha, "flux/dev-1")] == [status_path(sha, "FLUX/DEV-1")]


def test_a_context_stored_under_its_exact_spelling_before_is_still_one_context(forge: LocalForge, origin: Path,
                                                                                 clock: Clock) -> None:
    """Stores written before 2026-11-29 keep a mixed-case context's posts in the file of its exact spelling: they
    read with the posts of its other spellings (in the order of their times), as one context."""
    repo, sha = str(origin), tip(origin, "main")
    forge.set_status(repo, sha, "fleetflow/dev", "pending", "scheduled")  # the store exists
    key = hashlib.sha256(b"Flux/dev-1").hexdigest()[:24]
    _store_by_hand(origin, f"statuses/{sha}/{key[:2]}/{key}.json", json.dumps([
        {**POST, "context": "Flux/dev-1", "state": "failure", "description": "old",
         "created_at": "2024-05-01T11:00:00+00:00"}]))
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("Flux/dev-1", "failure"),
                                                                         ("fleetflow/dev", "pending")]
    assert forge.set_status(repo, sha, "flux/dev-1", "success", "new") is True
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("fleetflow/dev", "pending"),
                                                                         ("flux/dev-1", "success")]
    assert [s.description for s in forge.status_history(repo, sha)] == ["old", "scheduled", "new"]
    clock.advance(timedelta(minutes=1))
    assert forge.set_status(repo, sha, "Flux/dev-1", "failure", "old") is True
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("Flux/dev-1", "failure"),
                                                                         ("fleetflow/dev", "pending")]


def test_a_required_context_is_met_by_a_report_in_other_letters(forge: LocalForge, origin: Path) -> None:
    """The same rule for the checks a branch requires ("Create a commit status": the context "is case-insensitive"):
    a required ``CI/build`` is met by the ``ci/build`` the CI posts. Until 2026-11-29 fleetflow's merge step said
    "waiting for required checks: CI/build" for ever, and the local forge's auto-merge never merged the PR."""
    assert merge_verdict(["CI/build"], [CommitStatus("ci/build", "success")]) is None
    assert merge_verdict(["ci/build"], [CommitStatus("CI/Build", "failure")]) == "checks failed: CI/Build"
    repo, head = str(origin), tip(origin, "feature")
    forge.protect_branch(repo, "dev", ["CI/build"])
    forge.allow_auto_merge(repo)
    pull = forge.create_pull(repo, "feature", "dev", "t", "b")
    assert forge.enable_auto_merge(repo, pull.number) is None  # something to wait for: CI/build
    forge.set_status(repo, head, "ci/build", "success", "ok")
    assert forge.pulls(repo, "feature")[0].merged
