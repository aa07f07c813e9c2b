from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

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
    [("forge: [\n", "invalid YAML"), ("- a\n", "must be a mapping"),
     ("controlPlane: x\ntoken: y\n", r"c.yaml:2:\d+: token: unknown field \(hint: known keys: forge, controlPlane"),
     # a value of the wrong kind, in words with how to write it ("forge: Input should be 'github' or 'local', got
     # 'gitlab'", "github: Input should be a valid dictionary", "cacheDir: Input should be a valid string, got 5",
     # until 2026-11-29)
     ("forge: gitlab\ncontrolPlane: x\n", r"c.yaml:1:8: forge is 'gitlab', not 'github' or 'local' \(hint: write one "
      r"of 'github' or 'local' after 'forge:'\)"),
     ("forge: GitHub\n", r"c.yaml:1:8: forge is 'GitHub', not 'github' or 'local' \(hint: write forge: github; the "
      r"values are case-sensitive\)"),
     ("cacheDir: 0777\n", r"c.yaml:1:11: cacheDir is a number, not text \(hint: quote it if it is meant as text: "
      r"cacheDir: \"0777\"\)"),
     ("github:\n  apiUrl: [a]\n", r"c.yaml:2:3: github.apiUrl is a list, not text \(hint: write the text after "
      r"'apiUrl:'; quote text that starts with '\[' or '\{'\)"),
     ("github:\n  apiUrl: x\n  appid: 1\n", r"c.yaml:3:\d+: github.appid: unknown field"),
     ("github: [1]\n", r"c.yaml:1:1: github is a list, not a mapping \(hint: write its keys on the lines below "
      r"'github:', indented more, without '- '\)"),
     # appId: true was App ID 1 (pydantic took the boolean as an int); [1] two messages, one per type, until
     # 2026-11-28
     ("github:\n  appId: true\n", r"c.yaml:2:10: github.appId is a boolean, not a GitHub App ID \(a whole number"),
     ("github:\n  appId: [1]\n", r"c.yaml:2:3: github.appId is a list, not a GitHub App ID \(a whole number"),
     # an empty key: in words, at its own line (line 2, "Input should be a valid dictionary, got None", until
     # 2026-11-28)
     ("github:\n", r"c.yaml:1:8: github is empty \(hint: write its keys on the lines below 'github:', indented more")],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_settings(config=config, environ={})


def test_a_config_file_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    """A traceback (UnicodeDecodeError) in every command until 2026-11-28 (a bad-input hunt)."""
    config = tmp_path / "c.yaml"
    config.write_bytes(b"controlPlane: o/r  # caf\xe9\n")
    with pytest.raises(UsageError, match=r"c.yaml: file is not UTF-8 text \(byte 25 is not\)"):
        load_settings(config=config, environ={})


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--config .*none.yaml does not exist \(hint: check the path"):
        load_settings(config=tmp_path / "none.yaml", environ={})


@pytest.mark.parametrize(("name", "said", "hint"), [
    ("none.yaml", "does not exist", "check the path; relative paths start from the current folder"),
    ("folder", "is a folder, not a file", "$FLEETFLOW_CONFIG names fleetflow's config file (YAML)"),
    ("file.yaml/c.yaml", "is below .*file.yaml, which is a file, not a folder", "give a path whose folders are"),
])
def test_fleetflow_config_naming_nothing_readable_says_where_it_came_from_and_how_to_fix_it(
        tmp_path: Path, name: str, said: str, hint: str) -> None:
    """``$FLEETFLOW_CONFIG`` naming a missing file said only "config file not found", with no hint and not which
    variable named it; a folder was "not found" too (until 2026-11-29). The same check as every path option
    (fleetflow.pathcheck), and the way back to the default file."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.yaml").write_text("forge: local\n")
    with pytest.raises(UsageError) as caught:
        load_settings(environ={"FLEETFLOW_CONFIG": str(tmp_path / name)})
    (problem,) = caught.value.problems()
    assert re.fullmatch(rf"\$FLEETFLOW_CONFIG {re.escape(str(tmp_path))}/{name.split('/')[0]}.* {said}",
                        problem.message), problem.message
    assert problem.hint is not None and problem.hint.startswith(hint), problem.hint
    assert problem.hint.endswith("or unset FLEETFLOW_CONFIG to read .fleetflow.yaml in the current folder when "
                                 "there is one")


def test_no_control_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="no control-plane repo"):
        load_settings(environ={})


def test_unreadable_private_key_file_is_a_usage_error_at_its_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"controlPlane: o/r\ngithub:\n  appId: 42\n  privateKeyFile: {tmp_path / 'nope.pem'}\n")
    with pytest.raises(UsageError, match=r"c.yaml:4:\d+: cannot read github.privateKeyFile .*nope.pem"):
        load_settings(config=config, environ={})


def test_a_relative_private_key_file_says_where_it_was_looked_for(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``privateKeyFile: key.pem`` beside the config file, fleetflow run from elsewhere (``--config
    ../platform/.fleetflow.yaml``): the path is read from the current folder, as every relative path fleetflow is
    given. Until 2026-11-29 "No such file or directory" with the hint to point privateKeyFile at the PEM file, which
    it seemed to be."""
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "key.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    config = tmp_path / "platform" / ".fleetflow.yaml"
    config.write_text("controlPlane: o/r\ngithub:\n  appId: 42\n  privateKeyFile: key.pem\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(UsageError) as caught:
        load_settings(config=config, environ={})
    (problem,) = caught.value.problems()
    assert str(problem) == (
        f"{config}:4:19: cannot read github.privateKeyFile key.pem: No such file or directory (hint: a relative "
        f"privateKeyFile is read from the current folder ({tmp_path / 'elsewhere'}), not from the config file's "
        f"folder, where {tmp_path / 'platform' / 'key.pem'} is: write the path from the current folder, or an "
        "absolute one)")
    monkeypatch.chdir(tmp_path / "platform")
    assert load_settings(config=config, environ={}).app_private_key == "-----BEGIN RSA PRIVATE KEY-----\n"


def test_settings_are_a_model_that_keeps_secrets_out_of_its_repr() -> None:
    s = load_settings(environ={"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "secret-token"})
    assert s.token == "secret-token" and "secret-token" not in repr(s)


YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["forge", "controlPlane", "github", "cacheDir", "apiUrl", "appId", "privateKeyFile", "x"]),
        children, max_size=4),
    max_leaves=10,
)


@given(data=YAML_VALUES, raw=st.none() | st.text(max_size=40))
@example(data=None, raw="forge: github\nsince: 2024-02-30\n")  # ruamel's ValueError: a traceback before
@example(data=None, raw="a:\n  ? - x\n    - [y]\n  : 1\n")  # a list key holding a list: ruamel's TypeError
@example(data=None, raw="forge: github\n---\nforge: local\n")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_config_file_gives_settings_or_a_usage_error(tmp_path: Path, data: object, raw: str | None) -> None:
    """hypothesis: whatever the config file holds, load_settings returns settings or raises UsageError (exit 2)
    naming the file, never another exception."""
    config = tmp_path / "c.yaml"
    if raw is not None:
        config.write_text(raw, encoding="utf-8")
    else:
        buffer = io.StringIO()
        YAML(typ="safe", pure=True).dump(data, buffer)
        config.write_text(buffer.getvalue(), encoding="utf-8")
    try:
        load_settings(config=config, environ={"FLEETFLOW_CONTROL_PLANE": "o/r"})
    except UsageError as exc:
        assert exc.problems() and all(str(p) for p in exc.problems())


@pytest.mark.parametrize(("text", "expected"), [("", (0.25, 1.0)), ("0,0", (0.0, 0.0)), (" 0.5 , 2 ", (0.5, 2.0))])
def test_github_throttle_from_the_environment(text: str, expected: tuple[float, float]) -> None:
    env = {"GITHUB_REPOSITORY": "o/r", "FLEETFLOW_GITHUB_THROTTLE": text}
    assert load_settings(environ=env).github_throttle == expected


@pytest.mark.parametrize("text", ["0", "a,b", "1,2,3", "-1,0", "0,1e9"])
def test_a_bad_github_throttle_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="FLEETFLOW_GITHUB_THROTTLE"):
        load_settings(environ={"GITHUB_REPOSITORY": "o/r", "FLEETFLOW_GITHUB_THROTTLE": text})


def test_fleetflow_config_with_a_tilde_is_in_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``FLEETFLOW_CONFIG: ~/fleetflow.yaml`` in a workflow's ``env:`` (or a .env file) reaches fleetflow as written:
    no shell expands it (a shell does so only at the start of a word or of an assignment's value: glibc manual,
    "Details of Tilde Expansion", https://sourceware.org/glibc/manual/2.42/html_node/Tilde-Expansion.html). Until
    2026-11-29 it was "$FLEETFLOW_CONFIG ~/fleetflow.yaml does not exist"; now the file in the home folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "fleetflow.yaml").write_text("controlPlane: contoso/cp\n")
    settings = load_settings(environ={"FLEETFLOW_CONFIG": "~/fleetflow.yaml"})
    assert settings.control_plane == "contoso/cp"


# -- credentials and the API's address (a realistic-mistake hunt, 2026-11-29) ----------------------------------------

GITHUB = {"GITHUB_REPOSITORY": "o/r", "FLEETFLOW_FORGE": "github"}


@pytest.mark.parametrize("written", ["ghp_abc123\n", "  ghp_abc123\r\n", "\tghp_abc123 "])
def test_a_token_with_a_line_break_around_it_is_the_token(written: str) -> None:
    """``GITHUB_TOKEN`` read from a file or a secret saved with its final line break: requests refuses a header value
    with a line break ("Invalid leading whitespace, reserved character(s), or return character(s) in header value",
    requests/_internal_utils.py and utils.check_header_validity) and its message quoted the whole value. Until
    2026-11-29 every command failed with "connection failed (InvalidHeader: ... 'token ghp_...\\n')": exit 3, the
    token in the output. No token has whitespace around it (github.blog changelog 2021-03-31, "Authentication token
    format updates are generally available"), so it is stripped."""
    settings = load_settings(environ=GITHUB | {"GITHUB_TOKEN": written})
    assert settings.token == "ghp_abc123"
    assert load_settings(environ={"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": " \n"}).forge == "local"  # no token


@pytest.mark.parametrize(("written", "message", "hint"), [
    ('"ghp_abc123"', "$GITHUB_TOKEN is written in quote marks, which are not part of any token",
     "remove the quotes around the value"),
    ("'ghp_abc123'", "$GITHUB_TOKEN is written in quote marks", "remove the quotes"),
    ("Bearer ghp_abc123", "$GITHUB_TOKEN starts with 'Bearer', the scheme of an Authorization header",
     "set GITHUB_TOKEN to the token alone, without 'Bearer': fleetflow writes the header itself"),
    ("token ghp_abc123", "$GITHUB_TOKEN starts with 'token', the scheme", "without 'token'"),
    ("ghp_abc\n123", "$GITHUB_TOKEN holds a line break at character 8 of 11, which no token has",
     "copy the token again"),
    ("ghp_abc 123", "$GITHUB_TOKEN holds a space at character 8 of 11", "copy the token again"),
    ("ghp_abc…", "$GITHUB_TOKEN holds '…' (U+2026) at character 8 of 8", "copy the token again"),
])
def test_a_token_no_header_can_carry_is_a_usage_error_that_never_shows_it(written: str, message: str,
                                                                          hint: str) -> None:
    """Quotes kept by an env file, the ``Bearer``/``token`` scheme pasted with the token, a token cut by a line
    break or shortened with an ellipsis where it was copied from: GitHub answers 401 "Bad credentials" (or requests
    refuses the header and quotes it), and the hint spoke of permissions (until 2026-11-29). Now exit 2 before any
    request, the token's characters never in the message."""
    with pytest.raises(UsageError) as caught:
        load_settings(environ=GITHUB | {"GITHUB_TOKEN": written})
    (problem,) = caught.value.problems()
    assert problem.message.startswith(message), problem.message
    assert problem.hint is not None and hint in problem.hint, problem.hint
    assert "abc" not in str(problem)
    # an App's credentials are what the github forge uses then: the token is not read, so not judged
    key = {"FLEETFLOW_APP_ID": "1", "FLEETFLOW_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----"}
    assert load_settings(environ=GITHUB | key | {"GITHUB_TOKEN": written}).app_id == "1"
    assert load_settings(environ=GITHUB | {"FLEETFLOW_FORGE": "local", "GITHUB_TOKEN": written}).forge == "local"


@pytest.mark.parametrize(("written", "url"), [
    ("https://api.github.com/", "https://api.github.com"),
    (" https://ghe.example.com/api/v3/\n", "https://ghe.example.com/api/v3"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
])
def test_the_api_url_loses_its_trailing_slash_and_whitespace(written: str, url: str) -> None:
    assert load_settings(environ=GITHUB | {"GITHUB_TOKEN": "t", "GITHUB_API_URL": written}).api_url == url


@pytest.mark.parametrize(("written", "message"), [
    # PyGithub's Requester: AttributeError ('NoneType' object has no attribute 'removeprefix') on a URL without a
    # scheme, AssertionError "Unknown URL scheme" on ftp://, ValueError on a port that is not a number: tracebacks
    # until 2026-11-29
    ("ghe.example.com/api/v3", "$GITHUB_API_URL 'ghe.example.com/api/v3' is not an http(s) URL"),
    ("ftp://ghe.example.com", "$GITHUB_API_URL 'ftp://ghe.example.com' is not an http(s) URL"),
    ("https://ghe.example.com:44 3/api/v3", "$GITHUB_API_URL 'https://ghe.example.com:44 3/api/v3' is not an"),
    ("https://ghe.example.com /api/v3", "$GITHUB_API_URL 'https://ghe.example.com /api/v3' is not an http(s) URL"),
    # GitHub's web address, not its API (GitHub Docs: the REST API is at https://api.github.com, and GitHub
    # Enterprise Server's at http(s)://HOSTNAME/api/v3, "REST API endpoints for GitHub Enterprise administration")
    ("https://github.com/", "$GITHUB_API_URL https://github.com is GitHub's web address, not its REST API"),
    ("https://www.github.com", "$GITHUB_API_URL https://www.github.com is GitHub's web address"),
])
def test_an_api_url_that_is_no_api_is_a_usage_error(written: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_settings(environ=GITHUB | {"GITHUB_TOKEN": "t", "GITHUB_API_URL": written})
    (problem,) = caught.value.problems()
    assert problem.message == message or problem.message.startswith(message), problem.message
    assert problem.hint == ("give the API's address: https://api.github.com (the default), or "
                            "https://HOSTNAME/api/v3 for GitHub Enterprise Server")
    # the local forge talks to no API: a runner's GITHUB_API_URL is not its business
    assert load_settings(environ=GITHUB | {"FLEETFLOW_FORGE": "local", "GITHUB_API_URL": written}).forge == "local"


def test_api_github_com_with_the_enterprise_path_is_a_usage_error() -> None:
    """``https://api.github.com/api/v3``: GitHub Enterprise Server's path (``http(s)://HOSTNAME/api/v3``) on github.com,
    where every request then answered 404 "Not Found" with a hint about what the credentials may see (until
    2026-11-29)."""
    with pytest.raises(UsageError) as caught:
        load_settings(environ=GITHUB | {"GITHUB_TOKEN": "t", "GITHUB_API_URL": "https://api.github.com/api/v3/"})
    assert str(caught.value.problems()[0]) == (
        "$GITHUB_API_URL https://api.github.com/api/v3: GitHub's API takes no path after api.github.com (hint: give "
        "https://api.github.com (HOSTNAME/api/v3 is GitHub Enterprise Server's form))")


def test_an_api_url_in_the_config_file_is_checked_at_its_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("forge: github\ncontrolPlane: o/r\ngithub:\n  apiUrl: ghe.example.com/api/v3\n")
    with pytest.raises(UsageError, match=r"c.yaml:4:\d+: github.apiUrl 'ghe.example.com/api/v3' is not an http\(s\) "
                                         r"URL \(hint: give the API's address"):
        load_settings(config=config, environ={"GITHUB_TOKEN": "t"})


@pytest.mark.parametrize(("given", "environ", "message", "hint"), [
    # a browser's address, an https or ssh clone URL, the clone URL's .git: GitHub names no repository *.git (it
    # takes the suffix off a new repository's name: github/docs#44518, line/centraldogma#956)
    ("https://github.com/contoso/cp", {}, "--control-plane https://github.com/contoso/cp: GitHub repositories are "
     "named owner/name here", "pass --control-plane contoso/cp"),
    ("git@github.com:contoso/cp.git", {}, "--control-plane git@github.com:contoso/cp.git: GitHub repositories are "
     "named owner/name here", "pass --control-plane contoso/cp"),
    ("contoso/cp.git", {}, "--control-plane contoso/cp.git: GitHub repositories are named owner/name here",
     "pass --control-plane contoso/cp"),
    (None, {"FLEETFLOW_CONTROL_PLANE": "https://ghe.example.com/contoso/cp/"}, "$FLEETFLOW_CONTROL_PLANE "
     "https://ghe.example.com/contoso/cp/: GitHub repositories are named owner/name here",
     "set FLEETFLOW_CONTROL_PLANE=contoso/cp"),
    ("contoso", {}, "--control-plane 'contoso' is not a GitHub repository's owner/name",
     "pass --control-plane contoso/platform-control-plane"),
    # GITHUB_TOKEN in the shell picks the github forge; a folder on this machine is the local forge's
    ("{tmp}/cp.git", {}, "--control-plane {tmp}/cp.git is a path, and the github forge takes a GitHub repository's "
     "owner/name", "for a repository on this machine pass --forge local; the github forge was chosen because "
     "$GITHUB_TOKEN is set and no --forge was given"),
])
def test_the_github_forge_names_a_control_plane_it_cannot_use_and_what_to_give(
        tmp_path: Path, given: str | None, environ: dict[str, str], message: str, hint: str) -> None:
    """Until 2026-11-29 a URL was "forge/git error: invalid GitHub repository ...: expected owner/name" (exit 3, a
    forge failure) in every command but init, ``owner/name.git`` a 404 "it does not exist, or the credentials cannot
    see it", and a path "invalid GitHub repository". Now exit 2 before any request, with what to give, where it
    was given."""
    from fleetflow.forge.factory import make_forge

    given = given.replace("{tmp}", str(tmp_path)) if given else None
    settings = load_settings(control_plane=given, environ={"GITHUB_TOKEN": "t", **environ})
    with pytest.raises(UsageError) as caught:
        make_forge(settings)
    (problem,) = caught.value.problems()
    assert problem.message == message.replace("{tmp}", str(tmp_path))
    assert problem.hint == hint


def test_the_local_forge_says_an_owner_and_name_is_a_github_repository(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``FLEETFLOW_FORGE=local`` left in the shell (or ``forge: local`` in the config file, or no credentials) with a
    GitHub owner/name: "git ls-remote failed for <cwd>/contoso/cp: fatal: ... does not appear to be a git
    repository" (exit 3) until 2026-11-29, which says nothing of the forge. A folder of that name is still used."""
    from fleetflow.forge.factory import make_forge

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text("forge: local\n")
    for environ, why in (({"FLEETFLOW_FORGE": "local"}, "$FLEETFLOW_FORGE is local"),
                         ({"FLEETFLOW_CONFIG": str(config)}, f"forge: local is written at {config}:1:8"),
                         ({}, "neither GITHUB_TOKEN nor FLEETFLOW_APP_ID is set and no --forge was given")):
        settings = load_settings(control_plane="contoso/cp", environ=environ)
        with pytest.raises(UsageError) as caught:
            make_forge(settings)
        (problem,) = caught.value.problems()
        assert problem.message == ("--control-plane contoso/cp: no such folder, and the local forge takes the path "
                                   "or git URL of a repository")
        assert problem.hint == ("for the GitHub repository contoso/cp pass --forge github and set GITHUB_TOKEN (or the "
                                "GitHub App's FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY); the local forge was "
                                f"chosen because {why}")
    (tmp_path / "contoso" / "cp").mkdir(parents=True)
    make_forge(load_settings(control_plane="contoso/cp", environ={})).close()
