"""The github forge's credentials as people get them wrong (a realistic-mistake hunt, 2026-11-29): a GitHub App key
pasted on one line with ``\\n``, as a path, base64-encoded, the wrong kind of key; the App ID and the key swapped;
and what GitHub's 401s (and its "Integration not found") tell them to fix. Against the stand-in's App endpoints
(tests/ghstub/apps.py), which check the JWT as GitHub does."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from github import GithubException

from fleetflow.errors import ForgeError, UsageError
from fleetflow.forge.github import GitHubForge, _forge_error
from tests.ghstub.fixtures import github_stub  # noqa: F401
from tests.ghstub.server import GitHubStub

REPO = "acme/gitops"
FAST: dict[str, Any] = {"retries": 0, "backoff_factor": 0, "seconds_between_requests": 0,
                        "seconds_between_writes": 0}
PERMISSIONS = "contents: write"  # the permissions hint, which no 401 is about


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


@pytest.fixture
def stub(github_stub: GitHubStub, key: rsa.RSAPrivateKey) -> GitHubStub:  # noqa: F811
    github_stub.create_repo(REPO)
    github_stub.register_app(12345, pem(key), installed_on=["acme"], slug="fleetflow")
    return github_stub


@pytest.mark.parametrize("written", [
    lambda k: k.replace("\n", "\\n"),  # a .env file's one line (docker --env-file, a platform's variable)
    lambda k: '"' + k.strip().replace("\n", "\\n") + '"',  # ... with the quotes such a file keeps
    lambda k: k.replace("\n", "\r\n"),  # saved on Windows
    lambda k: "\n  " + k + "\n\n",  # blank lines around it
])
def test_a_key_written_on_one_line_with_backslash_n_signs(stub: GitHubStub, key: rsa.RSAPrivateKey,
                                                          written: Any) -> None:
    """A PEM key holds no backslash, so ``\\n`` in one can only mean a line break; Probot reads its PRIVATE_KEY the
    same way (probot/get-private-key, src/index.ts: "newlines are escaped"). Until 2026-11-29 "the GitHub App private
    key cannot sign a JWT (InvalidKeyError)", exit 2. The installation is found with the JWT it signs."""
    forge = GitHubForge(app_id="12345", app_private_key=written(pem(key)), api_url=stub.url, **FAST)
    assert forge.default_branch(REPO) == "main"
    forge.close()


@pytest.mark.parametrize(("written", "said", "hint"), [
    ("{path}", "it holds a path ({path}), not the key",
     'put the file\'s text in FLEETFLOW_APP_PRIVATE_KEY (FLEETFLOW_APP_PRIVATE_KEY="$(cat {path})"), or name the '
     "file in the config file: github: privateKeyFile: {path}"),
    ("~/fleetflow.2026-11-29.private-key.pem", "it holds a path (~/fleetflow.2026-11-29.private-key.pem), not the",
     "put the file's text in FLEETFLOW_APP_PRIVATE_KEY"),
    ("{base64}", "it is base64-encoded", "give the PEM text itself (decode it: base64 -d), the -----BEGIN line first"),
    ("{public}", "it holds a PUBLIC KEY, not a private key", "give the App's private key, the whole .pem file"),
    ("{ec}", "it holds an EC PRIVATE KEY, and a GitHub App's key is an RSA key in PEM", "give the App's private key"),
    ("{cut}", "its PEM text is cut or changed (a line lost or joined, a character missing)",
     "give the App's private key"),
    ("0123456789abcdef0123456789abcdef01234567", "it holds no PEM key (no -----BEGIN line)",
     "give the App's private key, the whole .pem file GitHub made (Generate a private key on the App's settings "
     "page) from -----BEGIN RSA PRIVATE KEY----- to its END line, in FLEETFLOW_APP_PRIVATE_KEY, or name the file "
     "in the config file's github.privateKeyFile"),
])
def test_a_key_that_is_no_rsa_key_says_what_it_is_instead(tmp_path: Path, key: rsa.RSAPrivateKey, written: str,
                                                          said: str, hint: str) -> None:
    """The path of the .pem where its text belongs, the key base64-encoded (as a Kubernetes Secret's data shows it),
    the public half, an SSH or EC key, a key cut short: until 2026-11-29 each was "cannot sign a JWT
    (InvalidKeyError): give the app's PEM private key ...", which said nothing of what was given instead. The key
    itself is never shown."""
    path = tmp_path / "fleetflow.private-key.pem"
    path.write_text(pem(key))
    text = pem(key)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    values = {"{path}": str(path), "{base64}": base64.b64encode(text.encode()).decode(), "{public}": public,
              "{ec}": other, "{cut}": text[:300] + text[-40:]}
    with pytest.raises(UsageError) as caught:
        GitHubForge(app_id="12345", app_private_key=values.get(written, written), **FAST)
    (problem,) = caught.value.problems()
    assert problem.message.startswith("the GitHub App private key cannot sign a JWT (")
    assert problem.message.endswith(": " + said.replace("{path}", str(path))) or \
        said.replace("{path}", str(path)) in problem.message, problem.message
    assert problem.hint is not None and problem.hint.startswith(hint.replace("{path}", str(path))), problem.hint
    body = "".join(text.splitlines()[1:-1])
    assert body[:40] not in str(problem) and body[-40:] not in str(problem)


def test_the_app_id_and_the_key_swapped_or_blank(key: rsa.RSAPrivateKey) -> None:
    """The key in FLEETFLOW_APP_ID (and the ID in FLEETFLOW_APP_PRIVATE_KEY): "cannot sign a JWT" about the ID until
    2026-11-29. A blank FLEETFLOW_APP_ID ("  ", an empty secret's line) was PyGithub's AssertionError "app_id must
    not be empty", a traceback."""
    with pytest.raises(UsageError) as caught:
        GitHubForge(app_id=pem(key), app_private_key="12345", **FAST)
    (problem,) = caught.value.problems()
    assert problem.message == "FLEETFLOW_APP_ID holds a PEM key, not the App's ID"
    assert problem.hint is not None and problem.hint.endswith("were the two swapped?")
    assert "MII" not in str(problem)
    with pytest.raises(UsageError, match="GitHub App credentials are incomplete: FLEETFLOW_APP_ID is not set"):
        GitHubForge(app_id="  \n", app_private_key=pem(key), **FAST)


# -- what GitHub's 401s say to fix -------------------------------------------------------------------------------


def test_a_jwt_github_cannot_verify_names_the_id_and_key_not_permissions(stub: GitHubStub,
                                                                         key: rsa.RSAPrivateKey) -> None:
    """A key of another App (or one deleted on the App's page), or an App ID of another App: GitHub answers the JWT
    with 401 "A JSON web token could not be decoded" (octokit/auth-app.js#375: a valid key with the wrong appId).
    Until 2026-11-29 the hint was "the token is invalid or expired ...; the token (or the GitHub App installation)
    needs contents: write, ...": no permission answers 401."""
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for app_id, private_key in (("12345", pem(other)), ("54321", pem(key))):
        forge = GitHubForge(app_id=app_id, app_private_key=private_key, api_url=stub.url, **FAST)
        with pytest.raises(ForgeError) as failed:
            forge.default_branch(REPO)
        message = str(failed.value)
        assert "cannot find the GitHub App installation: A JSON web token could not be decoded (hint: GitHub could " \
               "not verify the App's JWT with the App this ID names: the ID and the private key are of two " \
               "different Apps, or the key was deleted on the App's settings page (generate a new one); " \
               "FLEETFLOW_APP_ID (github.appId) must be the App ID (the number at the top of the App's settings " \
               "page) or its client ID, not an installation's ID or the App's name)" in message, message
        assert PERMISSIONS not in message
        forge.close()


def test_bad_credentials_for_a_token_says_to_make_a_new_one(stub: GitHubStub) -> None:
    """A mistyped, expired or revoked token, or one of another GitHub (github.com's on a GitHub Enterprise
    Server): GitHub answers 401 ``{"message": "Bad credentials"}`` ("If the token is invalid, the server will
    respond with a 401 status and a 'bad credentials' message", with GitHub's answer to
    ``curl --header "Authorization: token invalid" https://api.github.com/notifications``:
    https://pinecone-forest.com/oauth2-v0.0.4/Handling-Errors.html). The hint spoke of permissions until
    2026-11-29."""
    stub.token = "ghp_the_real_one"
    forge = GitHubForge(token="ghp_revoked", api_url=stub.url, **FAST)
    with pytest.raises(ForgeError) as failed:
        forge.default_branch(REPO)
    assert str(failed.value).startswith(
        "GitHub: cannot read the repository: Bad credentials (hint: GitHub did not accept the token: it is mistyped, "
        "expired or revoked (a fine-grained token's expiry date is on its settings page), or it is of another GitHub "
        f"than {stub.url.removeprefix('http://')}; make a new one "
        "there and set GITHUB_TOKEN to it)")
    assert PERMISSIONS not in str(failed.value)
    forge.close()


def test_an_installation_removed_while_fleetflow_works_says_so(stub: GitHubStub, key: rsa.RSAPrivateKey) -> None:
    """The App uninstalled (or suspended) between two requests: its installation tokens answer 401 "Bad credentials"
    (the stand-in's AppRegistry.token, as GitHub revokes an uninstalled installation's tokens)."""
    forge = GitHubForge(app_id="12345", app_private_key=pem(key), api_url=stub.url, **FAST)
    assert forge.default_branch(REPO) == "main"
    [installation] = stub.store.apps.installations
    stub.uninstall_app(installation)
    with pytest.raises(ForgeError, match=r"Bad credentials \(hint: GitHub refused the App's installation token: the "
                                         r"App was uninstalled or suspended on this account meanwhile; install it "
                                         r"again"):
        forge.statuses(REPO, "a" * 40)
    forge.close()


@pytest.mark.parametrize(("status", "said", "url", "hint"), [
    # an App ID GitHub knows no App by (actions/create-github-app-token#76, octokit/authentication-strategies.js#165)
    (404, "Integration not found", "/repos/acme/gitops/installation", "GitHub knows no GitHub App by this ID: "
     "FLEETFLOW_APP_ID (github.appId) must be the App ID"),
    # the JWT's times refused: the machine's clock is off (the stand-in's JWT_EXPIRED / JWT_ISSUED_LATER words)
    (401, "'Expiration time' claim ('exp') is too far in the future", "/app/installations/7/access_tokens",
     "GitHub refused the times in the App's JWT: this machine's clock is off by more than a minute"),
    (401, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
     "/repos/acme/gitops/installation", "GitHub refused the times in the App's JWT"),
])
def test_github_answers_to_the_apps_jwt_name_their_cause(status: int, said: str, url: str, hint: str) -> None:
    """Answers the stand-in does not give (its App IDs always have an App; it signs nothing with a wrong clock), as
    PyGithub raises them. Until 2026-11-29 "Integration not found" at the installation lookup said to install the
    App on the account (it was installed: the ID was wrong), and a clock off by minutes said "the token is invalid
    or expired" and the permissions."""
    error = GithubException(status, {"message": said, "documentation_url": "https://docs.github.com/rest"}, {})
    made = _forge_error("find the GitHub App installation", "GET", "https://api.github.com" + url, error,
                        "install the GitHub App on acme with access to acme/gitops", app=True)
    assert f"(hint: {hint}" in str(made), str(made)
    assert "install the GitHub App on acme" not in str(made) and PERMISSIONS not in str(made)


# -- an API URL that is a web site's ----------------------------------------------------------------------------


class _WebSite(BaseHTTPRequestHandler):
    """A web site, not an API: GitHub Enterprise Server's web address (its REST API is at /api/v3) answers a sign-in
    page (200 after its redirect) or its 404 page, both HTML."""

    def do_GET(self) -> None:
        status = 200 if self.path.startswith("/signin/") else 404
        body = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>...</body></html>\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def web_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _WebSite)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_api_url_that_answers_web_pages_says_to_give_the_apis(web_site: str) -> None:
    """GITHUB_API_URL set to a GitHub Enterprise Server's web address, without /api/v3 (GitHub Docs, "REST API
    endpoints for GitHub Enterprise administration": the endpoints are prefixed with http(s)://HOSTNAME/api/v3).
    PyGithub reads a body that is no JSON as ``{"data": body}`` (github/Requester.py, __structuredFromJson). Until
    2026-11-29 a 200 page was a traceback in git (the repository's clone URL None: "'NoneType' object has no
    attribute 'encode'"), and a 404 page "cannot read the repository: no message (hint: it does not exist, or the
    credentials cannot see it)"."""
    hint = ("set GITHUB_API_URL (or github.apiUrl) to the API's address: https://api.github.com (the default), or "
            "https://HOSTNAME/api/v3 for GitHub Enterprise Server")
    forge = GitHubForge(token="ghp_abc", api_url=web_site + "/signin", **FAST)
    for read in (forge.git_url, forge.default_branch):
        with pytest.raises(ForgeError) as failed:
            read(REPO)
        assert str(failed.value) == (f"GitHub: cannot read the repository: {web_site}/signin answered, but not as "
                                     f"GitHub's REST API (hint: {hint}) [GET {web_site}/signin/repos/{REPO} -> 200]")
    forge.close()
    forge = GitHubForge(token="ghp_abc", api_url=web_site, **FAST)
    with pytest.raises(ForgeError) as failed:
        forge.default_branch(REPO)
    assert str(failed.value) == (f"GitHub: cannot read the repository: the answer is an HTML page, not GitHub's JSON "
                                 f"(hint: {web_site} is not GitHub's REST API: {hint}) [GET {web_site}/repos/{REPO} "
                                 "-> 404]")
    forge.close()


def test_a_repository_the_credentials_cannot_see_says_what_decides_it(stub: GitHubStub,
                                                                      key: rsa.RSAPrivateKey) -> None:
    """GitHub answers 404, not 403, for a private repository the credentials may not see (GitHub Docs,
    "Troubleshooting the REST API": "404 error for an existing repository"): with an App, the installation's
    repository selection; with a fine-grained token, its resource owner and Repository access. Until 2026-11-29
    "it does not exist, or the credentials cannot see it" and nothing of what decides it."""
    stub.create_repo("acme/private", private=True)
    stub.store.apps.installations.clear()
    stub.install_app(12345, [REPO])  # selected repositories: acme/gitops only
    forge = GitHubForge(app_id="12345", app_private_key=pem(key), api_url=stub.url, **FAST)
    assert forge.default_branch(REPO) == "main"
    with pytest.raises(ForgeError) as hidden:
        forge.default_branch("acme/private")
    assert "Not Found (hint: it does not exist, or the credentials cannot see it: the GitHub App's installation on " \
           "its account does not include it (add it to the installation's Repository access))" in str(hidden.value)
    forge.close()
    forge = GitHubForge(token="github_pat_abc", api_url=stub.url, **FAST)
    with pytest.raises(ForgeError) as missing:
        forge.default_branch("acme/nothing-here")
    assert "Not Found (hint: it does not exist, or the credentials cannot see it: a fine-grained token sees only " \
           "the repositories of its resource owner that its Repository access names; a classic token needs the " \
           "repo scope for a private one)" in str(missing.value)
    forge.close()
