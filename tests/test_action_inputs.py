"""What ``actions/_shared/run.py`` says about an action input written the way people get it wrong, before anything
is installed (exit 2, one ``::error`` per problem): each message names the input, what is wrong, and the value to
write. The checks themselves (names, shas, flags) are in tests/test_workflow_files.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import action_run_module

run = action_run_module()


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, **inputs: str) -> list[str]:
    """The ``::error`` lines run.py prints for ``inputs`` (it must refuse them: exit 2, nothing installed)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("FF_INPUT")}
    env.update({"GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    env.update({run.env_key(name): value for name, value in inputs.items()})
    installed: list[bool] = []

    def installer() -> Path:
        installed.append(True)
        return tmp_path

    assert run.main([command], env, installer=installer) == 2 and not installed
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error")]


def test_route_environments_given_as_a_json_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """route's own ``environments`` output is a JSON list, so ``environments: '["dev","qa"]'`` is a natural thing
    to write; until 2026-11-29 it was two errors, ``'["dev"' is not an environment name`` and ``'"qa"]' is not...``,
    that did not say the input wants names separated by commas. Now one error gives the value to write, and the
    expression that makes it from a JSON output (``join`` and ``fromJSON``: GitHub's "Evaluate expressions in
    workflows and actions", https://docs.github.com/en/actions/reference/workflows-and-actions/expressions)."""
    event = tmp_path / "event.json"
    event.write_text("{}")
    errors = refused(tmp_path, capsys, "route", **{"event-name": "push", "event-path": str(event), "token": "x",
                                                    "environments": '["dev", "qa"]'})
    assert errors == ["::error title=fleetflow route::input environments: '[\"dev\", \"qa\"]' is a JSON list; give "
                      "the names separated by commas: 'dev,qa' (for a JSON output: ${{ join(fromJSON(...), ',') }})"]
    errors = refused(tmp_path, capsys, "route", **{"event-name": "push", "event-path": str(event), "token": "x",
                                                    "environments": "dev, Q A"})  # a list, one bad name: as before
    assert errors == ["::error title=fleetflow route::input environments: 'Q A' is not an environment name "
                      f"({run.ENV_NAME_HINT})"]


@pytest.mark.parametrize("given", ["https://github.com/contoso/platform-control", "https://github.com/contoso/"
                                   "platform-control.git", "git@github.com:contoso/platform-control.git",
                                   "https://ghe.example.com/contoso/platform-control/"])
def test_control_plane_given_as_a_url(tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str) -> None:
    """The clone URL copied from the repository's page is the commonest way to write a repository; the input wants
    owner/name, and now the message gives it."""
    errors = refused(tmp_path, capsys, "check-rollout", environment="dev", token="x", **{"control-plane": given})
    assert errors == [f"::error title=fleetflow check-rollout::input control-plane: {given!r} is not owner/name: "
                      "write 'contoso/platform-control'"]


def test_a_secret_that_reads_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``token: ${{ secrets.FLEET_TOKEN }}`` with the secret misnamed, or on a pull request from a fork ("With the
    exception of GITHUB_TOKEN, secrets are not passed to the runner when a workflow is triggered from a forked
    repository": GitHub's "Events that trigger workflows", pull request events for forked repositories), gives
    the action an empty token. Until 2026-11-29 the message said "set input token", which the caller did; now it
    says the input is empty and why a secret reads empty. The same for one of app-id and app-private-key."""
    errors = refused(tmp_path, capsys, "schedule", environment="dev", token="")
    assert errors == ["::error title=fleetflow schedule::the github forge needs credentials: set input token, or "
                      "app-id and app-private-key (input token is empty, though it defaults to the job's GITHUB_TOKEN: "
                      f"{run.EMPTY_SECRET})"]
    assert "check its name" in run.EMPTY_SECRET and "a pull request from a fork" in run.EMPTY_SECRET
    errors = refused(tmp_path, capsys, "schedule", environment="dev", token="", **{"app-id": "123456"})
    assert errors == ["::error title=fleetflow schedule::inputs app-id and app-private-key go together: set both or "
                      f"neither (input app-private-key is empty; {run.EMPTY_SECRET})"]
    errors = refused(tmp_path, capsys, "schedule", environment="dev", token="x",
                     **{"app-private-key": "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n"})
    assert errors == ["::error title=fleetflow schedule::inputs app-id and app-private-key go together: set both or "
                      f"neither (input app-id is empty; {run.EMPTY_SECRET})"]
