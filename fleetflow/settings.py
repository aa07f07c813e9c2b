"""Where the repos are, which forge, which credentials: from flags, then environment variables, then a config file.

Config file (``--config FILE``, ``$FLEETFLOW_CONFIG``, or ``.fleetflow.yaml`` in the current directory)::

    forge: github                # or local
    controlPlane: contoso/platform-control-plane   # GitHub owner/name, or a path / git URL (local forge)
    github:
      apiUrl: https://api.github.com
      appId: 12345               # GitHub App auth (else a token from $GITHUB_TOKEN)
      privateKeyFile: /path/key.pem
    cacheDir: ~/.cache/fleetflow

Environment variables: ``FLEETFLOW_FORGE``, ``FLEETFLOW_CONTROL_PLANE`` (default ``$GITHUB_REPOSITORY``),
``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``FLEETFLOW_APP_ID``, ``FLEETFLOW_APP_PRIVATE_KEY`` (the PEM text, not a path;
``\\n`` for its line breaks is read as them), ``FLEETFLOW_CACHE_DIR``. Tokens are never read from the config file (it
is usually committed). App credentials win over ``GITHUB_TOKEN`` when both are set. On the github forge the token and
the API's address are checked before any request (:func:`_check_token`, :func:`_check_api_url`).

``FLEETFLOW_GITHUB_THROTTLE`` (``REQUESTS,WRITES``: seconds between two API requests and between two writes;
default ``0.25,1``, PyGithub's throttle, GitHub's guidance of at least one second between writes) changes the client
throttle: only for a GitHub that allows more (a GitHub Enterprise Server without secondary rate limits, or the
stand-in server the tests run the workflows against).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from pydantic.alias_generators import to_camel
from ruamel.yaml import YAML

from fleetflow.errors import Location, OneOf, Problem, Problems, UsageError, validation_problems
from fleetflow.model.documents import parse_documents, ruamel_document
from fleetflow.pathcheck import path_problem

DEFAULT_CONFIG = ".fleetflow.yaml"
ForgeName = Literal["github", "local"]
DEFAULT_GITHUB_THROTTLE = (0.25, 1.0)  # PyGithub's seconds between requests, between writes
KNOWN_KEYS = "forge, controlPlane, github (apiUrl, appId, privateKeyFile), cacheDir"
DEFAULT_API_URL = "https://api.github.com"
# GitHub's REST API: https://api.github.com; GitHub Enterprise Server's is http(s)://HOSTNAME/api/v3 (GitHub Docs, "REST
# API endpoints for GitHub Enterprise administration", "Endpoint URLs").
API_URL_HINT = (f"the API's address: {DEFAULT_API_URL} (the default), or https://HOSTNAME/api/v3 for GitHub "
                "Enterprise Server")


class _ConfigPart(BaseModel):
    """The config file's own models: camelCase keys, and a key the model does not know is refused."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)


class GitHubConfig(_ConfigPart):
    api_url: str | None = None
    # a number (or its text), not true: a boolean was an int to pydantic, and appId: true became App ID 1
    app_id: Annotated[str | StrictInt, OneOf(
        "a GitHub App ID (a whole number such as 123456)", "copy the App ID from the GitHub App's settings page",
    )] | None = None
    private_key_file: str | None = None


class ConfigFile(_ConfigPart):
    """``.fleetflow.yaml`` (or ``--config``/``$FLEETFLOW_CONFIG``). Never holds a token."""

    forge: ForgeName | None = None
    control_plane: str | None = None
    github: GitHubConfig = Field(default_factory=GitHubConfig)
    cache_dir: str | None = None


class Settings(BaseModel):
    """The settings a run uses, after flags, environment variables and the config file were combined."""

    model_config = ConfigDict(frozen=True)

    forge: ForgeName = "local"
    control_plane: str = ""
    token: str | None = Field(default=None, repr=False)
    api_url: str = DEFAULT_API_URL
    app_id: str | None = None
    app_private_key: str | None = Field(default=None, repr=False)
    cache_dir: Path = Path.home() / ".cache" / "fleetflow"
    github_throttle: tuple[float, float] = DEFAULT_GITHUB_THROTTLE
    # where control_plane and forge came from, for a message about them (--control-plane, $FLEETFLOW_CONTROL_PLANE,
    # controlPlane at file:line; the reason the forge was chosen)
    control_plane_from: str = "--control-plane"
    forge_from: str = "--forge"

    def describe(self) -> str:
        return f"forge {self.forge}, control plane {self.control_plane or '(not set)'}"


def read_config(
    path: Path | None, explicit: bool, given_by: str = "--config"
) -> tuple[ConfigFile, Callable[..., Location]]:
    """The config file as a model (an empty one when there is none), and where each of its keys is written.
    Every problem is a UsageError (exit 2) with file:line. ``given_by``: how an ``explicit`` path was named
    (``--config``, ``$FLEETFLOW_CONFIG``), for the message when it names nothing readable."""
    display = str(path)
    if path is None or not path.is_file():
        if explicit and path is not None:
            raise UsageError(_unusable(path, given_by))
        return ConfigFile(), lambda *_: Location(display)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError:  # unreadable: a traceback until 2026-11-29
        raise UsageError(_unusable(path, given_by)) from None
    except UnicodeDecodeError as exc:  # a traceback until 2026-11-28
        raise UsageError(Problem(f"file is not UTF-8 text (byte {exc.start + 1} is not)", Location(display),
                                 "save it as UTF-8")) from None
    problems = Problems()
    data = ruamel_document(YAML(typ="safe"), text, display, problems)  # the wording of every YAML error
    if problems:
        raise UsageError(problems.items)
    documents = parse_documents(text, display, Problems())  # read for positions only: the YAML loaded above
    where = documents[0].where if documents else (lambda *_: Location(display))
    written = documents[0].written if documents else None
    if data is None:
        return ConfigFile(), where
    if not isinstance(data, dict):
        raise UsageError(Problem("the config file must be a mapping", Location(display, 1), f"keys: {KNOWN_KEYS}"))
    try:
        return ConfigFile.model_validate(data), where
    except ValidationError as exc:
        raise UsageError(validation_problems(
            exc, where, unknown_hint=f"known keys: {KNOWN_KEYS}; tokens come from $GITHUB_TOKEN, never from a file",
            written=written,
        )) from None


def _unusable(path: Path, given_by: str) -> Problem:
    """The config file an option or ``$FLEETFLOW_CONFIG`` names, missing or unreadable: what and how to fix it.
    Until 2026-11-29 ``$FLEETFLOW_CONFIG`` naming a missing file said only "config file not found", and a folder
    was "not found" too."""
    said, hint = path_problem(path, "file") or ("cannot be read", "check the path and the file system it is on")
    if hint is None:  # the wrong kind
        hint = f"{given_by} names fleetflow's config file (YAML), such as .fleetflow.yaml"
    if given_by.startswith("$"):
        hint += f"; or unset {given_by[1:]} to read {DEFAULT_CONFIG} in the current folder when there is one"
    return Problem(f"{given_by} {path} {said}", None, hint)


def load_settings(
    *,
    forge: str | None = None,
    control_plane: str | None = None,
    config: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Flags win over environment variables, which win over the config file."""
    env = os.environ if environ is None else environ
    explicit = config is not None or "FLEETFLOW_CONFIG" in env
    # ~ as the shell would make it: a workflow's env: or a .env file leaves it as written
    named = Path(os.path.expanduser(env["FLEETFLOW_CONFIG"])) if "FLEETFLOW_CONFIG" in env else Path(DEFAULT_CONFIG)
    path = config or named
    file, where = read_config(path, explicit, "--config" if config is not None else "$FLEETFLOW_CONFIG")
    github = file.github
    private_key = env.get("FLEETFLOW_APP_PRIVATE_KEY")
    if not private_key and github.private_key_file:
        key_path = Path(os.path.expanduser(github.private_key_file))
        try:
            private_key = key_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            hint = "point privateKeyFile at the GitHub App's PEM file, or set FLEETFLOW_APP_PRIVATE_KEY"
            beside = path.parent / key_path
            if not key_path.is_absolute() and not key_path.exists():  # read from the current folder, not the file's
                hint = (f"a relative privateKeyFile is read from the current folder ({Path.cwd()}), not from the "
                        f"config file's folder{f', where {beside} is' if beside.is_file() else ''}: write the "
                        "path from the current folder, or an absolute one")
            raise UsageError(Problem(
                f"cannot read github.privateKeyFile {key_path}: {reason}",
                where("github", "privateKeyFile"),
                hint,
            )) from None
    token = (env.get("GITHUB_TOKEN") or "").strip() or None  # a secret or a file's line ends with a line break
    chosen_forge, forge_from = _forge_choice(forge, env, file.forge, where, bool(token))
    if chosen_forge not in ("github", "local"):
        raise UsageError(f"unknown forge {chosen_forge!r}: use github or local")
    cp, cp_from = next(((value, source) for value, source in (
        (control_plane, "--control-plane"), (env.get("FLEETFLOW_CONTROL_PLANE"), "$FLEETFLOW_CONTROL_PLANE"),
        (env.get("GITHUB_REPOSITORY"), "$GITHUB_REPOSITORY"),
        (file.control_plane, f"controlPlane (at {where('controlPlane')})")) if value), ("", ""))
    if not cp:
        raise UsageError(
            "no control-plane repo: pass --control-plane, set FLEETFLOW_CONTROL_PLANE (or GITHUB_REPOSITORY), "
            f"or write controlPlane: in {DEFAULT_CONFIG}"
        )
    cache = env.get("FLEETFLOW_CACHE_DIR") or file.cache_dir
    xdg = env.get("XDG_CACHE_HOME")
    default_cache = Path(xdg) / "fleetflow" if xdg else Path.home() / ".cache" / "fleetflow"
    app_id = env.get("FLEETFLOW_APP_ID") or (str(github.app_id) if github.app_id not in (None, "") else None)
    api_url = (env.get("GITHUB_API_URL", "").strip() or github.api_url or DEFAULT_API_URL).strip().rstrip("/")
    if chosen_forge == "github":  # the local forge talks to no API, and uses no token
        if token is not None and not (app_id or private_key):  # an App's credentials win: the token is not used
            _check_token(token)
        if env.get("GITHUB_API_URL", "").strip():
            _check_api_url(env["GITHUB_API_URL"], "$GITHUB_API_URL", None)
        elif github.api_url:
            _check_api_url(github.api_url, "github.apiUrl", where("github", "apiUrl"))
    return Settings(
        forge=chosen_forge,
        control_plane=cp,
        control_plane_from=cp_from,
        forge_from=forge_from,
        token=token,
        api_url=api_url,
        app_id=app_id,
        app_private_key=private_key or None,
        cache_dir=Path(os.path.expanduser(cache)) if cache else default_cache,
        github_throttle=_throttle(env.get("FLEETFLOW_GITHUB_THROTTLE", "")),
    )


def _throttle(text: str) -> tuple[float, float]:
    """``FLEETFLOW_GITHUB_THROTTLE``: ``REQUESTS,WRITES`` seconds (two numbers, 0 or more)."""
    if not text.strip():
        return DEFAULT_GITHUB_THROTTLE
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 2 or any(not 0 <= v < 3600 for v in values):
        raise UsageError(f"FLEETFLOW_GITHUB_THROTTLE={text!r} is not two numbers of seconds 'REQUESTS,WRITES' "
                         "(for example '0.25,1', the default); unset it to use the default")
    return values[0], values[1]


def _forge_choice(flag: str | None, env: Mapping[str, str], written: str | None, where: Callable[..., Location],
                  token: bool) -> tuple[str, str]:
    """The forge and why it is the one, as a clause: ``--forge github was given``, ``$FLEETFLOW_FORGE is local``,
    ``forge: local is written at file:line``, or the default the credentials in the environment pick."""
    if flag:
        return flag, f"--forge {flag} was given"
    if env.get("FLEETFLOW_FORGE"):
        return env["FLEETFLOW_FORGE"], f"$FLEETFLOW_FORGE is {env['FLEETFLOW_FORGE']}"
    if written:
        return written, f"forge: {written} is written at {where('forge')}"
    if token or env.get("FLEETFLOW_APP_ID"):
        return "github", f"${'GITHUB_TOKEN' if token else 'FLEETFLOW_APP_ID'} is set and no --forge was given"
    return "local", "neither GITHUB_TOKEN nor FLEETFLOW_APP_ID is set and no --forge was given"


# A header value takes visible ASCII and spaces only: requests refuses a line break (and puts the whole value, token
# included, in its error: requests/_internal_utils.py, utils.check_header_validity); GitHub's tokens are letters,
# digits and _ (github.blog changelog 2021-03-31, "Authentication token format updates are generally available").
_TOKEN_CHARACTERS = re.compile(r"[!-~]+")
_AUTH_SCHEMES = ("bearer ", "token ")


def _check_token(token: str) -> None:
    """``GITHUB_TOKEN`` (stripped) as one word a header can carry; never shown in the message. Until 2026-11-29 a
    line break inside it was "connection failed (InvalidHeader: ...)" with the token in the message, quotes or a
    ``Bearer`` before it a 401 "Bad credentials" with a hint about permissions."""
    if token.lower().startswith(_AUTH_SCHEMES):
        scheme = token.split()[0]
        raise UsageError(Problem(
            f"$GITHUB_TOKEN starts with {scheme!r}, the scheme of an Authorization header", None,
            f"set GITHUB_TOKEN to the token alone, without {scheme!r}: fleetflow writes the header itself"))
    if token[0] in "\"'`" or token[-1] in "\"'`":
        raise UsageError(Problem(
            "$GITHUB_TOKEN is written in quote marks, which are not part of any token", None,
            "remove the quotes around the value (docker --env-file, systemd's EnvironmentFile and a Kubernetes "
            "env value keep them as written)"))
    if not _TOKEN_CHARACTERS.fullmatch(token):
        at = next(i for i, c in enumerate(token) if not _TOKEN_CHARACTERS.fullmatch(c))
        raise UsageError(Problem(
            f"$GITHUB_TOKEN holds {_character(token[at])} at character {at + 1} of {len(token)}, which no token has",
            None, "copy the token again (a GitHub token is one word of letters, digits and _) and set it without "
            "anything around it"))


def _character(c: str) -> str:
    """A character of a secret, named without showing the secret: ``a line break``, ``a space``, ``'…' (U+2026)``."""
    names = {"\n": "a line break", "\r": "a carriage return", " ": "a space", "\t": "a tab"}
    return names.get(c) or (f"{c!r} (U+{ord(c):04X})" if c.isprintable() else f"a control character (U+{ord(c):04X})")


def _check_api_url(text: str, source: str, location: Location | None) -> None:
    """``GITHUB_API_URL`` or ``github.apiUrl`` as PyGithub's ``base_url``: http(s) with a host, no trailing ``/``.
    Until 2026-11-29 a URL without ``https://`` (or with a space) was a traceback in PyGithub, and GitHub's web
    address (https://github.com) sent every request to the web site instead of the API."""
    url = text.strip().rstrip("/")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - a port that is not a number raises
        port_ok = True
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok or re.search(r"\s", url):
        raise UsageError(Problem(f"{source} {text.strip()!r} is not an http(s) URL", location,
                                 f"give {API_URL_HINT}"))
    if parts.hostname in ("github.com", "www.github.com"):
        raise UsageError(Problem(f"{source} {url} is GitHub's web address, not its REST API", location,
                                 f"give {API_URL_HINT}"))
    if parts.hostname == "api.github.com" and parts.path:  # /api/v3 is GitHub Enterprise Server's, not github.com's
        raise UsageError(Problem(f"{source} {url}: GitHub's API takes no path after api.github.com", location,
                                 f"give {DEFAULT_API_URL} (HOSTNAME/api/v3 is GitHub Enterprise Server's form)"))
