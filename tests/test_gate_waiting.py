"""What check-rollout says while no commit of the GitOps branch carries the pinned main commit: it tells the cases
apart from git alone (no API request), where it used to say "waiting for the PR that carries main@... to be
merged" in each, also with no PR branch and no GitOps branch at all."""

from __future__ import annotations

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.context import head_branch
from fleetflow.promotion.promote import promote_many
from tests.fleet import Fleet, git


def promoted(fleet: Fleet) -> str:
    main = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, None, main)
    return main


def waiting(fleet: Fleet) -> str:
    with fleet.context() as ctx:
        outcome = check_rollout(ctx, "dev")
    assert outcome.state == "waiting-for-merge", outcome.description
    return outcome.description


def drop_branch(fleet: Fleet, branch: str) -> None:
    git(fleet.root, "--git-dir", fleet.gitops_url, "update-ref", "-d", f"refs/heads/{branch}")


def test_an_open_pr_branch_that_carries_the_pin_is_named(fleet: Fleet) -> None:
    main = promoted(fleet)
    assert fleet.open_pr("dev") is not None
    assert waiting(fleet) == (
        f"waiting for the PR from fleetflow/dev that carries main@{main[:12]} to be merged into dev (if it was closed "
        "without a merge, `fleetflow schedule --environment dev` renders it and proposes it again in a new PR)")


def test_no_pr_branch_says_the_schedule_has_not_proposed_it(fleet: Fleet) -> None:
    """The PR closed and its branch deleted (GitHub's "Delete branch" button, or automatic deletion of head
    branches), or a schedule that failed before its push: nothing proposes the pin."""
    main = promoted(fleet)
    drop_branch(fleet, head_branch("dev"))
    text = waiting(fleet)
    assert text.startswith(f"waiting for main@{main[:12]} to be proposed to dev: no PR branch carries it yet "
                           "(no branch fleetflow/dev): the schedule of dev has not pushed it, or it failed"), text
    assert "`fleetflow schedule --environment dev`" in text


def test_a_missing_gitops_branch_is_said(fleet: Fleet) -> None:
    main = promoted(fleet)
    drop_branch(fleet, "dev")
    text = waiting(fleet)
    assert text.startswith(f"waiting for main@{main[:12]}: "), text
    assert "has no branch dev, which its PR is merged into: create it, or correct the GitOpsRepo's spec.branch" in text
