"""The github forge: :class:`~fleetflow.forge.base.Forge` on GitHub's REST API through PyGithub.

One retry layer, PyGithub's ``GithubRetry``: 5xx (POST and PATCH included) and connection drops are retried with
backoff, rate limits are waited out (``Retry-After``, ``x-ratelimit-reset``). What still fails becomes a
:class:`~fleetflow.errors.ForgeError` naming the operation and the request. Every write is idempotent: it reads
first and writes only what is missing, and a create whose answer was lost finds what it made (a retried
``POST /pulls`` answers 422 "already exists"). Requests are few: repositories are lazy objects (no request until
a field is needed, then one, cached); ``open_pull`` is one list request, ``set_status`` one read and at most one
write.

A repo is ``owner/name``. Only this module and :mod:`fleetflow.forge.githubauth` import PyGithub.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from typing import Any, Literal, TypedDict, Unpack
from urllib.parse import quote, urlsplit, urlunsplit

import requests
from github import Github, GithubException, GithubIntegration, GithubRetry, RateLimitExceededException
from github.Auth import AppAuth
from github.GithubException import RateLimitExceededExceedsMaxWait
from github.GithubObject import NotSet
from github.PullRequest import PullRequest as GhPullRequest
from github.Repository import Repository
from urllib3 import Retry

from fleetflow.errors import ForgeError, ForgeRequest
from fleetflow.forge.base import (
    BranchProtection,
    CommitStatus,
    CredentialKind,
    DeploymentEnvironment,
    MergeRules,
    PullRequest,
    ReportPage,
    StatusState,
    WorkflowPermissions,
    check_dispatch,
    check_status,
    full_sha,
    newer_report,
    reviewer_key,
    team_key,
)
from fleetflow.forge.factory import GITHUB_NAME
from fleetflow.forge.githubauth import (
    INTEGRATION_NOT_FOUND,
    RATE_LIMIT_HINT,
    Credential,
    Credentials,
    forbidden_hint,
    rate_limit_hint,
    unauthorized_hint,
)
from fleetflow.forge.rulesets import BranchRule, Ruleset, ruleset_of
from fleetflow.settings import API_URL_HINT, DEFAULT_API_URL, Settings

NOT_THE_API_HINT = f"set GITHUB_API_URL (or github.apiUrl) to {API_URL_HINT}"
# What hides a repository that exists (GitHub Docs, "Troubleshooting the REST API": "404 error for an existing
# repository ... since we don't want to provide any information about private repositories, the API returns a 404")
NOT_SEEN_APP = ("the GitHub App's installation on its account does not include it (add it to the installation's "
                "Repository access)")
NOT_SEEN_TOKEN = ("a fine-grained token sees only the repositories of its resource owner that its Repository access "
                  "names; a classic token needs the repo scope for a private one")
_PER_PAGE = 100
# Check run conclusions as commit states; anything not completed is pending, an unknown conclusion fails.
_SUCCESS_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})


class Tuning(TypedDict, total=False):
    """Retry and throttling knobs (defaults: PyGithub's throttling for real GitHub; tests pass zeros)."""

    retries: int
    backoff_factor: float
    secondary_rate_wait: float
    max_rate_limit_wait: float | None
    seconds_between_requests: float | None
    seconds_between_writes: float | None
    timeout: int


class GitHubForge:
    """GitHub (or GitHub Enterprise Server through ``api_url``) as fleetflow's forge.

    Credentials: ``token``, or ``app_id`` + ``app_private_key`` (a GitHub App; each account's installation is
    looked up through the first repository used there and its tokens are refreshed by PyGithub).

    Retries (one ``GithubRetry``): ``retries`` attempts after the first, ``backoff_factor`` (urllib3's exponential
    backoff, 0 = none), ``secondary_rate_wait`` seconds for a secondary rate limit without ``Retry-After``,
    ``max_rate_limit_wait`` (None = wait for the primary limit's reset, however long). Throttling between requests
    and between writes as PyGithub (GitHub asks for at least 1 s between writes); ``timeout`` per request.
    """

    name = "github"

    def __init__(
        self,
        *,
        token: str | None = None,
        app_id: str | None = None,
        app_private_key: str | None = None,
        api_url: str = DEFAULT_API_URL,
        retries: int = 5,
        backoff_factor: float = 1.0,
        secondary_rate_wait: float = 60.0,
        max_rate_limit_wait: float | None = None,
        seconds_between_requests: float | None = 0.25,
        seconds_between_writes: float | None = 1.0,
        timeout: int = 15,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._retry = GithubRetry(
            total=retries,
            backoff_factor=backoff_factor,
            secondary_rate_wait=secondary_rate_wait,
            max_rate_limit_wait=max_rate_limit_wait,
            # PyGithub's set (idempotent methods + POST) plus PATCH: fleetflow's PATCHes set absolute values.
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET", "POST", "PATCH"},
        )
        self._options: dict[str, Any] = {
            "base_url": self.api_url,
            "retry": self._retry,
            "timeout": timeout,
            "per_page": _PER_PAGE,
            "seconds_between_requests": seconds_between_requests,
            "seconds_between_writes": seconds_between_writes,
        }
        self._credentials = Credentials(token=token, app_id=app_id, app_private_key=app_private_key,
                                        integration=self._integration)
        self._clients: dict[str, Github] = {}
        self._repos: dict[str, tuple[Credential, Repository]] = {}

    @classmethod
    def from_settings(cls, settings: Settings, **tuning: Unpack[Tuning]) -> GitHubForge:
        """The forge the settings describe; an App (``app_id``) is preferred over a token when both are set."""
        use_app = bool(settings.app_id or settings.app_private_key)
        requests, writes = settings.github_throttle  # FLEETFLOW_GITHUB_THROTTLE, else PyGithub's throttle
        throttle: Tuning = {"seconds_between_requests": requests, "seconds_between_writes": writes}
        return cls(
            token=None if use_app else settings.token,
            app_id=settings.app_id,
            app_private_key=settings.app_private_key,
            api_url=settings.api_url or DEFAULT_API_URL,
            **(throttle | tuning),
        )

    def __repr__(self) -> str:  # never the token
        return f"GitHubForge(api_url={self.api_url!r}, auth={self._credentials.kind})"

    @contextmanager
    def tried_once(self) -> Iterator[None]:
        """While inside: ``GithubRetry`` gives up at the first failure (``total`` 0): no retry of a 5xx or a
        dropped connection, and no wait for a rate limit's reset, which PyGithub would otherwise sleep out (up to an
        hour for the primary limit). The retry object is shared by every client of this forge; fleetflow makes its
        requests from one thread."""
        total, self._retry.total = self._retry.total, 0
        try:
            yield
        finally:
            self._retry.total = total

    def close(self) -> None:
        """Close the HTTP connections (the forge stays usable: clients are made again on demand)."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self._repos.clear()
        self._credentials.close()

    # -- clients and repositories --------------------------------------------------------------------------

    def _integration(self, app: AppAuth) -> GithubIntegration:
        return GithubIntegration(auth=app, **self._options)

    def _remote(self, repo: str) -> Repository:
        return self._resolve(repo)[1]

    def _resolve(self, repo: str) -> tuple[Credential, Repository]:
        """A lazy ``Repository`` (no request) and its credential, cached per repository."""
        key = repo.lower()
        if key not in self._repos:
            if not GITHUB_NAME.match(repo):
                raise ForgeError(f"invalid GitHub repository {repo!r}: expected owner/name")
            owner, name = repo.split("/")
            hint = f"install the GitHub App on {owner} with access to {repo}"
            with self._request("find the GitHub App installation", "GET", f"/repos/{repo}/installation", hint=hint):
                credential = self._credentials.for_repo(owner, name)
            if credential.key not in self._clients:
                self._clients[credential.key] = Github(auth=credential.auth, lazy=True, **self._options)
            self._repos[key] = (credential, self._clients[credential.key].get_repo(repo))
        return self._repos[key]

    def _array_pages(self, repo: str, path: str, what: str, parameters: dict[str, Any] | None = None) -> list[Any]:
        """Every item of a paginated GET that answers a plain JSON array, :data:`_PER_PAGE` a page (GitHub's most):
        one request per page, the last one short."""
        items: list[Any] = []
        page = 1
        while True:
            chunk = self._requester_json(repo, "GET", path, what,
                                         parameters={**(parameters or {}), "per_page": _PER_PAGE, "page": page}) or []
            items += chunk
            if len(chunk) < _PER_PAGE:
                return items
            page += 1

    def _requester_json(self, repo: str, method: str, path: str, what: str, *,
                        parameters: dict[str, Any] | None = None, body: Any = None) -> Any:
        """One request PyGithub has no fitting call for (paginated combined status, checked dispatch)."""
        remote = self._remote(repo)
        with self._request(what, method, path):
            _, data = remote.requester.requestJsonAndCheck(method, path, parameters=parameters, input=body)
        return data

    # -- repositories --------------------------------------------------------------------------------------

    def git_url(self, repo: str) -> str:
        """The repository's ``clone_url``; an https URL carries the token (``x-access-token``) for git."""
        credential, remote = self._resolve(repo)
        with self._request("read the repository", "GET", f"/repos/{repo}"):
            url = self._answered(repo, remote.clone_url)
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            return url
        installation = credential.key.removeprefix("installation-")
        with self._request("get an installation token", "POST", f"/app/installations/{installation}/access_tokens"):
            token = credential.git_token()
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=f"x-access-token:{token}@{host}"))

    def _answered(self, repo: str, value: str | None) -> str:
        """A field of the repository GitHub described; None when the answer was no JSON (PyGithub reads a 200 whose
        body is not JSON as ``{"data": body}``, Requester.__structuredFromJson): the API URL is a web site's (GitHub
        Enterprise Server's web address without /api/v3). Until 2026-11-29 a traceback in git (a None clone URL)."""
        if isinstance(value, str):
            return value
        raise ForgeError(f"GitHub: cannot read the repository: {self.api_url} answered, but not as GitHub's REST API "
                         f"(hint: {NOT_THE_API_HINT})", ForgeRequest("GET", f"{self.api_url}/repos/{repo}", 200))

    def default_branch(self, repo: str) -> str:
        remote = self._remote(repo)
        with self._request("read the repository", "GET", f"/repos/{repo}"):
            return self._answered(repo, remote.default_branch)

    # -- commit statuses -----------------------------------------------------------------------------------

    def statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        """Latest commit status per context plus the latest check run per name, by context (every page). A
        context that is both a status and a check run: the newer wins (a tie: the worse state)."""
        latest = {s.context: s for page in self.status_pages(repo, sha) for s in page.reports}
        for page in self.check_pages(repo, sha):
            for check in page.reports:
                other = latest.get(check.context)
                if other is None or newer_report(check, other):
                    latest[check.context] = check
        return [latest[context] for context in sorted(latest)]

    def status_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """``GET /repos/{repo}/commits/{sha}/status``, 100 contexts a page (GitHub's most), one request per page
        read; ``total_count`` and ``state`` come with the first."""
        sha = full_sha(sha)
        path = f"/repos/{repo}/commits/{sha}/status"
        seen, page = 0, 1
        while True:
            data = self._requester_json(repo, "GET", path, "read the combined commit status",
                                        parameters={"per_page": _PER_PAGE, "page": page})
            chunk = data.get("statuses") or []
            total = int(data.get("total_count") or 0)
            seen += len(chunk)
            yield ReportPage(
                [CommitStatus(context=s["context"], state=s["state"], description=s.get("description") or "",
                              updated_at=_when(s.get("updated_at") or s.get("created_at")), kind="status")
                 for s in chunk],
                total, data.get("state") or "pending")
            if len(chunk) < _PER_PAGE or seen >= total:
                return
            page += 1

    def status_history(self, repo: str, sha: str) -> list[CommitStatus]:
        """``GET /repos/{owner}/{repo}/commits/{ref}/statuses`` (every status, newest first; 100 a page), oldest
        first. One request for a commit with at most 100 statuses."""
        statuses = self._array_pages(repo, f"/repos/{repo}/commits/{full_sha(sha)}/statuses",
                                     "list the commit statuses")
        return [CommitStatus(context=s["context"], state=s["state"], description=s.get("description") or "",
                             updated_at=_when(s.get("created_at") or s.get("updated_at")), kind="status")
                for s in reversed(statuses)]

    def commit_url(self, repo: str, sha: str) -> str | None:
        """``html_url`` of the repository (read with it, no extra request once the repository is read) +
        ``/commit/<sha>``."""
        remote = self._remote(repo)
        with self._request("read the repository", "GET", f"/repos/{repo}"):
            return f"{self._answered(repo, remote.html_url)}/commit/{full_sha(sha)}"

    def check_pages(self, repo: str, sha: str) -> Iterator[ReportPage]:
        """``GET /repos/{repo}/commits/{sha}/check-runs?filter=latest``, 100 a page (check runs are not in the
        combined status)."""
        sha = full_sha(sha)
        path = f"/repos/{repo}/commits/{sha}/check-runs"
        seen, page = 0, 1
        while True:
            data = self._requester_json(repo, "GET", path, "list check runs",
                                        parameters={"per_page": _PER_PAGE, "page": page, "filter": "latest"})
            chunk = data.get("check_runs") or []
            total = int(data.get("total_count") or 0)
            seen += len(chunk)
            yield ReportPage([_check_status(run["name"], run["status"], run.get("conclusion"),
                                            (run.get("output") or {}).get("title"),
                                            _when(run.get("completed_at") or run.get("started_at")))
                              for run in chunk], total)
            if len(chunk) < _PER_PAGE or seen >= total:
                return
            page += 1

    def _latest_status(self, repo: str, sha: str, context: str) -> CommitStatus | None:
        """The latest status of ``context``: pages are read until it is found."""
        for page in self.status_pages(repo, sha):
            found = next((s for s in page.reports if s.context == context), None)
            if found is not None:
                return found
        return None

    def set_status(self, repo: str, sha: str, context: str, state: StatusState, description: str,
                   target_url: str | None = None, *, known: Sequence[CommitStatus] | None = None) -> bool:
        sha = check_status(sha, state, context, description)
        if known is not None:
            last = next((s for s in known if s.context == context and s.kind == "status"), None)
        else:
            last = self._latest_status(repo, sha, context)
        if last is not None and (last.state, last.description) == (state, description):
            return False
        body: dict[str, Any] = {"state": state, "context": context, "description": description}
        if target_url:
            body["target_url"] = target_url
        self._requester_json(repo, "POST", f"/repos/{repo}/statuses/{sha}", "post a commit status", body=body)
        return True

    # -- pull requests -------------------------------------------------------------------------------------

    def open_pull(self, repo: str, head: str, base: str) -> PullRequest | None:
        remote = self._remote(repo)
        owner = repo.split("/")[0]
        with self._request("find the open pull request", "GET", f"/repos/{repo}/pulls"):
            found = next(iter(remote.get_pulls(state="open", head=f"{owner}:{head}", base=base)), None)
        return None if found is None else _pull(found)

    def pulls(self, repo: str, head: str, state: Literal["open", "closed", "all"] = "all", *,
              limit: int | None = None) -> list[PullRequest]:
        remote = self._remote(repo)
        owner = repo.split("/")[0]
        with self._request("list pull requests", "GET", f"/repos/{repo}/pulls"):
            listed = remote.get_pulls(state=state, head=f"{owner}:{head}", sort="created", direction="desc")
            # islice reads only the pages it reaches (PyGithub's own slice raises IndexError past a short last page)
            found = list(listed if limit is None else islice(listed, limit))
        return [_pull(pr) for pr in found]

    def create_pull(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        """Open a PR, or return the open one for head → base: GitHub answers 422 "already exists" when it is
        there, also when the answer to our own create was lost and the retried POST found it."""
        if head == base:
            raise ForgeError(f"cannot open a pull request from {head!r} into itself")
        if not title.strip():
            raise ForgeError("a pull request needs a title")
        remote = self._remote(repo)
        for attempt in range(2):
            try:
                with self._request("create a pull request", "POST", f"/repos/{repo}/pulls",
                                   reraise=lambda e: e.status == 422):
                    return _pull(remote.create_pull(base=base, head=head, title=title, body=body))
            except GithubException as exc:
                if not _exists(exc):
                    raise _forge_error("create a pull request", "POST", f"{self.api_url}/repos/{repo}/pulls", exc,
                                       _unopenable(exc, repo, head, base)) from None
                existing = self.open_pull(repo, head, base)
                if existing is not None:
                    return existing
                if attempt:  # said twice that it exists, and it is not listed: give up clearly
                    raise ForgeError(f"GitHub says a pull request {head} → {base} exists in {repo}, but none is "
                                     "open; try again in a minute",
                                     ForgeRequest("POST", f"{self.api_url}/repos/{repo}/pulls", 422)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def update_pull(self, repo: str, number: int, *, title: str | None = None, body: str | None = None,
                    state: Literal["open", "closed"] | None = None) -> PullRequest:
        if state not in (None, "open", "closed"):
            raise ForgeError(f"invalid pull request state {state!r}")
        pr = self._get_pull(repo, number)
        new_title = title if title is not None and title != pr.title else NotSet
        new_body = body if body is not None and body != (pr.body or "") else NotSet
        new_state = state if state is not None and state != pr.state else NotSet
        if new_state is not NotSet and pr.merged_at is not None:
            raise ForgeError(f"pull request #{number} in {repo} is merged: its state cannot change")
        if (new_title, new_body, new_state) != (NotSet, NotSet, NotSet):
            with self._request("update a pull request", "PATCH", f"/repos/{repo}/pulls/{number}"):
                pr.edit(title=new_title, body=new_body, state=new_state)
        return _pull(pr)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        if any(not label.strip() for label in labels):
            raise ForgeError("a label needs a name")
        if not labels:
            return
        pr = self._get_pull(repo, number)
        have = {label.name.lower() for label in pr.labels}
        missing = [label for label in dict.fromkeys(labels) if label.lower() not in have]
        if missing:
            with self._request("add labels", "POST", f"/repos/{repo}/issues/{number}/labels"):
                pr.add_to_labels(*missing)

    def request_reviewers(self, repo: str, number: int, reviewers: list[str]) -> None:
        """Request reviews from users and teams (``org/team-slug``) not requested yet; the PR's author is
        skipped (GitHub refuses to ask them)."""
        if not reviewers:
            return
        pr = self._get_pull(repo, number)
        users = {user.login.lower() for user in pr.requested_reviewers} | {pr.user.login.lower()}
        teams = {team.slug.lower() for team in pr.requested_teams}
        new_users = [r for r in dict.fromkeys(reviewers) if "/" not in r and r.lower() not in users]
        new_teams = [r.split("/", 1)[1] for r in dict.fromkeys(reviewers)
                     if "/" in r and r.split("/", 1)[1].lower() not in teams]
        if new_users or new_teams:
            with self._request("request reviewers", "POST", f"/repos/{repo}/pulls/{number}/requested_reviewers"):
                pr.create_review_request(reviewers=new_users, team_reviewers=new_teams)

    def review_requests_made(self, repo: str, number: int) -> set[str]:
        """From the issue's events (``GET /repos/{owner}/{repo}/issues/{number}/events``, GitHub's "Issue event
        types": ``review_requested`` with ``requested_reviewer`` or ``requested_team``), read as plain JSON: a
        PyGithub ``IssueEvent`` reads its own URL for any field the list left out."""
        found: set[str] = set()
        for event in self._array_pages(repo, f"/repos/{repo}/issues/{number}/events", "read who was asked to review"):
            if not isinstance(event, dict) or event.get("event") != "review_requested":
                continue
            user, team = event.get("requested_reviewer"), event.get("requested_team")
            if isinstance(user, dict) and isinstance(user.get("login"), str):
                found.add(reviewer_key(user["login"]))
            if isinstance(team, dict) and isinstance(team.get("slug"), str):
                found.add(team_key(team["slug"]))
        return found

    def labels_removed(self, repo: str, number: int) -> set[str]:
        """From the issue's events (as :meth:`review_requests_made`): ``unlabeled`` with ``label.name`` (GitHub's
        ``unlabeled-issue-event``, github/rest-api-description)."""
        found: set[str] = set()
        for event in self._array_pages(repo, f"/repos/{repo}/issues/{number}/events", "read the labels taken off"):
            label = event.get("label") if isinstance(event, dict) and event.get("event") == "unlabeled" else None
            if isinstance(label, dict) and isinstance(label.get("name"), str):
                found.add(label["name"].lower())
        return found

    def merge_pull(self, repo: str, number: int, *, expected_head: str | None = None) -> str:
        """Merge with a merge commit. A merged PR gives its merge sha again (also when the answer to our own
        merge was lost: the retried PUT answers 405 and the PR reads merged). ``expected_head`` is GitHub's
        ``sha`` parameter: 409 when the head moved."""
        pr = self._get_pull(repo, number)
        if pr.merged_at is not None:
            return pr.merge_commit_sha
        if pr.state != "open":
            raise ForgeError(f"pull request #{number} in {repo} is closed: only an open pull request can be merged")
        try:
            with self._request("merge a pull request", "PUT", f"/repos/{repo}/pulls/{number}/merge",
                               reraise=lambda e: e.status == 405):
                return pr.merge(merge_method="merge", sha=expected_head or NotSet).sha
        except GithubException as exc:
            again = self._get_pull(repo, number)
            if again.merged_at is not None:
                return again.merge_commit_sha
            raise _forge_error("merge a pull request", "PUT", f"{self.api_url}/repos/{repo}/pulls/{number}/merge",
                               exc, hint="conflicts with the base branch, or branch protection rules") from None

    def merge_rules(self, repo: str, branch: str) -> MergeRules:
        """Required contexts from branch protection (``GET /branches/{branch}``: ``protection.required_status_checks``,
        readable with pull access) and from rulesets (``GET /rules/branches/{branch}``: the active
        ``required_status_checks`` rules, every page: GitHub gives 30 rules a page unless asked for 100), plus the
        repository's ``allow_auto_merge``. Three requests (one more per further 100 rules)."""
        remote = self._remote(repo)
        with self._request("read the repository", "GET", f"/repos/{repo}"):
            allowed = bool(remote.allow_auto_merge)
        quoted = quote(branch, safe="")
        data = self._requester_json(repo, "GET", f"/repos/{repo}/branches/{quoted}", "read the branch")
        checks = ((data.get("protection") or {}).get("required_status_checks") or {})
        required = list(checks.get("contexts") or [])
        required += [c["context"] for c in checks.get("checks") or [] if c.get("context")]
        for rule in self.branch_rules(repo, branch) or []:
            if rule.type == "required_status_checks":
                listed = rule.parameters.get("required_status_checks") or []
                required += [c["context"] for c in listed if isinstance(c, dict) and c.get("context")]
        return MergeRules(tuple(dict.fromkeys(required)), allowed)

    def enable_auto_merge(self, repo: str, number: int) -> str | None:
        """GraphQL ``enablePullRequestAutoMerge`` (merge commit) through PyGithub's ``enable_automerge``. GitHub
        refuses it when the repository does not allow auto-merge and when the PR needs no waiting ("Pull request
        is in clean status", "... unstable status"): the refusal's message is returned."""
        pr = self._get_pull(repo, number)
        if pr.auto_merge is not None:
            return None
        if pr.state != "open":
            return f"pull request #{number} is {'merged' if pr.merged_at else 'closed'}"
        try:
            with self._request("enable auto-merge", "POST", "/graphql", reraise=lambda e: e.status in (400, 422)):
                pr.enable_automerge(merge_method="MERGE")
        except GithubException as exc:
            return _github_message(exc) or "auto-merge refused"
        return None

    def _get_pull(self, repo: str, number: int) -> GhPullRequest:
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ForgeError(f"invalid pull request number {number!r}")
        remote = self._remote(repo)
        with self._request("read a pull request", "GET", f"/repos/{repo}/pulls/{number}"):
            return remote.get_pull(number).complete()

    # -- repository_dispatch -------------------------------------------------------------------------------

    def dispatch(self, repo: str, event_type: str, payload: dict[str, object]) -> None:
        """``create_repository_dispatch``, through the requester: PyGithub's method answers False on an error
        and drops GitHub's message."""
        check_dispatch(event_type, payload)
        self._requester_json(repo, "POST", f"/repos/{repo}/dispatches", "dispatch an event",
                             body={"event_type": event_type, "client_payload": payload})

    # -- repository settings (fleetflow init / doctor) -----------------------------------------------------

    def set_default_branch(self, repo: str, branch: str) -> bool:
        """``PATCH /repos/{owner}/{repo}`` with ``default_branch`` (PyGithub's ``Repository.edit``)."""
        if self.default_branch(repo) == branch:
            return False
        remote = self._remote(repo)
        with self._request("set the default branch", "PATCH", f"/repos/{repo}",
                           hint=f"the branch {branch} must exist, and the token needs the Administration permission"):
            remote.edit(default_branch=branch)
        return True

    def installation_permissions(self, repo: str) -> dict[str, str] | None:
        """The App installation that serves ``repo`` (looked up with the App's JWT), None with a token."""
        credential = self._resolve(repo)[0]
        if not credential.key.startswith("installation-"):
            return None
        owner, name = repo.split("/")
        with self._request("read the GitHub App installation", "GET", f"/repos/{repo}/installation"):
            installation = self._credentials.installation(owner, name)
            return {str(k): str(v) for k, v in (installation.permissions or {}).items()}

    def auto_merge_allowed(self, repo: str) -> bool | None:
        remote = self._remote(repo)
        with self._request("read the repository", "GET", f"/repos/{repo}"):
            return bool(remote.allow_auto_merge)

    def credential_kind(self) -> CredentialKind:
        """An App (its installation tokens), else what the token's prefix says it is (:func:`token_kind`)."""
        return self._credentials.credential_kind

    def workflow_permissions(self, repo: str) -> WorkflowPermissions | None:
        """"Get default workflow permissions for a repository" (``GET /repos/{owner}/{repo}/actions/permissions/
        workflow``; Administration: read for a GitHub App or a fine-grained token, the ``repo`` scope for a classic
        one: https://docs.github.com/en/rest/actions/permissions): ``default_workflow_permissions`` and
        ``can_approve_pull_request_reviews``."""
        data = self._requester_json(repo, "GET", f"/repos/{repo}/actions/permissions/workflow",
                                    "read the GitHub Actions workflow permissions") or {}
        return WorkflowPermissions(str(data.get("default_workflow_permissions", "")),
                                   data.get("can_approve_pull_request_reviews") is True)

    def deployment_environments(self, repo: str) -> dict[str, DeploymentEnvironment] | None:
        """"List environments" (``GET /repos/{owner}/{repo}/environments``, anyone with read access): each
        environment's ``protection_rules`` (``required_reviewers`` with its ``reviewers``, ``wait_timer``)."""
        found: dict[str, DeploymentEnvironment] = {}
        page = 1
        while True:
            data = self._requester_json(repo, "GET", f"/repos/{repo}/environments", "list the environments",
                                        parameters={"per_page": 100, "page": page})
            items = (data or {}).get("environments") or []
            for item in items:
                reviewers = wait = 0
                for rule in item.get("protection_rules") or []:
                    if rule.get("type") == "required_reviewers":
                        reviewers = len(rule.get("reviewers") or [])
                    elif rule.get("type") == "wait_timer":
                        wait = int(rule.get("wait_timer") or 0)
                found[item["name"]] = DeploymentEnvironment(item["name"], reviewers, wait)
            if len(items) < 100 or len(found) >= int((data or {}).get("total_count") or 0):
                return found
            page += 1

    def branch_rules(self, repo: str, branch: str) -> list[BranchRule] | None:
        """"Get rules for a branch" (``GET /repos/{owner}/{repo}/rules/branches/{branch}``, Metadata: read): every
        active rule that applies, whatever level its ruleset is at. One request per 100 rules."""
        rules = self._array_pages(repo, f"/repos/{repo}/rules/branches/{quote(branch, safe='')}",
                                  "read the rules for the branch")
        return [BranchRule(str(r.get("type", "")), int(r.get("ruleset_id") or 0), dict(r.get("parameters") or {}))
                for r in rules if isinstance(r, dict)]

    def branch_protection(self, repo: str, branch: str) -> BranchProtection | None:
        """"Get a branch" (``GET /repos/{owner}/{repo}/branches/{branch}``, readable with pull access): ``protected``
        and ``protection.required_status_checks`` (``contexts`` and ``checks``; none while its
        ``enforcement_level`` is ``off``). One request."""
        data = self._requester_json(repo, "GET", f"/repos/{repo}/branches/{quote(branch, safe='')}",
                                    "read the branch")
        checks = ((data.get("protection") or {}).get("required_status_checks") or {})
        required: list[str] = []
        if checks.get("enforcement_level") != "off":
            required = [str(c) for c in checks.get("contexts") or []]
            required += [str(c["context"]) for c in checks.get("checks") or [] if c.get("context")]
        return BranchProtection(bool(data.get("protected")), tuple(dict.fromkeys(required)))

    def ruleset(self, repo: str, ident: int) -> Ruleset:
        """"Get a repository ruleset" with ``includes_parents`` (an organization's too): conditions, rules and
        ``current_user_can_bypass``."""
        return ruleset_of(self._requester_json(repo, "GET", f"/repos/{repo}/rulesets/{ident}", "read a ruleset",
                                               parameters={"includes_parents": "true"}))

    def rulesets(self, repo: str, target: str) -> list[Ruleset] | None:
        """"Get all repository rulesets" (``GET /repos/{owner}/{repo}/rulesets``, ``targets``, ``includes_parents``:
        the organization's too; anyone with read access), then "Get a repository ruleset" for each active one: its
        ``conditions.ref_name``, ``rules`` and ``current_user_can_bypass``. One request per 100 rulesets, plus one
        per active ruleset of ``target``."""
        listed = self._array_pages(repo, f"/repos/{repo}/rulesets", "list the rulesets",
                                   {"targets": target, "includes_parents": "true"})
        found: list[Ruleset] = []
        for item in listed:
            if item.get("target", target) != target:
                continue  # the list's items may not say their target (GitHub's example does not): the ruleset does
            if item.get("enforcement") != "active":
                found.append(ruleset_of(item | {"target": target}))
                continue
            detailed = self.ruleset(repo, int(item["id"]))
            if detailed.target == target:
                found.append(detailed)
        return found

    # -- errors --------------------------------------------------------------------------------------------

    @contextmanager
    def _request(self, operation: str, method: str, path: str, *, hint: str | None = None,
                 reraise: Callable[[GithubException], bool] | None = None) -> Iterator[None]:
        """Map what PyGithub and requests raise (after ``GithubRetry`` gave up) to a ``ForgeError`` for
        ``method path``; a ``GithubException`` for which ``reraise(exc)`` is true is left to the caller."""
        try:
            yield
        except GithubException as exc:
            if reraise is not None and reraise(exc):
                raise
            raise _forge_error(operation, method, self.api_url + path, exc, hint,
                               retried=bool(self._retry.total), app=self._credentials.kind == "app") from exc
        except requests.RequestException as exc:  # carries the request (and its Authorization header): not chained
            raise _forge_error(operation, method, self.api_url + path, exc, hint,
                               retried=bool(self._retry.total)) from None


# -- conversions -------------------------------------------------------------------------------------------


def _pull(pr: GhPullRequest) -> PullRequest:
    """Only fields of the list form (``pull-request-simple``): reading another would cost a request."""
    merged = pr.merged_at is not None
    return PullRequest(
        number=pr.number,
        head=pr.head.ref,
        base=pr.base.ref,
        title=pr.title,
        body=pr.body or "",
        state="closed" if pr.state == "closed" else "open",
        merged=merged,
        head_sha=pr.head.sha,
        merge_commit_sha=pr.merge_commit_sha if merged else None,  # an open PR's is GitHub's test merge
        url=pr.html_url,
        labels=tuple(label.name for label in pr.labels),
        auto_merge=pr.auto_merge is not None,
        author=pr.user.login if pr.user is not None else "",
        review_requests=(*(reviewer_key(user.login) for user in pr.requested_reviewers or ()),
                         *(team_key(team.slug) for team in pr.requested_teams or ())),
        draft=bool(pr.draft),
    )


def _check_status(name: str, status: str, conclusion: str | None, title: str | None,
                  when: datetime | None) -> CommitStatus:
    state: StatusState
    if status != "completed":
        state = "pending"
    elif conclusion in _SUCCESS_CONCLUSIONS:
        state = "success"
    else:  # failure, timed_out, cancelled, action_required, stale, startup_failure, ...
        state = "failure"
    description = title or (conclusion if status == "completed" and conclusion else status)
    return CommitStatus(context=name, state=state, description=description, updated_at=when, kind="check")


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None



def _exists(exc: GithubException) -> bool:
    """GitHub's 422 for a second open PR on the same head and base."""
    return exc.status == 422 and "already exists" in _github_message(exc).lower()


def _unopenable(exc: GithubException, repo: str, head: str, base: str) -> str | None:
    """The hint for GitHub's 422 to "Create a pull request" that is not "already exists": "No commits between
    <base> and <head>" (the base holds the head already), or the ``field`` ``base``/``head`` ``invalid`` (no such
    branch; octopilot#134, iterative/cml#619 quote GitHub's ``{"resource":"PullRequest","field":"base",
    "code":"invalid"}``)."""
    errors = exc.data.get("errors") if isinstance(exc.data, dict) else None
    fields = {e.get("field") for e in errors or [] if isinstance(e, dict) and e.get("code") == "invalid"}
    if "no commits between" in _github_message(exc).lower():
        return (f"{base} already holds every commit of {head}, so there is nothing to propose (a person or another "
                "run merged it meanwhile): run the command again, it reads both branches afresh")
    if "base" in fields:
        return f"the base branch {base} does not exist in {repo}: create it, or name an existing branch"
    if "head" in fields:
        return f"the head branch {head} does not exist in {repo} (deleted while fleetflow worked?): run again"
    return None


def _github_message(exc: GithubException) -> str:
    data = exc.data
    if not isinstance(data, dict):
        return str(data or exc.message or "")
    parts = [str(data.get("message") or "")]
    for error in data.get("errors") or []:  # REST validation errors, or GraphQL's errors list
        if isinstance(error, dict):
            parts.append(str(error.get("message") or " ".join(
                str(error[k]) for k in ("resource", "field", "code") if error.get(k))))
        else:
            parts.append(str(error))
    return ": ".join(p for p in parts if p)


def _headers(exc: GithubException) -> dict[str, str]:
    """The answer's headers by their lowercase names (HTTP's are case-insensitive)."""
    return {k.lower(): v for k, v in (exc.headers or {}).items()}


def _rate_limited(headers: Mapping[str, str]) -> bool:
    """GitHub's answer (its :func:`_headers`) is a rate limit whatever its words ("Rate limits for the REST API": the
    primary limit sets ``x-ratelimit-remaining: 0``, the secondary one may send ``retry-after``)."""
    return headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers


def _forge_error(operation: str, method: str, url: str, exc: Exception, hint: str | None = None, *,
                 retried: bool = True, app: bool = False) -> ForgeError:
    """One line: what fleetflow tried, what GitHub said, a hint; the request (method, url, status) attached.
    ``retried``: false inside ``tried_once``, where nothing was retried or waited for; ``app``: the credentials are
    a GitHub App's."""
    status: int | None = None
    if isinstance(exc, RateLimitExceededExceedsMaxWait):
        status = exc.status
        detail = f"rate limited: waiting {exc.wait or 0:.0f} s for the reset would exceed max_rate_limit_wait"
        hint = rate_limit_hint("api rate limit exceeded")
    elif isinstance(exc, RateLimitExceededException):
        status = exc.status
        detail = f"rate limit still exceeded after waiting and retrying: {_github_message(exc)}"
        hint = rate_limit_hint(_github_message(exc))
    elif isinstance(exc, GithubException) and exc.status < 500 and isinstance(exc.data, dict) \
            and set(exc.data) == {"data"}:  # a body that is no JSON (PyGithub's {"data": body}): not the API's
        status = exc.status  # (a 5xx page may be GitHub's own, overloaded: not this branch)
        page = str(exc.data["data"]).lstrip()[:200].lower()
        kind = "an HTML page" if page.startswith(("<!doctype", "<html")) else "text"
        detail = f"the answer is {kind}, not GitHub's JSON"
        hint = f"{url.split('/repos/')[0]} is not GitHub's REST API: {NOT_THE_API_HINT}"
    elif isinstance(exc, GithubException):
        status = exc.status
        detail = _github_message(exc) or "no message"
        headers = _headers(exc)
        jwt = app and (url.endswith("/installation") or "/app/" in url)  # the App's own requests, with its JWT
        if status == 401 or INTEGRATION_NOT_FOUND in detail.lower():
            hint = unauthorized_hint(detail, app=app, jwt=jwt, host=urlsplit(url).netloc)
        elif status in (403, 429) and _rate_limited(headers):
            hint = rate_limit_hint(detail)
        elif status == 403:
            hint = forbidden_hint(detail, headers.get("x-accepted-github-permissions"))
        elif status == 404 and hint is None:  # GitHub answers 404, not 403, for a private repository out of reach
            hint = f"it does not exist, or the credentials cannot see it: {NOT_SEEN_APP if app else NOT_SEEN_TOKEN}"
    elif isinstance(exc, requests.exceptions.RetryError):
        found = re.search(r"too many (\d{3}) error responses", str(exc))
        status = int(found[1]) if found else None
        if status in (403, 429):
            detail = ("rate limit still exceeded after waiting and retrying" if retried
                      else "rate limited (tried once, without waiting for the reset)")
            hint = RATE_LIMIT_HINT
        elif retried:
            detail = f"GitHub kept failing{f' with {status}' if status else ''}, gave up after retrying"
        else:
            detail = f"GitHub failed{f' with {status}' if status else ''} (tried once, not retried)"
    else:
        reason = str(exc.args[0] if exc.args else exc)
        detail = f"connection failed ({type(exc).__name__}: {reason.split(' (Caused by')[0][:200]})"
        request = getattr(exc, "request", None)
        if request is not None and request.method and request.url:
            method, url = request.method, str(request.url).split("?")[0]
    message = f"GitHub: cannot {operation}: {detail}"
    if hint:
        message += f" (hint: {hint})"
    return ForgeError(message, ForgeRequest(method, url, status))
