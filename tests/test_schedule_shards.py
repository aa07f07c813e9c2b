"""``fleetflow schedule --shard K/N`` on N runners, then ``--stitch``: each shard renders its cluster types as git
subtrees (one tree per cluster-type folder, one blob per state shard) and saves them with a git bundle; the stitch
job puts them into the GitOps branch's root tree by id and commits once: the same commit a single job gives.

Each job runs with its own cache (as separate runners do), so the stitch job sees the shards' objects only through
their bundles. Putting a folder into a tree by id is git fast-import's ``M 040000 <tree id> <path>`` (filemodify
with a tree, https://man7.org/linux/man-pages/man1/git-fast-import.1.html, "filemodify").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fleetflow.errors import InputError
from fleetflow.forge.git import BareRepo, GitRepos
from fleetflow.promotion.context import Context, head_branch
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import render_commit, schedule_environment
from fleetflow.promotion.shards import ShardSpec, render_shard, shard_of, stitch_environment
from tests.fleet import Fleet, build_bare_repos, environments_file, git
from tests.test_cli_contract import envelope, invoke
from tests.test_gitops_commit import fresh_render, tree_files
from tests.test_promotion import make_local_fleet

TYPES = ["line-a", "line-b", "line-c", "line-d", "line-e", "line-f", "line-g", "line-h"]


def cluster_types(names: list[str], tier: dict[str, str] | None = None) -> str:
    return "---\n".join(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: ClusterType\nmetadata:\n"
        f"  name: {name}\n  labels: {{region: dev, tier: {(tier or {}).get(name, 'standard')}}}\n"
        "spec: {reconciler: flux, namespaceService: namespace, configType: config}\n"
        for name in names
    )


TIER_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: tier-gold
  labels: {{platform-config: "true", tier: gold}}
data:
  REPLICAS: "{replicas}"
"""


def runner(fleet: Fleet, name: str) -> Context:
    """A job on its own runner: the same forge, a cache of its own."""
    return Context(forge=fleet.forge, git=GitRepos(fleet.root / f"runner-{name}"), control_plane=fleet.cp_id,
                   clock=fleet.clock, say=lambda _t: None)


def run_shards(fleet: Fleet, count: int, artifacts: Path) -> None:
    for k in range(1, count + 1):
        render_shard(runner(fleet, f"shard-{k}"), "dev", ShardSpec(k, count), artifacts / f"shard-{k}")


def test_stitched_shards_give_the_single_job_commit(tmp_path: Path) -> None:
    fleet = make_local_fleet(tmp_path)
    gold = {"line-b": "gold", "line-e": "gold"}
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES, gold),
                           "configs-tier.yaml": TIER_CONFIG.format(replicas=2)}, "eight more cluster types")
    assert {shard_of(ct, 3) for ct in ["cloud", *TYPES]} == {1, 2, 3}  # every shard has work
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    person = tmp_path / "person"  # a person's file in a folder the change writes to: kept, and the PR says so
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(person))
    (person / "line-b" / "app-dev" / "NOTES.md").write_text("gold tier\n")
    git(person, "add", "-A")
    git(person, "commit", "-q", "-m", "notes")
    git(person, "push", "-q", "origin", "dev")

    # one change touching a few cluster types: a value for the gold tier, one type gone, one new
    types = [t for t in TYPES if t != "line-c"] + ["line-new"]
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(types, gold),
                           "configs-tier.yaml": TIER_CONFIG.format(replicas=5)}, "gold gets 5 replicas")
    with runner(fleet, "single") as ctx:
        single = render_commit(ctx, "dev")
    assert single.written.commit is not None
    assert fleet.open_pr("dev") is None

    run_shards(fleet, 3, tmp_path / "artifacts")
    manifests = [json.loads(p.read_text()) for p in sorted((tmp_path / "artifacts").rglob("shard-*.json"))]
    for m in manifests:  # each shard wrote only its own cluster types
        spec = ShardSpec.parse(m["shard"])
        assert all(spec.owns(ct) for ct in [*m["folders"], *m["states"]])
    changed = {ct for m in manifests for ct in m["folders"]}
    assert changed == {"line-b", "line-e", "line-c", "line-new"}
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", tmp_path / "artifacts")
    assert outcome.gitops_commit == single.written.commit  # byte-identical: the same commit id
    assert outcome.foreign == single.written.owned.foreign == ["line-b/app-dev/NOTES.md"]
    assert "`line-b/app-dev/NOTES.md`" in fleet.open_pr("dev").body
    assert outcome.operation == "created"
    assert sorted(outcome.changes.changed) == sorted(single.changes.changed)
    assert outcome.changes.removed == single.changes.removed and outcome.changes.added == single.changes.added
    assert outcome.changes.unchanged == single.changes.unchanged
    head = fleet.branch_sha(fleet.gitops_url, head_branch("dev"))
    assert head == single.written.commit
    diff = "".join(single.diff())  # the stitch reads its diff from the two commits: the same text, in the same order
    assert "b/.fleetflow/state.json" in diff and f"```diff\n{diff}```" in fleet.open_pr("dev").body
    committed = tree_files(BareRepo(Path(fleet.gitops_url)), head)
    assert committed.pop("README.md") == b"GitOps\n"  # the GitOps repo's own file, kept
    assert committed.pop("line-b/app-dev/NOTES.md") == b"gold tier\n"
    assert committed == fresh_render(fleet, "dev", tmp_path / "fresh")



def promote_with_more_types(fleet: Fleet) -> None:
    """Eight more cluster types on dev's branch (:data:`TYPES`), then main's tip promoted to dev (its PR opened)."""
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES)}, "eight more cluster types")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))

def test_stitch_refuses_an_incomplete_or_mixed_set_and_pushes_nothing(tmp_path: Path) -> None:
    """A set with a shard missing, or shards of two runs (rendered from different inputs), is an input error (exit
    1): nothing fetched into the GitOps repository, nothing pushed."""
    fleet = make_local_fleet(tmp_path)
    promote_with_more_types(fleet)
    fleet.approve("dev")
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES[:-1])}, "one type fewer")
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    run_shards(fleet, 2, tmp_path / "two")
    (tmp_path / "two" / "shard-2" / "shard-2-of-2.json").unlink()
    with runner(fleet, "stitch") as ctx, pytest.raises(InputError, match="not one complete set"):
        stitch_environment(ctx, "dev", tmp_path / "two")
    fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES[:-2])}, "the branch moves on")
    render_shard(runner(fleet, "shard-2b"), "dev", ShardSpec(2, 2), tmp_path / "two" / "shard-2")
    with runner(fleet, "stitch-2") as ctx, pytest.raises(InputError, match="rendered from different inputs") as err:
        stitch_environment(ctx, "dev", tmp_path / "two")
    assert "shard 1/2 from main@" in str(err.value) and "; shard 2/2 from main@" in str(err.value)
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads  # nothing pushed


def test_a_stitch_whose_environment_branch_moved_is_superseded_and_writes_nothing(tmp_path: Path) -> None:
    """Shards rendered before a push to the environment branch: the stitch answers ``superseded`` (exit 0), writes
    nothing, and says what moved and which run stitches instead; that push starts the schedule workflow again (a
    push made with a GitHub App token or by a person starts workflows; only GITHUB_TOKEN's do not, and fleetflow
    never uses it: https://docs.github.com/en/actions/using-workflows/triggering-a-workflow#triggering-a-workflow-from-a-workflow).
    The newer run's shards and stitch then propose the new inputs."""
    fleet = make_local_fleet(tmp_path)
    promote_with_more_types(fleet)
    fleet.approve("dev")
    run_shards(fleet, 2, tmp_path / "older")
    old_env = fleet.branch_sha(fleet.cp_url, "dev")
    new_env = fleet.push_env("dev", {"cluster-types-lines.yaml": cluster_types(TYPES[:-1])}, "one type fewer")
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", tmp_path / "older")
    assert outcome.operation == "superseded" and outcome.pull_request is None and outcome.env_commit == new_env
    assert f"+ dev@{old_env[:12]} onto" in outcome.message and f"+ dev@{new_env[:12]} onto" in outcome.message
    assert "Nothing was written" in outcome.message
    assert "started a newer run, which renders and stitches the new inputs" in outcome.message
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads and fleet.open_pr("dev") is None
    run_shards(fleet, 2, tmp_path / "newer")
    with runner(fleet, "stitch-2") as ctx:
        assert stitch_environment(ctx, "dev", tmp_path / "newer").operation == "created"
    assert fleet.open_pr("dev") is not None


def test_a_stitch_whose_gitops_branch_moved_is_superseded_and_says_to_run_the_shards_again(tmp_path: Path) -> None:
    """Shards rendered onto a GitOps branch tip that a merge moved since: ``superseded``, nothing written, and no
    event of the control-plane repository follows a merge in the GitOps repository, so the message names the
    workflow's next scheduled run and how to stitch now (run the shard jobs again)."""
    fleet = make_local_fleet(tmp_path)
    promote_with_more_types(fleet)
    run_shards(fleet, 2, tmp_path / "older")  # onto the GitOps branch before the PR below is merged
    fleet.approve("dev")
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", tmp_path / "older")
    assert outcome.operation == "superseded"
    assert "next scheduled run renders and stitches the new inputs; to do it now, run the shard jobs again" in (
        outcome.message)
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads and fleet.open_pr("dev") is None


def test_the_command_line_shards_and_stitches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``fleetflow schedule``: a promotion's single job opened the PR; two shards and a stitch of the
    same inputs give the same commit, so the PR is left as it is. Stitched again after the environment branch
    moved, the same shards are superseded: exit 0, and the step's output and summary say so."""
    from tests.test_github_actions import runner_outputs

    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    monkeypatch.setenv("FLEETFLOW_FORGE", "local")
    monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", str(cp))
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache-promote"))
    assert invoke("promote", "--commit", sha, "--format", "json")[0] == 0
    artifacts = tmp_path / "artifacts"
    for k in (1, 2):
        monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / f"cache-{k}"))
        code, stdout, _ = invoke("schedule", "--environment", "dev", "--shard", f"{k}/2", "--artifact",
                                 artifacts / str(k), "--format", "json")
        assert code == 0, stdout
        assert envelope(stdout)["result"]["shard"] == f"{k}/2"
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache-stitch"))
    code, stdout, _ = invoke("schedule", "--environment", "dev", "--stitch", artifacts, "--format", "json")
    assert code == 0, stdout
    assert envelope(stdout)["result"]["operation"] == "unchanged"
    # a commit on the environment branch after the shards ran: the same artifacts are superseded (exit 0), and the
    # workflow's step outputs say so
    moved = git(tmp_path, "--git-dir", str(cp), "commit-tree", "dev^{tree}", "-p", "dev", "-m", "a newer pin")
    git(tmp_path, "--git-dir", str(cp), "update-ref", "refs/heads/dev", moved)
    for key, value in {"GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum")}.items():
        monkeypatch.setenv(key, value)
    code, stdout, _ = invoke("schedule", "--environment", "dev", "--stitch", artifacts, "--github-actions")
    assert code == 0, stdout
    assert f"dev: superseded: the shards were rendered from main@{sha[:12]} + dev@" in stdout
    assert "::notice title=fleetflow schedule::the shards were rendered from" in stdout
    assert runner_outputs((tmp_path / "out").read_text(encoding="utf-8"))["operation"] == "superseded"
    summary = (tmp_path / "sum").read_text(encoding="utf-8")
    assert "| `dev` | superseded | left as it is |" in summary
    assert "Plan:" not in summary.split("## fleetflow status")[0]


@pytest.mark.parametrize("args", [
    ["--shard", "0/3", "--artifact", "x"], ["--shard", "4/3", "--artifact", "x"], ["--shard", "1/3"],
    ["--shard", "a/b", "--artifact", "x"], ["--shard", "1/2", "--artifact", "x", "--stitch", "y"],
    ["--artifact", "x"],
])
def test_shard_options_misused_are_usage_errors(args: list[str]) -> None:
    code, stdout, _ = invoke("schedule", "--environment", "dev", *args, "--format", "json")
    assert code == 2 and envelope(stdout)["problems"], stdout


def test_a_sharded_environment_is_pinned_and_left_to_the_shard_jobs(tmp_path: Path) -> None:
    """``shardedSchedule: true``: promote pins the environment and renders nothing, reconcile reports the schedule
    due and waits (it never renders it in one job, so it never races the stitch job for the head branch); the shard
    jobs and the stitch open the PR, after which reconcile sees it as any other."""
    from fleetflow.promotion.reconcile import reconcile

    fleet = make_local_fleet(tmp_path)
    main = fleet.push_main(environments_file(sharded=("dev",)), "dev: sharded schedule")
    with fleet.context() as ctx:
        [promoted] = promote_many(ctx, None, main)
    assert promoted.pinned and promoted.schedule is None and "sharded schedule renders it" in promoted.message
    assert fleet.pin("dev") == main and fleet.open_pr("dev") is None
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    with fleet.context() as ctx:
        [dev] = [e for e in reconcile(ctx).environments if e.environment == "dev"]
    assert dev.did == [] and dev.problems == [] and "schedule due" in dev.waiting
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads and fleet.open_pr("dev") is None

    run_shards(fleet, 3, tmp_path / "artifacts")
    with runner(fleet, "stitch") as ctx:
        assert stitch_environment(ctx, "dev", tmp_path / "artifacts").operation == "created"
    with fleet.context() as ctx:
        [dev] = [e for e in reconcile(ctx).environments if e.environment == "dev"]
    assert dev.did == [] and "schedule due" not in dev.waiting and fleet.open_pr("dev") is not None


def test_the_shard_step_answers_its_artifact_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``schedule --shard K/N --github-actions``: the ``artifact-dir`` output names the folder to upload (the
    workflow's actions/upload-artifact step reads it) and the notice says what the shard rendered."""
    from tests.test_github_actions import runner_outputs

    cp, gitops = tmp_path / "control-plane.git", tmp_path / "gitops.git"
    build_bare_repos(tmp_path, str(gitops), str(cp))
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    for key, value in {"FLEETFLOW_FORGE": "local", "FLEETFLOW_CONTROL_PLANE": str(cp),
                       "FLEETFLOW_CACHE_DIR": str(tmp_path / "cache"), "GITHUB_OUTPUT": str(tmp_path / "out"),
                       "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}.items():
        monkeypatch.setenv(key, value)
    assert invoke("promote", "--commit", sha, "--format", "json")[0] == 0
    code, stdout, _ = invoke("schedule", "--environment", "dev", "--shard", "1/1", "--artifact",
                             tmp_path / "artifact", "--format", "json", "--github-actions")
    assert code == 0, stdout
    outputs = runner_outputs((tmp_path / "out").read_text(encoding="utf-8"))
    assert outputs["artifact-dir"] == str(tmp_path / "artifact") and outputs["shard"] == "1/1"
    assert (tmp_path / "artifact" / "shard-1-of-1.json").is_file()
    assert "::notice title=fleetflow schedule::dev: shard 1/1: " in stdout
    assert "shard 1/1" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_the_schedule_action_takes_a_shard_or_a_stitch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """actions/schedule's ``shard`` and ``stitch`` inputs, checked by actions/_shared/run.py before anything is
    installed, then passed as ``--shard K/N --artifact <fresh folder under $RUNNER_TEMP>`` or ``--stitch``."""
    from tests.test_workflow_files import RECORD_ARGV, action_env, assert_refused, fake_venv, run

    assert_refused(tmp_path, capsys, "schedule", [
        ({"shard": "0/3"}, "input shard: '0/3' is not K/N with 1 <= K <= N"),
        ({"shard": "4/3"}, "input shard: '4/3' is not K/N"),
        ({"shard": "1/3;id"}, "input shard: '1/3;id' is not K/N"),
        ({"stitch": "../elsewhere"}, "input stitch: '../elsewhere' is not a folder"),
        ({"shard": "1/2", "stitch": "x"}, "inputs shard and stitch go apart"),
    ], forge="local", environment="dev")

    venv = fake_venv(tmp_path, RECORD_ARGV)
    temp, workspace = tmp_path / "runner-temp", tmp_path / "workspace"
    temp.mkdir()
    env = action_env(tmp_path, forge="local", environment="dev", shard="2/3")
    env.update(RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(workspace), RECORD=str(tmp_path / "argv.json"))
    assert run.main(["schedule"], env, installer=lambda: venv) == 0
    argv = json.loads((tmp_path / "argv.json").read_text())
    artifact = Path(argv[argv.index("--artifact") + 1])
    assert argv[argv.index("--shard") + 1] == "2/3" and artifact.parent == temp and artifact.is_dir()
    env = action_env(tmp_path, forge="local", environment="dev", stitch=".fleetflow-shards")
    env.update(GITHUB_WORKSPACE=str(workspace), RECORD=str(tmp_path / "argv.json"))
    assert run.main(["schedule"], env, installer=lambda: venv) == 0
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--stitch") + 1] == str(workspace / ".fleetflow-shards") and "--shard" not in argv


def test_the_shards_workflow_runs_a_matrix_and_one_stitch() -> None:
    """fleetflow-schedule-shards.yml: N shard jobs from a matrix built from the ``shards`` input (a matrix makes at
    most 256 jobs per run: GitHub's workflow syntax, jobs.<job_id>.strategy.matrix), each uploading its shard under a
    name of its own (artifacts are immutable per run since actions/upload-artifact v4: ``overwrite`` for a re-run
    job); one stitch job downloads them by ``pattern`` (actions/download-artifact's README, "Download multiple
    (filtered) Artifacts"), in a concurrency group per environment that never cancels a running stitch, while a
    newer shard K cancels an older one. Every job runs fleetflow from the workflow's own commit."""
    import yaml

    root = Path(__file__).resolve().parent.parent
    doc = yaml.safe_load((root / ".github" / "workflows" / "fleetflow-schedule-shards.yml").read_text())
    jobs = doc["jobs"]
    assert doc["permissions"] == {} and all(job["permissions"] == {} for job in jobs.values())
    assert "seq -s , 1" in jobs["shards"]["steps"][-1]["run"]
    shard, stitch = jobs["shard"], jobs["stitch"]
    assert shard["needs"] == "shards" and stitch["needs"] == "shard"
    assert shard["strategy"]["matrix"] == {"shard": "${{ fromJSON(needs.shards.outputs.matrix) }}"}
    assert shard["concurrency"]["cancel-in-progress"] is True and "${{ matrix.shard }}" in shard["concurrency"]["group"]
    assert stitch["concurrency"] == {"group": "fleetflow-stitch-${{ github.repository }}-${{ inputs.environment }}",
                                     "cancel-in-progress": False}
    for job in (shard, stitch):
        [checkout] = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
        assert checkout["with"]["ref"] == "${{ job.workflow_sha || inputs.fleetflow-ref }}"
        assert checkout["with"]["path"] == ".fleetflow" and checkout["with"]["persist-credentials"] is False
    [render] = [s for s in shard["steps"] if s.get("uses") == "./.fleetflow/actions/schedule"]
    assert render["with"]["shard"] == "${{ matrix.shard }}/${{ inputs.shards }}"
    [upload] = [s for s in shard["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    name = "fleetflow-shard-${{ inputs.environment }}-${{ matrix.shard }}-of-${{ inputs.shards }}"
    assert upload["with"]["name"] == name and upload["with"]["overwrite"] is True
    assert upload["with"]["path"] == "${{ steps.schedule.outputs.artifact-dir }}"
    [download] = [s for s in stitch["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert download["with"]["pattern"] == "fleetflow-shard-${{ inputs.environment }}-*-of-${{ inputs.shards }}"
    [commit] = [s for s in stitch["steps"] if s.get("uses") == "./.fleetflow/actions/schedule"]
    assert commit["with"]["stitch"] == download["with"]["path"]


def test_a_gitops_branch_that_does_not_exist_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A GitOpsRepo whose ``spec.branch`` names a branch its repository does not have (a typo; found by
    ``tests/test_fleet_edits.py``'s sharded search, seed 6, edit 6): the render went ahead into an empty tree, then
    promote, schedule and the stitch pushed ``fleetflow/dev`` and failed to open the PR, exit 3, leaving the pin and
    a head branch with no PR (GitHub's "Create a pull request", https://docs.github.com/en/rest/pulls/pulls#create-
    a-pull-request: ``base`` is "the name of the branch you want the changes pulled into. This should be an
    existing branch on the current repository"; the local forge refuses it the same way). Every path that renders
    now refuses first, at the GitOpsRepo's line, and writes nothing: promote (rendered or, when sharded, checked),
    schedule, a shard job and the stitch."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    good = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:gitops-repo.yaml")
    typo = good.replace("branch: dev", "branch: nope")
    line = 1 + next(i for i, text in enumerate(typo.splitlines()) if "nope" in text)

    def refs() -> list[dict[str, str]]:  # both repositories' refs: branches, and the local forge's records
        return [BareRepo(Path(url)).refs("refs/") for url in (fleet.cp_url, fleet.gitops_url)]

    def refused(run: Callable[[], object]) -> None:
        before = refs()
        with pytest.raises(InputError) as found:
            run()
        [problem] = found.value.problems()
        assert problem.location is not None
        assert (problem.location.file, problem.location.line) == ("dev/gitops-repo.yaml", line)
        assert "GitOpsRepo dev names spec.branch 'nope', which" in problem.message, problem
        assert problem.hint is not None and "fleetflow init" in problem.hint
        assert refs() == before

    fleet.push_env("dev", {"gitops-repo.yaml": typo}, "a typo")
    second = fleet.push_main({"templates/extra.yaml": "# another commit\n"}, "second")
    with fleet.context() as ctx:
        refused(lambda: schedule_environment(ctx, "dev"))
        refused(lambda: promote_many(ctx, None, second))
    fleet.push_env("dev", {"gitops-repo.yaml": good}, "the typo fixed")
    sharded = fleet.push_main(environments_file(sharded=("dev",)), "dev: sharded schedule")
    with fleet.context() as ctx:
        promote_many(ctx, None, sharded)
    run_shards(fleet, 2, tmp_path / "artifacts")  # rendered while the branch was right; then the typo again
    fleet.push_env("dev", {"gitops-repo.yaml": typo}, "the typo again")
    with runner(fleet, "stitch") as ctx:
        refused(lambda: stitch_environment(ctx, "dev", tmp_path / "artifacts"))
    refused(lambda: render_shard(runner(fleet, "shard-again"), "dev", ShardSpec(1, 2), tmp_path / "again"))
    third = fleet.push_main({"templates/extra.yaml": "# a third commit\n"}, "third")
    with fleet.context() as ctx:
        refused(lambda: promote_many(ctx, None, third))


def test_a_sharded_schedule_due_for_longer_than_its_workflow_runs_is_a_warning_naming_where_to_look(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sharded environment pinned to a main commit whose render fails at an assignment (a template names a
    variable no assignment has: found only by rendering, which a sharded ``promote`` does not do). Its shard job
    stops at the line, and nothing renders it until a fix. Until 2026-11-29 reconcile said "schedule due ...: the
    sharded schedule renders it" on every run, exit 0, for days, and check-rollout sent people to ``fleetflow
    schedule --environment``, which a sharded environment never runs. Now both say how long it has been due: from
    the later of the environment branch commit's time and the time of ``fleetflow/<env>`` on the pinned commit (the
    ``updated_at`` of a status in GitHub's combined status: ``simple-commit-status`` in
    tests/ghstub/openapi-subset.json; the pin commit is dated as the main commit, three days old here, so its time
    alone would warn at once). Past
    ``SHARDED_OVERDUE`` (longer than a run of the fleetflow-schedule-shards workflow takes: its jobs'
    ``timeout-minutes`` 5 + 60 + 30) reconcile warns, exit 0, naming the workflow's runs and the ``validate``
    command that shows the problem locally; that command finds it."""
    from datetime import timedelta

    from fleetflow.promotion.check_rollout import check_rollout
    from fleetflow.promotion.promote import SHARDED_SCHEDULE
    from fleetflow.promotion.reconcile import reconcile
    from fleetflow.promotion.shards import SHARDED_OVERDUE

    fleet = make_local_fleet(tmp_path)
    stamp = f"{int((fleet.clock() - timedelta(days=3)).timestamp())} +0000"  # the main commit is three days old
    monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)
    monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", "main:templates/flux.yaml")
    typo = text.replace("name: {{ DeploymentTargetName }}", "name: {{ DeploymentTargetNam }}")
    main = fleet.push_main({**environments_file(sharded=("dev",)), "templates/flux.yaml": typo}, "sharded; a typo")
    with fleet.context() as ctx:
        [promoted] = promote_many(ctx, None, main)
    assert promoted.pinned and promoted.schedule is None
    with runner(fleet, "shards") as ctx, pytest.raises(InputError) as stopped:
        for k in (1, 2):
            render_shard(ctx, "dev", ShardSpec(k, 2), tmp_path / f"shard-{k}")
    assert "undefined variable: 'DeploymentTargetNam' is undefined" in str(stopped.value)
    heads = BareRepo(Path(fleet.gitops_url)).refs("refs/heads/")
    inputs = f"main@{main[:12]} + dev@{fleet.branch_sha(fleet.cp_url, 'dev')[:12]}"

    def look() -> tuple[list[str], str, int]:
        with fleet.context() as ctx:
            outcome = reconcile(ctx)
        [dev] = [e for e in outcome.environments if e.environment == "dev"]
        assert dev.did == [] and dev.problems == []
        return [str(w) for w in outcome.warnings()], dev.waiting, outcome.exit_code

    due = f"({inputs}): {SHARDED_SCHEDULE}"
    assert look() == ([], f"schedule due for less than a minute {due}", 0)
    fleet.clock.advance(SHARDED_OVERDUE - timedelta(minutes=1))
    assert look() == ([], f"schedule due for 1h59m {due}", 0)
    fleet.clock.advance(timedelta(minutes=2))
    warnings, waiting, code = look()
    overdue = (f"the sharded schedule of {inputs} has been due for 2h1m, longer than a run of the "
               "fleetflow-schedule-shards workflow takes (2h): it did not run, or a shard or the stitch job failed, "
               "and nothing else renders this environment")
    hint = ("look at the fleetflow-schedule-shards workflow's runs for dev: a failed shard job names the problem at "
            "its line. Fix it in a commit on main and promote that, or on the branch dev; re-run the workflow if "
            "the runner failed. To see a render problem locally, in a checkout of the control plane: git checkout "
            "dev && fleetflow validate --into dev --environment dev")
    assert warnings == [f"dev: {overdue} (hint: {hint})"] and code == 0
    assert waiting == f"schedule due for 2h1m {due}"
    assert BareRepo(Path(fleet.gitops_url)).refs("refs/heads/") == heads  # reconcile still renders nothing
    with fleet.context() as ctx:
        gate = check_rollout(ctx, "dev")
    assert gate.state == "waiting-for-merge" and gate.description == (
        f"waiting for main@{main[:12]} to be proposed to dev: no PR branch carries it yet (no branch fleetflow/dev): "
        f"{overdue}; {hint}")

    # the command the hint names shows the problem, at its line, in a checkout of the control plane
    work = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", fleet.cp_url, str(work))
    git(work, "checkout", "-q", "dev")
    monkeypatch.chdir(work)
    code, stdout, _ = invoke("validate", "--into", "dev", "--environment", "dev", "--format", "json")
    [problem] = envelope(stdout)["problems"]
    assert code == 1 and "undefined variable: 'DeploymentTargetNam'" in problem["message"]
    assert problem["location"]["file"].endswith("templates/flux.yaml") and problem["location"]["line"] == 12

    # the command line: a warning in the envelope (an annotation in a workflow run), exit 0
    for key, value in {"FLEETFLOW_FORGE": "local", "FLEETFLOW_CONTROL_PLANE": fleet.cp_url,
                       "FLEETFLOW_CACHE_DIR": str(tmp_path / "cache-cli")}.items():
        monkeypatch.setenv(key, value)
    code, stdout, _ = invoke("reconcile", "--environment", "dev", "--format", "json")
    data = envelope(stdout)
    assert code == 0 and data["problems"] == [] and [w["hint"] for w in data["warnings"]] == [hint]
    assert data["warnings"][0]["message"].startswith(f"dev: the sharded schedule of {inputs} has been due for ")
