"""Run this repository's real workflows and composite actions under ``act`` in host mode, offline.

- The reusable workflows and composite actions are resolved with ``--local-repository`` from a copy of this checkout
  (``fleetflow/fleetflow@v0``, what the example callers reference), so act never fetches anything.
- Third-party actions get local stand-ins the same way (``actions/create-github-app-token`` at its pinned sha: a
  composite action that hands out the stand-in server's token and records what was asked of it; ``actions/cache``,
  used by the composite actions: records the path and key and restores nothing, as on a first run).
- GitHub is the stand-in server (``tests/ghstub``): ``GITHUB_API_URL`` (act also derives ``github.api_url`` from it),
  the repositories' clone URLs are ``file://`` bare repos.
- The composite actions' venv lives in pytest's cache (``FLEETFLOW_ACTION_VENV``), so it is built once per machine
  and reused by every run (act copies the action into a fresh directory each run).

act runs with ``--json``: each log line is an object; step outputs (``set-output``), job summaries (``summary``),
job results (``jobResult``) and the steps' raw output are read from there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
ACT = Path(sys.executable).parent / "act"
FLEETFLOW_REF = "fleetflow/fleetflow@v0"
APP_TOKEN_ACTION = "actions/create-github-app-token"
CHECKOUT_ACTION = "actions/checkout"
CACHE_ACTION = "actions/cache"
# Copied for the action checkout: what the workflows and actions need, and what install.py builds fleetflow from.
CHECKOUT_PARTS = (".github", "actions", "fleetflow", "pyproject.toml", "README.md")
CHECKOUT_IGNORED = ("__pycache__", "*.pyc", ".venv", ".venv.lock", "*.egg-info")


def act_available() -> bool:
    return ACT.is_file() and os.access(ACT, os.X_OK)


def copy_checkout(dest: Path) -> Path:
    """The parts of this checkout a workflow run sees as ``fleetflow/fleetflow@v0`` (no venvs, no caches)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in CHECKOUT_PARTS:
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=shutil.ignore_patterns(*CHECKOUT_IGNORED), dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, dest / part)
    return dest


def pinned_uses(workflow_dir: Path, action: str, pattern: str = "*.y*ml") -> set[str]:
    """The refs ``uses: <action>@<ref>`` is pinned to in the workflows (stand-ins are mapped at each); ``pattern``
    ``*/action.yml`` over ``actions/`` for the composite actions."""
    refs: set[str] = set()
    for path in workflow_dir.glob(pattern):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.split("#", 1)[0].strip()
            marker = f"uses: {action}@"
            if marker in text:
                refs.add(text.split(marker, 1)[1].strip().strip("'\""))
    return refs


APP_TOKEN_STANDIN = """\
# Test stand-in for actions/create-github-app-token: same inputs and output. It cannot mint a real installation
# token (the stand-in server has no App endpoints); it checks its inputs, records what was asked (JSON lines in
# $FLEETFLOW_TEST_APP_TOKEN_LOG) and hands out $FLEETFLOW_TEST_APP_TOKEN.
name: create-github-app-token (stand-in)
description: test stand-in
inputs:
  client-id: {required: false, default: ""}
  app-id: {required: false, default: ""}
  private-key: {required: true}
  owner: {required: false, default: ""}
  repositories: {required: false, default: ""}
  github-api-url: {required: false, default: ""}
  permission-contents: {required: false, default: ""}
  permission-pull-requests: {required: false, default: ""}
  permission-statuses: {required: false, default: ""}
  permission-checks: {required: false, default: ""}
outputs:
  token:
    value: ${{ steps.mint.outputs.token }}
runs:
  using: composite
  steps:
    - id: mint
      shell: bash
      env:
        IN_CLIENT_ID: ${{ inputs.client-id }}
        IN_APP_ID: ${{ inputs.app-id }}
        IN_PRIVATE_KEY: ${{ inputs.private-key }}
        IN_OWNER: ${{ inputs.owner }}
        IN_REPOSITORIES: ${{ inputs.repositories }}
        IN_API_URL: ${{ inputs.github-api-url }}
        IN_CONTENTS: ${{ inputs.permission-contents }}
        IN_PULL_REQUESTS: ${{ inputs.permission-pull-requests }}
        IN_STATUSES: ${{ inputs.permission-statuses }}
        IN_CHECKS: ${{ inputs.permission-checks }}
      run: python3 "$GITHUB_ACTION_PATH/mint.py"
"""

APP_TOKEN_MINT = """\
import json, os, sys

env = os.environ
if not env["IN_CLIENT_ID"] or "PRIVATE KEY" not in env["IN_PRIVATE_KEY"]:
    print("::error::client-id and private-key are required (app-id is deprecated)")
    sys.exit(1)
record = {k.removeprefix("IN_").lower(): v for k, v in env.items() if k.startswith("IN_") and k != "IN_PRIVATE_KEY"}
with open(env["FLEETFLOW_TEST_APP_TOKEN_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
token = env["FLEETFLOW_TEST_APP_TOKEN"]
print(f"::add-mask::{token}")
with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"token={token}\\n")
"""


CHECKOUT_STANDIN = """\
# Test stand-in for actions/checkout: copies $FLEETFLOW_TEST_SOURCE (this fleetflow checkout) to `path` and records
# the repository and ref asked for (JSON lines in $FLEETFLOW_TEST_CHECKOUT_LOG). act has no job.workflow_sha, so the
# workflows get the ref from their fleetflow-ref input here.
name: checkout (stand-in)
description: test stand-in
inputs:
  repository: {required: false, default: ""}
  ref: {required: false, default: ""}
  path: {required: false, default: ""}
  persist-credentials: {required: false, default: "true"}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        IN_REPOSITORY: ${{ inputs.repository }}
        IN_REF: ${{ inputs.ref }}
        IN_PATH: ${{ inputs.path }}
        IN_PERSIST: ${{ inputs.persist-credentials }}
      run: python3 "$GITHUB_ACTION_PATH/checkout.py"
"""

CHECKOUT_COPY = """\
import json, os, shutil, sys

env = os.environ
if not env["IN_REF"]:
    print("::error::no ref to check out")
    sys.exit(1)
dest = os.path.join(env["GITHUB_WORKSPACE"], env["IN_PATH"])
shutil.rmtree(dest, ignore_errors=True)
shutil.copytree(env["FLEETFLOW_TEST_SOURCE"], dest, symlinks=True)
with open(env["FLEETFLOW_TEST_CHECKOUT_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({k.removeprefix("IN_").lower(): v for k, v in env.items() if k.startswith("IN_")}) + "\\n")
"""


CACHE_STANDIN = """\
# Test stand-in for actions/cache (the runs are offline): records the path and key asked for (JSON lines in
# $FLEETFLOW_TEST_CACHE_LOG) and restores nothing, as on a runner's first job; the real action is measured in
# benchmarks/bench_action_install.py.
name: cache (stand-in)
description: test stand-in
inputs:
  path: {required: true}
  key: {required: true}
outputs:
  cache-hit:
    description: always false
    value: "false"
runs:
  using: composite
  steps:
    - shell: bash
      env:
        IN_PATH: ${{ inputs.path }}
        IN_KEY: ${{ inputs.key }}
      run: python3 "$GITHUB_ACTION_PATH/record.py"
"""


CACHE_RECORD = """\
import json, os

with open(os.environ["FLEETFLOW_TEST_CACHE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({"path": os.environ["IN_PATH"], "key": os.environ["IN_KEY"]}) + "\\n")
"""


def write_cache_standin(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "action.yml").write_text(CACHE_STANDIN, encoding="utf-8")
    (dest / "record.py").write_text(CACHE_RECORD, encoding="utf-8")
    return dest


def write_checkout_standin(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "action.yml").write_text(CHECKOUT_STANDIN, encoding="utf-8")
    (dest / "checkout.py").write_text(CHECKOUT_COPY, encoding="utf-8")
    return dest


def write_app_token_standin(dest: Path, *, accept_app_id: bool = False) -> Path:
    """``accept_app_id``: the App's id may come as ``app-id`` (the input before v3 deprecated it), what the workflows
    of an older fleetflow pass (benchmarks/old_design_under_act.py)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "action.yml").write_text(APP_TOKEN_STANDIN, encoding="utf-8")
    mint = APP_TOKEN_MINT
    if accept_app_id:
        mint = mint.replace('not env["IN_CLIENT_ID"]', 'not (env["IN_CLIENT_ID"] or env["IN_APP_ID"])')
        assert mint != APP_TOKEN_MINT
    (dest / "mint.py").write_text(mint, encoding="utf-8")
    return dest


@dataclass
class ActResult:
    """One act run: exit code, the JSON log, and what it says."""

    returncode: int
    entries: list[dict[str, Any]]
    stderr: str
    seconds: float

    @property
    def log(self) -> str:
        return "\n".join(str(e.get("msg", "")) for e in self.entries)

    def job_results(self) -> dict[str, str]:
        """Job name → success / failure. act names a reusable workflow's jobs ``<owner>/<repo> <workflow
        name>/<job name>`` (``fleetflow/fleetflow control plane/Promote to dev``)."""
        return {str(e["job"]).strip(): str(e["jobResult"]) for e in self.entries if "jobResult" in e}

    def jobs(self, part: str) -> dict[str, str]:
        """The results of the jobs whose name contains ``part``."""
        return {name: r for name, r in self.job_results().items() if part in name}

    def outputs(self, job: str | None = None, step: str | None = None) -> list[dict[str, str]]:
        """Every ``set-output`` act recorded, as ``{job, step, name, value}`` (composite steps are recorded at
        each level; ``step`` filters on the outermost step id)."""
        found = []
        for e in self.entries:
            if e.get("command") != "set-output":
                continue
            step_ids = e.get("stepID") or []
            if job is not None and job not in str(e.get("job", "")):
                continue
            if step is not None and (not step_ids or step_ids[0] != step):
                continue
            found.append({"job": str(e.get("job")), "step": ".".join(step_ids), "name": str(e.get("name")),
                          "value": str(e.get("arg", ""))})
        return found

    def output(self, name: str, job: str | None = None, step: str | None = None) -> str:
        """The (last) value of output ``name`` set by a top-level step (``step`` = its id) of ``job``."""
        values = [o["value"] for o in self.outputs(job, step) if o["name"] == name and "." not in o["step"]]
        if not values:
            raise KeyError(f"no output {name!r} (job {job!r}, step {step!r}) in the act log:\n{self.tail()}")
        return values[-1]

    def summaries(self, job: str | None = None) -> list[str]:
        """Job summary text written to ``$GITHUB_STEP_SUMMARY`` (act logs each step's summary)."""
        seen: dict[tuple[str, str], str] = {}
        for e in self.entries:
            if e.get("command") == "summary" and (job is None or job in str(e.get("job", ""))):
                seen[(str(e.get("job")), str(e.get("content")))] = str(e.get("content"))
        return list(seen.values())

    def annotations(self, level: str = "error", job: str | None = None) -> list[str]:
        """The messages of the ``::error::`` / ``::warning::`` / ``::notice::`` workflow commands act processed
        (``title: message`` when a title was given)."""
        found = []
        for e in self.entries:
            if e.get("command") == level and (job is None or job in str(e.get("job", ""))):
                title = (e.get("kvPairs") or {}).get("title")
                found.append(f"{title}: {e.get('arg', '')}" if title else str(e.get("arg", "")))
        return found

    def raw_lines(self) -> list[str]:
        out: list[str] = []
        for e in self.entries:
            if e.get("raw_output"):
                out += str(e.get("msg", "")).rstrip("\n").split("\n")
        return out

    def tail(self, lines: int = 80) -> str:
        return "\n".join(self.log.splitlines()[-lines:]) + ("\n" + self.stderr[-3000:] if self.stderr else "")


@dataclass
class Act:
    """An act invocation template: where it runs, what it maps, what it passes."""

    workdir: Path  # the calling repository (a git clone whose origin names it on GitHub)
    cache: Path  # --action-cache-path (act's per-run host workspaces)
    local_repositories: dict[str, Path] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    process_env: dict[str, str] = field(default_factory=dict)

    def command(self, event: str, workflow: Path, event_path: Path, extra: Iterable[str] = ()) -> list[str]:
        cmd = [str(ACT), event, "-W", str(workflow), "-e", str(event_path), "-P", "ubuntu-latest=-self-hosted",
               "--action-cache-path", str(self.cache), "--no-cache-server", "--json", "--pull=false",
               "--actor", "ada"]
        for ref, path in self.local_repositories.items():
            cmd += ["--local-repository", f"{ref}={path}"]
        for key, value in self.env.items():
            cmd += ["--env", f"{key}={value}"]
        for key, value in self.secrets.items():
            cmd += ["--secret", f"{key}={value}"]
        for key, value in self.variables.items():
            cmd += ["--var", f"{key}={value}"]
        return [*cmd, *extra]

    def run(self, event: str, payload: Mapping[str, Any], workflow: Path, *, timeout: float = 240,
            extra: Iterable[str] = ()) -> ActResult:
        self.cache.mkdir(parents=True, exist_ok=True)
        event_path = self.cache.parent / f"event-{event}-{time.monotonic_ns()}.json"
        event_path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        started = time.monotonic()
        done = subprocess.run(self.command(event, workflow, event_path, extra), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.process_env})
        entries = []
        for line in done.stdout.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                entry = {"msg": line, "raw_output": True, "unparsed": True}
            if isinstance(entry, dict):
                entries.append(entry)
        return ActResult(done.returncode, entries, done.stderr, time.monotonic() - started)
