"""Two schedules of one environment at once: the GitHub concurrency group of the caller workflow keeps its own runs
apart, but a ``fleetflow schedule`` run by hand (a laptop, a re-run of another workflow) is in no such group.

Every write of a schedule is a compare-and-swap (the head branch is pushed with ``--force-with-lease`` on the sha
it read, :meth:`fleetflow.forge.git.GitRepos.push`) and a lost race renders again
(:func:`fleetflow.forge.git.retry_races`). What the lease cannot see is an input that moved before the head branch
was read: a schedule reads the environment branch, then loads the control plane (seconds on a big fleet), then
reads the GitOps branches. A schedule that the push of a newer environment commit started, and that finished in
between, left a head the slower run then replaced, with the lease's blessing, by a render of the older commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetflow.forge.git import GitRepos
from fleetflow.promotion.context import Pinned
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import schedule_environment
from tests.fleet import git, local_fleet
from tests.test_promotion import first_commit


def test_a_schedule_whose_environment_branch_moved_while_it_loaded_renders_the_new_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A laptop's ``schedule`` reads dev's branch at E1 and loads the plane; meanwhile a person pushes E2 and the
    workflow that push starts (``on: push`` of the environment branch) schedules E2 and updates the PR. Until
    2026-11-29 the laptop then read the GitOps branches (the head at E2's commit), pushed its render of E1 over it
    (the lease held: nothing moved since it read the head) and described E1 in the PR: E2's change was in no PR, and
    no event was left to bring it back. Now a schedule reads the environment branch again after the GitOps branches
    (one ``git ls-remote``) and, when it moved, renders again: both runs end proposing E2."""
    fleet = local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, first_commit(fleet))
    configs = (fleet.root / "env-dev" / "configs.yaml").read_text()
    e1 = fleet.push_env("dev", {"configs.yaml": configs.replace("LOG_LEVEL: info", "LOG_LEVEL: warn")}, "warn")
    fetch_gitops = Pinned.fetch_gitops
    workflow: list[Any] = []

    def meanwhile(self: Pinned, repos: GitRepos, **kwargs: Any) -> dict[str, str | None]:
        if not workflow:  # the laptop has read E1 and loaded the plane: the push and its workflow's run
            workflow.append(fleet.push_env("dev", {"configs.yaml": configs.replace("LOG_LEVEL: info",
                                                                                    "LOG_LEVEL: error")}, "error"))
            with fleet.context() as other:
                workflow.append(schedule_environment(other, "dev"))
        return fetch_gitops(self, repos, **kwargs)

    monkeypatch.setattr(Pinned, "fetch_gitops", meanwhile)
    with fleet.context() as laptop:
        outcome = schedule_environment(laptop, "dev")
    e2, theirs = workflow
    assert theirs.env_commit == e2 != e1 and theirs.operation == "updated"
    assert outcome.env_commit == e2
    pr = fleet.open_pr("dev")
    assert e2 in pr.body and e1 not in pr.body
    head = git(fleet.root, "--git-dir", fleet.gitops_url, "show", "refs/heads/fleetflow/dev:cloud/app-dev/"
                                                                   "platform-config.yaml")
    assert "LOG_LEVEL: error" in head
