"""The ``github_stub`` pytest fixture. Use it from a conftest: ``from tests.ghstub.fixtures import github_stub``
(or ``pytest_plugins = ["tests.ghstub.fixtures"]``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .server import GitHubStub


@pytest.fixture
def github_stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubStub]:
    """A started ``GitHubStub`` with its repositories under ``tmp_path``; ``GITHUB_*`` variables are scrubbed
    so the runner's environment never leaks in. Fails the test if the stub answered with a body that breaks
    GitHub's OpenAPI shapes or hit a bug of its own."""
    for name in list(os.environ):
        if name.startswith("GITHUB_"):
            monkeypatch.delenv(name)
    stub = GitHubStub(root=tmp_path / "ghstub").start()
    try:
        yield stub
    finally:
        stub.stop()
    assert not stub.server_errors, "\n".join(stub.server_errors)
    assert not stub.schema_errors, "\n".join(stub.schema_errors)
