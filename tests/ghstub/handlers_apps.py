"""GitHub App endpoints, authenticated by the app's JWT (the server verifies it: ``request.credential.app``)."""

from __future__ import annotations

from .apps import NOT_ACCESSIBLE, App
from .errors import ApiError, not_found, unprocessable
from .routing import Handler, Request, Response, route_registrar

ROUTES: list[tuple[str, str, Handler]] = []
route = route_registrar(ROUTES)
INSTALLATION_DOCS = "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app"


def authenticated_app(request: Request) -> App:
    app = request.credential.app if request.credential is not None else None
    if app is None:  # the server verifies the JWT of every app operation before dispatching
        raise AssertionError(f"{request.template} dispatched without an app credential")
    return app


@route("GET", "/repos/{owner}/{repo}/installation")
def get_repo_installation(request: Request) -> Response:
    app = authenticated_app(request)
    owner, name = request.params["owner"], request.params["repo"]
    try:  # an unknown repository and one the app is not installed on look alike
        request.store.repo(owner, name)
        installation = request.store.apps.installation_for(app, owner, name)
    except ApiError:
        raise ApiError(404, "Not Found", documentation_url=INSTALLATION_DOCS) from None
    return Response(200, request.shapes.installation(installation, request.store.login))


@route("POST", "/app/installations/{installation_id}/access_tokens")
def create_installation_token(request: Request) -> Response:
    app, store = authenticated_app(request), request.store
    installation_id = request.params["installation_id"]
    installation = store.apps.installations.get(int(installation_id)) if installation_id.isdigit() else None
    if installation is None or installation.app is not app:
        raise not_found()
    names = [str(name) for name in request.json_field("repositories") or []]
    ids = request.json_field("repository_ids") or []
    if ids:
        by_id = {repo.id: repo for repo in store.repos.values() if repo.owner.lower() == installation.account.lower()}
        if not all(i in by_id for i in ids):
            raise unprocessable(NOT_ACCESSIBLE)
        names += [by_id[i].name for i in ids]

    def exists(owner: str, name: str) -> bool:
        return (owner.lower(), name.lower()) in store.repos

    token = store.apps.mint(app, installation.id, names or None, request.json_field("permissions") or None, exists)
    reached = [repo for repo in store.repos.values() if token.covers(repo.owner, repo.name)]
    repos = sorted(reached, key=lambda repo: repo.name.lower())
    return Response(201, request.shapes.installation_token(token, repos))
