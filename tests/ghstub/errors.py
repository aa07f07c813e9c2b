"""Errors the stub answers with, in GitHub's body shapes."""

from __future__ import annotations

from typing import Any

DOCS = "https://docs.github.com/rest"
# The login of a workflow's GITHUB_TOKEN ("Automatic token authentication": what it writes is attributed to
# github-actions[bot]); a stub made with ``login=ACTIONS_BOT`` stands for a workflow's token.
ACTIONS_BOT = "github-actions[bot]"


class ApiError(Exception):
    """An error response: ``{"message", "documentation_url", "status"[, "errors"]}``."""

    def __init__(
        self,
        status: int,
        message: str,
        errors: list[dict[str, Any]] | None = None,
        documentation_url: str = DOCS,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.documentation_url = documentation_url
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message}
        if self.errors is not None:
            body["errors"] = self.errors
        body["documentation_url"] = self.documentation_url
        body["status"] = str(self.status)
        return body


def not_found(message: str = "Not Found") -> ApiError:
    return ApiError(404, message)


def validation_failed(*errors: dict[str, Any], documentation_url: str = DOCS) -> ApiError:
    """GitHub's 422 ``Validation Failed`` with its ``errors`` list."""
    return ApiError(422, "Validation Failed", list(errors), documentation_url)


def unprocessable(message: str, documentation_url: str = DOCS) -> ApiError:
    """A 422 with a plain message (``Reference already exists``, ``No commit found for SHA: x``, ...)."""
    return ApiError(422, message, documentation_url=documentation_url)


def pr_already_exists(owner: str, head: str) -> ApiError:
    return validation_failed(
        {
            "resource": "PullRequest",
            "code": "custom",
            "message": f"A pull request already exists for {owner}:{head}.",
        },
        documentation_url="https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    )


def actions_may_not_create_pulls() -> ApiError:
    """GitHub's 403 to a workflow's GITHUB_TOKEN that opens a pull request while the setting "Allow GitHub Actions to
    create and approve pull requests" is off, as clients relay it (peter-evans/create-pull-request#3979: "Error:
    GitHub Actions is not permitted to create or approve pull requests. -
    https://docs.github.com/rest/pulls/pulls#create-a-pull-request"; googleapis/release-please-action#767)."""
    return ApiError(403, "GitHub Actions is not permitted to create or approve pull requests.",
                    documentation_url="https://docs.github.com/rest/pulls/pulls#create-a-pull-request")
