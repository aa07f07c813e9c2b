"""What a gate that times out says: the missing clusters by name, also on a fleet too big for the first page of
reports to list them (GitHub: 100 a page, "List commit statuses for a reference" / "Get the combined status for a
specific reference", ``per_page`` at most 100), and a timeout even while a cluster's newest report is ``pending``.
Requests counted on the GitHub stand-in (tests/ghstub)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetflow.forge.github import GitHubForge
from fleetflow.promotion.check_rollout import check_rollout
from tests import stand_in
from tests.fleet import Fleet
from tests.ghstub.server import GitHubStub
from tests.reporters import FluxReporter
from tests.stand_in import REPO
from tests.test_gate_reports import decide, gate, merged_dev, post

stub, forge = stand_in.stub, stand_in.forge  # the shared stand-in fixtures (pytest finds them by name)


def test_a_timeout_the_counts_decide_names_the_missing_clusters(stub: GitHubStub, forge: GitHubForge) -> None:
    """250 of 300 clusters reported: the first page's ``total_count`` proves the gate cannot have succeeded, and
    until 2026-11-29 that was the whole timeout, "timed out after 30m: at most 250/300 clusters reported", no name.
    Past the timeout every page is read once (3 pages of statuses + the check runs) and the 50 are named."""
    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(250)})
    reading, requests = decide(stub, forge, [sha], 300, minutes=40)
    d = reading.decision
    assert d.state == "failure" and d.counted and reading.enumerated and requests == 4
    assert d.missing == [f"c{i:05}" for i in range(250, 300)]
    assert d.description.startswith("timed out after 30m: 250/300 clusters; missing: c00250, c00251, ")
    waiting, requests = decide(stub, forge, [sha], 300, minutes=10)  # while waiting: the counts, no more
    assert waiting.decision.state == "pending" and requests == 2 and not waiting.enumerated


def test_a_cluster_still_pending_at_the_timeout_fails_the_gate_by_name(stub: GitHubStub, forge: GitHubForge) -> None:
    """Argo CD's syncing trigger posts ``pending`` (notifications-engine; tests/reporters.py) and a sync that never
    ends posts nothing else; a CI status on the GitOps commit makes the counts undecided. The read stops at the
    first pending cluster, which decided "pending" even past the timeout: until 2026-11-29 such a gate said
    "rolling out: waiting for 300 clusters" for ever and never failed."""
    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(300)})
    post(stub, sha, {120: "pending"})
    stub.repo(REPO).add_status(sha, "success", "ci/lint", "an unrelated context: the counts cannot tell")
    reading, _ = decide(stub, forge, [sha], 300, minutes=40)
    assert reading.decision.state == "failure" and reading.decision.missing == ["c00120"]
    assert reading.decision.description == "timed out after 30m: 299/300 clusters; missing: c00120"


def test_without_names_a_timeout_costs_the_counts_and_still_fails(stub: GitHubStub, forge: GitHubForge) -> None:
    """``name_missing=False`` (reconcile, once the timeout is recorded): the counts decide, as while waiting."""
    from fleetflow.model.resources import RolloutPolicy
    from fleetflow.promotion.reports import read_and_decide
    from tests.test_gate_reports import fleet_of

    sha = stub.repo(REPO).branch_sha("dev")
    assert sha
    post(stub, sha, {i: "success" for i in range(250)})
    policy = RolloutPolicy.model_validate({"timeout": "30m", "soakTime": "0s"})
    now = datetime.now(UTC) + timedelta(seconds=1)
    mark = stub.mark()
    reading = read_and_decide(forge, REPO, [sha], policy, fleet_of(300), now - timedelta(minutes=40), now,
                              name_missing=False)
    assert stub.count(since=mark) == 2 and not reading.decision.counted
    assert reading.decision.description == "timed out after 30m: at most 250/300 clusters reported"
    post(stub, sha, {i: "success" for i in range(250, 300)})
    post(stub, sha, {120: "pending"})
    stub.repo(REPO).add_status(sha, "success", "ci/lint", "an unrelated context")
    reading = read_and_decide(forge, REPO, [sha], policy, fleet_of(300), now - timedelta(minutes=40),
                              now + timedelta(seconds=1), name_missing=False)
    assert reading.decision.state == "failure"  # not "rolling out" past the timeout
    assert reading.decision.description == "timed out after 30m: not every one of 300 clusters succeeded"


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    """The fleet on the GitHub stand-in, with pages of one report (``per_page=1``), so that its two dev clusters
    take the path of a fleet of hundreds: the counts of the first page decide while they can."""
    from tests.test_promotion import make_github_fleet

    monkeypatch.setattr("fleetflow.forge.github._PER_PAGE", 1)
    made = make_github_fleet(tmp_path, request)
    yield made
    made.forge.close()


def test_check_rollout_names_the_missing_at_the_timeout_and_reconcile_says_how_after(fleet: Fleet) -> None:
    """check-rollout names dev-1 at the timeout (its second page read); reconcile, which re-evaluates a recorded
    failure on every event, reads only the counts once the failure is recorded and says where the names are. A CI
    check still pending on the merge makes as many contexts as clusters, the newest commit's combined state
    ``pending``: the counts decide (``gate.estimate``)."""
    merge = merged_dev(fleet)
    FluxReporter(fleet, "flux/dev-2").event(merge, "info", "ReconciliationSucceeded")
    fleet.post_status(merge, "ci/e2e", "pending", "still running")  # two contexts: a second page
    fleet.clock.advance(timedelta(minutes=40))
    outcome = gate(fleet)
    assert outcome.state == "failure" and outcome.decision.missing == ["dev-1"]
    assert outcome.description == "timed out after 30m: 1/2 clusters; missing: dev-1"
    with fleet.context() as ctx:
        again = check_rollout(ctx, "dev", fan_out=False, name_missing_again=False)
    assert again.state == "failure" and again.decision.missing == []
    assert again.decision.description == (
        "timed out after 30m: at most 2/2 clusters reported; the missing clusters were named when the gate timed "
        "out (reconcile reads only the counts since): `fleetflow check-rollout --environment dev` reads every "
        "report and names them")
