"""A stateful stand-in for GitHub's REST API (PyGithub talks to it unmodified) backed by bare git repos.

See ``server.GitHubStub``; the pytest fixture ``github_stub`` lives in ``tests.ghstub.fixtures``.
"""

from .faults import Fault, FaultKind
from .server import GitHubStub, RecordedRequest
from .state import CheckRun, CommitStatus, Dispatch, PullRequest, Repo

__all__ = [
    "CheckRun",
    "CommitStatus",
    "Dispatch",
    "Fault",
    "FaultKind",
    "GitHubStub",
    "PullRequest",
    "RecordedRequest",
    "Repo",
]
