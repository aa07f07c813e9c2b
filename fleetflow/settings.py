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
``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``FLEETFLOW_APP_ID``, ``FLEETFLOW_APP_PRIVATE_KEY`` (the PEM text),
``FLEETFLOW_CACHE_DIR``. Tokens are never read from the config file (it is usually committed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from fleetflow.errors import Location, Problem, UsageError

DEFAULT_CONFIG = ".fleetflow.yaml"


@dataclass(frozen=True)
class Settings:
    forge: str = "local"
    control_plane: str = ""
    token: str | None = None
    api_url: str = "https://api.github.com"
    app_id: str | None = None
    app_private_key: str | None = None
    cache_dir: Path = Path.home() / ".cache" / "fleetflow"

    def describe(self) -> str:
        return f"forge {self.forge}, control plane {self.control_plane or '(not set)'}"


def _read_config(path: Path | None, explicit: bool) -> dict[str, Any]:
    if path is None or not path.is_file():
        if explicit and path is not None:
            raise UsageError(f"config file not found: {path}")
        return {}
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or {}
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(str(path), mark.line + 1 if mark else None)
        raise UsageError(str(Problem("invalid YAML in the config file", loc, "fix the YAML syntax"))) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the config file must be a mapping")
    unknown = set(data) - {"forge", "controlPlane", "github", "cacheDir"}
    if unknown:
        raise UsageError(f"{path}: unknown keys {sorted(unknown)}; known: forge, controlPlane, github, cacheDir")
    return data


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
    path = config or (Path(env["FLEETFLOW_CONFIG"]) if "FLEETFLOW_CONFIG" in env else Path(DEFAULT_CONFIG))
    file = _read_config(path, explicit)
    github = file.get("github") or {}
    key_file = github.get("privateKeyFile")
    private_key = env.get("FLEETFLOW_APP_PRIVATE_KEY")
    if not private_key and key_file:
        private_key = Path(os.path.expanduser(str(key_file))).read_text(encoding="utf-8")
    chosen_forge = forge or env.get("FLEETFLOW_FORGE") or file.get("forge") or (
        "github" if env.get("GITHUB_TOKEN") or env.get("FLEETFLOW_APP_ID") else "local"
    )
    if chosen_forge not in ("github", "local"):
        raise UsageError(f"unknown forge {chosen_forge!r}: use github or local")
    cp = (
        control_plane
        or env.get("FLEETFLOW_CONTROL_PLANE")
        or env.get("GITHUB_REPOSITORY")
        or str(file.get("controlPlane") or "")
    )
    if not cp:
        raise UsageError(
            "no control-plane repo: pass --control-plane, set FLEETFLOW_CONTROL_PLANE (or GITHUB_REPOSITORY), "
            f"or write controlPlane: in {DEFAULT_CONFIG}"
        )
    cache = env.get("FLEETFLOW_CACHE_DIR") or file.get("cacheDir")
    xdg = env.get("XDG_CACHE_HOME")
    default_cache = Path(xdg) / "fleetflow" if xdg else Path.home() / ".cache" / "fleetflow"
    return Settings(
        forge=chosen_forge,
        control_plane=cp,
        token=env.get("GITHUB_TOKEN") or None,
        api_url=(env.get("GITHUB_API_URL") or github.get("apiUrl") or "https://api.github.com").rstrip("/"),
        app_id=env.get("FLEETFLOW_APP_ID") or (str(github["appId"]) if github.get("appId") else None),
        app_private_key=private_key or None,
        cache_dir=Path(os.path.expanduser(str(cache))) if cache else default_cache,
    )
