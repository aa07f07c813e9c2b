"""``fleetflow validate --into BRANCH``: a pull request to the control-plane repo, checked against what it will be
rendered with, in a real clone (every branch fetched, as ``actions/checkout`` leaves it with ``fetch-depth: 0``).

- Into ``main``: the change is paired with every environment's branch as it is now, so a change that is fine on
  its own but breaks one environment's configuration is caught before it merges.
- Into an environment branch: the change is paired with the ``main`` commit the branch pins (``base-repo.yaml``),
  which is what ``schedule`` renders (docs/design.md, "Scheduling"), not with ``main``'s tip.

The checkout is what GitHub's ``pull_request`` event gives a job: ``actions/checkout`` checks out the merge commit
(``refs/pull/N/merge``, GITHUB_SHA for pull_request in
https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request) and
with ``fetch-depth: 0`` fetches all history for all branches and tags
(https://github.com/actions/checkout#usage, "fetch-depth: 0").
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from tests.fleet import build_bare_repos, git
from tests.helpers import run_cli

RENAMED_LABEL = ("workloads/app.yaml", "labels: {purpose: app}", "labels: {purpose: web}")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of the five-environment control plane (tests/fleet.py): main + dev, qa, prod-eu, prod-us, dr."""
    cp, _gitops = build_bare_repos(tmp_path, "gitops", "control-plane")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(cp), str(checkout))
    git(checkout, "config", "user.email", "dev@example.com")
    git(checkout, "config", "user.name", "dev")
    return checkout


def edit(checkout: Path, path: str, old: str, new: str) -> None:
    file = checkout / path
    text = file.read_text()
    assert old in text, f"{old!r} not in {path}"
    file.write_text(text.replace(old, new))


def validate(checkout: Path, *args: str) -> tuple[int, dict[str, object]]:
    result = run_cli("validate", "--repo", checkout, *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def test_a_change_into_main_is_checked_against_every_environment_branch(clone: Path) -> None:
    code, data = validate(clone, "--into", "main", "--strict")
    assert code == 0, data
    result = data["result"]
    assert isinstance(result, dict)
    checked = {e["name"]: e for e in result["environments"]}
    assert sorted(checked) == ["dev", "dr", "prod-eu", "prod-us", "qa"]
    sha = git(clone, "rev-parse", "origin/qa")[:12]
    assert checked["qa"]["envTree"] == f"qa@{sha}" and checked["qa"]["assignments"] == 1


def test_the_other_sides_are_read_from_git_with_no_folder_written(clone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each environment branch a change into main is paired with is read from the clone's git objects: no scratch
    folder is made (until 2026-11-28 each was exported into a fleetflow-validate- folder, whose cost followed the
    number of files: a control plane of one document a file at 100k is 3,269 files a branch)."""
    made: list[str | None] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(suffix: str | None = None, prefix: str | None = None, dir: str | None = None) -> str:
        made.append(prefix)
        return mkdtemp(suffix, prefix, dir)

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    code, data = validate(clone, "--into", "main", "--strict")
    assert code == 0, data
    assert [p for p in made if p and p.startswith("fleetflow")] == []


def test_warnings_come_in_the_order_of_their_lines(clone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warnings of one file are given by line as a number: the Environment at line 1 before the one at line 11
    (until 2026-11-28 they were sorted by their place as text, which put ``envs.yaml:11:1`` before ``envs.yaml:1:1``:
    qa's warning before dev's)."""
    edit(clone, *RENAMED_LABEL)  # no environment schedules an assignment now: a warning at each Environment
    monkeypatch.chdir(clone)
    code, data = validate(Path("."), "--into", "main")
    assert code == 1
    warnings = data["warnings"]
    assert isinstance(warnings, list)
    lines = [w["location"]["line"] for w in warnings if w["location"]["file"] == ".environments/envs.yaml"]
    assert len(lines) == 5 and lines == sorted(lines), lines


def _parse_cache_files(cache: Path) -> set[Path]:
    """The parse cache's files (entries and snapshots) under the test's private cache (conftest: XDG_CACHE_HOME)."""
    return {p for p in (cache / "fleetflow" / "parsed").rglob("*.json")}


def test_a_new_commit_on_a_branch_adds_only_its_changed_files_to_the_parse_cache(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pull-request check runs on every change, each time against the branches' newest commits. Its messages
    name the commit read (``qa@<sha>/policy.yaml``), but the parse cache is keyed by the branch: a new commit on qa
    that changes one file adds one entry, and a file it did not change is read from the cache and named at the new
    commit. Until 2026-11-28 the entries were keyed by the label with the commit, so each commit checked added an
    entry for every file of the branch (and past 64 files a snapshot of the whole branch, ~1 MB at 100k
    assignments one document a file): a runner's restored cache grew with every commit it had checked."""
    cache = Path(os.environ["XDG_CACHE_HOME"])
    edit(clone, *RENAMED_LABEL)  # every branch's policy now selects nothing: a warning at each policy.yaml
    monkeypatch.chdir(clone)
    code, _ = validate(Path("."), "--into", "main")
    assert code == 1
    before = _parse_cache_files(cache)
    assert before  # the first check filled it

    git(clone, "stash", "-q")
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    edit(clone, "configs.yaml", "LOG_LEVEL: info", "LOG_LEVEL: debug")
    git(clone, "commit", "-q", "-am", "qa: debug logs")
    git(clone, "update-ref", "refs/remotes/origin/qa", "HEAD")  # as a fetch of the new qa commit leaves it
    git(clone, "checkout", "-q", "main")
    git(clone, "stash", "pop", "-q")
    new_qa = git(clone, "rev-parse", "origin/qa")[:12]

    code, data = validate(Path("."), "--into", "main")
    assert code == 1
    added = _parse_cache_files(cache) - before
    assert len(added) == 1, sorted(p.name for p in added)  # configs.yaml at the new commit; nothing else
    warnings = data["warnings"]
    assert isinstance(warnings, list)
    files = {w["location"]["file"] for w in warnings if "selects no deployment targets" in w["message"]}
    assert f"qa@{new_qa}/policy.yaml" in files, files  # a cached file, named at the commit read


def test_a_main_change_that_breaks_the_environments_fails_with_each_branch_named(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workload's label is renamed on main: fine on main alone, but every environment branch's
    SchedulingPolicy now selects nothing, so every gate would expect zero clusters (errors, at the Environment on
    main, by its path in the repository), and each branch's policy is named at the commit read (warnings)."""
    edit(clone, *RENAMED_LABEL)
    monkeypatch.chdir(clone)
    code, data = validate(Path("."), "--into", "main")
    assert code == 1 and data["exitCode"] == 1
    problems, warnings = data["problems"], data["warnings"]
    assert isinstance(problems, list) and isinstance(warnings, list)
    assert sorted(p["message"].split(":")[0] for p in problems) == [
        f"Environment {env}" for env in ("dev", "dr", "prod-eu", "prod-us", "qa")
    ]
    assert {p["location"]["file"] for p in problems} == {".environments/envs.yaml"}
    files = sorted({w["location"]["file"] for w in warnings if "selects no deployment targets" in w["message"]})
    expected = sorted(f"{env}@{git(clone, 'rev-parse', f'origin/{env}')[:12]}/policy.yaml"
                      for env in ("dev", "qa", "prod-eu", "prod-us", "dr"))
    assert files == expected, warnings


def test_a_change_into_an_environment_branch_renders_with_the_pinned_main_not_its_tip(clone: Path) -> None:
    """qa pins the first main commit; main's tip then renames the label. A change to qa is checked against the
    pin: clean. Checked against the tip (what it renders before the first promotion) it fails."""
    first = git(clone, "rev-parse", "origin/main")
    edit(clone, *RENAMED_LABEL)
    git(clone, "commit", "-qam", "rename the label")
    git(clone, "push", "-q", "origin", "HEAD:main")
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    edit(clone, "base-repo.yaml", 'commit: ""', f"commit: {first}")  # as promote pins it: on qa itself
    git(clone, "commit", "-qam", "fleetflow: pin qa to main@first")
    git(clone, "push", "-q", "origin", "HEAD:qa")
    git(clone, "fetch", "-q", "origin")
    edit(clone, "configs.yaml", "LOG_LEVEL: info", "LOG_LEVEL: debug")
    code, data = validate(clone, "--into", "qa", "--strict")
    assert code == 0, data
    result = data["result"]
    assert isinstance(result, dict)
    assert result["environments"] == [{
        "name": "qa", "assignments": 1, "mainTree": f"main@{first[:12]}", "envTree": str(clone),
    }]
    edit(clone, "base-repo.yaml", f"commit: {first}", 'commit: ""')  # no pin yet: main's tip is what renders
    code, data = validate(clone, "--into", "qa")
    assert code == 1 and any("selects no deployment targets" in w["message"]
                             for w in data["warnings"]), data  # type: ignore[union-attr]


def test_a_change_that_moves_the_pin_by_hand_is_a_warning_that_strict_fails(clone: Path) -> None:
    """A pull request into qa that edits ``base-repo.yaml`` to a newer main commit (Kalypso's promotion PRs do
    exactly that) would, merged, skip the gate: ``promote`` pins a commit only once every upstream environment
    rolled it out. Until 2026-11-29 the check passed it, ``--strict`` too. Now a warning at the pin file, with the
    promote to run instead; a change that leaves the pin alone says nothing of it."""
    tip = git(clone, "rev-parse", "origin/main")
    git(clone, "checkout", "-q", "-b", "qa-by-hand", "origin/qa")
    edit(clone, "base-repo.yaml", 'commit: ""', f"commit: {tip}")
    code, data = validate(clone, "--into", "qa", "--strict")
    assert code == 1, data
    [moved] = [w for w in data["warnings"] if "pin" in w["message"]]  # type: ignore[union-attr]
    assert moved["message"] == (f"this change moves qa's pin from no commit to main@{tip[:12]} by hand: merged, it "
                                "skips the gate (fleetflow promote pins a commit only once every environment qa "
                                "comes after rolled it out), and the next schedule proposes it")
    assert moved["location"] == {"file": str(clone / "base-repo.yaml"), "line": None, "column": None}, moved
    assert f"fleetflow promote --environment qa --commit {tip[:12]}" in moved["hint"]
    code, data = validate(clone, "--into", "qa")
    assert code == 0, data  # a warning: a person may mean it (the pull request is the review)
    git(clone, "checkout", "-q", "base-repo.yaml")
    edit(clone, "configs.yaml", "LOG_LEVEL: info", "LOG_LEVEL: debug")
    code, data = validate(clone, "--into", "qa", "--strict")
    assert code == 0 and not [w for w in data["warnings"] if "pin" in w["message"]], data  # type: ignore[union-attr]


def test_an_environment_change_that_breaks_the_gate_is_an_error_at_the_file_in_the_change(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Cluster removed from qa: the gate would expect zero clusters. Run from the checkout (as in CI), the
    message names the file by its path in the repository, so an annotation lands on the pull request's diff."""
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    (clone / "clusters.yaml").unlink()
    monkeypatch.chdir(clone)
    result = run_cli("validate", "--into", "qa")
    assert result.exit_code == 1, result.output
    assert "Environment qa: the gate expects zero clusters" in result.stderr
    assert "main@" in result.stderr  # the Environment's rollout is on main at the pin: named with its commit


def test_a_branch_that_is_neither_main_nor_an_environment_is_a_usage_error(clone: Path) -> None:
    code, data = validate(clone, "--into", "feature-x")
    assert code == 2
    problems = data["problems"]
    assert isinstance(problems, list)
    assert "not main and not the branch of any Environment" in problems[0]["message"]
    assert "dev (dev)" in problems[0]["message"] and "qa (qa)" in problems[0]["message"]


def test_an_environment_without_its_branch_is_a_warning_that_strict_fails(clone: Path) -> None:
    """A new Environment on main before its branch exists: nothing to pair it with; say so, check the others."""
    edit(clone, ".environments/envs.yaml", "  name: dr\n", "  name: dr\n")  # sanity: the file is there
    with (clone / ".environments/envs.yaml").open("a") as envs:
        envs.write("---\napiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: edge\n"
                   "spec:\n  after: [dr]\n")
    code, data = validate(clone, "--into", "main")
    assert code == 0
    result = data["result"]
    assert isinstance(result, dict)
    assert "edge" not in {e["name"] for e in result["environments"]}
    assert any("no branch 'edge'" in w["message"] for w in data["warnings"])  # type: ignore[union-attr]
    code, _ = validate(clone, "--into", "main", "--strict")
    assert code == 1


def test_a_pin_the_checkout_does_not_have_is_a_git_failure(clone: Path) -> None:
    git(clone, "checkout", "-q", "-b", "qa-change", "origin/qa")
    edit(clone, "base-repo.yaml", 'commit: ""', "commit: " + "ab" * 20)
    code, data = validate(clone, "--into", "qa")
    assert code == 3
    problems = data["problems"]
    assert isinstance(problems, list) and "fetch-depth: 0" in problems[0]["message"]


def test_usage_errors_name_the_two_ways(tmp_path: Path) -> None:
    result = run_cli("validate")
    assert result.exit_code == 2 and "--main DIR --env DIR, or --into BRANCH" in result.stderr
    result = run_cli("validate", "--into", "main", "--main", tmp_path)
    assert result.exit_code == 2 and "leave out --main and --env" in result.stderr
    result = run_cli("validate", "--into", "main", "--repo", tmp_path)
    assert result.exit_code == 2 and "not a git checkout" in result.stderr
