from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetflow.errors import GitError
from fleetflow.forge.git import (
    FAST_IMPORT_TRIM_THRESHOLD,
    BareRepo,
    GitRepos,
    PushRejected,
    TreeEdit,
    check_ref,
    remote_said,
    retry_races,
    run_git,
    split_credentials,
)
from fleetflow.model.resources import BRANCH_NAME_LIMIT, unsafe_branch
from tests.githttp import GitHttp


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
    assert a.folder == b.folder


@pytest.mark.parametrize("name", ["-rf", "a..b", "x/", "a b", "a;b", "x.lock", "$(id)"])
def test_unsafe_branch_names_are_refused(name: str) -> None:
    with pytest.raises(GitError, match="unsafe branch name"):
        check_ref(name)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab.-_/", max_size=12) | st.sampled_from(
    ["HEAD", "x/HEAD", "a.lock", "a.lock/b", "b/a.lock", ".x", "x/.y", "x.", "x/y.", "a//b", "/a", "a/", "@", "-x"]))
def test_the_branch_rule_is_gits(name: str) -> None:
    """What fleetflow takes as a branch is what ``git check-ref-format --branch`` takes, over names made of the
    characters that make git's rules bite (git's Documentation/git-check-ref-format.txt: no part starting with
    '.' or ending with '.lock', no '..', no empty part, not ending with '.'; ``HEAD`` is refused). '@' is
    outside fleetflow's plain characters, so git's taking it is the one known difference (never fleetflow taking
    what git refuses)."""
    git_takes = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0
    if name == "@":
        assert git_takes and unsafe_branch(name) is not None
    else:
        assert (unsafe_branch(name) is None) == git_takes, (name, unsafe_branch(name))


def test_a_branch_github_would_refuse_for_its_length_is_refused() -> None:
    """GitHub refuses a ref longer than 255 bytes ("GH005: Sorry, refs longer than 255 bytes are not allowed", the
    push's error: desktop/desktop#819, dependabot/dependabot-core#5761): refs/heads/<name>. git itself takes it."""
    assert unsafe_branch("a" * BRANCH_NAME_LIMIT) is None
    assert len(f"refs/heads/{'a' * BRANCH_NAME_LIMIT}") == 255
    assert unsafe_branch("a" * (BRANCH_NAME_LIMIT + 1)) == (
        "branch name of 245 characters: GitHub takes at most 244 (refs/heads/<name> is at most 255 bytes)")
    assert subprocess.run(["git", "check-ref-format", "--branch", "a" * 300], capture_output=True).returncode == 0


def test_errors_never_show_the_token(tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        GitRepos(tmp_path).fetch("https://x-access-token:supersecret@127.0.0.1:9/o/r.git", ["main"])
    assert "supersecret" not in str(info.value)


# -- the one git layer: errors and the compare-and-swap retry helper -------------------------------------------


def _origin(tmp_path: Path) -> tuple[str, str]:
    """A bare repo with ``main`` holding ``count.txt`` = 0; returns (its path, the first commit)."""
    origin = tmp_path / "origin.git"
    run_git(["init", "--quiet", "--bare", str(origin)])
    repo = BareRepo(origin)
    tree = repo.mktree([("100644", "blob", repo.hash_blob(b"0\n"), "count.txt")])
    first = repo.commit_tree(tree, [], "start", ("tests", "tests@fleetflow.invalid"), 1_700_000_000)
    repo.git("update-ref", "refs/heads/main", first)
    return str(origin), first


def _increment(repos: GitRepos, url: str, attempts: list[int], before_push: Callable[[], None] | None = None,
               who: str = "a") -> str:
    """One read-modify-push step: add 1 to count.txt on main, pushed with a lease on the sha it read. (Commits are
    deterministic: ``who`` in the message keeps two writers' commits apart.)"""
    attempts.append(1)
    tip = repos.fetch_branch(url, "main")
    assert tip is not None
    count = int(repos.read_file(url, tip, "count.txt") or "0")
    new = repos.commit_files(url, tip, {"count.txt": f"{count + 1}\n".encode()}, f"count {count + 1} by {who}",
                             1_700_000_000 + count + 1)
    assert new is not None
    if before_push is not None and len(attempts) == 1:
        before_push()
    repos.push(url, new, "main", tip)
    return new


def test_a_lost_race_is_pushrejected_and_reapplied(tmp_path: Path) -> None:
    """Another writer pushes between our read and our push: git refuses our lease ("stale info"), the helper
    reads again and applies the step to the new tip; nothing is lost, nothing is overwritten."""
    url, _ = _origin(tmp_path)
    mine, theirs = GitRepos(tmp_path / "cache-a"), GitRepos(tmp_path / "cache-b")
    tries: list[int] = []
    result = retry_races(lambda: _increment(mine, url, tries, lambda: _increment(theirs, url, [], who="b")), 3)
    assert len(tries) == 2
    log = run_git(["log", "--format=%s", "main"], git_dir=Path(url)).stdout.decode().split("\n")
    assert log[:3] == ["count 2 by a", "count 1 by b", "start"]
    assert BareRepo(Path(url)).read_file("main", "count.txt") == b"2\n"
    assert mine.mirror(url).resolve("refs/mirror/main") == result  # the mirror follows our own push


def test_concurrent_writers_all_land(tmp_path: Path) -> None:
    """Three threads, each with its own mirror, add 1 four times at once: every increment lands exactly once.
    Their pushes really collide (leases refused, ref locks taken): the helper absorbs every collision."""
    url, _ = _origin(tmp_path)
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        repos = GitRepos(tmp_path / f"cache-{n}")
        try:
            for _ in range(4):
                retry_races(lambda: _increment(repos, url, [], who=str(n)), 40)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert BareRepo(Path(url)).read_file("main", "count.txt") == b"12\n"
    subjects = run_git(["log", "--format=%s", "main"], git_dir=Path(url)).stdout.decode().splitlines()
    assert [s.split(" by ")[0] for s in subjects] == [f"count {n}" for n in range(12, 0, -1)] + ["start"]


def test_the_helper_gives_up_and_retries_nothing_else(tmp_path: Path) -> None:
    url, first = _origin(tmp_path)
    repos = GitRepos(tmp_path / "cache")
    calls: list[int] = []

    def stale() -> None:  # a lease on a sha that is not the tip: refused every time
        calls.append(1)
        repos.fetch_branch(url, "main")
        new = repos.commit_files(url, first, {"x.txt": b"x\n"}, "x", 1_700_000_000)
        assert new is not None
        repos.push(url, new, "main", "0" * 40)

    with pytest.raises(PushRejected, match="main moved on") as info:
        retry_races(stale, 3, max_wait=0.01)
    assert len(calls) == 3 and info.value.exit_code == 3 and info.value.command == "push"

    with pytest.raises(GitError) as failed:
        retry_races(lambda: repos.push(str(tmp_path / "missing.git"), first, "main", None), 3)
    assert not isinstance(failed.value, PushRejected) and failed.value.command == "push"


def test_a_declined_push_says_what_the_remote_said(tmp_path: Path) -> None:
    """A server hook's words reach the pusher as ``remote:`` lines: git-receive-pack(1), "PRE-RECEIVE HOOK" (its
    standard output and error "are forwarded to git send-pack on the other end, so you can simply echo messages
    for the user"). GitHub declines a push against a ruleset the same way, with a message saying which rule
    (docs.github.com, "Troubleshooting rules": "you will see a message telling the pattern the relevant metadata
    must match"). git's porcelain line alone says only "pre-receive hook declined"; the error now says why, and
    nothing moves."""
    url, first = _origin(tmp_path)
    hook = Path(url) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'error: pushes to main are frozen until the release'\n"
                    "echo '  see https://ops:s3cret@wiki.example/freeze' >&2\necho >&2\nexit 1\n")
    hook.chmod(0o755)
    repos = GitRepos(tmp_path / "cache")
    repos.fetch_branch(url, "main")
    new = repos.commit_files(url, first, {"x.txt": b"x\n"}, "x", 1_700_000_000)
    assert new is not None
    with pytest.raises(GitError) as info:
        repos.push(url, new, "main", first)
    assert not isinstance(info.value, PushRejected)  # not a race: retrying would not help
    assert str(info.value) == (f"git push of branch main to {url} failed, no ref moved: [remote rejected] "
                               "(pre-receive hook declined); "
                               "the remote said:\n    error: pushes to main are frozen until the release"
                               "\n    see https://***@wiki.example/freeze")
    assert BareRepo(Path(url)).resolve("main") == first


def test_a_push_or_fetch_github_refuses_says_what_github_said(tmp_path: Path) -> None:
    """Over HTTP, a server that refuses a push or a fetch answers 403 with a text/plain body, and git prints that
    body as ``remote:`` lines before its own "The requested URL returned error: 403" (git's remote-curl.c,
    ``show_http_message``, from "remote-curl: show server content on http errors", Jeff King, 2013). GitHub says
    there which account may not do what (a token without ``contents: write``, an App not installed on the repo).
    The stand-in is git's own ``http-backend`` behind a 403 for the refused service (tests/githttp.py). The error
    names the URL without the token, and the token appears nowhere."""
    url, first = _origin(tmp_path)
    said = "Permission to contoso/gitops.git denied to fleetflow[bot]."
    with GitHttp(Path(url).parent) as server:
        http = server.url(Path(url).name)
        repos = GitRepos(tmp_path / "cache")
        repos.fetch_branch(http, "main")
        new = repos.commit_files(http, first, {"x.txt": b"x\n"}, "x", 1_700_000_000)
        assert new is not None
        server.denied["git-receive-pack"] = said + "\n"
        with pytest.raises(GitError) as pushed:
            repos.push(http, new, "main", first)
        server.denied["git-upload-pack"] = "Repository access blocked for this token.\n"
        with pytest.raises(GitError) as fetched:
            GitRepos(tmp_path / "other-cache").fetch_branch(http, "main")
    clean = server.url(Path(url).name, credentials=False)
    assert str(pushed.value).startswith(f"git push of branch main to {clean} failed, no ref moved: fatal: unable to "
                                        f"access '{clean}/': The requested URL returned error: 403; the remote "
                                        f"said:\n    {said}\nhint: the credentials may not push")
    assert str(fetched.value).endswith("The requested URL returned error: 403; the remote said:\n"
                                       "    Repository access blocked for this token.")
    assert server.token not in str(pushed.value) + str(fetched.value)
    assert BareRepo(Path(url)).resolve("main") == first


def test_the_remote_lines_are_cleaned_and_capped() -> None:
    lines = "".join(f"remote: \x1b[31mrule {n}\x1b[0m   \n" for n in range(25))
    said = remote_said(f"To x\nremote: \n{lines} ! [remote rejected] main -> main (declined)\n".encode())
    assert said[:2] == ["rule 0", "rule 1"] and said[19] == "rule 19" and said[20] == "... (5 more lines)"
    assert len(said) == 21 and remote_said(b"fatal: no remote lines\n") == []


def test_git_error_says_which_command_and_why(tmp_path: Path) -> None:
    url, _ = _origin(tmp_path)
    with pytest.raises(GitError) as info:
        run_git(["rev-parse", "--verify", "no-such-branch"], git_dir=Path(url))
    error = info.value
    assert error.exit_code == 3 and error.command == "rev-parse"
    assert error.reason and error.reason.startswith("fatal:") and str(error) == f"git rev-parse failed: {error.reason}"
    assert isinstance(PushRejected("x"), GitError)


def test_credentials_travel_in_the_environment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token of an https URL reaches git as an ``http.extraheader`` in the environment: never in argv (process
    lists), never in an error message."""
    seen: list[tuple[list[str], dict[str, str]]] = []
    real_run = subprocess.run

    def watch(argv: list[str], **kwargs: Any) -> Any:
        seen.append((list(argv), dict(kwargs.get("env") or {})))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(subprocess, "run", watch)
    with pytest.raises(GitError) as info:
        GitRepos(tmp_path).fetch("https://x-access-token:supersecret@127.0.0.1:9/o/r.git", ["main"])
    assert "supersecret" not in str(info.value)
    remote_calls = [(argv, env) for argv, env in seen if "ls-remote" in argv]
    assert remote_calls and all("supersecret" not in " ".join(argv) for argv, _ in seen)
    header = base64.b64encode(b"x-access-token:supersecret").decode()
    assert remote_calls[0][1]["GIT_CONFIG_VALUE_0"] == f"AUTHORIZATION: basic {header}"


def test_fast_commit_keeps_every_other_subtree_and_takes_any_name(tmp_path: Path) -> None:
    """Names reach fast-import C-quoted (a quote, a backslash, a newline, non-ASCII, a leading '-' stay names);
    a delete removes a whole folder; untouched folders keep their tree ids."""
    repo = BareRepo(tmp_path / "r.git")
    who = ("tests", "tests@fleetflow.invalid")
    odd = ['a"b.yaml', "back\\slash", "new\nline", "é.yaml", "-rf"]
    first = repo.fast_commit(None, [TreeEdit(f"odd/{n}", n.encode()) for n in odd]
                             + [TreeEdit("keep/x.yaml", b"x\n"), TreeEdit("gone/y.yaml", b"y\n")], "one", who,
                             1_700_000_000)
    assert sorted(e.path for e in repo.ls_tree(first, ["odd/"])) == sorted(f"odd/{n}" for n in odd)
    second = repo.fast_commit(first, [TreeEdit("gone"), TreeEdit("odd/-rf", b"changed")], "two", who,
                              1_700_000_001)
    assert repo.read_file(second, "odd/-rf") == b"changed" and repo.read_file(second, "gone/y.yaml") is None
    assert repo.resolve(f"{first}:keep") == repo.resolve(f"{second}:keep")
    assert repo.resolve(f"{first}:odd") != repo.resolve(f"{second}:odd")
    assert repo.refs("refs/fleetflow-scratch/") == {}  # no ref is left behind


def _running_git_environment(command: str) -> dict[str, str]:
    """The environment of this process's child ``git ... <command>``, read from ``/proc`` while it runs."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rpartition(")")[2].split()[1])
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            if ppid == os.getpid() and command.encode() in argv:
                pairs = (stat.parent / "environ").read_bytes().split(b"\0")
                return dict(p.decode().partition("=")[::2] for p in pairs if p)
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while it was read
    raise AssertionError(f"no git {command} is running")


@pytest.mark.parametrize("users", [None, "262144"])
def test_fast_import_keeps_the_memory_it_frees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               users: str | None) -> None:
    """``git fast-import`` runs with glibc's trim threshold raised (``MALLOC_TRIM_THRESHOLD_``: the GNU C Library
    manual, "Malloc Tunable Parameters"), so the memory it frees after each object is reused for the next instead of
    given back and asked for again (30,000 new files through ``fast_commit``: 2.2-2.4 s -> 0.5-0.6 s,
    ``benchmarks/bench_tree_write.py``); a value the user set is theirs. The environment is read from the running
    process, while fleetflow feeds it."""
    if users is None:
        monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    else:
        monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", users)
    seen: list[dict[str, str]] = []

    def edits() -> Iterator[TreeEdit]:
        yield TreeEdit("a.yaml", b"a\n")  # fast-import started before the first edit was asked for
        seen.append(_running_git_environment("fast-import"))
        yield TreeEdit("b.yaml", b"b\n")

    repo = BareRepo(tmp_path / "r.git")
    commit = repo.fast_commit(None, edits(), "one", ("tests", "tests@fleetflow.invalid"), 1_700_000_000)
    assert repo.read_file(commit, "b.yaml") == b"b\n"
    [env] = seen
    assert env["MALLOC_TRIM_THRESHOLD_"] == (users or str(FAST_IMPORT_TRIM_THRESHOLD))
