"""Promotion scenarios on both forges: real git repos, the real local forge, and the real GitHubForge talking
to the stand-in server through PyGithub."""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest

from fleetflow.errors import GateError, GitError, InputError, UsageError
from fleetflow.forge.git import GitRepos
from fleetflow.forge.github import GitHubForge
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.context import Context
from fleetflow.promotion.history import read_history
from fleetflow.promotion.pin import read_pin, write_pin
from fleetflow.promotion.promote import promote, promote_many
from fleetflow.promotion.reconcile import reconcile
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.promotion.shards import ShardSpec, render_shard
from fleetflow.promotion.status import as_markdown, fleet_status
from tests.fleet import ENVIRONMENTS, Fleet, _environment, environments_file, git, github_fleet, local_fleet, push_file
from tests.helpers import run_cli

FORGES = ["local", "github"]


def make_local_fleet(tmp_path: Path) -> Fleet:
    return local_fleet(tmp_path)


def make_github_fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Fleet:
    return github_fleet(tmp_path, request.getfixturevalue("github_stub"))


def first_commit(fleet: Fleet) -> str:
    return fleet.branch_sha(fleet.cp_url, "main")


def roll_out(fleet: Fleet, env: str, states: dict[int, str] | None = None, minutes: float = 2) -> str:
    """Approve the env's PR, let its clusters report, wait the soak time, run the gate."""
    fleet.approve(env)
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report(env, states)
    fleet.clock.advance(timedelta(minutes=minutes))
    with fleet.context() as ctx:
        return check_rollout(ctx, env).state


def test_full_promotion_fans_out_and_in(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, sha)
    assert outcome.environment == "dev" and outcome.schedule and outcome.schedule.operation == "created"
    assert fleet.pin("dev") == sha
    assert fleet.cp_status(sha, "dev") == "pending"
    assert roll_out(fleet, "dev") == "success"
    assert fleet.cp_status(sha, "dev") == "success"
    assert fleet.pin("qa") == sha and fleet.open_pr("qa") is not None
    assert roll_out(fleet, "qa") == "success"
    # fan-out: both prods at once
    assert fleet.pin("prod-eu") == sha and fleet.pin("prod-us") == sha
    assert roll_out(fleet, "prod-eu") == "success"
    assert fleet.pin("dr") == ""  # fan-in: dr waits for prod-us too
    assert roll_out(fleet, "prod-us") == "success"
    assert fleet.pin("dr") == sha
    assert roll_out(fleet, "dr") == "success"
    assert all(fleet.cp_status(sha, env) == "success" for env in ENVIRONMENTS)
    state = fleet.gitops_state("dr")
    assert state.main_commit == sha and [c.name for c in state.clusters] == ["dr-1", "dr-2"]
    with fleet.context() as ctx:
        entries = fleet_status(ctx)
    assert [e.name for e in entries] == ["dev", "qa", "prod-eu", "prod-us", "dr"]
    assert all(e.gate_state == "success" and e.pinned == sha for e in entries)
    markdown = as_markdown(entries)
    assert "```mermaid" in markdown and "env_qa --> env_prod_eu" in markdown


def test_failing_cluster_in_qa_stops_prod(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"
    assert roll_out(fleet, "qa", {2: "failure"}) == "failure"
    assert fleet.cp_status(sha, "qa") == "failure"
    assert fleet.pin("prod-eu") == "" and fleet.pin("prod-us") == ""
    with fleet.context() as ctx, pytest.raises(GateError, match="not rolled out successfully in qa"):
        promote(ctx, "prod-eu", sha)


def test_missing_cluster_pending_until_timeout(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev", {2: "missing"}) == "pending"
    assert fleet.cp_status(sha, "dev") == "pending"
    fleet.clock.advance(timedelta(minutes=31))
    with fleet.context() as ctx:
        outcome = check_rollout(ctx, "dev")
    assert outcome.state == "failure" and "timed out" in outcome.description and "dev-2" in outcome.description
    assert fleet.pin("qa") == ""


def test_newer_main_commit_supersedes_open_pr(fleet: Fleet) -> None:
    first = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, first)
    pr = fleet.open_pr("dev")
    second = fleet.push_main({"templates/extra.yaml": "# a comment-only file\n"}, "second")
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, second)
    assert outcome.schedule and outcome.schedule.operation == "updated"
    updated = fleet.open_pr("dev")
    assert updated.number == pr.number and second[:12] in updated.title
    assert fleet.gitops_state("dev", "refs/heads/fleetflow/dev").main_commit == second


def test_a_promotion_fetches_main_once(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A promotion reads main's tip once: to check the commit is on main, and to tell an environment removed or
    added since that commit. Until 2026-11-29 it fetched main two or three times (one more for each environment a
    push to main promotes), each a request to the control-plane repo (on GitHub, a git fetch over the network)."""
    sha = first_commit(fleet)
    fetched: list[str] = []

    def counting(ctx: Context) -> None:
        fetch = ctx.git.fetch_branch

        def counted(url: str, branch: str) -> str | None:
            fetched.append(branch)
            return fetch(url, branch)

        monkeypatch.setattr(ctx.git, "fetch_branch", counted)

    with fleet.context() as ctx:
        counting(ctx)
        [outcome] = promote_many(ctx, None, sha)
    assert outcome.pinned and fetched.count("main") == 1, fetched
    assert roll_out(fleet, "dev") == "success"  # check-rollout promoted qa
    fetched.clear()
    with fleet.context() as ctx:
        counting(ctx)
        again = promote(ctx, "qa", sha)  # by hand: nothing new to pin
    assert not again.pinned and fetched.count("main") == 1, fetched


def test_queue_mode_keeps_the_open_pr(fleet: Fleet) -> None:
    queue = {"dev": "  concurrency: queue\n"}
    files = {".environments/envs.yaml": "---\n".join(_environment(n, a, queue.get(n, "")) for n, a in
                                                     ENVIRONMENTS.items())}
    first = fleet.push_main(files, "dev queues")
    with fleet.context() as ctx:
        promote_many(ctx, None, first)
    pr = fleet.open_pr("dev")
    second = fleet.push_main({"templates/extra.yaml": "# comment\n"}, "second")
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, second)
    assert outcome.schedule and outcome.schedule.operation == "queued"
    assert fleet.open_pr("dev").title == pr.title  # still the first commit's PR
    fleet.approve("dev")
    with fleet.context() as ctx:
        again = schedule_environment(ctx, "dev")
    assert again.operation == "created" and second[:12] in again.pull_request.title  # type: ignore[union-attr]


def test_env_branch_commit_reschedules_only_that_environment(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"  # qa now has an open PR
    qa_pr = fleet.open_pr("qa")
    fleet.push_env("dev", {"configs.yaml": fleet_config("debug")}, "dev: debug logging")
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "created" and outcome.main_commit == sha
    assert outcome.changes.config_keys == ["env-wide: LOG_LEVEL (changed)"]
    assert fleet.pin("dev") == sha
    assert fleet.open_pr("qa").number == qa_pr.number and fleet.pin("prod-eu") == ""
    # an env commit that changes no rendered file gives no PR
    fleet.approve("dev")
    fleet.push_env("dev", {"notes.md": "just notes\n"}, "notes")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "none"


def fleet_config(level: str) -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env-wide\n  labels: {{platform-config: \"true\"}}\n"
            f"data:\n  LOG_LEVEL: {level}\n  ENVIRONMENT: dev\n")


def test_promote_refuses_commit_not_rolled_out_upstream(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx, pytest.raises(GateError, match="dev"):
        promote(ctx, "qa", sha)  # a forged dispatch asking for qa: the record says no
    assert fleet.pin("qa") == ""
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev", {1: "failure"}) == "failure"
    with fleet.context() as ctx, pytest.raises(GateError, match="failure"):
        promote(ctx, "qa", sha)


def _first_then_second_in_dev(fleet: Fleet) -> tuple[str, str]:
    """main's first commit promoted to dev and rolled out there, then a second commit of main promoted to dev."""
    first = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, first)
    assert roll_out(fleet, "dev") == "success"
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        promote_many(ctx, None, second)
    return first, second


def test_rollback_holds_until_released(fleet: Fleet) -> None:
    first, _ = _first_then_second_in_dev(fleet)
    assert roll_out(fleet, "dev") == "success"
    with fleet.context() as ctx:
        back = promote(ctx, "dev", first)
    assert back.held and "rollback" in back.held and fleet.pin("dev") == first
    fleet.approve("dev")
    third = fleet.push_main({"templates/extra.yaml": "# third\n"}, "third")
    with fleet.context() as ctx:
        [skipped] = promote_many(ctx, None, third)  # a push to main does not move a held environment
    assert skipped.schedule is None and fleet.pin("dev") == first and skipped.held and "rollback" in skipped.held
    with fleet.context() as ctx, pytest.raises(GateError, match="held"):
        promote(ctx, "dev", third)
    with fleet.context() as ctx:
        released = promote(ctx, "dev", third, release=True)
    assert released.held is None and fleet.pin("dev") == third


def test_every_command_twice_makes_no_second_change(fleet: Fleet) -> None:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    cp_dev, head = fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    with fleet.context() as ctx:
        [again] = promote_many(ctx, None, sha)
        assert again.pinned is False and again.schedule and again.schedule.operation == "unchanged"
        assert schedule_environment(ctx, "dev").operation == "unchanged"
    assert fleet.branch_sha(fleet.cp_url, "dev") == cp_dev
    assert fleet.branch_sha(fleet.gitops_url, "fleetflow/dev") == head
    assert roll_out(fleet, "dev") == "success"
    qa_head = fleet.branch_sha(fleet.gitops_url, "fleetflow/qa")
    with fleet.context() as ctx:
        second = check_rollout(ctx, "dev")
    assert second.state == "success"
    assert fleet.branch_sha(fleet.gitops_url, "fleetflow/qa") == qa_head
    assert fleet.cp_status(sha, "qa") == "pending"


def test_concurrent_push_to_env_branch_is_retried(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    sha = first_commit(fleet)
    original = GitRepos.push
    calls = {"n": 0}

    def racing_push(self: GitRepos, url: str, new: str, branch: str, expected: str | None) -> None:
        calls["n"] += 1
        if calls["n"] == 1 and branch == "dev":  # someone pushes to dev just before our pin lands
            fleet.push_env("dev", {"owners.md": "platform team\n"}, "concurrent edit")
        original(self, url, new, branch, expected)

    monkeypatch.setattr(GitRepos, "push", racing_push)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert fleet.pin("dev") == sha
    log = subprocess_log(fleet, "dev")
    assert "concurrent edit" in log and log.count("fleetflow: pin dev") == 1


def subprocess_log(fleet: Fleet, branch: str) -> str:
    return git(fleet.root, "--git-dir", fleet.cp_url, "log", "--format=%s", f"refs/heads/{branch}")


def test_a_base_repo_moved_out_of_the_pin_file_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    """fleetflow reads and writes the pin only in ``base-repo.yaml`` at the environment branch's root. A BaseRepo
    moved into another file (a tidy-up into folders) is a pin it cannot see: ``schedule`` and ``promote`` name the
    file and line where it is and how to fix it, push nothing, and ``promote`` writes no second BaseRepo (which
    every later render would refuse as a duplicate). Found by the schedule walk over other seeds
    (``FLEETFLOW_WALK_SEEDS=111``): the message said to promote a commit first, which would have written one."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    git(fleet.work, "fetch", "-q", fleet.cp_url, "+refs/heads/dev:refs/remotes/cp/dev")
    git(fleet.work, "checkout", "-q", "-B", "dev", "cp/dev")
    (fleet.work / "settings").mkdir()
    git(fleet.work, "mv", "base-repo.yaml", "settings/pin.yaml")
    git(fleet.work, "commit", "-q", "-m", "settings in a folder")
    git(fleet.work, "push", "-q", fleet.cp_url, "HEAD:refs/heads/dev")
    def heads() -> tuple[str, str]:  # the environment branch (its pin) and the GitOps PR's head branch
        return fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")

    before = heads()
    line = 1 + next(i for i, text in enumerate((fleet.work / "settings/pin.yaml").read_text().splitlines())
                    if text.startswith("apiVersion:"))
    for run in (lambda ctx: schedule_environment(ctx, "dev"), lambda ctx: promote(ctx, "dev", sha)):
        with fleet.context() as ctx, pytest.raises(InputError) as refused:
            run(ctx)
        [problem] = refused.value.problems()
        assert problem.location is not None
        assert (problem.location.file, problem.location.line) == ("dev/settings/pin.yaml", line)
        assert "base-repo.yaml at the root of branch dev" in problem.message
        assert problem.hint is not None and "git mv settings/pin.yaml base-repo.yaml" in problem.hint
        assert "promote a commit first" not in str(refused.value)
        assert heads() == before
    with fleet.context() as ctx:  # status says why dev shows no pin, where the BaseRepo is
        [dev] = [e for e in fleet_status(ctx) if e.name == "dev"]
    assert dev.pinned is None
    assert f"a BaseRepo is in dev/settings/pin.yaml:{line}" in dev.gate_description, dev.gate_description


STRICT_SCHEMA = """apiVersion: fleetflow.dev/v1alpha1
kind: ConfigSchema
metadata:
  name: strict
spec:
  schema: {type: object, required: [REPLICAS]}
"""

UNRENDERABLE = {  # a commit whose render refuses it before rendering anything: the branch it is on, the file and
    # how it is edited, the line the problem points at, how its message starts
    "main: a kind misspelled": ("main", "workloads/app.yaml", ("kind: Workload", "kind: Worklod"), 2, "unknown kind"),
    "main: a template that does not compile": (
        "main", "templates/flux.yaml", ("name: {{ DeploymentTargetName }}", "name: {% for %}"), 12, "template 'flux'"),
    "env branch: a template role naming no template": (
        "dev", "cluster-types.yaml", ("configType: config", "configType: nope"), None, "ClusterType cloud"),
    # what only the render finds: it renders the pin commit before pushing it
    "main: a template naming a variable no assignment has": (
        "main", "templates/flux.yaml", ("name: {{ DeploymentTargetName }}", "name: {{ DeploymentTargetNam }}"), 12,
        "template 'flux', manifest 1, rendering"),
    "env branch: a composed config its schema refuses": (
        "dev", "configs.yaml", ("ENVIRONMENT: dev", "ENVIRONMENT: dev\n---\n" + STRICT_SCHEMA), 15,
        "cloud/app-dev: REPLICAS: required key is missing"),
}


@pytest.mark.parametrize("case", list(UNRENDERABLE))
def test_a_commit_its_render_would_refuse_is_not_pinned(tmp_path: Path, case: str) -> None:
    """``promote`` pinned first and rendered after: a main commit (or an environment branch) its render refuses was
    pinned anyway, the environment left pointing at a commit with no schedule and its gate ``pending: scheduled``
    on it, and a run that said "Stopped at this error" had written the pin. The render's checks that come before
    any assignment is rendered (``pipeline.checked_inputs``: the plane loads, references, templates, schedule) ran
    before the pin was written; what only rendering finds (a template naming a variable no assignment has, a
    composed config its ConfigSchema refuses) still came after it. Promote now renders the pin commit, made in the
    mirror, before it pushes it: the same problems, at their lines, and nothing written; reconcile reports them for
    the environment, every run, until a commit fixes them."""
    fleet = make_local_fleet(tmp_path)
    good = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, good)
    branch, path, (old, new), line, message = UNRENDERABLE[case]
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", f"{branch}:{path}")
    assert old in text
    if branch == "main":
        sha = fleet.push_main({path: text.replace(old, new)}, case)
    else:
        fleet.push_env(branch, {path: text.replace(old, new)}, case)
        sha = fleet.push_main({"templates/extra.yaml": "# a main commit to promote\n"}, "second")

    def written() -> list[str | None]:  # dev's pin and its GitOps branches, and the gate's record on the commit
        return [fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "dev"),
                fleet.branch_sha(fleet.gitops_url, "fleetflow/dev"), fleet.cp_status(sha, "dev")]

    before = written()
    assert before[-1] is None and fleet.pin("dev") == good
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        promote_many(ctx, None, sha)
    problems = refused.value.problems()
    located = next((p.location for p in problems if p.message.startswith(message)), None)
    assert located is not None and located.file == f"{branch}/{path}"
    if line is not None:
        assert located.line == line, problems
    assert written() == before and fleet.pin("dev") == good
    with fleet.context() as ctx:
        [dev] = [e for e in reconcile(ctx).environments if e.environment == "dev"]
    assert dev.exit_code == 1 and [str(p) for p in dev.problems] == [str(p) for p in problems]
    assert written() == before


@pytest.mark.parametrize("case", ["main: a kind misspelled", "main: a template that does not compile"])
def test_a_sharded_environment_gets_the_render_checks_before_its_pin(tmp_path: Path, case: str) -> None:
    """``promote`` does not render an environment with ``shardedSchedule`` (its shard jobs do), so it cannot render
    the pin commit first: it runs the render's checks that come before any assignment instead
    (``check_before_pinning``). A commit they refuse is not pinned, and nothing is written."""
    fleet = make_local_fleet(tmp_path)
    _, path, (old, new), line, message = UNRENDERABLE[case]
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", f"main:{path}")
    sha = fleet.push_main({**environments_file(sharded=("dev",)), path: text.replace(old, new)}, case)
    before = [fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "dev")]
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        promote_many(ctx, None, sha)
    located = next((p.location for p in refused.value.problems() if p.message.startswith(message)), None)
    assert located is not None and (located.file, located.line) == (f"main/{path}", line)
    assert [fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "dev")] == before
    assert fleet.pin("dev") == "" and fleet.cp_status(sha, "dev") is None  # the branch holds no pin yet
    fixed = fleet.push_main({path: text}, "fixed")  # and a commit that passes them is pinned, not rendered
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, fixed)
    assert outcome.pinned and outcome.schedule is None and fleet.pin("dev") == fixed


def test_a_gitops_repo_that_does_not_answer_is_found_before_the_pin(tmp_path: Path) -> None:
    """The environment branch's GitOpsRepo names a repository that is not there (a typo in ``spec.repo``; found by
    ``tests/test_fleet_edits.py``, seed 7): promote pinned, then the schedule's fetch failed (exit 3). The check
    before the pin now fetches the GitOps branches too, so the run stops with git's words and writes nothing."""
    fleet = make_local_fleet(tmp_path)
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:gitops-repo.yaml")
    fleet.push_env("dev", {"gitops-repo.yaml": text.replace("gitops.git", "gitops-typo.git")}, "a typo")
    sha = first_commit(fleet)
    before = [fleet.branch_sha(fleet.cp_url, "dev"), fleet.cp_status(sha, "dev")]
    with fleet.context() as ctx, pytest.raises(GitError, match=r"gitops-typo\.git"):
        promote_many(ctx, None, sha)
    assert [fleet.branch_sha(fleet.cp_url, "dev"), fleet.cp_status(sha, "dev")] == before


def test_a_pin_file_with_an_empty_metadata_is_refused_at_its_line_not_a_crash(tmp_path: Path) -> None:
    """``base-repo.yaml`` with ``metadata:`` and nothing under it (an edit by hand; found by
    ``tests/test_fleet_edits.py`` through the GitHub stand-in, seed 10): ``read_pin`` takes it (no hold in it), and
    ``write_pin`` crashed on it (AttributeError: ruamel reads the empty value as None) once promote wrote the pin
    commit before loading the plane. Now it writes the pin, and the render of that commit, before anything is
    pushed, refuses the BaseRepo with no name at its file."""
    fleet = make_local_fleet(tmp_path)
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:base-repo.yaml")
    assert "metadata:\n  name: main\n" in text
    empty = text.replace("metadata:\n  name: main\n", "metadata:\n")
    fleet.push_env("dev", {"base-repo.yaml": empty}, "no name")
    sha = first_commit(fleet)

    def written() -> list[str | None]:
        return [fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "dev"),
                fleet.cp_status(sha, "dev")]

    before = written()
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        promote(ctx, "dev", sha)
    [problem] = refused.value.problems()
    assert problem.message.startswith("metadata.name is missing"), problem
    assert problem.location is not None and problem.location.file == "dev/base-repo.yaml"
    assert written() == before
    # the file as it was but the commit, and (a rollback) the hold where its mapping now is
    assert write_pin(empty, commit=sha, repo="r", hold=None).rstrip("\n") == empty.replace('""', f'"{sha}"')
    held = read_pin(write_pin(empty, commit=sha, repo="r", hold="rollback"), "dev/base-repo.yaml")
    assert (held.commit, held.hold) == (sha, "rollback")


BROKEN_PINS = {  # how an engineer's edit can leave base-repo.yaml unreadable: what follows the kind, the line the
    # message points at, how the message starts
    "syntax": ("spec: [\n", 4, "invalid YAML: "),  # the file ends inside the list
    "duplicate key": ("kind: BaseRepo\n", 3, "invalid YAML: "),
    "tab": ("spec:\n  commit:\t\"\"\n", 4, "invalid YAML: "),
    "spec not a mapping": ("spec: [commit]\n", 3, "BaseRepo spec must be a mapping"),
    # a commit fleetflow cannot compare or read statuses on: status stopped (exit 3), schedule rendered it
    "a short sha": ("spec:\n  commit: 3f2a9c1\n", 4, "BaseRepo spec.commit must be a full commit sha"),
    "a branch name": ("spec:\n  commit: main\n", 4, "BaseRepo spec.commit must be a full commit sha"),
}


@pytest.mark.parametrize("broken", list(BROKEN_PINS))
def test_a_pin_file_that_does_not_read_is_named_and_nothing_is_written(
    tmp_path: Path, broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``base-repo.yaml`` is edited by hand too (a hold annotation, a comment). When an edit left it unreadable,
    every fleet command crashed with ruamel.yaml's exception (a traceback; ``status`` and ``reconcile`` for every
    environment, because of one). Now each command that acts on the environment refuses with the file, line and
    column, pushes nothing; ``status`` shows the environment with the reason and every other one as before;
    ``reconcile`` reports it for that environment; ``history`` still shows its earlier pins. A tab between a key
    and its value is such an edit: ruamel, which rewrites the file keeping its comments, refuses it
    (tests/test_yaml_reading.py). ``fleetflow status`` exits 0 (it reported what it found) and also gives the
    problem as a warning at its line (until 2026-11-29 only inside the gate's description)."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"  # qa gets the commit too: its status must show as before
    git(fleet.work, "fetch", "-q", fleet.cp_url, "+refs/heads/dev:refs/remotes/cp/dev")
    git(fleet.work, "checkout", "-q", "-B", "dev", "cp/dev")
    text, line, message = BROKEN_PINS[broken]
    pin_file = fleet.work / "base-repo.yaml"
    pin_file.write_text("apiVersion: fleetflow.dev/v1alpha1\nkind: BaseRepo\n" + text)
    git(fleet.work, "commit", "-q", "-am", f"pin: an edit by hand ({broken})")
    git(fleet.work, "push", "-q", fleet.cp_url, "HEAD:refs/heads/dev")

    def heads() -> list[str]:  # dev's pin, its GitOps branch and its PR's head branch: nothing may move
        return [fleet.branch_sha(fleet.cp_url, "dev"), fleet.branch_sha(fleet.gitops_url, "dev"),
                fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")]

    before = heads()
    for run in (lambda ctx: schedule_environment(ctx, "dev"), lambda ctx: promote(ctx, "dev", sha),
                lambda ctx: check_rollout(ctx, "dev")):
        with fleet.context() as ctx, pytest.raises(InputError) as refused:
            run(ctx)
        [problem] = refused.value.problems()
        assert problem.location is not None and problem.location.column is not None
        assert (problem.location.file, problem.location.line) == ("dev/base-repo.yaml", line)
        assert problem.message.startswith(message) and problem.hint
        assert heads() == before
    with fleet.context() as ctx:
        statuses = {e.name: e for e in fleet_status(ctx)}
        reconciled = {e.environment: e for e in reconcile(ctx).environments}
        history = read_history(ctx)
    assert statuses["dev"].gate_description.startswith(f"no pin fleetflow can read: dev/base-repo.yaml:{line}:")
    assert statuses["qa"].pinned == sha and statuses["dev"].pinned is None
    assert [str(p.location) for p in reconciled["dev"].problems] == [str(problem.location)]
    assert reconciled["dev"].exit_code == 1 and reconciled["qa"].problems == []
    assert [p.commit for p in history.promotions["dev"]] == [sha]  # the pin before the edit
    assert heads() == before
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    [warning] = json.loads(shown.stdout)["warnings"]
    assert warning["message"].startswith(f"dev: no pin fleetflow can read: {message}"), warning
    assert (warning["location"]["file"], warning["location"]["line"]) == ("dev/base-repo.yaml", line)
    assert warning["hint"] == problem.hint
    text = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id)
    assert text.exit_code == 0 and f"warning: dev/base-repo.yaml:{line}:" in text.stderr, text.output


@pytest.mark.parametrize(("text", "where", "what"), [
    ("- a\n- b\n", "dev/base-repo.yaml:1:1", "document 1 is a list, not a mapping"),
    ("just text\n", "dev/base-repo.yaml", "document 1 is a value, not a mapping"),
])
def test_a_pin_file_that_holds_no_mapping_is_named_not_taken_as_no_pin(text: str, where: str, what: str) -> None:
    """A list or a value in ``base-repo.yaml`` was taken as "no pin": ``schedule`` said the environment has no
    pinned commit (no line), ``check-rollout`` "pending", exit 0 (a bad-input hunt, 2026-11-28). Now it is the pin
    file's problem at its line, as any pin that does not read (the commands that act on it refuse; ``status`` and
    ``reconcile`` say it: ``test_a_pin_file_that_does_not_read_is_named_and_nothing_is_written``)."""
    with pytest.raises(InputError) as refused:
        read_pin(text, "dev/base-repo.yaml")
    [problem] = refused.value.problems()
    assert (str(problem.location), problem.message) == (where, what)
    assert read_pin("# the pin goes here\n", "dev/base-repo.yaml").commit is None  # comments alone: no pin yet


def _promoted_dev(tmp_path: Path) -> tuple[Fleet, str, str]:
    """A fleet whose first commit is promoted and rolled out in dev; dev's pin file's text."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"
    return fleet, sha, git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:base-repo.yaml")


def _gitops_heads(fleet: Fleet, env: str) -> list[str | None]:
    return [fleet.branch_sha(fleet.cp_url, env), fleet.branch_sha(fleet.gitops_url, env),
            fleet.branch_sha(fleet.gitops_url, f"fleetflow/{env}")]


def test_a_pin_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    """A byte that is not UTF-8 in ``base-repo.yaml`` (a comment saved in Latin-1) stopped every command with a
    UnicodeDecodeError (found by a bad-input hunt, 2026-11-28). Now the commands that act on the environment refuse
    with the file and how to fix it, nothing moves, and ``status``, ``reconcile`` and ``history`` go on as for any
    pin that does not read."""
    fleet, sha, text = _promoted_dev(tmp_path)
    git(fleet.work, "fetch", "-q", fleet.cp_url, "+refs/heads/dev:refs/remotes/cp/dev")
    git(fleet.work, "checkout", "-q", "-B", "dev", "cp/dev")
    (fleet.work / "base-repo.yaml").write_bytes(text.encode() + b"# caf\xe9\n")
    git(fleet.work, "commit", "-q", "-am", "pin: a comment in Latin-1")
    git(fleet.work, "push", "-q", fleet.cp_url, "HEAD:refs/heads/dev")
    before = _gitops_heads(fleet, "dev")
    for run in (lambda ctx: schedule_environment(ctx, "dev"), lambda ctx: promote(ctx, "dev", sha),
                lambda ctx: check_rollout(ctx, "dev")):
        with fleet.context() as ctx, pytest.raises(InputError) as refused:
            run(ctx)
        [problem] = refused.value.problems()
        assert problem.location is not None and problem.location.file == "dev/base-repo.yaml", problem
        assert problem.message.startswith("file is not UTF-8 text") and "save it as UTF-8" in (problem.hint or "")
        assert _gitops_heads(fleet, "dev") == before
    with fleet.context() as ctx:
        statuses = {e.name: e for e in fleet_status(ctx)}
        reconciled = {e.environment: e for e in reconcile(ctx).environments}
        history = read_history(ctx)
    assert statuses["dev"].gate_description.startswith("no pin fleetflow can read: dev/base-repo.yaml: file is not")
    assert reconciled["dev"].exit_code == 1 and reconciled["qa"].problems == []
    assert [p.commit for p in history.promotions["dev"]] == [sha]


def test_a_pin_to_a_commit_that_is_not_on_main_is_refused(tmp_path: Path) -> None:
    """A pin names a main commit: ``schedule`` checked only that the mirror had the commit, so a commit that lives
    only in another branch's history (here a branch ``side``: any clone can push one, and the environment
    branches' histories are fetched too) was rendered and proposed as if main had it: a change no one merged to
    main reached dev (found by a bad-input hunt, 2026-11-28). Now it must be an ancestor of main's tip (``git
    merge-base --is-ancestor``), as ``promote --commit`` requires; nothing is written."""
    fleet, sha, text = _promoted_dev(tmp_path)
    git(fleet.work, "checkout", "-q", "-B", "side", sha)
    (fleet.work / "unreviewed.txt").write_text("not on main\n")
    git(fleet.work, "add", "-A")
    git(fleet.work, "commit", "-q", "-m", "a commit main does not have")
    side = git(fleet.work, "rev-parse", "HEAD")
    git(fleet.work, "push", "-q", fleet.cp_url, "HEAD:refs/heads/side")
    git(fleet.work, "checkout", "-q", "main")
    fleet.push_env("dev", {"base-repo.yaml": text.replace(sha, side)}, "pin a side commit")
    with fleet.context() as ctx:
        ctx.git.fetch_branch(ctx.cp_url, "side")  # the mirror has it: what let it through before
    before = _gitops_heads(fleet, "dev")
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        schedule_environment(ctx, "dev")
    [problem] = refused.value.problems()
    assert problem.message == f"environment dev is pinned to {side}, which is not on main", problem
    assert problem.location is not None and problem.location.file == "dev/base-repo.yaml"
    assert _gitops_heads(fleet, "dev") == before


def test_a_gitops_state_from_a_newer_fleetflow_is_refused_and_one_that_does_not_read_is_said(tmp_path: Path) -> None:
    """The state index on the GitOps branch says which version wrote it. One of a later version than this
    fleetflow reads was taken as a state that does not read: everything rendered again and the newer state
    overwritten with this version's, without a word (a bad-input hunt, 2026-11-28). Now ``schedule`` refuses it,
    says to upgrade, and writes nothing; a state that does not read at all is still rendered over, and the run now
    warns of it (its PR lists every assignment as added)."""
    fleet, _, _ = _promoted_dev(tmp_path)
    (tmp_path / "g").mkdir()
    gitops = Path(fleet.gitops_url)
    push_file(tmp_path / "g", gitops, "dev", ".fleetflow/state.json",
              lambda text: text.replace('"version": 3,', '"version": 99,', 1))
    before = _gitops_heads(fleet, "dev")
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        schedule_environment(ctx, "dev")
    [problem] = refused.value.problems()
    assert problem.message.startswith("state version 99 was written by a newer fleetflow"), problem
    assert problem.location is not None and problem.location.file.startswith(".fleetflow/state.json (GitOps commit ")
    assert "upgrade fleetflow" in (problem.hint or "") and _gitops_heads(fleet, "dev") == before
    push_file(tmp_path / "g", gitops, "dev", ".fleetflow/state.json", lambda _: "{ not json\n")
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "created"
    [warning] = [w for w in outcome.warnings if "state on the GitOps branch is unreadable" in w.message]
    assert warning.location is not None and warning.location.file == ".fleetflow/state.json"


@pytest.mark.parametrize("blocker", ["file", "link", "folder"])
def test_what_a_person_put_where_fleetflow_writes_is_never_replaced(tmp_path: Path, blocker: str) -> None:
    """A file (or link) named like a cluster type's folder, or a folder named like a file fleetflow writes, stands
    on the GitOps branch: writing the folder or the file there would replace it, and all it holds (git keeps one
    entry per name). Until 2026-11-28 the next schedule's PR deleted the person's file (a bad-input hunt). Now the
    schedule refuses with the path, pushes nothing and opens no PR; once it is moved, the schedule proposes as
    before."""
    fleet, _, _ = _promoted_dev(tmp_path)
    work = tmp_path / "gitops-work"
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(work))
    if blocker == "folder":
        in_the_way = "cloud/app-dev/namespace.yaml"
        git(work, "rm", "-q", in_the_way)
        (work / in_the_way).mkdir()
        (work / in_the_way / "notes.txt").write_text("a person's notes\n")
    else:
        in_the_way = "cloud"
        git(work, "rm", "-q", "-r", "cloud")
        if blocker == "file":
            (work / "cloud").write_text("a person's file\n")
        else:
            os.symlink("elsewhere", work / "cloud")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "a person's edit")
    git(work, "push", "-q", "origin", "HEAD:dev")
    configs = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:configs.yaml")
    fleet.push_env("dev", {"configs.yaml": configs.replace("LOG_LEVEL: info", "LOG_LEVEL: debug")}, "more logs")
    before = _gitops_heads(fleet, "dev")
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        schedule_environment(ctx, "dev")
    [problem] = refused.value.problems()
    shown = {"file": "a file stands where fleetflow writes the folder cloud/",
             "link": "a symbolic link stands where fleetflow writes the folder cloud/",
             "folder": f"a folder stands where fleetflow writes the file {in_the_way}"}[blocker]
    assert problem.message.startswith(shown), problem
    assert _gitops_heads(fleet, "dev") == before and fleet.open_pr("dev") is None
    git(work, "mv", in_the_way, f"{in_the_way}.moved")
    git(work, "commit", "-q", "-m", "moved out of the way")
    git(work, "push", "-q", "origin", "HEAD:dev")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "created"
    kept = git(tmp_path, "--git-dir", fleet.gitops_url, "ls-tree", "-r", "--name-only", "fleetflow/dev")
    assert f"{in_the_way}.moved" in kept or f"{in_the_way}.moved/notes.txt" in kept


@pytest.mark.parametrize("commit", ["", "HEAD", "main", "-x", "abc"])
def test_a_commit_that_is_no_sha_is_a_usage_error(tmp_path: Path, commit: str) -> None:
    """``--commit ''``, ``HEAD``, ``main`` said "commit main is not on main", exit 1 (a bad-input hunt, 2026-11-28):
    the commit promoted is named exactly, 4 to 40 hex digits, and anything else is the command line's error."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx, pytest.raises(UsageError, match="is not a commit sha: give 4 to 40 hex digits"):
        promote(ctx, "dev", commit)


def test_an_abbreviated_sha_naming_two_objects_is_said_ambiguous(tmp_path: Path) -> None:
    """Two objects of the control-plane repo whose ids start alike (found by hashing, then written): the prefix
    names no one commit (``git rev-parse --disambiguate``), which was "not on main" (exit 1); now a usage error
    asking for more digits."""
    fleet = make_local_fleet(tmp_path)
    seen: dict[str, bytes] = {}
    for i in range(100_000):
        data = f"blob {i}\n".encode()
        prefix = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:5]
        if prefix in seen:
            break
        seen[prefix] = data
    git(fleet.work, "checkout", "-q", "-B", "side", "main")
    (fleet.work / "one.txt").write_bytes(seen[prefix])
    (fleet.work / "two.txt").write_bytes(data)
    git(fleet.work, "add", "-A")
    git(fleet.work, "commit", "-q", "-m", "two blobs whose ids start alike")
    git(fleet.work, "push", "-q", fleet.cp_url, "HEAD:refs/heads/side")
    git(fleet.work, "checkout", "-q", "main")
    with fleet.context() as ctx:
        ctx.git.fetch_branch(ctx.cp_url, "side")  # the mirror has both
        with pytest.raises(UsageError, match=f"--commit {prefix} names more than one object"):
            promote(ctx, "dev", prefix)



def test_an_environment_rendering_into_another_environments_gitops_branch_is_refused(tmp_path: Path) -> None:
    """qa's environment branch made from dev's, its GitOpsRepo renamed and its ``branch: dev`` left: qa's schedule
    took dev's state on the GitOps branch as its own, so its PR deleted dev's files and wrote qa's in their place,
    and qa's gate, pinned to the commit dev rolled out, read dev's clusters' reports as qa's rollout and promoted
    onwards (until 2026-11-29). Now each refuses at the GitOpsRepo's branch (a shard job of a sharded schedule
    too), and nothing is written."""
    fleet, sha, _ = _promoted_dev(tmp_path)
    assert fleet.pin("qa") == sha
    qa_env = fleet.branch_sha(fleet.cp_url, "qa")
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", f"{qa_env}:gitops-repo.yaml")
    assert text.count("branch: qa") == 1
    fleet.push_env("qa", {"gitops-repo.yaml": text.replace("branch: qa", "branch: dev")}, "qa: copied from dev")
    before = [*_gitops_heads(fleet, "dev"), *_gitops_heads(fleet, "qa")]
    open_prs = [fleet.open_pr(env) for env in ("dev", "qa")]
    shard = tmp_path / "shard-1"
    for run in (lambda ctx: schedule_environment(ctx, "qa"), lambda ctx: check_rollout(ctx, "qa"),
                lambda ctx: render_shard(ctx, "qa", ShardSpec(1, 1), shard)):
        with fleet.context() as ctx, pytest.raises(InputError) as refused:
            run(ctx)
        [problem] = refused.value.problems()
        assert problem.message == (
            f"environment qa: GitOpsRepo qa renders into branch dev of {fleet.gitops_id}, its root, which holds "
            "environment dev's output (its state names dev): two environments would write the same files, each "
            "replacing the other's"), problem.message
        assert problem.location is not None and problem.location.file.endswith("gitops-repo.yaml")
        assert problem.location.line == 7, problem.location
        assert (problem.hint or "").startswith("give qa a GitOps branch or folder of its own")
    assert [*_gitops_heads(fleet, "dev"), *_gitops_heads(fleet, "qa")] == before
    assert [fleet.open_pr(env) for env in ("dev", "qa")] == open_prs
    assert fleet.cp_status(sha, "qa") != "success" and fleet.pin("prod-eu") == ""
    assert not shard.exists()


def test_the_output_of_an_environment_main_no_longer_defines_is_taken_over(tmp_path: Path) -> None:
    """An environment renamed on main (its GitOps branch kept) leaves a state naming the old name: that output is
    no other live environment's, so the new name's schedule takes it over, as every schedule did before the check
    above (tests/test_promotion.py, the test before this one); a state naming a live environment is refused."""
    fleet, _, _ = _promoted_dev(tmp_path)
    (tmp_path / "g").mkdir()
    gitops = Path(fleet.gitops_url)
    state = git(fleet.root, "--git-dir", fleet.gitops_url, "show", "dev:.fleetflow/state.json")
    assert state.count('"environment": "dev"') == 1
    push_file(tmp_path / "g", gitops, "dev", ".fleetflow/state.json",
              lambda text: text.replace('"environment": "dev"', '"environment": "qa"'))
    with fleet.context() as ctx, pytest.raises(InputError, match="which holds environment qa's output"):
        schedule_environment(ctx, "dev")
    push_file(tmp_path / "g", gitops, "dev", ".fleetflow/state.json",
              lambda text: text.replace('"environment": "qa"', '"environment": "staging"'))
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    # taken over: the files on the branch are what dev renders, so there is nothing to propose
    assert outcome.operation == "none" and outcome.message.startswith("nothing to change"), outcome


def test_status_and_metrics_say_an_environment_branch_is_missing(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """qa rolled out main@sha, then its control-plane branch was deleted (``git push --delete``, GitHub's
    "Automatically delete head branches" after a PR from qa merged; or an Environment's ``branch`` names one that
    is not there). Until 2026-11-29 ``status`` said "qa: not promoted yet" next to dev's success and ``metrics``
    counted 0 promotions for qa, both exit 0 and without a word; reconcile and promote already refuse. Now status's
    line names the missing branch, and both commands warn (once each)."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success" and roll_out(fleet, "qa") == "success"
    git(fleet.root, "--git-dir", fleet.cp_url, "update-ref", "-d", "refs/heads/qa")
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    envelope = json.loads(shown.stdout)
    [qa] = [e for e in envelope["result"]["environments"] if e["environment"] == "qa"]
    said = f"branch 'qa' does not exist in the control-plane repo {fleet.cp_id}"
    assert qa["gate"] == {"state": "none", "description": said} and qa["pinnedCommit"] is None
    assert [w["message"] for w in envelope["warnings"]] == [f"qa: {said}"]
    text = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id)
    assert "not promoted yet" not in text.stdout.split("\nqa ", 1)[1].split("\n")[0], text.stdout
    measured = run_cli("metrics", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert measured.exit_code == 0, measured.output
    warned = json.loads(measured.stdout)["warnings"]
    assert [w["message"] for w in warned] == [f"qa: {said}: its promotions are not counted"]


def test_status_says_a_pin_main_was_force_pushed_back_past(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dev rolled out main@second, then main was force-pushed back to first (a ``push`` event with ``forced:
    true``). reconcile says dev is "pinned to ..., which is not on main"; until 2026-11-29 ``status`` said
    "(cannot read dev: git ls-tree failed: fatal: not a tree object)" from a fresh cache (the mirror fetches main's
    history, so second is not there), and nothing at all from a cache that still held second."""
    fleet = make_local_fleet(tmp_path)
    first = first_commit(fleet)
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        promote(ctx, "dev", second)
    assert roll_out(fleet, "dev") == "success"
    git(fleet.root, "--git-dir", fleet.cp_url, "update-ref", "refs/heads/main", first)
    said = f"rolled out: 2/2 clusters (main@{second[:12]} is not on main: rewritten since? promote a commit of main)"
    with fleet.context() as ctx:  # the cache still holds second
        [dev] = [e for e in fleet_status(ctx) if e.name == "dev"]
    assert dev.gate_description == said and dev.gitops_branch == "dev"
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))  # a fresh one does not
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    [dev_json] = [e for e in json.loads(shown.stdout)["result"]["environments"] if e["environment"] == "dev"]
    assert dev_json["gate"]["description"] == said and "not a tree object" not in shown.stdout
    measured = run_cli("metrics", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert measured.exit_code == 0, measured.output
    assert [w["message"] for w in json.loads(measured.stdout)["warnings"]] == [  # dev's success promoted it to qa
        f"{env}: 1 pinned commit(s) not on main (main@{second[:12]}): their promotions are not counted"
        for env in ("dev", "qa")]


def test_status_says_the_gitops_branch_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dev's GitOps branch was deleted after its rollout (a ``git push --delete``; GitHub's "Automatically delete
    head branches" deletes a merged PR's head, and a PR from dev into another branch makes dev one). The clusters
    have nothing left to reconcile; schedule refuses ("a PR needs its base branch"). Until 2026-11-29 ``status``
    showed dev as rolled out without a word (``gitopsHead: null`` in JSON only); now its line says so and it warns
    at the GitOpsRepo."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    assert roll_out(fleet, "dev") == "success"
    git(fleet.root, "--git-dir", fleet.gitops_url, "update-ref", "-d", "refs/heads/dev")
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    envelope = json.loads(shown.stdout)
    [dev] = [e for e in envelope["result"]["environments"] if e["environment"] == "dev"]
    gone = f"the GitOps repo {fleet.gitops_id} has no branch 'dev'"
    assert dev["gitopsHead"] is None and dev["gate"]["description"] == f"rolled out: 2/2 clusters ({gone})"
    [warning] = envelope["warnings"]
    assert warning["message"] == f"dev: {gone}" and warning["location"]["file"].endswith("gitops-repo.yaml")


def test_a_pr_a_person_closed_is_not_proposed_again_by_a_fan_out_and_is_by_hand(fleet: Fleet) -> None:
    """A person rejects qa's PR (closes it without merging). A later check-rollout of dev (the cron, a late cluster
    report) promotes the same commit to qa again: until 2026-11-29 that opened a new PR each time, saying only
    "PR #3 opened". Now the rejection stands there (operation ``rejected``, the closed PR named), as in reconcile
    (docs/design.md: "A PR closed without merging is not re-opened until the pin or the branch changes"); a person's
    ``promote`` of the same commit proposes it again and names the PR it does not re-open. GitHub lists closed PRs of
    a head with ``state=closed`` and ``head=owner:branch`` and keeps their ``head.sha`` (REST "List pull requests",
    https://docs.github.com/en/rest/pulls/pulls#list-pull-requests)."""
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    assert roll_out(fleet, "dev") == "success"
    rejected = fleet.open_pr("qa")
    fleet.forge.update_pull(fleet.gitops_id, rejected.number, state="closed")
    said: list[str] = []
    with fleet.context(said.append) as ctx:
        again = check_rollout(ctx, "dev")
    [qa] = again.promoted
    assert qa.schedule is not None and qa.schedule.operation == "rejected"
    assert qa.schedule.rejected is not None and qa.schedule.rejected.number == rejected.number
    assert qa.message.startswith(f"main@{sha[:12]} pinned in qa: PR #{rejected.number} proposed main@{sha[:12]}")
    assert "not proposed again" in qa.message
    assert any("closed without merging: not proposed again" in line for line in said)
    assert fleet.open_pr("qa") is None
    assert [p.number for p in fleet.forge.pulls(fleet.gitops_id, "fleetflow/qa")] == [rejected.number]
    with fleet.context() as ctx:
        by_hand = promote(ctx, "qa", sha)
    assert by_hand.schedule is not None and by_hand.schedule.operation == "created"
    opened = fleet.open_pr("qa")
    assert opened is not None and opened.number != rejected.number
    assert f"PR #{rejected.number}, which proposed the same and was closed without merging" in by_hand.message
    data = json.loads(by_hand.model_dump_json(by_alias=True))
    assert data["schedule"]["rejected"]["number"] == rejected.number
    assert data["schedule"]["pullRequest"]["number"] == opened.number


def test_a_pr_whose_head_branch_a_person_deleted_is_closed_on_both_forges(fleet: Fleet) -> None:
    """A person deletes dev's PR head branch (``git push --delete origin fleetflow/dev``): GitHub closes the PR
    (tests/test_forge_local.py's test_a_pull_request_whose_head_branch_is_deleted_is_closed cites it; the stand-in
    does so in ``Repo.refresh``). The local forge kept it open until 2026-11-29, and schedule and reconcile said "PR #1
    already proposes exactly this" of a branch that was gone, where on GitHub they report the PR as closed without
    merging. Now both forges agree: the closed PR is a rejection of that render, not proposed again by itself."""
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    pr = fleet.open_pr("dev")
    git(fleet.root, "--git-dir", fleet.gitops_url, "update-ref", "-d", "refs/heads/fleetflow/dev")
    assert fleet.open_pr("dev") is None
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "rejected" and outcome.pull is not None and outcome.pull.number == pr.number
    assert "already proposes" not in outcome.message
    said: list[str] = []
    with fleet.context(said.append) as ctx:
        reconcile(ctx)
    assert any(f"PR #{pr.number} proposed main@{sha[:12]}" in line and "closed without merging" in line
               for line in said)
    assert not any("already proposes" in line for line in said)
    assert [(p.number, p.state) for p in fleet.forge.pulls(fleet.gitops_id, "fleetflow/dev")] == [(pr.number,
                                                                                                    "closed")]


def test_commits_a_person_pushed_to_the_pr_head_are_named_when_a_render_replaces_them(fleet: Fleet) -> None:
    """A person pushes a commit to the open PR's head branch (GitHub lets anyone with write access push to a PR's
    branch, "Committing changes to a pull request branch created from a fork" / "About pull requests"). The next
    schedule pushes its render over it (fleetflow owns ``fleetflow/<env>``): until 2026-11-29 it said only "PR #1
    updated", and the person's commit was gone from the branch without a word. Now the message says so and a
    warning names each commit replaced and where the change belongs."""
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    push_a_commit_by_hand_to_devs_pr(fleet)
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        outcome = promote(ctx, "dev", second)
    assert outcome.schedule is not None and outcome.schedule.operation == "updated"
    assert "replacing 1 commit(s) a person pushed to fleetflow/dev" in outcome.message
    [warning] = [w for w in outcome.schedule.warnings if "fleetflow did not write" in w.message]
    assert "'tweak replicas by hand'" in warning.message and warning.hint and "environment branch dev" in warning.hint
    assert fleet.branch_sha(fleet.gitops_url, "fleetflow/dev") == outcome.schedule.gitops_commit
    # the next run replaces nothing: the head is fleetflow's render again
    third = fleet.push_main({"templates/extra.yaml": "# third\n"}, "third")
    with fleet.context() as ctx:
        again = promote(ctx, "dev", third)
    assert again.schedule is not None and "replacing" not in again.message
    assert not [w for w in again.schedule.warnings if "fleetflow did not write" in w.message]


def push_a_commit_by_hand_to_devs_pr(fleet: Fleet) -> None:
    """A person's commit "tweak replicas by hand" on ``fleetflow/dev``, the head of dev's PR."""
    work = fleet.root / "gitops-by-hand"
    git(fleet.root, "clone", "-q", "-b", "fleetflow/dev", fleet.gitops_url, str(work))
    (work / "tweak.yaml").write_text("replicas: 3\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "tweak replicas by hand")
    git(work, "push", "-q", "origin", "HEAD:fleetflow/dev")


def test_commits_a_person_pushed_to_the_pr_head_are_named_when_schedule_closes_the_pr(fleet: Fleet) -> None:
    """dev runs main@first; its PR proposes main@second, and a person pushes a commit to that PR's head. The pin goes
    back to main@first (a rollback by hand): nothing is left to propose, so schedule closes the PR. Until 2026-11-29
    the person's commit was closed away with it without a word (the render path names such commits, the test above);
    now the message and a warning name it, on both forges."""
    first = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", first)
    fleet.approve("dev")
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        promote(ctx, "dev", second)
    pr = fleet.open_pr("dev")
    push_a_commit_by_hand_to_devs_pr(fleet)
    fleet.push_env("dev", {"base-repo.yaml": write_pin(
        git(fleet.root, "--git-dir", fleet.cp_url, "show", "refs/heads/dev:base-repo.yaml"), commit=first,
        repo="r", hold=None)}, "back to main@first")
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "closed" and fleet.open_pr("dev") is None
    assert outcome.message == (f"PR #{pr.number} closed: dev already has everything it proposed (with 1 commit(s) a "
                               "person pushed to fleetflow/dev, not merged)")
    [warning] = [w for w in outcome.warnings if "fleetflow did not write" in w.message]
    assert "closed with the PR" in warning.message and "'tweak replicas by hand'" in warning.message
    assert warning.hint and "environment branch dev" in warning.hint


def test_what_a_person_wrote_around_the_pr_description_stays_when_a_new_pin_updates_it(fleet: Fleet) -> None:
    """A person adds a note above and below fleetflow's description (a change ticket; GitHub's editor sends the
    text back with CRLF line ends). A new pin rewrites the description (REST "Update a pull request": ``body`` is
    replaced whole): until 2026-11-29 the notes were gone without a word. fleetflow's part runs from its marker to
    ``<!-- fleetflow:end -->``; what is around it is kept as written."""
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    pr = fleet.open_pr("dev")
    above, below = "Change ticket: CAB-123\r\n\r\n", "\r\n\r\nOps: merge after Monday's freeze, please."
    fleet.forge.update_pull(fleet.gitops_id, pr.number, body=above + pr.body.replace("\n", "\r\n") + below)
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx:
        outcome = promote(ctx, "dev", second)
    assert outcome.schedule is not None and outcome.schedule.operation == "updated"
    now = fleet.open_pr("dev").body
    assert now.startswith(above + "<!-- fleetflow:environment=dev -->") and now.endswith(below)
    assert second in now and now.count("<!-- fleetflow:environment=dev -->") == 1
    # a run with nothing new leaves it as it is
    with fleet.context() as ctx:
        assert promote(ctx, "dev", second).schedule.operation == "unchanged"  # type: ignore[union-attr]
    assert fleet.open_pr("dev").body == now


def test_a_pr_whose_base_a_person_changed_is_not_given_another_environment_s_render(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A person changes the base of dev's open PR to qa (GitHub: "Changing the base branch of a pull request"; REST
    "Update a pull request", ``base``). GitHub keeps it open and lets a second PR from the same head into dev be
    opened (it refuses only a second open PR for one head *and* base: cli/cli#686, #718). Until 2026-11-29 the next
    promotion of dev opened that second PR and pushed dev's new render to ``fleetflow/dev``, which the retargeted PR
    then proposed into qa. Now the run refuses, pushing nothing to the head, and says how to fix it."""
    fleet = make_github_fleet(tmp_path, request)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    pr = fleet.open_pr("dev")
    fleet.stub.repo("contoso/gitops").update_pull(pr.number, base="qa")  # type: ignore[attr-defined]
    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    with fleet.context() as ctx, pytest.raises(GateError) as refused:
        promote(ctx, "dev", second)
    assert f"PR #{pr.number} from fleetflow/dev is open into qa, not dev" in str(refused.value)
    assert "Change its base back to dev" in str(refused.value)
    assert fleet.branch_sha(fleet.gitops_url, "fleetflow/dev") == head
    assert [p.number for p in fleet.forge.pulls(fleet.gitops_id, "fleetflow/dev")] == [pr.number]
    # put back: the next run updates it
    fleet.stub.repo("contoso/gitops").update_pull(pr.number, base="dev")  # type: ignore[attr-defined]
    with fleet.context() as ctx:
        outcome = promote(ctx, "dev", second)
    assert outcome.schedule is not None and outcome.schedule.operation == "updated"
    fleet.forge.close()


def test_a_label_a_person_took_off_the_pr_is_not_put_back(fleet: Fleet) -> None:
    """A person takes one of the policy's labels off dev's open PR (GitHub: "Remove a label from an issue"; the PR
    keeps an ``unlabeled`` issue event with the label's ``name``: ``unlabeled-issue-event`` in GitHub's REST
    description, tests/ghstub/openapi-subset.json). Until 2026-11-29 the next schedule of the open PR added it back,
    as a label a stopped run had not added, and so did every later run. A label nobody took off is still added."""
    labels = {"dev": "  pullRequest:\n    labels: [fleetflow, needs-cab]\n"}
    tip = fleet.push_main({".environments/envs.yaml": "---\n".join(
        _environment(n, a, labels.get(n, "")) for n, a in ENVIRONMENTS.items())}, "dev's PRs are labelled")
    with fleet.context() as ctx:
        promote(ctx, "dev", tip)
    pr = fleet.open_pr("dev")
    assert sorted(pr.labels) == ["fleetflow", "needs-cab"]
    if isinstance(fleet.forge, GitHubForge):  # GitHub's side: the label goes, an unlabeled event stays
        stub = fleet.stub  # type: ignore[attr-defined]
        held = stub.repo("contoso/gitops").pull(pr.number)
        held.labels.remove("needs-cab")
        held.events.append({"id": stub.store.next_id(), "event": "unlabeled", "actor": "alice",
                            "created_at": stub.store.now(), "label": "needs-cab"})
    else:
        assert isinstance(fleet.forge, LocalForge)
        fleet.forge.remove_label(fleet.gitops_id, pr.number, "needs-cab")
    said: list[str] = []
    with fleet.context(said.append) as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "unchanged" and fleet.open_pr("dev").labels == ("fleetflow",)
    assert not [line for line in said if "labelled" in line]


@pytest.mark.parametrize(("environ", "operation"), [
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "schedule"}, "rejected"),
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push"}, "rejected"),
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_dispatch"}, "created"),
    ({}, "created"),
])
def test_schedule_in_a_run_an_event_started_leaves_a_rejected_pr_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], operation: str) -> None:
    """``fleetflow schedule`` proposes again what a person closed without merging when a person asked: on their
    machine, or in a run they dispatched. In GitHub Actions ``GITHUB_ACTIONS`` is "Always set to true" and
    ``GITHUB_EVENT_NAME`` names "the event that triggered the workflow run" (GitHub's "Variables reference", default
    environment variables): a run of the shards workflow's cron tick (``schedule``) or of a push stitching the same
    commit re-opened the rejected PR as a new one on every tick until now."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    rejected = fleet.open_pr("dev")
    assert rejected is not None
    fleet.forge.update_pull(fleet.gitops_id, rejected.number, state="closed")
    for name in ("GITHUB_ACTIONS", "GITHUB_EVENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    result = run_cli("schedule", "--forge", "local", "--control-plane", fleet.cp_id, "--environment", "dev",
                     "--format", "json")
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)["result"]
    assert outcome["operation"] == operation and outcome["rejected"]["number"] == rejected.number, outcome
    opened = fleet.open_pr("dev")
    assert (opened is None) if operation == "rejected" else (opened is not None and opened.number != rejected.number)


def test_the_last_environments_removed_from_the_chain_are_not_promoted_along_an_older_commits_chain(
        tmp_path: Path) -> None:
    """The prods and dr removed from main while qa rolls out X (whose chain still has them): qa's check-rollout
    records its success and says it promotes nothing there; ``promote --environment prod-eu`` of X is refused with
    the chain's change, nothing written. Until 2026-11-29 the fan-out along X's chain tried prod-eu and the command
    failed, exit 2, "unknown environment 'prod-eu'; environments on main: dev, qa", on every check of qa."""
    fleet = make_local_fleet(tmp_path)
    x = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, x)
    assert roll_out(fleet, "dev") == "success"  # its fan-out promotes X to qa
    assert fleet.pin("qa") == x
    files = {".environments/envs.yaml": "---\n".join(_environment(n, a) for n, a in (("dev", []), ("qa", ["dev"])))}
    tip = fleet.push_main(files, "the prods and dr leave the chain")
    fleet.approve("qa")
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report("qa")
    fleet.clock.advance(timedelta(minutes=2))
    with fleet.context() as ctx:
        outcome = check_rollout(ctx, "qa")
    assert outcome.state == "success" and outcome.promoted == []
    gone = f"is not in the chain any more: main@{tip[:12]} does not define it (main@{x[:12]} does)"
    assert outcome.skipped == [f"{n}: {n} {gone}; environments on main: dev, qa: not promoted"
                               for n in ("prod-eu", "prod-us")], outcome.skipped
    assert fleet.pin("prod-eu") == "" and fleet.open_pr("prod-eu") is None
    with fleet.context() as ctx, pytest.raises(InputError, match=re.escape(f"prod-eu {gone}")):
        promote(ctx, "prod-eu", x)
    assert fleet.pin("prod-eu") == ""


def test_reconcile_names_the_open_prs_of_environments_main_no_longer_defines(fleet: Fleet) -> None:
    """The prods and dr removed from main while prod-eu's and prod-us's PRs are open: a reconcile run over every
    environment names both PRs (a warning, with how to close them; JSON ``stalePulls``), touches neither, and once
    one is closed names only the other. A run for one environment does not look. Until 2026-11-29 nothing ever said
    so: a person could merge a render no gate follows. Open or closed, GitHub keeps ``refs/pull/<N>/head`` for
    every PR ("Checking out pull requests locally", docs.github.com), which picks the branches worth a request."""
    x = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, x)
    assert roll_out(fleet, "dev") == "success" and roll_out(fleet, "qa") == "success"
    prs = {env: fleet.open_pr(env) for env in ("prod-eu", "prod-us")}
    assert all(prs.values()), prs
    files = {".environments/envs.yaml": "---\n".join(_environment(n, a) for n, a in (("dev", []), ("qa", ["dev"])))}
    tip = fleet.push_main(files, "the prods and dr leave the chain")
    with fleet.context() as ctx:
        outcome = reconcile(ctx)
        assert [(p.environment, p.number) for p in outcome.stale_pulls] == [
            (env, pr.number) for env, pr in prs.items() if pr is not None]
        one = reconcile(ctx, "qa")
    assert one.stale_pulls == []
    words = [w.message for w in outcome.warnings()]
    for env, pr in prs.items():
        assert pr is not None
        assert (f"{fleet.gitops_id}: PR #{pr.number} ({pr.url}) from fleetflow/{env} into {env} is still open, and "
                f"main@{tip[:12]} does not define environment {env} any more") in "\n".join(words), words
        assert fleet.open_pr(env) is not None  # left as it was
    assert outcome.model_dump(by_alias=True, mode="json")["stalePulls"][0]["number"] == prs["prod-eu"].number
    fleet.forge.update_pull(fleet.gitops_id, prs["prod-eu"].number, state="closed")
    with fleet.context() as ctx:
        again = reconcile(ctx)
    assert [p.environment for p in again.stale_pulls] == ["prod-us"]


def test_release_with_an_older_commit_is_refused_not_a_rollback_without_a_hold(fleet: Fleet) -> None:
    """``--release`` ends a rollback's hold. With a commit older than the pin it rolled the environment back with
    no hold until 2026-11-29: the pin commit said "pin", metrics did not count a rollback
    (``history.is_rollback`` reads the hold), and the next push to main moved it forward again. Now it is refused
    (exit 1), nothing is written, and the error gives the rollback command; with the pinned commit it drops the
    hold only."""
    first, second = _first_then_second_in_dev(fleet)
    before = fleet.branch_sha(fleet.cp_url, "dev")
    with fleet.context() as ctx, pytest.raises(GateError, match=(
            rf"main@{first[:12]} is older than dev's pin main@{second[:12]}: --release .* to roll back \(held "
            rf"until released\): fleetflow promote --environment dev --commit {first[:12]}$")):
        promote(ctx, "dev", first, release=True)
    assert fleet.branch_sha(fleet.cp_url, "dev") == before and fleet.pin("dev") == second
    with fleet.context() as ctx:
        back = promote(ctx, "dev", first)
    assert back.held and fleet.pin("dev") == first
    with fleet.context() as ctx:
        released = promote(ctx, "dev", first, release=True)  # the pinned commit: the hold dropped, nothing else
    assert released.held is None and fleet.pin("dev") == first
