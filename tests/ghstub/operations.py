"""The GitHub REST operations the stand-in server implements, as ``(method, OpenAPI path template)``.

This module is plain data with no imports: ``tools/extract_openapi.py`` reads it to cut the OpenAPI
subset, the router dispatches on the same templates, and the shape tests check every response against
the schema of the operation it answered.
"""

OPERATIONS: tuple[tuple[str, str], ...] = (
    ("GET", "/rate_limit"),
    ("GET", "/repos/{owner}/{repo}"),
    ("PATCH", "/repos/{owner}/{repo}"),
    ("GET", "/repos/{owner}/{repo}/branches/{branch}"),
    ("GET", "/repos/{owner}/{repo}/rules/branches/{branch}"),
    ("GET", "/repos/{owner}/{repo}/rulesets"),
    ("GET", "/repos/{owner}/{repo}/rulesets/{ruleset_id}"),
    ("GET", "/repos/{owner}/{repo}/environments"),
    ("GET", "/repos/{owner}/{repo}/actions/permissions/workflow"),
    ("GET", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("GET", "/repos/{owner}/{repo}/git/matching-refs/{ref}"),
    ("POST", "/repos/{owner}/{repo}/git/refs"),
    ("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("DELETE", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("GET", "/repos/{owner}/{repo}/commits"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}"),
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("GET", "/repos/{owner}/{repo}/pulls"),
    ("POST", "/repos/{owner}/{repo}/pulls"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
    ("DELETE", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
    ("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/events"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("POST", "/repos/{owner}/{repo}/check-runs"),
    ("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("POST", "/repos/{owner}/{repo}/dispatches"),
    ("GET", "/repos/{owner}/{repo}/installation"),
    ("POST", "/app/installations/{installation_id}/access_tokens"),
)

# The operations a GitHub App calls as itself, with its JWT (``Authorization: Bearer <jwt>``); every other
# operation takes a token (the stub's, or an installation token an app minted).
APP_OPERATIONS: frozenset[tuple[str, str]] = frozenset(
    {
        ("GET", "/repos/{owner}/{repo}/installation"),
        ("POST", "/app/installations/{installation_id}/access_tokens"),
    }
)

# Paths GitHub serves but no longer documents, that PyGithub uses, answered like the documented operation:
# ``Commit.get_statuses()`` reads ``GET /repos/{owner}/{repo}/statuses/{sha}``.
ALIASES: dict[tuple[str, str], str] = {
    ("GET", "/repos/{owner}/{repo}/statuses/{ref}"): "/repos/{owner}/{repo}/commits/{ref}/statuses",
}

# Webhook events whose payload schemas the subset keeps (``x-github.subcategory`` in the description),
# with the actions kept (empty: all). Each pull_request action inlines a whole pull request (~35 KB), so
# only the actions fleetflow reacts to are kept.
WEBHOOK_EVENTS: dict[str, tuple[str, ...]] = {
    "push": (),
    "status": (),
    "pull_request": ("opened", "closed", "reopened", "edited", "synchronize"),
    "repository_dispatch": (),
    "workflow_dispatch": (),
}
