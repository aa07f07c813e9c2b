"""Real-shaped GitHub webhook payloads (what ``$GITHUB_EVENT_PATH`` holds in a workflow run).

Every builder fills each field GitHub's webhook schema requires (``tests/ghstub/openapi-subset.json``,
``x-webhooks``) with realistic values; ``tests/test_routing.py`` validates them. ``api`` is the REST base
(``https://api.github.com`` by default, the stand-in server's URL in end-to-end tests) and ``clone_url`` where
the repository can be cloned (a ``file://`` bare repo in tests).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from dataclasses import dataclass
from typing import Any

from tests.ghstub.shapes import REPO_URL_TEMPLATES

Json = dict[str, Any]
WHEN = "2026-03-01T08:00:00Z"
WHEN_EPOCH = 1772352000  # WHEN as a unix timestamp (push payloads carry integer repository times)
ZERO_SHA = "0" * 40
SCHEMAS = {  # builder name → x-webhooks key in the OpenAPI subset
    "push_event": "push",
    "status_event": "status",
    "pull_request_closed_event": "pull-request-closed",
    "pull_request_opened_event": "pull-request-opened",
    "repository_dispatch_event": "repository-dispatch-sample.collected",
    "workflow_dispatch_event": "workflow-dispatch",
}


def _node_id(kind: str, ident: int | str) -> str:
    return f"{kind}_" + base64.b64encode(f"{kind}:{ident}".encode()).decode().rstrip("=")


def _ident(text: str) -> int:
    return zlib.crc32(text.encode()) % 900_000_000 + 100_000


def fake_sha(seed: str) -> str:
    """A deterministic 40-hex sha for commits that need not exist."""
    return hashlib.sha1(seed.encode()).hexdigest()


@dataclass(frozen=True)
class Site:
    """Where URLs in a payload point: GitHub itself, or the stand-in server."""

    api: str = "https://api.github.com"
    html: str = "https://github.com"

    @classmethod
    def of(cls, api: str | None) -> Site:
        if api is None or api.rstrip("/") == cls.api:
            return cls()
        base = api.rstrip("/")
        return cls(api=base, html=base)


def user(login: str, api: str | None = None, kind: str = "User") -> Json:
    """``simple-user`` (``sender``, ``owner``, PR ``user``)."""
    site = Site.of(api)
    uid, url = _ident(login), f"{site.api}/users/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": _node_id("MDQ6VXNlcg", uid),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{site.html}/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


_REPO_URLS = REPO_URL_TEMPLATES


def repository(full_name: str, api: str | None = None, *, clone_url: str | None = None,
               default_branch: str = "main", push_form: bool = False) -> Json:
    """The ``repository`` object of a webhook. ``push_form``: a push payload's variant (integer times, an owner
    with ``name``/``email``, ``stargazers``/``master_branch``)."""
    site = Site.of(api)
    owner_login, name = full_name.split("/", 1)
    rid, url, html = _ident(full_name), f"{site.api}/repos/{full_name}", f"{site.html}/{full_name}"
    owner = user(owner_login, api, kind="Organization")
    body: Json = {
        "id": rid,
        "node_id": _node_id("R_kgDO", rid),
        "name": name,
        "full_name": full_name,
        "private": True,
        "owner": owner,
        "html_url": html,
        "description": f"{name} (fleetflow)",
        "fork": False,
        "url": url,
        **{key: url + suffix for key, suffix in _REPO_URLS.items()},
        "created_at": "2025-11-03T09:12:44Z",
        "updated_at": WHEN,
        "pushed_at": WHEN,
        "git_url": f"git://{site.html.split('://', 1)[1]}/{full_name}.git",
        "ssh_url": f"git@{site.html.split('://', 1)[1].split('/', 1)[0]}:{full_name}.git",
        "clone_url": clone_url or f"{html}.git",
        "svn_url": html,
        "homepage": None,
        "size": 412,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": "Jinja",
        "has_issues": True,
        "has_projects": False,
        "has_downloads": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": None,
        "allow_forking": False,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": ["gitops", "fleet"],
        "visibility": "private",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": default_branch,
        "custom_properties": {},
    }
    if push_form:
        body.update(
            created_at=WHEN_EPOCH - 10_000_000,
            pushed_at=WHEN_EPOCH,
            owner=owner | {"name": owner_login, "email": None},
            stargazers=0,
            master_branch=default_branch,
            organization=owner_login,
        )
    return body


def installation(ident: int = 51_234_567) -> Json:
    """``simple-installation`` (present when a GitHub App delivers the event)."""
    return {"id": ident, "node_id": _node_id("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", ident)}


def _person(name: str) -> Json:
    login = name.lower().replace(" ", "-")
    return {"name": name, "email": f"{login}@users.noreply.github.com", "username": login}


def push_commit(full_name: str, sha: str, message: str, *, api: str | None = None, author: str = "Ada Lovelace",
                added: list[str] | None = None, modified: list[str] | None = None,
                removed: list[str] | None = None) -> Json:
    """One entry of a push payload's ``commits`` (also its ``head_commit``)."""
    site = Site.of(api)
    person = _person(author) | {"date": "2026-03-01T08:00:00+00:00"}
    return {
        "id": sha,
        "tree_id": fake_sha(f"tree:{sha}"),
        "distinct": True,
        "message": message,
        "timestamp": "2026-03-01T08:00:00+00:00",
        "url": f"{site.html}/{full_name}/commit/{sha}",
        "author": person,
        "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow",
                      "date": "2026-03-01T08:00:00+00:00"},
        "added": added or [],
        "removed": removed or [],
        "modified": modified if modified is not None else ["README.md"],
    }


def push_event(repo: str, ref: str, before: str, after: str, *, api: str | None = None,
               clone_url: str | None = None, commits: list[Json] | None = None, message: str = "change",
               pusher: str = "Ada Lovelace", sender: str = "ada", created: bool = False, deleted: bool = False,
               forced: bool = False, base_ref: str | None = None, with_installation: bool = False) -> Json:
    """``push`` (``webhook-push``). Without ``commits``, one commit ``after`` with ``message``; a deletion has
    no commits and a null ``head_commit``."""
    site = Site.of(api)
    if commits is None:
        commits = [] if deleted else [push_commit(repo, after, message, api=api)]
    if created:
        compare = f"{site.html}/{repo}/commit/{after[:12]}"
    else:
        compare = f"{site.html}/{repo}/compare/{before[:12]}...{(ZERO_SHA if deleted else after)[:12]}"
    body: Json = {
        "ref": ref,
        "before": before,
        "after": ZERO_SHA if deleted else after,
        "repository": repository(repo, api, clone_url=clone_url, push_form=True),
        "pusher": {"name": pusher.lower().replace(" ", "-"), "email": _person(pusher)["email"]},
        "sender": user(sender, api),
        "created": created,
        "deleted": deleted,
        "forced": forced,
        "base_ref": base_ref,
        "compare": compare,
        "commits": commits,
        "head_commit": commits[-1] if commits else None,
    }
    if with_installation:
        body["installation"] = installation()
    return body


def status_event(repo: str, sha: str, context: str, state: str, branches: list[str], *, api: str | None = None,
                 clone_url: str | None = None, description: str | None = None, target_url: str | None = None,
                 sender: str = "flux-bot", message: str = "fleetflow: promote") -> Json:
    """``status`` (``webhook-status``): a commit status was posted on ``sha``, which is the tip of ``branches``."""
    site = Site.of(api)
    url, html = f"{site.api}/repos/{repo}", f"{site.html}/{repo}"
    sid = _ident(f"{repo}:{sha}:{context}:{state}")
    committer = {"name": "fleetflow", "email": "fleetflow@users.noreply.github.com", "date": WHEN}
    parent = fake_sha(f"parent:{sha}")
    return {
        "id": sid,
        "sha": sha,
        "name": repo,
        "target_url": target_url,
        "avatar_url": "https://avatars.githubusercontent.com/u/9919?v=4",
        "context": context,
        "description": description if description is not None else f"{context}: {state}",
        "state": state,
        "commit": {
            "sha": sha,
            "node_id": _node_id("C_kwDO", sha),
            "commit": {
                "author": committer,
                "committer": committer,
                "message": message,
                "tree": {"sha": fake_sha(f"tree:{sha}"), "url": f"{url}/git/trees/{fake_sha(f'tree:{sha}')}"},
                "url": f"{url}/git/commits/{sha}",
                "comment_count": 0,
                "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
                                 "verified_at": None},
            },
            "url": f"{url}/commits/{sha}",
            "html_url": f"{html}/commit/{sha}",
            "comments_url": f"{url}/commits/{sha}/comments",
            "author": None,
            "committer": None,
            "parents": [{"sha": parent, "url": f"{url}/commits/{parent}", "html_url": f"{html}/commit/{parent}"}],
        },
        "branches": [
            {"name": name, "commit": {"sha": sha, "url": f"{url}/commits/{sha}"}, "protected": False}
            for name in branches
        ],
        "created_at": WHEN,
        "updated_at": WHEN,
        "repository": repository(repo, api, clone_url=clone_url),
        "sender": user(sender, api, kind="Bot" if sender.endswith("[bot]") else "User"),
    }


def pull_request_closed_event(repo: str, number: int, head: str, base: str, merged: bool, *,
                              api: str | None = None, clone_url: str | None = None, title: str | None = None,
                              body: str | None = None, head_sha: str | None = None, base_sha: str | None = None,
                              merge_commit_sha: str | None = None, head_repo: str | None = None,
                              sender: str = "ada") -> Json:
    """``pull_request`` with action ``closed`` (``webhook-pull-request-closed``). ``head_repo``: a fork's full name
    (default: the same repository)."""
    site = Site.of(api)
    owner = repo.split("/", 1)[0]
    url, html = f"{site.api}/repos/{repo}", f"{site.html}/{repo}"
    pr_url, pr_html, issue = f"{url}/pulls/{number}", f"{html}/pull/{number}", f"{url}/issues/{number}"
    head_sha = head_sha or fake_sha(f"head:{repo}:{number}")
    base_sha = base_sha or fake_sha(f"base:{repo}:{number}")
    merge_sha = (merge_commit_sha or fake_sha(f"merge:{repo}:{number}")) if merged else None
    the_repo = repository(repo, api, clone_url=clone_url)
    source = repository(head_repo, api) if head_repo else the_repo
    author = user("fleetflow[bot]", api, kind="Bot")
    pr_id = _ident(f"{repo}#{number}")

    def side(ref: str, sha: str, where: Json) -> Json:
        return {"label": f"{where['owner']['login']}:{ref}", "ref": ref, "sha": sha, "user": where["owner"],
                "repo": where}

    pull = {
        "url": pr_url,
        "id": pr_id,
        "node_id": _node_id("PR_kwDO", pr_id),
        "html_url": pr_html,
        "diff_url": f"{pr_html}.diff",
        "patch_url": f"{pr_html}.patch",
        "issue_url": issue,
        "commits_url": f"{pr_url}/commits",
        "review_comments_url": f"{pr_url}/comments",
        "review_comment_url": f"{url}/pulls/comments{{/number}}",
        "comments_url": f"{issue}/comments",
        "statuses_url": f"{url}/statuses/{head_sha}",
        "number": number,
        "state": "closed",
        "locked": False,
        "title": title if title is not None else f"fleetflow: promote to {base}",
        "user": author,
        "body": body if body is not None else f"Promotion to `{base}`.\n\n<!-- fleetflow -->\n",
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": "2026-03-01T07:40:00Z",
        "updated_at": WHEN,
        "closed_at": WHEN,
        "merged_at": WHEN if merged else None,
        "merge_commit_sha": merge_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": side(head, head_sha, source),
        "base": side(base, base_sha, the_repo),
        "_links": {
            "self": {"href": pr_url},
            "html": {"href": pr_html},
            "issue": {"href": issue},
            "comments": {"href": f"{issue}/comments"},
            "review_comments": {"href": f"{pr_url}/comments"},
            "review_comment": {"href": f"{url}/pulls/comments{{/number}}"},
            "commits": {"href": f"{pr_url}/commits"},
            "statuses": {"href": f"{url}/statuses/{head_sha}"},
        },
        "author_association": "NONE",
        "auto_merge": None,
        "draft": False,
        "merged": merged,
        "mergeable": None,
        "rebaseable": None,
        "mergeable_state": "unknown",
        "merged_by": user(sender, api) if merged else None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 12,
        "deletions": 3,
        "changed_files": 2,
    }
    return {
        "action": "closed",
        "number": number,
        "pull_request": pull,
        "repository": the_repo,
        "organization": _organization(owner, site),
        "sender": user(sender, api),
    }


def pull_request_opened_event(repo: str, number: int, head: str, base: str, *, api: str | None = None,
                              clone_url: str | None = None, title: str | None = None, head_sha: str | None = None,
                              base_sha: str | None = None, sender: str = "ada") -> Json:
    """``pull_request`` with action ``opened`` (``webhook-pull-request-opened``): a person's pull request, open."""
    event = pull_request_closed_event(repo, number, head, base, False, api=api, clone_url=clone_url,
                                      title=title if title is not None else f"Change {base}", body="",
                                      head_sha=head_sha, base_sha=base_sha, sender=sender)
    pull = event["pull_request"]
    pull.update({"state": "open", "closed_at": None, "merged_at": None, "merge_commit_sha": None,
                 "user": user(sender, api), "author_association": "MEMBER"})
    event["action"] = "opened"
    return event


def _organization(login: str, site: Site) -> Json:
    oid, url = _ident(login), f"{site.api}/orgs/{login}"
    return {
        "login": login,
        "id": oid,
        "node_id": _node_id("O_kgDO", oid),
        "url": url,
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events",
        "hooks_url": f"{url}/hooks",
        "issues_url": f"{url}/issues",
        "members_url": f"{url}/members{{/member}}",
        "public_members_url": f"{url}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{oid}?v=4",
        "description": "",
    }


def repository_dispatch_event(repo: str, action: str, client_payload: Json | None, *, api: str | None = None,
                              clone_url: str | None = None, branch: str = "main",
                              sender: str = "fleetflow[bot]") -> Json:
    """``repository_dispatch`` (``webhook-repository-dispatch-sample``): what ``POST /repos/{repo}/dispatches``
    with ``event_type = action`` delivers."""
    return {
        "action": action,
        "branch": branch,
        "client_payload": client_payload,
        "repository": repository(repo, api, clone_url=clone_url, default_branch=branch),
        "sender": user(sender, api, kind="Bot" if sender.endswith("[bot]") else "User"),
        "installation": installation(),
    }


def workflow_dispatch_event(repo: str, ref: str, inputs: Json | None, *, api: str | None = None,
                            clone_url: str | None = None, workflow: str = ".github/workflows/fleetflow.yml",
                            sender: str = "ada") -> Json:
    """``workflow_dispatch`` (``webhook-workflow-dispatch``): a person ran the workflow by hand. Inputs arrive
    as strings (booleans too), as GitHub sends them."""
    return {
        "inputs": inputs,
        "ref": ref,
        "repository": repository(repo, api, clone_url=clone_url),
        "organization": _organization(repo.split("/", 1)[0], Site.of(api)),
        "sender": user(sender, api),
        "workflow": workflow,
    }


def schedule_event(repo: str, cron: str = "*/15 * * * *", *, api: str | None = None,
                   workflow: str = ".github/workflows/fleetflow.yml") -> Json:
    """``schedule``: not a webhook (no schema in the subset); Actions gives the cron line and the workflow path,
    plus the repository like every Actions event."""
    return {"schedule": cron, "workflow": workflow, "repository": repository(repo, api)}
