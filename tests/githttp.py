"""A git smart-HTTP server on 127.0.0.1 for tests: git's own ``git http-backend`` (a CGI program, see git's
``Documentation/git-http-backend.adoc``) behind a WSGI server, with HTTP basic authentication as GitHub asks for
a token (user ``x-access-token``, password the token) and a count of the ``fetch`` commands it served.

It stands in for GitHub's git endpoint where credentials and request counts matter (partial clones, blobs fetched
by id); the repositories are served from ``root`` as they are (configure them with
:func:`fleetflow.forge.git.serve_partial_clones` to allow ``--filter``)."""

from __future__ import annotations

import base64
import gzip
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class GitHttp:
    """Serves ``root/<name>`` at ``http://127.0.0.1:<port>/<name>``; every request needs ``user:token``."""

    root: Path
    user: str = "x-access-token"
    token: str = "s3cret-token"
    fetches: list[bytes] = field(default_factory=list)  # the body of each protocol-v2 ``command=fetch`` request
    refused: int = 0  # requests without the right credentials
    # service ("git-receive-pack": pushes, "git-upload-pack": fetches) -> the text/plain body of a 403 for it, as
    # GitHub answers a token that may not do it (git prints such a body as "remote: ..." lines: remote-curl.c's
    # show_http_message, from git's "remote-curl: show server content on http errors", Jeff King, 2013)
    denied: dict[str, str] = field(default_factory=dict)
    bytes_sent: int = 0  # response bytes of upload-pack requests (what a fetch downloads)
    _server: WSGIServer | None = None

    def __enter__(self) -> GitHttp:
        self._server = make_server("127.0.0.1", 0, self._app, handler_class=_Quiet)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def url(self, name: str, *, credentials: bool = True) -> str:
        assert self._server is not None
        auth = f"{self.user}:{self.token}@" if credentials else ""
        return f"http://{auth}127.0.0.1:{self._server.server_port}/{name}"

    def _app(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        scheme, _, given = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        expected = base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
        if scheme.lower() != "basic" or given.strip() != expected:  # the scheme is case-insensitive (RFC 7235)
            self.refused += 1
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')])
            return [b"credentials needed\n"]
        for service, message in self.denied.items():
            if environ["PATH_INFO"].endswith(f"/{service}") or f"service={service}" in environ.get("QUERY_STRING", ""):
                start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
                return [message.encode()]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        plain = gzip.decompress(body) if environ.get("HTTP_CONTENT_ENCODING") == "gzip" else body
        upload = environ["PATH_INFO"].endswith("/git-upload-pack")
        if upload and b"command=fetch" in plain:
            self.fetches.append(plain)
        env = {
            "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH": "/usr/bin:/bin",
            "REQUEST_METHOD": environ["REQUEST_METHOD"], "PATH_INFO": environ["PATH_INFO"],
            "QUERY_STRING": environ.get("QUERY_STRING", ""), "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(length), "REMOTE_USER": self.user, "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
            "HTTP_CONTENT_ENCODING": environ.get("HTTP_CONTENT_ENCODING", ""),
        }
        proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=False)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        status, headers = "200 OK", []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name, value.strip()))
        if upload:
            self.bytes_sent += len(payload)
        start_response(status, headers)
        return [payload]
