"""Routing on OpenAPI path templates, requests, responses and GitHub-style pagination."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlencode

from .apps import Credential
from .errors import unprocessable
from .shapes import Shapes
from .state import Repo, Store

T = TypeVar("T")
# Parameters that may hold slashes (branch and ref names, ``base...head``); the rest are one segment.
MULTI_SEGMENT = frozenset({"ref", "branch", "basehead"})


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    params: dict[str, str]
    store: Store
    shapes: Shapes
    base_url: str
    template: str
    credential: Credential | None = None

    @property
    def actor(self) -> str | None:
        """Who writes are attributed to: an installation's bot, or None for the stub's user."""
        return self.credential.actor if self.credential is not None else None

    @property
    def repo(self) -> Repo:
        return self.store.repo(self.params["owner"], self.params["repo"])

    def param_int(self, name: str) -> int:
        value = self.params[name]
        if not value.isdigit():
            raise unprocessable(f"{name} must be an integer")
        return int(value)

    def query_int(self, name: str, default: int) -> int:
        value = self.query.get(name, "")
        return int(value) if value.isdigit() else default

    def json_field(self, name: str, default: Any = None) -> Any:
        return self.body.get(name, default) if isinstance(self.body, dict) else default


@dataclass
class Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    regex: re.Pattern[str]
    handler: Handler
    operation: str  # the documented template whose schemas apply (differs from ``template`` for aliases)

    @property
    def weight(self) -> int:
        """Literal characters: the more of the path is fixed, the more specific the route."""
        return len(re.sub(r"\{[^}]+\}", "", self.template))


def compile_template(template: str) -> re.Pattern[str]:
    out, pos = "", 0
    for match in re.finditer(r"\{([^}]+)\}", template):
        out += re.escape(template[pos : match.start()])
        name = match.group(1)
        out += f"(?P<{name}>.+)" if name in MULTI_SEGMENT else f"(?P<{name}>[^/]+)"
        pos = match.end()
    return re.compile("^" + out + re.escape(template[pos:]) + "$")


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []

    def add(self, method: str, template: str, handler: Handler, operation: str | None = None) -> None:
        self.routes.append(Route(method, template, compile_template(template), handler, operation or template))
        self.routes.sort(key=lambda r: -r.weight)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The most specific route for ``method path``; None when no route has that path and method."""
        for route in self.routes:
            if route.method != method:
                continue
            found = route.regex.match(path)
            if found:
                return route, {k: unquote(v) for k, v in found.groupdict().items()}
        return None

    def path_known(self, path: str) -> bool:
        return any(route.regex.match(path) for route in self.routes)


def route_registrar(routes: list[tuple[str, str, Handler]]) -> Callable[[str, str], Callable[[Handler], Handler]]:
    """A ``@route(method, template)`` decorator that appends to ``routes``."""

    def route(method: str, template: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            routes.append((method, template, handler))
            return handler

        return register

    return route


def paginate(
    request: Request,
    items: Sequence[T],
    render: Callable[[list[T]], list[Any]],
    wrap: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    """One page of ``items`` (``per_page`` ≤ 100, default 30; ``page`` from 1) with GitHub's ``Link`` header.

    ``render`` turns the page's items into JSON. With ``wrap``, the body is ``{"total_count": n, wrap: [...]}``
    (check runs) plus ``extra``.
    """
    per_page = min(max(request.query_int("per_page", 30), 1), 100)
    page = max(request.query_int("page", 1), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    chunk = render(list(items[(page - 1) * per_page : page * per_page]))
    links = []

    def url(number: int) -> str:
        query = dict(request.query) | {"per_page": str(per_page), "page": str(number)}
        return f"{request.base_url}{request.path}?{urlencode(query)}"

    if page > 1:
        links.append(f'<{url(page - 1)}>; rel="prev"')
    if page < last:
        links.append(f'<{url(page + 1)}>; rel="next"')
        links.append(f'<{url(last)}>; rel="last"')
    if page > 1:
        links.append(f'<{url(1)}>; rel="first"')
    headers = {"Link": ", ".join(links)} if links else {}
    body = {"total_count": len(items), wrap: chunk} | (extra or {}) if wrap else chunk
    return Response(200, body, headers)
