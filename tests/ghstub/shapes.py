"""Response bodies in GitHub's shapes, filled with realistic values.

Each function names the ``components/schemas`` entry it produces; ``tests/test_ghstub.py`` checks every
response against the OpenAPI subset. URLs point back at the stub (PyGithub follows them).
"""

from __future__ import annotations

import base64
import zlib
from datetime import datetime
from typing import Any
from urllib.parse import quote

from .apps import Installation, InstallationToken
from .gitbackend import CommitInfo, FileChange
from .state import CheckRun, Comment, CommitStatus, Label, PullRequest, Repo, Ruleset, iso

Json = dict[str, Any]
APP_SLUG = "fleetflow-stub"


def node_id(kind: str, ident: int | str) -> str:
    return f"{kind}_" + base64.b64encode(f"{kind}:{ident}".encode()).decode().rstrip("=")


def git_date(value: str) -> str:
    """git's ``%aI`` (``+00:00``) in GitHub's ``Z`` form."""
    return iso(datetime.fromisoformat(value))



# the URL templates every repository object carries, relative to its API URL (also used by tests/events.py)
REPO_URL_TEMPLATES = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}

class Shapes:
    """Serializers bound to the stub's base URL."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")

    # -- people and apps ------------------------------------------------------------------------------------
    def user(self, login: str, kind: str = "User") -> Json:
        """``simple-user``."""
        uid = zlib.crc32(login.encode()) % 10_000_000 + 1000
        api = f"{self.base}/users/{quote(login)}"
        if login.endswith("[bot]"):  # an app's installation acting: GitHub's bot accounts
            kind = "Bot"
        return {
            "login": login,
            "id": uid,
            "node_id": node_id("U", uid),
            "avatar_url": f"{self.base}/avatars/u/{uid}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.base}/{login}" if kind != "Bot" else f"{self.base}/apps/{login[:-5]}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": kind,
            "user_view_type": "public",
            "site_admin": False,
        }

    def account(self, login: str, store_login: str) -> Json:
        """An account (``simple-user``): the stub's user is a User, anyone else an Organization."""
        return self.user(login, "User" if login == store_login else "Organization")

    def owner(self, repo: Repo) -> Json:
        return self.account(repo.owner, repo.store.login)

    def app(self) -> Json:
        """``integration``: the app that owns check runs created through the stub."""
        return {
            "id": 1,
            "slug": APP_SLUG,
            "node_id": node_id("A", 1),
            "client_id": "Iv1.0000000000000000",
            "owner": self.user("fleetflow", "Organization"),
            "name": "fleetflow stub",
            "description": None,
            "external_url": f"{self.base}/apps/{APP_SLUG}",
            "html_url": f"{self.base}/apps/{APP_SLUG}",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "permissions": {"checks": "write", "contents": "write", "metadata": "read", "statuses": "write"},
            "events": ["check_run", "pull_request", "push", "status"],
        }

    def installation(self, installation: Installation, store_login: str) -> Json:
        """``installation``."""
        account = self.account(installation.account, store_login)
        settings = (
            f"{self.base}/settings/installations/{installation.id}"
            if account["type"] == "User"
            else f"{self.base}/organizations/{installation.account}/settings/installations/{installation.id}"
        )
        app = installation.app
        return {
            "id": installation.id,
            "account": account,
            "repository_selection": installation.repository_selection,
            "access_tokens_url": f"{self.base}/app/installations/{installation.id}/access_tokens",
            "repositories_url": f"{self.base}/installation/repositories",
            "html_url": settings,
            "app_id": app.id,
            "client_id": app.client_id,
            "target_id": account["id"],
            "target_type": account["type"],
            "permissions": dict(installation.permissions),
            "events": list(app.events),
            "created_at": iso(installation.created_at),
            "updated_at": iso(installation.updated_at),
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "app_slug": app.slug,
            "suspended_by": None,
            "suspended_at": None,
        }

    def installation_token(self, token: InstallationToken, repos: list[Repo]) -> Json:
        """``installation-token``; ``repos``: the repositories a ``selected`` token reaches."""
        selection = "all" if token.repositories is None and token.installation.repositories is None else "selected"
        body: Json = {
            "token": token.token,
            "expires_at": iso(token.expires_at),
            "permissions": dict(token.permissions),
            "repository_selection": selection,
        }
        if selection == "selected":
            body["repositories"] = [self.repository(repo) for repo in repos]
        return body

    def team(self, slug: str) -> Json:
        """Fits both ``team`` and ``team-simple``."""
        tid = zlib.crc32(slug.encode()) % 1_000_000 + 1
        api = f"{self.base}/teams/{tid}"
        return {
            "id": tid,
            "node_id": node_id("T", tid),
            "url": api,
            "html_url": f"{self.base}/orgs/teams/{slug}",
            "name": slug,
            "slug": slug,
            "description": None,
            "privacy": "closed",
            "notification_setting": "notifications_enabled",
            "permission": "pull",
            "members_url": f"{api}/members{{/member}}",
            "repositories_url": f"{api}/repos",
            "type": "organization",
            "parent": None,
        }

    # -- repositories ---------------------------------------------------------------------------------------
    def repo_urls(self, repo: Repo) -> Json:
        api = f"{self.base}/repos/{repo.full_name}"
        return {key: api + suffix for key, suffix in REPO_URL_TEMPLATES.items()} | {"url": api}

    def repository(self, repo: Repo) -> Json:
        """``repository`` (also a valid ``minimal-repository``)."""
        html = f"{self.base}/{repo.full_name}"
        tip = repo.branch_sha(repo.default_branch)
        pushed = git_date(repo.git.commit(tip).committer.date) if tip else repo.created_at
        open_prs = sum(1 for pr in repo.pulls.values() if pr.state == "open")
        return {
            "id": repo.id,
            "node_id": node_id("R", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.owner(repo),
            "private": repo.private,
            "visibility": "private" if repo.private else "public",
            "html_url": html,
            "description": None,
            "fork": False,
            **self.repo_urls(repo),
            "git_url": repo.clone_url,
            "ssh_url": repo.clone_url,
            "clone_url": repo.https_clone_url or repo.clone_url,
            "svn_url": html,
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "size": 0,
            "default_branch": repo.default_branch,
            "open_issues": open_prs,
            "open_issues_count": open_prs,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": False,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "license": None,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "pushed_at": pushed,
            "created_at": repo.created_at,
            "updated_at": pushed,
            "permissions": {"admin": True, "maintain": True, "push": True, "triage": True, "pull": True},
        }

    def full_repository(self, repo: Repo) -> Json:
        """``full-repository``."""
        return self.repository(repo) | {
            "allow_merge_commit": True,
            "allow_squash_merge": True,
            "allow_rebase_merge": True,
            "allow_auto_merge": repo.allow_auto_merge,
            "allow_update_branch": False,
            "delete_branch_on_merge": repo.delete_branch_on_merge,
            "use_squash_pr_title_as_default": False,
            "squash_merge_commit_title": "COMMIT_OR_PR_TITLE",
            "squash_merge_commit_message": "COMMIT_MESSAGES",
            "merge_commit_title": "MERGE_MESSAGE",
            "merge_commit_message": "PR_TITLE",
            "network_count": 0,
            "subscribers_count": 0,
            "temp_clone_token": None,
        }

    # -- git ------------------------------------------------------------------------------------------------
    def git_ref(self, repo: Repo, refname: str, sha: str) -> Json:
        """``git-ref``."""
        api = f"{self.base}/repos/{repo.full_name}"
        kind = repo.git.object_type(sha) or "commit"
        return {
            "ref": refname,
            "node_id": node_id("REF", f"{repo.id}:{refname}"),
            "url": f"{api}/git/{quote(refname)}",
            "object": {"type": kind, "sha": sha, "url": f"{api}/git/{kind}s/{sha}"},
        }

    def commit(self, repo: Repo, info: CommitInfo, files: list[FileChange] | None = None) -> Json:
        """``commit``; with ``files``, the single-commit form (``stats`` and ``files``)."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"
        body: Json = {
            "url": f"{api}/commits/{info.sha}",
            "sha": info.sha,
            "node_id": node_id("C", info.sha),
            "html_url": f"{html}/commit/{info.sha}",
            "comments_url": f"{api}/commits/{info.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{info.sha}",
                "author": {"name": info.author.name, "email": info.author.email, "date": git_date(info.author.date)},
                "committer": {
                    "name": info.committer.name,
                    "email": info.committer.email,
                    "date": git_date(info.committer.date),
                },
                "message": info.message.rstrip("\n"),
                "comment_count": 0,
                "tree": {"sha": info.tree, "url": f"{api}/git/trees/{info.tree}"},
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "payload": None,
                    "signature": None,
                    "verified_at": None,
                },
            },
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"} for p in info.parents
            ],
        }
        if files is not None:
            additions, deletions = sum(f.additions for f in files), sum(f.deletions for f in files)
            body["stats"] = {"additions": additions, "deletions": deletions, "total": additions + deletions}
            body["files"] = [self.diff_entry(repo, info.sha, f) for f in files]
        return body

    def diff_entry(self, repo: Repo, sha: str, change: FileChange) -> Json:
        """``diff-entry``."""
        api, html, path = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}", quote(change.filename)
        return {
            "sha": change.sha,
            "filename": change.filename,
            "status": change.status,
            "additions": change.additions,
            "deletions": change.deletions,
            "changes": change.additions + change.deletions,
            "blob_url": f"{html}/blob/{sha}/{path}",
            "raw_url": f"{html}/raw/{sha}/{path}",
            "contents_url": f"{api}/contents/{path}?ref={sha}",
        }

    def branch(self, repo: Repo, name: str, info: CommitInfo) -> Json:
        """``branch-with-protection``: ``protection.required_status_checks`` lists the contexts branch protection
        requires (``checks``: the same with ``app_id`` null, "any source")."""
        api = f"{self.base}/repos/{repo.full_name}/branches/{quote(name)}"
        required = repo.protection.get(name)
        return {
            "name": name,
            "commit": self.commit(repo, info),
            "_links": {"html": f"{self.base}/{repo.full_name}/tree/{quote(name)}", "self": api},
            "protected": required is not None,
            "protection": {
                "enabled": required is not None,
                "required_status_checks": {
                    "enforcement_level": "non_admins" if required is not None else "off",
                    "contexts": list(required or []),
                    "checks": [{"context": c, "app_id": None} for c in required or []],
                },
            },
            "protection_url": f"{api}/protection",
        }

    # -- pull requests and issues ---------------------------------------------------------------------------
    def label(self, repo: Repo, label: Label) -> Json:
        """``label``."""
        return {
            "id": label.id,
            "node_id": node_id("LA", label.id),
            "url": f"{self.base}/repos/{repo.full_name}/labels/{quote(label.name)}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def pull_simple(self, repo: Repo, pr: PullRequest) -> Json:
        """``pull-request-simple``."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"
        pr_api, pr_html, issue = f"{api}/pulls/{pr.number}", f"{html}/pull/{pr.number}", f"{api}/issues/{pr.number}"
        repository, owner = self.repository(repo), self.owner(repo)

        def side(ref: str, sha: str) -> Json:
            return {"label": f"{repo.owner}:{ref}", "ref": ref, "sha": sha, "user": owner, "repo": repository}

        return {
            "url": pr_api,
            "id": pr.id,
            "node_id": node_id("PR", pr.id),
            "html_url": pr_html,
            "diff_url": f"{pr_html}.diff",
            "patch_url": f"{pr_html}.patch",
            "issue_url": issue,
            "commits_url": f"{pr_api}/commits",
            "review_comments_url": f"{pr_api}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{issue}/comments",
            "statuses_url": f"{api}/statuses/{pr.head_sha}",
            "number": pr.number,
            "state": pr.state,
            "locked": False,
            "title": pr.title,
            "user": self.user(pr.user),
            "body": pr.body,
            "labels": [self.label(repo, repo.label(name)) for name in pr.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": pr.created_at,
            "updated_at": pr.updated_at,
            "closed_at": pr.closed_at,
            "merged_at": pr.merged_at,
            "merge_commit_sha": pr.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self.user(login) for login in pr.requested_reviewers],
            "requested_teams": [self.team(slug) for slug in pr.requested_teams],
            "head": side(pr.head_ref, pr.head_sha),
            "base": side(pr.base_ref, pr.base_sha),
            "_links": {
                "self": {"href": pr_api},
                "html": {"href": pr_html},
                "issue": {"href": issue},
                "comments": {"href": f"{issue}/comments"},
                "review_comments": {"href": f"{pr_api}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{pr_api}/commits"},
                "statuses": {"href": f"{api}/statuses/{pr.head_sha}"},
            },
            "author_association": "OWNER" if pr.user == repo.owner else "MEMBER",
            "auto_merge": self.auto_merge(pr),
            "draft": pr.draft,
        }

    def auto_merge(self, pr: PullRequest) -> Json | None:
        """``auto-merge``: null, or who enabled it and how it will merge."""
        if pr.auto_merge is None:
            return None
        return {"enabled_by": self.user(pr.auto_merge["enabled_by"]), "merge_method": pr.auto_merge["merge_method"],
                "commit_title": pr.title, "commit_message": ""}

    def environment(self, repo: Repo, name: str, index: int) -> Json:
        """``environment`` of "List environments": its ``protection_rules`` (``required_reviewers`` with the
        reviewers as users, ``wait_timer``) and no deployment branch policy (every branch may deploy)."""
        spec = repo.environments[name]
        ident = repo.id * 1000 + index
        rules: list[Json] = []
        if spec.get("wait_timer"):
            rules.append({"id": ident * 10 + 1, "node_id": node_id("GA", ident * 10 + 1), "type": "wait_timer",
                          "wait_timer": int(spec["wait_timer"])})
        if spec.get("reviewers"):
            rules.append({"id": ident * 10 + 2, "node_id": node_id("GA", ident * 10 + 2), "type": "required_reviewers",
                          "prevent_self_review": False,
                          "reviewers": [{"type": "User", "reviewer": self.user(login)} for login in spec["reviewers"]]})
        return {
            "id": ident,
            "node_id": node_id("EN", ident),
            "name": name,
            "url": f"{self.base}/repos/{repo.full_name}/environments/{quote(name)}",
            "html_url": f"{self.base}/{repo.full_name}/deployments/activity_log?environments_filter={quote(name)}",
            "created_at": repo.created_at,
            "updated_at": repo.created_at,
            "protection_rules": rules,
            "deployment_branch_policy": None,
        }

    def ruleset_rules(self, repo: Repo, branch: str) -> list[Json]:
        """``repository-rule-detailed`` items of ``GET /rules/branches/{branch}``: one ``required_status_checks``
        rule from the repository's active ruleset when it targets the branch (``repo.rulesets``), then the rules of
        each active branch ruleset of ``repo.ruleset_list`` that names the branch ("Rules in rulesets with
        "evaluate" or "disabled" enforcement statuses are not returned")."""
        found: list[Json] = []
        contexts = repo.rulesets.get(branch)
        if contexts:
            found.append({
                "type": "required_status_checks",
                "parameters": {"required_status_checks": [{"context": c} for c in contexts],
                               "strict_required_status_checks_policy": False},
                "ruleset_source_type": "Repository",
                "ruleset_source": repo.full_name,
                "ruleset_id": 1,
            })
        for ruleset in repo.ruleset_list:
            if ruleset.target == "branch" and ruleset.enforcement == "active" and branch in ruleset.branches:
                found += [dict(rule) | {
                    "ruleset_source_type": "Organization" if ruleset.organization else "Repository",
                    "ruleset_source": repo.owner if ruleset.organization else repo.full_name,
                    "ruleset_id": ruleset.id,
                } for rule in ruleset.rules]
        return found

    def repository_ruleset(self, repo: Repo, ruleset: Ruleset, *, detailed: bool) -> Json:
        """``repository-ruleset``: listed as GitHub's example of "Get all repository rulesets" lists one (no
        ``target``, ``conditions`` nor ``rules``), whole as "Get a repository ruleset" returns it."""
        source = repo.owner if ruleset.organization else repo.full_name
        body: Json = {
            "id": ruleset.id,
            "name": ruleset.name,
            "source_type": "Organization" if ruleset.organization else "Repository",
            "source": source,
            "enforcement": ruleset.enforcement,
            "node_id": node_id("RRS", ruleset.id),
            "_links": {"self": {"href": f"{self.base}/repos/{repo.full_name}/rulesets/{ruleset.id}"},
                       "html": {"href": f"{self.base}/{repo.full_name}/rules/{ruleset.id}"}},
            "created_at": repo.created_at,
            "updated_at": repo.created_at,
        }
        if detailed:
            body |= {
                "target": ruleset.target,
                "current_user_can_bypass": ruleset.bypass,
                "conditions": {"ref_name": {"include": list(ruleset.include), "exclude": list(ruleset.exclude)}},
                "rules": [dict(rule) for rule in ruleset.rules],
            }
        return body

    def pull(self, repo: Repo, pr: PullRequest) -> Json:
        """``pull-request``: the simple form plus merge state and diff counts from git."""
        body = self.pull_simple(repo, pr)
        base = repo.git.merge_base(pr.base_sha, pr.head_sha) or pr.base_sha
        files = repo.git.diff(base, pr.head_sha)
        is_open = pr.state == "open"
        mergeable = repo.git.mergeable(pr.base_sha, pr.head_sha) if is_open else None
        body.update(
            merged=pr.merged,
            mergeable=mergeable,
            rebaseable=mergeable,
            mergeable_state=(
                "unknown" if not is_open else "dirty" if not mergeable else "draft" if pr.draft else "clean"
            ),
            merged_by=self.user(pr.merged_by) if pr.merged_by else None,
            comments=sum(1 for c in repo.comments if c.issue_number == pr.number),
            review_comments=0,
            maintainer_can_modify=pr.maintainer_can_modify,
            commits=len(repo.git.rev_list(pr.head_sha, base)),
            additions=sum(f.additions for f in files),
            deletions=sum(f.deletions for f in files),
            changed_files=len(files),
        )
        return body

    def issue_event(self, repo: Repo, pr: PullRequest, event: dict[str, Any]) -> Json:
        """``review-requested-issue-event`` / ``review-request-removed-issue-event`` (of ``issue-event-for-issue``):
        ``requested_reviewer`` for a person, ``requested_team`` for a team, ``review_requester`` who asked;
        ``labeled-issue-event`` / ``unlabeled-issue-event``: ``label`` with its ``name`` and ``color``."""
        body: Json = {
            "id": event["id"],
            "node_id": node_id("RRE", event["id"]),
            "url": f"{self.base}/repos/{repo.full_name}/issues/events/{event['id']}",
            "actor": self.user(event["actor"]),
            "event": event["event"],
            "commit_id": None,
            "commit_url": None,
            "created_at": event["created_at"],
            "performed_via_github_app": None,
        }
        if event.get("label"):  # labeled-issue-event / unlabeled-issue-event
            body["label"] = {"name": event["label"], "color": repo.label(event["label"]).color}
            return body
        body["review_requester"] = self.user(event["actor"])
        if event.get("reviewer"):
            body["requested_reviewer"] = self.user(event["reviewer"])
        if event.get("team"):
            body["requested_team"] = self.team(event["team"])
        return body

    def review(self, repo: Repo, pr: PullRequest, review: dict[str, Any]) -> Json:
        """``pull-request-review``."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"
        page = f"{html}/pull/{pr.number}#pullrequestreview-{review['id']}"
        return {
            "id": review["id"],
            "node_id": node_id("PRR", review["id"]),
            "user": self.user(review["user"]),
            "body": review["body"],
            "state": review["state"],
            "html_url": page,
            "pull_request_url": f"{api}/pulls/{pr.number}",
            "_links": {"html": {"href": page}, "pull_request": {"href": f"{api}/pulls/{pr.number}"}},
            "submitted_at": review["at"],
            "commit_id": review["commit_id"],
            "author_association": "OWNER" if review["user"] == repo.owner else "MEMBER",
        }

    def comment(self, repo: Repo, comment: Comment) -> Json:
        """``issue-comment``."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"
        return {
            "id": comment.id,
            "node_id": node_id("IC", comment.id),
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"{html}/pull/{comment.issue_number}#issuecomment-{comment.id}",
            "body": comment.body,
            "user": self.user(comment.user),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "author_association": "OWNER" if comment.user == repo.owner else "MEMBER",
        }

    # -- statuses and checks --------------------------------------------------------------------------------
    def status(self, repo: Repo, status: CommitStatus) -> Json:
        """``status`` (also a valid ``simple-commit-status``)."""
        creator = self.user(status.creator)
        return {
            "url": f"{self.base}/repos/{repo.full_name}/statuses/{status.sha}",
            "avatar_url": creator["avatar_url"],
            "id": status.id,
            "node_id": node_id("SC", status.id),
            "state": status.state,
            "description": status.description,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": status.created_at,
            "updated_at": status.updated_at,
            "creator": creator,
        }

    def combined_status(self, repo: Repo, sha: str, state: str, statuses: list[CommitStatus], total: int) -> Json:
        """``combined-commit-status``."""
        api = f"{self.base}/repos/{repo.full_name}"
        simple = [{k: v for k, v in self.status(repo, s).items() if k != "creator"} for s in statuses]
        return {
            "state": state,
            "statuses": simple,
            "sha": sha,
            "total_count": total,
            "repository": self.repository(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }

    def check_run(self, repo: Repo, run: CheckRun) -> Json:
        """``check-run``."""
        api = f"{self.base}/repos/{repo.full_name}"
        output = run.output
        pulls = [
            {
                "id": pr.id,
                "number": pr.number,
                "url": f"{api}/pulls/{pr.number}",
                "head": {
                    "ref": pr.head_ref,
                    "sha": pr.head_sha,
                    "repo": {"id": repo.id, "url": api, "name": repo.name},
                },
                "base": {
                    "ref": pr.base_ref,
                    "sha": pr.base_sha,
                    "repo": {"id": repo.id, "url": api, "name": repo.name},
                },
            }
            for pr in repo.pulls.values()
            if pr.state == "open" and pr.head_sha == run.head_sha
        ]
        return {
            "id": run.id,
            "head_sha": run.head_sha,
            "node_id": node_id("CR", run.id),
            "external_id": run.external_id or "",
            "url": f"{api}/check-runs/{run.id}",
            "html_url": f"{self.base}/{repo.full_name}/runs/{run.id}",
            "details_url": run.details_url or f"{self.base}/{repo.full_name}/runs/{run.id}",
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": run.started_at,
            "completed_at": run.completed_at,
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": len(output.get("annotations") or []),
                "annotations_url": f"{api}/check-runs/{run.id}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": zlib.crc32(run.head_sha.encode()) % 10_000_000 + 1},
            "app": self.app(),
            "pull_requests": pulls,
        }
