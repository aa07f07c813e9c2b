"""How long a composite action takes before fleetflow runs: a cold job (empty cache) and a warm one (the venv
restored by ``actions/cache``), under ``act`` in host mode with act's built-in cache server.

    python benchmarks/bench_action_install.py --cache-action DIR [--runs 3]

``DIR`` is a checkout of github.com/actions/cache at the sha the actions pin (``uses: actions/cache@<sha>`` in
``actions/*/action.yml``); the tests run offline with a stand-in, so the real action is only measured here. Each run
is one job of a caller workflow that runs the ``route`` action (``--environments`` given: no forge is read), with a
fresh ``FLEETFLOW_ACTION_VENV`` (a new runner has no venv). Cold: act's cache server starts empty, so the venv is
built from PyPI (hash-pinned) and saved after the job. Warm: the same cache server, so the venv is restored.

"Before fleetflow runs" is the sum of the steps that come first: the cache-key step, the restore step, and the
install inside the run step (``run.py`` prints it: ``fleetflow environment ready in N s``). act's own job set-up
(copying the action checkout) is left out: on GitHub the runner downloads the action instead. Needs network access
to PyPI for the cold runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACT = Path(sys.executable).parent / "act"
CALLER = """\
on: push
jobs:
  route:
    runs-on: ubuntu-latest
    steps:
      - uses: fleetflow/fleetflow/actions/route@v0
        with:
          forge: local
          environments: dev
          summary: "false"
"""
EVENT = {"ref": "refs/heads/main", "before": "0" * 40, "after": "1" * 40, "deleted": False}
STEP = re.compile(r"Success - Main (.+?) \[([\d.]+)(ms|s)\]")
READY = re.compile(r"fleetflow environment ready in ([\d.]+) s")


def pinned_cache_sha() -> str:
    shas = {m.group(1) for p in (ROOT / "actions").glob("*/action.yml")
            for m in re.finditer(r"uses: actions/cache@([0-9a-f]{40})", p.read_text(encoding="utf-8"))}
    if len(shas) != 1:
        raise SystemExit(f"expected one pinned actions/cache sha in actions/*/action.yml, found {sorted(shas)}")
    return shas.pop()


def checkout_copy(dest: Path) -> Path:
    for part in (".github", "actions", "fleetflow", "pyproject.toml", "README.md"):
        source = ROOT / part
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", "*.egg-info")
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=ignore)
        else:
            shutil.copy2(source, dest / part)
    return dest


def one_job(work: Path, cache_action: Path, sha: str, venv: Path) -> dict[str, float]:
    """One act run; the seconds of each step before fleetflow runs, and their sum."""
    shutil.rmtree(venv, ignore_errors=True)
    cmd = [str(ACT), "push", "-e", str(work / "event.json"), "-P", "ubuntu-latest=-self-hosted", "--json",
           "--pull=false", "--local-repository", f"actions/cache@{sha}={cache_action}",
           "--local-repository", f"fleetflow/fleetflow@v0={work / 'fleetflow'}",
           "--cache-server-path", str(work / "cache-server"), "--action-cache-path", str(work / "act"),
           "--env", f"FLEETFLOW_ACTION_VENV={venv}"]
    done = subprocess.run(cmd, cwd=work / "caller", capture_output=True, text=True,
                          env={**os.environ, "HOME": str(work / "home")})
    messages = []
    for line in done.stdout.splitlines():
        try:
            messages.append(str(json.loads(line).get("msg", "")))
        except ValueError:
            messages.append(line)
    if done.returncode != 0:
        raise SystemExit("act failed:\n" + "\n".join(messages[-40:]) + done.stderr[-2000:])
    steps: dict[str, float] = {}
    for message in messages:
        if m := STEP.search(message):
            steps[m.group(1)] = float(m.group(2)) / (1000 if m.group(3) == "ms" else 1)
        if m := READY.search(message):
            steps["install (in the run step)"] = float(m.group(1))
    wanted = ("Where fleetflow's environment lives, and its cache key", "Restore fleetflow's environment",
              "install (in the run step)")
    figures = {name: steps.get(name, 0.0) for name in wanted}
    figures["before fleetflow runs"] = sum(figures.values())
    figures["cache hit"] = float(any("Cache restored from key" in m for m in messages))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-action", type=Path, required=True,
                        help="a checkout of actions/cache at the pinned sha")
    parser.add_argument("--runs", type=int, default=3, help="cold/warm pairs (default 3)")
    args = parser.parse_args()
    sha = pinned_cache_sha()
    results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-action-install-") as tmp:
            work = Path(tmp)
            checkout_copy(work / "fleetflow")
            (work / "caller" / ".github" / "workflows").mkdir(parents=True)
            (work / "caller" / ".github" / "workflows" / "route.yml").write_text(CALLER, encoding="utf-8")
            subprocess.run(["git", "init", "-q"], cwd=work / "caller", check=True)
            (work / "event.json").write_text(json.dumps(EVENT), encoding="utf-8")
            (work / "home").mkdir()
            venv = work / "home" / "fleetflow-venv"
            results["cold"].append(one_job(work, args.cache_action.resolve(), sha, venv))
            results["warm"].append(one_job(work, args.cache_action.resolve(), sha, venv))
    print(f"actions/cache@{sha}, {args.runs} cold/warm pairs; seconds (min / median / max)")
    for kind, runs in results.items():
        print(f"{kind}: cache hit in {int(sum(r['cache hit'] for r in runs))}/{len(runs)} runs")
        for name in [k for k in runs[0] if k != "cache hit"]:
            values = [r[name] for r in runs]
            print(f"  {name:<58} {min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}")
    warm = statistics.median(r["before fleetflow runs"] for r in results["warm"])
    print(f"warm job before fleetflow runs: {warm:.2f} s (target <= 5 s): {'OK' if warm <= 5 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
