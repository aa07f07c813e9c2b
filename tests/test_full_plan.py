"""The full plan beside the cut one: schedule streams the summary and the whole diff to a file (``--plan-dir``), the
workflows upload it as an artifact, and a PR body whose diff was cut links the run that holds it and GitHub's
compare view of the branches.

GitHub's rules built against:
- A PR body holds at most 65,536 characters (REST "Create a pull request", ``body``; 422 "body is too long").
- A workflow run's page is ``$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID`` (docs, "Variables
  reference", default environment variables) and lists the run's artifacts ("Downloading workflow artifacts").
  actions/upload-artifact (action.yml at v7.0.0, bbbca2dd) outputs ``artifact-url``, "Common uses cases for such a
  download URL can be adding download links to artifacts in descriptions or comments on pull requests", of the
  form ``https://github.com/example-org/example-repo/actions/runs/1/artifacts/1234`` (its README): known only after
  the upload, so the PR links the run.
- The compare view is ``https://github.com/OWNER/REPO/compare/BASE...HEAD``: GitHub's docs, "Comparing commits"
  (docs.github.com/en/enterprise/2.19/user/github/committing-changes-to-your-project/comparing-commits, now under
  pull-requests/committing-changes-to-your-project/viewing-and-comparing-commits/comparing-commits): "To compare
  different versions of your repository, append /compare to your repository's path", with base and compare as
  ``BASE...COMPARE`` (their example: ``https://github.com/octocat/linguist/compare/master...octocat:master``); the
  three-dot form is the diff a pull request shows ("About comparing branches in pull requests"). The docs say
  nothing about a '/' in a branch name: it stays as it is (each other character that is not URL-safe is quoted).
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from fleetflow.cli import main as cli
from fleetflow.promotion.fullplan import compare_url, plan_header, run_url, write_plan
from fleetflow.promotion.prbody import BODY_LIMIT, body
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.render.pipeline import Changes
from tests.fleet import Fleet
from tests.test_prbody import facts
from tests.test_promotion import first_commit, fleet_config, make_local_fleet, roll_out

RUN = "https://github.com/contoso/control-plane/actions/runs/42"
COMPARE = "https://github.com/contoso/gitops/compare/dev...fleetflow/dev"


def test_a_cut_body_links_the_run_and_the_compare_view() -> None:
    diff = "".join(f"--- a/f{i}\n+++ b/f{i}\n@@ -1 +1 @@\n-old {i}\n+new {i}\n" for i in range(4000))
    cut = facts(diff)
    text = body(type(cut)(**{**cut.__dict__, "plan_url": RUN, "compare_url": COMPARE}))
    assert len(text) <= BODY_LIMIT and "The diff is cut" in text
    assert f"artifact of [the workflow run]({RUN})" in text and "`fleetflow-plan`" in text
    assert f"[the compare view]({COMPARE})" in text
    assert "`fleetflow plan --environment qa`" in text
    plain = body(cut)  # outside Actions: the command only
    assert "workflow run" not in plain and "compare view" not in plain and "`fleetflow plan" in plain
    small = body(type(cut)(**{**facts("--- a/x\n+++ b/x\n").__dict__, "plan_url": RUN}))
    assert RUN not in small  # nothing cut: nothing to point at


def test_urls_follow_githubs_forms() -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "contoso/control-plane",
           "GITHUB_RUN_ID": "42"}
    assert run_url(env) == RUN
    assert run_url({**env, "GITHUB_RUN_ID": ""}) is None and run_url({}) is None
    assert compare_url("https://github.com/", "contoso/gitops", "dev", "fleetflow/dev") == COMPARE


def test_the_plan_streams_to_the_file() -> None:
    """20 MB of diff written with a peak of a few chunks in memory; the PR's part stops past the limit."""
    chunk = "+" + "x" * 99_999 + "\n"

    def chunks() -> Iterator[str]:
        for _ in range(200):
            yield chunk

    path = Path(__import__("tempfile").mkdtemp()) / "plans" / "dev.diff"
    tracemalloc.start()
    try:
        shown = write_plan(path, "# header\n", chunks(), BODY_LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.stat().st_size == len("# header\n") + 200 * len(chunk)
    assert len(shown) == len(chunk)  # the first chunk passes the limit: the PR gets that one, the file all
    assert peak < 2_000_000, peak  # never the whole 20 MB
    assert not list(path.parent.glob(".*partial"))


def dev_with_a_change(root: Path) -> Fleet:
    """A local fleet whose dev rolled out main's first commit, then a change on dev's branch (debug logging): the
    next schedule of dev opens a PR with a plan to show."""
    fleet = make_local_fleet(root)
    with fleet.context() as ctx:
        promote_many(ctx, None, first_commit(fleet))
    assert roll_out(fleet, "dev") == "success"
    fleet.push_env("dev", {"configs.yaml": fleet_config("debug")}, "dev: debug logging")
    return fleet


def test_schedule_writes_the_full_plan_when_asked(tmp_path: Path) -> None:
    fleet = dev_with_a_change(tmp_path)
    sha = first_commit(fleet)
    plans = tmp_path / "plans"
    with fleet.context() as ctx:
        ctx.plan_dir = plans
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "created" and outcome.plan_file == str(plans / "dev.diff")
    text = (plans / "dev.diff").read_text()
    assert text.startswith(f"# fleetflow plan: dev <- main@{sha}")
    assert "#   config key changed: env-wide: LOG_LEVEL (changed)" in text
    assert "-  LOG_LEVEL: info" in text and "+  LOG_LEVEL: debug" in text
    diff_part = text[text.index("\n\n") + 2:]
    assert diff_part in fleet.open_pr("dev").body  # small: the PR shows all of it
    assert outcome.model_dump(by_alias=True)["planFile"] == str(plans / "dev.diff")


def test_the_cli_takes_plan_dir_and_reports_the_file(tmp_path: Path) -> None:
    fleet = dev_with_a_change(tmp_path)
    plans = tmp_path / "plans"
    args = ["schedule", "--environment", "dev", "--forge", "local", "--control-plane", fleet.cp_url,
            "--format", "json"]
    env = {"FLEETFLOW_PLAN_DIR": str(plans), "FLEETFLOW_CACHE_DIR": str(tmp_path / "cli-cache")}
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    reply = json.loads(result.output)
    assert reply["result"]["planFile"] == str(plans / "dev.diff") and (plans / "dev.diff").is_file()


def test_the_header_lists_every_name() -> None:
    changes = Changes(added=[f"ct/app-{i}" for i in range(500)], unchanged=3)
    header = plan_header("qa", "a" * 40, "qa", "b" * 40, changes)
    assert header.count("#   added: ") == 500 and header.endswith("\n\n")
