"""The GitHub stand-in set-up that forge-level tests share (tests/test_merging.py, tests/test_gate_reports.py):
one GitOps repository ``acme/gitops`` with an environment branch ``dev`` and fleetflow's head branch
``fleetflow/dev`` on top of it, and the real ``GitHubForge`` talking to the stand-in through PyGithub.

Import the fixtures into a test module: ``from tests.stand_in import REPO, forge, stub  # noqa: F401``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetflow.forge.github import GitHubForge
from tests.fleet import stand_in_forge
from tests.ghstub.server import GitHubStub

REPO = "acme/gitops"
HEAD = "fleetflow/dev"


@pytest.fixture
def stub(github_stub: GitHubStub) -> GitHubStub:
    """The started stand-in with ``acme/gitops``: ``dev`` (one commit) and ``fleetflow/dev`` (one more)."""
    repo = github_stub.create_repo(REPO)
    repo.commit_files("dev", {"README.md": "gitops\n"}, "readme")
    repo.commit_files(HEAD, {"dev/app.yaml": "replicas: 1\n"}, "render dev", base="dev")
    return github_stub


@pytest.fixture
def forge(stub: GitHubStub) -> Iterator[GitHubForge]:
    """``GitHubForge`` on the stand-in, no retries (a fault is seen as it is), closed after the test."""
    made = stand_in_forge(stub)
    yield made
    made.close()
