"""Ordinary mistakes and accidents around a sharded schedule (``schedule --shard K/N`` on N runners, then
``--stitch``), and what the stitch makes of them: it writes nothing it cannot stand behind, and says why.

- A registered workload repository (``WorkloadRegistration``) is fetched at its branch by every job on its own
  runner, so a push there between the jobs gives them different inputs, as a push to the environment branch does.
- ``actions/download-artifact`` with ``pattern`` downloads every artifact of the run whose name matches, each into
  a folder of its own name unless ``merge-multiple`` ("If false, the downloaded artifacts will be extracted into
  individual named directories within the specified path": actions/download-artifact README, inputs), so
  ``fleetflow-shard-prod-*-of-3`` also matches ``fleetflow-shard-prod-eu-1-of-3`` when one caller's run schedules
  both environments.
- "When you re-run failed jobs or a specific job, GitHub also re-runs the jobs that depend on them. Jobs that aren't
  included keep their outputs from the previous attempt" (GitHub docs, "Re-running workflows and jobs"): the shards
  that succeeded keep their artifacts, the one run again renders the inputs of its own time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fleetflow.errors import InputError
from fleetflow.forge.git import BareRepo
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import render_commit
from fleetflow.promotion.shards import ShardSpec, render_shard, stitch_environment
from tests.fleet import Fleet, git
from tests.test_promotion import make_local_fleet, roll_out
from tests.test_schedule_shards import TYPES, cluster_types, promote_with_more_types, run_shards, runner


def _workload(path: str) -> str:
    return ("apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: shop\nspec:\n  workspace: team\n"
            "  deploymentTargets:\n    - name: dev\n      environment: dev\n      labels: {purpose: app}\n"
            f"      manifests: {{repo: https://example.invalid/shop, branch: main, path: {path}}}\n")


def _registered_fleet(tmp_path: Path) -> tuple[Fleet, Path]:
    """dev with nine cluster types and a workload read from a repository of its own (a WorkloadRegistration),
    promoted and merged."""
    fleet = make_local_fleet(tmp_path)
    app = tmp_path / "apps" / "shop"
    app.mkdir(parents=True)
    git(app, "init", "-q", "-b", "main")
    (app / "workload.yaml").write_text(_workload("v1"))
    git(app, "add", "-A")
    git(app, "commit", "-q", "-m", "v1")
    fleet.push_main({"registrations/shop.yaml": (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: WorkloadRegistration\nmetadata:\n  name: shop\nspec:\n"
        f"  workload: {{repo: {json.dumps(app.as_uri())}, branch: main, path: .}}\n  workspace: team\n")})
    promote_with_more_types(fleet)
    fleet.approve("dev")
    return fleet, app


def _push(app: Path, path: str) -> str:
    (app / "workload.yaml").write_text(_workload(path))
    git(app, "commit", "-q", "-am", path)
    return git(app, "rev-parse", "HEAD")


def test_a_workload_repo_pushed_between_the_shards_and_the_stitch_supersedes_it(tmp_path: Path) -> None:
    """The shards rendered the workload at one commit; the stitch would write the state index from the commit it
    reads (the deployment targets' fingerprints), so the folders rendered from the older one would pass for up to
    date: the next schedule said "nothing to change" until the workload changed again (until 2026-11-29 the stitch
    committed that, exit 0). Now: ``superseded``, nothing written, and the message names the repository and both
    commits; the shards run again stitch the single job's commit."""
    fleet, app = _registered_fleet(tmp_path)
    old = _push(app, "v2")
    run_shards(fleet, 3, tmp_path / "older")
    new = _push(app, "v3")
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", tmp_path / "older")
    assert outcome.operation == "superseded", outcome.message
    assert f"workload repo {app.as_uri()} branch main at {old[:12]}; the inputs now are" in outcome.message
    assert outcome.message.endswith(f"workload repo {app.as_uri()} branch main at {new[:12]}. Nothing was written: "
                                    "the workflow's next scheduled run renders and stitches the new inputs; to do it "
                                    "now, run the shard jobs again (re-run the workflow).")
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads and fleet.open_pr("dev") is None

    run_shards(fleet, 3, tmp_path / "newer")
    with runner(fleet, "stitch-2") as ctx:
        stitched = stitch_environment(ctx, "dev", tmp_path / "newer")
    with runner(fleet, "single") as ctx:
        single = render_commit(ctx, "dev")
    assert stitched.operation == "created" and stitched.gitops_commit == single.written.commit


def test_shards_that_read_a_workload_repo_at_different_commits_are_not_one_set(tmp_path: Path) -> None:
    """A push to the workload repository while the shard jobs start: shard 1 read one commit, shard 2 another. Not
    one set of inputs (exit 1, nothing written), and the message says which repository differs; the hint names
    what a re-run of one failed shard job does (the others keep their artifacts)."""
    fleet, app = _registered_fleet(tmp_path)
    old = _push(app, "v2")
    render_shard(runner(fleet, "shard-1"), "dev", ShardSpec(1, 2), tmp_path / "set" / "1")
    new = _push(app, "v3")
    render_shard(runner(fleet, "shard-2"), "dev", ShardSpec(2, 2), tmp_path / "set" / "2")
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with runner(fleet, "stitch") as ctx, pytest.raises(InputError, match="rendered from different inputs") as err:
        stitch_environment(ctx, "dev", tmp_path / "set")
    text = str(err.value)
    assert "shard 1/2 from main@" in text and f"workload repo {app.as_uri()} branch main at {old[:12]}; " in text
    assert f"workload repo {app.as_uri()} branch main at {new[:12]}" in text
    assert "Re-run failed jobs" in text and "Re-run all jobs" in text
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads


def test_shards_of_another_environment_in_the_folder_are_left_aside(tmp_path: Path) -> None:
    """One caller's run schedules two sharded environments: the stitch of one downloads the other's artifacts too
    when its name starts the same (the pattern ``fleetflow-shard-<environment>-*-of-N``). Until 2026-11-29 that
    stitch failed (exit 1, "rendered environment qa, not dev" and "not one complete set") on every such run; now
    it stitches its own shards, and a folder with none of its own says whose it holds."""
    fleet = make_local_fleet(tmp_path)
    promote_with_more_types(fleet)
    roll_out(fleet, "dev")  # pins qa
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES[:-1])}, "one type fewer")
    downloads = tmp_path / "downloads"
    for k in (1, 2):
        render_shard(runner(fleet, f"dev-{k}"), "dev", ShardSpec(k, 2), downloads / f"fleetflow-shard-dev-{k}-of-2")
        render_shard(runner(fleet, f"qa-{k}"), "qa", ShardSpec(k, 2), tmp_path / "qa" / f"fleetflow-shard-qa-{k}-of-2")
    with runner(fleet, "single") as ctx:
        single = render_commit(ctx, "dev")
    shutil.copytree(tmp_path / "qa", downloads, dirs_exist_ok=True)
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", downloads)
    assert outcome.operation == "created" and outcome.gitops_commit == single.written.commit
    with runner(fleet, "stitch-qa-only") as ctx, pytest.raises(InputError) as err:
        stitch_environment(ctx, "dev", tmp_path / "qa")
    assert str(err.value).startswith(f"no shard manifest (shard-K-of-N.json) of environment dev under {tmp_path}/qa "
                                     "(only shards of other environments: qa: 1/2, 2/2)")


@pytest.mark.parametrize("damage", ["missing", "cut short"])
def test_a_bundle_missing_or_cut_short_is_an_input_error(tmp_path: Path, damage: str) -> None:
    """An artifact whose bundle did not come down whole (a failed or partial download, a folder copied without it).
    Until 2026-11-29: exit 3, "git bundle failed: error: could not open ..." and "running the same command again is
    safe", which it never fixes; now exit 1 naming the shard, the file and what to do, nothing written."""
    fleet = make_local_fleet(tmp_path)
    promote_with_more_types(fleet)
    fleet.approve("dev")
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES[:-1])}, "one type fewer")
    run_shards(fleet, 2, tmp_path / "set")
    [bundle] = [b for b in (tmp_path / "set").rglob("*.bundle") if b.stat().st_size > 0][:1]
    shard = bundle.name.removesuffix(".bundle").removeprefix("shard-").replace("-of-", "/")
    if damage == "missing":
        bundle.unlink()
        expected = f"names the bundle {bundle.name}, which is not beside it"
    else:
        bundle.write_bytes(bundle.read_bytes()[:120])
        expected = f"the bundle {bundle} does not read: "
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with runner(fleet, "stitch") as ctx, pytest.raises(InputError) as err:
        stitch_environment(ctx, "dev", tmp_path / "set")
    assert str(err.value).startswith(f"shard {shard}: ") and expected in str(err.value)
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads


def test_a_manifest_with_a_shard_that_is_not_k_of_n_is_an_input_error_at_its_file(tmp_path: Path) -> None:
    """A manifest edited or written by something else: until 2026-11-29 a usage error about ``--shard '0/2'``, an
    option the stitch was not given; now exit 1 naming the file."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    run_shards(fleet, 2, tmp_path / "set")
    path = tmp_path / "set" / "shard-1" / "shard-1-of-2.json"
    path.write_text(path.read_text().replace('"1/2"', '"0/2"'))
    with runner(fleet, "stitch") as ctx, pytest.raises(InputError) as err:
        stitch_environment(ctx, "dev", tmp_path / "set")
    assert str(err.value).startswith(f"{path}: shard '0/2' is not K/N with 1 <= K <= N")
