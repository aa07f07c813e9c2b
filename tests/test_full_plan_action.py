"""The actions and workflows carry the full plan: the ``full-plan`` input gives the CLI a fresh folder
(``FLEETFLOW_PLAN_DIR`` under ``$RUNNER_TEMP``), the step's ``plan-dir`` output names it when a plan was written
(``fleetflow ... --github-actions`` writes the outputs), and the
reusable workflows upload it with actions/upload-artifact pinned by full sha (v7.0.0, bbbca2dd: its ``action.yml``
takes ``name``, ``path``, ``if-no-files-found`` and outputs ``artifact-url``), then link that URL in the job summary.
Under act the upload is tests/artifactkit.py's stand-in (test_act_e2e.py checks every environment's plan arrives).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from fleetflow.cli import main as cli_main
from tests.test_full_plan import dev_with_a_change
from tests.test_github_actions import runner_outputs
from tests.test_workflow_files import action_env, fake_venv, run

ROOT = Path(__file__).resolve().parent.parent
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"

RECORD_ENV = """\
import json, os, sys
with open(os.environ["RECORD"], "w") as out:
    json.dump({"plan_dir": os.environ.get("FLEETFLOW_PLAN_DIR"), "argv": sys.argv[1:]}, out)
"""


def test_full_plan_gives_the_cli_a_fresh_folder(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, RECORD_ENV)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = action_env(tmp_path, forge="local", environment="dev", **{"full-plan": "true"})
    env.update(RUNNER_TEMP=str(runner_temp), FLEETFLOW_PLAN_DIR="/elsewhere", RECORD=str(tmp_path / "record.json"))
    assert run.main(["schedule"], env, installer=lambda: venv) == 0
    seen = json.loads((tmp_path / "record.json").read_text())["plan_dir"]
    assert Path(seen).parent == runner_temp and Path(seen).name.startswith("fleetflow-plan-") and Path(seen).is_dir()
    assert run.main(["schedule"], env, installer=lambda: venv) == 0  # a second step gets a folder of its own
    assert json.loads((tmp_path / "record.json").read_text())["plan_dir"] != seen


def test_without_full_plan_the_cli_gets_no_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    venv = fake_venv(tmp_path, RECORD_ENV)
    env = action_env(tmp_path, forge="local", environment="dev")
    env.update(FLEETFLOW_PLAN_DIR=str(tmp_path / "from-the-job"), RECORD=str(tmp_path / "record.json"))
    assert run.main(["reconcile"], env, installer=lambda: venv) == 0  # never passed through by accident
    assert json.loads((tmp_path / "record.json").read_text())["plan_dir"] is None
    env[run.env_key("full-plan")] = "maybe"
    assert run.main(["reconcile"], env, installer=lambda: venv) == 2
    assert "input full-plan: 'maybe' is not true or false" in capsys.readouterr().out


def test_the_step_answers_plan_dir(tmp_path: Path) -> None:
    """``fleetflow schedule --plan-dir DIR --github-actions``: the ``plan-dir`` output names DIR once a plan is in
    it (the plan of the PR it opened, updated or found unchanged), and is empty when nothing was scheduled."""
    (tmp_path / "fleet").mkdir()
    fleet = dev_with_a_change(tmp_path / "fleet")
    plans = tmp_path / "plans"
    env = {"GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "FLEETFLOW_CACHE_DIR": str(tmp_path / "cache"), "FLEETFLOW_PLAN_DIR": str(plans)}
    args = ["schedule", "--environment", "dev", "--forge", "local", "--control-plane", fleet.cp_url,
            "--format", "json", "--github-actions"]
    result = CliRunner().invoke(cli_main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    outputs = runner_outputs((tmp_path / "output").read_text(encoding="utf-8"))
    assert outputs["operation"] == "created" and outputs["plan-dir"] == str(plans)
    assert (plans / "dev.diff").read_text().startswith("# fleetflow plan: dev <- main@")
    (tmp_path / "output").unlink()
    fleet.approve("dev")  # merged: nothing left to schedule
    again = CliRunner().invoke(cli_main, args, env={**env, "FLEETFLOW_PLAN_DIR": str(tmp_path / "empty")},
                               catch_exceptions=False)
    assert again.exit_code == 0, again.output
    outputs = runner_outputs((tmp_path / "output").read_text(encoding="utf-8"))
    assert outputs["operation"] == "none" and outputs["plan-dir"] == ""


@pytest.mark.parametrize("workflow", ["fleetflow-control-plane.yml", "fleetflow-gitops.yml"])
def test_the_workflows_upload_the_plan_and_link_it(workflow: str) -> None:
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / workflow).read_text(encoding="utf-8"))
    steps = doc["jobs"]["reconcile"]["steps"]
    names = [s.get("id") for s in steps]
    reconcile, plan = steps[names.index("reconcile")], steps[names.index("plan")]
    assert reconcile["with"]["full-plan"] == "${{ inputs.full-plan }}"
    assert plan["uses"] == UPLOAD and plan["if"] == "steps.reconcile.outputs.plan-dir != ''"
    assert plan["with"] == {"name": "fleetflow-plan", "path": "${{ steps.reconcile.outputs.plan-dir }}",
                            "if-no-files-found": "ignore"}
    link = steps[names.index("plan") + 1]
    assert link["env"] == {"ARTIFACT_URL": "${{ steps.plan.outputs.artifact-url }}"}
    assert '"$GITHUB_STEP_SUMMARY"' in link["run"] and "${{" not in link["run"]
    inputs = doc[True]["workflow_call"]["inputs"]  # YAML 1.1 reads the key `on` as True
    assert inputs["full-plan"]["type"] == "boolean" and inputs["full-plan"]["default"] is True


@pytest.mark.parametrize("action", ["schedule", "reconcile"])
def test_the_actions_take_full_plan_and_answer_plan_dir(action: str) -> None:
    doc = yaml.safe_load((ROOT / "actions" / action / "action.yml").read_text(encoding="utf-8"))
    assert doc["inputs"]["full-plan"]["default"] == "false"
    assert doc["outputs"]["plan-dir"]["value"] == "${{ steps.run.outputs.plan-dir }}"
    [step] = [s for s in doc["runs"]["steps"] if s.get("id") == "run"]
    assert step["env"]["FF_INPUT_FULL_PLAN"] == "${{ inputs.full-plan }}"
    assert "full-plan" in run.INPUTS[action]
