"""Credentials of the github forge: a token, or a GitHub App (JWT → one installation token per account).

PyGithub signs the JWT (``Auth.AppAuth``), mints and refreshes installation tokens (``Auth.AppInstallationAuth``);
this module picks the installation for a repository (``GET /repos/{owner}/{repo}/installation``, once per
account), and turns a missing credential or a broken key into one clear error. Tokens are never put in a message.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jwt
from github import Auth, GithubIntegration
from github.Installation import Installation

from fleetflow.errors import Problem, UsageError
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


# GitHub's words for an App ID it knows no App by ("Integration not found": actions/create-github-app-token#76,
# octokit/authentication-strategies.js#165), and its 401s to a JWT whose times it refuses (PyGithub signs with iat 60 s
# back and exp 300 s ahead: github.Consts DEFAULT_JWT_ISSUED_AT, DEFAULT_JWT_EXPIRY; GitHub refuses an exp more than
# 10 minutes ahead: GitHub Docs, "Generating a JSON Web Token (JWT) for a GitHub App").
INTEGRATION_NOT_FOUND = "integration not found"
APP_ID_HINT = ("FLEETFLOW_APP_ID (github.appId) must be the App ID (the number at the top of the App's settings page) "
               "or its client ID, not an installation's ID or the App's name")


def unauthorized_hint(message: str, *, app: bool, jwt: bool, host: str = "api.github.com") -> str:
    """What fixes GitHub's 401 (or its "Integration not found") that says ``message``. ``app``: fleetflow runs as a
    GitHub App; ``jwt``: the request was the App's own (its JWT: the installation lookup, a token's minting), not
    one with a token; ``host``: the API's, to which a token of another GitHub (github.com's on a GitHub Enterprise
    Server, or the reverse) means nothing. Until 2026-11-29 every 401 said "the token is invalid or expired" and
    then the permissions the token needs: no permission answers 401."""
    said = message.lower()
    if INTEGRATION_NOT_FOUND in said:
        return f"GitHub knows no GitHub App by this ID: {APP_ID_HINT}"
    if jwt and ("'exp'" in said or "'iat'" in said):
        return ("GitHub refused the times in the App's JWT: this machine's clock is off by more than a minute; set "
                "it right (NTP) and run again")
    if jwt:
        return ("GitHub could not verify the App's JWT with the App this ID names: the ID and the private key are "
                f"of two different Apps, or the key was deleted on the App's settings page (generate a new one); "
                f"{APP_ID_HINT}")
    if app:
        return ("GitHub refused the App's installation token: the App was uninstalled or suspended on this account "
                "meanwhile; install it again (the App's settings page, Install App) and run again")
    return ("GitHub did not accept the token: it is mistyped, expired or revoked (a fine-grained token's expiry date "
            f"is on its settings page), or it is of another GitHub than {host}; make a new one there and set "
            "GITHUB_TOKEN to it")


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
    app_id, private_key = (app_id or "").strip(), _unescaped((private_key or "").strip())
    if not app_id or not private_key:  # blank ("  ") was set: PyGithub's AssertionError until 2026-11-29
        missing = "FLEETFLOW_APP_PRIVATE_KEY (or github.privateKeyFile)" if app_id else "FLEETFLOW_APP_ID"
        raise UsageError(f"GitHub App credentials are incomplete: {missing} is not set")
    if "-----BEGIN" in app_id:
        raise UsageError(Problem(
            "FLEETFLOW_APP_ID holds a PEM key, not the App's ID", None,
            "FLEETFLOW_APP_ID takes the App ID (the number at the top of the App's settings page) or its client ID, "
            "FLEETFLOW_APP_PRIVATE_KEY the key: were the two swapped?"))
    auth = Auth.AppAuth(app_id, private_key)
    try:
        auth.create_jwt()
    # what cryptography and PyJWT raise for a bad key; a real public key's PEM loads as one, which cannot sign:
    # AttributeError ('RSAPublicKey' object has no attribute 'sign', jwt/algorithms.py), a traceback until 2026-11-29
    except (ValueError, TypeError, AttributeError, jwt.PyJWTError) as exc:
        said, hint = _unusable_key(private_key)
        raise UsageError(Problem(
            f"the GitHub App private key cannot sign a JWT ({type(exc).__name__}): {said}", None, hint)) from None
    return auth


def _unescaped(key: str) -> str:
    """A PEM key written on one line with ``\\n`` for its line breaks (a ``.env`` file, ``docker --env-file``, a
    platform's one-line variable) as PEM: a PEM key holds no backslash, so nothing else can be meant. Probot reads
    its ``PRIVATE_KEY`` the same way (@probot/get-private-key). Until 2026-11-29 "cannot sign a JWT
    (InvalidKeyError)"."""
    if "\n" not in key and "\\n" in key and key.lstrip("\"'").startswith("-----BEGIN"):
        return key.replace("\\r\\n", "\n").replace("\\n", "\n")
    return key


_PEM_LABEL = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
_KEY_HINT = ("give the App's private key, the whole .pem file GitHub made (Generate a private key on the App's "
             "settings page) from -----BEGIN RSA PRIVATE KEY----- to its END line, in FLEETFLOW_APP_PRIVATE_KEY, or "
             "name the file in the config file's github.privateKeyFile")


def _unusable_key(key: str) -> tuple[str, str]:
    """What ``key``, which no RSA key could be read from, is instead, and the fix. Names a path (not a secret), never
    shows the key."""
    label = _PEM_LABEL.search(key)
    if label is not None and "PRIVATE KEY" not in label.group(1):  # a public key, a certificate
        return f"it holds a {label.group(1)}, not a private key", _KEY_HINT
    if label is not None and label.group(1) != "RSA PRIVATE KEY" and "ENCRYPTED" not in label.group(1) \
            and label.group(1) != "PRIVATE KEY":  # OPENSSH, EC, DSA
        return (f"it holds an {label.group(1)}, and a GitHub App's key is an RSA key in PEM "
                "(-----BEGIN RSA PRIVATE KEY-----)"), _KEY_HINT
    if label is not None:
        return "its PEM text is cut or changed (a line lost or joined, a character missing)", _KEY_HINT
    one_line = "\n" not in key
    if one_line and (key.endswith(".pem") or key.startswith(("/", "~", "./")) or _is_file(key)):
        return (f"it holds a path ({key}), not the key",
                f"put the file's text in FLEETFLOW_APP_PRIVATE_KEY (FLEETFLOW_APP_PRIVATE_KEY=\"$(cat {key})\"), or "
                f"name the file in the config file: github: privateKeyFile: {key}")
    try:
        decoded = base64.b64decode("".join(key.split()), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if b"-----BEGIN" in decoded:
        return ("it is base64-encoded", "give the PEM text itself (decode it: base64 -d), the -----BEGIN line first")
    return "it holds no PEM key (no -----BEGIN line)", _KEY_HINT


def _is_file(text: str) -> bool:
    try:
        return len(text) < 4096 and Path(os.path.expanduser(text)).is_file()
    except (OSError, ValueError):
        return False
