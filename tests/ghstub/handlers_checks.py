"""Commit status and check run endpoints."""

from __future__ import annotations

import re

from .errors import not_found, unprocessable
from .routing import Handler, Request, Response, paginate, route_registrar
from .state import CheckRun

ROUTES: list[tuple[str, str, Handler]] = []
route = route_registrar(ROUTES)
HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")
CHECK_FIELDS = ("status", "conclusion", "started_at", "completed_at", "details_url", "external_id", "output")


@route("POST", "/repos/{owner}/{repo}/statuses/{sha}")
def create_status(request: Request) -> Response:
    repo, sha = request.repo, request.params["sha"]
    if not HEX.match(sha):  # a SHA, not a branch name
        raise unprocessable(f"No commit found for SHA: {sha}")
    status = repo.add_status(
        sha,
        state=request.json_field("state"),
        context=request.json_field("context") or "default",
        description=request.json_field("description"),
        target_url=request.json_field("target_url"),
        creator=request.actor,
    )
    body = request.shapes.status(repo, status)
    return Response(201, body, {"Location": body["url"]})


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses")
def list_statuses(request: Request) -> Response:
    repo = request.repo
    statuses = repo.statuses_for(request.params["ref"])
    return paginate(request, statuses, lambda chunk: [request.shapes.status(repo, s) for s in chunk])


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/status")
def combined_status(request: Request) -> Response:
    repo = request.repo
    sha, state, latest = repo.combined_status(request.params["ref"])
    response = paginate(request, latest, lambda chunk: chunk)
    response.body = request.shapes.combined_status(repo, sha, state, response.body, len(latest))
    return response


def check_run_fields(request: Request) -> dict[str, object]:
    return {key: request.json_field(key) for key in CHECK_FIELDS if request.json_field(key) is not None}


@route("POST", "/repos/{owner}/{repo}/check-runs")
def create_check_run(request: Request) -> Response:
    repo = request.repo
    run = repo.add_check_run(request.json_field("head_sha"), request.json_field("name"), **check_run_fields(request))
    return Response(201, request.shapes.check_run(repo, run))


def find_check_run(request: Request) -> CheckRun:
    run_id = request.param_int("check_run_id")
    for run in request.repo.check_runs:
        if run.id == run_id:
            return run
    raise not_found()


@route("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
def get_check_run(request: Request) -> Response:
    return Response(200, request.shapes.check_run(request.repo, find_check_run(request)))


@route("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
def update_check_run(request: Request) -> Response:
    with request.store.lock:
        run = find_check_run(request)
        fields = check_run_fields(request)
        if "name" in (request.body or {}):
            run.name = request.body["name"]
        for key, value in fields.items():
            setattr(run, key, value)
        if "conclusion" in fields and "status" not in fields:
            run.status = "completed"
        if run.status == "completed":
            if not run.conclusion:
                raise unprocessable("Conclusion is required when status is completed.")
            run.completed_at = run.completed_at or request.store.now()
        request.repo.auto_merge_due(run.head_sha)
    return Response(200, request.shapes.check_run(request.repo, run))


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs")
def list_check_runs(request: Request) -> Response:
    repo, query = request.repo, request.query
    runs = repo.check_runs_for(request.params["ref"])
    if query.get("check_name"):
        runs = [r for r in runs if r.name == query["check_name"]]
    if query.get("status"):
        runs = [r for r in runs if r.status == query["status"]]
    if query.get("filter", "latest") == "latest":  # the most recent run per name (runs are newest first)
        latest: dict[str, CheckRun] = {}
        for run in runs:
            latest.setdefault(run.name, run)
        runs = list(latest.values())
    return paginate(request, runs, lambda chunk: [request.shapes.check_run(repo, r) for r in chunk], wrap="check_runs")
