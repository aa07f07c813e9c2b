"""``POST /graphql``: the one mutation fleetflow sends, ``enablePullRequestAutoMerge``.

GitHub GraphQL reference (https://docs.github.com/en/graphql/reference/mutations#enablepullrequestautomerge): input
``pullRequestId`` (the PR's node id), ``mergeMethod`` (``MERGE``, ``SQUASH``, ``REBASE``), optional
``authorEmail``, ``clientMutationId``, ``commitBody``, ``commitHeadline``, ``expectedHeadOid``; payload ``actor``,
``clientMutationId``, ``pullRequest``. A refusal comes as GraphQL errors do: HTTP 200, ``data`` with the mutation
``null`` and ``errors`` [{``type``, ``path``, ``locations``, ``message``}]; the messages are GitHub's ("Auto merge is
not allowed for this repository", "Pull request is in clean status", as ``gh pr merge --auto`` relays them).
PyGithub sends it from ``PullRequest.enable_automerge`` (``Requester.graphql_named_mutation``).
"""

from __future__ import annotations

import re
from typing import Any

from .routing import Response
from .shapes import Shapes, node_id
from .state import Store

_MUTATION = re.compile(r"mutation\b[^{]*\{\s*(\w+)\s*\(\s*input\s*:\s*\$input\s*\)")
_METHODS = ("MERGE", "SQUASH", "REBASE")


def _error(name: str, kind: str, message: str) -> Response:
    return Response(200, {"data": {name: None},
                          "errors": [{"type": kind, "path": [name], "locations": [{"line": 1, "column": 1}],
                                      "message": message}]})


def handle(store: Store, shapes: Shapes, body: Any, actor: str) -> Response:
    query = body.get("query") if isinstance(body, dict) else None
    variables = (body.get("variables") or {}) if isinstance(body, dict) else {}
    found = _MUTATION.search(query or "")
    if found is None or found[1] != "enablePullRequestAutoMerge":
        return Response(200, {"errors": [{"message": "the stand-in answers only enablePullRequestAutoMerge"}]})
    name = found[1]
    data = variables.get("input") or {}
    method = data.get("mergeMethod", "MERGE")
    if method not in _METHODS:
        return Response(200, {"errors": [{"message": f"Argument 'mergeMethod' has an invalid value ({method})."}]})
    with store.lock:
        for repo in store.repos.values():
            for pr in repo.pulls.values():
                if node_id("PR", pr.id) == data.get("pullRequestId"):
                    refusal = repo.enable_auto_merge(pr.number, method, actor)
                    if refusal is not None:
                        return _error(name, "UNPROCESSABLE", refusal)
                    user = shapes.user(actor)
                    payload = {"actor": {"avatarUrl": user["avatar_url"], "login": actor,
                                         "resourcePath": f"/{actor}", "url": user["html_url"]},
                               "clientMutationId": data.get("clientMutationId")}
                    return Response(200, {"data": {name: payload}})
    return _error(name, "NOT_FOUND", f"Could not resolve to a node with the global id of '{data.get('pullRequestId')}'")
