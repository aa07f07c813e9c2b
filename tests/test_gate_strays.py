"""What the gate says about reports it cannot count: a cluster that posts under another name than its
``statusContext``. Statuses are posted as Flux's notification-controller and Argo CD notifications post them
(``tests/reporters.py`` names the source files), on both forges, through the real ``check_rollout`` and CLI."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetflow.cli.github_actions import check_rollout_report
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.promote import promote_many
from tests.fleet import Fleet
from tests.reporters import ArgoReporter, FluxReporter
from tests.test_cli_contract import envelope, invoke
from tests.test_cli_contract import local_fleet as cli_fleet
from tests.test_gate_reports import gate, merge_main, merged_dev


def test_a_reporter_that_posts_the_context_in_other_letters_is_counted(fleet: Fleet) -> None:
    """GitHub: "This field is case-insensitive" (github/rest-api-description, "Create a commit status",
    ``context``). A Provider whose ``commitStatusExpr`` gives ``'Flux/' + event.metadata.cluster`` posts
    ``Flux/dev-1`` for the Cluster whose statusContext is ``flux/dev-1``: one context on GitHub, and the gate
    counts it (it timed out with dev-1 green until 2026-11-29)."""
    merge = merged_dev(fleet)
    FluxReporter(fleet, "Flux/dev-1").event(merge, "info", "ReconciliationSucceeded")
    ArgoReporter(fleet, "FLUX/DEV-2").send(merge, "success", "fleetflow-root synced and is healthy")
    fleet.clock.advance(timedelta(minutes=2))
    outcome = gate(fleet)
    assert outcome.state == "success", outcome.description
    assert sorted(outcome.decision.succeeded) == ["dev-1", "dev-2"] and fleet.pin("qa") == merge_main(fleet)


def test_a_label_with_the_domain_name_is_named_while_waiting(fleet: Fleet) -> None:
    """Argo CD notifications (notifications-engine pkg/services/github.go: context = ``status.label``) with a label
    built from the node's fully qualified name: the report sits on the merged commit and the gate cannot count it.
    Until 2026-11-29 the gate said "rolling out: 1/2 clusters", and nothing about it."""
    merge = merged_dev(fleet)
    FluxReporter(fleet, "flux/dev-1").event(merge, "info", "ReconciliationSucceeded")
    ArgoReporter(fleet, "flux/dev-2.contoso.internal").send(merge, "success", "synced")
    fleet.clock.advance(timedelta(minutes=2))
    outcome = gate(fleet)
    assert outcome.state == "pending" and outcome.decision.missing == ["dev-2"]
    assert outcome.description == ("rolling out: 1/2 clusters; 'flux/dev-2.contoso.internal' reported success, "
                                   "not dev-2's 'flux/dev-2' (the name with and without its domain)")
    assert outcome.model_dump(mode="json", by_alias=True)["clusters"]["strays"] == [
        {"cluster": "dev-2", "expectedContext": "flux/dev-2", "context": "flux/dev-2.contoso.internal",
         "state": "success", "how": "the name with and without its domain"}]


def _merged_an_hour_ago(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The CLI's fleet (tests/test_cli_contract.py) promoted, its dev PR merged by a commit dated an hour ago (the
    gate's timeout, 30m, runs from the merge): the GitOps repo and the merge."""
    gitops, sha = cli_fleet(tmp_path, monkeypatch)
    assert invoke("promote", "--commit", sha)[0] == 0
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    forge = LocalForge(cache_dir=tmp_path / "cache", clock=lambda: an_hour_ago)  # the merge commit's date
    pull = forge.open_pull(str(gitops), "fleetflow/dev", "dev")
    assert pull is not None
    forge.merge_pull(str(gitops), pull.number)
    merge = subprocess.run(["git", "--git-dir", str(gitops), "rev-parse", "dev"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return gitops, merge


def test_a_timeout_names_the_context_that_came_instead_and_what_to_fix(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in one Provider's ``commitStatusExpr``: past the timeout the gate fails, the message names the context
    that came instead, and the hint says to align the statusContext (not "fix the failing clusters", which it said
    until 2026-11-29 for every failure, a timeout included)."""
    gitops, merge = _merged_an_hour_ago(tmp_path, monkeypatch)
    forge = LocalForge(cache_dir=tmp_path / "cache")
    forge.set_status(str(gitops), merge, "flux/dev-2", "success", "reconciliation succeeded")
    forge.set_status(str(gitops), merge, "flux/dve-1", "success", "reconciliation succeeded")
    code, stdout, _ = invoke("check-rollout", "--environment", "dev", "--format", "json")
    data = envelope(stdout)
    assert code == 1
    (problem,) = data["problems"]
    assert problem["message"] == ("dev: failure: timed out after 30m: 1/2 clusters; missing: dev-1; 'flux/dve-1' "
                                  "reported success, not dev-1's 'flux/dev-1' (a close name: a typo, or a clus…")
    assert data["result"]["clusters"]["strays"][0]["how"] == "a close name: a typo, or a cluster not in the inventory?"
    assert problem["hint"].startswith("set each Cluster's spec.statusContext to the context its reporter posts, or "
                                      "make the reporter post the expected one")


def test_a_timeout_without_any_report_says_what_to_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No report at all from dev-1 (its cluster does not reconcile the branch, or posts on another commit): the
    hint names the GitOps commit and what to check, and says a late success still passes."""
    gitops, merge = _merged_an_hour_ago(tmp_path, monkeypatch)
    LocalForge(cache_dir=tmp_path / "cache").set_status(str(gitops), merge, "flux/dev-2", "success", "ok")
    code, _, stderr = invoke("check-rollout", "--environment", "dev")
    assert code == 1
    assert "dev: failure: timed out after 30m: 1/2 clusters; missing: dev-1 (hint: no report the gate counts came " \
           f"from the missing clusters on GitOps commit {merge[:12]} or a later one of its branch: check that each " \
           "reconciles that branch and posts its statusContext on the commit it applied" in stderr, stderr
    assert "a success that comes late still passes the gate at the next check" in stderr
    LocalForge(cache_dir=tmp_path / "cache").set_status(str(gitops), merge, "flux/dev-1.contoso.internal", "success",
                                                        "ok")
    code, stdout, _ = invoke("check-rollout", "--environment", "dev")
    assert code == 1 and stdout.splitlines()[1:] == [  # cut from the status's 140 characters: a line of its own
        "  not counted: 'flux/dev-1.contoso.internal' reported success, not dev-1's 'flux/dev-1' (the name with and "
        "without its domain)"]


def test_a_timeout_says_when_a_missing_cluster_reported_on_the_prs_head(fleet: Fleet) -> None:
    """A cluster whose GitRepository follows the PR's branch (``fleetflow/dev``) instead of ``dev`` applies the PR's
    head and reports there (Flux posts on the revision it applied, internal/notifier/github.go); fleetflow merges
    with a merge commit (``merge_method="merge"``), so that head is the merge's second parent. Until 2026-11-29
    the timeout said "missing: dev-1" and nothing else."""
    merge = merged_dev(fleet)
    head = subprocess.run(["git", "--git-dir", fleet.gitops_url, "rev-parse", f"{merge}^2"], capture_output=True,
                          text=True, check=True).stdout.strip()
    FluxReporter(fleet, "flux/dev-1").event(head, "info", "ReconciliationSucceeded")
    FluxReporter(fleet, "flux/dev-2").event(merge, "info", "ReconciliationSucceeded")
    fleet.clock.advance(timedelta(minutes=10))
    assert gate(fleet).decision.elsewhere == []  # only at the timeout: two requests more
    fleet.clock.advance(timedelta(minutes=30))
    outcome = gate(fleet)
    assert outcome.state == "failure"
    assert outcome.decision.elsewhere == [f"dev-1 reported success on the PR's head {head[:12]}, not on dev: {FIX}"]
    assert outcome.model_dump(mode="json", by_alias=True)["clusters"]["elsewhere"] == outcome.decision.elsewhere


FIX = ("does it reconcile the PR's branch fleetflow/dev instead of dev? Point its source (Flux: the GitRepository's "
       "spec.ref.branch; Argo CD: the Application's targetRevision) at dev")


@pytest.fixture
def github_fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    from tests.test_promotion import make_github_fleet

    made = make_github_fleet(tmp_path, request)
    yield made
    made.forge.close()


def test_a_timeout_finds_the_prs_head_after_a_squash_merge(github_fleet: Fleet) -> None:
    """GitHub's "Squash and merge" makes one new commit on the base branch ("About merge methods on GitHub"; and
    auto-merge uses it where merge commits are not allowed): the PR's head is no parent of it. A cluster following
    the PR's branch reports on that head (Flux posts on the revision it applied, internal/notifier/github.go).
    Until 2026-11-29 the hint looked only at the merge's second parent, so a squash merge got "missing: dev-1" and
    nothing else; now the fleetflow/dev branch, while it still proposes the pin, is the head looked at."""
    fleet = github_fleet
    with fleet.context() as ctx:
        promote_many(ctx, None, merge_main(fleet))
    pr = fleet.open_pr("dev")
    fleet.stub.repo(fleet.gitops_id).merge_pull(pr.number, method="squash")  # type: ignore[attr-defined]
    fleet.clock.advance(timedelta(minutes=0.5))
    squash = fleet.gitops_tip("dev")
    FluxReporter(fleet, "flux/dev-1").event(pr.head_sha, "info", "ReconciliationSucceeded")
    FluxReporter(fleet, "flux/dev-2").event(squash, "info", "ReconciliationSucceeded")
    fleet.clock.advance(timedelta(minutes=40))
    outcome = gate(fleet)
    assert outcome.state == "failure" and outcome.decision.missing == ["dev-1"]
    assert outcome.decision.elsewhere == [f"dev-1 reported success on the PR's head {pr.head_sha[:12]}, which dev took "
                                          f"as a squash or rebase (a new commit), so the gate does not read it: {FIX}"]


def test_a_timeout_says_when_a_missing_cluster_reported_only_the_previous_rollout(fleet: Fleet) -> None:
    """dev-1 reported the previous rollout's commit and nothing since (its source stopped fetching: Flux's
    source-controller errors are events of the GitRepository, which an Alert on the Kustomization does not
    watch): the timeout says so."""
    first = merged_dev(fleet)
    fleet.clusters_report("dev")
    fleet.clock.advance(timedelta(minutes=2))
    assert gate(fleet).state == "success"
    fleet.push_main({"README.md": "another main commit\n"})
    second = merged_dev(fleet)
    assert second != first
    FluxReporter(fleet, "flux/dev-2").event(second, "info", "ReconciliationSucceeded")
    fleet.clock.advance(timedelta(minutes=40))
    outcome = gate(fleet)
    assert outcome.state == "failure" and outcome.decision.missing == ["dev-1"]
    assert outcome.decision.elsewhere == [f"dev-1 reported success on {first[:12]}, dev's commit before this "
                                          "rollout, and not since: it has not applied this rollout (does its source "
                                          "fetch the branch?)"]


def test_the_job_summary_names_what_the_gate_did_not_count(fleet: Fleet) -> None:
    """The job summary people read in the run (``check-rollout --github-actions``) showed only the description,
    which the status's 140 characters cut, and the clusters table: the contexts the gate could not count and the
    missing clusters seen on other commits were in the JSON and the text output only, until 2026-11-29."""
    merge = merged_dev(fleet)
    head = subprocess.run(["git", "--git-dir", fleet.gitops_url, "rev-parse", f"{merge}^2"], capture_output=True,
                          text=True, check=True).stdout.strip()
    FluxReporter(fleet, "flux/dev-1").event(head, "info", "ReconciliationSucceeded")
    ArgoReporter(fleet, "flux/dev-2.contoso.internal").send(merge, "success", "synced")
    fleet.clock.advance(timedelta(minutes=40))
    outcome = gate(fleet)
    assert outcome.state == "failure" and outcome.decision.missing == ["dev-1", "dev-2"]
    summary = check_rollout_report(outcome).summary
    assert ("- not counted: `flux/dev-2.contoso.internal` reported success, not `dev-2`'s `flux/dev-2` (the name "
            "with and without its domain)\n") in summary, summary
    assert f"- elsewhere: dev-1 reported success on the PR's head {head[:12]}, not on dev: {FIX}\n" in summary, \
        summary
    assert summary.index("| missing | 2 |") < summary.index("- not counted:") < summary.index("- elsewhere:")


def test_the_job_summary_names_ten_strays_and_counts_the_rest(fleet: Fleet) -> None:
    """Briefly: at most ten 'not counted' lines; the rest is a count and where to find them."""
    from fleetflow.promotion.check_rollout import RolloutOutcome
    from fleetflow.promotion.gate import GateDecision, Stray

    strays = [Stray(f"c-{i}", f"flux/c-{i}", f"Flux/c-{i}.example", "success", "the name with and without its domain")
              for i in range(12)]
    decision = GateDecision("pending", "rolling out: 0/12 clusters", 12, missing=[f"c-{i}" for i in range(12)],
                            strays=strays)
    outcome = RolloutOutcome(environment="dev", main_commit="a" * 40, gitops_commit="b" * 40, state="pending",
                             description=decision.description, decision=decision)
    summary = check_rollout_report(outcome).summary
    assert summary.count("- not counted: `Flux/c-") == 10
    assert "- not counted: 2 more contexts (`clusters.strays` of `--format json`)\n" in summary, summary
