"""GitHub Apps in the stub: registered apps, their installations, the JWTs they sign and the installation tokens
they mint.

The flow, as on GitHub: the app signs a JWT (RS256, ``iss`` = app id, ``exp`` at most 10 minutes ahead) with its
private key; with it, ``GET /repos/{owner}/{repo}/installation`` finds the installation that covers a repository
and ``POST /app/installations/{id}/access_tokens`` mints an installation token (``ghs_...``, one hour). That token
then authenticates ordinary requests, for the installation's repositories only (any other repository: 404).

JWTs are checked against wall-clock time (the client signs with it); installation tokens expire by the stub's
clock, so a test with a ``clock`` can expire them.
"""

from __future__ import annotations

import secrets
import string
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from .errors import ApiError, not_found, unprocessable

APP_DOCS = "https://docs.github.com/rest"
JWT_UNDECODABLE = "A JSON web token could not be decoded"
JWT_EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the "
    "assertion expires"
)
JWT_TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
JWT_ISSUED_LATER = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
JWT_MAX_LIFETIME = 600  # seconds: GitHub refuses an ``exp`` more than 10 minutes ahead
JWT_CLOCK_SKEW = 60  # seconds of ``iat`` in the future tolerated
TOKEN_LIFETIME = timedelta(hours=1)
NOT_ACCESSIBLE = "There is at least one repository that does not exist or is not accessible to the parent installation."
NOT_GRANTED = "The permissions requested are not granted to this installation."
LEVELS = {"read": 1, "write": 2, "admin": 3}

# What fleetflow needs (see fleetflow.forge.githubauth.PERMISSIONS_HINT), the default of a registered app.
DEFAULT_PERMISSIONS: dict[str, str] = {
    "checks": "read",
    "contents": "write",
    "metadata": "read",
    "pull_requests": "write",
    "statuses": "write",
}
DEFAULT_EVENTS = ("check_run", "pull_request", "push", "status")


@dataclass
class App:
    id: int
    slug: str
    name: str
    public_key: RSAPublicKey
    permissions: dict[str, str]
    events: tuple[str, ...]
    created_at: datetime

    @property
    def bot_login(self) -> str:
        """The login the app's installation acts as (PRs it opens, statuses it posts)."""
        return f"{self.slug}[bot]"

    @property
    def client_id(self) -> str:
        return f"Iv1.{self.id:016x}"


@dataclass
class Installation:
    """An app installed on one account: every repository (``repositories`` None) or the listed ones."""

    id: int
    app: App
    account: str
    repositories: list[str] | None
    permissions: dict[str, str]
    created_at: datetime
    updated_at: datetime

    @property
    def repository_selection(self) -> Literal["all", "selected"]:
        return "all" if self.repositories is None else "selected"

    def covers(self, owner: str, name: str) -> bool:
        if owner.lower() != self.account.lower():
            return False
        return self.repositories is None or name.lower() in self.repositories


@dataclass
class InstallationToken:
    token: str = field(repr=False)
    installation: Installation
    expires_at: datetime
    permissions: dict[str, str]
    repositories: list[str] | None  # names within the account; None: all the installation covers

    def covers(self, owner: str, name: str) -> bool:
        if not self.installation.covers(owner, name):
            return False
        return self.repositories is None or name.lower() in self.repositories


@dataclass(frozen=True)
class Credential:
    """What authenticated a request: the stub's token (or any, when the stub checks none), an app's JWT or an
    installation token."""

    kind: Literal["token", "app", "installation"]
    app: App | None = None
    installation_token: InstallationToken | None = None
    person: str | None = None  # a person's token (``Store.person_token``)

    @property
    def label(self) -> str:
        """For the request log: ``token``, ``app 12345``, ``installation 1001``."""
        if self.kind == "app" and self.app is not None:
            return f"app {self.app.id}"
        if self.installation_token is not None:
            return f"installation {self.installation_token.installation.id}"
        return self.kind

    @property
    def actor(self) -> str | None:
        """The login writes are attributed to (None: the stub's own user)."""
        if self.installation_token is not None:
            return self.installation_token.installation.app.bot_login
        return self.person


def load_public_key(pem: str | bytes) -> RSAPublicKey:
    """An RSA public key from its PEM, or from the private key's PEM (its public half)."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key: Any = serialization.load_pem_public_key(data)
    except ValueError:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    if not isinstance(key, RSAPublicKey):
        raise ValueError("a GitHub App key is an RSA key")
    return key


class AppRegistry:
    """The stub's apps, installations and minted tokens. ``next_id`` and ``clock`` are the store's."""

    def __init__(self, next_id: Callable[[], int], clock: Callable[[], datetime]) -> None:
        self._next_id = next_id
        self._clock = clock
        self.lock = threading.RLock()
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, InstallationToken] = {}

    # -- set-up (test helpers) -----------------------------------------------------------------------------
    def register(
        self,
        app_id: int,
        public_key_pem: str | bytes,
        slug: str | None = None,
        permissions: dict[str, str] | None = None,
        events: Iterable[str] = DEFAULT_EVENTS,
    ) -> App:
        with self.lock:
            if app_id in self.apps:
                raise ValueError(f"app {app_id} is already registered")
            slug = slug or f"stub-app-{app_id}"
            app = App(
                app_id,
                slug,
                slug.replace("-", " "),
                load_public_key(public_key_pem),
                dict(permissions or DEFAULT_PERMISSIONS),
                tuple(events),
                self._clock(),
            )
            self.apps[app_id] = app
            return app

    def install(self, app_id: int, installed_on: Iterable[str]) -> Installation:
        """Install (or widen the installation of) app ``app_id`` on one account: ``owner`` for all its
        repositories, ``owner/name`` for selected ones."""
        entries = [(owner, name) for owner, _, name in (entry.partition("/") for entry in installed_on)]
        accounts = {owner.lower() for owner, _ in entries}
        if len(accounts) != 1:
            raise ValueError(f"an installation is on one account, not {sorted(accounts) or 'none'}")
        owner = entries[0][0]
        names = None if any(not name for _, name in entries) else {name.lower() for _, name in entries}
        with self.lock:
            app = self.apps[app_id]
            found = next(
                (i for i in self.installations.values() if i.app is app and i.account.lower() == owner.lower()), None
            )
            now = self._clock()
            if found is None:
                selected = None if names is None else sorted(names)
                found = Installation(self._next_id(), app, owner, selected, dict(app.permissions), now, now)
                self.installations[found.id] = found
            elif found.repositories is not None:
                found.repositories = None if names is None else sorted({*found.repositories, *names})
                found.updated_at = now
            return found

    def uninstall(self, installation_id: int) -> None:
        """Remove an installation; its tokens stop working (401)."""
        with self.lock:
            self.installations.pop(installation_id, None)

    # -- authentication ------------------------------------------------------------------------------------
    def verify_jwt(self, authorization: str) -> App:
        """The app whose JWT (``Authorization: Bearer <jwt>``) this is; GitHub's 401 otherwise."""
        scheme, _, encoded = authorization.strip().partition(" ")
        if scheme.lower() not in ("bearer", "token") or not encoded.strip():
            raise ApiError(401, JWT_UNDECODABLE, documentation_url=APP_DOCS)
        encoded = encoded.strip()
        try:
            unverified = jwt.decode(encoded, options={"verify_signature": False})
            issuer = str(unverified.get("iss"))  # the app id (a number or a string), or the app's client id
            app = next((a for a in self.apps.values() if issuer in (str(a.id), a.client_id)), None)
            if app is None:
                raise ApiError(401, JWT_UNDECODABLE, documentation_url=APP_DOCS)
            claims = jwt.decode(
                encoded,
                app.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except (jwt.PyJWTError, ValueError, TypeError):
            raise ApiError(401, JWT_UNDECODABLE, documentation_url=APP_DOCS) from None
        now = time.time()
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now:
            raise ApiError(401, JWT_EXPIRED, documentation_url=APP_DOCS)
        if exp > now + JWT_MAX_LIFETIME:
            raise ApiError(401, JWT_TOO_LONG, documentation_url=APP_DOCS)
        if not isinstance(iat, int | float) or isinstance(iat, bool) or iat > now + JWT_CLOCK_SKEW:
            raise ApiError(401, JWT_ISSUED_LATER, documentation_url=APP_DOCS)
        return app

    def token(self, value: str) -> InstallationToken | None:
        """The installation token ``value`` when the stub minted it; a 401 when it has expired or its installation
        is gone."""
        with self.lock:
            minted = self.tokens.get(value)
            if minted is None:
                return None
            if self._clock() >= minted.expires_at or minted.installation.id not in self.installations:
                raise ApiError(401, "Bad credentials")
            return minted

    # -- the two endpoints ---------------------------------------------------------------------------------
    def installation_for(self, app: App, owner: str, name: str) -> Installation:
        with self.lock:
            for installation in self.installations.values():
                if installation.app is app and installation.covers(owner, name):
                    return installation
        raise not_found()

    def mint(
        self,
        app: App,
        installation_id: int,
        repositories: list[str] | None = None,
        permissions: dict[str, str] | None = None,
        existing: Callable[[str, str], bool] = lambda owner, name: True,
    ) -> InstallationToken:
        """A new installation token, optionally narrowed to ``repositories`` (names) and ``permissions``."""
        with self.lock:
            installation = self.installations.get(installation_id)
            if installation is None or installation.app is not app:
                raise not_found()
            names = None
            if repositories:
                names = sorted({name.lower() for name in repositories})
                if not all(
                    installation.covers(installation.account, n) and existing(installation.account, n) for n in names
                ):
                    raise unprocessable(NOT_ACCESSIBLE)
            granted = dict(installation.permissions)
            if permissions:
                for key, level in permissions.items():
                    if LEVELS.get(level, 99) > LEVELS.get(granted.get(key, ""), 0):
                        raise unprocessable(NOT_GRANTED)
                granted = dict(permissions)
            alphabet = string.ascii_letters + string.digits
            value = "ghs_" + "".join(secrets.choice(alphabet) for _ in range(36))
            minted = InstallationToken(value, installation, self._clock() + TOKEN_LIFETIME, granted, names)
            self.tokens[value] = minted
            return minted
