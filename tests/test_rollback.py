"""Rollbacks and holds as people and the automation meet them: a rollback is made by hand (``fleetflow promote
--environment E --commit OLDER``); the automatic promotions (a push's run, check-rollout's fan-out, reconcile) only
ever move an environment forward. Real git repos, on the local forge and the real GitHubForge on the stand-in."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fleetflow.errors import GateError, InputError
from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.promote import promote, promote_many
from fleetflow.promotion.schedule import schedule_environment
from tests.fleet import Fleet, git
from tests.helpers import run_cli
from tests.test_promotion import first_commit, make_local_fleet, roll_out


def two_commits_everywhere_up_to_qa(fleet: Fleet) -> tuple[str, str]:
    """main@first then main@second promoted and rolled out in dev and qa (prod-eu/prod-us get second pinned)."""
    first = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, first)
    assert roll_out(fleet, "dev") == "success" and roll_out(fleet, "qa") == "success"
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        promote_many(ctx, None, second)
    assert roll_out(fleet, "dev") == "success" and roll_out(fleet, "qa") == "success"
    assert fleet.pin("dev") == fleet.pin("qa") == fleet.pin("prod-eu") == second
    return first, second


def test_a_late_or_re_run_push_promotion_does_not_roll_the_first_environment_back(fleet: Fleet) -> None:
    """The promotion of a push runs with that push's commit; a run that comes after a newer push's run, or a person
    re-running it ("Re-running a workflow or jobs in a workflow uses the same GITHUB_SHA (commit SHA) and GITHUB_REF
    (Git ref) of the original event", GitHub docs, "About re-running workflows and jobs"), promotes an older commit.
    Until 2026-11-29 that rolled dev back and held it there (automatic promotions then skipped it) with exit 0; now
    dev stays at the newer commit and the run says why, and how to roll back on purpose."""
    first = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, first)
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        promote_many(ctx, None, second)
    dev_branch, head = fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    with fleet.context() as ctx:
        [late] = promote_many(ctx, None, first)
    assert (late.pinned, late.held, late.schedule) == (False, None, None)
    assert late.message == (f"dev runs main@{second[:12]}, newer than main@{first[:12]}: not rolled back (automatic "
                            f"promotions only move forward); to roll it back: fleetflow promote --environment dev "
                            f"--commit {first[:12]}")
    assert fleet.pin("dev") == second and fleet.branch_sha(fleet.cp_url, "dev") == dev_branch
    assert fleet.branch_sha(fleet.gitops_url, "fleetflow/dev") == head
    with fleet.context() as ctx:  # by hand it is the rollback it always was
        back = promote(ctx, "dev", first)
    assert fleet.pin("dev") == first and back.held == f"rollback from {second[:12]} to {first[:12]}"


def test_rolling_dev_back_does_not_roll_back_qa_when_dev_s_gate_passes(fleet: Fleet) -> None:
    """A person rolls dev back to main@first while qa (and prod) run main@second; dev's gate passes on first and
    check-rollout fans out to qa. Until 2026-11-29 the fan-out promoted first to qa: a rollback of qa nobody asked
    for, held there (and once qa rolled out, prod-eu and prod-us the same way), so one rollback in dev walked down
    the whole chain. Now qa stays at second, the fan-out says so, and qa is rolled back only by hand."""
    first, second = two_commits_everywhere_up_to_qa(fleet)
    with fleet.context() as ctx:
        back = promote(ctx, "dev", first)
    assert back.held is not None and fleet.pin("dev") == first
    qa_branch = fleet.branch_sha(fleet.cp_url, "qa")
    fleet.approve("dev")
    fleet.clusters_report("dev")
    assert roll_out_gate(fleet, "dev") == (
        "success", [], [f"qa: qa runs main@{second[:12]}, newer than main@{first[:12]}: not rolled back (automatic "
                        f"promotions only move forward); to roll it back: fleetflow promote --environment qa "
                        f"--commit {first[:12]}"])
    assert fleet.pin("qa") == second and fleet.branch_sha(fleet.cp_url, "qa") == qa_branch
    assert fleet.open_pr("qa") is None
    with fleet.context() as ctx:  # qa rolled back by hand: dev's success on first is the guarantee it needs
        qa_back = promote(ctx, "qa", first)
    assert fleet.pin("qa") == first and qa_back.held == f"rollback from {second[:12]} to {first[:12]}"
    with fleet.context() as ctx, pytest.raises(GateError, match="held"):
        promote(ctx, "qa", second)


def roll_out_gate(fleet: Fleet, env: str) -> tuple[str, list[str], list[str]]:
    """The gate of ``env`` after its soak time, with check-rollout's fan-out: (state, promoted, skipped)."""
    fleet.clock.advance(timedelta(minutes=3))
    with fleet.context() as ctx:
        outcome = check_rollout(ctx, env)
    return outcome.state, [p.environment for p in outcome.promoted], outcome.skipped


def test_a_pin_shortened_by_hand_is_named_at_its_line_and_status_still_reports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person edits ``base-repo.yaml`` and writes the pinned commit short (``commit: 3f2a9c1``, as ``git log
    --oneline`` shows it). Until 2026-11-29 ``schedule`` took it, while ``fleetflow status`` stopped for the whole
    fleet with "forge/git error: not a full commit sha" (exit 3: a forge failure, the wrong place to look):
    fleetflow's forges post and read commit statuses on full shas only (fleetflow/forge/base.py ``full_sha``).
    Now every command that acts on dev names the line, and ``status`` shows
    dev with the reason (exit 0) and every other environment as before."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:base-repo.yaml")
    fleet.push_env("dev", {"base-repo.yaml": text.replace(sha, sha[:7])}, "pin: shorter")
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        schedule_environment(ctx, "dev")
    [problem] = refused.value.problems()
    assert str(problem.location) == "dev/base-repo.yaml:9:11"
    assert problem.message == f"BaseRepo spec.commit must be a full commit sha (40 lower-case hex digits), not " \
                              f"'{sha[:7]}'"
    assert problem.hint and problem.hint.startswith(f"write the full sha: git rev-parse {sha[:7]}^{{commit}}")
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id)
    assert shown.exit_code == 0, shown.output
    assert "warning: dev/base-repo.yaml:9:11: dev: no pin fleetflow can read: BaseRepo spec.commit" in shown.stderr
