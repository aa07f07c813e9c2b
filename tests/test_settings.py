from __future__ import annotations

from pathlib import Path

import pytest

from fleetflow.errors import UsageError
from fleetflow.settings import load_settings


def test_flags_beat_env_beat_file(tmp_path: Path) -> None:
    config = tmp_path / "ff.yaml"
    config.write_text("forge: local\ncontrolPlane: from/file\ngithub:\n  apiUrl: https://ghe.example/api/v3\n")
    env = {"FLEETFLOW_CONFIG": str(config)}
    s = load_settings(environ=env)
    assert (s.forge, s.control_plane, s.api_url) == ("local", "from/file", "https://ghe.example/api/v3")
    env |= {"GITHUB_REPOSITORY": "from/env", "GITHUB_TOKEN": "t", "FLEETFLOW_FORGE": "github",
            "GITHUB_API_URL": "http://127.0.0.1:9/"}
    s = load_settings(environ=env)
    assert (s.forge, s.control_plane, s.token, s.api_url) == ("github", "from/env", "t", "http://127.0.0.1:9")
    s = load_settings(forge="local", control_plane="from/flag", environ=env)
    assert (s.forge, s.control_plane) == ("local", "from/flag")


def test_token_selects_github_by_default() -> None:
    assert load_settings(environ={"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t"}).forge == "github"
    assert load_settings(environ={"GITHUB_REPOSITORY": "o/r"}).forge == "local"


def test_app_key_from_file(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN KEY-----\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"controlPlane: o/r\ngithub:\n  appId: 42\n  privateKeyFile: {key}\n")
    s = load_settings(config=config, environ={})
    assert s.app_id == "42" and s.app_private_key == "-----BEGIN KEY-----\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [("forge: [\n", "invalid YAML"), ("- a\n", "must be a mapping"), ("controlPlane: x\ntoken: y\n", "unknown keys"),
     ("forge: gitlab\ncontrolPlane: x\n", "unknown forge")],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_settings(config=config, environ={})


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="config file not found"):
        load_settings(config=tmp_path / "none.yaml", environ={})


def test_no_control_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="no control-plane repo"):
        load_settings(environ={})
