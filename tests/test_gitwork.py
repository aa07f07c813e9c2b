from __future__ import annotations

from pathlib import Path

import pytest

from fleetflow.errors import GitError
from fleetflow.forge.git import GitRepos, check_ref, split_credentials


def test_credentials_leave_the_url_for_a_header() -> None:
    clean, env = split_credentials("https://x-access-token:s3cr%40t@github.example/o/r.git")
    assert clean == "https://github.example/o/r.git"
    assert "s3cr" not in clean and env["GIT_CONFIG_KEY_0"] == "http.https://github.example/.extraheader"
    assert env["GIT_CONFIG_VALUE_0"].startswith("AUTHORIZATION: basic ")
    assert split_credentials("file:///tmp/x.git") == ("file:///tmp/x.git", {})


def test_mirror_is_keyed_without_credentials(tmp_path: Path) -> None:
    repos = GitRepos(tmp_path)
    a = repos.mirror("https://x:one@github.example/o/r.git")
    b = GitRepos(tmp_path).mirror("https://x:two@github.example/o/r.git")
    assert a.git_dir == b.git_dir


@pytest.mark.parametrize("name", ["-rf", "a..b", "x/", "a b", "a;b", "x.lock", "$(id)"])
def test_unsafe_branch_names_are_refused(name: str) -> None:
    with pytest.raises(GitError, match="unsafe branch name"):
        check_ref(name)


def test_errors_never_show_the_token(tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        GitRepos(tmp_path).fetch("https://x-access-token:supersecret@127.0.0.1:9/o/r.git", ["main"])
    assert "supersecret" not in str(info.value)
