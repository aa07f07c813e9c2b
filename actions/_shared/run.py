"""The one entry point of fleetflow's composite actions: check the inputs, install, run the CLI as a step.

    python3 actions/_shared/run.py promote|schedule|check-rollout|route|reconcile|status-page|validate

Standard library only, so it runs on the runner's own Python before anything is installed:

1. reads the action's inputs from ``FF_INPUT_<NAME>`` environment variables (action.yml passes every input through
   ``env:``; nothing is ever expanded into a shell command line) and checks them all at once: each bad input is an
   ``::error::`` annotation, then exit 2 (usage error, as the CLI), before anything is installed or run;
2. installs fleetflow (``install.py``: hash-pinned venv, cached);
3. runs ``fleetflow <command> ... --format json --github-actions`` (``status-page``: ``fleetflow status --format
   html --output DIR --github-actions``) with the settings in the environment variables the CLI reads
   (``FLEETFLOW_FORGE``, ``FLEETFLOW_CONTROL_PLANE``, ``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``FLEETFLOW_APP_ID``,
   ``FLEETFLOW_APP_PRIVATE_KEY``; ``FLEETFLOW_CACHE_DIR`` and ``FLEETFLOW_CONFIG`` pass through from the job), and
   exits with its exit code (0 done, 1 input or gate says no, 2 usage, 3 forge or git).

Everything a run reports to the workflow (step outputs, annotations, the job summary) is the package's job:
``fleetflow/cli/github_actions.py``, typed and tested with the rest. This file is under mypy too.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING


def _sibling(name: str) -> ModuleType:
    """A module next to this file, whatever the working directory and without touching sys.path."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fleetflow_action_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    import install
else:
    install = _sibling("install")

ENV_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
GITHUB_REPO = re.compile(r"^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$")
APP_ID = re.compile(r"^[A-Za-z0-9.]+$")
URL = re.compile(r"^https?://[^\s]+$")
EVENT_NAME = re.compile(r"^[a-z_]+$")
UNIX_SECONDS = re.compile(r"^[0-9]{1,12}$")
POLL_SECONDS = re.compile(r"^[0-9]{1,4}$")
SHARD = re.compile(r"^([0-9]{1,3})/([0-9]{1,3})$")
FOLDER = re.compile(r"^(?!.*(^|/)\.\.(/|$))[A-Za-z0-9._/-]{1,400}$")  # absolute too (runner.temp), no '..'
SAFE_FOLDER = re.compile(r"^(?!/)(?!.*(^|/)\.\.(/|$))[A-Za-z0-9._/-]{1,200}$")
BOOLEANS = {"true": True, "false": False, "": False}
COMMON = ("forge", "control-plane", "token", "api-url", "app-id", "app-private-key", "summary")
INPUTS = {
    "promote": ("environment", "commit", "release", *COMMON),
    "schedule": ("environment", "full-plan", "shard", "stitch", *COMMON),
    "check-rollout": ("environment", *COMMON),
    "route": ("event-name", "event-path", "environments", *COMMON),
    "reconcile": ("environment", "full-plan", "hold-until", "hold-poll-seconds", *COMMON),
    "status-page": ("output", *COMMON),
    "validate": ("into", "repo", "environment", "strict", "summary"),  # reads a checkout: no forge, no credentials
}
COMMANDS = tuple(INPUTS)
TITLES = {"status-page": "fleetflow status page"}
# ``${{ toJSON(inputs) }}`` of the action's step: every input it was given. In a composite action that is the declared
# inputs (with their defaults) and also any other name in the caller's ``with:``, which GitHub passes on after a
# warning only ("Unexpected input(s) ..."; actions/runner src/Runner.Worker/ActionRunner.cs, the inputs handed to
# src/Runner.Worker/Handlers/CompositeActionHandler.cs, names compared ignoring case): a misspelt input would
# otherwise leave the real one at its default, e.g. promote's environment empty, every first environment.
GIVEN_INPUTS = "FF_INPUTS"
FOLDER_HINT = "letters, digits, '.', '_', '-', '/'; no '..', not absolute"
# An expression naming a secret that is not set, or one GitHub withholds ("With the exception of GITHUB_TOKEN, secrets
# are not passed to the runner when a workflow is triggered from a forked repository": "Events that trigger
# workflows", https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows, pull
# request events for forked repositories), gives the input an empty value: the caller did write the input.
EMPTY_SECRET = ("an input given from a secret is empty when the secret is not set where the workflow runs (check its "
                "name) or GitHub does not pass it (a pull request from a fork)")
GITHUB_WEB_REPO = re.compile(r"^(?:https?://[^/\s]+/|git@[^:\s]+:)([A-Za-z0-9-]+/[A-Za-z0-9._-]+?)(?:\.git)?/?$")
ENV_NAME_HINT = "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters"


def error(message: str, title: str) -> None:
    """``::error title=…::message``, escaped as GitHub's runner reads it back (the rules of the package's
    ``fleetflow.cli.github_actions.command``, which annotates everything once fleetflow runs): an input's value
    cannot end the annotation or start a command of its own."""
    def data(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    print(f"::error title={data(title).replace(':', '%3A').replace(',', '%2C')}::{data(message)}", flush=True)


# --- inputs ---

@dataclass
class Inputs:
    command: str
    values: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.values.get(name, "")

    def flag(self, name: str) -> bool:
        return BOOLEANS.get(self[name].strip().lower(), False)


def env_key(name: str) -> str:
    return "FF_INPUT_" + name.upper().replace("-", "_")


def read_inputs(command_name: str, environ: Mapping[str, str]) -> Inputs:
    values = {name: environ.get(env_key(name), "").strip() for name in INPUTS[command_name]}
    values["app-private-key"] = environ.get(env_key("app-private-key"), "")  # a PEM keeps its newlines
    if "forge" in values:
        values["forge"] = values["forge"].lower() or "github"
    values["summary"] = values["summary"].lower() or "true"
    if command_name == "validate":
        values["repo"] = values["repo"] or "."
        values["strict"] = values["strict"].lower() or "true"
    if command_name == "status-page":
        values["output"] = values["output"] or "fleetflow-status-page"
    return Inputs(command_name, values)


BRANCH = re.compile(r"^(?!/)(?!.*(\.\.|//|@\{|\.lock(/|$)))[A-Za-z0-9._/-]{1,255}(?<!/)$")
FLAGS = ("release", "strict", "summary", "full-plan")


def unknown_inputs(command_name: str, environ: Mapping[str, str]) -> list[str]:
    """A problem for each input the step was given (:data:`GIVEN_INPUTS`) that the action does not have, with the
    input it most likely meant. GitHub compares input names ignoring case, so ``Environment`` is ``environment``."""
    try:
        given = json.loads(environ.get(GIVEN_INPUTS) or "{}")
    except ValueError:
        return []
    known = INPUTS[command_name]
    unknown = sorted(name for name in given if name.lower() not in known) if isinstance(given, dict) else []
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name.lower().replace("_", "-"), sorted(known), n=1)
        meant = f"did you mean {close[0]}? " if close else ""
        problems.append(f"input {name}: {TITLES.get(command_name, 'fleetflow ' + command_name)} has no such input, "
                        f"so it would be ignored (GitHub only warns \"Unexpected input(s)\"): {meant}"
                        f"its inputs are {', '.join(known)}")
    return problems


def validate(inputs: Inputs, environ: Mapping[str, str]) -> list[str]:
    """Every problem with the inputs, as one line each (the value is quoted, never interpreted). One checker for
    every command: each check applies to the commands that have the input, and the forge and credential checks
    only to those that talk to a forge (``validate`` reads a checkout and has none)."""
    name = inputs.command
    problems = unknown_inputs(name, environ)
    has_forge = "forge" in inputs.values
    forge = inputs["forge"]
    if has_forge and forge not in ("github", "local"):
        problems.append(f"input forge: {forge!r} is not github or local")
    if name == "validate":
        if not inputs["into"]:
            problems.append("input into is required: the branch the change goes into (github.base_ref)")
        elif not BRANCH.match(inputs["into"]):
            problems.append(f"input into: {inputs['into']!r} is not a branch name")
        if inputs["repo"] != "." and not SAFE_FOLDER.match(inputs["repo"]):
            problems.append(f"input repo: {inputs['repo']!r} is not a folder inside the workspace ({FOLDER_HINT})")
    if name in ("schedule", "check-rollout") and not inputs["environment"]:
        problems.append("input environment is required")
    env = inputs["environment"]
    if env and not ENV_NAME.match(env):
        problems.append(f"input environment: {env!r} is not an environment name ({ENV_NAME_HINT})")
    if name == "promote":
        commit = inputs["commit"]
        if not commit:
            problems.append("input commit is required (a commit of the control plane's main branch)")
        elif not SHA.match(commit):
            problems.append(f"input commit: {commit!r} is not a commit sha (7 to 40 hex digits)")
    for flag in FLAGS:
        if flag in inputs.values and inputs[flag].lower() not in BOOLEANS:
            problems.append(f"input {flag}: {inputs[flag]!r} is not true or false")
    if has_forge:
        problems += forge_problems(inputs)
    if name == "route":
        event = inputs["event-name"] or environ.get("GITHUB_EVENT_NAME", "")
        path = inputs["event-path"] or environ.get("GITHUB_EVENT_PATH", "")
        if not EVENT_NAME.match(event):
            problems.append(f"input event-name: {event!r} is not an event name (default: $GITHUB_EVENT_NAME)")
        if not path or not Path(path).is_file():
            problems.append(f"input event-path: {path!r} is not a file (default: $GITHUB_EVENT_PATH)")
        problems += environments_problems(inputs["environments"])
    if name == "schedule":
        problems += shard_problems(inputs)
    if name == "reconcile":
        if inputs["hold-until"] and not UNIX_SECONDS.match(inputs["hold-until"]):
            problems.append(f"input hold-until: {inputs['hold-until']!r} is not a time in seconds since 1970 "
                            "(date +%s), nor empty (no hold)")
        poll = inputs["hold-poll-seconds"]
        if poll and not (POLL_SECONDS.match(poll) and int(poll) >= 1):
            problems.append(f"input hold-poll-seconds: {poll!r} is not a whole number of seconds from 1 to 9999")
    if name == "status-page" and not SAFE_FOLDER.match(inputs["output"]):
        problems.append(f"input output: {inputs['output']!r} is not a folder inside the workspace ({FOLDER_HINT})")
    return problems


def environments_problems(value: str) -> list[str]:
    """route's ``environments``: names separated by commas. A JSON list (what route's own ``environments`` output
    holds) is one problem that gives the value to write instead."""
    if value.startswith("["):
        try:
            names = json.loads(value)
        except ValueError:
            names = None
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return [f"input environments: {value!r} is a JSON list; give the names separated by commas: "
                    f"{','.join(names)!r} (for a JSON output: ${{{{ join(fromJSON(...), ',') }}}})"]
    return [f"input environments: {item!r} is not an environment name ({ENV_NAME_HINT})"
            for item in filter(None, (n.strip() for n in value.split(","))) if not ENV_NAME.match(item)]


def forge_problems(inputs: Inputs) -> list[str]:
    """The forge's address and credentials: control plane, API URL, App ID and key, token."""
    problems: list[str] = []
    forge = inputs["forge"]
    control_plane = inputs["control-plane"]
    if control_plane:
        if forge == "github" and not GITHUB_REPO.match(control_plane):
            web = GITHUB_WEB_REPO.match(control_plane)
            problems.append(f"input control-plane: {control_plane!r} is not owner/name"
                            + (f": write {web[1]!r}" if web else ""))
        elif any(ch in control_plane for ch in "\r\n\0"):
            problems.append("input control-plane: contains a line break")
    if inputs["api-url"] and not URL.match(inputs["api-url"]):
        problems.append(f"input api-url: {inputs['api-url']!r} is not an http(s) URL")
    if inputs["app-id"] and not APP_ID.match(inputs["app-id"]):
        problems.append(f"input app-id: {inputs['app-id']!r} is not a GitHub App ID or client ID")
    if bool(inputs["app-id"]) != bool(inputs["app-private-key"].strip()):
        empty = "app-private-key" if inputs["app-id"] else "app-id"
        problems.append(f"inputs app-id and app-private-key go together: set both or neither (input {empty} is "
                        f"empty; {EMPTY_SECRET})")
    if forge == "github" and not (inputs["token"] or inputs["app-id"]):
        problems.append("the github forge needs credentials: set input token, or app-id and app-private-key (input "
                        f"token is empty, though it defaults to the job's GITHUB_TOKEN: {EMPTY_SECRET})")
    return problems


def shard_problems(inputs: Inputs) -> list[str]:
    """schedule's ``shard`` (K/N: this job renders shard K of N) and ``stitch`` (the folder holding every shard's
    artifact): one or the other, or neither (one job)."""
    problems: list[str] = []
    shard, stitch = inputs["shard"], inputs["stitch"]
    if shard and stitch:
        problems.append("inputs shard and stitch go apart: a shard job renders, the stitch job commits")
    match = SHARD.match(shard)
    if shard and not (match and 1 <= int(match[1]) <= int(match[2])):
        problems.append(f"input shard: {shard!r} is not K/N with 1 <= K <= N (e.g. 2/10)")
    if stitch and not FOLDER.match(stitch):
        problems.append(f"input stitch: {stitch!r} is not a folder (letters, digits, '.', '_', '-', '/'; no '..')")
    return problems


def working_directory(inputs: Inputs, environ: Mapping[str, str]) -> Path | None:
    """validate runs inside the checkout, so the problems' files are paths in the repository and the annotations
    land on the pull request's diff."""
    if inputs.command != "validate":
        return None
    return in_workspace(environ, inputs["repo"]).resolve()


def in_workspace(environ: Mapping[str, str], relative: str) -> Path:
    """An input's path, relative to the job's workspace (``GITHUB_WORKSPACE``; the current folder outside a runner)."""
    return Path(environ.get("GITHUB_WORKSPACE") or ".") / relative


def cli_arguments(inputs: Inputs, environ: Mapping[str, str]) -> list[str]:
    """The command line of ``fleetflow``: the command, its options from the inputs, and ``--github-actions``."""
    name = inputs.command
    if name == "status-page":
        target = in_workspace(environ, inputs["output"]).resolve()
        args = ["status", "--format", "html", "--output", str(target)]
    else:
        args = [name]
    if name == "route":
        args += ["--event-name", inputs["event-name"] or environ.get("GITHUB_EVENT_NAME", ""),
                 "--event-path", inputs["event-path"] or environ.get("GITHUB_EVENT_PATH", "")]
        if inputs["environments"]:
            args += ["--environments", inputs["environments"]]
    if inputs["environment"]:
        args += ["--environment", inputs["environment"]]
    if name == "promote":
        args += ["--commit", inputs["commit"].lower()]
        if inputs.flag("release"):
            args.append("--release")
    if name == "schedule" and inputs["shard"]:
        args += ["--shard", inputs["shard"], "--artifact", str(shard_dir(environ))]
    if name == "schedule" and inputs["stitch"]:
        args += ["--stitch", str(in_workspace(environ, inputs["stitch"]))]
    if name == "reconcile" and inputs["hold-until"]:
        args += ["--hold-until", inputs["hold-until"], "--hold-poll-seconds", inputs["hold-poll-seconds"] or "10"]
    if name == "validate":
        args += ["--into", inputs["into"], "--repo", "."]
        if inputs.flag("strict"):
            args.append("--strict")
    if name != "status-page":
        args += ["--format", "json"]
    args.append("--github-actions")
    return args if inputs.flag("summary") else [*args, "--no-job-summary"]


def cli_environment(inputs: Inputs, environ: Mapping[str, str], plans: Path | None = None) -> dict[str, str]:
    """The job's environment minus the raw inputs, plus the settings the CLI reads (``plans``: the folder for
    the full plans, ``FLEETFLOW_PLAN_DIR``; the CLI answers it as the ``plan-dir`` output)."""
    env = {k: v for k, v in environ.items() if not k.startswith("FF_INPUT_") and k != GIVEN_INPUTS}
    settings = {
        "FLEETFLOW_FORGE": inputs["forge"],
        "FLEETFLOW_CONTROL_PLANE": inputs["control-plane"],
        "GITHUB_TOKEN": inputs["token"],
        "GITHUB_API_URL": inputs["api-url"],
        "FLEETFLOW_APP_ID": inputs["app-id"],
        "FLEETFLOW_APP_PRIVATE_KEY": inputs["app-private-key"],
    }
    for key, value in settings.items():
        if value:
            env[key] = value
        elif key not in ("FLEETFLOW_CONTROL_PLANE", "GITHUB_API_URL"):  # those two keep the runner's defaults
            env.pop(key, None)
    env.pop("FLEETFLOW_PLAN_DIR", None)
    if plans is not None:
        env["FLEETFLOW_PLAN_DIR"] = str(plans)
    return env


def plan_dir(environ: Mapping[str, str]) -> Path:
    """A new, empty folder for this step's full plans in the runner's temp folder (so no plan of an earlier step
    can be uploaded as this one's)."""
    return Path(tempfile.mkdtemp(prefix="fleetflow-plan-", dir=environ.get("RUNNER_TEMP") or None))


def shard_dir(environ: Mapping[str, str]) -> Path:
    """A new, empty folder for a shard job's manifest and bundle in the runner's temp folder (the CLI answers it as
    the ``artifact-dir`` output, for actions/upload-artifact)."""
    return Path(tempfile.mkdtemp(prefix="fleetflow-shard-", dir=environ.get("RUNNER_TEMP") or None))


# --- main ---

def main(argv: list[str], environ: Mapping[str, str] | None = None,
         installer: Callable[[], Path] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    if len(argv) != 1 or argv[0] not in COMMANDS:
        error(f"usage: run.py {{{'|'.join(COMMANDS)}}}", "fleetflow action")
        return 2
    name = argv[0]
    title = TITLES.get(name, f"fleetflow {name}")
    inputs = read_inputs(name, environ)
    problems = validate(inputs, environ)
    if problems:
        for problem in problems:
            error(problem, title)
        return 2

    print("::group::Install fleetflow", flush=True)
    started = time.monotonic()
    try:
        venv = installer() if installer else install.install(lambda text: print(text, flush=True))
    except install.InstallError as exc:
        print("::endgroup::")
        error(str(exc), "fleetflow install")
        return 3
    print(f"fleetflow environment ready in {time.monotonic() - started:.2f} s", flush=True)
    print("::endgroup::", flush=True)

    args = cli_arguments(inputs, environ)
    print(f"fleetflow {' '.join(args)}", flush=True)
    cli = install.fleetflow_executable(venv)
    plans = plan_dir(environ) if inputs.flag("full-plan") else None
    return subprocess.run([str(cli), *args], env=cli_environment(inputs, environ, plans), check=False,
                          cwd=working_directory(inputs, environ)).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
