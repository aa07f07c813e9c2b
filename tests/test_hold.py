"""The hold after a run that left a gate waiting for reports (fleetflow.promotion.hold), on the GitHub stand-in
through the real ``GitHubForge``: it polls the first page of the watched commits' statuses and check runs (GitHub's
combined status carries ``state`` and ``total_count``: "Get the combined status for a specific reference", GitHub
REST docs; check runs are not in it: "List check runs for a Git reference") and ends as soon as the counts no longer
prove the gate waits, or at the deadline. Time is a fake clock here: ``sleep`` advances it and plays the clusters."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from fleetflow.promotion.hold import HoldOutcome, hold_while_waiting
from fleetflow.promotion.reconcile import ReconcileOutcome, reconcile
from fleetflow.promotion.reports import ReportWatch
from tests.fleet import Fleet
from tests.test_promotion import make_github_fleet

STATUS_OR_CHECKS = r"/repos/contoso/gitops/commits/[0-9a-f]{40}/(status|check-runs)$"


@pytest.fixture
def fleet(tmp_path: Any, request: pytest.FixtureRequest) -> Fleet:
    return make_github_fleet(tmp_path, request)


def run(fleet: Fleet) -> ReconcileOutcome:
    with fleet.context() as ctx:
        return reconcile(ctx)


def waiting_dev(fleet: Fleet) -> list[ReportWatch]:
    """dev promoted and merged; flux/dev-1 reported, flux/dev-2 not yet: reconcile leaves dev's gate waiting."""
    run(fleet)
    fleet.approve("dev")
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report("dev", {2: "missing"})
    outcome = run(fleet)
    assert outcome.waiting_for_reports == ["dev"]
    watches = [w for w in (e.report_watch for e in outcome.environments) if w is not None]
    assert [w.environment for w in watches] == ["dev"] and len(watches[0].commits) == 1
    return watches


class FakeTime:
    """Unix seconds that only ``sleep`` moves; ``at[n]`` runs during the n-th sleep (the clusters reporting)."""

    def __init__(self, fleet: Fleet, at: dict[int, Callable[[], None]] | None = None) -> None:
        self.now, self.sleeps, self.at, self.fleet = 1_000.0, 0, at or {}, fleet

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        self.fleet.clock.advance(timedelta(seconds=seconds))
        if self.sleeps in self.at:
            self.at[self.sleeps]()


def hold(fleet: Fleet, watches: list[ReportWatch], fake: FakeTime, seconds: float = 50) -> tuple[HoldOutcome, int]:
    stub = fleet.stub  # type: ignore[attr-defined]
    mark = stub.mark()
    with fleet.context() as ctx:
        outcome = hold_while_waiting(ctx.forge, watches, fake.now + seconds, 10, ctx.clock, clock=fake.clock,
                                     sleep=fake.sleep)
    return outcome, stub.count(since=mark, method="GET", path=STATUS_OR_CHECKS)


def test_the_hold_ends_once_every_cluster_may_have_reported(fleet: Fleet) -> None:
    """flux/dev-2 reports during the second wait: the second poll counts 2 of 2 reports and ends the hold 20 s in
    (not 50), at two requests a poll (the merge is the one watched commit); the next run then records the gate."""
    watches = waiting_dev(fleet)
    fake = FakeTime(fleet, {2: lambda: fleet.clusters_report("dev", {1: "missing"})})
    outcome, requests = hold(fleet, watches, fake)
    assert (outcome.ended, outcome.seconds, outcome.polls, outcome.environment) == ("reports", 20, 2, "dev")
    assert requests == 4
    assert outcome.message.startswith("ended the hold after 20 s: dev has 2 reports now (")
    fleet.clock.advance(timedelta(minutes=2))  # the soak time
    after = run(fleet)
    assert {e.environment: [s.step for s in e.did] for e in after.environments if e.did} == \
        {"dev": ["gate"], "qa": ["promote"]}


def test_a_failure_ends_the_hold_at_the_next_poll(fleet: Fleet) -> None:
    """A failing report ends the hold at once (fail fast): the combined state is ``failure``."""
    watches = waiting_dev(fleet)
    fake = FakeTime(fleet, {1: lambda: fleet.clusters_report("dev", {1: "missing", 2: "failure"})})
    outcome, requests = hold(fleet, watches, fake)
    assert (outcome.ended, outcome.seconds, outcome.polls) == ("reports", 10, 1) and requests == 2
    assert "dev has 2 reports now (one failed)" in outcome.message
    assert run(fleet).environments[0].did[0].message.startswith("gate failure: failed: ")


def test_with_no_report_the_hold_lasts_to_the_deadline(fleet: Fleet) -> None:
    """Nothing arrives: polls at 10, 20, 30 and 40 s, none at the deadline (the next run reads everything)."""
    watches = waiting_dev(fleet)
    fake = FakeTime(fleet)
    outcome, requests = hold(fleet, watches, fake)
    assert (outcome.ended, outcome.seconds, outcome.polls, outcome.environment) == ("deadline", 50, 4, None)
    assert requests == 8 and fake.sleeps == 5
    assert outcome.message == "held the slot 50 s, to the end: dev still waiting for reports"


def test_a_failed_read_holds_to_the_deadline_without_reading_again(fleet: Fleet) -> None:
    """GitHub answering 500 to the combined status (after the forge's own retries): the hold gives up polling and
    sleeps out the rest, as the hold did before it polled; nothing is written."""
    watches = waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]
    stub.inject("GET", r"/commits/[0-9a-f]{40}/status$", "status_5xx", times=100)
    writes = stub.mark()
    fake = FakeTime(fleet)
    outcome, _ = hold(fleet, watches, fake)
    assert (outcome.ended, outcome.seconds, outcome.polls) == ("poll-failed", 50, 1)
    assert outcome.message.startswith("held the slot 50 s, to the end, without reading the counts again: ")
    assert stub.count(since=writes, method="POST") == 0


def test_a_hold_past_its_deadline_does_not_poll(fleet: Fleet) -> None:
    watches = waiting_dev(fleet)
    fake = FakeTime(fleet)
    outcome, requests = hold(fleet, watches, fake, seconds=0)
    assert (outcome.ended, outcome.seconds, outcome.polls, requests, fake.sleeps) == ("deadline", 0, 0, 0, 0)


RECORD_ARGV = """\
import json, os, sys
with open(os.environ["RECORD"], "w") as out:
    json.dump(sys.argv[1:], out)
"""


def test_the_reconcile_action_takes_hold_until(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """actions/reconcile's ``hold-until`` and ``hold-poll-seconds`` inputs, checked by actions/_shared/run.py before
    anything is installed (one line each, exit 2), then passed as ``--hold-until`` and ``--hold-poll-seconds``;
    an empty ``hold-until`` (hold-seconds 0 in the gitops workflow) passes neither."""
    import json

    from tests.test_workflow_files import action_env, fake_venv
    from tests.test_workflow_files import run as action

    installed: list[bool] = []

    def installer() -> Any:
        installed.append(True)
        return tmp_path

    for inputs, message in [
        ({"hold-until": "soon"}, "input hold-until: 'soon' is not a time in seconds since 1970"),
        ({"hold-until": "-5"}, "input hold-until: '-5' is not a time"),
        ({"hold-poll-seconds": "0"}, "input hold-poll-seconds: '0' is not a whole number of seconds from 1 to 9999"),
        ({"hold-poll-seconds": "10;id"}, "input hold-poll-seconds: '10;id' is not a whole number"),
    ]:
        env = action_env(tmp_path, forge="local", **inputs)
        assert action.main(["reconcile"], env, installer=installer) == 2 and not installed, inputs
        assert message in capsys.readouterr().out

    venv = fake_venv(tmp_path, RECORD_ARGV)
    record = tmp_path / "argv.json"
    for inputs, expected in [({"hold-until": "1900000000"},
                              ["--hold-until", "1900000000", "--hold-poll-seconds", "10"]),
                             ({"hold-until": "1900000000", "hold-poll-seconds": "3"},
                              ["--hold-until", "1900000000", "--hold-poll-seconds", "3"]),
                             ({"hold-until": "", "hold-poll-seconds": "3"}, [])]:
        env = action_env(tmp_path, forge="local", **inputs)
        env["RECORD"] = str(record)
        assert action.main(["reconcile"], env, installer=lambda: venv) == 0
        argv = json.loads(record.read_text())
        held = argv[argv.index("--hold-until"):argv.index("--hold-until") + 4] if "--hold-until" in argv else []
        assert held == expected and ("--hold-poll-seconds" in argv) == bool(expected), argv


def test_the_step_reports_how_the_hold_ended() -> None:
    """What the reconcile action shows of a hold: the ``hold`` output (how it ended; empty without a hold), a
    notice with the hold's message, and a line of the job summary under the environments' table."""
    from fleetflow.cli.github_actions import reconcile_report
    from fleetflow.promotion.reconcile import ReconcileOutcome

    ended = HoldOutcome(ended="reports", seconds=20, polls=2, environment="dev",
                        message="ended the hold after 20 s: dev has 2 reports now (as many as the gate needs); the "
                                "next run decides its gate")
    report = reconcile_report(ReconcileOutcome(main_commit="a" * 40, environments=[], hold=ended))
    assert report.outputs["hold"] == "reports"
    assert ("notice", ended.message) in report.annotations
    assert f"**Concurrency slot:** {ended.message}.\n" in report.summary
    none = reconcile_report(ReconcileOutcome(main_commit="a" * 40, environments=[]))
    assert none.outputs["hold"] == "" and "Concurrency slot" not in none.summary and none.annotations == []
