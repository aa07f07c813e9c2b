"""The one entry point of fleetflow's composite actions: check the inputs, install, run the CLI, report.

    python3 actions/_shared/run.py promote|schedule|check-rollout|route

Standard library only, so it runs on the runner's own Python before anything is installed:

1. reads the action's inputs from ``FF_INPUT_<NAME>`` environment variables (action.yml passes every input through
   ``env:``; nothing is ever expanded into a shell command line) and checks them all at once: each bad input is an
   ``::error::`` annotation, then exit 2 (usage error, as the CLI);
2. installs fleetflow (``install.py``: hash-pinned venv, cached);
3. runs ``fleetflow <command> ... --format json`` with the settings in the environment variables the CLI reads
   (``FLEETFLOW_FORGE``, ``FLEETFLOW_CONTROL_PLANE``, ``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``FLEETFLOW_APP_ID``,
   ``FLEETFLOW_APP_PRIVATE_KEY``; ``FLEETFLOW_CACHE_DIR`` and ``FLEETFLOW_CONFIG`` pass through from the job);
4. reads the CLI's JSON envelope (``ok``, ``exitCode``, ``problems``, ``warnings``, ``result``), sets the step
   outputs from ``result`` (``$GITHUB_OUTPUT``), writes the job summary (``$GITHUB_STEP_SUMMARY``: this run, then
   ``fleetflow status --format markdown``), turns every reported problem into an ``::error file=,line=,col=::``
   annotation (and every warning into a ``::warning``), and exits with the CLI's exit code (0 done, 1 input or
   gate says no, 2 usage, 3 forge or git).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


def _sibling(name: str) -> ModuleType:
    """A module next to this file, whatever the working directory and without touching sys.path."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fleetflow_action_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


install = _sibling("install")

ENV_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
GITHUB_REPO = re.compile(r"^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$")
APP_ID = re.compile(r"^[A-Za-z0-9.]+$")
URL = re.compile(r"^https?://[^\s]+$")
EVENT_NAME = re.compile(r"^[a-z_]+$")
BOOLEANS = {"true": True, "false": False, "": False}
COMMANDS = ("promote", "schedule", "check-rollout", "route", "reconcile")
COMMON = ("forge", "control-plane", "token", "api-url", "app-id", "app-private-key", "summary")
INPUTS = {
    "promote": ("environment", "commit", "release", *COMMON),
    "schedule": ("environment", *COMMON),
    "check-rollout": ("environment", *COMMON),
    "route": ("event-name", "event-path", "environments", *COMMON),
    "reconcile": ("environment", *COMMON),
}
ENV_NAME_HINT = "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters"


# --- workflow commands (https://docs.github.com/actions/reference/workflow-commands-for-github-actions) ---

def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: object) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items()
                     if value not in (None, ""))
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def emit(name: str, message: str, **properties: object) -> None:
    print(command(name, message, **properties), flush=True)


def annotate_problem(problem: dict[str, Any], title: str, level: str = "error") -> None:
    """One ``::error`` (or ``::warning``) per problem, placed at its file/line/column when the CLI knows them."""
    message = str(problem.get("message") or "error")
    if problem.get("hint"):
        message += f" (hint: {problem['hint']})"
    location = problem.get("location") or {}
    emit(level, message, title=title, file=location.get("file"), line=location.get("line"),
         col=location.get("column"))


def print_raw(text: str) -> None:
    """Print CLI output to the log with workflow commands switched off: nothing in it (a commit message, a PR
    title) can act as a command."""
    if not text.strip():
        return
    token = uuid.uuid4().hex
    print(f"::stop-commands::{token}")
    print(text.rstrip("\n"))
    print(f"::{token}::", flush=True)


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


def read_inputs(command_name: str, environ: dict[str, str]) -> Inputs:
    values = {name: environ.get(env_key(name), "").strip() for name in INPUTS[command_name]}
    values["app-private-key"] = environ.get(env_key("app-private-key"), "")  # a PEM keeps its newlines
    values["forge"] = values["forge"].lower() or "github"
    if "summary" in values:
        values["summary"] = values["summary"].lower() or "true"
    return Inputs(command_name, values)


def validate(inputs: Inputs) -> list[str]:
    """Every problem with the inputs, as one line each (the value is quoted, never interpreted)."""
    problems: list[str] = []
    name = inputs.command
    forge = inputs["forge"]
    if forge not in ("github", "local"):
        problems.append(f"input forge: {forge!r} is not github or local")
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
    for flag in ("release", "summary"):
        if flag in inputs.values and inputs[flag].lower() not in BOOLEANS:
            problems.append(f"input {flag}: {inputs[flag]!r} is not true or false")
    control_plane = inputs["control-plane"]
    if control_plane:
        if forge == "github" and not GITHUB_REPO.match(control_plane):
            problems.append(f"input control-plane: {control_plane!r} is not owner/name")
        elif any(ch in control_plane for ch in "\r\n\0"):
            problems.append("input control-plane: contains a line break")
    if inputs["api-url"] and not URL.match(inputs["api-url"]):
        problems.append(f"input api-url: {inputs['api-url']!r} is not an http(s) URL")
    if inputs["app-id"] and not APP_ID.match(inputs["app-id"]):
        problems.append(f"input app-id: {inputs['app-id']!r} is not a GitHub App ID or client ID")
    if bool(inputs["app-id"]) != bool(inputs["app-private-key"].strip()):
        problems.append("inputs app-id and app-private-key go together: set both or neither")
    if forge == "github" and not (inputs["token"] or inputs["app-id"]):
        problems.append("the github forge needs credentials: set input token, or app-id and app-private-key")
    if name == "route":
        event = inputs["event-name"] or os.environ.get("GITHUB_EVENT_NAME", "")
        path = inputs["event-path"] or os.environ.get("GITHUB_EVENT_PATH", "")
        if not EVENT_NAME.match(event):
            problems.append(f"input event-name: {event!r} is not an event name (default: $GITHUB_EVENT_NAME)")
        if not path or not Path(path).is_file():
            problems.append(f"input event-path: {path!r} is not a file (default: $GITHUB_EVENT_PATH)")
        for item in filter(None, (n.strip() for n in inputs["environments"].split(","))):
            if not ENV_NAME.match(item):
                problems.append(f"input environments: {item!r} is not an environment name ({ENV_NAME_HINT})")
    return problems


def cli_arguments(inputs: Inputs) -> list[str]:
    name = inputs.command
    args = [name]
    if name == "route":
        args += ["--event-name", inputs["event-name"] or os.environ.get("GITHUB_EVENT_NAME", ""),
                 "--event-path", inputs["event-path"] or os.environ.get("GITHUB_EVENT_PATH", "")]
        if inputs["environments"]:
            args += ["--environments", inputs["environments"]]
    if inputs["environment"]:
        args += ["--environment", inputs["environment"]]
    if name == "promote":
        args += ["--commit", inputs["commit"].lower()]
        if inputs.flag("release"):
            args.append("--release")
    return [*args, "--format", "json"]


def cli_environment(inputs: Inputs, environ: dict[str, str]) -> dict[str, str]:
    """The job's environment minus the raw inputs, plus the settings the CLI reads."""
    env = {k: v for k, v in environ.items() if not k.startswith("FF_INPUT_")}
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
    return env


# --- outputs and summary ---

def set_outputs(outputs: dict[str, str], environ: dict[str, str]) -> None:
    path = environ.get("GITHUB_OUTPUT")
    lines = []
    for key, value in outputs.items():
        delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
        lines.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
    for key, value in outputs.items():
        if "\n" not in value:
            print(f"output {key}={value}")


def cell(text: object) -> str:
    """A value inside a markdown table cell or sentence: no layout or HTML from the data."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\r", " ").replace("\n", " "))


def code(text: object) -> str:
    return f"`{cell(text).replace('`', '')}`"


def short(sha: object) -> str:
    return str(sha or "")[:12]


def pr_link(pr: dict[str, Any] | None) -> str:
    if not pr:
        return "no pull request"
    return f"[#{pr.get('number')}]({cell(pr.get('url'))}) ({cell(pr.get('state') or 'open')})"


def changes_markdown(changes: dict[str, Any] | None) -> list[str]:
    """The plan summary: what the rendered GitOps tree gains, loses and changes."""
    if not changes:
        return []
    lists = [("added", "Added"), ("removed", "Removed"), ("changed", "Changed"),
             ("configKeys", "Config keys changed"), ("heldBack", "Held back (kept their last good files)")]
    counts = ", ".join(f"{len(changes.get(key) or [])} {key if key != 'configKeys' else 'config keys'}"
                       for key, _title in lists[:4])
    lines = [f"Plan: {counts}, {changes.get('unchanged', 0)} unchanged.", ""]
    for key, title in lists:
        items = changes.get(key) or []
        if not items:
            continue
        lines.append(f"<details{' open' if len(items) <= 10 else ''}><summary>{title} ({len(items)})</summary>")
        lines.append("")
        lines += [f"- {code(item)}" for item in items[:200]]
        if len(items) > 200:
            lines.append(f"- ... and {len(items) - 200} more")
        lines += ["", "</details>", ""]
    return lines


def schedule_markdown(outcome: dict[str, Any]) -> list[str]:
    lines = [
        "| environment | operation | pull request | main commit | env-branch commit |",
        "|---|---|---|---|---|",
        f"| {code(outcome.get('environment'))} | {cell(outcome.get('operation'))} "
        f"| {pr_link(outcome.get('pullRequest'))} | {code(short(outcome.get('mainCommit')))} "
        f"| {code(short(outcome.get('envCommit')))} |",
        "",
        cell(outcome.get("message") or ""),
        "",
    ]
    return lines + changes_markdown(outcome.get("changes"))


def run_markdown(name: str, data: dict[str, Any] | None, exit_code: int,
                 problems: list[dict[str, Any]] | None = None) -> list[str]:
    """``data`` is the envelope's ``result`` (None when the command stopped before it had one)."""
    lines = [f"## fleetflow {name}", ""]
    if data is None or exit_code not in (0, 1):
        lines.append(f"**Failed** (exit code {exit_code}):")
        lines.append("")
        for problem in problems or []:
            where = problem.get("location") or {}
            at = ":".join(str(where[k]) for k in ("file", "line", "column") if where.get(k))
            hint = f" (hint: {cell(problem['hint'])})" if problem.get("hint") else ""
            lines.append(f"- {code(at) + ': ' if at else ''}{cell(problem.get('message'))}{hint}")
        return [*lines, ""]
    if name == "schedule":
        lines += schedule_markdown(data)
    elif name == "promote":
        for promotion in data.get("promotions") or []:
            lines += [f"### {cell(promotion.get('environment'))}", "", cell(promotion.get("message")), ""]
            if promotion.get("held"):
                lines += [f"Held: {cell(promotion['held'])}", ""]
            if promotion.get("schedule"):
                lines += schedule_markdown({**promotion["schedule"], "message": ""})
    elif name == "check-rollout":
        state = str(data.get("gateState"))
        icon = {"success": "✅", "failure": "❌"}.get(state, "⏳")
        lines += [f"{icon} **{cell(data.get('environment'))}**: {cell(state)} — {cell(data.get('description'))}", "",
                  f"Main commit {code(short(data.get('mainCommit')))}, GitOps commit "
                  f"{code(short(data.get('gitopsCommit')) or '-')}.", ""]
        clusters = data.get("clusters")
        if clusters:
            lines += ["| clusters | count | which |", "|---|---|---|"]
            for key in ("expected", "succeeded", "failed", "missing"):
                items = clusters.get(key) or []
                if isinstance(items, list):
                    lines.append(f"| {key} | {len(items)} | {', '.join(code(i) for i in items[:50])} |")
                else:
                    lines.append(f"| {key} | {cell(items)} | |")
            lines.append("")
        for promotion in data.get("promoted") or []:
            lines.append(f"- promoted: {cell(promotion.get('message'))}")
        for skipped in data.get("skipped") or []:
            lines.append(f"- not promoted: {cell(skipped)}")
        lines.append("")
    elif name == "reconcile":
        lines += [f"Main at {code(short(data.get('mainCommit')))}.", "",
                  "| environment | found | did | now |", "|---|---|---|---|"]
        for env in data.get("environments") or []:
            found = env.get("found") or {}
            gate = (found.get("gate") or {}).get("state") or "none"
            pr = found.get("pullRequest")
            seen = (f"pinned {code(short(found.get('pinnedCommit')) or '-')}, GitOps carries "
                    f"{code(short(found.get('gitopsMainCommit')) or '-')}, gate {cell(gate)}"
                    + (f", {pr_link(pr)}" if pr else ""))
            steps = "<br>".join(f"**{cell(s.get('step'))}**: {cell(s.get('message'))}" for s in env.get("did") or [])
            problems = "<br>".join(cell(p.get("message")) for p in env.get("problems") or [])
            lines.append(f"| {code(env.get('environment'))} | {seen} | {steps or '–'} | "
                         f"{cell(env.get('waiting')) or problems or '–'} |")
        lines.append("")
    elif name == "route":
        lines += [f"**{cell(data.get('action'))}** {', '.join(code(e) for e in data.get('environments') or [])} "
                  f"{code(short(data.get('commit'))) if data.get('commit') else ''}", "", cell(data.get("reason")), ""]
    return lines


def outputs_for(name: str, data: dict[str, Any], raw: str) -> dict[str, str]:
    def pr_field(outcome: dict[str, Any] | None, key: str) -> str:
        pr = (outcome or {}).get("pullRequest") or {}
        value = pr.get(key)
        return "" if value is None else str(value)

    out: dict[str, str] = {"result": raw.strip()}
    if name == "schedule":
        out.update(operation=str(data.get("operation") or ""), commit=str(data.get("mainCommit") or ""),
                   **{"pull-request-number": pr_field(data, "number"), "pull-request-url": pr_field(data, "url")})
    elif name == "promote":
        promotions = data.get("promotions") or []

        def joined(values: Iterable[str]) -> str:
            return ",".join(values)

        def operation(p: dict[str, Any]) -> str:
            return str((p.get("schedule") or {}).get("operation") or ("held" if p.get("held") else "none"))

        out.update(
            operation=joined(operation(p) for p in promotions),
            commit=str(promotions[0].get("commit") or "") if promotions else "",
            environments=json.dumps([p.get("environment") for p in promotions]),
            **{"pull-request-number": joined(pr_field(p.get("schedule"), "number") for p in promotions),
               "pull-request-url": joined(pr_field(p.get("schedule"), "url") for p in promotions)},
        )
    elif name == "check-rollout":
        out.update(**{"gate-state": str(data.get("gateState") or ""), "description": str(data.get("description") or ""),
                      "promoted": json.dumps([p.get("environment") for p in data.get("promoted") or []])})
    elif name == "reconcile":
        done = {str(e.get("environment")): [str(s.get("step")) for s in e.get("did") or []]
                for e in data.get("environments") or []}
        out.update(steps=json.dumps({k: v for k, v in done.items() if v}),
                   **{"main-commit": str(data.get("mainCommit") or "")})
    elif name == "route":
        envs = [str(e) for e in data.get("environments") or []]
        out.update(action=str(data.get("action") or "none"), environments=json.dumps(envs),
                   matrix=json.dumps(envs or [""]), commit=str(data.get("commit") or ""),
                   release="true" if data.get("release") else "false", reason=str(data.get("reason") or ""))
    return out


def write_summary(lines: list[str], environ: dict[str, str]) -> None:
    path = environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines).rstrip("\n") + "\n\n")


def fleet_status_markdown(cli: Path, env: dict[str, str]) -> list[str]:
    """``fleetflow status --format markdown`` (tables + Mermaid chain); a failure here only warns."""
    result = subprocess.run([str(cli), "status", "--format", "markdown"], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        emit("warning", f"fleetflow status failed (exit {result.returncode}); the job summary has no fleet table")
        print_raw(result.stderr + result.stdout)
        return []
    return [result.stdout]


# --- main ---

def notices(name: str, data: dict[str, Any]) -> None:
    if name == "schedule" and data.get("message"):
        emit("notice", str(data["message"]), title="fleetflow schedule")
    elif name == "promote":
        for promotion in data.get("promotions") or []:
            emit("notice", str(promotion.get("message") or ""), title="fleetflow promote")
    elif name == "check-rollout":
        if data.get("gateState") != "failure":  # a failed gate is one of the envelope's problems (an ::error)
            emit("notice", f"{data.get('environment')}: {data.get('gateState')}: {data.get('description')}",
                 title="fleetflow rollout gate")
    elif name == "reconcile":  # an environment's error is one of the envelope's problems (an ::error)
        for env in data.get("environments") or []:
            for step in env.get("did") or []:
                emit("notice", f"{env.get('environment')}: {step.get('step')}: {step.get('message')}",
                     title="fleetflow reconcile")
    elif name == "route" and not data.get("invalid"):  # an invalid request is one of the envelope's problems
        emit("notice", str(data.get("reason") or ""), title="fleetflow route")


def main(argv: list[str], environ: dict[str, str] | None = None,
         installer: Callable[[], Path] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    if len(argv) != 1 or argv[0] not in COMMANDS:
        emit("error", f"usage: run.py {{{'|'.join(COMMANDS)}}}")
        return 2
    name = argv[0]
    title = f"fleetflow {name}"
    inputs = read_inputs(name, environ)
    problems = validate(inputs)
    if problems:
        for problem in problems:
            emit("error", problem, title=title)
        return 2

    print("::group::Install fleetflow", flush=True)
    try:
        venv = (installer or (lambda: install.install(lambda text: print(text, flush=True))))()
    except install.InstallError as exc:
        print("::endgroup::")
        emit("error", str(exc), title="fleetflow install")
        return 3
    print("::endgroup::", flush=True)
    cli = install.fleetflow_executable(venv)

    env = cli_environment(inputs, environ)
    args = cli_arguments(inputs)
    print(f"fleetflow {' '.join(args)}", flush=True)
    result = subprocess.run([str(cli), *args], env=env, stdout=subprocess.PIPE, text=True)
    exit_code = result.returncode
    print_raw(result.stdout)
    try:
        envelope = json.loads(result.stdout)
        if not isinstance(envelope, dict) or not isinstance(envelope.get("result", {}), (dict, type(None))):
            raise ValueError("not an envelope")
    except ValueError:
        emit("error", f"fleetflow {name} failed with exit code {exit_code} and no JSON result (see the log above)",
             title=title)
        return exit_code or 1

    data: dict[str, Any] | None = envelope.get("result")
    problems = list(envelope.get("problems") or [])
    for warning in envelope.get("warnings") or []:
        annotate_problem(warning, title, "warning")
    for problem in problems:
        annotate_problem(problem, title)
    if envelope.get("ok") is False:
        exit_code = exit_code or int(envelope.get("exitCode") or 1)
    if data is not None:
        set_outputs(outputs_for(name, data, result.stdout), environ)
        notices(name, data)

    if inputs.flag("summary"):
        lines = run_markdown(name, data, exit_code, problems)
        if name != "route":
            lines += fleet_status_markdown(cli, env)
        write_summary(lines, environ)
    return exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
