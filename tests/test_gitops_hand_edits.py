"""Files fleetflow wrote on a GitOps branch, changed there by a person after fleetflow's commit: a hot-fix of a
rendered manifest, a deleted file or cluster-type folder, an edit pushed on the PR's head branch before the merge.

Until 2026-11-29 (a realistic-mistake hunt) an incremental render trusted the files of every assignment whose inputs
did not change, so the next promotion's PR said "0 changed" over them: a hot-fix stayed until some later change
touched its assignment (then it went, without a word), and a deleted cluster-type folder stayed deleted while its
clusters reported success on the promoted commit (Flux prunes what leaves its Kustomization's path:
kustomize-controller's ``spec.prune``, https://fluxcd.io/flux/components/kustomize/kustomizations/#prune). Now
``schedule`` (and ``promote``, and a sharded schedule's shard jobs) find them with one ``git log -1 --
.fleetflow/state.json`` (the newest commit that wrote the state: fleetflow's, the squash or rebase of it, or the
head a merge commit brings in, which git's default history simplification follows to: git-log(1), "History
Simplification", a merge TREESAME to one parent follows that parent) and a tree diff from it to the tip, render
those assignments again, and say so: a warning, the outcome's ``restored`` and the PR's "Files changed on the GitOps
branch, put back as rendered"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fleetflow.forge.git import BareRepo
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import ScheduleOutcome, render_commit, schedule_environment
from fleetflow.promotion.shards import ShardSpec, stitch_environment
from tests.fleet import Fleet, environments_file, git, local_fleet
from tests.test_promotion import first_commit, make_github_fleet, roll_out
from tests.test_schedule_shards import TYPES, cluster_types, run_shards, runner

CONFIG = "cloud/app-dev/platform-config.yaml"


def _rolled_out_dev(fleet: Fleet) -> str:
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"
    return sha


def _hand_commit(fleet: Fleet, branch: str, edit: str) -> str:
    """A person's commit on the GitOps repo's ``branch``: ``edit`` is 'hotfix', 'delete file', 'delete folder' or
    'add file'."""
    work = fleet.root / f"hand-{branch.replace('/', '-')}"
    shutil.rmtree(work, ignore_errors=True)
    git(fleet.root, "clone", "-q", "-b", branch, fleet.gitops_url, str(work))
    if edit == "hotfix":
        (work / CONFIG).write_text((work / CONFIG).read_text().replace("LOG_LEVEL: info", "LOG_LEVEL: debug"))
    elif edit == "delete file":
        (work / CONFIG).unlink()
    elif edit == "delete folder":
        shutil.rmtree(work / "cloud")
    else:
        (work / "cloud/app-dev/extra.yaml").write_text("kind: ConfigMap\n")
    git(work, "add", "-A")
    git(work, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-q", "-m", edit)
    git(work, "push", "-q", "origin", f"HEAD:{branch}")
    return git(work, "rev-parse", "HEAD")


def _promote_new_main(fleet: Fleet) -> ScheduleOutcome:
    """A main commit that changes nothing dev renders, promoted: the schedule promote runs."""
    readme = fleet.work / "README.md"
    new = fleet.push_main({"README.md": (readme.read_text() if readme.exists() else "") + "unrelated\n"})
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, new)
    assert outcome.schedule is not None
    return outcome.schedule


def _file_on(fleet: Fleet, branch: str, path: str) -> str | None:
    try:
        return git(fleet.root, "--git-dir", fleet.gitops_url, "show", f"refs/heads/{branch}:{path}")
    except Exception:
        return None


@pytest.mark.parametrize("edit", ["hotfix", "delete file", "delete folder"])
def test_a_file_fleetflow_wrote_changed_on_the_gitops_branch_is_put_back_and_said(tmp_path: Path, edit: str) -> None:
    """The next promotion's PR puts the file back (it said "0 changed" and left the hot-fix or the hole before)."""
    fleet = local_fleet(tmp_path)
    _rolled_out_dev(fleet)
    rendered = _file_on(fleet, "dev", CONFIG)
    assert rendered is not None and "LOG_LEVEL: info" in rendered
    _hand_commit(fleet, "dev", edit)
    schedule = _promote_new_main(fleet)
    assert schedule.operation == "created"
    assert _file_on(fleet, "fleetflow/dev", CONFIG) == rendered
    assert CONFIG in schedule.restored
    [warning] = [w for w in schedule.warnings if "changed on the GitOps branch" in w.message]
    assert warning.message.startswith(f"{len(schedule.restored)} file")
    assert "rendered again, this commit puts back what fleetflow renders" in warning.message
    assert "make it in the control plane" in (warning.hint or "")
    pr = fleet.open_pr("dev")
    assert "Files changed on the GitOps branch, put back as rendered" in pr.body and f"`{CONFIG}`" in pr.body
    assert schedule.changes.changed == [] and schedule.changes.added == []  # its inputs did not change
    with fleet.context() as ctx:  # the same inputs again: nothing new
        assert schedule_environment(ctx, "dev").operation == "unchanged"


def test_a_file_a_person_added_is_kept_and_a_merged_schedule_finds_nothing_to_put_back(tmp_path: Path) -> None:
    """A file fleetflow did not write is not its to put back (it stays, listed as kept); after fleetflow's own PR is
    merged (a merge commit on the local forge) the branch holds nothing changed by hand."""
    fleet = local_fleet(tmp_path)
    _rolled_out_dev(fleet)
    _hand_commit(fleet, "dev", "add file")
    schedule = _promote_new_main(fleet)
    assert schedule.restored == [] and not [w for w in schedule.warnings if "GitOps branch after" in w.message]
    fleet.approve("dev")
    schedule = _promote_new_main(fleet)
    assert schedule.restored == [] and schedule.warnings == []
    assert _file_on(fleet, "fleetflow/dev", "cloud/app-dev/extra.yaml") == "kind: ConfigMap"


def test_an_edit_pushed_on_the_pr_head_before_its_merge_is_put_back_by_the_next_schedule(tmp_path: Path) -> None:
    """A reviewer pushes a fix onto ``fleetflow/dev`` and merges: what the clusters run is not what fleetflow
    rendered. The next schedule finds it (the merge follows the head, whose parent wrote the state) and puts it
    back, saying so."""
    fleet = local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    _hand_commit(fleet, "fleetflow/dev", "hotfix")
    fleet.approve("dev")
    assert "LOG_LEVEL: debug" in (_file_on(fleet, "dev", CONFIG) or "")
    schedule = _promote_new_main(fleet)
    assert "LOG_LEVEL: info" in (_file_on(fleet, "fleetflow/dev", CONFIG) or "")
    assert schedule.restored == [CONFIG]


@pytest.mark.parametrize("method", ["squash", "rebase"])
def test_a_pr_merged_by_squash_or_rebase_leaves_nothing_to_put_back(
        tmp_path: Path, request: pytest.FixtureRequest, method: str) -> None:
    """GitHub's squash and rebase merges write new commits with fleetflow's tree (the stand-in merges as GitHub
    does, tests/ghstub/state.py): the newest commit that wrote the state is that one, and nothing differs after it.
    The gate still finds the merged commit (its state names the pin)."""
    fleet = make_github_fleet(tmp_path, request)
    stub = fleet.stub  # type: ignore[attr-defined]
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    pr = fleet.open_pr("dev")
    stub.repo("contoso/gitops").merge_pull(pr.number, method=method)
    assert fleet.gitops_state("dev").main_commit == sha
    schedule = _promote_new_main(fleet)
    assert schedule.restored == [] and schedule.operation == "created"
    assert "put back as rendered" not in fleet.open_pr("dev").body


def test_a_sharded_schedule_puts_back_what_a_person_deleted_in_a_shards_cluster_types(tmp_path: Path) -> None:
    """A sharded environment (docs/setup.md section 10: ``schedule --shard K/N`` on N runners, then ``--stitch``):
    a file deleted by hand in one shard's cluster type, a whole cluster-type folder deleted in another's and a
    hot-fix in a third. Each shard job finds the hand edits (the same ``git log -1`` on the same base) and renders
    its own cluster types again; the stitch puts their folders in by id, lists every file in its outcome and its
    PR, and gives the commit a single job gives."""
    fleet = local_fleet(tmp_path)
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES)}, "eight more cluster types")
    with fleet.context() as ctx:  # pins dev and renders nothing: the shard jobs do
        promote_many(ctx, None, fleet.push_main(environments_file(sharded=("dev",)), "dev: sharded schedule"))
    run_shards(fleet, 3, tmp_path / "first")
    with runner(fleet, "first-stitch") as ctx:
        assert stitch_environment(ctx, "dev", tmp_path / "first").operation == "created"
    fleet.approve("dev")
    shard = {ct: next(k for k in (1, 2, 3) if ShardSpec(k, 3).owns(ct)) for ct in TYPES}
    deleted_file, deleted_folder, hotfix = (next(ct for ct in TYPES if shard[ct] == k) for k in (1, 2, 3))
    config = "app-dev/platform-config.yaml"
    rendered = {ct: _file_on(fleet, "dev", f"{ct}/{config}") for ct in (deleted_file, deleted_folder, hotfix)}
    assert all(rendered.values())
    work = tmp_path / "hand-sharded"
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(work))
    (work / deleted_file / config).unlink()
    shutil.rmtree(work / deleted_folder)
    fixed = work / hotfix / config
    fixed.write_text(fixed.read_text().replace("LOG_LEVEL: info", "LOG_LEVEL: debug"))
    git(work, "add", "-A")
    git(work, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-q", "-m", "by hand")
    git(work, "push", "-q", "origin", "HEAD:dev")
    new = fleet.push_main({"README.md": "unrelated\n"})  # changes nothing dev renders
    with fleet.context() as ctx:
        promote_many(ctx, None, new)
    with runner(fleet, "single") as ctx:  # what one job would commit, for comparison (nothing pushed)
        single = render_commit(ctx, "dev")
    run_shards(fleet, 3, tmp_path / "artifacts")
    for k, ct in ((1, deleted_file), (2, deleted_folder), (3, hotfix)):  # each shard wrote its own folder again
        manifest = json.loads((tmp_path / "artifacts" / f"shard-{k}" / f"shard-{k}-of-3.json").read_text())
        assert ct in manifest["folders"], manifest
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", tmp_path / "artifacts")
    assert outcome.operation == "created" and outcome.gitops_commit == single.written.commit
    assert {ct: _file_on(fleet, "fleetflow/dev", f"{ct}/{config}") for ct in rendered} == rendered
    assert {f"{deleted_file}/{config}", f"{deleted_folder}/{config}", f"{hotfix}/{config}"} <= set(outcome.restored)
    assert outcome.restored == single.restored
    [warning] = [w for w in outcome.warnings if "changed on the GitOps branch" in w.message]
    assert warning.message.startswith(f"{len(outcome.restored)} files")
    body = fleet.open_pr("dev").body
    assert "Files changed on the GitOps branch, put back as rendered" in body
    assert all(f"`{p}`" in body for p in outcome.restored[:5])


@pytest.mark.parametrize(("edit", "reason"), [
    ('"cloud/../..": {"content": "0", "files": ["README.md"], "input": "0"}',
     "it lists 'cloud/../..', which is not an assignment of cluster type cloud"),
    ('"zzz/app": {"content": "0", "files": ["README.md"], "input": "0"}',
     "it lists 'zzz/app', which is not an assignment of cluster type cloud"),
])
def test_a_state_shard_edited_on_the_gitops_branch_to_list_what_fleetflow_never_writes_is_named(
        tmp_path: Path, edit: str, reason: str) -> None:
    """A person edits the state shard on the GitOps branch (``.fleetflow/state/cloud.json``) to list an assignment
    fleetflow never writes there. Until 2026-11-29 the next schedule that read the shard stopped with "git cat-file
    failed: fatal: relative path syntax can't be used outside working tree" (exit 3, a git failure, for an id with
    ``..``: the folder is read as ``<tree>:../..``, and "a path starting with ./ or ../ is relative to the current
    working directory", gitrevisions(7) ``<rev>:<path>``, https://git-scm.com/docs/gitrevisions, which a bare
    repository has not), or proposed removing an assignment of another cluster type. Now the shard does not read
    (tests/test_state_shards.py): a warning names it, the cluster type is rendered again, and the commit holds the
    shard a fresh render writes. The git side answers such a folder as absent too, not as a failure."""
    fleet = local_fleet(tmp_path)
    _rolled_out_dev(fleet)
    work = tmp_path / "hand-state"
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(work))
    shard = work / ".fleetflow" / "state" / "cloud.json"
    fleetflows = shard.read_text()
    shard.write_text(fleetflows.replace('"assignments": {\n', '"assignments": {\n    ' + edit + ",\n", 1))
    git(work, "commit", "-q", "-am", "state by hand")
    git(work, "push", "-q", "origin", "HEAD:dev")
    fleet.push_env("dev", {"configs.yaml": (fleet.root / "env-dev" / "configs.yaml").read_text().replace(
        "LOG_LEVEL: info", "LOG_LEVEL: warn")}, "warn")  # touches cloud: its shard is read
    with fleet.context() as ctx:
        schedule = schedule_environment(ctx, "dev")
    assert schedule.operation == "created"
    [warning] = [w for w in schedule.warnings if "does not read" in w.message]
    assert warning.message.startswith(f"the state of cluster type cloud does not read ({reason}): its assignments "
                                      "were rendered again")
    assert str(warning.location) == ".fleetflow/state/cloud.json"
    assert schedule.changes.removed == []
    committed = _file_on(fleet, "fleetflow/dev", ".fleetflow/state/cloud.json") or ""
    assert "cloud/app-dev" in committed and edit.split(":")[0] not in committed
    assert _file_on(fleet, "fleetflow/dev", "README.md") == "GitOps"
    repo = BareRepo(Path(fleet.gitops_url))
    assert repo.listings("refs/heads/dev", ["cloud/../..", "cloud/./app-dev", "cloud/.."]) == dict.fromkeys(
        ["cloud/../..", "cloud/./app-dev", "cloud/.."])
    assert repo.listings("refs/heads/dev", ["cloud"])["cloud"]
