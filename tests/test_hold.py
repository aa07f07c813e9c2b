"""The hold after a run that left a gate waiting for reports (fleetflow.promotion.hold), on the GitHub stand-in
through the real ``GitHubForge``: it polls the first page of the watched commits' statuses and check runs (GitHub's
combined status carries ``state`` and ``total_count``: "Get the combined status for a specific reference", GitHub
REST docs; check runs are not in it: "List check runs for a Git reference") and ends as soon as the counts no longer
prove the gate waits, or at the deadline. Time is a fake clock here: ``sleep`` advances it and plays the clusters."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from fleetflow.promotion.context import Context
from fleetflow.promotion.hold import HoldOutcome, hold_while_waiting
from fleetflow.promotion.reconcile import ReconcileOutcome, reconcile, reconcile_holding
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


STATUS = r"/commits/[0-9a-f]{40}/status$"


def test_a_poll_that_gets_a_5xx_is_tried_again_at_the_next_poll(fleet: Fleet) -> None:
    """GitHub answers 502 to the first poll's combined status: that read is tried once (PyGithub's ``GithubRetry``
    would retry it with backoff, past the deadline on a slow GitHub) and the next poll is its retry; flux/dev-2
    reports meanwhile, so the second poll ends the hold 20 s in. One 502, no second request for it."""
    watches = waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]
    stub.inject("GET", STATUS, "status_5xx")
    fake = FakeTime(fleet, {1: lambda: fleet.clusters_report("dev", {1: "missing"})})
    mark = stub.mark()
    outcome, requests = hold(fleet, watches, fake)
    assert (outcome.ended, outcome.seconds, outcome.polls, outcome.failed_polls) == ("reports", 20, 2, 1)
    assert stub.count(since=mark, path=STATUS, status=502) == 1
    assert requests == 1 + 2  # the failed poll stopped at its first read


def test_a_read_failing_at_every_poll_holds_to_the_deadline(fleet: Fleet) -> None:
    """GitHub answering 502 every time: every poll tries once, the hold ends at its deadline (not later) and says
    how many reads failed and why; nothing is written."""
    watches = waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]
    stub.inject("GET", STATUS, "status_5xx", times=100)
    writes = stub.mark()
    lines: list[str] = []
    fake = FakeTime(fleet)
    with fleet.context() as ctx:
        outcome = hold_while_waiting(ctx.forge, watches, fake.now + 50, 10, ctx.clock, clock=fake.clock,
                                     sleep=fake.sleep, say=lines.append)
    assert (outcome.ended, outcome.seconds, outcome.polls, outcome.failed_polls) == ("deadline", 50, 4, 4)
    assert outcome.message.startswith("held the slot 50 s, to the end: dev still waiting for reports (4 of 4 reads "
                                      "of the counts failed, the last: GitHub: cannot read the combined commit "
                                      "status: GitHub failed with 502 (tried once, not retried)")
    assert sum(line.startswith("reading the counts failed (") and line.endswith("trying again in 10 s")
               for line in lines) == 4
    assert stub.count(since=writes, path=STATUS, status=502) == 4
    assert stub.count(since=writes, method="POST") == 0


@pytest.mark.parametrize(("kind", "wait"), [("rate_limit", {"reset_after": 3600}),
                                            ("secondary_rate_limit", {"retry_after": 60})])
def test_a_rate_limit_stops_the_polling_without_waiting_for_its_reset(fleet: Fleet, kind: str,
                                                                       wait: dict[str, int]) -> None:
    """A poll that hits GitHub's rate limit (primary: 403 with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``
    an hour ahead; secondary: ``Retry-After: 60``; "Rate limits for the REST API" and "Troubleshooting the REST
    API", GitHub docs) does not sleep it out, as PyGithub's ``GithubRetry`` would (that would hold the concurrency
    slot, and the runner, up to an hour past the hold's deadline). The hold stops polling: the docs say not to make
    another request before the reset ("Continuing to make requests while you are rate limited may result in the
    banning of your integration"), and the pending run reads everything anyway. It ends at its deadline. The fake
    clock moves 50 s; the real one must not move much."""
    watches = waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]
    stub.inject("GET", STATUS, kind, times=100, **wait)  # type: ignore[arg-type]
    mark = stub.mark()
    fake = FakeTime(fleet)
    started = time.monotonic()
    with fleet.context() as ctx:
        outcome = hold_while_waiting(ctx.forge, watches, fake.now + 50, 10, ctx.clock, clock=fake.clock,
                                     sleep=fake.sleep)
        assert time.monotonic() - started < 10
        stub.clear_faults()  # after the hold, the same forge retries again: a 502 once, then the answer
        stub.inject("GET", STATUS, "status_5xx")
        assert ctx.forge.statuses("contoso/gitops", watches[0].commits[0])
    assert (outcome.ended, outcome.seconds, outcome.polls, outcome.failed_polls) == ("poll-failed", 50, 1, 1)
    assert outcome.message.startswith("held the slot 50 s, to the end, without reading the counts again: GitHub: "
                                      "cannot read the combined commit status: rate limited (tried once, without "
                                      "waiting for the reset)")
    assert stub.count(since=mark, path=STATUS, status=403) == 1
    assert [r.status for r in stub.requests_since(mark) if re.search(STATUS, r.path)][-2:] == [502, 200]


def test_a_hold_past_its_deadline_does_not_poll(fleet: Fleet) -> None:
    watches = waiting_dev(fleet)
    fake = FakeTime(fleet)
    outcome, requests = hold(fleet, watches, fake, seconds=0)
    assert (outcome.ended, outcome.seconds, outcome.polls, requests, fake.sleeps) == ("deadline", 0, 0, 0, 0)


def test_the_reconcile_action_takes_hold_until(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """actions/reconcile's ``hold-until`` and ``hold-poll-seconds`` inputs, checked by actions/_shared/run.py before
    anything is installed (one line each, exit 2), then passed as ``--hold-until`` and ``--hold-poll-seconds``;
    an empty ``hold-until`` (hold-seconds 0 in the gitops workflow) passes neither."""
    import json

    from tests.test_workflow_files import RECORD_ARGV, action_env, assert_refused, fake_venv
    from tests.test_workflow_files import run as action

    assert_refused(tmp_path, capsys, "reconcile", [
        ({"hold-until": "soon"}, "input hold-until: 'soon' is not a time in seconds since 1970"),
        ({"hold-until": "-5"}, "input hold-until: '-5' is not a time"),
        ({"hold-poll-seconds": "0"}, "input hold-poll-seconds: '0' is not a whole number of seconds from 1 to 9999"),
        ({"hold-poll-seconds": "10;id"}, "input hold-poll-seconds: '10;id' is not a whole number"),
    ], forge="local")

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


def holding(fleet: Fleet, fake: FakeTime, again: Callable[[Context], ReconcileOutcome] = reconcile,
            seconds: float = 50, before_hold: Callable[[], None] = lambda: None) -> ReconcileOutcome:
    """``reconcile --hold-until`` in process: a first pass, then (after ``before_hold``) the holds and the passes
    they start (``again``, given the run's context)."""
    first = run(fleet)
    before_hold()
    with fleet.context() as ctx:
        return reconcile_holding(ctx, first, lambda: again(ctx), fake.now + seconds, 10, clock=fake.clock,
                                 sleep=fake.sleep)


def last_report(fleet: Fleet) -> Callable[[], None]:
    """flux/dev-2 reports (after ``waiting_dev``), and the soak time passes."""

    def report() -> None:
        fleet.clusters_report("dev", {1: "missing"})
        fleet.clock.advance(timedelta(minutes=2))

    return report


def steps(outcome: ReconcileOutcome) -> dict[str, list[str]]:
    return {e.environment: [s.step for s in e.did] for e in outcome.environments if e.did}


def test_the_held_run_reconciles_again_once_the_reports_are_in(fleet: Fleet) -> None:
    """When the counts say the gate may have changed, the held run reconciles again itself (it need not wait for
    the pending run to start): the second pass records dev's gate and promotes qa; nothing waits for reports after
    it, so the run ends. The result holds both passes' steps and one hold. (Had the soak time not passed, the
    second pass would find the gate soaking, not waiting for reports, and end the run too.)"""
    waiting_dev(fleet)
    outcome = holding(fleet, FakeTime(fleet, {2: last_report(fleet)}))
    assert steps(outcome) == {"dev": ["gate", "gate"], "qa": ["promote"]}
    hold = outcome.hold
    assert hold is not None and (hold.ended, hold.seconds, hold.polls, hold.passes) == ("reports", 20, 2, 1)
    assert hold.message.startswith("ended the hold after 20 s: dev has 2 reports now (")
    assert hold.message.endswith("; reconciled again in this run")
    sha = fleet.branch_sha(fleet.cp_url, "main")
    assert fleet.cp_status(sha, "dev") == "success" and fleet.pin("qa") == sha
    assert outcome.waiting_for_reports == []


def test_the_run_s_hold_counts_the_polls_that_failed(fleet: Fleet) -> None:
    """The run's one ``hold`` sums its holds' figures, the failed polls too: a 502 at the first poll, the last
    report at the second, which ends the hold and starts the second pass."""
    waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]
    outcome = holding(fleet, FakeTime(fleet, {1: last_report(fleet)}),
                      before_hold=lambda: stub.inject("GET", STATUS, "status_5xx"))  # the hold's first poll
    hold = outcome.hold
    assert hold is not None and (hold.ended, hold.polls, hold.failed_polls, hold.passes) == ("reports", 2, 1, 1)
    assert steps(outcome) == {"dev": ["gate", "gate"], "qa": ["promote"]}


def test_a_pass_that_still_waits_holds_again_to_the_deadline(fleet: Fleet) -> None:
    """A CI status that lands during the hold is one more context: with one cluster missing the counts say the
    gate may be complete, so the run reconciles again; the gate still waits (flux/dev-2 has not reported), so it
    holds again, to the same deadline."""
    waiting_dev(fleet)
    tip = fleet.gitops_tip("dev")
    fake = FakeTime(fleet, {1: lambda: fleet.post_status(tip, "ci/lint", "success", "lint")})
    outcome = holding(fleet, fake)
    assert steps(outcome) == {"dev": ["gate", "gate"]} and outcome.waiting_for_reports == ["dev"]
    hold = outcome.hold
    assert hold is not None and (hold.ended, hold.seconds, hold.passes) == ("deadline", 50, 1)
    assert "; reconciled again in this run; then held the slot 40 s, to the end: dev still waiting for reports" \
        in hold.message


def test_a_failed_second_pass_leaves_the_work_to_the_next_run(fleet: Fleet) -> None:
    """The second pass fails as a whole (here: the control plane cannot be read): the run keeps the first pass's
    result, says the next run does the work, and does not hold again."""
    from fleetflow.errors import GitError

    waiting_dev(fleet)

    def broken(_ctx: Context) -> ReconcileOutcome:
        raise GitError("git fetch failed: the remote hung up", command="fetch", reason="the remote hung up")

    fake = FakeTime(fleet, {1: lambda: fleet.clusters_report("dev", {1: "missing"})})
    outcome = holding(fleet, fake, again=broken)
    hold = outcome.hold
    assert hold is not None and (hold.ended, hold.seconds, hold.passes) == ("reports", 10, 0)
    assert hold.message.endswith("; reconciling again failed (git fetch failed: the remote hung up): the next run "
                                 "does it")
    assert steps(outcome) == {"dev": ["gate"]} and outcome.waiting_for_reports == ["dev"]


def test_an_environment_that_fails_in_the_second_pass_is_not_listed_as_waiting(fleet: Fleet) -> None:
    """Whether an environment waits for reports is what the last pass found, not the last gate of any pass: here
    dev's second pass fails (GitHub answers 502 to its statuses, after the forge's retries), so dev has a problem
    and no gate from that pass, and is not in ``waiting_for_reports`` (nor watched), though the first pass's gate
    waited; its steps still show both passes."""
    waiting_dev(fleet)
    stub = fleet.stub  # type: ignore[attr-defined]

    def failing_again(ctx: Context) -> ReconcileOutcome:
        stub.inject("GET", STATUS, "status_5xx", times=100)
        return reconcile(ctx)

    outcome = holding(fleet, FakeTime(fleet, {1: last_report(fleet)}), again=failing_again)
    dev = outcome.environments[0]
    assert dev.environment == "dev" and dev.problems and "502" in str(dev.problems[0])
    assert steps(outcome) == {"dev": ["gate"]}  # the first pass's: the second took none
    assert outcome.waiting_for_reports == [] and outcome.report_watches() == []
    hold = outcome.hold
    assert hold is not None and (hold.ended, hold.passes) == ("reports", 1)
