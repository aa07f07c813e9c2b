"""Pull request and issue (labels, comments) endpoints."""

from __future__ import annotations

from typing import Any

from .errors import not_found, unprocessable, validation_failed
from .routing import Handler, Request, Response, paginate, route_registrar
from .state import PullRequest

ROUTES: list[tuple[str, str, Handler]] = []
route = route_registrar(ROUTES)


def sort_pulls(pulls: list[PullRequest], sort: str, direction: str | None) -> list[PullRequest]:
    """GitHub's sort: ``created`` (default, newest first), ``updated``, ``popularity``, ``long-running``."""
    if sort == "updated":
        key: Any = lambda pr: (pr.updated_at, pr.number)  # noqa: E731
    else:
        key = lambda pr: pr.number  # noqa: E731
    descending = direction == "desc" if direction else sort == "created"
    return sorted(pulls, key=key, reverse=descending)


@route("GET", "/repos/{owner}/{repo}/pulls")
def list_pulls(request: Request) -> Response:
    repo, query = request.repo, request.query
    state = query.get("state", "open")
    pulls = [pr for pr in repo.list_pulls() if state == "all" or pr.state == state]
    head = query.get("head")
    if head and ":" in head:  # without "owner:" GitHub silently ignores the filter
        owner, _, branch = head.partition(":")
        pulls = [pr for pr in pulls if owner.lower() == repo.owner.lower() and pr.head_ref == branch]
    if query.get("base"):
        pulls = [pr for pr in pulls if pr.base_ref == query["base"]]
    pulls = sort_pulls(pulls, query.get("sort", "created"), query.get("direction"))
    return paginate(request, pulls, lambda chunk: [request.shapes.pull_simple(repo, pr) for pr in chunk])


@route("POST", "/repos/{owner}/{repo}/pulls")
def create_pull(request: Request) -> Response:
    repo = request.repo
    title = request.json_field("title")
    if not title:
        raise validation_failed({"resource": "PullRequest", "field": "title", "code": "missing_field"})
    pr = repo.create_pull(
        head=request.json_field("head"),
        base=request.json_field("base"),
        title=title,
        body=request.json_field("body"),
        draft=bool(request.json_field("draft", False)),
        user=request.actor,
    )
    pr.maintainer_can_modify = bool(request.json_field("maintainer_can_modify", False))
    body = request.shapes.pull(repo, pr)
    return Response(201, body, {"Location": body["url"]})


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}")
def get_pull(request: Request) -> Response:
    repo = request.repo
    return Response(200, request.shapes.pull(repo, repo.pull(request.param_int("pull_number"))))


@route("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}")
def update_pull(request: Request) -> Response:
    repo = request.repo
    fields = {k: v for k, v in (request.body or {}).items() if k in ("title", "body", "state", "base")}
    pr = repo.update_pull(request.param_int("pull_number"), **fields)
    if "maintainer_can_modify" in (request.body or {}):
        pr.maintainer_can_modify = bool(request.body["maintainer_can_modify"])
    return Response(200, request.shapes.pull(repo, pr))


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/merge")
def check_merged(request: Request) -> Response:
    if not request.repo.pull(request.param_int("pull_number")).merged:
        raise not_found()
    return Response(204)


@route("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge")
def merge_pull(request: Request) -> Response:
    sha = request.repo.merge_pull(
        request.param_int("pull_number"),
        method=request.json_field("merge_method") or "merge",
        commit_title=request.json_field("commit_title"),
        commit_message=request.json_field("commit_message"),
        sha=request.json_field("sha"),
        user=request.actor,
    )
    return Response(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers")
def request_reviewers(request: Request) -> Response:
    """Each reviewer or team not requested yet is requested, and the issue gets a ``review_requested`` event for
    it (GitHub's "Issue event types": ``review_requested``, with ``requested_reviewer`` or ``requested_team``)."""
    repo = request.repo
    with request.store.lock:
        pr = repo.pull(request.param_int("pull_number"))
        reviewers = list(request.json_field("reviewers") or [])
        if pr.user in reviewers:
            raise unprocessable("Review cannot be requested from pull request author.")
        teams = list(request.json_field("team_reviewers") or [])
        if repo.reviewers_allowed is not None and not set(reviewers + teams) <= repo.reviewers_allowed:
            # GitHub's answer, as quoted in denog/routing-guide#118
            raise unprocessable("Reviews may only be requested from collaborators. One or more of the users or "
                                f"teams you specified is not a collaborator of the {repo.full_name} repository.")
        for login in reviewers:
            if login not in pr.requested_reviewers:
                pr.requested_reviewers.append(login)
                _review_event(request, pr, "review_requested", reviewer=login)
        for slug in teams:
            if slug not in pr.requested_teams:
                pr.requested_teams.append(slug)
                _review_event(request, pr, "review_requested", team=slug)
        pr.updated_at = request.store.now()
    return Response(201, request.shapes.pull_simple(repo, pr))


@route("DELETE", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers")
def remove_requested_reviewers(request: Request) -> Response:
    """A person takes a review request back: a ``review_request_removed`` event each."""
    repo = request.repo
    with request.store.lock:
        pr = repo.pull(request.param_int("pull_number"))
        for login in request.json_field("reviewers") or []:
            if login in pr.requested_reviewers:
                pr.requested_reviewers.remove(login)
                _review_event(request, pr, "review_request_removed", reviewer=login)
        for slug in request.json_field("team_reviewers") or []:
            if slug in pr.requested_teams:
                pr.requested_teams.remove(slug)
                _review_event(request, pr, "review_request_removed", team=slug)
        pr.updated_at = request.store.now()
    return Response(200, request.shapes.pull_simple(repo, pr))


REVIEW_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews")
def create_review(request: Request) -> Response:
    """A submitted review (``event`` given; without it GitHub keeps a pending draft, which the stub does not). Its
    author is then no longer a requested reviewer (GitHub, "Get all requested reviewers for a pull request": "Once
    a requested reviewer submits a review, they are no longer considered a requested reviewer")."""
    repo = request.repo
    event = request.json_field("event")
    if event not in REVIEW_STATES:
        raise unprocessable("The stub takes submitted reviews only: event APPROVE, REQUEST_CHANGES or COMMENT.")
    with request.store.lock:
        pr = repo.pull(request.param_int("pull_number"))
        user = request.actor or request.store.login
        if user == pr.user and event != "COMMENT":
            raise unprocessable(f"Can not {'approve' if event == 'APPROVE' else 'request changes on'} your own "
                                "pull request")
        review = {"id": request.store.next_id(), "user": user, "state": REVIEW_STATES[event],
                  "body": request.json_field("body") or "", "commit_id": pr.head_sha, "at": request.store.now()}
        pr.reviews.append(review)
        if user in pr.requested_reviewers:
            pr.requested_reviewers.remove(user)
        pr.updated_at = review["at"]
    return Response(200, request.shapes.review(repo, pr, review))


@route("GET", "/repos/{owner}/{repo}/issues/{issue_number}/events")
def list_issue_events(request: Request) -> Response:
    repo = request.repo
    pr = repo.pull(request.param_int("issue_number"))
    return paginate(request, list(pr.events), lambda chunk: [request.shapes.issue_event(repo, pr, e) for e in chunk])


def _review_event(request: Request, pr: PullRequest, event: str, *, reviewer: str | None = None,
                  team: str | None = None) -> None:
    pr.events.append({"id": request.store.next_id(), "event": event, "actor": request.actor or request.store.login,
                      "created_at": request.store.now(), "reviewer": reviewer, "team": team})


def label_names(body: Any) -> list[str]:
    """``add-labels`` accepts a list or ``{"labels": [...]}``, of names or ``{"name": ...}``, or one name. A name
    over 50 characters is refused as GitHub refuses it: 422 ``{"value": name, "resource": "Label", "field":
    "name", "code": "invalid"}`` (semantic-release/github#518; github/docs#32156: "maximum is 50 characters")."""
    items = body.get("labels", []) if isinstance(body, dict) else body
    if isinstance(items, str):
        items = [items]
    names = [item["name"] if isinstance(item, dict) else item for item in items or []]
    for name in names:
        if not isinstance(name, str) or not name or len(name) > 50:
            raise validation_failed({"value": name, "resource": "Label", "field": "name", "code": "invalid"})
    return names


@route("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels")
def list_labels(request: Request) -> Response:
    repo = request.repo
    pr = repo.pull(request.param_int("issue_number"))
    labels = [repo.label(name) for name in pr.labels]
    return paginate(request, labels, lambda chunk: [request.shapes.label(repo, label) for label in chunk])


@route("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels")
def add_labels(request: Request) -> Response:
    repo = request.repo
    with request.store.lock:
        pr = repo.pull(request.param_int("issue_number"))
        for name in label_names(request.body):
            label = repo.label(name)
            if label.name not in pr.labels:
                pr.labels.append(label.name)
                _label_event(request, pr, "labeled", label.name)
        pr.updated_at = request.store.now()
    return Response(200, [request.shapes.label(repo, repo.label(name)) for name in pr.labels])


def _label_event(request: Request, pr: PullRequest, event: str, label: str) -> None:
    pr.events.append({"id": request.store.next_id(), "event": event, "actor": request.actor or request.store.login,
                      "created_at": request.store.now(), "label": label})


@route("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
def list_comments(request: Request) -> Response:
    repo, number = request.repo, request.param_int("issue_number")
    repo.pull(number)
    comments = [c for c in repo.comments if c.issue_number == number]
    return paginate(request, comments, lambda chunk: [request.shapes.comment(repo, c) for c in chunk])


@route("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
def create_comment(request: Request) -> Response:
    repo = request.repo
    body = request.json_field("body")
    if not isinstance(body, str) or not body:
        raise validation_failed({"resource": "IssueComment", "field": "body", "code": "missing_field"})
    comment = repo.comment(request.param_int("issue_number"), body, user=request.actor)
    shaped = request.shapes.comment(repo, comment)
    return Response(201, shaped, {"Location": shaped["url"]})
