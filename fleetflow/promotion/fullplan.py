"""The full plan of a schedule: every change, where the pull request can only show the first 64 KB of it.

A PR body holds at most 65,536 characters (:mod:`fleetflow.promotion.prbody`), so its diff is cut. The full plan
(a summary of the changes, then the unified diff of every changed file) is streamed to a file, one file's diff at
a time, in the same pass that collects the PR's part: the whole diff is never held in memory. The workflows upload
that folder as an artifact of the run, and the PR body links to it:

* the workflow run (``$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID``), whose page lists the
  run's artifacts (GitHub docs, "Downloading workflow artifacts": on the run's summary page, under "Artifacts";
  actions/upload-artifact's ``artifact-url`` output has the form ``<run URL>/artifacts/<id>``, known only after the
  upload, so the PR links the run and the job summary the artifact itself);
* GitHub's compare view of the GitOps branch and the PR's head branch, ``<server>/<owner>/<repo>/compare/
  <base>...<head>`` (GitHub docs, "Comparing commits": append ``/compare`` to the repository's path, then
  ``BASE...COMPARE``; the sources are in tests/test_full_plan.py), there as long as the branch is. It is
  GitHub's rendering of the diff, with GitHub's own limits on what a large diff shows; the artifact is the
  complete plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote

from fleetflow.render.pipeline import Changes

PLAN_ARTIFACT = "fleetflow-plan"


def plan_path(folder: Path, environment: str) -> Path:
    return folder / f"{environment}.diff"


def plan_header(environment: str, main_commit: str, env_branch: str, env_commit: str, changes: Changes) -> str:
    """The summary above the diff, as ``#`` lines (``git apply`` and ``patch`` skip text before the first diff)."""
    lines = [f"fleetflow plan: {environment} <- main@{main_commit} ({env_branch}@{env_commit})",
             f"assignments: {len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} "
             f"removed, {changes.unchanged} unchanged; config keys changed: {len(changes.config_keys)}"]
    for label, names in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed),
                         ("config key changed", changes.config_keys)):
        lines += [f"  {label}: {name}" for name in names]
    return "".join(f"# {line}\n" for line in lines) + "\n"


def write_plan(path: Path, header: str, chunks: Iterable[str], limit: int) -> str:
    """Write ``header`` and every chunk of the diff to ``path`` (made aside and renamed: a reader never sees half a
    plan), and return the chunks up to the one that passes ``limit`` characters (what the PR shows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    shown: list[str] = []
    size = 0
    with partial.open("w", encoding="utf-8", newline="\n") as out:
        out.write(header)
        for chunk in chunks:
            out.write(chunk)
            if size <= limit:
                shown.append(chunk)
                size += len(chunk)
    partial.replace(path)
    return "".join(shown)


def run_url(environ: Mapping[str, str]) -> str | None:
    """The URL of the workflow run this process is part of (GitHub's default environment variables
    ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_RUN_ID``), or None outside Actions."""
    server, repo, run = (environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if not (server and repo and run.isdigit()):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}"


def compare_url(server: str, repo: str, base: str, head: str) -> str:
    """GitHub's compare view of ``head`` against ``base`` in ``repo`` (owner/name)."""
    return f"{server.rstrip('/')}/{repo}/compare/{quote(base, safe='/')}...{quote(head, safe='/')}"
