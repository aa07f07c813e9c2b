"""Delivery metrics on a scripted history with known timestamps, checked against values worked out by hand
(the arithmetic is in the comments). Chain dev → qa → prod; T0 = 2026-01-05 00:00 UTC; now = T0 + 3 days.

    c1 lands T0-10m  dev pin T0 ok T0+30m      qa pin +30m ok +2h        prod pin +2h ok +5h
    c2 lands +1d     dev pin +1d5m ok +1d35m   qa pin +1d35m FAIL +1d1h35m
    c3 lands +1d3h   dev pin +1d3h5m ok +1d3h20m  qa pin +1d3h20m ok +1d5h20m  prod pin +1d5h20m FAIL +1d6h
                     prod rolled back to c1: pin +1d7h ok +1d7h30m
    c4 lands +2d     dev pin +2d1m ok +2d31m   qa pin +2d31m (pending)

Definitions: DORA's four keys (https://dora.dev/guides/dora-metrics-four-keys/) as docs/status-page.md states
them for promotions; percentiles by nearest rank.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetflow.cli.metrics import parse_since, render_metrics
from fleetflow.delivery.metrics import compute, outages, p90, summarise
from fleetflow.delivery.records import Promotion
from fleetflow.errors import UsageError
from tests.helpers import run_cli

T0 = datetime(2026, 1, 5, tzinfo=UTC)
CHAIN = {"dev": [], "qa": ["dev"], "prod": ["qa"]}
M, H, D = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
LANDED = {"c1": T0 - 10 * M, "c2": T0 + D, "c3": T0 + D + 3 * H, "c4": T0 + 2 * D}


def promo(env: str, commit: str, pinned: timedelta, decided: timedelta | None, outcome: str = "success",
          rollback: bool = False) -> Promotion:
    return Promotion(environment=env, commit=commit, landed_at=LANDED[commit], pinned_at=T0 + pinned,
                     decided_at=T0 + decided if decided is not None else None, outcome=outcome,  # type: ignore[arg-type]
                     rollback=rollback)


HISTORY = [
    promo("dev", "c1", 0 * M, 30 * M), promo("qa", "c1", 30 * M, 2 * H), promo("prod", "c1", 2 * H, 5 * H),
    promo("dev", "c2", D + 5 * M, D + 35 * M), promo("qa", "c2", D + 35 * M, D + H + 35 * M, "failure"),
    promo("dev", "c3", D + 3 * H + 5 * M, D + 3 * H + 20 * M),
    promo("qa", "c3", D + 3 * H + 20 * M, D + 5 * H + 20 * M),
    promo("prod", "c3", D + 5 * H + 20 * M, D + 6 * H, "failure"),
    promo("prod", "c1", D + 7 * H, D + 7 * H + 30 * M, rollback=True),
    promo("dev", "c4", 2 * D + M, 2 * D + 31 * M), promo("qa", "c4", 2 * D + 31 * M, None, "pending"),
]
NOW = T0 + 3 * D


def test_percentiles_by_nearest_rank() -> None:
    assert p90([1.0]) == 1.0 and p90([3.0, 1.0, 2.0]) == 3.0  # ceil(2.7) = 3rd
    assert p90([float(v) for v in range(1, 11)]) == 9.0  # ceil(9.0) = 9th of 10
    assert summarise([]).median is None and summarise([2.0, 4.0]).median == 3.0


def test_metrics_per_environment_over_the_whole_history() -> None:
    report = compute(HISTORY, CHAIN, NOW)
    assert report.days == 3.0  # from the first pin (T0) to now
    dev, qa, prod = report.environments
    # dev: lead times 40m, 35m, 20m, 31m → sorted 20 31 35 40: median (31+35)/2 = 33m, p90 = 4th = 40m
    assert (dev.lead_time.count, dev.lead_time.median, dev.lead_time.p90) == (4, 33 * 60, 40 * 60)
    assert dev.deployments_per_day == pytest.approx(4 / 3, abs=1e-4)
    assert (dev.change_failure_rate, dev.time_to_restore.count) == (0.0, 0)
    # qa: c1 lead 2h10m = 7800 s, c3 lead 1d5h20m - 1d3h = 2h20m = 8400 s; c4 pending is not decided
    assert (qa.promotions, qa.decided, qa.failed) == (4, 3, 1)
    assert (qa.lead_time.median, qa.lead_time.p90) == (8100, 8400)
    assert qa.change_failure_rate == pytest.approx(1 / 3, abs=1e-4)
    assert qa.deployments_per_day == pytest.approx(2 / 3, abs=1e-4)
    # qa restores: failure at 1d1h35m, next success 1d5h20m → 3h45m = 13500 s
    assert (qa.time_to_restore.count, qa.time_to_restore.median) == (1, 13500)
    # prod: c3 failed and the rollback count as failures (2 of 3); the rollback's success restores after
    # 1d7h30m - 1d6h = 1h30m = 5400 s (the rollback pin at 1d7h is inside the same outage); the rollback is
    # no change, so lead time is c1's only: 5h10m = 18600 s
    assert (prod.promotions, prod.decided, prod.failed, prod.gate_failures, prod.rollbacks) == (3, 3, 2, 1, 1)
    assert prod.change_failure_rate == pytest.approx(2 / 3, abs=1e-4)
    assert (prod.time_to_restore.count, prod.time_to_restore.median) == (1, 5400)
    assert (prod.lead_time.count, prod.lead_time.median) == (1, 18600)
    assert prod.deployments_per_day == pytest.approx(2 / 3, abs=1e-4)
    assert prod.open_outage_since is None


def test_metrics_of_the_chain() -> None:
    chain = compute(HISTORY, CHAIN, NOW).chain
    # only c1 went through prod (c3 failed there): lead time 5h10m, one commit in 3 days
    assert [p.commit for p in chain.lead_times] == ["c1"] and chain.lead_time.median == 18600
    assert chain.deployments_per_day == pytest.approx(1 / 3, abs=1e-4)
    # failures over decided promotions: (0 + 1 + 2) / (4 + 3 + 3)
    assert (chain.failed, chain.decided, chain.change_failure_rate) == (3, 10, 0.3)
    # restores 13500 s (qa) and 5400 s (prod): median 9450, p90 = 2nd of 2 = 13500
    assert (chain.time_to_restore.count, chain.time_to_restore.median, chain.time_to_restore.p90) == (2, 9450, 13500)


def test_since_narrows_the_window() -> None:
    report = compute(HISTORY, CHAIN, NOW, since=T0 + D)
    assert report.days == 2.0
    dev, qa, prod = report.environments
    # dev: 35m, 20m, 31m → median 31m, p90 = 3rd = 35m; 3 successes in 2 days
    assert (dev.lead_time.median, dev.lead_time.p90, dev.deployments_per_day) == (31 * 60, 35 * 60, 1.5)
    assert (qa.change_failure_rate, qa.time_to_restore.median) == (0.5, 13500)
    assert (prod.change_failure_rate, prod.lead_time.count, prod.deployments_per_day) == (1.0, 0, 0.5)
    assert report.chain.lead_time.count == 0 and report.chain.deployments_per_day == 0.0
    assert [d.day.isoformat() for d in report.daily] == ["2026-01-06", "2026-01-07", "2026-01-08"]
    # 2026-01-06: dev c2, c3, qa c3 successes; qa c2, prod c3 and prod's rollback failures
    assert (report.daily[0].successes, report.daily[0].failures) == (3, 3)


def test_an_outage_without_a_success_stays_open() -> None:
    failing = [promo("prod", "c1", 2 * H, 5 * H), promo("prod", "c3", D + 5 * H + 20 * M, D + 6 * H, "failure")]
    [restored_never] = outages(failing)
    assert restored_never.restored is None and restored_never.seconds is None
    prod = compute(failing, CHAIN, NOW).environments[2]
    assert prod.open_outage_since == T0 + D + 6 * H and prod.time_to_restore.count == 0


def test_a_failure_the_gate_later_saw_recover_restores_at_that_success() -> None:
    p = promo("qa", "c2", D, D + H, "failure").model_copy(update={"restored_at": T0 + D + 2 * H})
    qa = compute([p], CHAIN, NOW).environments[1]
    assert (qa.time_to_restore.median, qa.lead_time.median, qa.change_failure_rate) == (3600, 7200, 1.0)


def test_json_is_camel_case() -> None:
    data = compute(HISTORY, CHAIN, NOW).model_dump(by_alias=True, mode="json")
    env = data["environments"][0]
    assert {"leadTime", "deploymentsPerDay", "changeFailureRate", "timeToRestore"} <= set(env)
    assert data["chain"]["environment"] == "chain"


@pytest.mark.parametrize("since", ["99999999999d", "999999999999999999999h"])
def test_since_further_back_than_dates_go_is_a_usage_error(since: str) -> None:
    """``--since 99999999999d`` stopped ``metrics`` with an OverflowError traceback (a bad-input hunt, 2026-11-28)."""
    with pytest.raises(UsageError, match=r"goes back further than dates go|is too long: give one under"):
        parse_since(since, datetime(2026, 11, 28, tzinfo=UTC))


@pytest.mark.parametrize(("since", "said"), [
    ("30", "'30' has no unit: give a duration back from now with its unit (30d for 30 days"),
    ("2026", "'2026' has no unit"),
    ("2027-01-01", "'2027-01-01' is after now (2026-11-28 00:00 UTC)"),
    ("2026-11-28T00:00:01", "is after now"),
    ("2026-13-01", "'2026-13-01' is not a date: month must be in 1..12"),
    ("0d", "'0d' is now: the window would hold no promotion"),
    ("0h", "'0h' is now"),
])
def test_since_that_would_measure_an_empty_window_is_a_usage_error(since: str, said: str) -> None:
    """A realistic-mistake hunt (2026-11-29): ``--since 30`` (days meant) was read as 30 seconds and
    ``--since 2026`` (a year meant) as 2026 seconds, both giving an empty window and exit 0; a year mistyped into
    the future gave "since 2027-01-01 until 2026-11-28 (0.0 days)"; and a date with a bad month was called "an
    invalid duration". Python's ``datetime.fromisoformat`` says why a date-shaped text is no date
    (https://docs.python.org/3/library/datetime.html#datetime.datetime.fromisoformat)."""
    with pytest.raises(UsageError, match=re.escape(said)):
        parse_since(since, datetime(2026, 11, 28, tzinfo=UTC))


def test_since_still_reads_dates_times_and_durations() -> None:
    now = datetime(2026, 11, 28, 12, tzinfo=UTC)
    assert parse_since("30d", now) == now - 30 * D
    assert parse_since("12h", now) == now - 12 * H
    assert parse_since("2w", now) == now - 14 * D  # weeks: until 2026-11-29 "invalid duration '2w'"
    assert parse_since("2026-01-31", now) == datetime(2026, 1, 31, tzinfo=UTC)  # no zone: UTC
    assert parse_since("2026-01-31T12:00:00+02:00", now) == datetime(2026, 1, 31, 10, tzinfo=UTC)
    assert parse_since("2026-11-28T12:00:00Z", now) == now  # now itself is no future


def test_a_success_dated_before_its_commit_landed_is_left_out_of_the_lead_time() -> None:
    """c5 lands at +2d12h by the committer's clock, but dev's gate saw it succeed at +2d11h by the forge's: a clock
    skew, not a delivery. Its lead time (-1h) is left out of dev's median and p90 and listed apart, in JSON and in
    the text, instead of a negative duration; it is still a deployment."""
    landed = {**LANDED, "c5": T0 + 2 * D + 12 * H}
    skewed = Promotion(environment="dev", commit="c5", landed_at=landed["c5"], pinned_at=T0 + 2 * D + 10 * H,
                       decided_at=T0 + 2 * D + 11 * H, outcome="success")
    report = compute([*(p for p in HISTORY if p.environment == "dev"), skewed], {"dev": []}, NOW)
    [dev] = report.environments
    # dev as before (20 31 35 40 minutes: median 33m, p90 40m), one deployment more
    assert (dev.lead_time.count, dev.lead_time.median, dev.lead_time.p90) == (4, 33 * 60, 40 * 60)
    assert [(p.commit, p.seconds) for p in dev.lead_times_left_out] == [("c5", -3600.0)]
    assert "c5" not in [p.commit for p in dev.lead_times] and dev.successes == 5
    assert [(p.commit, p.seconds) for p in report.chain.lead_times_left_out] == [("c5", -3600.0)]
    assert report.chain.lead_time.median == 33 * 60 and report.chain.successes == 5
    data = report.model_dump(by_alias=True, mode="json")
    assert data["environments"][0]["leadTimesLeftOut"] == [{"commit": "c5", "at": "2026-01-07T11:00:00Z",
                                                            "seconds": -3600.0}]
    text = render_metrics(report, "txt")
    assert text.splitlines()[2].split()[:4] == ["dev", "5", "33m", "40m"] and " -" not in text
    assert ("dev: 1 lead time left out: success dated up to 1h before the commit landed on main (the forge's clock "
            "and the committer's disagree)") in text.splitlines()


def test_metrics_command_leaves_out_lead_times_a_clock_skew_made_negative(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo story on a forge whose clock is a day behind git's (its commits dated 2001-01-02 09:00, its forge's
    clock starting 2001-01-01 09:00): every success predates its commit's landing on main. ``fleetflow metrics``
    printed "-23h 56m" lead times; now it shows none, and says how many it left out and why."""
    from fleetflow.clock import Clock
    from fleetflow.demo.story import Demo

    stamp = f"{int(datetime(2001, 1, 2, 9, tzinfo=UTC).timestamp())} +0000"
    monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
    monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)
    Demo(tmp_path / "demo", lambda _text: None, clock=Clock(datetime(2001, 1, 1, 9, tzinfo=UTC))).run()
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    cp = tmp_path / "demo" / "control-plane.git"
    result = run_cli("metrics", "--forge", "local", "--control-plane", cp, "--format", "json")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)["result"]["metrics"]
    dev = metrics["environments"][0]
    assert dev["environment"] == "dev" and dev["leadTime"] == {"count": 0, "median": None, "p90": None}
    assert len(dev["leadTimesLeftOut"]) == 2 and all(p["seconds"] < 0 for p in dev["leadTimesLeftOut"])
    assert all(m["leadTimes"] == [] for m in [*metrics["environments"], metrics["chain"]])
    text = run_cli("metrics", "--forge", "local", "--control-plane", cp).output
    assert " -" not in text and "dev: 2 lead times left out: success dated up to 23h" in text


def test_a_promotion_superseded_before_its_gate_decided_is_not_a_decided_one() -> None:
    """A realistic-mistake hunt (2026-11-29): main moves faster than dev's gate, so c2 is pinned while c1's gate is
    still pending (the history calls c1 "superseded"), and c2 fails. The change failure rate of dev counted c1
    as decided: 50 % (1 of 2) for a dev whose every decided promotion failed. DORA's change failure rate is the
    share of deployments that fail (https://dora.dev/guides/dora-metrics-four-keys/); c1 was never judged."""
    superseded = promo("dev", "c1", 0 * M, None, "superseded")
    failed = promo("dev", "c2", D + 5 * M, D + 35 * M, "failure")
    dev = compute([superseded, failed], {"dev": []}, NOW).environments[0]
    assert (dev.promotions, dev.decided, dev.failed, dev.change_failure_rate) == (2, 1, 1, 1.0)
    assert compute([superseded], {"dev": []}, NOW).environments[0].change_failure_rate is None


def test_an_environment_added_to_the_chain_does_not_hold_back_the_commits_before_it() -> None:
    """A realistic-mistake hunt (2026-11-29): a second region, prod2 after qa, is added to the chain on main with c3.
    c1 went through the chain of its day (dev → qa → prod); now's chain has two last environments, prod and prod2,
    and c1 never went to prod2, so the chain's lead time and frequency counted c3 alone: one commit in 3 days.
    With the last environments of each commit's own chain (``sinks_at``, read by the history) c1 counts too."""
    history = [
        promo("dev", "c1", 0 * M, 30 * M), promo("qa", "c1", 30 * M, 2 * H), promo("prod", "c1", 2 * H, 5 * H),
        promo("dev", "c3", D + 3 * H + 5 * M, D + 3 * H + 20 * M),
        promo("qa", "c3", D + 3 * H + 20 * M, D + 5 * H + 20 * M),
        promo("prod", "c3", D + 5 * H + 20 * M, D + 6 * H), promo("prod2", "c3", D + 5 * H + 20 * M, D + 7 * H),
    ]
    chain = {**CHAIN, "prod2": ["qa"]}
    before = compute(history, chain, NOW).chain
    assert [p.commit for p in before.lead_times] == ["c3"]  # what the old reading gave
    report = compute(history, chain, NOW, sinks_at={"c1": ["prod"]})
    # c1: 5h10m = 18600 s to prod; c3: landed +1d3h, through prod2 at +1d7h: 4h = 14400 s
    assert [(p.commit, p.seconds) for p in report.chain.lead_times] == [("c1", 18600), ("c3", 14400)]
    assert report.chain.deployments_per_day == pytest.approx(2 / 3, abs=1e-4)


@pytest.mark.parametrize("since", ["30 days", "-5d", "1mo", "2026/01/01"])
def test_since_that_is_no_duration_names_the_units_it_takes(since: str) -> None:
    """A realistic-mistake hunt (2026-11-29): ``--since '30 days'`` or ``-5d`` ended in "invalid duration: use e.g.
    90s, 15m, 1h30m", the durations of a RolloutPolicy, which have no days: the hint led away from ``30d``."""
    with pytest.raises(UsageError) as refused:
        parse_since(since, datetime(2026, 11, 28, tzinfo=UTC))
    said = str(refused.value)
    assert "90s, 15m" not in said and "one unit: d, w, h, m or s (30d, 2w, 12h, 1h30m)" in said, said
