"""The status-page action: check the inputs, install fleetflow, write ``<output>/index.html``, report.

Standard library only (it runs on the runner's Python before anything is installed). Inputs arrive as
``FF_INPUT_<NAME>`` variables and are checked by the shared rules of ``actions/_shared/run.py`` (each bad input an
``::error::``, then exit 2); fleetflow is installed by ``actions/_shared/install.py`` (hash-pinned, cached). The
step outputs ``path`` (absolute) and ``result``; with ``summary`` the delivery metrics go to the job summary.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

SAFE_FOLDER = re.compile(r"^(?!/)(?!.*(^|/)\.\.(/|$))[A-Za-z0-9._/-]{1,200}$")


def _shared(name: str) -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "_shared" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fleetflow_action_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


run = _shared("run")


def main(environ: dict[str, str] | None = None, installer: Callable[[], Path] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    names = ("output", *run.COMMON)
    values = {name: environ.get(run.env_key(name), "").strip() for name in names}
    values["app-private-key"] = environ.get(run.env_key("app-private-key"), "")
    values["forge"] = values["forge"].lower() or "github"
    values["summary"] = values["summary"].lower() or "true"
    values["output"] = values["output"] or "fleetflow-status-page"
    inputs = run.Inputs("status-page", values)
    problems = run.validate(inputs)
    if not SAFE_FOLDER.match(values["output"]):
        problems.append(f"input output: {values['output']!r} is not a folder inside the workspace "
                        "(letters, digits, '.', '_', '-', '/'; no '..', not absolute)")
    if problems:
        for problem in problems:
            run.emit("error", problem, title="fleetflow status page")
        return 2
    try:
        venv = (installer or (lambda: run.install.install(lambda text: print(text, flush=True))))()
    except run.install.InstallError as exc:
        run.emit("error", str(exc), title="fleetflow install")
        return 3
    cli = str(run.install.fleetflow_executable(venv))
    env = run.cli_environment(inputs, environ)
    target = (Path(environ.get("GITHUB_WORKSPACE") or ".") / values["output"]).resolve()
    proc = subprocess.run([cli, "status", "--format", "html", "--output", str(target)], env=env,
                          capture_output=True, text=True)
    run.print_raw(proc.stdout)
    run.print_raw(proc.stderr)
    if proc.returncode != 0:
        run.emit("error", f"fleetflow status --format html failed (exit {proc.returncode}); nothing to publish",
                 title="fleetflow status page")
        return proc.returncode
    run.set_outputs({"path": str(target), "result": json.dumps({"ok": True, "path": str(target)})}, environ)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if inputs.flag("summary") and summary:
        metrics = subprocess.run([cli, "metrics", "--format", "markdown"], env=env, capture_output=True, text=True)
        if metrics.returncode == 0:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(metrics.stdout + "\n")
        else:
            run.emit("warning", f"fleetflow metrics failed (exit {metrics.returncode}); no metrics in the summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
