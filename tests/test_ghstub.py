"""The GitHub stand-in: PyGithub, unmodified, against every implemented operation; response shapes against
GitHub's OpenAPI description; injected faults as PyGithub sees them; git through the clone URL."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry, RateLimitExceededException

try:  # the suite imports its helpers as ``tests.*`` (python -m pytest, or a pythonpath setting)
    from tests.ghstub.errors import ACTIONS_BOT
    from tests.ghstub.fixtures import github_stub
    from tests.ghstub.gitbackend import git_env
    from tests.ghstub.openapi import subset
    from tests.ghstub.operations import OPERATIONS, WEBHOOK_EVENTS
    from tests.ghstub.pushrefusals import protected, refuse_pushes, workflows
    from tests.ghstub.server import GitHubStub
    from tests.ghstub.state import Ruleset
except ModuleNotFoundError:  # plain ``pytest``: only tests/ (the conftest's folder) is on sys.path
    from ghstub.errors import ACTIONS_BOT  # type: ignore[no-redef,unused-ignore]
    from ghstub.fixtures import github_stub  # type: ignore[no-redef,unused-ignore]
    from ghstub.gitbackend import git_env  # type: ignore[no-redef,unused-ignore]
    from ghstub.openapi import subset  # type: ignore[no-redef,unused-ignore]
    from ghstub.operations import OPERATIONS, WEBHOOK_EVENTS  # type: ignore[no-redef,unused-ignore]
    from ghstub.pushrefusals import protected, refuse_pushes, workflows  # type: ignore[no-redef,unused-ignore]
    from ghstub.server import GitHubStub  # type: ignore[no-redef,unused-ignore]
    from ghstub.state import Ruleset  # type: ignore[no-redef,unused-ignore]

__all__ = ["github_stub"]  # the fixture under test

FAST = GithubRetry(total=3, backoff_factor=0, secondary_rate_wait=1)


def client(stub: GitHubStub, retry: Any = FAST, **kwargs: Any) -> Github:
    gh: Github = stub.client(retry=retry, **kwargs)
    return gh


def git(*args: str, cwd: Path | None = None) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.fixture(scope="module")
def app_keys() -> tuple[str, str, rsa.RSAPrivateKey]:
    """A GitHub App's key: (private PEM, public PEM, the private key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public, key


def integration(stub: GitHubStub, app_id: int | str, private_pem: str) -> GithubIntegration:
    """PyGithub as a GitHub App (its JWT) on the stub."""
    return GithubIntegration(
        auth=Auth.AppAuth(app_id, private_pem),
        base_url=stub.url,
        retry=FAST,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )


@pytest.fixture
def stub(github_stub: GitHubStub) -> GitHubStub:
    """``acme/gitops`` with ``main`` and a ``fleetflow/dev`` branch one commit ahead."""
    repo = github_stub.create_repo("acme/gitops")
    repo.commit_files("main", {"README.md": "gitops\n"}, "readme")
    repo.commit_files("fleetflow/dev", {"dev/app.yaml": "replicas: 1\n"}, "render dev")
    return github_stub


# -- the contract ---------------------------------------------------------------------------------------------
def test_routes_are_the_subset_operations() -> None:
    assert subset().operations() == set(OPERATIONS)
    hooks = set(subset().webhook_schema_names())
    for event, actions in WEBHOOK_EVENTS.items():
        prefix = event.replace("_", "-")
        found = {name.removeprefix(prefix).lstrip("-") for name in hooks if name.startswith(prefix)}
        assert found == set(actions) if actions else found, event
    for name in subset().webhook_schema_names().values():
        assert name in subset().raw["components"]["schemas"]


def test_every_operation_answers_in_githubs_shapes(stub: GitHubStub, app_keys: tuple[str, str, Any]) -> None:
    installation_id = stub.register_app(12345, app_keys[1], installed_on=["acme/gitops"])
    app = integration(stub, 12345, app_keys[0])
    assert app.get_repo_installation("acme", "gitops").id == installation_id
    assert app.get_access_token(installation_id).token.startswith("ghs_")
    app.close()
    gh = client(stub)
    repo = gh.get_repo("acme/gitops")
    assert (repo.full_name, repo.default_branch) == ("acme/gitops", "main")
    assert repo.clone_url == stub.repo("acme/gitops").clone_url and repo.clone_url.startswith("file://")
    gh.get_rate_limit()
    repo.edit(default_branch="fleetflow/dev")  # "Update a repository" (fleetflow init sets the default branch)
    assert gh.get_repo("acme/gitops").default_branch == "fleetflow/dev"
    repo.edit(default_branch="main")
    with pytest.raises(GithubException) as no_branch:
        repo.edit(default_branch="no-such-branch")
    assert no_branch.value.status == 422
    stub.repo("acme/gitops").protection["main"] = ["ci/build"]
    stub.repo("acme/gitops").rulesets["main"] = ["security/scan"]
    main = repo.get_branch("main")
    assert main.protected and main.raw_data["protection"]["required_status_checks"]["contexts"] == ["ci/build"]
    _, rules = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/rules/branches/main")
    assert [r["parameters"]["required_status_checks"] for r in rules] == [[{"context": "security/scan"}]]
    stub.repo("acme/gitops").protection.clear()
    stub.repo("acme/gitops").rulesets.clear()
    stub.repo("acme/gitops").ruleset_list[:] = [
        Ruleset(7, "protect tags", include=["refs/tags/v*"], rules=[{"type": "deletion"}]),
        Ruleset(8, "org tags", exclude=["refs/tags/fleetflow/**/*"], rules=[{"type": "update", "parameters": {
            "update_allows_fetch_and_merge": False}}], organization=True),
        Ruleset(9, "main", target="branch", include=["~DEFAULT_BRANCH"], rules=[{"type": "non_fast_forward"}]),
    ]
    _, listed = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/rulesets", parameters={"targets": "tag"})
    assert [(r["id"], r["source_type"]) for r in listed] == [(7, "Repository"), (8, "Organization")]
    _, own = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/rulesets",
                                              parameters={"includes_parents": "false"})
    assert [r["id"] for r in own] == [7, 9]
    _, whole = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/rulesets/8")
    assert whole["conditions"]["ref_name"] == {"include": ["~ALL"], "exclude": ["refs/tags/fleetflow/**/*"]}
    assert (whole["target"], whole["rules"][0]["type"], whole["current_user_can_bypass"]) == ("tag", "update", "never")
    with pytest.raises(GithubException) as no_ruleset:
        gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/rulesets/99")
    assert no_ruleset.value.status == 404
    stub.repo("acme/gitops").ruleset_list.clear()
    stub.repo("acme/gitops").environments.update({"prod": {"reviewers": ["alice"], "wait_timer": 5}, "dev": {}})
    environments = {e.name: e for e in repo.get_environments()}  # PyGithub's "List environments"
    assert sorted(environments) == ["dev", "prod"] and environments["dev"].protection_rules == []
    assert sorted(r.type for r in environments["prod"].protection_rules) == ["required_reviewers", "wait_timer"]
    # "Get default workflow permissions for a repository": the Actions settings block, as a new repository has it
    _, workflow = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/actions/permissions/workflow")
    assert (workflow["default_workflow_permissions"], workflow["can_approve_pull_request_reviews"]) == ("read", False)
    ref = repo.create_git_ref("refs/heads/scratch", main.commit.sha)
    assert [r.ref for r in repo.get_git_matching_refs("heads/scratch")] == ["refs/heads/scratch"]
    dev_sha = repo.get_git_ref("heads/fleetflow/dev").object.sha
    ref.edit(dev_sha)  # fast-forward
    ref.delete()
    commits = list(repo.get_commits(sha="fleetflow/dev"))
    assert [c.commit.message for c in commits] == ["render dev", "readme", "Initial commit"]
    single = repo.get_commit(dev_sha)
    assert [f.filename for f in single.files] == ["dev/app.yaml"] and single.stats.additions == 1
    comparison = repo.compare("main", "fleetflow/dev")
    assert (comparison.status, comparison.ahead_by, comparison.behind_by) == ("ahead", 1, 0)

    pr = repo.create_pull(
        title="dev: promote", body="<!-- fleetflow:environment=dev -->", head="fleetflow/dev", base="main"
    )
    assert (pr.number, pr.mergeable, pr.changed_files, pr.head.sha) == (1, True, 1, dev_sha)
    pr.edit(title="dev: promote abc")
    assert [p.number for p in repo.get_pulls(state="open", head="acme:fleetflow/dev", base="main")] == [1]
    pr.add_to_labels("fleetflow", "env/dev")
    assert [label.name for label in pr.get_labels()] == ["fleetflow", "env/dev"]
    pr.create_review_request(reviewers=["alice", "bob"], team_reviewers=["platform"])
    pr.delete_review_request(reviewers=["bob"])
    as_alice = client(stub, token=stub.person_token("alice"))
    as_alice.get_repo("acme/gitops").get_pull(1).create_review(event="APPROVE")  # "alice" is no longer requested
    as_alice.close()
    requested = repo.get_pull(1)
    assert ([u.login for u in requested.requested_reviewers], [t.slug for t in requested.requested_teams]) == (
        [], ["platform"])
    # as plain JSON: PyGithub's IssueEvent reads its own URL for a field the list left out (raw_data included)
    _, listed = gh.requester.requestJsonAndCheck("GET", "/repos/acme/gitops/issues/1/events")
    # adding a label leaves a ``labeled`` event (``labeled-issue-event``: ``label`` with ``name`` and ``color``)
    assert [(e["event"], e["label"]["name"]) for e in listed if "label" in e] == [
        ("labeled", "fleetflow"), ("labeled", "env/dev")]
    events = [(e["event"], e["requested_reviewer"]["login"] if "requested_reviewer" in e
               else e["requested_team"]["slug"]) for e in listed if "label" not in e]
    assert events == [("review_requested", "alice"), ("review_requested", "bob"), ("review_requested", "platform"),
                      ("review_request_removed", "bob")]
    pr.create_issue_comment("scheduled")
    assert [c.body for c in pr.get_issue_comments()] == ["scheduled"]

    commit = repo.get_commit(dev_sha)
    commit.create_status("pending", description="rolling out", context="flux/eu-1")
    commit.create_status("success", description="rolled out", context="flux/eu-1")
    assert [s.state for s in commit.get_statuses()] == ["success", "pending"]
    assert commit.get_combined_status().state == "success"
    run = repo.create_check_run(name="argo/us-1", head_sha=dev_sha, status="in_progress")
    run.edit(status="completed", conclusion="success")
    assert repo.get_check_run(run.id).conclusion == "success"
    assert [(r.name, r.conclusion) for r in commit.get_check_runs()] == [("argo/us-1", "success")]
    repo.create_repository_dispatch("fleetflow-promote", {"environment": "qa", "commit": dev_sha})

    assert not pr.is_merged()
    status = pr.merge(merge_method="merge", sha=dev_sha)
    assert status.merged and pr.is_merged()
    merged = repo.get_pull(1)
    assert (merged.state, merged.merged, merged.merge_commit_sha) == ("closed", True, status.sha)
    assert repo.get_branch("main").commit.parents[1].sha == dev_sha

    # Errors answer in the declared shapes too.
    with pytest.raises(GithubException) as missing:
        repo.get_git_ref("heads/nope")
    assert missing.value.status == 404
    with pytest.raises(GithubException) as unknown:
        repo.get_commit("0" * 40)
    assert unknown.value.status == 422 and unknown.value.data["message"] == f"No commit found for SHA: {'0' * 40}"

    seen = {(r.method, r.operation) for r in stub.requests if r.status < 300}
    assert seen == set(OPERATIONS), set(OPERATIONS) - seen
    for record in stub.requests:
        assert record.operation is not None
        errors = subset().response_errors(record.method, record.operation, record.status, record.response)
        assert not errors, (record.method, record.path, record.status, errors)
    assert not stub.schema_errors


# -- pull requests ----------------------------------------------------------------------------------------------
def test_pull_request_list_filters_and_pagination(stub: GitHubStub) -> None:
    repo = stub.repo("acme/gitops")
    for env in ("qa", "prod", "staging"):
        repo.commit_files(f"fleetflow/{env}", {f"{env}.yaml": "x: 1\n"}, env)
        repo.create_pull(f"fleetflow/{env}", "main", f"promote {env}")
    repo.update_pull(2, state="closed")
    gh = client(stub, per_page=2)
    remote = gh.get_repo("acme/gitops")
    assert [p.number for p in remote.get_pulls()] == [3, 1]  # open, newest first
    assert [p.number for p in remote.get_pulls(state="all")] == [3, 2, 1]
    assert [p.number for p in remote.get_pulls(state="closed", head="acme:fleetflow/prod")] == [2]
    assert [p.number for p in remote.get_pulls(head="acme:fleetflow/none")] == []
    # Like GitHub, a head without "owner:" is silently ignored.
    assert [p.number for p in remote.get_pulls(head="fleetflow/qa")] == [3, 1]
    response = requests.get(f"{stub.url}/repos/acme/gitops/pulls?state=all&per_page=1&page=2", timeout=5)
    assert [p["number"] for p in response.json()] == [2]
    assert 'rel="next"' in response.headers["Link"] and 'rel="prev"' in response.headers["Link"]
    assert "page=3" in response.headers["Link"]


def test_pull_request_create_errors_like_github(stub: GitHubStub) -> None:
    remote = client(stub).get_repo("acme/gitops")
    remote.create_pull(title="one", body="", head="fleetflow/dev", base="main")
    with pytest.raises(GithubException) as exists:
        remote.create_pull(title="two", body="", head="acme:fleetflow/dev", base="main")
    assert exists.value.status == 422
    assert exists.value.data["message"] == "Validation Failed"
    assert exists.value.data["errors"] == [
        {
            "resource": "PullRequest",
            "code": "custom",
            "message": "A pull request already exists for acme:fleetflow/dev.",
        }
    ]
    with pytest.raises(GithubException) as no_head:
        remote.create_pull(title="x", body="", head="missing", base="main")
    assert no_head.value.data["errors"][0]["field"] == "head"
    with pytest.raises(GithubException) as invalid:
        remote.get_commit("main").create_status("great")
    assert invalid.value.status == 422 and invalid.value.data["message"].startswith("Invalid request.")


def test_pull_request_edit_close_reopen_and_requests(stub: GitHubStub) -> None:
    stub.repo("acme/gitops").commit_files("release", {"r": "1"}, "release branch")
    remote = client(stub).get_repo("acme/gitops")
    pr = remote.create_pull(title="t", body="b", head="fleetflow/dev", base="main")
    pr.edit(title="t2", body="b2", base="release")
    pr = remote.get_pull(pr.number)
    assert (pr.title, pr.body, pr.base.ref) == ("t2", "b2", "release")
    pr.edit(state="closed")
    assert remote.get_pull(pr.number).state == "closed"
    pr.edit(state="open")
    assert remote.get_pull(pr.number).state == "open"
    with pytest.raises(GithubException) as author:
        pr.create_review_request(reviewers=[stub.login])
    assert author.value.status == 422
    stub.repo("acme/gitops").git.delete_ref("refs/heads/fleetflow/dev")
    assert remote.get_pull(pr.number).state == "closed"  # GitHub closes a PR whose head branch is deleted


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_merge_methods_write_the_bare_repo(stub: GitHubStub, method: str) -> None:
    repo = stub.repo("acme/gitops")
    repo.commit_files("main", {"other.txt": "moved on\n"}, "main moves on")
    base_before = repo.branch_sha("main")
    head = repo.branch_sha("fleetflow/dev")
    remote = client(stub).get_repo("acme/gitops")
    pr = remote.create_pull(title="promote dev", body="", head="fleetflow/dev", base="main")
    result = pr.merge(merge_method=method)
    tip = repo.git.commit(repo.branch_sha("main") or "")
    assert tip.sha == result.sha == remote.get_pull(pr.number).merge_commit_sha
    expected_parents = {"merge": (base_before, head), "squash": (base_before,), "rebase": (base_before,)}[method]
    assert tip.parents == expected_parents
    assert set(repo.git.blobs(tip.sha)) == {"README.md", "other.txt", "dev/app.yaml"}
    if method == "squash":
        assert tip.message.startswith("promote dev (#1)")


def test_merge_refusals(stub: GitHubStub) -> None:
    repo = stub.repo("acme/gitops")
    repo.commit_files("main", {"dev/app.yaml": "replicas: 9\n"}, "conflicting change")
    remote = client(stub).get_repo("acme/gitops")
    pr = remote.create_pull(title="t", body="", head="fleetflow/dev", base="main")
    assert remote.get_pull(pr.number).mergeable is False
    with pytest.raises(GithubException) as conflict:
        pr.merge()
    assert conflict.value.status == 405
    repo.commit_files("fleetflow/dev", {"dev/app.yaml": "replicas: 9\n"}, "resolve")
    with pytest.raises(GithubException) as stale:
        pr.merge(sha=pr.head.sha)  # the head moved since
    assert stale.value.status == 409
    assert remote.get_pull(pr.number).merge(sha=repo.branch_sha("fleetflow/dev") or "").merged


# -- statuses, checks, dispatch, refs ---------------------------------------------------------------------------
def test_combined_status_rules(stub: GitHubStub) -> None:
    repo = stub.repo("acme/gitops")
    sha = repo.branch_sha("main") or ""
    commit = client(stub).get_repo("acme/gitops").get_commit(sha)
    assert (commit.get_combined_status().state, commit.get_combined_status().total_count) == ("pending", 0)
    repo.add_status(sha, "success", "flux/a")
    repo.add_status(sha, "pending", "flux/b")
    assert commit.get_combined_status().state == "pending"
    repo.add_status(sha, "success", "flux/b")
    combined = commit.get_combined_status()
    assert (combined.state, [s.context for s in combined.statuses]) == ("success", ["flux/a", "flux/b"])
    repo.add_status(sha, "error", "flux/c")
    assert commit.get_combined_status().state == "failure"
    repo.add_status(sha, "success", "flux/c")  # the latest per context counts
    assert commit.get_combined_status().state == "success"
    assert len(list(commit.get_statuses())) == 5


def test_combined_status_contexts_differing_only_in_case_are_one_context(stub: GitHubStub) -> None:
    """GitHub's "Create a commit status" (github/rest-api-description, ``context``): "A string label to
    differentiate this status from the status of other systems. This field is case-insensitive." So
    ``Flux/dev-1`` and ``flux/dev-1`` are one context: the newest post counts for the combined state and the
    count. "Get the combined status for a specific reference" lists the latest status of each context, a status
    object as posted; that it shows the newest post's spelling (not the first one's) is an ASSUMPTION: no GitHub
    document or issue found says which. Every post stays in "List commit statuses for a reference". Response
    shapes are checked against the OpenAPI description by the ``github_stub`` fixture."""
    repo = stub.repo("acme/gitops")
    sha = repo.branch_sha("main") or ""
    commit = client(stub).get_repo("acme/gitops").get_commit(sha)
    commit.create_status("failure", context="Flux/dev-1", description="health check failed")
    commit.create_status("success", context="flux/dev-1", description="reconciled")
    commit.create_status("success", context="flux/dev-2")
    combined = commit.get_combined_status()
    assert (combined.state, combined.total_count) == ("success", 2)
    assert [(s.context, s.state) for s in combined.statuses] == [("flux/dev-1", "success"), ("flux/dev-2", "success")]
    commit.create_status("pending", context="FLUX/DEV-2")
    combined = commit.get_combined_status()
    assert (combined.state, combined.total_count) == ("pending", 2)
    assert {s.context: s.state for s in combined.statuses} == {"flux/dev-1": "success", "FLUX/DEV-2": "pending"}
    assert [s.context for s in commit.get_statuses()] == ["FLUX/DEV-2", "flux/dev-2", "flux/dev-1", "Flux/dev-1"]


def test_check_runs_latest_per_name(stub: GitHubStub) -> None:
    repo = stub.repo("acme/gitops")
    sha = repo.branch_sha("main") or ""
    repo.add_check_run(sha, "argo/eu", conclusion="failure")
    repo.add_check_run(sha, "argo/eu", conclusion="success")
    repo.add_check_run(sha, "argo/us", status="in_progress")
    commit = client(stub).get_repo("acme/gitops").get_commit(sha)
    assert sorted((r.name, r.status, r.conclusion) for r in commit.get_check_runs()) == [
        ("argo/eu", "completed", "success"),
        ("argo/us", "in_progress", None),
    ]
    assert len(list(commit.get_check_runs(filter="all"))) == 3


def test_dispatch_is_recorded_and_validated(stub: GitHubStub) -> None:
    remote = client(stub).get_repo("acme/gitops")
    assert remote.create_repository_dispatch("fleetflow-promote", {"environment": "qa"})
    [dispatch] = stub.dispatches
    assert (dispatch.repo, dispatch.event_type, dispatch.client_payload) == (
        "gitops",
        "fleetflow-promote",
        {"environment": "qa"},
    )
    assert not remote.create_repository_dispatch("x", {str(i): i for i in range(11)})  # PyGithub: False, no raise
    assert stub.requests[-1].status == 422 and len(stub.dispatches) == 1


def test_ref_updates_follow_github_rules(stub: GitHubStub) -> None:
    repo = stub.repo("acme/gitops")
    remote = client(stub).get_repo("acme/gitops")
    main, dev = repo.branch_sha("main") or "", repo.branch_sha("fleetflow/dev") or ""
    ref = remote.create_git_ref("refs/heads/pin", dev)
    with pytest.raises(GithubException) as exists:
        remote.create_git_ref("refs/heads/pin", dev)
    assert exists.value.data["message"] == "Reference already exists"
    with pytest.raises(GithubException) as backwards:
        ref.edit(main)
    assert backwards.value.data["message"] == "Update is not a fast forward"
    ref.edit(main, force=True)
    assert repo.branch_sha("pin") == main
    ref.delete()
    with pytest.raises(GithubException) as gone:
        ref.delete()
    assert gone.value.status == 422 and repo.branch_sha("pin") is None
    with pytest.raises(GithubException) as branch:
        remote.get_branch("pin")
    assert branch.value.status == 404


# -- faults as PyGithub sees them -------------------------------------------------------------------------------
def test_fault_5xx_is_retried_by_githubretry(stub: GitHubStub) -> None:
    stub.inject("GET", r"^/repos/acme/gitops$", "status_5xx")
    mark = stub.mark()
    assert client(stub).get_repo("acme/gitops").name == "gitops"
    assert [r.status for r in stub.requests_since(mark)] == [502, 200]
    stub.inject("GET", r"^/repos/acme/gitops$", "status_5xx")
    with pytest.raises(GithubException) as failed:
        client(stub, retry=0).get_repo("acme/gitops")
    assert failed.value.status == 502 and failed.value.data["message"] == "Server Error"


def test_fault_secondary_rate_limit_waits_retry_after(stub: GitHubStub) -> None:
    stub.inject("GET", r"/pulls$", "secondary_rate_limit")
    remote = client(stub).get_repo("acme/gitops")
    started = time.monotonic()
    assert list(remote.get_pulls()) == []
    assert time.monotonic() - started >= 1  # Retry-After: 1 honoured
    stub.inject("GET", r"/pulls$", "secondary_rate_limit")
    with pytest.raises(RateLimitExceededException) as limited:
        list(client(stub, retry=0).get_repo("acme/gitops").get_pulls())
    assert limited.value.status == 403 and (limited.value.headers or {})["retry-after"] == "1"
    assert limited.value.data["message"].startswith("You have exceeded a secondary rate limit")


def test_a_workflow_token_may_not_open_a_pull_request_while_the_actions_setting_is_off(stub: GitHubStub) -> None:
    """"Allow GitHub Actions to create and approve pull requests" is off in a new repository (GitHub Docs, "Managing
    GitHub Actions settings for a repository"); a workflow's GITHUB_TOKEN (github-actions[bot]) then gets 403 "GitHub
    Actions is not permitted to create or approve pull requests." (peter-evans/create-pull-request#3979), a body
    the fixture checks against the operation's documented 403. Another account is not concerned; the setting on,
    the workflow's token opens it."""
    remote = client(stub).get_repo("acme/gitops")
    stub.store.login = ACTIONS_BOT
    with pytest.raises(GithubException) as refused:
        remote.create_pull(base="main", head="fleetflow/dev", title="t", body="b")
    assert refused.value.status == 403
    assert refused.value.data["message"] == "GitHub Actions is not permitted to create or approve pull requests."
    assert stub.repo("acme/gitops").list_pulls() == []
    stub.repo("acme/gitops").actions_can_create_pulls = True
    assert remote.create_pull(base="main", head="fleetflow/dev", title="t", body="b").user.login == ACTIONS_BOT


def test_a_repository_can_refuse_pushes_in_githubs_words(stub: GitHubStub, tmp_path: Path) -> None:
    """``refuse_pushes`` (git's ``proc-receive`` hook, githooks(5)) declines as GitHub does: its words as
    ``remote:`` lines and GitHub's reason on ``[remote rejected]`` (a ``pre-receive`` hook can only say "pre-receive
    hook declined"). Nothing moves."""
    repo = stub.repo("acme/gitops")
    work = tmp_path / "work"
    git("clone", "--quiet", str(repo.path), str(work))
    git("-c", "user.name=t", "-c", "user.email=t@x.invalid", "commit", "--quiet", "--allow-empty", "-m", "x",
        cwd=work)
    before = repo.branch_sha("main")
    for refusal, reason in ((protected("refs/heads/main"), "protected branch hook declined"),
                            (workflows(".github/workflows/ci.yml"), "refusing to allow a GitHub App to create or "
                             "update workflow `.github/workflows/ci.yml` without `workflows` permission")):
        refuse_pushes(repo.path, refusal)
        pushed = subprocess.run(["git", "push", "--porcelain", "origin", "HEAD:refs/heads/main"], cwd=work,
                                env=git_env(), capture_output=True, text=True, check=False)
        assert pushed.returncode == 1
        assert f"!\tHEAD:refs/heads/main\t[remote rejected] ({reason})" in pushed.stdout
        said = [line.removeprefix("remote:").strip() for line in pushed.stderr.splitlines()
                if line.startswith("remote:")]
        assert [line for line in said if line] == [line for line in refusal.said.splitlines() if line]
        assert repo.branch_sha("main") == before


def test_fault_primary_rate_limit(stub: GitHubStub) -> None:
    stub.inject("GET", r"/branches/", "rate_limit")
    remote = client(stub).get_repo("acme/gitops")
    assert remote.get_branch("main").name == "main"  # GithubRetry sleeps until x-ratelimit-reset
    stub.inject("GET", r"/branches/", "rate_limit")
    with pytest.raises(RateLimitExceededException) as limited:
        client(stub, retry=0).get_repo("acme/gitops").get_branch("main")
    headers = limited.value.headers or {}
    assert headers["x-ratelimit-remaining"] == "0" and int(headers["x-ratelimit-reset"]) <= time.time() + 2
    stub.inject("GET", r"/branches/", "rate_limit", status=429)
    with pytest.raises(GithubException) as too_many:
        remote.get_branch("main")  # GithubRetry does not retry 429
    assert too_many.value.status == 429


def test_fault_drop_after_create(stub: GitHubStub) -> None:
    stub.inject("POST", r"/pulls$", "drop_after")
    with pytest.raises(requests.exceptions.ConnectionError):
        client(stub, retry=0).get_repo("acme/gitops").create_pull(title="t", body="", head="fleetflow/dev", base="main")
    assert [pr.number for pr in stub.repo("acme/gitops").list_pulls()] == [1]  # it was created
    [dropped] = [r for r in stub.requests if r.dropped]
    assert (dropped.method, dropped.status, dropped.fault) == ("POST", 201, "drop_after")
    # GithubRetry retries the POST: the second attempt finds the PR the first one made.
    stub.repo("acme/gitops").commit_files("fleetflow/qa", {"qa": "1"}, "qa")
    stub.inject("POST", r"/pulls$", "drop_after")
    with pytest.raises(GithubException) as retried:
        client(stub).get_repo("acme/gitops").create_pull(title="t", body="", head="fleetflow/qa", base="main")
    assert retried.value.status == 422 and "already exists" in retried.value.data["errors"][0]["message"]


def test_fault_pr_already_exists(stub: GitHubStub) -> None:
    fault = stub.inject("POST", r"/pulls$", "pr_already_exists", times=2)
    remote = client(stub).get_repo("acme/gitops")
    for _ in range(2):
        with pytest.raises(GithubException) as exists:
            remote.create_pull(title="t", body="", head="fleetflow/dev", base="main")
        assert exists.value.data["errors"][0]["message"] == "A pull request already exists for acme:fleetflow/dev."
    assert fault.hits == 2 and not stub.faults.pending and stub.repo("acme/gitops").list_pulls() == []
    assert remote.create_pull(title="t", body="", head="fleetflow/dev", base="main").number == 1


# -- GitHub Apps ----------------------------------------------------------------------------------------------
def sign(key: Any, app_id: int | str = 12345, **claims: Any) -> str:
    """A JWT as an app signs it (PyGithub's claims: iat 60 s back, exp 5 min ahead), ``claims`` overriding."""
    now = int(time.time())
    return jwt.encode({"iat": now - 60, "exp": now + 300, "iss": str(app_id)} | claims, key, algorithm="RS256")


def test_github_app_installation_token_and_its_use(stub: GitHubStub, app_keys: tuple[str, str, Any]) -> None:
    private, public, _ = app_keys
    stub.token = "secret"  # from here on only "secret" or a minted installation token reads the repositories
    stub.create_repo("acme/other")
    installation_id = stub.register_app(12345, public, installed_on=["acme/gitops"], slug="fleetflow")
    assert installation_id is not None
    app = integration(stub, "12345", private)
    installation = app.get_repo_installation("acme", "gitops")
    assert (installation.id, installation.app_id, installation.app_slug) == (installation_id, 12345, "fleetflow")
    assert (installation.repository_selection, installation.target_type) == ("selected", "Organization")
    assert installation.account.login == "acme"  # type: ignore[attr-defined,unused-ignore]
    minted = app.get_access_token(installation_id)
    assert minted.token.startswith("ghs_") and len(minted.token) == 40
    assert timedelta(minutes=59) < minted.expires_at - datetime.now(UTC) <= timedelta(hours=1)
    assert minted.permissions == {
        "checks": "read",
        "contents": "write",
        "metadata": "read",
        "pull_requests": "write",
        "statuses": "write",
    }
    assert [r.full_name for r in minted.repositories] == ["acme/gitops"]
    [stored] = stub.installation_tokens
    assert stored.token == minted.token and stored.installation.id == installation_id
    app.close()

    # The installation token authenticates; writes are the app's bot's.
    gh = Github(base_url=stub.url, auth=Auth.Token(minted.token), retry=0)
    remote = gh.get_repo("acme/gitops")
    pr = remote.create_pull(title="t", body="", head="fleetflow/dev", base="main")
    assert (pr.user.login, pr.user.type) == ("fleetflow[bot]", "Bot")
    assert stub.repo("acme/gitops").pull(pr.number).user == "fleetflow[bot]"
    with pytest.raises(GithubException) as hidden:  # a repository of the account the app is not installed on
        gh.get_repo("acme/other").default_branch  # noqa: B018
    assert hidden.value.status == 404
    assert [(r.method, r.path, r.status, r.credential) for r in stub.requests] == [
        ("GET", "/repos/acme/gitops/installation", 200, "app 12345"),
        ("POST", f"/app/installations/{installation_id}/access_tokens", 201, "app 12345"),
        ("GET", "/repos/acme/gitops", 200, f"installation {installation_id}"),
        ("POST", "/repos/acme/gitops/pulls", 201, f"installation {installation_id}"),
        ("GET", "/repos/acme/other", 404, None),
    ]
    assert Github(base_url=stub.url, auth=Auth.Token("secret"), retry=0).get_repo("acme/other").name == "other"

    # PyGithub's own installation auth: mints on first use, and reads with the token.
    mark = stub.mark()
    auto = Github(base_url=stub.url, auth=Auth.AppAuth(12345, private).get_installation_auth(installation_id), retry=0)
    assert auto.get_repo("acme/gitops").default_branch == "main"
    assert [r.credential for r in stub.requests_since(mark)] == ["app 12345", f"installation {installation_id}"]
    auto.close()
    gh.close()


def test_github_app_installed_on_an_account_covers_its_repositories(
    github_stub: GitHubStub, app_keys: tuple[str, str, Any]
) -> None:
    for name in ("acme/one", "acme/two", "globex/infra"):
        github_stub.create_repo(name)
    acme = github_stub.register_app(7, app_keys[0], installed_on=["acme"])  # a private key's PEM works too
    assert acme is not None
    globex = github_stub.install_app(7, ["globex/infra"])
    assert globex != acme and github_stub.install_app(7, ["globex/more"]) == globex  # widened, not a second one
    app = integration(github_stub, 7, app_keys[0])
    assert app.get_repo_installation("acme", "two").repository_selection == "all"
    assert app.get_repo_installation("globex", "infra").id == globex
    token = app.get_access_token(acme)
    assert token.repository_selection == "all" and token.repositories is None
    gh = Github(base_url=github_stub.url, auth=Auth.Token(token.token), retry=0)
    assert [gh.get_repo(name).name for name in ("acme/one", "acme/two")] == ["one", "two"]
    with pytest.raises(GithubException) as other_account:
        gh.get_repo("globex/infra").default_branch  # noqa: B018
    assert other_account.value.status == 404
    with pytest.raises(ValueError, match="one account"):
        github_stub.install_app(7, ["acme/one", "globex/infra"])
    app.close()
    gh.close()


def test_github_app_lookup_answers_404_where_it_is_not_installed(
    stub: GitHubStub, app_keys: tuple[str, str, Any]
) -> None:
    stub.create_repo("acme/other")
    stub.create_repo("globex/infra")
    stub.register_app(12345, app_keys[1], installed_on=["acme/gitops"])
    stub.register_app(99, app_keys[1])  # registered, installed nowhere
    app = integration(stub, 12345, app_keys[0])
    for owner, name in (("acme", "other"), ("globex", "infra"), ("acme", "nope")):
        with pytest.raises(GithubException) as missing:
            app.get_repo_installation(owner, name)
        assert missing.value.status == 404 and missing.value.data["message"] == "Not Found"
        assert "get-a-repository-installation" in missing.value.data["documentation_url"]
    with pytest.raises(GithubException) as nowhere:
        integration(stub, 99, app_keys[0]).get_repo_installation("acme", "gitops")
    assert nowhere.value.status == 404
    app.close()


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("other key", "A JSON web token could not be decoded"),
        ("unknown app", "A JSON web token could not be decoded"),
        ("not a jwt", "A JSON web token could not be decoded"),
        ("no credentials", "A JSON web token could not be decoded"),
        ("HS256", "A JSON web token could not be decoded"),
        ("expired", "'Expiration time' claim ('exp') must be a numeric value representing the future time"),
        ("no exp", "'Expiration time' claim ('exp') must be a numeric value representing the future time"),
        ("exp too far", "'Expiration time' claim ('exp') is too far in the future"),
        ("iat ahead", "'Issued at' claim ('iat') must be an Integer"),
    ],
)
def test_github_app_jwt_is_verified(stub: GitHubStub, app_keys: tuple[str, str, Any], case: str, message: str) -> None:
    _, public, key = app_keys
    installation_id = stub.register_app(12345, public, installed_on=["acme/gitops"])
    now = int(time.time())
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048) if case == "other key" else None
    tokens = {
        "other key": lambda: sign(other),
        "unknown app": lambda: sign(key, app_id=54321),
        "not a jwt": lambda: "stub-token",
        "no credentials": lambda: "",
        "HS256": lambda: jwt.encode({"iat": now, "exp": now + 60, "iss": "12345"}, "a" * 32, algorithm="HS256"),
        "expired": lambda: sign(key, iat=now - 700, exp=now - 100),
        "no exp": lambda: jwt.encode({"iat": now, "iss": "12345"}, key, algorithm="RS256"),
        "exp too far": lambda: sign(key, exp=now + 3600),
        "iat ahead": lambda: sign(key, iat=now + 600, exp=now + 500),
    }
    encoded = tokens[case]()
    headers = {"Authorization": f"Bearer {encoded}"} if encoded else {}
    for method, path in (
        ("GET", "/repos/acme/gitops/installation"),
        ("POST", f"/app/installations/{installation_id}/access_tokens"),
    ):
        response = requests.request(method, stub.url + path, headers=headers, timeout=5)
        assert response.status_code == 401, (method, path)
        body = response.json()
        assert body["message"].startswith(message) and body["status"] == "401"
        assert body["documentation_url"] == "https://docs.github.com/rest"
    assert not stub.installation_tokens
    good = {"Authorization": f"Bearer {sign(key)}"}
    assert requests.get(f"{stub.url}/repos/acme/gitops/installation", headers=good, timeout=5).status_code == 200


def test_installation_tokens_narrow_expire_and_are_revoked(tmp_path: Path, app_keys: tuple[str, str, Any]) -> None:
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    with GitHubStub(root=tmp_path, token="secret", clock=lambda: now[0]) as stub:
        for name in ("acme/gitops", "acme/infra", "acme/other"):
            stub.create_repo(name)
        installation_id = stub.register_app(12345, app_keys[1], installed_on=["acme/gitops", "acme/infra"])
        headers = {"Authorization": f"Bearer {sign(app_keys[2])}"}
        url = f"{stub.url}/app/installations/{installation_id}/access_tokens"

        def mint(body: Any) -> requests.Response:
            return requests.post(url, json=body, headers=headers, timeout=5)

        def read(token: str, name: str) -> int:
            response = requests.get(f"{stub.url}/repos/{name}", headers={"Authorization": f"token {token}"}, timeout=5)
            return response.status_code

        narrow = mint({"repositories": ["infra"], "permissions": {"contents": "read", "metadata": "read"}})
        assert narrow.status_code == 201
        body = narrow.json()
        assert body["expires_at"] == "2030-01-01T01:00:00Z" and body["repository_selection"] == "selected"
        assert body["permissions"] == {"contents": "read", "metadata": "read"}
        assert [r["full_name"] for r in body["repositories"]] == ["acme/infra"]
        assert (read(body["token"], "acme/infra"), read(body["token"], "acme/gitops")) == (200, 404)
        by_id = mint({"repository_ids": [stub.repo("acme/gitops").id]})
        assert [r["name"] for r in by_id.json()["repositories"]] == ["gitops"]

        refused = {
            "not installed there": ({"repositories": ["other"]}, 422, "not accessible to the parent installation"),
            "no such repository": ({"repository_ids": [999999]}, 422, "not accessible to the parent installation"),
            "more than granted": ({"permissions": {"administration": "write"}}, 422, "not granted"),
            "write where read": ({"permissions": {"checks": "write"}}, 422, "not granted"),
            "invalid level": ({"permissions": {"contents": "owner"}}, 422, "Invalid request"),
        }
        for case, (request, status, message) in refused.items():
            response = mint(request)
            assert (response.status_code, message in response.json()["message"]) == (status, True), case
        assert requests.post(url.replace(str(installation_id), "424242"), headers=headers, timeout=5).status_code == 404

        token = mint(None).json()["token"]
        assert read(token, "acme/gitops") == 200
        now[0] += timedelta(minutes=59)
        assert read(token, "acme/gitops") == 200
        now[0] += timedelta(minutes=1)  # an hour: expired
        expired = requests.get(f"{stub.url}/repos/acme/gitops", headers={"Authorization": f"token {token}"}, timeout=5)
        assert (expired.status_code, expired.json()["message"]) == (401, "Bad credentials")

        fresh = mint(None).json()["token"]
        stub.uninstall_app(installation_id)
        assert read(fresh, "acme/gitops") == 401
        lookup = requests.get(f"{stub.url}/repos/acme/gitops/installation", headers=headers, timeout=5)
        assert lookup.status_code == 404 and mint(None).status_code == 404
        assert not stub.schema_errors and not stub.server_errors


# -- accounting, headers, auth ----------------------------------------------------------------------------------
def test_request_accounting_and_rate_headers(stub: GitHubStub) -> None:
    gh = client(stub)
    remote = gh.get_repo("acme/gitops")
    mark = stub.mark()
    remote.create_pull(title="t", body="", head="fleetflow/dev", base="main")
    list(remote.get_pulls())
    assert stub.count(since=mark) == 2
    assert stub.count(since=mark, method="POST", path=r"/pulls$", status=201) == 1
    assert stub.count(method="GET", path=r"^/repos/acme/gitops$") == 1
    response = requests.get(f"{stub.url}/repos/acme/nope", timeout=5)
    assert response.status_code == 404
    remaining = int(response.headers["X-RateLimit-Remaining"])
    assert remaining == 5000 - len(stub.requests) and response.headers["X-RateLimit-Limit"] == "5000"
    assert int(response.headers["X-RateLimit-Reset"]) > time.time()
    assert gh.rate_limiting[0] == remaining + 1


def test_token_is_checked_when_set(tmp_path: Path) -> None:
    with GitHubStub(root=tmp_path, token="secret") as stub:
        stub.create_repo("acme/app")
        assert Github(base_url=stub.url, auth=Auth.Token("secret"), retry=0).get_repo("acme/app").name == "app"
        with pytest.raises(GithubException) as denied:
            Github(base_url=stub.url, auth=Auth.Token("wrong"), retry=0).get_repo("acme/app")
        assert denied.value.status == 401


@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "from-the-runner")
    monkeypatch.setenv("GITHUB_API_URL", "https://api.github.com")


def test_fixture_scrubs_github_env(leaky_env: None, github_stub: GitHubStub) -> None:
    import os

    assert not [name for name in os.environ if name.startswith("GITHUB_")]
    assert github_stub.env("acme/app")["GITHUB_API_URL"] == github_stub.url


# -- git through the clone URL ----------------------------------------------------------------------------------
def test_git_push_and_fetch_round_trip(stub: GitHubStub, tmp_path: Path) -> None:
    remote = client(stub).get_repo("acme/gitops")
    work = tmp_path / "work"
    git("clone", "--quiet", remote.clone_url, str(work))
    (work / "cluster.yaml").write_text("name: eu-1\n")
    git("checkout", "--quiet", "-b", "feature", cwd=work)
    git("add", "cluster.yaml", cwd=work)
    git("commit", "--quiet", "-m", "add cluster", cwd=work)
    git("push", "--quiet", "origin", "feature", cwd=work)
    pushed = git("rev-parse", "HEAD", cwd=work)
    assert remote.get_branch("feature").commit.sha == pushed
    pr = remote.create_pull(title="add cluster", body="", head="feature", base="main")
    merge_sha = pr.merge().sha
    git("fetch", "--quiet", "origin", cwd=work)
    assert git("rev-parse", "origin/main", cwd=work) == merge_sha
    assert git("show", "-s", "--format=%P", "origin/main", cwd=work).split()[1] == pushed


def test_create_repo_from_directory_and_repositories(github_stub: GitHubStub, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "a.yaml").write_text("a: 1\n")
    repo = github_stub.create_repo("acme/plain", source=plain, default_branch="trunk")
    assert repo.default_branch == "trunk" and set(repo.git.blobs("trunk")) == {"sub/a.yaml"}
    cloned = github_stub.create_repo("acme/cloned", source=Path(repo.path))
    assert cloned.default_branch == "trunk" and cloned.branch_sha("trunk") == repo.branch_sha("trunk")
    in_place = github_stub.create_repo("acme/in-place", bare=Path(repo.path))
    assert in_place.path == repo.path
    gh = client(github_stub)
    assert gh.get_repo("acme/cloned").default_branch == "trunk"
    assert gh.get_repo("acme/plain").get_commit("trunk").files[0].filename == "sub/a.yaml"
