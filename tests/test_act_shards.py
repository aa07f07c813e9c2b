"""The sharded schedule under ``act`` (host mode, offline): the example caller
``examples/workflows/schedule-shards.yml`` calls ``fleetflow-schedule-shards.yml`` with N=3; its matrix runs
``fleetflow schedule --shard K/3`` in three jobs, each uploading its shard as an artifact, and the stitch job
downloads them, commits once and opens the one PR.

The commit it pushes is byte-identical to the one a single job gives (the same commit id, so the same tree, message,
author and dates), computed beside it with the library's single-job render. The world is test_act_e2e.py's (the
GitHub stand-in server, the App token, checkout, cache and upload-artifact stand-ins), plus a stand-in for
actions/download-artifact at its pinned sha (tests/artifactkit.py). The fleet is small: nine cluster types, so each
of the three shards has some (``shard_of``).

How a matrix fed by a job output runs: ``strategy.matrix`` may be an expression of ``needs.<job>.outputs``
(GitHub's workflow syntax, jobs.<job_id>.strategy.matrix, with fromJSON); act evaluates the job's raw matrix with
the expression evaluator of the run once the needed jobs are done (nektos/act ``pkg/runner/runner.go``:
``EvaluateYamlNode(ctx, &job.Strategy.RawMatrix)``, then ``pkg/model/workflow.go`` ``GetMatrixes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetflow.forge.git import BareRepo
from fleetflow.promotion.context import head_branch
from fleetflow.promotion.schedule import render_commit
from fleetflow.promotion.shards import shard_of
from tests import actkit, artifactkit
from tests.fleet import environments_file
from tests.ghstub import GitHubStub
from tests.test_act_e2e import (  # noqa: F401  (pytest fixtures, used by name)
    World,
    action_checkout,
    action_venv,
    app_token_standin,
    cache_standin,
    checkout_standin,
    make_world,
    succeeded,
    upload_artifact_standin,
)
from tests.test_schedule_shards import TYPES, cluster_types, runner

SHARDED_ENVS = environments_file(sharded=("dev",))[".environments/envs.yaml"].replace("soakTime: 1m", "soakTime: 0s")


@pytest.fixture(scope="session")
def download_artifact_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifactkit.write_download_artifact_standin(tmp_path_factory.mktemp("download-artifact"))


@pytest.fixture
def world(github_stub: GitHubStub, tmp_path: Path, action_checkout: Path, app_token_standin: Path,  # noqa: F811
          checkout_standin: Path, upload_artifact_standin: Path, cache_standin: Path,  # noqa: F811
          action_venv: Path, download_artifact_standin: Path) -> Iterator[World]:  # noqa: F811
    made = make_world(github_stub, tmp_path, action_checkout, app_token_standin, checkout_standin,
                      upload_artifact_standin, cache_standin, action_venv)
    made.cp_act.local_repositories.update({
        f"{artifactkit.DOWNLOAD_ARTIFACT_ACTION}@{ref}": download_artifact_standin
        for ref in actkit.pinned_uses(action_checkout / ".github" / "workflows", artifactkit.DOWNLOAD_ARTIFACT_ACTION)})
    yield made
    made.fleet.forge.close()  # type: ignore[attr-defined]


def shards_caller(world: World, environment: str, shards: int) -> Path:
    """The example caller in the control plane's clone, for ``environment`` in ``shards`` (act has no
    job.workflow_sha: the platform fallback input names the ref, as in test_act_e2e.py)."""
    text = (actkit.REPO_ROOT / "examples" / "workflows" / "schedule-shards.yml").read_text(encoding="utf-8")
    assert "      environment: prod\n" in text and "      shards: 10\n" in text
    text = text.replace("      environment: prod\n", f"      fleetflow-ref: v0\n      environment: {environment}\n")
    workflow = world.cp_act.workdir / ".github" / "workflows" / "fleetflow-shards.yml"
    workflow.write_text(text.replace("      shards: 10\n", f"      shards: {shards}\n"), encoding="utf-8")
    return workflow


def test_three_shard_jobs_and_a_stitch_push_the_single_jobs_commit(world: World, tmp_path: Path) -> None:
    fleet = world.fleet
    main = fleet.push_main({".environments/envs.yaml": SHARDED_ENVS}, "dev: sharded schedule")
    before = fleet.branch_sha(fleet.cp_url, "dev")
    env_tip = fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES)}, "eight more cluster types")
    assert {shard_of(ct, 3) for ct in ["cloud", *TYPES]} == {1, 2, 3}  # every shard job has work
    world.promote(None, main)  # pins dev; shardedSchedule: promote renders nothing
    assert fleet.pin("dev") == main and world.open_pulls() == {}
    pinned = fleet.branch_sha(fleet.cp_url, "dev")
    with runner(fleet, "single") as ctx:  # what one job would commit (nothing pushed)
        single = render_commit(ctx, "dev")
    assert single.written.commit is not None

    workflow = shards_caller(world, "dev", 3)
    result = world.cp_act.run("push", world.push_event("dev", before, pinned), workflow, timeout=600)
    succeeded(result)
    jobs = result.job_results()
    # "<caller job>/<workflow name>/Shard K/3", act adds "-K" to a matrix job's name
    shard_jobs = sorted(j for j in jobs if "/Shard " in j)
    assert [bool(re.search(rf"/Shard {k}/3(-{k})?$", j)) for k, j in zip((1, 2, 3), shard_jobs, strict=True)] \
        == [True] * 3, jobs
    assert any(j.endswith("Stitch and propose") for j in jobs), jobs

    # the one PR proposes exactly the single job's commit: same commit id, so the same tree
    head = fleet.branch_sha(fleet.gitops_url, head_branch("dev"))
    assert head == single.written.commit
    gitops = BareRepo(Path(fleet.gitops_url))
    assert gitops.tree_of(head) == gitops.tree_of(single.written.commit)
    pulls = world.open_pulls()
    assert list(pulls) == ["dev"] and pulls["dev"][1] == head and main[:12] in pulls["dev"][2]
    assert env_tip != pinned  # the pin commit is on top of the cluster-type change
    assert result.output("operation", "Stitch and propose", "schedule") == "created"

    # three shard artifacts in, the full plan out
    uploaded = sorted(p.name for p in world.artifacts.glob("run*/*"))
    assert uploaded == ["fleetflow-plan-dev", *(f"fleetflow-shard-dev-{k}-of-3" for k in (1, 2, 3))], uploaded
    for k in (1, 2, 3):
        [folder] = world.artifacts.glob(f"run*/fleetflow-shard-dev-{k}-of-3")
        assert (folder / f"shard-{k}-of-3.json").is_file() and (folder / f"shard-{k}-of-3.bundle").is_file()

    # least privilege: the shard jobs read contents only; the stitch job writes contents and pull requests
    asked = world.tokens_asked()
    readers = [a for a in asked if a["contents"] == "read"]
    writers = [a for a in asked if a["contents"] == "write"]
    assert len(readers) == 3 and all(a["pull_requests"] == a["statuses"] == "" for a in readers), asked
    assert len(writers) == 1 and writers[0]["pull_requests"] == "write" and writers[0]["statuses"] == "read"
    assert {c["path"] for c in world.checkouts()} == {".fleetflow"} and len(world.checkouts()) == 4
