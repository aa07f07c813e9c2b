"""``GitHubStub``: a stateful stand-in for GitHub's REST API on 127.0.0.1, for PyGithub and git.

Usage::

    with GitHubStub() as stub:
        repo = stub.create_repo("acme/gitops", source=some_dir)
        gh = Github(base_url=stub.url, auth=Token("x"))
        gh.get_repo("acme/gitops").create_pull(title="t", head="feature", base="main")
        assert stub.count(method="POST") == 1

Every request is recorded (``requests``, ``count``, ``mark``); ``inject`` makes requests fail like GitHub does;
request bodies are checked against the OpenAPI subset (422 when invalid, as GitHub) and, with
``validate_responses``, every response body is checked too (mismatches collect in ``schema_errors``).

GitHub Apps: ``register_app(app_id, public_key_pem, installed_on=[...])``; the app's JWT then finds the
installation (``GET /repos/{owner}/{repo}/installation``) and mints installation tokens
(``POST /app/installations/{id}/access_tokens``) that authenticate later requests (see ``apps``).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from . import graphql, handlers_apps, handlers_checks, handlers_pulls, handlers_repos
from .apps import App, Credential, InstallationToken
from .errors import ApiError
from .faults import Fault, FaultKind, Faults
from .gitbackend import ZERO_SHA, BareRepo
from .openapi import subset
from .operations import ALIASES, APP_OPERATIONS, OPERATIONS
from .routing import Request, Response, Route, Router
from .shapes import Shapes
from .state import Dispatch, Repo, Store


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stub saw it. ``status`` is what the stub answered (or would have, when dropped)."""

    index: int
    method: str
    path: str
    query: dict[str, str]
    status: int
    operation: str | None  # the OpenAPI path template, None when no route matched
    fault: str | None  # the injected fault kind that hit this request
    dropped: bool
    body: Any
    response: Any
    at: float = field(repr=False)
    credential: str | None = None  # what authenticated it: "token", "app 12345", "installation 1001"; None: nothing


# Request forms GitHub accepts but the description no longer documents, mapped to the documented form for
# validation: PyGithub's ``add_to_labels`` posts a bare list of names.
LEGACY_BODIES: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels"): (
        lambda body: {"labels": body} if isinstance(body, list) else body
    ),
}


def build_router() -> Router:
    router = Router()
    routes = (*handlers_repos.ROUTES, *handlers_pulls.ROUTES, *handlers_checks.ROUTES, *handlers_apps.ROUTES)
    for method, template, handler in routes:
        router.add(method, template, handler)
    by_operation = {(method, template): handler for method, template, handler in routes}
    for (method, alias), operation in ALIASES.items():
        router.add(method, alias, by_operation[(method, operation)], operation)
    implemented = {(r.method, r.template) for r in router.routes if r.template == r.operation}
    if implemented != set(OPERATIONS):
        raise AssertionError(f"routes and OPERATIONS differ: {implemented ^ set(OPERATIONS)}")
    return router


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # keep-alive connections must not hold up stop()
    stub: GitHubStub


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 200 ms delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.stub._serve(self)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET


class GitHubStub:
    """The stand-in server. ``start()``/``stop()`` or use it as a context manager."""

    def __init__(
        self,
        root: Path | None = None,
        login: str = "fleetflow-bot",
        token: str | None = None,
        validate_responses: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="ghstub-")) if root is None else root
        self.store = Store(self.root, login, clock)
        self.token = token
        self.validate_responses = validate_responses
        self.faults = Faults()
        self.router = build_router()
        self.schema_errors: list[str] = []
        self.server_errors: list[str] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self.shapes = Shapes("http://127.0.0.1")

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> Self:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.stub = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self.shapes = Shapes(self.url)
        self._thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="ghstub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def login(self) -> str:
        return self.store.login

    # -- state helpers --------------------------------------------------------------------------------------
    def create_repo(
        self,
        full_name: str,
        source: Path | None = None,
        bare: Path | None = None,
        default_branch: str | None = None,
        private: bool = False,
        auto_init: bool = True,
    ) -> Repo:
        """A repository ``owner/name`` backed by a bare git repo.

        ``bare``: use that bare repository in place. ``source``: a git repository (cloned bare) or a plain
        directory (its files become the first commit). Neither: an empty repo, with an empty "Initial commit"
        on the default branch unless ``auto_init=False``.
        """
        owner, name = full_name.split("/")
        path = self.root / "repos" / owner / f"{name}.git"
        if bare is not None:
            git = BareRepo(bare)
        elif source is not None and ((source / ".git").exists() or (source / "objects").is_dir()):
            git = BareRepo.clone_bare(source, path)
        else:
            git = BareRepo.init(path, default_branch or "main")
            if source is not None:
                git.import_tree(source, default_branch or "main", "Initial commit")
            elif auto_init:
                sha = git.write_commit(None, {}, "Initial commit")
                git.update_ref(f"refs/heads/{default_branch or 'main'}", sha, ZERO_SHA)
        branch = default_branch or git.head_branch() or "main"
        return self.store.add_repo(owner, name, git, branch, private)

    def repo(self, full_name: str) -> Repo:
        owner, name = full_name.split("/")
        return self.store.repo(owner, name)

    @property
    def dispatches(self) -> list[Dispatch]:
        """Every ``repository_dispatch`` received, in order, across repositories."""
        with self.store.lock:
            found = [d for repo in self.store.repos.values() for d in repo.dispatches]
        return sorted(found, key=lambda d: d.received_at)

    def env(self, repo: str | None = None) -> dict[str, str]:
        """Environment variables pointing a GitHub client (or an Actions step) at the stub."""
        env = {"GITHUB_API_URL": self.url, "GITHUB_SERVER_URL": self.url, "GITHUB_TOKEN": self.token or "stub-token"}
        if repo:
            env["GITHUB_REPOSITORY"] = repo
        return env

    def person_token(self, login: str) -> str:
        """A token that acts as the person ``login`` (what they write is theirs: a review, a review request taken
        back), for :meth:`client`'s ``token``."""
        return self.store.person_token(login)

    def client(self, retry: Any = None, token: str | None = None, **kwargs: Any) -> Any:
        """A PyGithub client on the stub: ``GithubRetry`` without backoff, and without PyGithub 2's default
        throttling (0.25 s between requests, 1 s between writes) so tests stay fast. ``token``: another
        credential (:meth:`person_token`); the stub's own by default."""
        from github import Auth, Github, GithubRetry

        if retry is None:
            retry = GithubRetry(total=3, backoff_factor=0, secondary_rate_wait=1)
        kwargs = {"seconds_between_requests": 0, "seconds_between_writes": 0} | kwargs
        return Github(base_url=self.url, auth=Auth.Token(token or self.token or "stub-token"), retry=retry, **kwargs)

    # -- GitHub Apps ----------------------------------------------------------------------------------------
    def register_app(
        self,
        app_id: int,
        public_key_pem: str | bytes,
        installed_on: Iterable[str] = (),
        slug: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> int | None:
        """Register a GitHub App by its RSA public key (PEM; a private key's PEM is accepted too, for its public
        half) and install it on ``installed_on``: ``owner/name`` entries (selected repositories) or an ``owner``
        (all its repositories), of one account. Returns the installation id (None when installed nowhere; see
        ``install_app`` for more accounts). ``slug``: default ``stub-app-<id>``; its installation acts as
        ``<slug>[bot]``. ``permissions``: the installation's (default: what fleetflow needs)."""
        self.store.apps.register(int(app_id), public_key_pem, slug, permissions)
        entries = list(installed_on)
        return self.install_app(app_id, entries) if entries else None

    def install_app(self, app_id: int, installed_on: Iterable[str]) -> int:
        """Install a registered app on one more account (or widen its installation there); the installation id."""
        return self.store.apps.install(int(app_id), list(installed_on)).id

    def uninstall_app(self, installation_id: int) -> None:
        """Remove an installation: lookups answer 404, its tokens 401."""
        self.store.apps.uninstall(installation_id)

    def app(self, app_id: int) -> App:
        return self.store.apps.apps[int(app_id)]

    @property
    def installation_tokens(self) -> list[InstallationToken]:
        """Every installation token minted, oldest first."""
        with self.store.apps.lock:
            return list(self.store.apps.tokens.values())

    # -- request accounting ---------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def mark(self) -> int:
        """A position in the request log, for ``count(since=...)``."""
        with self._lock:
            return len(self._requests)

    def requests_since(self, since: int = 0) -> list[RecordedRequest]:
        with self._lock:
            return self._requests[since:]

    def count(
        self, since: int = 0, method: str | None = None, path: str | None = None, status: int | None = None
    ) -> int:
        """Requests since a ``mark()``, optionally only one method, a path regex (``re.search``), a status."""
        pattern = re.compile(path) if path else None
        return sum(
            1
            for r in self.requests_since(since)
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.search(r.path))
            and (status is None or r.status == status)
        )

    # -- faults ---------------------------------------------------------------------------------------------
    def inject(
        self,
        method: str,
        path_regex: str,
        kind: FaultKind,
        times: int = 1,
        status: int | None = None,
        retry_after: int = 1,
        reset_after: int = 1,
        accepted_permissions: str | None = None,
    ) -> Fault:
        """Make the next ``times`` requests matching ``method`` (``*``: any) and ``path_regex`` (searched in
        the path, without the query) fail with ``kind``. ``status`` overrides the code (e.g. 429, 503);
        ``retry_after`` is a secondary rate limit's ``Retry-After``, ``reset_after`` how far ahead a primary one's
        ``x-ratelimit-reset`` lies, in seconds; ``accepted_permissions``: a ``forbidden`` answer's
        ``X-Accepted-GitHub-Permissions`` (e.g. ``pull_requests=write``)."""
        return self.faults.add(Fault(method, path_regex, kind, times, status, retry_after, reset_after,
                                     accepted_permissions=accepted_permissions))

    def clear_faults(self) -> None:
        self.faults.clear()

    # -- serving --------------------------------------------------------------------------------------------
    def _serve(self, http: _Handler) -> None:
        split = urlsplit(http.path)
        path, query = split.path, dict(parse_qsl(split.query, keep_blank_values=True))
        method = http.command
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length) if length else b""
        request_id = uuid.uuid4().hex[:8].upper() + ":" + uuid.uuid4().hex[:8].upper()
        headers = self.store.rate.hit() | {"X-GitHub-Request-Id": request_id}

        fault = self.faults.take(method, path)
        matched = self.router.match(method, path)
        template = matched[0].operation if matched else None
        body: Any = None
        credential: Credential | None = None
        try:
            body = json.loads(raw) if raw.strip() else None
            if fault is not None and fault.kind != "drop_after":
                owner = matched[1].get("owner") if matched else None
                head = body.get("head", "").rpartition(":")[2] if isinstance(body, dict) else None
                raise fault.error(request_id, owner, head)
            credential = self._authenticate(http.headers.get("Authorization", ""), matched)
            if matched is None and (method, path) == ("POST", "/graphql"):
                with self.store.lock:
                    actor = credential.actor if credential is not None else None
                    response = graphql.handle(self.store, self.shapes, body, actor or self.store.login)
            elif matched is None:
                raise ApiError(404, "Not Found")
            else:
                response = self._dispatch(matched[0], path, query, body, matched[1], credential)
        except json.JSONDecodeError:
            response = Response(400, ApiError(400, "Problems parsing JSON").body())
        except ApiError as error:
            response = Response(error.status, error.body(), error.headers)

        if self.validate_responses and template is not None and fault is None:
            for problem in subset().response_errors(method, template, response.status, response.body):
                self.schema_errors.append(f"{method} {path} -> {response.status}: {problem}")
        dropped = fault is not None and fault.kind == "drop_after"
        with self._lock:
            self._requests.append(
                RecordedRequest(
                    len(self._requests),
                    method,
                    path,
                    query,
                    response.status,
                    template,
                    fault.kind if fault else None,
                    dropped,
                    body,
                    response.body,
                    time.time(),
                    credential.label if credential is not None else None,
                )
            )
        if dropped:
            http.close_connection = True
            http.connection.shutdown(socket.SHUT_RDWR)
            return
        self._write(http, response, headers | response.headers)

    def _authenticate(self, authorization: str, matched: tuple[Route, dict[str, str]] | None) -> Credential | None:
        """An app operation needs the app's JWT; any other takes an installation token the stub minted (for the
        installation's repositories only: 404 elsewhere, as GitHub) or the stub's ``token`` (when set; any
        credential when not)."""
        route, params = matched if matched is not None else (None, {})
        if route is not None and (route.method, route.operation) in APP_OPERATIONS:
            return Credential("app", app=self.store.apps.verify_jwt(authorization))
        value = authorization.split(" ")[-1]
        minted = self.store.apps.token(value) if value else None
        if minted is not None:
            owner, repo = params.get("owner"), params.get("repo")
            if owner and repo and not minted.covers(owner, repo):
                raise ApiError(404, "Not Found")
            return Credential("installation", installation_token=minted)
        if value in self.store.people:
            return Credential("token", person=self.store.people[value])
        if self.token and value != self.token:
            raise ApiError(401, "Bad credentials")
        return Credential("token") if value else None

    def _dispatch(
        self,
        route: Route,
        path: str,
        query: dict[str, str],
        body: Any,
        params: dict[str, str],
        credential: Credential | None = None,
    ) -> Response:
        method, template = route.method, route.operation
        pointer = subset().request_pointer(method, template)
        if pointer is not None and body is not None:
            documented = LEGACY_BODIES.get((method, template), lambda b: b)(body)
            problems = subset().errors(pointer, documented)
            if problems:
                raise ApiError(422, "Invalid request.\n\n" + "\n".join(problems))
        request = Request(method, path, query, body, params, self.store, self.shapes, self.url, template, credential)
        try:
            with self.store.lock:
                return route.handler(request)
        except ApiError:
            raise
        except Exception:
            self.server_errors.append(f"{method} {path}: {traceback.format_exc()}")
            raise ApiError(500, "Server Error (stub bug, see GitHubStub.server_errors)") from None

    @staticmethod
    def _write(http: _Handler, response: Response, headers: dict[str, str]) -> None:
        data = b"" if response.body is None else json.dumps(response.body).encode()
        http.send_response(response.status)
        if response.status != 204:
            http.send_header("Content-Type", "application/json; charset=utf-8")
            http.send_header("Content-Length", str(len(data)))
        http.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for key, value in headers.items():
            http.send_header(key, value)
        http.end_headers()
        if data and response.status != 204:
            http.wfile.write(data)
