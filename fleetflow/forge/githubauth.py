"""Credentials of the github forge: a token, or a GitHub App (JWT → one installation token per account).

PyGithub signs the JWT (``Auth.AppAuth``), mints and refreshes installation tokens (``Auth.AppInstallationAuth``);
this module picks the installation for a repository (``GET /repos/{owner}/{repo}/installation``, once per
account), and turns a missing credential or a broken key into one clear error. Tokens are never put in a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jwt
from github import Auth, GithubIntegration
from github.Installation import Installation

from fleetflow.errors import UsageError
from fleetflow.forge.base import CredentialKind

# What fleetflow does with a token, as fine-grained permissions (also a GitHub App's permissions).
PERMISSIONS_HINT = (
    "the token (or the GitHub App installation) needs contents: write, pull-requests: write, statuses: write "
    "and checks: read on the repository"
)
# GitHub's 403 to a workflow's GITHUB_TOKEN opening a pull request while the repository's (or its organization's)
# setting "Allow GitHub Actions to create and approve pull requests" is off, as it is in every new repository
# (GitHub Docs, "Managing GitHub Actions settings for a repository": "Preventing GitHub Actions from creating or
# approving pull requests"; peter-evans/create-pull-request#3979). No permission fixes it: the setting does.
ACTIONS_MAY_NOT_CREATE_PULLS = "GitHub Actions is not permitted to create or approve pull requests"
ACTIONS_PULLS_SETTING = "Allow GitHub Actions to create and approve pull requests"  # the setting's name, as shown
ACTIONS_SETTING_HINT = (
    f"this is a setting, not a missing permission: turn on \"{ACTIONS_PULLS_SETTING}\" in the repository's "
    "Settings → Actions → General → Workflow permissions (greyed out there: its "
    "organization's Settings → Actions → General has it off), or give fleetflow a GitHub App's credentials instead "
    "of the workflow's GITHUB_TOKEN"
)
# A rate limit answers 403 (or 429) too ("Rate limits for the REST API": "exceeding your primary rate limit" gives
# x-ratelimit-remaining 0, "exceeding a secondary rate limit" a retry-after header and its own message).
PRIMARY_RATE_LIMIT_HINT = (
    "this is GitHub's hourly request quota, not a permission: it refills within the hour (the answer's "
    "x-ratelimit-reset header gives the time); run again then (a GitHub App's installation has its own, larger quota)"
)
SECONDARY_RATE_LIMIT_HINT = (
    "this is GitHub's secondary rate limit (too many requests in a short time), not a permission: wait a few "
    "minutes and run again; run fewer fleetflow jobs at once with one token, and keep FLEETFLOW_GITHUB_THROTTLE at "
    "its default (0.25,1) or slower"
)

RATE_LIMIT_HINT = (
    "this is one of GitHub's rate limits, not a permission: wait (a few minutes for the secondary limit, until "
    "the hour's reset for the primary one) and run again"
)


def forbidden_hint(message: str, accepted: str | None = None) -> str:
    """What fixes GitHub's 403 that says ``message`` (not a rate limit: those have their own hints). ``accepted``:
    the answer's ``X-Accepted-GitHub-Permissions``, which GitHub sends a GitHub App or a fine-grained token: the
    permission sets the endpoint takes, ``;`` between sets, ``,`` within one (``pull_requests=write``; GitHub Docs,
    "Permissions required for GitHub Apps"; github.blog changelog 2023-08-10)."""
    if ACTIONS_MAY_NOT_CREATE_PULLS.lower() in message.lower():
        return ACTIONS_SETTING_HINT
    sets = [" and ".join(_permission(p) for p in group.split(",") if p.strip())
            for group in (accepted or "").split(";")]
    sets = [s for s in sets if s]
    if sets:
        return f"this request needs {' or '.join(sets)} (GitHub's X-Accepted-GitHub-Permissions); {PERMISSIONS_HINT}"
    return PERMISSIONS_HINT


def _permission(given: str) -> str:
    """``pull_requests=write`` as the hints write permissions: ``pull-requests: write``."""
    name, _, access = given.strip().partition("=")
    return f"{name.replace('_', '-')}: {access}" if access else name.replace("_", "-")


def rate_limit_hint(message: str) -> str:
    """The hint for a rate limit GitHub described with ``message`` (its primary limit's starts "API rate limit
    exceeded"; anything else is the secondary limit, which PyGithub also recognises by its words)."""
    primary = message.lower().startswith("api rate limit exceeded")
    return PRIMARY_RATE_LIMIT_HINT if primary else SECONDARY_RATE_LIMIT_HINT


# GitHub's token prefixes (github.blog changelog 2021-03-31, "Authentication token format updates are generally
# available": ghp_ personal access tokens, gho_ OAuth access tokens, ghu_ GitHub App user-to-server tokens, ghs_ GitHub
# App server-to-server tokens; fine-grained personal access tokens start github_pat_). A workflow's GITHUB_TOKEN is
# a GitHub App installation access token (GitHub Docs, "Automatic token authentication"), so ghs_.
_PERSONAL_PREFIXES = ("ghp_", "github_pat_", "gho_", "ghu_")


def token_kind(token: str) -> CredentialKind:
    """``installation-token`` for a ``ghs_`` token (a workflow's GITHUB_TOKEN, or a GitHub App installation token
    handed over as a token), ``personal-token`` for a person's, ``token`` for one of no known format (GitHub
    Enterprise Server before 3.2, a stand-in)."""
    if token.startswith("ghs_"):
        return "installation-token"
    return "personal-token" if token.startswith(_PERSONAL_PREFIXES) else "token"


@dataclass(frozen=True)
class Credential:
    """The ``Auth`` for one account's repositories; ``key`` names the client that can share it."""

    key: str
    auth: Auth.Auth

    def git_token(self) -> str:
        """The token git sends (an installation token is minted or refreshed on demand)."""
        return self.auth.token


class Credentials:
    """A token for every repository, or a GitHub App's installation for each account.

    ``integration`` builds the ``GithubIntegration`` that looks installations up (the forge passes its own
    base URL, retry and throttling); it is only called for App credentials.
    """

    def __init__(self, *, token: str | None = None, app_id: str | None = None, app_private_key: str | None = None,
                 integration: Callable[[Auth.AppAuth], GithubIntegration] | None = None) -> None:
        self._token = token or None
        self._app: Auth.AppAuth | None = None
        self._integration_factory = integration
        self._integration: GithubIntegration | None = None
        self._by_owner: dict[str, Credential] = {}
        if app_id or app_private_key:
            self._app = _app_auth(app_id, app_private_key)
        elif not self._token:
            raise UsageError(
                "the github forge needs credentials: set GITHUB_TOKEN, or FLEETFLOW_APP_ID and "
                "FLEETFLOW_APP_PRIVATE_KEY (or github.appId and github.privateKeyFile in the config file)"
            )

    @property
    def kind(self) -> str:
        return "app" if self._app is not None else "token"

    @property
    def credential_kind(self) -> CredentialKind:
        return "app" if self._app is not None else token_kind(self._token or "")

    @property
    def app_auth(self) -> Auth.AppAuth | None:
        return self._app

    def for_repo(self, owner: str, name: str) -> Credential:
        """The credential for ``owner/name``: the token, or the app's installation on ``owner`` (looked up through
        this repository the first time the account is seen; the caller maps GitHub errors)."""
        if self._app is None:
            assert self._token is not None
            return self._by_owner.setdefault("", Credential("token", Auth.Token(self._token)))
        account = owner.lower()
        if account not in self._by_owner:
            installation = self._app_integration().get_repo_installation(owner, name)
            auth = self._app.get_installation_auth(installation.id)
            self._by_owner[account] = Credential(f"installation-{installation.id}", auth)
        return self._by_owner[account]

    def installation(self, owner: str, name: str) -> Installation:
        """The App's installation that serves ``owner/name`` (a fresh read: its permissions as they are now)."""
        assert self._app is not None
        return self._app_integration().get_repo_installation(owner, name)

    def _app_integration(self) -> GithubIntegration:
        if self._integration is None:
            assert self._app is not None
            if self._integration_factory is None:
                self._integration = GithubIntegration(auth=self._app)
            else:
                self._integration = self._integration_factory(self._app)
        return self._integration

    def close(self) -> None:
        if self._integration is not None:
            self._integration.close()
            self._integration = None


def _app_auth(app_id: str | None, private_key: str | None) -> Auth.AppAuth:
    """``Auth.AppAuth``, with the key checked now (PyGithub would only fail at the first request)."""
    if not app_id or not private_key:
        missing = "FLEETFLOW_APP_PRIVATE_KEY (or github.privateKeyFile)" if app_id else "FLEETFLOW_APP_ID"
        raise UsageError(f"GitHub App credentials are incomplete: {missing} is not set")
    auth = Auth.AppAuth(app_id.strip(), private_key)
    try:
        auth.create_jwt()
    except (ValueError, TypeError, jwt.PyJWTError) as exc:  # what cryptography and PyJWT raise for a bad key
        raise UsageError(
            f"the GitHub App private key cannot sign a JWT ({type(exc).__name__}): give the app's PEM private key "
            "(-----BEGIN RSA PRIVATE KEY----- ...) in FLEETFLOW_APP_PRIVATE_KEY or github.privateKeyFile"
        ) from None
    return auth
