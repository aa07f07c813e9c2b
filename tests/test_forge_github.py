"""The github forge against the GitHub stand-in (PyGithub unmodified): every protocol method, idempotent writes
proved with the stub's request log, injected faults (5xx, rate limits, dropped connections, "already exists"),
request counts, and the GitHub App flow (JWT → installation → token) against the stand-in's App endpoints."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fleetflow.errors import ForgeError, GitError, UsageError
from fleetflow.forge.base import Forge
from fleetflow.forge.git import GitRepos, PushRejected
from fleetflow.forge.github import GitHubForge, _check_status
from fleetflow.settings import Settings
from tests.ghstub.errors import ACTIONS_BOT
from tests.ghstub.fixtures import github_stub  # noqa: F401
from tests.ghstub.pushrefusals import Refusal, accept_pushes, large_file, protected, refuse_pushes, workflows
from tests.ghstub.server import GitHubStub
from tests.githttp import GitHttp

REPO = "acme/gitops"
HEAD = "fleetflow/dev"
FAST: dict[str, Any] = {
    "retries": 3,
    "backoff_factor": 0,
    "secondary_rate_wait": 1,
    "seconds_between_requests": 0,
    "seconds_between_writes": 0,
}


@pytest.fixture
def stub(github_stub: GitHubStub) -> GitHubStub:  # noqa: F811
    """``acme/gitops``: ``main`` and ``fleetflow/dev`` one commit ahead (a PR can be opened)."""
    repo = github_stub.create_repo(REPO)
    repo.commit_files("main", {"README.md": "gitops\n"}, "readme")
    repo.commit_files(HEAD, {"dev/app.yaml": "replicas: 1\n"}, "render dev")
    return github_stub


@pytest.fixture
def forge(stub: GitHubStub) -> Iterator[GitHubForge]:
    made = GitHubForge(token="stub-token", api_url=stub.url, **FAST)
    yield made
    made.close()


def head_sha(stub: GitHubStub, branch: str = HEAD) -> str:
    sha = stub.repo(REPO).branch_sha(branch)
    assert sha is not None
    return sha


def calls(stub: GitHubStub, since: int) -> list[str]:
    """The requests since ``since`` as ``METHOD path status`` (the stub's log)."""
    return [f"{r.method} {r.path} {r.status}" for r in stub.requests_since(since)]


def measure(stub: GitHubStub, table: dict[str, int], label: str, action: Callable[[], object]) -> object:
    mark = stub.mark()
    result = action()
    table[label] = stub.count(since=mark)
    return result


# -- every protocol method ------------------------------------------------------------------------------------


def test_the_forge_satisfies_the_protocol() -> None:
    forge = GitHubForge(token="stub-token", api_url="http://127.0.0.1:9", **FAST)  # no request is made
    typed: Forge = forge
    assert typed.name == "github"
    assert "stub-token" not in repr(forge)


def test_git_url_and_default_branch_read_the_repository_once(stub: GitHubStub, forge: GitHubForge) -> None:
    mark = stub.mark()
    url = forge.git_url(REPO)
    assert url == stub.repo(REPO).clone_url and url.startswith("file://")  # the stub's: returned as is
    assert forge.default_branch(REPO) == "main"
    assert forge.git_url(REPO.upper()) == url  # GitHub names are case-insensitive: same cache entry
    assert calls(stub, mark) == [f"GET /repos/{REPO} 200"]


def test_pull_request_round_trip(stub: GitHubStub, forge: GitHubForge) -> None:
    assert forge.open_pull(REPO, HEAD, "main") is None
    pr = forge.create_pull(REPO, HEAD, "main", "dev <- main@abc", "body <!-- fleetflow:environment=dev -->")
    assert (pr.number, pr.head, pr.base, pr.state, pr.merged) == (1, HEAD, "main", "open", False)
    assert pr.head_sha == head_sha(stub) and pr.merge_commit_sha is None
    assert pr.url.endswith(f"/{REPO}/pull/1") and pr.body.endswith("-->")
    assert forge.open_pull(REPO, HEAD, "main") == pr
    assert forge.open_pull(REPO, HEAD, "other") is None  # the base filter
    assert forge.open_pull(REPO, "fleetflow/qa", "main") is None  # the head filter (with owner: GitHub needs it)
    assert forge.pulls(REPO, HEAD) == [pr] and forge.pulls(REPO, HEAD, "closed") == []

    updated = forge.update_pull(REPO, 1, title="dev <- main@def", body="new body")
    assert (updated.title, updated.body, updated.state) == ("dev <- main@def", "new body", "open")
    forge.add_labels(REPO, 1, ["fleetflow", "env:dev"])
    forge.request_reviewers(REPO, 1, ["alice", "acme/platform"])
    stored = stub.repo(REPO).pull(1)
    assert stored.labels == ["fleetflow", "env:dev"]
    assert (stored.requested_reviewers, stored.requested_teams) == (["alice"], ["platform"])
    found = forge.open_pull(REPO, HEAD, "main")
    assert found is not None and found.labels == ("fleetflow", "env:dev")
    assert (found.author, found.review_requests) == (stub.login, ("alice", "team:platform"))
    person = stub.client(token=stub.person_token("alice"))
    person.get_repo(REPO).get_pull(1).create_review(event="APPROVE")  # no longer a requested reviewer (GitHub)
    person.close()
    assert forge.open_pull(REPO, HEAD, "main").review_requests == ("team:platform",)  # type: ignore[union-attr]
    assert forge.review_requests_made(REPO, 1) == {"alice", "team:platform"}  # the review_requested events

    sha = forge.merge_pull(REPO, 1)
    assert sha == head_sha(stub, "main") and stub.repo(REPO).pull(1).merged
    [merged] = forge.pulls(REPO, HEAD, "closed")
    assert (merged.state, merged.merged, merged.merge_commit_sha) == ("closed", True, sha)
    assert forge.open_pull(REPO, HEAD, "main") is None
    with pytest.raises(ForgeError, match="merged: its state cannot change"):
        forge.update_pull(REPO, 1, state="open")


def test_close_and_reopen(stub: GitHubStub, forge: GitHubForge) -> None:
    pr = forge.create_pull(REPO, HEAD, "main", "t", "b")
    closed = forge.update_pull(REPO, pr.number, state="closed")
    assert closed.state == "closed" and not closed.merged
    assert forge.pulls(REPO, HEAD, "open") == [] and forge.open_pull(REPO, HEAD, "main") is None
    with pytest.raises(ForgeError, match="closed: only an open pull request can be merged"):
        forge.merge_pull(REPO, pr.number)
    assert forge.update_pull(REPO, pr.number, state="open").state == "open"
    second = forge.create_pull(REPO, HEAD, "main", "t", "b")  # open already: the same one
    assert second.number == pr.number and len(stub.repo(REPO).list_pulls()) == 1


def test_pulls_are_newest_first_and_filtered_by_head(stub: GitHubStub, forge: GitHubForge) -> None:
    first = forge.create_pull(REPO, HEAD, "main", "one", "")
    forge.update_pull(REPO, first.number, state="closed")
    second = forge.create_pull(REPO, HEAD, "main", "two", "")
    stub.repo(REPO).commit_files("fleetflow/qa", {"qa.yaml": "x: 1\n"}, "qa")
    forge.create_pull(REPO, "fleetflow/qa", "main", "qa", "")
    assert [p.number for p in forge.pulls(REPO, HEAD)] == [second.number, first.number]
    assert [p.number for p in forge.pulls(REPO, HEAD, "open")] == [second.number]
    assert [p.number for p in forge.pulls(REPO, HEAD, "closed")] == [first.number]


def test_a_commit_takes_at_most_1000_statuses_of_one_context(stub: GitHubStub, forge: GitHubForge) -> None:
    """GitHub refuses the 1,001st status of one sha and context with a 422 ("Create a commit status": "there is a
    limit of 1000 statuses per sha and context within a repository", https://docs.github.com/en/rest/commits/
    statuses#create-a-commit-status; the message from a public run log, labelflow/labelflow actions run 5054760537).
    The stand-in took any number until 2026-11-29. The forge names the refusal; another context is not counted."""
    from tests.ghstub.state import STATUSES_PER_CONTEXT
    repo, sha = stub.repo(REPO), head_sha(stub)
    for i in range(STATUSES_PER_CONTEXT):
        repo.add_status(sha, "pending", "flux/eu-1", f"waited {i}m")
    with pytest.raises(ForgeError, match="maximum number of statuses"):
        forge.set_status(REPO, sha, "Flux/EU-1", "pending", "waited 1000m")
    assert forge.set_status(REPO, sha, "flux/us-1", "success", "ok") is True


def test_statuses_combine_commit_statuses_and_check_runs(stub: GitHubStub, forge: GitHubForge) -> None:
    repo, sha = stub.repo(REPO), head_sha(stub)
    repo.add_status(sha, "pending", "cluster/eu-1", "reconciling")
    repo.add_status(sha, "success", "cluster/eu-1", "applied rev 2")  # the latest per context counts
    repo.add_status(sha, "error", "cluster/us-1", "boom")
    runs = {
        "ci/success": "success", "ci/neutral": "neutral", "ci/skipped": "skipped", "ci/failure": "failure",
        "ci/timed_out": "timed_out", "ci/cancelled": "cancelled", "ci/action_required": "action_required",
    }  # "stale" is set by GitHub only (and is not in the OpenAPI enum): see the mapping test below
    for name, conclusion in runs.items():
        repo.add_check_run(sha, name, status="completed", conclusion=conclusion)
    repo.add_check_run(sha, "ci/queued", status="queued")
    repo.add_check_run(sha, "ci/running", status="in_progress", output={"title": "3 of 5 done"})
    # a status and a check run with one name: the newer wins
    repo.add_status(sha, "success", "shared/older-check", "status wins")
    repo.add_check_run(sha, "shared/older-check", status="completed", conclusion="failure",
                       started_at="2000-01-01T00:00:00Z", completed_at="2000-01-01T00:01:00Z")
    repo.add_status(sha, "success", "shared/newer-check", "status loses")
    repo.add_check_run(sha, "shared/newer-check", status="completed", conclusion="failure",
                       started_at="2999-01-01T00:00:00Z", completed_at="2999-01-01T00:01:00Z")

    mark = stub.mark()
    found = {s.context: s for s in forge.statuses(REPO, sha)}
    assert stub.count(since=mark) == 2  # the combined status and the check runs, no repository read
    states = {context: s.state for context, s in found.items()}
    assert states == {
        "cluster/eu-1": "success", "cluster/us-1": "error",
        "ci/success": "success", "ci/neutral": "success", "ci/skipped": "success",
        "ci/failure": "failure", "ci/timed_out": "failure", "ci/cancelled": "failure",
        "ci/action_required": "failure",
        "ci/queued": "pending", "ci/running": "pending",
        "shared/older-check": "success", "shared/newer-check": "failure",
    }
    assert list(found) == sorted(found)
    eu = found["cluster/eu-1"]
    assert (eu.kind, eu.description) == ("status", "applied rev 2") and eu.updated_at is not None
    assert eu.updated_at.tzinfo is not None
    assert found["ci/running"].description == "3 of 5 done" and found["ci/running"].kind == "check"
    assert found["shared/newer-check"].kind == "check" and found["shared/older-check"].kind == "status"
    assert forge.statuses(REPO, head_sha(stub, "main")) == []


@pytest.mark.parametrize(
    ("status", "conclusion", "state"),
    [("completed", "stale", "failure"), ("completed", "startup_failure", "failure"), ("completed", None, "failure"),
     ("waiting", None, "pending"), ("requested", None, "pending")],
)
def test_check_run_mapping_beyond_the_stub(status: str, conclusion: str | None, state: str) -> None:
    assert _check_status("ci", status, conclusion, None, None).state == state


def test_statuses_read_every_page_of_the_combined_status(stub: GitHubStub, forge: GitHubForge) -> None:
    repo, sha = stub.repo(REPO), head_sha(stub)
    for number in range(130):  # a fleet bigger than one page (100)
        repo.add_status(sha, "success", f"cluster/{number:03}", "ok")
    assert len(forge.statuses(REPO, sha)) == 130
    assert forge.set_status(REPO, sha, "cluster/129", "success", "ok") is False  # found on page 2


def test_set_status_writes_only_a_change(stub: GitHubStub, forge: GitHubForge) -> None:
    sha = head_sha(stub)
    forge.default_branch(REPO)  # warm the repository cache: the counts below are set_status alone
    mark = stub.mark()
    assert forge.set_status(REPO, sha, "fleetflow/dev", "pending", "scheduled", "https://ci.example/1") is True
    assert stub.count(since=mark) == 2
    mark = stub.mark()
    assert forge.set_status(REPO, sha, "fleetflow/dev", "pending", "scheduled") is False
    assert calls(stub, mark) == [f"GET /repos/{REPO}/commits/{sha}/status 200"]
    assert forge.set_status(REPO, sha, "fleetflow/dev", "pending", "rolling out") is True
    assert forge.set_status(REPO, sha, "fleetflow/dev", "success", "rolled out: 2/2 clusters") is True
    posted = [(s.state, s.description, s.target_url) for s in stub.repo(REPO).statuses]
    assert posted == [("pending", "scheduled", "https://ci.example/1"), ("pending", "rolling out", None),
                      ("success", "rolled out: 2/2 clusters", None)]
    [latest] = forge.statuses(REPO, sha)
    assert (latest.context, latest.state, latest.description) == ("fleetflow/dev", "success",
                                                                 "rolled out: 2/2 clusters")


def test_dispatch(stub: GitHubStub, forge: GitHubForge) -> None:
    forge.dispatch(REPO, "fleetflow-promote", {"environment": "qa", "commit": "a" * 40})
    [event] = stub.dispatches
    assert (event.repo, event.event_type, event.client_payload) == ("gitops", "fleetflow-promote",
                                                                    {"environment": "qa", "commit": "a" * 40})
    with pytest.raises(ForgeError, match="top-level keys"):
        forge.dispatch(REPO, "x", {str(n): n for n in range(11)})
    with pytest.raises(ForgeError, match="event type"):
        forge.dispatch(REPO, "", {})


def test_invalid_input_is_refused_before_any_request(stub: GitHubStub, forge: GitHubForge) -> None:
    mark = stub.mark()
    with pytest.raises(ForgeError, match="expected owner/name"):
        forge.git_url("acme")
    with pytest.raises(ForgeError, match="not a full commit sha"):
        forge.statuses(REPO, "main")
    with pytest.raises(ForgeError, match="too long"):
        forge.set_status(REPO, "a" * 40, "c", "success", "x" * 141)
    with pytest.raises(ForgeError, match="invalid status state"):
        forge.set_status(REPO, "a" * 40, "c", "done", "x")  # type: ignore[arg-type]
    with pytest.raises(ForgeError, match="into itself"):
        forge.create_pull(REPO, "main", "main", "t", "b")
    with pytest.raises(ForgeError, match="a label needs a name"):
        forge.add_labels(REPO, 1, [" "])
    assert stub.count(since=mark) == 0


# -- idempotency: the second call writes nothing ------------------------------------------------------------


def test_every_write_twice_makes_no_second_write(stub: GitHubStub, forge: GitHubForge) -> None:
    sha = head_sha(stub)
    writes: dict[str, list[str]] = {}

    def twice(label: str, action: Callable[[], object]) -> tuple[object, object]:
        first = action()
        mark = stub.mark()
        second = action()
        writes[label] = [f"{r.method} {r.path}" for r in stub.requests_since(mark) if r.method != "GET"]
        return first, second

    first, second = twice("create_pull", lambda: forge.create_pull(REPO, HEAD, "main", "t", "b"))
    assert first == second  # the second create answered 422 "already exists" and found the first
    assert writes.pop("create_pull") == [f"POST /repos/{REPO}/pulls"]  # the create that was refused
    assert len(stub.repo(REPO).list_pulls()) == 1
    twice("set_status", lambda: forge.set_status(REPO, sha, "fleetflow/dev", "success", "ok"))
    twice("update_pull", lambda: forge.update_pull(REPO, 1, title="t2", body="b2", state="open"))
    twice("add_labels", lambda: forge.add_labels(REPO, 1, ["fleetflow", "env:dev"]))
    twice("add_labels (case)", lambda: forge.add_labels(REPO, 1, ["FleetFlow"]))  # GitHub labels ignore case
    twice("request_reviewers", lambda: forge.request_reviewers(REPO, 1, ["alice", "acme/platform"]))
    twice("request_reviewers (author)", lambda: forge.request_reviewers(REPO, 1, [stub.login]))
    first, second = twice("merge_pull", lambda: forge.merge_pull(REPO, 1))
    assert first == second
    print("writes made by the second call:", writes)
    assert writes == {label: [] for label in writes}
    assert len(stub.repo(REPO).statuses) == 1 and stub.repo(REPO).pull(1).labels == ["fleetflow", "env:dev"]


# -- request counts ---------------------------------------------------------------------------------------


def test_request_counts(stub: GitHubStub) -> None:
    """Requests per call on a fresh forge (its first use of the repository included where it costs one)."""
    sha, table = head_sha(stub), dict[str, int]()
    forge = GitHubForge(token="stub-token", api_url=stub.url, **FAST)
    measure(stub, table, "git_url (first)", lambda: forge.git_url(REPO))
    measure(stub, table, "git_url (cached)", lambda: forge.git_url(REPO))
    measure(stub, table, "default_branch (cached)", lambda: forge.default_branch(REPO))
    measure(stub, table, "open_pull (none)", lambda: forge.open_pull(REPO, HEAD, "main"))
    measure(stub, table, "create_pull", lambda: forge.create_pull(REPO, HEAD, "main", "t", "b"))
    measure(stub, table, "create_pull (exists)", lambda: forge.create_pull(REPO, HEAD, "main", "t", "b"))
    measure(stub, table, "open_pull", lambda: forge.open_pull(REPO, HEAD, "main"))
    measure(stub, table, "pulls", lambda: forge.pulls(REPO, HEAD))
    measure(stub, table, "update_pull", lambda: forge.update_pull(REPO, 1, title="t2"))
    measure(stub, table, "update_pull (unchanged)", lambda: forge.update_pull(REPO, 1, title="t2"))
    measure(stub, table, "add_labels", lambda: forge.add_labels(REPO, 1, ["a", "b"]))
    measure(stub, table, "add_labels (present)", lambda: forge.add_labels(REPO, 1, ["a", "b"]))
    measure(stub, table, "request_reviewers", lambda: forge.request_reviewers(REPO, 1, ["alice"]))
    measure(stub, table, "request_reviewers (present)", lambda: forge.request_reviewers(REPO, 1, ["alice"]))
    measure(stub, table, "review_requests_made", lambda: forge.review_requests_made(REPO, 1))
    measure(stub, table, "set_status", lambda: forge.set_status(REPO, sha, "c", "success", "ok"))
    measure(stub, table, "set_status (unchanged)", lambda: forge.set_status(REPO, sha, "c", "success", "ok"))
    measure(stub, table, "statuses", lambda: forge.statuses(REPO, sha))
    measure(stub, table, "merge_pull", lambda: forge.merge_pull(REPO, 1))
    measure(stub, table, "merge_pull (merged)", lambda: forge.merge_pull(REPO, 1))
    measure(stub, table, "dispatch", lambda: forge.dispatch(REPO, "e", {}))
    forge.close()
    print("\nrequests per call:\n" + "\n".join(f"  {label:<28} {n}" for label, n in table.items()))
    assert table == {
        "git_url (first)": 1, "git_url (cached)": 0, "default_branch (cached)": 0,
        "open_pull (none)": 1, "create_pull": 1, "create_pull (exists)": 2, "open_pull": 1, "pulls": 1,
        "update_pull": 2, "update_pull (unchanged)": 1, "add_labels": 2, "add_labels (present)": 1,
        "request_reviewers": 2, "request_reviewers (present)": 1, "review_requests_made": 1,
        "set_status": 2, "set_status (unchanged)": 1,
        "statuses": 2, "merge_pull": 2, "merge_pull (merged)": 1, "dispatch": 1,
    }


# -- faults ---------------------------------------------------------------------------------------------------


def test_5xx_on_create_pull_is_retried_once_and_makes_one_pr(stub: GitHubStub, forge: GitHubForge) -> None:
    stub.inject("POST", r"/pulls$", "status_5xx")
    mark = stub.mark()
    pr = forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert calls(stub, mark) == [f"POST /repos/{REPO}/pulls 502", f"POST /repos/{REPO}/pulls 201"]
    assert [p.number for p in stub.repo(REPO).list_pulls()] == [pr.number]


def test_5xx_on_update_pull_is_retried(stub: GitHubStub, forge: GitHubForge) -> None:
    forge.create_pull(REPO, HEAD, "main", "t", "b")
    stub.inject("PATCH", r"/pulls/1$", "status_5xx")
    assert forge.update_pull(REPO, 1, title="t2").title == "t2"
    assert stub.count(method="PATCH", status=502) == 1 and stub.count(method="PATCH", status=200) == 1


def test_secondary_rate_limit_on_status_post_waits_and_posts_once(stub: GitHubStub, forge: GitHubForge) -> None:
    sha = head_sha(stub)
    stub.inject("POST", r"/statuses/", "secondary_rate_limit", retry_after=1)
    mark, started = stub.mark(), time.monotonic()
    assert forge.set_status(REPO, sha, "fleetflow/dev", "pending", "scheduled") is True
    assert time.monotonic() - started >= 1  # Retry-After honoured
    assert [r.status for r in stub.requests_since(mark) if r.method == "POST"] == [403, 201]
    assert len(stub.repo(REPO).statuses) == 1


def test_primary_rate_limit_waits_for_the_reset(stub: GitHubStub, forge: GitHubForge) -> None:
    stub.inject("GET", r"/pulls$", "rate_limit")
    started = time.monotonic()
    assert forge.open_pull(REPO, HEAD, "main") is None
    assert time.monotonic() - started >= 0.5  # slept until x-ratelimit-reset (1 s ahead, + GithubRetry's 1 s)
    assert [r.status for r in stub.requests if r.path.endswith("/pulls")] == [403, 200]


def test_dropped_connection_after_create_returns_the_pr_it_made(stub: GitHubStub, forge: GitHubForge) -> None:
    stub.inject("POST", r"/pulls$", "drop_after")
    mark = stub.mark()
    pr = forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert [p.number for p in stub.repo(REPO).list_pulls()] == [pr.number] == [1]
    assert calls(stub, mark) == [
        f"POST /repos/{REPO}/pulls 201",  # performed, answer lost
        f"POST /repos/{REPO}/pulls 422",  # GithubRetry's retry: already exists
        f"GET /repos/{REPO}/pulls 200",  # found
    ]
    assert stub.requests_since(mark)[0].dropped


def test_dropped_connection_after_merge_returns_the_merge_sha(stub: GitHubStub, forge: GitHubForge) -> None:
    forge.create_pull(REPO, HEAD, "main", "t", "b")
    stub.inject("PUT", r"/merge$", "drop_after")
    sha = forge.merge_pull(REPO, 1)
    assert sha == head_sha(stub, "main") == stub.repo(REPO).pull(1).merge_commit_sha
    assert [r.status for r in stub.requests if r.method == "PUT"] == [200, 405]  # the retry: not mergeable


def test_pr_already_exists_returns_the_existing_one(stub: GitHubStub, forge: GitHubForge) -> None:
    existing = stub.repo(REPO).create_pull(HEAD, "main", "made elsewhere", "body")
    stub.inject("POST", r"/pulls$", "pr_already_exists")
    pr = forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert (pr.number, pr.title) == (existing.number, "made elsewhere")
    assert stub.count(method="POST", status=201) == 0 and len(stub.repo(REPO).list_pulls()) == 1


def test_already_exists_but_not_listed_creates_again(stub: GitHubStub, forge: GitHubForge) -> None:
    """GitHub said "exists" (e.g. a PR closed meanwhile, or a lagging list): one more create, one PR."""
    stub.inject("POST", r"/pulls$", "pr_already_exists")
    pr = forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert [p.number for p in stub.repo(REPO).list_pulls()] == [pr.number]
    stub.repo(REPO).update_pull(pr.number, state="closed")
    stub.inject("POST", r"/pulls$", "pr_already_exists", times=2)
    with pytest.raises(ForgeError, match="exists in acme/gitops, but none is open") as failed:
        forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert failed.value.request is not None and failed.value.request.status == 422


def test_rate_limit_that_does_not_end_is_a_forge_error(stub: GitHubStub, forge: GitHubForge) -> None:
    stub.inject("GET", r"/pulls$", "secondary_rate_limit", times=10, retry_after=0)
    with pytest.raises(ForgeError, match="rate limit still exceeded after waiting and retrying") as failed:
        forge.open_pull(REPO, HEAD, "main")
    assert failed.value.request is not None and failed.value.request.status == 403
    assert stub.count(path=r"/pulls$", status=403) == 4


def test_rate_limit_reset_beyond_max_wait_is_a_forge_error(stub: GitHubStub) -> None:
    impatient = GitHubForge(token="stub-token", api_url=stub.url, **{**FAST, "max_rate_limit_wait": 0.5})
    stub.inject("GET", r"/pulls$", "rate_limit")
    started = time.monotonic()
    with pytest.raises(ForgeError, match=r"would exceed max_rate_limit_wait.*hourly request quota, not a permission"):
        impatient.open_pull(REPO, HEAD, "main")
    assert time.monotonic() - started < 0.5
    impatient.close()


def test_tried_once_neither_retries_nor_waits_and_then_restores_both(stub: GitHubStub, forge: GitHubForge) -> None:
    """``tried_once`` (the hold's polls): a 502 and a primary rate limit whose reset is an hour away each fail at the
    first answer, worded as such; afterwards the same forge retries again (a 502 once, then the answer)."""
    stub.inject("GET", r"/pulls$", "status_5xx", times=10)
    mark = stub.mark()
    with forge.tried_once(), pytest.raises(ForgeError, match=r"GitHub failed with 502 \(tried once, not retried\)"):
        forge.open_pull(REPO, HEAD, "main")
    assert stub.count(since=mark, path=r"/pulls$") == 1
    stub.clear_faults()
    stub.inject("GET", r"/pulls$", "rate_limit", reset_after=3600)
    started = time.monotonic()
    with forge.tried_once(), pytest.raises(ForgeError, match=r"rate limited \(tried once, without waiting") as failed:
        forge.open_pull(REPO, HEAD, "main")
    assert time.monotonic() - started < 5
    assert failed.value.request is not None and failed.value.request.status == 403
    stub.clear_faults()
    stub.inject("GET", r"/pulls$", "status_5xx")
    mark = stub.mark()
    assert forge.open_pull(REPO, HEAD, "main") is None
    assert [r.status for r in stub.requests_since(mark)] == [502, 200]


# -- errors -----------------------------------------------------------------------------------------------


def test_persistent_5xx_becomes_a_forge_error_with_the_request(stub: GitHubStub, forge: GitHubForge) -> None:
    stub.inject("POST", r"/pulls$", "status_5xx", times=10)
    with pytest.raises(ForgeError) as failed:
        forge.create_pull(REPO, HEAD, "main", "t", "b")
    request = failed.value.request
    assert request is not None and (request.method, request.status) == ("POST", 502)
    assert request.url == f"{stub.url}/repos/{REPO}/pulls"
    assert "create a pull request" in str(failed.value) and "502" in str(failed.value)
    assert stub.count(method="POST", status=502) == 4  # the first try and 3 retries


def test_validation_errors_carry_githubs_message(stub: GitHubStub, forge: GitHubForge) -> None:
    with pytest.raises(ForgeError, match="Validation Failed: No commits between fleetflow/dev and main") as failed:
        forge.create_pull(REPO, "main", "fleetflow/dev", "t", "b")  # main is behind: nothing to propose
    assert failed.value.request is not None and failed.value.request.status == 422


def test_a_pull_request_github_cannot_open_says_which_branch_is_wrong(stub: GitHubStub, forge: GitHubForge) -> None:
    """GitHub's 422 to "Create a pull request" (https://docs.github.com/rest/pulls/pulls#create-a-pull-request,
    "Validation failed"): a base that does not exist is ``{"resource": "PullRequest", "field": "base", "code":
    "invalid"}`` (quoted in dailymotion-oss/octopilot#134, iterative/cml#619), a base that holds every commit of
    the head is "No commits between <base> and <head>". Each error names the branch and what to do; the PR is not
    made."""
    with pytest.raises(ForgeError) as missing:
        forge.create_pull(REPO, HEAD, "release", "t", "b")
    assert str(missing.value).startswith("GitHub: cannot create a pull request: Validation Failed: PullRequest base "
                                         "invalid (hint: the base branch release does not exist in acme/gitops: "
                                         "create it, or name an existing branch) [POST ")
    with pytest.raises(ForgeError) as nothing:
        forge.create_pull(REPO, "main", HEAD, "t", "b")
    assert ("No commits between fleetflow/dev and main (hint: fleetflow/dev already holds every commit of main, so "
            "there is nothing to propose") in str(nothing.value)
    assert stub.repo(REPO).list_pulls() == []


def test_a_workflow_token_the_actions_setting_refuses_names_the_setting(stub: GitHubStub,
                                                                        forge: GitHubForge) -> None:
    """A workflow's GITHUB_TOKEN (github-actions[bot]) may not open a pull request while "Allow GitHub Actions to
    create and approve pull requests" is off, as in every new repository: 403 "GitHub Actions is not permitted to
    create or approve pull requests." (GitHub Docs, "Managing GitHub Actions settings for a repository",
    https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/enabling-features-for-
    your-repository/managing-github-actions-settings-for-a-repository, "Preventing GitHub Actions from creating or
    approving pull requests"; the words as relayed in peter-evans/create-pull-request#3979 and #1175, the org-level
    case in microsoft/AL-Go#159). The first-run failure: the fix is the setting, not a permission, and the error
    says so (it used to list four permissions the token already had)."""
    stub.store.login = ACTIONS_BOT
    with pytest.raises(ForgeError) as refused:
        forge.create_pull(REPO, HEAD, "main", "t", "b")
    message = str(refused.value)
    assert message.startswith("GitHub: cannot create a pull request: GitHub Actions is not permitted to create or "
                              "approve pull requests. (hint: this is a setting, not a missing permission: turn on "
                              '"Allow GitHub Actions to create and approve pull requests" in the repository\'s '
                              "Settings → Actions → General → Workflow permissions")
    assert "pull-requests: write" not in message
    assert refused.value.request is not None and refused.value.request.status == 403
    stub.repo(REPO).actions_can_create_pulls = True  # the setting turned on: the same call opens the PR
    assert forge.create_pull(REPO, HEAD, "main", "t", "b").number == 1


def test_a_rate_limit_is_not_called_a_missing_permission(stub: GitHubStub, forge: GitHubForge) -> None:
    """GitHub answers a rate limit with 403 too ("Rate limits for the REST API",
    https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api: the primary limit with
    ``x-ratelimit-remaining: 0``, the secondary one with "You have exceeded a secondary rate limit" and maybe
    ``retry-after``); a 403 that is a permission says "Resource not accessible by integration". Only the last gets
    the permissions hint; a rate limit says to wait, also where the request had a hint of its own (the App's
    installation lookup)."""
    stub.inject("GET", r"/pulls$", "secondary_rate_limit", times=10, retry_after=0)
    with pytest.raises(ForgeError) as limited:
        forge.open_pull(REPO, HEAD, "main")
    assert "not a permission: wait" in str(limited.value) and "contents: write" not in str(limited.value)
    stub.clear_faults()
    with forge.tried_once():
        stub.inject("GET", r"/pulls$", "rate_limit", reset_after=3600)
        with pytest.raises(ForgeError) as once:
            forge.open_pull(REPO, HEAD, "main")
    assert "not a permission" in str(once.value) and "contents: write" not in str(once.value)
    stub.clear_faults()
    stub.inject("GET", r"/pulls$", "forbidden")
    with pytest.raises(ForgeError) as forbidden:
        forge.open_pull(REPO, HEAD, "main")
    assert "Resource not accessible by integration (hint: the token (or the GitHub App installation) needs " \
           "contents: write" in str(forbidden.value)


def test_a_missing_permission_is_named_as_github_names_it(stub: GitHubStub, forge: GitHubForge) -> None:
    """GitHub answers a GitHub App or a fine-grained token with ``X-Accepted-GitHub-Permissions``, the permission
    sets the endpoint takes (github.blog changelog 2023-08-10; GitHub Docs, "Permissions required for GitHub Apps",
    https://docs.github.com/rest/overview/permissions-required-for-github-apps: "Create a pull request" is under
    "Pull requests", write). The hint names that one first, then what fleetflow needs in all."""
    stub.inject("POST", r"/pulls$", "forbidden", accepted_permissions="pull_requests=write")
    with pytest.raises(ForgeError) as forbidden:
        forge.create_pull(REPO, HEAD, "main", "t", "b")
    assert ("Resource not accessible by integration (hint: this request needs pull-requests: write (GitHub's "
            "X-Accepted-GitHub-Permissions); the token (or the GitHub App installation) needs contents: write, "
            "pull-requests: write, statuses: write and checks: read on the repository)") in str(forbidden.value)
    # several sets: the changelog's own example value ("List project collaborators")
    stub.inject("GET", r"/pulls$", "forbidden", accepted_permissions="repository_projects=write; "
                                                                     "organization_projects=admin")
    with pytest.raises(ForgeError, match=r"needs repository-projects: write or organization-projects: admin \(GitHub"):
        forge.open_pull(REPO, HEAD, "main")


def test_unknown_repository_and_pull(stub: GitHubStub, forge: GitHubForge) -> None:
    with pytest.raises(ForgeError, match=r"cannot read the repository.*Not Found.*cannot see it") as failed:
        forge.git_url("acme/nope")
    assert failed.value.request is not None and failed.value.request.status == 404
    with pytest.raises(ForgeError, match=r"read a pull request.*GET .*/pulls/7 -> 404"):
        forge.merge_pull(REPO, 7)


def test_bad_credentials_say_the_token_was_not_accepted(tmp_path: Path) -> None:
    """401 is never a missing permission: until 2026-11-29 its hint went on with the permissions the token needs
    (tests/test_githubauth.py has the App's 401s)."""
    with GitHubStub(root=tmp_path, token="secret") as stub:
        stub.create_repo(REPO)
        forge = GitHubForge(token="wrong", api_url=stub.url, **FAST)
        with pytest.raises(ForgeError) as failed:
            forge.open_pull(REPO, HEAD, "main")
        assert failed.value.request is not None and failed.value.request.status == 401
        message = str(failed.value)
        assert "Bad credentials (hint: GitHub did not accept the token: it is mistyped, expired or revoked" in message
        assert "pull-requests: write" not in message and "wrong" not in message
        forge.close()
        good = GitHubForge(token="secret", api_url=stub.url, **FAST)
        assert good.default_branch(REPO) == "main"
        good.close()


def test_unreachable_api_is_a_forge_error() -> None:
    down = GitHubForge(token="t", api_url="http://127.0.0.1:9", **{**FAST, "retries": 1})  # discard port
    with pytest.raises(ForgeError, match="connection failed") as failed:
        down.default_branch(REPO)
    assert failed.value.request is not None and failed.value.request.method == "GET"
    assert failed.value.request.url.startswith("http://127.0.0.1:9/repos/acme/gitops")
    assert failed.value.__cause__ is None  # the requests error holds the Authorization header: not chained


# -- settings and credentials ---------------------------------------------------------------------------------


def test_from_settings(stub: GitHubStub) -> None:
    settings = Settings(forge="github", control_plane="acme/platform", token="stub-token", api_url=stub.url)
    forge = GitHubForge.from_settings(settings, **FAST)
    assert forge.default_branch(REPO) == "main" and forge.api_url == stub.url
    assert "stub-token" not in repr(forge)
    forge.close()
    with pytest.raises(UsageError, match="needs credentials"):
        GitHubForge.from_settings(Settings(forge="github", control_plane="acme/platform"))
    # PyGithub's throttle unless the settings (FLEETFLOW_GITHUB_THROTTLE) or the caller's tuning say otherwise
    throttle = ("seconds_between_requests", "seconds_between_writes")
    assert [GitHubForge.from_settings(settings)._options[k] for k in throttle] == [0.25, 1.0]
    quick = settings.model_copy(update={"github_throttle": (0.0, 0.5)})
    assert [GitHubForge.from_settings(quick)._options[k] for k in throttle] == [0.0, 0.5]
    assert [GitHubForge.from_settings(quick, seconds_between_writes=2)._options[k] for k in throttle] == [0.0, 2]
    with pytest.raises(UsageError, match="FLEETFLOW_APP_PRIVATE_KEY"):
        GitHubForge.from_settings(Settings(forge="github", app_id="1", token="t"))
    with pytest.raises(UsageError, match="cannot sign a JWT"):
        GitHubForge.from_settings(Settings(forge="github", app_id="1", app_private_key="not a key"))


@pytest.fixture(scope="module")
def app_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey, form: serialization.PrivateFormat | None = None) -> str:
    form = form or serialization.PrivateFormat.TraditionalOpenSSL
    return key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption()).decode()


def public_pem(key: rsa.RSAPrivateKey) -> str:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def app_calls(stub: GitHubStub, since: int = 0) -> list[tuple[str, str, int, str | None]]:
    """The requests since ``since`` with what authenticated each (``app <id>``, ``installation <id>``)."""
    return [(r.method, r.path, r.status, r.credential) for r in stub.requests_since(since)]


def test_github_app_jwt_installation_token_repo_read_and_pr(stub: GitHubStub, app_key: rsa.RSAPrivateKey) -> None:
    stub.token = "only-for-the-stubs-own-user"  # the forge gets in with the installation token or not at all
    installation = stub.register_app(12345, public_pem(app_key), installed_on=[REPO], slug="fleetflow")
    stub.repo(REPO).https_clone_url = "https://git.example.com/acme/gitops.git"
    settings = Settings(forge="github", control_plane=REPO, token="ignored-when-an-app-is-set",
                        app_id="12345", app_private_key=pem(app_key), api_url=stub.url)
    forge = GitHubForge.from_settings(settings, **FAST)
    assert "ghs_" not in repr(forge) and "app" in repr(forge)

    assert forge.default_branch(REPO) == "main"
    pr = forge.create_pull(REPO, HEAD, "main", "dev <- main@abc", "body")
    assert (pr.number, pr.head, pr.base, pr.state) == (1, HEAD, "main", "open")
    assert stub.repo(REPO).pull(1).user == "fleetflow[bot]"  # opened as the app's installation
    assert app_calls(stub) == [
        ("GET", f"/repos/{REPO}/installation", 200, "app 12345"),
        ("POST", f"/app/installations/{installation}/access_tokens", 201, "app 12345"),
        ("GET", f"/repos/{REPO}", 200, f"installation {installation}"),
        ("POST", f"/repos/{REPO}/pulls", 201, f"installation {installation}"),
    ]

    # git gets the same installation token in the https clone URL: cached, nothing minted again
    mark = stub.mark()
    [token] = stub.installation_tokens
    assert forge.git_url(REPO) == f"https://x-access-token:{token.token}@git.example.com/acme/gitops.git"
    assert token.token.startswith("ghs_") and stub.count(since=mark) == 0
    forge.close()


def test_github_app_not_installed_is_a_clear_error(stub: GitHubStub, app_key: rsa.RSAPrivateKey) -> None:
    stub.create_repo("globex/infra")
    stub.create_repo("acme/private")
    stub.register_app(777, public_pem(app_key), installed_on=[REPO])
    key = pem(app_key, serialization.PrivateFormat.PKCS8)
    for repo in ("globex/infra", "acme/private"):  # another account; the same account, a repo not selected
        forge = GitHubForge(app_id="777", app_private_key=key, api_url=stub.url, **FAST)
        owner = repo.split("/")[0]
        with pytest.raises(ForgeError, match=f"install the GitHub App on {owner} with access to {repo}") as failed:
            forge.default_branch(repo)
        assert "cannot find the GitHub App installation: Not Found" in str(failed.value)
        request = failed.value.request
        assert request is not None and request.url == f"{stub.url}/repos/{repo}/installation"
        assert (request.method, request.status) == ("GET", 404)
        forge.close()
    assert not stub.installation_tokens  # nothing minted for an installation that is not there

    # The account's installation known (through REPO), a repository outside it is hidden from its token.
    forge = GitHubForge(app_id="777", app_private_key=key, api_url=stub.url, **FAST)
    assert forge.default_branch(REPO) == "main"
    with pytest.raises(ForgeError, match=r"cannot read the repository: Not Found.*cannot see it") as hidden:
        forge.default_branch("acme/private")
    assert hidden.value.request is not None and hidden.value.request.status == 404
    forge.close()


def test_github_app_with_the_wrong_key_is_a_clear_error(stub: GitHubStub, app_key: rsa.RSAPrivateKey) -> None:
    stub.register_app(12345, public_pem(app_key), installed_on=[REPO])
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forge = GitHubForge(app_id="12345", app_private_key=pem(other), api_url=stub.url, **FAST)
    with pytest.raises(ForgeError) as failed:
        forge.default_branch(REPO)
    message = str(failed.value)
    assert "A JSON web token could not be decoded" in message and "the ID and the private key are of two" in message
    assert failed.value.request is not None and failed.value.request.status == 401
    assert "PRIVATE KEY" not in message and not stub.installation_tokens
    forge.close()


def test_token_goes_into_an_https_clone_url_for_git(stub: GitHubStub) -> None:
    stub.repo(REPO).https_clone_url = "https://git.example.com/acme/gitops.git"
    forge = GitHubForge(token="ghp_plain_token", api_url=stub.url, **FAST)
    assert forge.git_url(REPO) == "https://x-access-token:ghp_plain_token@git.example.com/acme/gitops.git"
    assert app_calls(stub) == [("GET", f"/repos/{REPO}", 200, "token")]
    forge.close()


@pytest.mark.parametrize("command", [["status"], ["init", "--gitops", "acme/gitops-missing"]])
def test_the_cli_closes_the_forge_it_made_also_when_the_command_fails(
        stub: GitHubStub, command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command closes its forge on the way out (``Forge.close``: GitHub's HTTP connections), here after a
    forge failure (exit 3: the control plane does not exist), through ``make_context`` and through ``init``."""
    from click.testing import CliRunner

    import fleetflow.cli.fleet
    import fleetflow.cli.init
    from fleetflow.cli import main as cli
    from fleetflow.forge.factory import make_forge

    made: list[GitHubForge] = []

    def recording(settings: Settings) -> Forge:
        forge = make_forge(settings)
        assert isinstance(forge, GitHubForge)
        made.append(forge)
        return forge

    monkeypatch.setattr(fleetflow.cli.fleet, "make_forge", recording)
    monkeypatch.setattr(fleetflow.cli.init, "make_forge", recording)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FLEETFLOW_GITHUB_THROTTLE", "0,0")
    monkeypatch.chdir(tmp_path)
    env = {"GITHUB_TOKEN": "stub-token", "GITHUB_API_URL": stub.url}
    before = stub.count()
    result = CliRunner().invoke(cli, [*command, "--forge", "github", "--control-plane", "acme/missing"], env=env)
    assert result.exit_code == 3, result.output
    [forge] = made
    assert stub.count() > before  # it did talk to the forge: a client was made
    assert forge._clients == {} and forge._repos == {}  # and closed


# -- pushes GitHub declines ---------------------------------------------------------------------------------------


NEW = "fleetflow/staging"  # a branch the stand-in's repository does not have yet


def _push_head(stub: GitHubStub, url: str | None = None) -> tuple[GitRepos, str, str, str]:
    """A commit on top of main, ready to push as the new branch :data:`NEW` to ``url`` (default: the stub's repo);
    returns (the mirrors, the URL, main's sha, the commit)."""
    url = url or str(stub.repo(REPO).path)
    repos = GitRepos(stub.root / "cache")
    main = repos.fetch_branch(url, "main")
    assert main is not None
    new = repos.commit_files(url, main, {"dev/app.yaml": b"replicas: 2\n"}, "render dev", 1_700_000_000)
    assert new is not None
    return repos, url, main, new


PROTECTED = ("GH006", protected(f"refs/heads/{NEW}"),
             "hint: branch protection declined it (GitHub's GH006, its rule quoted above): fleetflow writes branch "
             "fleetflow/staging itself, so leave it out of the protection rule's branch name pattern, or let "
             "fleetflow's GitHub App (or the token's user) bypass the rule (the repository's Settings → Branches)")
WORKFLOWS = ("workflows", workflows(".github/workflows/fleetflow.yml"),
             "hint: changing a file under .github/workflows/ needs the Workflows permission, which a workflow's "
             "GITHUB_TOKEN cannot have: give fleetflow a GitHub App with Workflows: read and write (accepted on its "
             "installation), or a token with the workflow scope")
LARGE = ("GH001", large_file("dev/big.yaml", 120.5),
         "hint: GitHub refuses files over 100 MiB (GH001, the file named above): make that file smaller (render its "
         "manifests into several files) or keep it out of the repository")


@pytest.mark.parametrize(("refusal", "hint"), [(r, h) for _, r, h in (PROTECTED, WORKFLOWS, LARGE)],
                         ids=[name for name, _, _ in (PROTECTED, WORKFLOWS, LARGE)])
def test_a_push_github_declines_names_the_branch_and_the_fix(stub: GitHubStub, refusal: Refusal, hint: str) -> None:
    """GitHub's words for a declined push (tests/ghstub/pushrefusals.py, a ``proc-receive`` hook that declines as
    GitHub does: the reason on git's ``[remote rejected]`` line and its ``remote:`` lines): branch protection,
    "GH006: Protected branch update failed" (SalamLang/Salam#430, foundry-rs/block-explorers#110); a GitHub App's
    token (a workflow's GITHUB_TOKEN is one) changing ``.github/workflows/`` without the ``workflows`` permission
    (repo-sync/github-sync#23, peter-evans/create-pull-request#1713: only a token with the workflow scope, or an App
    with Workflows write, may); a file over 100 MB, "GH001: Large files detected" (GitHub Docs, "About large files
    on GitHub", https://docs.github.com/en/repositories/working-with-files/managing-large-files/about-large-files-on
    -github: pushes with files over 100 MiB are blocked). The error names the branch, says no ref moved (the push is
    all or nothing) and ends with the fix; before, it quoted GitHub and stopped there."""
    refuse_pushes(stub.repo(REPO).path, refusal)
    repos, url, main, new = _push_head(stub)
    with pytest.raises(GitError) as declined:
        repos.push(url, new, NEW, None)
    assert not isinstance(declined.value, PushRejected)  # not a race: the same push would be declined again
    lines = str(declined.value).splitlines()
    assert lines[0] == (f"git push of branch {NEW} to {url} failed, no ref moved: [remote rejected] "
                        f"({refusal.reason})" + ("; the remote said:" if refusal.said else ""))
    assert lines[1:-1] == [f"    {line}" for line in refusal.said.splitlines() if line]
    assert lines[-1] == hint
    assert stub.repo(REPO).branch_sha(NEW) is None and stub.repo(REPO).branch_sha("main") == main


def test_a_push_a_ruleset_declines_names_the_ruleset_fix(stub: GitHubStub) -> None:
    """A ruleset declines with "GH013: Repository rule violations found for <ref>." and the rule (the stand-in's
    pre-receive hook, in the words public logs quote: guardian/gha-scala-library-release-workflow#126,
    henne49/dbus-opendtu#235). The error ends with where the ruleset's bypass list and target are."""
    stub.repo(REPO).decline_ref_writes({f"refs/heads/{NEW}": ["create"]})
    repos, url, _, new = _push_head(stub)
    with pytest.raises(GitError) as declined:
        repos.push(url, new, NEW, None)
    lines = str(declined.value).splitlines()
    assert lines[0].startswith(f"git push of branch {NEW} to {url} failed, no ref moved: [remote rejected]")
    assert f"    error: GH013: Repository rule violations found for refs/heads/{NEW}." in lines
    assert lines[-1] == ("hint: a ruleset declined it (GitHub's GH013, its rule quoted above): leave branch "
                         "fleetflow/staging out of the ruleset's target, or add fleetflow's GitHub App to its bypass "
                         "list (the repository's or organization's Settings → Rules → Rulesets)")
    assert stub.repo(REPO).branch_sha(NEW) is None


def test_a_push_the_token_may_not_make_asks_for_contents_write(stub: GitHubStub) -> None:
    """A token without ``contents: write`` gets HTTP 403 before any hook runs, its body "Permission to
    <owner>/<repo>.git denied to github-actions[bot]." (vu1nt0tal/yarb#17, simonecorsi/mawesome#739; GitHub Docs,
    "Controlling permissions for GITHUB_TOKEN": ``contents: write`` lets a workflow push). The stand-in is git's
    http-backend answering that 403 (tests/githttp.py)."""
    path = stub.repo(REPO).path
    with GitHttp(path.parent) as server:
        repos, url, _, new = _push_head(stub, server.url(path.name))
        server.denied["git-receive-pack"] = "Permission to acme/gitops.git denied to github-actions[bot].\n"
        with pytest.raises(GitError) as refused:
            repos.push(url, new, NEW, None)
    lines = str(refused.value).splitlines()
    assert lines[0].startswith(f"git push of branch {NEW} to {server.url(path.name, credentials=False)} failed, "
                               "no ref moved: fatal: unable to access")
    assert lines[1:] == ["    Permission to acme/gitops.git denied to github-actions[bot].",
                         "hint: the credentials may not push to this repository: they need contents: write (a "
                         "workflow's GITHUB_TOKEN: `permissions: contents: write` on the job; a GitHub App: Contents: "
                         "read and write, accepted on its installation)"]
    assert server.token not in str(refused.value) and stub.repo(REPO).branch_sha(NEW) is None


# -- a first run, as the CLI says it ----------------------------------------------------------------------------


def test_a_first_promotion_github_refuses_says_the_fix_and_what_was_written(
    github_stub: GitHubStub,  # noqa: F811
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first ``fleetflow promote`` with a workflow's GITHUB_TOKEN (github-actions[bot]) in a new GitOps repository:
    branch protection on ``fleetflow/*`` declines the head's push (GH006), then, that rule fixed, GitHub refuses the
    pull request because "Allow GitHub Actions to create and approve pull requests" is off (GitHub Docs, "Managing
    GitHub Actions settings for a repository"). Each run exits 3 and says what it wrote (the steps above the error),
    what GitHub said and the fix; the setting turned on, the same command opens the PR."""
    from fleetflow.cli import main as cli
    from fleetflow.cli.errors import FLEET_WRITTEN
    from tests.fleet import git
    from tests.test_fleet_edits import fresh_fleet

    github_stub.store.login = ACTIONS_BOT
    cp = fresh_fleet(tmp_path, monkeypatch, 0, github_stub)
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    gitops = github_stub.repo("team0/gitops")
    refuse_pushes(gitops.path, protected("refs/heads/fleetflow/dev"))
    protected_run = CliRunner().invoke(cli, ["promote", "--commit", sha])
    lines = protected_run.stderr.splitlines()
    assert protected_run.exit_code == 3 and lines[-1] == FLEET_WRITTEN, protected_run.stderr
    assert lines[1] == f"dev: pinned to main@{sha[:12]} on branch dev"
    assert lines[2] == (f"forge/git error: git push of branch fleetflow/dev to {gitops.clone_url} failed, no ref "
                        "moved: [remote rejected] (protected branch hook declined); the remote said:")
    assert lines[-2].startswith("hint: branch protection declined it (GitHub's GH006")
    assert gitops.branch_sha("fleetflow/dev") is None
    accept_pushes(gitops.path)  # the rule fixed
    refused = CliRunner().invoke(cli, ["promote", "--commit", sha])
    lines = refused.stderr.splitlines()
    assert refused.exit_code == 3 and lines[-1] == FLEET_WRITTEN, refused.stderr
    assert lines[-3].startswith("dev: pushed fleetflow/dev@")
    assert lines[-2].startswith("forge/git error: GitHub: cannot create a pull request: GitHub Actions is not "
                                "permitted to create or approve pull requests. (hint: this is a setting, not a "
                                "missing permission")
    assert gitops.list_pulls() == []
    gitops.actions_can_create_pulls = True
    opened = CliRunner().invoke(cli, ["promote", "--commit", sha])
    assert opened.exit_code == 0 and opened.stderr.splitlines()[-1] == f"dev: PR #1 opened: main@{sha[:12]} to dev"
