"""The workflows and composite actions as files: zizmor (pedantic) finds nothing, they match GitHub's schemas, no
``${{ }}`` reaches a shell, every pin is a full sha (our own actions move in lockstep on one ref), the requirements
are hash-pinned and cover fleetflow's dependencies; and the actions' shared script (``actions/_shared/run.py``)
checks inputs and hands the run to the package (``fleetflow ... --github-actions``), which sets outputs, writes
summaries and annotations as documented."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.fleet import build_bare_repos, git
from tests.helpers import action_run_module

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted(
    (ROOT / "examples" / "workflows").glob("*.yml")
)
ACTIONS = sorted((ROOT / "actions").glob("*/action.yml"))
OWN = re.compile(r"^fleetflow/fleetflow/(?P<path>[^@]+)@(?P<ref>\S+)$")
FULL_SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


def tool(name: str) -> str:
    """A command-line tool from PATH, else from this interpreter's bin directory (the venv the tests run in)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is not installed (it is a test dependency: pip install {name})"
    return found


def load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def steps_of(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    runs = doc.get("runs")
    if isinstance(runs, dict):
        yield from runs.get("steps") or []
    for job in (doc.get("jobs") or {}).values():
        yield from job.get("steps") or []


def uses_of(doc: dict[str, Any]) -> Iterator[str]:
    for job in (doc.get("jobs") or {}).values():
        if "uses" in job:
            yield str(job["uses"])
    for step in steps_of(doc):
        if "uses" in step:
            yield str(step["uses"])


def test_there_is_something_to_check() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in WORKFLOWS + ACTIONS}
    assert {
        ".github/workflows/ci.yml",
        ".github/workflows/fleetflow-control-plane.yml",
        ".github/workflows/fleetflow-gitops.yml",
        "examples/workflows/control-plane.yml",
        "examples/workflows/gitops.yml",
        "actions/promote/action.yml",
        "actions/schedule/action.yml",
        "actions/check-rollout/action.yml",
        "actions/route/action.yml",
        "actions/reconcile/action.yml",
    } <= names


def test_zizmor_pedantic_finds_nothing() -> None:
    # Every file by name: zizmor collects workflows from a directory only under .github/workflows, and a file it
    # cannot parse is an error when named (a directory walk would only warn and skip it).
    files = [str(p.relative_to(ROOT)) for p in WORKFLOWS + ACTIONS]
    result = subprocess.run(
        [tool("zizmor"), "--offline", "--persona", "pedantic", "--config", ".github/zizmor.yml", "--format", "json",
         *files],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == []


def test_zizmor_ignores_carry_a_reason() -> None:
    """An inline ``# zizmor: ignore[...]`` is allowed only with a comment line above it saying why."""
    for path in [*WORKFLOWS, *ACTIONS]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if "zizmor: ignore[" in line:
                above = lines[number - 1].strip() if number else ""
                assert above.startswith("#") and len(above) > 20, f"{path}:{number + 1}: say why above the ignore"


@pytest.mark.parametrize(
    ("schema", "files"),
    [("vendor.github-workflows", WORKFLOWS), ("vendor.github-actions", ACTIONS)],
    ids=["workflows", "actions"],
)
def test_files_match_githubs_schemas(schema: str, files: list[Path]) -> None:
    result = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS + ACTIONS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_expression_reaches_a_shell(path: Path) -> None:
    """Inputs go through ``env:``; a ``${{ }}`` inside ``run:`` would be pasted into the script (injection)."""
    for step in steps_of(load(path)):
        assert "${{" not in str(step.get("run", "")), f"{path}: step {step.get('name')!r} expands an expression"


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: p.parent.name)
def test_every_action_input_goes_through_env(path: Path) -> None:
    doc = load(path)
    assert doc["runs"]["using"] == "composite"
    env_values = " ".join(str(v) for step in steps_of(doc) for v in (step.get("env") or {}).values())
    for name in doc["inputs"]:
        assert f"${{{{ inputs.{name} }}}}" in env_values, f"{path}: input {name} is not passed through env:"
    outputs = doc.get("outputs") or {}
    assert "result" in outputs
    for name, spec in outputs.items():
        assert spec["value"] == f"${{{{ steps.run.outputs.{name} }}}}"


def test_documented_outputs() -> None:
    outputs = {p.parent.name: set(load(p).get("outputs") or {}) for p in ACTIONS}
    assert {"operation", "pull-request-number", "pull-request-url", "commit"} <= outputs["schedule"]
    assert {"operation", "pull-request-number", "pull-request-url", "commit", "environments"} <= outputs["promote"]
    assert {"gate-state", "description", "promoted"} <= outputs["check-rollout"]
    assert {"action", "environments", "matrix", "commit", "release", "reason"} <= outputs["route"]
    assert {"steps", "main-commit", "waiting-for-reports"} <= outputs["reconcile"]
    assert {"environments", "result"} <= outputs["validate"]


REUSABLE = [ROOT / ".github" / "workflows" / name for name in ("fleetflow-control-plane.yml", "fleetflow-gitops.yml")]


@pytest.mark.parametrize("path", REUSABLE, ids=lambda p: p.name)
def test_reusable_workflows_run_their_own_commit_and_reconcile_in_one_group(path: Path) -> None:
    """A sha-pinned caller runs exactly that commit's actions and code: fleetflow is checked out at
    ``job.workflow_repository``/``job.workflow_sha`` (GitHub's job context, docs: contexts#job-context; the
    ``github`` context is the caller's in a reusable workflow) and the actions run from that checkout. Every event
    runs reconcile in one concurrency group per repository that never cancels a running reconcile."""
    doc = load(path)
    text = path.read_text(encoding="utf-8")
    assert "fleetflow/fleetflow/actions" not in text  # no tag reference that would undo a sha pin
    for name, job in doc["jobs"].items():
        steps = job["steps"]
        # fleetflow's own checkout (the check job also checks out the pull request, with actions/checkout's
        # defaults: the triggering repository at github.sha)
        [checkout] = [s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@")
                      and s["with"].get("path") == ".fleetflow"]
        assert checkout["with"]["repository"].startswith("${{ job.workflow_repository")
        assert checkout["with"]["ref"] == "${{ job.workflow_sha || inputs.fleetflow-ref }}"
        local = [str(s["uses"]) for s in steps if str(s.get("uses", "")).startswith("./")]
        assert local and all(u.startswith(f"./{checkout['with']['path']}/actions/") for u in local), name
        assert steps.index(checkout) < min(steps.index(s) for s in steps if str(s.get("uses", "")).startswith("./"))
        for step in steps:
            if str(step.get("uses", "")).startswith("actions/create-github-app-token@"):
                assert "client-id" in step["with"] and "app-id" not in step["with"]  # app-id is deprecated
    reconcile = doc["jobs"]["reconcile"]
    assert reconcile["concurrency"] == {"group": "fleetflow-reconcile-${{ github.repository }}",
                                        "cancel-in-progress": False}
    assert "./.fleetflow/actions/reconcile" in [s.get("uses") for s in reconcile["steps"]]
    condition = " ".join(reconcile["if"].split())
    assert "github.event.state != 'pending'" in condition and "startsWith(github.event.context, 'fleetflow/')" \
        in condition
    assert "concurrency" not in doc["jobs"].get("request", {})  # a manual request is never cancelled by a newer run


def test_the_gitops_reconcile_holds_its_slot_only_while_a_gate_waits_for_reports(tmp_path: Path) -> None:
    """The gitops workflow's reconcile job notes, first, until when it may hold: ``hold-until`` is the job's start
    plus ``hold-seconds`` (none at 0), and its reconcile step passes it on; the action holds only while a gate waits
    for reports and ends early once their counts say the gate may have changed (fleetflow.promotion.hold,
    tests/test_hold.py). The concurrency group then coalesces the rollout's status events into one pending run
    (benchmarks/bench_rollout.py reads the same default). The default keeps a short job under the minute GitHub
    bills it anyway ("GitHub rounds the minutes and partial minutes each job uses up to the nearest whole minute",
    https://docs.github.com/en/billing/reference/actions-runner-pricing). The control plane receives no status
    events (examples/workflows/control-plane.yml): no hold there. The first step's script runs here, in bash."""
    doc = load(ROOT / ".github" / "workflows" / "fleetflow-gitops.yml")
    hold = doc["on"]["workflow_call"]["inputs"]["hold-seconds"]
    assert hold["type"] == "number" and 0 < hold["default"] <= 50
    steps = doc["jobs"]["reconcile"]["steps"]
    first = steps[0]
    assert first["id"] == "started" and first["env"] == {"HOLD_SECONDS": "${{ inputs.hold-seconds }}"}
    for seconds, expected in (("50", 50), ("12.5", 12), ("0", None), ("", None)):
        output = tmp_path / f"output-{seconds}"
        output.write_text("", encoding="utf-8")
        before = int(time.time())
        subprocess.run(["bash", "-e", "-c", first["run"]], check=True,
                       env={"PATH": os.environ["PATH"], "HOLD_SECONDS": seconds, "GITHUB_OUTPUT": str(output)})
        lines = output.read_text(encoding="utf-8").splitlines()
        if expected is None:
            assert lines == [], (seconds, lines)
        else:
            [line] = lines
            assert line.startswith("hold-until=") and before + expected <= int(line.split("=")[1]) \
                <= int(time.time()) + expected, (seconds, line)
    [reconcile] = [s for s in steps if s.get("id") == "reconcile"]
    assert reconcile["with"]["hold-until"] == "${{ steps.started.outputs.hold-until }}"
    assert not any("sleep" in s.get("run", "") for s in steps)  # the hold is the action's, not a sleep
    control_plane = (ROOT / ".github" / "workflows" / "fleetflow-control-plane.yml").read_text(encoding="utf-8")
    assert "hold-seconds" not in control_plane and "hold-until" not in control_plane
    assert "status" not in load(ROOT / "examples" / "workflows" / "control-plane.yml")["on"]


def test_pull_requests_to_the_control_plane_are_checked_with_every_branch() -> None:
    """The ``check`` job runs on pull requests only (not on a closed one), reads nothing but the repository, checks
    the merge commit out with every branch (actions/checkout ``fetch-depth: 0``: "all history for all branches and
    tags", https://github.com/actions/checkout) and validates it into the pull request's base branch, strictly.
    The example caller triggers it for main and the environment branches."""
    doc = load(REUSABLE[0])
    check = doc["jobs"]["check"]
    assert " ".join(check["if"].split()) == "github.event_name == 'pull_request' && github.event.action != 'closed'"
    assert check["permissions"] == {"contents": "read"} and "concurrency" not in check
    [change] = [s for s in check["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")
                and s["with"].get("path") == "control-plane"]
    assert change["with"]["fetch-depth"] == 0 and change["with"]["persist-credentials"] is False
    assert "ref" not in change["with"] and "repository" not in change["with"]  # the event's merge commit
    [validate] = [s for s in check["steps"] if s.get("uses") == "./.fleetflow/actions/validate"]
    assert validate["with"]["into"] == "${{ github.base_ref }}" and validate["with"]["repo"] == "control-plane"
    assert load(ROOT / "actions" / "validate" / "action.yml")["inputs"]["strict"]["default"] == "true"
    caller = load(ROOT / "examples" / "workflows" / "control-plane.yml")
    on = caller.get("on") or caller.get(True)
    assert on["pull_request"]["branches"] == on["push"]["branches"]


def test_the_stitch_downloads_the_shards_into_the_jobs_own_temporary_folder() -> None:
    """The stitch job downloads every shard of its environment and stitches exactly that folder, under
    ``runner.temp``: GitHub's "Variables reference" says RUNNER_TEMP "is emptied at the beginning and end of each
    job". Until 2026-11-29 it was ``.fleetflow-shards`` in the workspace, which a self-hosted runner keeps from run
    to run (actions/checkout cleans only the folders it checks out): after a caller changed ``shards:`` every stitch
    on that runner found an earlier run's ``*-of-3`` folders beside the new ``*-of-4`` ones."""
    doc = load(ROOT / ".github" / "workflows" / "fleetflow-schedule-shards.yml")
    steps = list(steps_of(doc))
    [download] = [s for s in steps if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    [stitch] = [s for s in steps if s.get("uses") == "./.fleetflow/actions/schedule" and "stitch" in s["with"]]
    assert download["with"]["path"] == stitch["with"]["stitch"] == "${{ runner.temp }}/fleetflow-shards"


def test_pins_are_full_shas_and_own_refs_move_together() -> None:
    own_refs = set()
    for path in WORKFLOWS + ACTIONS:
        text = path.read_text(encoding="utf-8")
        for uses in uses_of(load(path)):
            if uses.startswith(("./", "docker://")):
                continue
            own = OWN.match(uses)
            if own:
                own_refs.add(own["ref"])
                target = ROOT / own["path"]
                assert target.is_file() or (target / "action.yml").is_file(), f"{path}: {uses} names nothing here"
                continue
            assert FULL_SHA.match(uses), f"{path}: {uses} is not pinned to a full commit sha"
            assert re.search(re.escape(uses) + r" # v\d", text), f"{path}: {uses} needs a '# vX' comment"
    assert len(own_refs) == 1, f"fleetflow's own actions and workflows are referenced at several refs: {own_refs}"


def test_checkouts_do_not_persist_credentials() -> None:
    for path in WORKFLOWS:
        for step in steps_of(load(path)):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert (step.get("with") or {}).get("persist-credentials") is False, path


def test_reusable_workflows_grant_nothing_at_the_top() -> None:
    for path in WORKFLOWS:
        doc = load(path)
        assert doc.get("permissions") == {}, f"{path}: top-level permissions must be {{}}"
        for name, job in doc["jobs"].items():
            assert "permissions" in job, f"{path}: job {name} must state its permissions"


# --- requirements ---

def _requirement_blocks() -> list[str]:
    text = (ROOT / "actions" / "requirements.txt").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    blocks, current = [], ""
    for line in lines:
        current += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            if current.strip():
                blocks.append(current.strip())
            current = ""
    return blocks


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(specs: list[str]) -> set[str]:
    return {_normalize(re.split(r"[<>=!~;\[ ]", spec.strip(), maxsplit=1)[0]) for spec in specs if spec.strip()}


def test_requirements_are_hash_pinned() -> None:
    blocks = _requirement_blocks()
    assert blocks
    for block in blocks:
        assert re.match(r"^[A-Za-z0-9._-]+==[^\s]+ ", block), f"not pinned with ==: {block[:80]}"
        assert "--hash=sha256:" in block, f"no --hash=sha256: for {block.split()[0]}"


def test_requirements_cover_fleetflows_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = _names(project["dependencies"])
    requested = _names([line.split("#")[0] for line in (ROOT / "actions" / "requirements.in").read_text().splitlines()])
    pinned = _names([block.split()[0] for block in _requirement_blocks()])
    assert declared <= requested, f"actions/requirements.in misses {declared - requested}: regenerate the pins"
    assert requested <= pinned, f"actions/requirements.txt misses {requested - pinned}: run compile-requirements.sh"
    assert "setuptools" in pinned  # the build backend, for --no-build-isolation


# --- actions/_shared/run.py ---

run = action_run_module()


def fake_venv(tmp_path: Path, script: str | None = None) -> Path:
    """A 'venv' whose bin/fleetflow is this interpreter running fleetflow from the source tree (or ``script``)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    cli = venv / "bin" / "fleetflow"
    body = script or "from fleetflow.cli import main\nmain()\n"
    cli.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n{body}")
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    return venv


def action_env(tmp_path: Path, **inputs: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    env.update({run.env_key(name): value for name, value in inputs.items()})
    return env


# fake_venv's ``script`` for a bin/fleetflow that writes the arguments it was called with to $RECORD, as JSON
RECORD_ARGV = """\
import json, os, sys
with open(os.environ["RECORD"], "w") as out:
    json.dump(sys.argv[1:], out)
"""


def assert_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                   cases: list[tuple[dict[str, str], str]], **common: str) -> None:
    """actions/_shared/run.py refuses each case's inputs (with ``common``) before anything is installed: exit 2,
    and the case's message printed."""
    installed: list[bool] = []

    def installer() -> Path:
        installed.append(True)
        return tmp_path

    for inputs, message in cases:
        env = action_env(tmp_path, **{**common, **inputs})
        assert run.main([command], env, installer=installer) == 2 and not installed, inputs
        assert message in capsys.readouterr().out


def read_outputs(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    outputs = {}
    for match in re.finditer(r"^([\w-]+)<<(ghadelimiter_\w+)\n(.*?)\n\2$", text, re.S | re.M):
        outputs[match[1]] = match[3]
    return outputs


def test_bad_inputs_are_all_reported_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = action_env(tmp_path, forge="gitlab", environment="Prod;rm -rf /", commit="$(id)", release="maybe",
                     **{"app-id": "12"})
    installed: list[bool] = []

    def installer() -> Path:
        installed.append(True)
        return tmp_path

    code = run.main(["promote"], env, installer=installer)
    out = capsys.readouterr().out
    assert code == 2 and not installed  # nothing installed, nothing run
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert len(errors) == 5
    assert "'Prod;rm -rf /' is not an environment name" in out
    assert "'$(id)' is not a commit sha" in out
    assert "app-id and app-private-key go together" in out
    assert run.main(["schedule"], action_env(tmp_path, forge="local"), installer=lambda: tmp_path) == 2
    assert "input environment is required" in capsys.readouterr().out
    env = action_env(tmp_path, into="main;id", repo="../elsewhere", environment="Q A", strict="yes")
    assert run.main(["validate"], env, installer=installer) == 2 and not installed
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if line.startswith("::error")]) == 4
    assert "input into: 'main;id' is not a branch name" in out and "input repo: '../elsewhere'" in out
    assert run.main(["validate"], action_env(tmp_path), installer=installer) == 2
    assert "input into is required" in capsys.readouterr().out


def test_validate_runs_in_the_checkout_without_credentials(tmp_path: Path) -> None:
    """validate reads a checkout: it runs inside it (so problems name files by their path in the repository and
    the annotations land on the pull request's diff), strictly by default, with no forge and no token."""
    env = action_env(tmp_path, into="qa", repo="control-plane", strict="")
    env.update({"GITHUB_WORKSPACE": str(tmp_path), "GITHUB_TOKEN": "ghs_secret"})
    inputs = run.read_inputs("validate", env)
    assert run.validate(inputs, env) == []
    assert run.cli_arguments(inputs, env) == ["validate", "--into", "qa", "--repo", ".", "--strict", "--format",
                                              "json", "--github-actions"]
    assert run.working_directory(inputs, env) == (tmp_path / "control-plane").resolve()
    assert "GITHUB_TOKEN" not in run.cli_environment(inputs, env)


def test_errors_before_fleetflow_runs_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """The one annotation run.py writes itself (bad inputs, a failed install) follows the runner's escaping
    (actions/runner src/Runner.Common/ActionCommand.cs); everything after is the package's
    (tests/test_github_actions.py)."""
    run.error("50% done\r\n::warning::next", "fleetflow a,b:c")
    assert capsys.readouterr().out == "::error title=fleetflow a%2Cb%3Ac::50%25 done%0D%0A::warning::next\n"


def test_the_cli_runs_as_a_step_with_its_exit_code(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """run.py hands the run to ``fleetflow <command> --format json --github-actions`` (annotations, outputs and the
    summary are the package's) and exits with its code: here 1, a commit that is not on main."""
    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    env = {**action_env(tmp_path, forge="local", commit="0" * 40, **{"control-plane": str(cp)}),
           "FLEETFLOW_CACHE_DIR": str(tmp_path / "cache")}
    assert run.main(["promote"], env, installer=lambda: fake_venv(tmp_path)) == 1
    out = capfd.readouterr().out
    assert f"fleetflow promote --commit {'0' * 40} --format json --github-actions\n" in out
    [annotation] = [line for line in out.splitlines() if line.startswith("::error")]
    assert annotation.startswith("::error title=fleetflow promote::commit 0000000000000000000000000000000000000000 is "
                                 "not on main")
    assert "**Failed** (exit code 1)" in (tmp_path / "summary.md").read_text()
    assert not (tmp_path / "output").exists()


def test_a_crash_of_the_cli_fails_the_step(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, "print('Traceback (most recent call last):')\nsys.exit(70)\n")
    env = action_env(tmp_path, forge="local", environment="dev", summary="false")
    assert run.main(["check-rollout"], env, installer=lambda: venv) == 70


def test_every_action_command_on_local_repos(tmp_path: Path) -> None:
    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    venv = fake_venv(tmp_path)
    common = {"forge": "local", "control-plane": str(cp), "summary": "true"}
    cache = {"FLEETFLOW_CACHE_DIR": str(tmp_path / "cache")}

    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "before": "0" * 40, "after": sha, "deleted": False}))
    env = {**action_env(tmp_path, **common, **{"event-name": "push", "event-path": str(event)}), **cache}
    assert run.main(["route"], env, installer=lambda: venv) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["action"] == "promote" and outputs["commit"] == sha and outputs["matrix"] == '[""]'

    (tmp_path / "output").unlink()
    env = {**action_env(tmp_path, **common, commit=sha[:10]), **cache}
    assert run.main(["promote"], env, installer=lambda: venv) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["operation"] == "created" and outputs["pull-request-number"] == "1"
    assert outputs["commit"] == sha and json.loads(outputs["environments"]) == ["dev"]
    summary = (tmp_path / "summary.md").read_text()
    assert "## fleetflow promote" in summary and "```mermaid" in summary and "Added (1)" in summary

    (tmp_path / "output").unlink()
    env = {**action_env(tmp_path, **common, environment="dev"), **cache}
    assert run.main(["schedule"], env, installer=lambda: venv) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["operation"] == "unchanged" and outputs["commit"] == sha
    assert json.loads(outputs["result"])["result"]["pullRequest"]["number"] == 1

    (tmp_path / "output").unlink()
    assert run.main(["check-rollout"], env, installer=lambda: venv) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["gate-state"] == "waiting-for-merge" and outputs["promoted"] == "[]"

    (tmp_path / "output").unlink()
    env = {**action_env(tmp_path, **common), **cache}
    assert run.main(["reconcile"], env, installer=lambda: venv) == 0
    outputs = read_outputs(tmp_path / "output")
    assert outputs["main-commit"] == sha and json.loads(outputs["steps"]) == {}  # nothing due: the PR waits
    assert "## fleetflow reconcile" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: p.parent.name)
def test_the_inputs_run_py_knows_are_the_actions_own(path: Path) -> None:
    """The names :func:`run.unknown_inputs` accepts are exactly the inputs action.yml declares, and the step hands
    it every input given (``toJSON(inputs)``)."""
    command = path.parent.name
    assert set(run.INPUTS[command]) == set(load(path)["inputs"])
    [step] = [s for s in steps_of(load(path)) if s.get("id") == "run"]
    assert step["env"][run.GIVEN_INPUTS] == "${{ toJSON(inputs) }}"


def test_a_misspelt_input_is_an_error_not_a_silent_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GitHub passes an input the action does not declare on to a composite action's ``inputs`` context with only a
    warning ("Unexpected input(s) ..."; actions/runner src/Runner.Worker/ActionRunner.cs gives the handler every
    input of the step's ``with:``, src/Runner.Worker/Handlers/CompositeActionHandler.cs makes them the ``inputs``
    context), and the declared one keeps its default: ``enviroment: prod`` on promote left environment empty, which
    promotes to every first environment. Input names are compared ignoring case (``StringComparer.OrdinalIgnoreCase``
    in ActionRunner.cs and PipelineTemplateConverter.ConvertToStepInputs), so ``Commit`` is fine. act differs: a
    composite action there sees its declared inputs only (nektos/act pkg/runner/action_composite.go,
    ``evaluateCompositeInputAndEnv``), so this is tested on run.py with what GitHub's runner hands it."""
    given = {"enviroment": "prod", "Commit": "a" * 40, "app_id": "12", "token": "ghs_x", "summary": "true"}
    env = {**action_env(tmp_path, forge="github", commit="a" * 40, token="ghs_x"), run.GIVEN_INPUTS: json.dumps(given)}
    assert run.main(["promote"], env, installer=lambda: tmp_path / "never") == 2
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error")]
    assert errors == [
        "::error title=fleetflow promote::input app_id: fleetflow promote has no such input, so it would be ignored "
        "(GitHub only warns \"Unexpected input(s)\"): did you mean app-id? its inputs are environment, commit, "
        "release, forge, control-plane, token, api-url, app-id, app-private-key, summary",
        "::error title=fleetflow promote::input enviroment: fleetflow promote has no such input, so it would be "
        "ignored (GitHub only warns \"Unexpected input(s)\"): did you mean environment? its inputs are environment, "
        "commit, release, forge, control-plane, token, api-url, app-id, app-private-key, summary",
    ]
    env = action_env(tmp_path, forge="github", commit="a" * 40, token="ghs_x")
    env[run.GIVEN_INPUTS] = json.dumps({"Commit": "a" * 40, "token": "ghs_x", "environment": ""})
    inputs = run.read_inputs("promote", env)
    assert run.validate(inputs, env) == []
    assert run.GIVEN_INPUTS not in run.cli_environment(inputs, env)  # it holds the token: never handed on
    env[run.GIVEN_INPUTS] = json.dumps({"ouptut": "site"})
    out = run.validate(run.read_inputs("status-page", env), env)
    assert out == ["input ouptut: fleetflow status page has no such input, so it would be ignored (GitHub only warns "
                   "\"Unexpected input(s)\"): did you mean output? its inputs are output, forge, control-plane, "
                   "token, api-url, app-id, app-private-key, summary"]


REUSABLE = [ROOT / ".github" / "workflows" / f"fleetflow-{n}.yml"
            for n in ("control-plane", "gitops", "schedule-shards")]


@pytest.mark.parametrize("path", REUSABLE, ids=lambda p: p.name)
def test_no_credentials_says_how_to_map_the_secrets(path: Path) -> None:
    """The step that stops a run without credentials, its script run by bash with the job's environment. A caller
    with ``secrets: inherit`` passes the repository's secrets under their own names, and a secret's name holds only
    alphanumerics and underscores (GitHub's "Naming your secrets", https://docs.github.com/en/actions/reference/
    security/secrets): nothing fills ``app-id``. Until 2026-11-29 the error said "pass the app-id and app-private-key
    secrets", which a user with ``inherit`` and FLEETFLOW_APP_ID set believes they do; now it gives the mapping to
    paste. The runner evaluates ``${{`` anywhere in ``run:`` (the script never writes it: it reaches the log as
    the shell prints it). The sha check says only its own message."""
    doc = load(path)
    checks = [(job, step) for job in doc["jobs"].values() for step in job.get("steps") or []
              if step.get("name") == "Check the credentials and which fleetflow to run"]
    assert checks
    for _, step in checks:
        script = step["run"]
        assert "${{" not in script
        env = {"FLEETFLOW_HAS_CREDENTIALS": "false", "FLEETFLOW_REF": "a" * 40, "PATH": os.environ["PATH"]}
        out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False)
        assert out.returncode == 2
        [line] = out.stdout.splitlines()
        assert line.startswith("::error title=fleetflow::no credentials: ")
        assert ("secrets: app-id: ${{ secrets.FLEETFLOW_APP_ID }} and app-private-key: "
                "${{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}") in line
        assert "secrets: inherit cannot fill them" in line
        env = {"FLEETFLOW_HAS_CREDENTIALS": "true", "FLEETFLOW_REF": "", "PATH": os.environ["PATH"]}
        out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False)
        assert out.returncode == 2
        assert out.stdout.splitlines() == [
            "::error title=fleetflow::no job.workflow_sha on this platform (pass fleetflow-ref: the sha in your uses "
            "line)"]


@pytest.mark.parametrize("path", REUSABLE, ids=lambda p: p.name)
def test_doctor_knows_the_secrets_the_reusable_workflows_declare(path: Path) -> None:
    """doctor's ``secrets`` check (a caller with ``secrets: inherit``) names the secrets these declare."""
    from fleetflow.promotion.caller_workflows import REUSABLE_SECRETS

    assert tuple(load(path)["on"]["workflow_call"]["secrets"]) == REUSABLE_SECRETS
