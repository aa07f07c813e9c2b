"""Repository, git ref, commit, compare, dispatch and rate-limit endpoints."""

from __future__ import annotations

import subprocess

from .errors import ApiError, not_found, unprocessable
from .gitbackend import ZERO_SHA, is_safe_rev
from .routing import Handler, Request, Response, paginate, route_registrar
from .state import Dispatch, Repo

ROUTES: list[tuple[str, str, Handler]] = []
route = route_registrar(ROUTES)


def valid_ref_name(refname: str) -> bool:
    if not refname.startswith("refs/") or refname.count("/") < 2 or not is_safe_rev(refname):
        return False
    return subprocess.run(["git", "check-ref-format", refname], capture_output=True).returncode == 0


def existing_object(repo: Repo, sha: object) -> str:
    if not isinstance(sha, str) or repo.git.object_type(sha) is None or len(sha) != 40:
        raise unprocessable("Object does not exist")
    return sha


@route("GET", "/rate_limit")
def get_rate_limit(request: Request) -> Response:
    core = request.store.rate.snapshot()
    search = {"limit": 30, "remaining": 30, "reset": core["reset"], "used": 0}
    graphql = {"limit": 5000, "remaining": 5000, "reset": core["reset"], "used": 0}
    return Response(200, {"resources": {"core": core, "search": search, "graphql": graphql}, "rate": core})


@route("GET", "/repos/{owner}/{repo}")
def get_repo(request: Request) -> Response:
    return Response(200, request.shapes.full_repository(request.repo))


@route("PATCH", "/repos/{owner}/{repo}")
def update_repo(request: Request) -> Response:
    """"Update a repository": ``default_branch`` must name an existing branch (GitHub answers 422 otherwise);
    ``allow_auto_merge`` where the stand-in's repository models it. Other fields are accepted and ignored."""
    repo = request.repo
    branch = request.json_field("default_branch")
    if branch is not None:
        if not isinstance(branch, str) or not is_safe_rev(branch) or repo.branch_sha(branch) is None:
            raise unprocessable("Validation Failed")
        repo.default_branch = branch
    allow = request.json_field("allow_auto_merge")
    if isinstance(allow, bool) and hasattr(repo, "allow_auto_merge"):
        repo.allow_auto_merge = allow
    return Response(200, request.shapes.full_repository(repo))


@route("GET", "/repos/{owner}/{repo}/branches/{branch}")
def get_branch(request: Request) -> Response:
    repo, name = request.repo, request.params["branch"]
    sha = repo.branch_sha(name) if is_safe_rev(name) else None
    if sha is None:
        raise not_found("Branch not found")
    return Response(200, request.shapes.branch(repo, name, repo.git.commit(sha)))


@route("GET", "/repos/{owner}/{repo}/rules/branches/{branch}")
def get_branch_rules(request: Request) -> Response:
    """"Get rules for a branch": the branch need not exist; only active rulesets' rules; paginated (``per_page``
    default 30, at most 100)."""
    repo = request.repo
    return paginate(request, request.shapes.ruleset_rules(repo, request.params["branch"]), lambda page: page)


@route("GET", "/repos/{owner}/{repo}/rulesets")
def list_rulesets(request: Request) -> Response:
    """"Get all repository rulesets": ``targets`` ("A comma-separated list of rule targets to filter by"),
    ``includes_parents`` (default true: the organization's rulesets too), paginated; anyone with read access."""
    repo = request.repo
    targets = {t for t in request.query.get("targets", "").split(",") if t}
    parents = request.query.get("includes_parents", "true") != "false"
    chosen = [r for r in repo.ruleset_list
              if (not targets or r.target in targets) and (parents or not r.organization)]
    return paginate(request, chosen, lambda page: [request.shapes.repository_ruleset(repo, r, detailed=False)
                                                    for r in page])


@route("GET", "/repos/{owner}/{repo}/rulesets/{ruleset_id}")
def get_ruleset(request: Request) -> Response:
    """"Get a repository ruleset": an organization's only with ``includes_parents`` (default true); 404 for an
    unknown id."""
    repo, ident = request.repo, request.param_int("ruleset_id")
    parents = request.query.get("includes_parents", "true") != "false"
    for ruleset in repo.ruleset_list:
        if ruleset.id == ident and (parents or not ruleset.organization):
            return Response(200, request.shapes.repository_ruleset(repo, ruleset, detailed=True))
    raise not_found()


@route("GET", "/repos/{owner}/{repo}/environments")
def list_environments(request: Request) -> Response:
    """"List environments": ``{total_count, environments}``, paginated (``per_page`` default 30, at most 100),
    for anyone with read access."""
    repo = request.repo
    names = sorted(repo.environments)
    return paginate(request, names, lambda page: [request.shapes.environment(repo, n, names.index(n)) for n in page],
                    wrap="environments")


@route("GET", "/repos/{owner}/{repo}/actions/permissions/workflow")
def get_workflow_permissions(request: Request) -> Response:
    """"Get default workflow permissions for a repository" (``actions-get-default-workflow-permissions``): the
    repository's "Workflow permissions" and "Allow GitHub Actions to create and approve pull requests"
    (``can_approve_pull_request_reviews``). GitHub asks for Administration: read (a GitHub App's installation token,
    a fine-grained token; the ``repo`` scope for a classic one): an installation token of the stand-in's apps
    without it gets the 403 GitHub gives, "Resource not accessible by integration", with the permission it wanted
    in ``X-Accepted-GitHub-Permissions`` (https://docs.github.com/en/rest/actions/permissions)."""
    repo = request.repo
    minted = request.credential.installation_token if request.credential is not None else None
    if minted is not None and minted.permissions.get("administration") not in ("read", "write"):
        raise ApiError(403, "Resource not accessible by integration",
                       documentation_url="https://docs.github.com/rest/actions/permissions"
                                         "#get-default-workflow-permissions-for-a-repository",
                       headers={"X-Accepted-GitHub-Permissions": "administration=read"})
    return Response(200, {"default_workflow_permissions": repo.default_workflow_permissions,
                          "can_approve_pull_request_reviews": repo.actions_can_create_pulls})


@route("GET", "/repos/{owner}/{repo}/git/ref/{ref}")
def get_ref(request: Request) -> Response:
    repo, refname = request.repo, "refs/" + request.params["ref"]
    sha = repo.git.ref_sha(refname) if is_safe_rev(refname) else None
    if sha is None:
        raise not_found()
    return Response(200, request.shapes.git_ref(repo, refname, sha))


@route("GET", "/repos/{owner}/{repo}/git/matching-refs/{ref}")
def list_matching_refs(request: Request) -> Response:
    repo = request.repo
    refs = sorted(repo.git.refs("refs/" + request.params["ref"]).items())
    return paginate(request, refs, lambda chunk: [request.shapes.git_ref(repo, name, sha) for name, sha in chunk])


@route("POST", "/repos/{owner}/{repo}/git/refs")
def create_ref(request: Request) -> Response:
    repo = request.repo
    refname = request.json_field("ref")
    if not isinstance(refname, str) or not valid_ref_name(refname):
        raise unprocessable("Reference name must start with 'refs/' and have at least two slashes.")
    sha = existing_object(repo, request.json_field("sha"))
    with request.store.lock:
        if repo.git.ref_sha(refname) is not None:
            raise unprocessable("Reference already exists")
        repo.git.update_ref(refname, sha, ZERO_SHA)
    body = request.shapes.git_ref(repo, refname, sha)
    return Response(201, body, {"Location": body["url"]})


@route("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}")
def update_ref(request: Request) -> Response:
    repo, refname = request.repo, "refs/" + request.params["ref"]
    sha = existing_object(repo, request.json_field("sha"))
    with request.store.lock:
        old = repo.git.ref_sha(refname) if is_safe_rev(refname) else None
        if old is None:
            raise unprocessable("Reference does not exist")
        if not request.json_field("force", False) and not repo.git.is_ancestor(old, sha):
            raise unprocessable("Update is not a fast forward")
        repo.git.update_ref(refname, sha, old)
    return Response(200, request.shapes.git_ref(repo, refname, sha))


@route("DELETE", "/repos/{owner}/{repo}/git/refs/{ref}")
def delete_ref(request: Request) -> Response:
    repo, refname = request.repo, "refs/" + request.params["ref"]
    with request.store.lock:
        old = repo.git.ref_sha(refname) if is_safe_rev(refname) else None
        if old is None:
            raise unprocessable("Reference does not exist")
        repo.git.delete_ref(refname, old)
    return Response(204)


@route("GET", "/repos/{owner}/{repo}/commits")
def list_commits(request: Request) -> Response:
    repo = request.repo
    start = repo.git.resolve(request.query.get("sha") or repo.default_branch)
    if start is None:
        if not repo.git.refs("refs/heads/"):
            raise ApiError(409, "Git Repository is empty.")
        raise not_found()
    shas = repo.git.rev_list(start, path=request.query.get("path") or None)
    return paginate(
        request, shas, lambda chunk: [request.shapes.commit(repo, info) for info in repo.git.commits(chunk)]
    )


@route("GET", "/repos/{owner}/{repo}/commits/{ref}")
def get_commit(request: Request) -> Response:
    repo = request.repo
    info = repo.git.commit(repo.commit_sha(request.params["ref"]))
    files = repo.git.diff(info.parents[0] if info.parents else None, info.sha)
    return Response(200, request.shapes.commit(repo, info, files))


@route("GET", "/repos/{owner}/{repo}/compare/{basehead}")
def compare(request: Request) -> Response:
    repo, basehead = request.repo, request.params["basehead"]
    base_name, sep, head_name = basehead.partition("...")
    if not sep:
        base_name, sep, head_name = basehead.partition("..")
    base, head = repo.git.resolve(base_name), repo.git.resolve(head_name)
    if not sep or base is None or head is None:
        raise not_found()
    merge_base = repo.git.merge_base(base, head)
    if merge_base is None:
        raise not_found(f"No common ancestor between {base_name} and {head_name}.")
    ahead = repo.git.rev_list(head, merge_base)
    behind = repo.git.rev_list(base, merge_base)
    status = "identical" if base == head else "ahead" if not behind else "behind" if not ahead else "diverged"
    shapes, api = request.shapes, f"{request.base_url}/repos/{repo.full_name}"
    html = f"{request.base_url}/{repo.full_name}/compare/{basehead}"
    commits = repo.git.commits(list(reversed(ahead))[:250])
    body = {
        "url": f"{api}/compare/{basehead}",
        "html_url": html,
        "permalink_url": f"{request.base_url}/{repo.full_name}/compare/{base}...{head}",
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "base_commit": shapes.commit(repo, repo.git.commit(base)),
        "merge_base_commit": shapes.commit(repo, repo.git.commit(merge_base)),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [shapes.commit(repo, info) for info in commits],
        "files": [shapes.diff_entry(repo, head, change) for change in repo.git.diff(merge_base, head)],
    }
    return Response(200, body)


@route("POST", "/repos/{owner}/{repo}/dispatches")
def create_dispatch(request: Request) -> Response:
    repo = request.repo
    payload = request.json_field("client_payload") or {}
    dispatch = Dispatch(repo.owner, repo.name, request.json_field("event_type"), payload, request.store.now())
    with request.store.lock:
        repo.dispatches.append(dispatch)
    return Response(204)
