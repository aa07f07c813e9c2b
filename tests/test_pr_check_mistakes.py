"""Ordinary mistakes around the pull-request check (``fleetflow validate --into BRANCH``, the control-plane
workflow's ``check`` job), each tried in a real clone of the five-environment control plane (tests/fleet.py).

The checkout is what GitHub's ``pull_request`` event gives a job: ``actions/checkout`` checks out the merge commit
(``refs/pull/N/merge``, GITHUB_SHA for pull_request in
https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request);
"Only a single commit is fetched by default ... Set fetch-depth: 0 to fetch all history for all branches and tags"
(https://github.com/actions/checkout#checkout-v4).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fleet import build_bare_repos, git
from tests.helpers import run_cli
from tests.test_validate_change import clone, validate  # noqa: F401  (the fixture)


def _checkout_like_actions(tmp_path: Path, bare: Path, depth: int) -> Path:
    """A checkout as actions/checkout leaves it for a pull_request event without fetch-depth: 0: only the
    commit checked out, at that depth, under ``refs/remotes/pull/1/merge`` ("Only a single commit is fetched by
    default, for the ref/SHA that triggered the workflow", https://github.com/actions/checkout#checkout-v4), no
    branch of the repository."""
    work = tmp_path / "ci"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "remote", "add", "origin", bare.as_uri())
    sha = git(work, "ls-remote", "origin", "refs/heads/main").split()[0]
    git(work, "fetch", "-q", "--no-tags", f"--depth={depth}", "origin", f"+{sha}:refs/remotes/pull/1/merge")
    git(work, "checkout", "-q", "--force", "refs/remotes/pull/1/merge")
    return work


def test_a_shallow_checkout_is_a_git_failure_that_says_fetch_depth_0_not_create_the_branches(tmp_path: Path) -> None:
    """actions/checkout's default (fetch-depth: 1) leaves none of the environment branches. Until 2026-11-29 each
    was a warning to "create the dev branch first" (five of them, the wrong fix), and without --strict the check
    passed, exit 0, with nothing checked. Now: one git failure (exit 3) naming the shallow clone and fetch-depth: 0,
    with or without --strict."""
    cp, _gitops = build_bare_repos(tmp_path, "gitops", "control-plane")
    work = _checkout_like_actions(tmp_path, cp, 1)
    for strict in ((), ("--strict",)):
        result = run_cli("validate", "--into", "main", "--repo", work, *strict, "--format", "json")
        data = json.loads(result.stdout)
        assert result.exit_code == 3, data
        problems = data["problems"]
        assert len(problems) == 1, problems
        message = problems[0]["message"]
        assert "is a shallow clone" in message and "fetch-depth: 0" in message
        assert "dev, dr, prod-eu, prod-us, qa" in message
        assert not data["warnings"], data["warnings"]  # not five "create the branch first"


def test_the_fix_the_shallow_message_gives_works(tmp_path: Path) -> None:
    """The command the message gives (git fetch --unshallow with every branch) makes the same checkout pass."""
    cp, _gitops = build_bare_repos(tmp_path, "gitops", "control-plane")
    work = _checkout_like_actions(tmp_path, cp, 1)
    git(work, "fetch", "-q", "--unshallow", "origin", "+refs/heads/*:refs/remotes/origin/*")
    code, data = validate(work, "--into", "main", "--strict")
    assert code == 0, data


def test_a_full_clone_missing_one_branch_is_still_a_warning(clone: Path) -> None:  # noqa: F811
    """Not shallow: a new Environment before its branch exists stays a warning (only --strict fails)."""
    with (clone / ".environments/envs.yaml").open("a") as envs:
        envs.write("---\napiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: edge\n"
                   "spec:\n  after: [dr]\n")
    code, data = validate(clone, "--into", "main")
    assert code == 0, data


def test_a_change_into_an_environment_branch_that_deletes_its_gitops_repo_fails(clone: Path) -> None:  # noqa: F811
    """A pull request into qa that deletes gitops-repo.yaml: render does without a GitOpsRepo (it writes to
    --output), so until 2026-11-29 the check said "ok: qa" and passed, and after the merge schedule and promote
    stopped for qa ("no GitOpsRepo on branch qa", fleetflow/promotion/context.py: gitops_repo_of)."""
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    git(clone, "rm", "-q", "gitops-repo.yaml")
    code, data = validate(clone, "--into", "qa", "--strict")
    assert code == 1, data
    problems = data["problems"]
    assert [p["message"].split(":")[:2] for p in problems] == [["environment qa", " no GitOpsRepo on branch qa (" +
                                                                 str(clone) + ")"]], problems
    assert "gitops-repo.yaml" in problems[0]["hint"]


def test_a_change_into_main_paired_with_a_branch_without_gitops_repo_fails(clone: Path) -> None:  # noqa: F811
    """The same GitOpsRepo missing on the qa branch itself: a change into main is checked against it, and names
    the branch at the commit read."""
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    git(clone, "rm", "-q", "gitops-repo.yaml")
    git(clone, "commit", "-q", "-m", "drop the GitOpsRepo")
    git(clone, "push", "-q", "origin", "HEAD:qa")
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "main")
    code, data = validate(clone, "--into", "main")
    assert code == 1, data
    sha = git(clone, "rev-parse", "origin/qa")[:12]
    assert [p["message"] for p in data["problems"]] == [
        f"environment qa: no GitOpsRepo on branch qa (qa@{sha}): schedule and promote stop for qa without one "
        "(it says where its manifests go)"]


def test_renaming_an_environment_on_main_hints_at_keeping_its_branch(clone: Path) -> None:  # noqa: F811
    """qa renamed to quality in a change into main: quality has no branch. The hint said only "create the quality
    branch first", which starts the renamed environment from nothing while qa's clusters and configuration stay on
    the qa branch; it now names the Environment the change removes whose branch is there, and spec.branch."""
    edit_all = [(".environments/envs.yaml", "name: qa\n", "name: quality\n"),
                (".environments/envs.yaml", "after: [qa]", "after: [quality]"),
                ("workloads/app.yaml", "environment: qa\n", "environment: quality\n")]
    for path, old, new in edit_all:
        file = clone / path
        file.write_text(file.read_text().replace(old, new))
    code, data = validate(clone, "--into", "main")
    assert code == 0, data
    [warning] = [w for w in data["warnings"] if "no branch 'quality'" in w["message"]]
    assert "if it is qa renamed" in warning["hint"] and "spec.branch: qa" in warning["hint"], warning
    # the fix the hint gives: the renamed Environment keeps the qa branch, and the change is clean
    envs = clone / ".environments/envs.yaml"
    envs.write_text(envs.read_text().replace("name: quality\nspec:\n", "name: quality\nspec:\n  branch: qa\n"))
    code, data = validate(clone, "--into", "main", "--strict")
    assert code == 0, data
