"""The local forge against real git repositories in tmp dirs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetflow.clock import Clock
from fleetflow.errors import ForgeError
from fleetflow.forge import git as gitlayer
from fleetflow.forge.base import Forge
from fleetflow.forge.git import PushRejected
from fleetflow.forge.local import LocalForge, status_path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit_file(work: Path, path: str, text: str, message: str) -> str:
    (work / path).write_text(text)
    git(work, "add", path)
    git(work, "commit", "-q", "-m", message)
    return git(work, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repo with ``main``, ``dev`` and ``feature`` (one commit ahead of main, touching ``app.txt``), and a
    clone of it in ``work`` (its remote is relative, so copies of the pair work). Built once, copied per test."""
    root = tmp_path_factory.mktemp("template")
    bare = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(bare))
    work = root / "work"
    git(root, "clone", "-q", str(bare), str(work))
    git(work, "remote", "set-url", "origin", "../origin.git")
    git(work, "config", "user.name", "fleetflow tests")
    git(work, "config", "user.email", "tests@fleetflow.invalid")
    commit_file(work, "app.txt", "v1\n", "first")
    git(work, "push", "-q", "origin", "main", "main:dev")
    git(work, "checkout", "-q", "-b", "feature")
    commit_file(work, "app.txt", "v2\n", "feature: v2")
    git(work, "push", "-q", "origin", "feature")
    git(work, "checkout", "-q", "main")
    return root


@pytest.fixture
def origin(template: Path, tmp_path: Path) -> Path:
    for name in ("origin.git", "work"):
        shutil.copytree(template / name, tmp_path / name, symlinks=True)
    return tmp_path / "origin.git"


@pytest.fixture
def work(origin: Path) -> Path:
    return origin.parent / "work"


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def forge(tmp_path: Path, clock: Clock) -> LocalForge:
    return LocalForge(cache_dir=tmp_path / "cache-a", clock=clock)


def tip(repo: Path, branch: str) -> str:
    return git(repo, "rev-parse", f"refs/heads/{branch}")


def test_is_a_forge(forge: LocalForge, origin: Path) -> None:
    as_protocol: Forge = forge
    assert as_protocol.name == "local"
    assert forge.git_url(str(origin)) == str(origin)
    assert forge.git_url("file:///srv/x.git") == "file:///srv/x.git"
    assert forge.default_branch(str(origin)) == "main"
    with pytest.raises(ForgeError, match="invalid repository"):
        forge.git_url("--upload-pack=evil")


def test_pull_request_lifecycle(forge: LocalForge, origin: Path, clock: Clock) -> None:
    repo = str(origin)
    head_sha, old_main = tip(origin, "feature"), tip(origin, "main")
    pr = forge.create_pull(repo, "feature", "main", "Promote v2", "body <!-- fleetflow:environment=dev -->")
    assert (pr.number, pr.state, pr.merged, pr.head_sha) == (1, "open", False, head_sha)
    assert pr.url == f"local://{origin}/pull/1"
    assert forge.open_pull(repo, "feature", "main") == pr
    assert forge.open_pull(repo, "feature", "dev") is None
    assert forge.pulls(repo, "feature") == [pr]
    assert forge.pulls(repo, "feature", "closed") == []

    clock.advance(timedelta(minutes=1))
    updated = forge.update_pull(repo, 1, title="Promote v2 (again)", body="new body")
    assert (updated.title, updated.body) == ("Promote v2 (again)", "new body")
    forge.add_labels(repo, 1, ["fleetflow", "env:dev"])
    forge.add_labels(repo, 1, ["fleetflow"])
    forge.request_reviewers(repo, 1, ["alice"])
    record = forge.pull_record(repo, 1)
    assert record["reviewers"] == ["alice"]
    forge.request_reviewers(repo, 1, ["acme/Platform"])
    assert forge.review_requests_made(repo, 1) == {"alice", "team:platform"}
    assert forge.open_pull(repo, "feature", "main").review_requests == ("alice", "team:platform")  # type: ignore[union-attr]
    record = forge.pull_record(repo, 1)
    assert record["updated_at"] == clock.now.isoformat() != record["created_at"]

    sha = forge.merge_pull(repo, 1)
    assert tip(origin, "main") == sha
    assert git(origin, "rev-list", "--parents", "-n1", sha).split()[1:] == [old_main, head_sha]
    assert git(origin, "log", "-1", "--format=%s", sha) == "Merge pull request #1 from feature"
    assert git(origin, "show", f"{sha}:app.txt") == "v2"
    merged = forge.pulls(repo, "feature")[0]
    assert (merged.state, merged.merged, merged.merge_commit_sha, merged.labels) == (
        "closed", True, sha, ("fleetflow", "env:dev"))
    assert forge.merge_pull(repo, 1) == sha
    assert tip(origin, "main") == sha
    assert forge.operations == ["create_pull", "update_pull", "add_labels", "request_reviewers", "request_reviewers",
                                "merge_pull"]
    with pytest.raises(ForgeError, match="merged"):
        forge.update_pull(repo, 1, state="open")


def test_close_and_reopen(forge: LocalForge, origin: Path) -> None:
    repo = str(origin)
    forge.create_pull(repo, "feature", "main", "t", "b")
    closed = forge.update_pull(repo, 1, state="closed")
    assert closed.state == "closed" and not closed.merged
    assert forge.open_pull(repo, "feature", "main") is None
    with pytest.raises(ForgeError, match="closed"):
        forge.merge_pull(repo, 1)
    second = forge.create_pull(repo, "feature", "main", "t2", "b")
    assert second.number == 2
    assert [p.number for p in forge.pulls(repo, "feature")] == [2, 1]  # newest first
    with pytest.raises(ForgeError, match="another one is open"):
        forge.update_pull(repo, 1, state="open")


def test_a_pull_request_whose_head_branch_is_deleted_is_closed(forge: LocalForge, origin: Path, work: Path) -> None:
    """GitHub closes a PR whose head branch is deleted (a ``git push --delete``; Mergify's ``delete_head_branch``
    docs, https://docs.mergify.com/workflow/actions/delete_head_branch: "GitHub will therefore close the dependent
    pull requests"; its web UI refuses to delete the branch of an open PR, "Deleting and restoring branches in a pull
    request", https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/
    managing-branches-in-your-repository/deleting-and-restoring-branches-in-a-pull-request). The local forge kept it
    open until 2026-11-29; now it is closed (not merged, its last head kept) and stays closed when the branch is
    pushed again, and a new PR can be opened."""
    repo = str(origin)
    opened = forge.create_pull(repo, "feature", "main", "t", "b")
    git(work, "push", "-q", "origin", "--delete", "feature")
    assert forge.open_pull(repo, "feature", "main") is None
    [closed] = forge.pulls(repo, "feature")
    assert (closed.state, closed.merged, closed.head_sha) == ("closed", False, opened.head_sha)
    assert forge.pulls(repo, "feature", "open") == []
    assert forge.pull_record(repo, 1)["closed_at"] is not None
    git(work, "push", "-q", "origin", "feature")  # the branch again: the PR stays closed, as on GitHub
    assert forge.open_pull(repo, "feature", "main") is None
    assert forge.create_pull(repo, "feature", "main", "t", "b").number == 2


def test_create_is_idempotent(forge: LocalForge, origin: Path) -> None:
    repo = str(origin)
    first = forge.create_pull(repo, "feature", "main", "t", "b")
    again = forge.create_pull(repo, "feature", "main", "other title", "b")
    assert again == first
    assert forge.operations == ["create_pull"]
    assert len(forge.pulls(repo, "feature")) == 1


def test_create_needs_a_head_branch_with_commits(forge: LocalForge, origin: Path) -> None:
    repo = str(origin)
    with pytest.raises(ForgeError, match="the head branch 'fleetflow/dev' does not exist"):
        forge.create_pull(repo, "fleetflow/dev", "main", "t", "b")
    with pytest.raises(ForgeError, match="the base branch 'nope' does not exist"):
        forge.create_pull(repo, "feature", "nope", "t", "b")
    with pytest.raises(ForgeError, match="no commits between main and dev"):
        forge.create_pull(repo, "dev", "main", "t", "b")
    with pytest.raises(ForgeError, match="invalid branch name"):
        forge.create_pull(repo, "--force", "main", "t", "b")
    with pytest.raises(ForgeError, match="invalid branch name"):
        forge.pulls(repo, "a..b")
    assert forge.operations == []


def test_statuses_latest_per_context(forge: LocalForge, origin: Path, clock: Clock) -> None:
    repo, sha = str(origin), tip(origin, "main")
    assert forge.statuses(repo, sha) == []
    assert forge.set_status(repo, sha, "fleetflow/dev", "pending", "scheduled") is True
    assert forge.set_status(repo, sha, "fleetflow/dev", "pending", "scheduled") is False
    clock.advance(timedelta(minutes=1))
    assert forge.set_status(repo, sha, "cluster/eu", "pending", "rolling out") is True
    clock.advance(timedelta(minutes=1))
    assert forge.set_status(repo, sha, "fleetflow/dev", "success", "rolled out: 1/1 clusters") is True
    latest = forge.statuses(repo, sha.upper())
    assert [(s.context, s.state, s.description) for s in latest] == [
        ("cluster/eu", "pending", "rolling out"),
        ("fleetflow/dev", "success", "rolled out: 1/1 clusters"),
    ]
    assert latest[1].updated_at == clock.now
    assert forge.operations == ["set_status"] * 3
    files = git(origin, "ls-tree", "-r", "--name-only", "refs/fleetflow/forge", f"statuses/{sha}/").split()
    assert files == sorted(status_path(sha, c) for c in ("fleetflow/dev", "cluster/eu"))
    stored = "".join(git(origin, "show", f"refs/fleetflow/forge:{f}") for f in files)
    assert stored.count('"context"') == 3


def _store_by_hand(origin: Path, path: str, data: str) -> None:
    """A commit on the store's ref that a person (any clone may push it) made: ``path`` holding ``data``."""
    env = {**os.environ, "GIT_INDEX_FILE": str(origin / "hand-index")}
    subprocess.run(["git", "read-tree", "refs/fleetflow/forge"], cwd=origin, check=True, env=env)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=origin, input=data.encode(), check=True,
                          capture_output=True).stdout.decode().strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"], cwd=origin, check=True,
                   env=env)
    tree = subprocess.run(["git", "write-tree"], cwd=origin, check=True, capture_output=True, env=env).stdout.strip()
    parent = git(origin, "rev-parse", "refs/fleetflow/forge")
    commit = git(origin, "-c", "user.name=p", "-c", "user.email=p@p", "commit-tree", tree.decode(), "-p", parent,
                 "-m", "by hand")
    git(origin, "update-ref", "refs/fleetflow/forge", commit, parent)


POST = {"context": "flux/eu", "state": "success", "description": "ok", "target_url": None,
        "created_at": "2026-01-05T10:00:00+00:00"}


@pytest.mark.parametrize(("data", "why"), [
    ('[{"context": "flux/eu"}]', "a post is not as the local forge writes it"),
    (json.dumps(POST), "it is not a list of posts"),
    ("{{{ nope", "it is not JSON"),
    ("[" * 100_000, "JSON nested too deeply"),
    (json.dumps([{**POST, "created_at": "yesterday"}]), "a post is not as the local forge writes it"),
    (json.dumps([{**POST, "state": "exploded"}]), "a post is not as the local forge writes it"),
], ids=["missing-keys", "not-a-list", "not-json", "too-deep", "bad-time", "bad-state"])
def test_a_status_record_written_by_hand_is_named_not_a_traceback(forge: LocalForge, origin: Path, data: str,
                                                                  why: str) -> None:
    """The store is a ref of the repository (``refs/fleetflow/forge``) any clone can push: a status record written
    by hand stopped check-rollout and reconcile with a KeyError, a JSONDecodeError, a RecursionError or a
    ValueError, and a state GitHub does not have counted as a failure (a bad-input hunt, 2026-11-28). Now the
    forge's error (exit 3) names the record; a post with no description reads as GitHub gives one (\"\")."""
    repo, sha = str(origin), tip(origin, "main")
    forge.set_status(repo, sha, "fleetflow/dev", "pending", "scheduled")  # the store exists
    _store_by_hand(origin, status_path(sha, "flux/eu"), data)
    with pytest.raises(ForgeError, match=f"the local forge's record statuses/{sha}/.* does not read: {why}"):
        forge.statuses(repo, sha)


def test_a_status_post_with_no_description_reads_as_an_empty_one(forge: LocalForge, origin: Path) -> None:
    repo, sha = str(origin), tip(origin, "main")
    forge.set_status(repo, sha, "fleetflow/dev", "pending", "scheduled")
    _store_by_hand(origin, status_path(sha, "flux/eu"), json.dumps([{**POST, "description": None}]))
    assert [(s.context, s.description) for s in forge.statuses(repo, sha)] == [
        ("fleetflow/dev", "scheduled"), ("flux/eu", "")]


def test_a_status_post_rewrites_one_small_file(forge: LocalForge, origin: Path) -> None:
    """No file holds every status of a commit: a post changes exactly its context's file, so its cost does not grow
    with the number of statuses (benchmarks/bench_promotion.py measures it at 10, 1,000 and 30,000)."""
    repo, sha = str(origin), tip(origin, "main")
    for i in range(20):
        forge.set_status(repo, sha, f"flux/cluster-{i}", "success", "ok")
    before = git(origin, "rev-parse", "refs/fleetflow/forge")
    forge.set_status(repo, sha, "flux/cluster-7", "failure", "broken")
    changed = git(origin, "diff-tree", "-r", "--name-only", before, "refs/fleetflow/forge").split()
    assert changed == [status_path(sha, "flux/cluster-7")]
    assert len(json.loads(git(origin, "show", f"refs/fleetflow/forge:{changed[0]}"))) == 2
    assert [s.state for s in forge.statuses(repo, sha) if s.context == "flux/cluster-7"] == ["failure"]


def test_statuses_of_the_older_layout_are_still_read(forge: LocalForge, origin: Path, clock: Clock) -> None:
    """A store written before the per-context layout (``statuses/<sha>.json``) keeps its statuses; a new post on a
    context supersedes the old file's record and keeps its history."""
    repo, sha = str(origin), tip(origin, "main")
    forge.dispatch(repo, "seed", {})  # creates the store
    old = [{"context": "flux/a", "state": "pending", "description": "old", "target_url": None,
            "created_at": "2024-05-01T11:00:00+00:00"},
           {"context": "flux/b", "state": "success", "description": "old b", "target_url": None,
            "created_at": "2024-05-01T11:01:00+00:00"}]
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=origin, input=json.dumps(old).encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    git(origin, "read-tree", "--index-output=legacy-index", "refs/fleetflow/forge")
    env = {**os.environ, "GIT_INDEX_FILE": "legacy-index"}
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},statuses/{sha}.json"], cwd=origin,
                   env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=origin, env=env, capture_output=True, check=True, text=True)
    commit = git(origin, "commit-tree", tree.stdout.strip(), "-p", "refs/fleetflow/forge", "-m", "legacy")
    git(origin, "update-ref", "refs/fleetflow/forge", commit)
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("flux/a", "pending"), ("flux/b", "success")]
    assert forge.set_status(repo, sha, "flux/b", "success", "old b") is False  # same as the newest: not posted
    assert forge.set_status(repo, sha, "flux/a", "success", "new") is True
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("flux/a", "success"), ("flux/b", "success")]
    history = json.loads(git(origin, "show", f"refs/fleetflow/forge:{status_path(sha, 'flux/a')}"))
    assert [p["description"] for p in history] == ["old", "new"]


def test_a_commit_takes_at_most_1000_statuses_of_one_context(forge: LocalForge, origin: Path) -> None:
    """GitHub's "Create a commit status": "there is a limit of 1000 statuses per sha and context within a repository.
    Attempts to create more than 1000 statuses will result in a validation error"
    (https://docs.github.com/en/rest/commits/statuses#create-a-commit-status). The local forge took the 1,001st until
    2026-11-29, so a gate posting a new description on every run passed here and failed on GitHub. The same post as
    the last one writes nothing (and is not refused); another context is not counted."""
    from fleetflow.forge.local import STATUSES_PER_CONTEXT, Edit, dump_json
    repo, sha = str(origin), tip(origin, "feature")
    posts = [{"context": "flux/eu-1", "state": "pending", "description": f"waited {i}m", "target_url": None,
              "created_at": "2024-05-01T12:00:00+00:00"} for i in range(STATUSES_PER_CONTEXT)]
    forge._write(repo, "seed", lambda snap: Edit(None, {status_path(sha, "flux/eu-1"): dump_json(posts)}))
    with pytest.raises(ForgeError, match="GitHub refuses more than 1000 per commit and context") as raised:
        forge.set_status(repo, sha, "FLUX/eu-1", "pending", "waited 1000m")
    assert raised.value.request is not None and raised.value.request.status == 422
    assert forge.set_status(repo, sha, "flux/eu-1", "pending", f"waited {STATUSES_PER_CONTEXT - 1}m") is False
    assert forge.set_status(repo, sha, "flux/us-1", "success", "ok") is True
    assert len(forge.status_history(repo, sha)) == STATUSES_PER_CONTEXT + 1


def test_set_status_is_checked_like_github(forge: LocalForge, origin: Path) -> None:
    repo, sha = str(origin), tip(origin, "main")
    with pytest.raises(ForgeError, match="too long"):
        forge.set_status(repo, sha, "c", "success", "x" * 141)
    with pytest.raises(ForgeError, match="no commit"):
        forge.set_status(repo, "0" * 40, "c", "success", "")
    with pytest.raises(ForgeError, match="full commit sha"):
        forge.set_status(repo, sha[:7], "c", "success", "")
    with pytest.raises(ForgeError, match="invalid status state"):
        forge.set_status(repo, sha, "c", "done", "")  # type: ignore[arg-type]


def test_state_is_visible_from_another_clone(forge: LocalForge, origin: Path, tmp_path: Path) -> None:
    repo, sha = str(origin), tip(origin, "feature")
    forge.create_pull(repo, "feature", "main", "t", "b")
    forge.set_status(repo, sha, "cluster/eu", "success", "ok")
    other = LocalForge(cache_dir=tmp_path / "cache-b")
    assert [p.number for p in other.pulls(repo, "feature", "open")] == [1]
    assert [s.state for s in other.statuses(repo, sha)] == ["success"]
    assert other.set_status(repo, sha, "cluster/eu", "success", "ok") is False

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--mirror", f"file://{origin}", str(clone))
    assert '"head": "feature"' in git(clone, "show", "refs/fleetflow/forge:pulls/1.json")
    assert git(clone, "log", "--format=%s", "refs/fleetflow/forge").splitlines() == [
        f"fleetflow forge: status cluster/eu=success on {sha}",
        "fleetflow forge: open pull request #1 feature -> main",
    ]
    via_url = LocalForge(cache_dir=tmp_path / "cache-c")
    assert via_url.open_pull(f"file://{clone}", "feature", "main") is not None


def interleave(monkeypatch: pytest.MonkeyPatch, slow: LocalForge, repo: str, meanwhile: Callable[[], object]) -> None:
    """Make ``slow`` lose one race: ``meanwhile`` writes after ``slow`` read the store and before it pushes."""
    mirror = slow._mirror(repo)
    push = mirror._push
    calls: list[dict[str, tuple[str, str]]] = []

    def racing_push(updates: dict[str, tuple[str, str]]) -> None:
        if not calls:
            meanwhile()
        calls.append(updates)
        push(updates)

    monkeypatch.setattr(mirror, "_push", racing_push)


def test_concurrent_writers_lose_nothing(
    forge: LocalForge, origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, sha = str(origin), tip(origin, "main")
    other = LocalForge(cache_dir=tmp_path / "cache-b")
    git(origin.parent / "work", "push", "-q", "origin", "feature:fleetflow/dev")
    interleave(monkeypatch, forge, repo, lambda: other.create_pull(repo, "fleetflow/dev", "dev", "A", "a"))
    mine = forge.create_pull(repo, "feature", "main", "B", "b")
    assert mine.number == 2  # its first attempt took #1, lost the race, and was applied again
    assert [p.title for p in other.pulls(repo, "fleetflow/dev")] == ["A"]
    assert [p.title for p in other.pulls(repo, "feature")] == ["B"]
    assert forge.operations == ["create_pull"] and other.operations == ["create_pull"]

    interleave(monkeypatch, other, repo, lambda: forge.set_status(repo, sha, "one", "success", "1"))
    other.set_status(repo, sha, "two", "failure", "2")
    assert [(s.context, s.state) for s in forge.statuses(repo, sha)] == [("one", "success"), ("two", "failure")]


def test_gives_up_after_bounded_retries(forge: LocalForge, origin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = str(origin)
    def always_rejected(updates: dict[str, tuple[str, str]]) -> None:
        raise PushRejected("someone else pushed first")

    monkeypatch.setattr(forge._mirror(repo), "_push", always_rejected)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    with pytest.raises(ForgeError, match="after 10 attempts"):
        forge.dispatch(repo, "promote", {})
    assert forge.operations == []


def test_merge_conflict_leaves_base_alone(forge: LocalForge, origin: Path, work: Path) -> None:
    repo = str(origin)
    commit_file(work, "app.txt", "v1-hotfix\n", "hotfix")
    git(work, "push", "-q", "origin", "main")
    before = tip(origin, "main")
    forge.create_pull(repo, "feature", "main", "t", "b")
    with pytest.raises(ForgeError, match=r"pull request #1 \(feature → main\) cannot be merged: conflicts in app.txt"):
        forge.merge_pull(repo, 1)
    assert tip(origin, "main") == before
    assert forge.open_pull(repo, "feature", "main") is not None
    assert forge.operations == ["create_pull"]


def test_merge_takes_the_current_head(forge: LocalForge, origin: Path, work: Path) -> None:
    repo = str(origin)
    pr = forge.create_pull(repo, "feature", "main", "t", "b")
    git(work, "checkout", "-q", "feature")
    moved = commit_file(work, "other.txt", "x\n", "more")
    git(work, "push", "-q", "origin", "feature")
    assert forge.open_pull(repo, "feature", "main") == pr.__class__(**{**pr.__dict__, "head_sha": moved})
    sha = forge.merge_pull(repo, pr.number)
    assert git(origin, "rev-parse", f"{sha}^2") == moved
    assert forge.pull_record(repo, 1)["head_sha"] == moved


def test_merge_without_merge_tree(forge: LocalForge, origin: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback for git < 2.38 merges in a throw-away work tree."""
    monkeypatch.setattr(gitlayer, "has_merge_tree", lambda: False)
    repo = str(origin)
    git(work, "checkout", "-q", "dev")
    commit_file(work, "conf.txt", "c\n", "dev conf")
    git(work, "push", "-q", "origin", "dev")
    dev = tip(origin, "dev")
    forge.create_pull(repo, "feature", "dev", "t", "b")
    sha = forge.merge_pull(repo, 1)
    assert git(origin, "ls-tree", "--name-only", sha).split() == ["app.txt", "conf.txt"]
    assert git(origin, "rev-parse", f"{sha}^1") == dev

    commit_file(work, "app.txt", "v3\n", "conflicting")
    git(work, "push", "-q", "origin", "dev:main")
    forge.create_pull(repo, "feature", "main", "t", "b")
    with pytest.raises(ForgeError, match=r"conflicts in app\.txt"):
        forge.merge_pull(repo, 2)
    assert git(forge._mirror(repo).folder, "worktree", "list").count("\n") == 0  # cleaned up


def test_dispatch_is_recorded(forge: LocalForge, origin: Path, clock: Clock) -> None:
    repo = str(origin)
    forge.dispatch(repo, "fleetflow-rollout", {"environment": "dev", "commit": "abc"})
    forge.dispatch(repo, "fleetflow-rollout", {"environment": "qa"})
    events = forge.dispatches(repo)
    assert [(e["number"], e["client_payload"]) for e in events] == [
        (1, {"environment": "dev", "commit": "abc"}), (2, {"environment": "qa"})]
    assert events[0]["created_at"] == clock.now.isoformat()
    assert forge.operations == ["dispatch", "dispatch"]
    with pytest.raises(ForgeError, match="at most 10"):
        forge.dispatch(repo, "x", {str(i): i for i in range(11)})
    with pytest.raises(ForgeError, match="not JSON"):
        forge.dispatch(repo, "x", {"a": object()})


def test_merge_retries_when_the_base_moves(
    forge: LocalForge, origin: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = str(origin)
    forge.create_pull(repo, "feature", "main", "t", "b")

    def someone_pushes_main() -> None:
        commit_file(work, "readme.txt", "hi\n", "unrelated")
        git(work, "push", "-q", "origin", "main")

    interleave(monkeypatch, forge, repo, someone_pushes_main)
    sha = forge.merge_pull(repo, 1)
    assert git(origin, "rev-parse", f"{sha}^1") == git(work, "rev-parse", "HEAD")
    assert tip(origin, "main") == sha
    assert git(origin, "ls-tree", "--name-only", sha).split() == ["app.txt", "readme.txt"]
    assert forge.operations == ["create_pull", "merge_pull"]


def test_status_history_is_every_post_oldest_first(forge: LocalForge, origin: Path, clock: Clock) -> None:
    repo, sha = str(origin), tip(origin, "main")
    for context, state in (("fleetflow/dev", "pending"), ("flux/a", "success"), ("fleetflow/dev", "success")):
        forge.set_status(repo, sha, context, state, state)  # type: ignore[arg-type]
        clock.advance(timedelta(minutes=1))
    assert [(s.context, s.state) for s in forge.status_history(repo, sha)] == [
        ("fleetflow/dev", "pending"), ("flux/a", "success"), ("fleetflow/dev", "success")]


def test_the_mirror_of_a_local_repository_borrows_its_objects(forge: LocalForge, origin: Path, work: Path) -> None:
    """The forge's mirror lists the repository's object store in ``objects/info/alternates`` (gitrepository-layout;
    what ``git clone --shared`` writes), so fetching a pushed branch copies none of its objects: a push of a whole
    GitOps tree is not received a second time by the forge."""
    git(work, "checkout", "-q", "-b", "big")
    for i in range(20):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "twenty files")
    git(work, "push", "-q", "origin", "big")
    pr = forge.create_pull(str(origin), "big", "main", "t", "b")
    mirror = forge._mirror(str(origin)).folder
    assert (mirror / "objects" / "info" / "alternates").read_text().strip() == str((origin / "objects").resolve())
    blob = git(origin, "rev-parse", f"{pr.head_sha}:f7.txt")
    local_ids = set()  # the objects in the mirror's own packs
    for index in (mirror / "objects" / "pack").glob("*.idx"):
        listing = subprocess.run(["git", "show-index"], stdin=index.open("rb"), capture_output=True, text=True,
                                 check=True).stdout
        local_ids.update(line.split()[1] for line in listing.splitlines())
    assert blob not in local_ids and pr.head_sha not in local_ids
    assert not any((mirror / "objects" / sha[:2] / sha[2:]).exists() for sha in (blob, pr.head_sha))  # nor loose
    assert any((mirror / "objects").glob("??/*")) or local_ids  # while the store's own commits are there
    assert forge.merge_pull(str(origin), pr.number) == tip(origin, "main")  # merging reads them in place
