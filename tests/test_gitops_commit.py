"""The GitOps commit is written as git objects: its tree equals a fresh ``fleetflow render`` byte for byte, files
fleetflow did not write are kept, and unchanged folders keep their tree ids."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetflow.cli import main as cli
from fleetflow.forge.git import BareRepo, GitRepos
from fleetflow.promotion.context import pinned
from fleetflow.promotion.gitops import GitOpsTree
from fleetflow.promotion.gitops import survey as gitops_survey
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.render.diff import plan_diff
from fleetflow.render.incremental import (
    PART_DIR,
    STATE_PATH,
    STATE_VERSION,
    WHOLE_INDEX_VERSION,
    RenderState,
    is_state_file,
)
from fleetflow.render.output import FolderTree
from fleetflow.render.output import survey as output_survey
from fleetflow.render.pipeline import Meta, render_environment
from tests.fleet import Fleet, env_files, git
from tests.test_promotion import make_local_fleet
from tests.test_render import STATUS_TEMPLATE

FOREIGN = {"README.md": b"GitOps\n", "notes/keep.md": b"ours, not fleetflow's\n",
           "cloud/_platform/extra.yaml": b"kind: Namespace\n"}
EDGE_TYPE = """\
apiVersion: fleetflow.dev/v1alpha1
kind: ClusterType
metadata:
  name: edge
  labels: {region: dev}
spec: {reconciler: flux, namespaceService: namespace, configType: config}
"""


def tree_files(repo: BareRepo, rev: str) -> dict[str, bytes]:
    entries = [e for e in repo.ls_tree(rev, recursive=True, trees=False) if e.kind == "blob"]
    data = repo.blobs(e.sha for e in entries)
    return {e.path: data[e.sha] for e in entries}


def fresh_render(fleet: Fleet, env: str, work: Path) -> dict[str, bytes]:
    """``fleetflow render`` of ``env`` at its pin into an empty folder, through the command line."""
    repos = GitRepos(work / "cache")
    env_sha = fleet.branch_sha(fleet.cp_url, env)
    repos.fetch(fleet.cp_url, ["main", env])
    main_dir = repos.export(fleet.cp_url, fleet.pin(env), work / "main")
    env_dir = repos.export(fleet.cp_url, env_sha, work / "env")
    out = work / "out"
    args = ["render", "--main", str(main_dir), "--env", str(env_dir), "--environment", env, "--output", str(out),
            "--main-commit", fleet.pin(env), "--env-commit", env_sha]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    files = {}
    for folder, _, names in os.walk(out):
        for name in names:
            path = Path(folder) / name
            files[path.relative_to(out).as_posix()] = path.read_bytes()
    return files


def add_foreign_files(fleet: Fleet, env: str) -> None:
    seed = fleet.root / "gitops-seed"
    git(seed, "checkout", "-q", "-B", env)
    for path, data in FOREIGN.items():
        (seed / path).parent.mkdir(parents=True, exist_ok=True)
        (seed / path).write_bytes(data)
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "files fleetflow did not write")
    git(seed, "push", "-q", "-f", fleet.gitops_url, f"HEAD:refs/heads/{env}")


def check_head_equals_render(fleet: Fleet, env: str, work: Path) -> str:
    head = fleet.branch_sha(fleet.gitops_url, f"fleetflow/{env}")
    committed = tree_files(BareRepo(Path(fleet.gitops_url)), head)
    rendered = fresh_render(fleet, env, work)
    assert {p: d for p, d in committed.items() if p not in FOREIGN} == rendered
    assert {p: committed.get(p) for p in FOREIGN} == FOREIGN
    return head


def test_the_gitops_commit_is_a_fresh_render_plus_foreign_files(tmp_path: Path) -> None:
    fleet = make_local_fleet(tmp_path)
    add_foreign_files(fleet, "dev")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    first = check_head_equals_render(fleet, "dev", tmp_path / "r1")

    fleet.approve("dev")  # the next schedule starts from the merged tree and its state
    fleet.push_env("dev", {"cluster-types-edge.yaml": EDGE_TYPE}, "a second cluster type")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "created"
    second = check_head_equals_render(fleet, "dev", tmp_path / "r2")
    repo = BareRepo(Path(fleet.gitops_url))
    assert any(p.startswith("edge/") for p in tree_files(repo, second))
    # the cluster type that did not change keeps its tree id: it was reused, not rebuilt from files; its state shard
    # was carried over unread (the same blob), and the new cluster type got its own
    assert repo.resolve(f"{first}:cloud") == repo.resolve(f"{second}:cloud")
    assert repo.resolve(f"{first}:.fleetflow/state/cloud.json") == repo.resolve(f"{second}:.fleetflow/state/cloud.json")
    assert repo.resolve(f"{second}:.fleetflow/state/edge.json") is not None

    fleet.approve("dev")
    fleet.push_env("dev", {"cluster-types-edge.yaml": ""}, "the second cluster type goes")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "created"
    third = check_head_equals_render(fleet, "dev", tmp_path / "r3")
    assert not any(p.startswith("edge/") for p in tree_files(repo, third))
    assert ".fleetflow/state/edge.json" not in tree_files(repo, third)  # its shard went with it
    assert repo.resolve(f"{first}:cloud") == repo.resolve(f"{third}:cloud")


def test_no_change_writes_no_commit(tmp_path: Path) -> None:
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    objects = sorted(os.listdir(Path(fleet.gitops_url) / "objects"))
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "none" and outcome.gitops_commit is None
    assert sorted(os.listdir(Path(fleet.gitops_url) / "objects")) == objects  # nothing pushed


def test_plan_and_the_pr_body_show_one_diff(tmp_path: Path) -> None:
    """``plan`` diffs a render against a folder, ``schedule``'s PR body against the GitOps commit's tree: the same
    ``plan_diff`` over both, so they show the same text. A file fleetflow did not write inside an assignment
    folder is kept by both writers, so neither diff shows it going (the PR body's diff once did)."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    head = fleet.branch_sha(fleet.gitops_url, "dev")
    files = tree_files(BareRepo(Path(fleet.gitops_url)), head)
    state = next(p for p in files if p.endswith(STATE_PATH))
    root = state.removesuffix(STATE_PATH).rstrip("/")
    prefix = f"{root}/" if root else ""
    read = lambda paths: {p: files.get(prefix + p) for p in paths}  # noqa: E731 - the index's parts, its shards
    assignment = sorted(RenderState.from_bytes(files[state], read).assignments)[0]
    runbook = f"{assignment}/runbook.md"
    seed = fleet.root / "gitops-seed"
    git(seed, "fetch", "-q", fleet.gitops_url, "dev")
    git(seed, "checkout", "-q", "-B", "dev", "FETCH_HEAD")
    (seed / root / runbook).write_bytes(b"how to page the team\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "a runbook next to the manifests")
    git(seed, "push", "-q", fleet.gitops_url, "HEAD:refs/heads/dev")
    fleet.push_env("dev", {"cluster-types-edge.yaml": EDGE_TYPE}, "a second cluster type")
    with fleet.context() as ctx:
        at = pinned(ctx, "dev", required=True)
        assert at is not None
        base = ctx.git.fetch(at.gitops_url, ["dev"])["dev"]
        tree = GitOpsTree(ctx.git.mirror(at.gitops_url), base, root)
        tree.read_state()
        result = render_environment(at.plane, "dev", previous=None, meta=Meta(at.main_sha, at.env_sha))
        folder = ctx.git.export(at.gitops_url, tree.commit or "", tmp_path / "checkout") / root
    in_git, on_disk = gitops_survey(tree, result, None), output_survey(folder, result, None)
    assert in_git == on_disk and runbook in in_git.foreign
    diff = plan_diff(tree, result, in_git)
    assert diff == plan_diff(FolderTree(folder), result, on_disk)
    assert "b/edge/" in diff and runbook not in diff
    cut = plan_diff(tree, result, in_git, limit=10)  # stops after the first file that differs
    assert diff.startswith(cut) and 10 < len(cut) < len(diff)
    shown = [line.removeprefix("+++ b/") for line in diff.splitlines() if line.startswith("+++ b/")]
    state = [p for p in shown if is_state_file(p)]
    assert state[0] == STATE_PATH and len(state) > 1  # the index changed, and the shard of the new cluster type
    assert shown == sorted(p for p in shown if p not in state) + state  # the manifests first, the state last
    assert ".fleetflow/" not in cut  # a diff cut at the first file shows a manifest, not the state


def test_listings_are_what_ls_tree_shows(tmp_path: Path) -> None:
    """``BareRepo.listings`` (one ``cat-file --batch`` of the folders' trees, what the no-change check reads) gives
    the entries ``ls-tree`` gives for each folder; a missing folder and a file are None."""
    fleet = make_local_fleet(tmp_path)
    add_foreign_files(fleet, "dev")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    repo = BareRepo(Path(fleet.gitops_url))
    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    folders = sorted({e.path for e in repo.ls_tree(head, recursive=True) if e.kind == "tree"})
    assert "cloud/_platform" in folders and ".fleetflow/state" in folders
    found = repo.listings(head, [*folders, "no/such", "README.md"])
    for folder in folders:
        assert found[folder] == repo.ls_tree(head, [f"{folder}/"]), folder
    assert found["no/such"] is None and found["README.md"] is None
    assert repo.listings(head, []) == {}


def test_files_lists_what_lies_under_the_folders_at_any_depth(tmp_path: Path) -> None:
    """``GitOpsTree.files`` reads only the folders asked for (their trees, level by level), and gives what a
    filter over the whole ``ls-tree -r`` gives: files at any depth under them (a foreign sub-folder too, and one
    whose name holds a newline, which ``cat-file --batch`` cannot be asked for), nothing for a missing folder or
    a path that is a file, each file once when folders nest; paths relative to the output root."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    repo = BareRepo(Path(fleet.gitops_url))
    head = fleet.branch_sha(fleet.gitops_url, "dev")
    state = next(e.path for e in repo.ls_tree(head, recursive=True) if e.path.endswith(STATE_PATH))
    root = state.removesuffix(STATE_PATH).rstrip("/")
    prefix = f"{root}/" if root else ""
    assignment = next(e.path for e in repo.ls_tree(head, [f"{prefix}cloud/"]) if e.kind == "tree"
                      and not e.path.endswith("/_status"))[len(prefix):]
    seed = fleet.root / "gitops-seed"
    git(seed, "fetch", "-q", fleet.gitops_url, "dev")
    git(seed, "checkout", "-q", "-B", "dev", "FETCH_HEAD")
    for extra in ("docs/deep/er/notes.md", "odd\nname/x.md"):
        (seed / prefix / assignment / extra).parent.mkdir(parents=True, exist_ok=True)
        (seed / prefix / assignment / extra).write_bytes(b"a person's file\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "files in sub-folders of an assignment folder")
    git(seed, "push", "-q", fleet.gitops_url, "HEAD:refs/heads/dev")
    head = fleet.branch_sha(fleet.gitops_url, "dev")
    tree = GitOpsTree(repo, head, root)
    everything = {e.path[len(prefix):]: e.sha for e in repo.ls_tree(head, recursive=True, trees=False)
                  if e.kind == "blob" and e.path.startswith(prefix)}
    folders = [assignment, f"{assignment}/docs", "cloud/_status", ".fleetflow/state", "no/such",
               f"{assignment}/docs/deep/er/notes.md"]

    def under(path: str) -> bool:
        return any(path.startswith(f"{f}/") for f in folders)

    listed = tree.files(folders)
    assert listed == {p: sha for p, sha in everything.items() if under(p)}
    assert f"{assignment}/docs/deep/er/notes.md" in listed and f"{assignment}/odd\nname/x.md" in listed
    assert not any(p.startswith("cloud/") and not under(p) for p in listed)  # nothing else of the cluster type
    assert tree.files([]) == {} and GitOpsTree(repo, None, root).files([assignment]) == {}


DEV_FILES = env_files("dev", "", "")  # the fleet's dev branch files (the repos do not matter for these two)
REPORTING_TYPE = DEV_FILES["cluster-types.yaml"].replace("configType: config}", "configType: config, "
                                                         "statusReporter: reporter}")


def test_a_status_folder_is_looked_at_only_when_its_reporter_inputs_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schedule renders a cluster type's status reporter again only when what it is rendered from changed (the
    index's reporter fingerprints); otherwise its ``_status/`` folder is neither listed nor written, and keeps its
    tree id. Either way the commit is what a fresh ``render`` gives."""
    fleet = make_local_fleet(tmp_path)
    add_foreign_files(fleet, "dev")
    fleet.push_main({"templates/reporter.yaml": STATUS_TEMPLATE}, "a status reporter template")
    fleet.push_env("dev", {"cluster-types.yaml": REPORTING_TYPE}, "cloud reports its rollouts")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    first = check_head_equals_render(fleet, "dev", tmp_path / "r1")
    repo = BareRepo(Path(fleet.gitops_url))
    alert = b"kind: Alert\ncluster-type: cloud\ncontexts: "
    assert repo.read_file(first, "cloud/_status/reporter.yaml") == alert + b"flux/dev-1,flux/dev-2\n"

    listed: list[str] = []
    listings = GitOpsTree.listings

    def spy(self: GitOpsTree, folders: list[str]) -> dict[str, object]:
        listed.extend(folders)
        return listings(self, folders)  # type: ignore[return-value]

    monkeypatch.setattr(GitOpsTree, "listings", spy)
    fleet.approve("dev")
    fleet.push_env("dev", {"configs.yaml": DEV_FILES["configs.yaml"].replace("LOG_LEVEL: info", "LOG_LEVEL: debug")},
                   "more logs")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "created"
    second = check_head_equals_render(fleet, "dev", tmp_path / "r2")
    assert listed and not any("_status" in f for f in listed)
    assert repo.resolve(f"{first}:cloud/_status") == repo.resolve(f"{second}:cloud/_status")

    fleet.approve("dev")
    listed.clear()
    fleet.push_env("dev", {"clusters.yaml": (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dev-3\n"
        "spec:\n  clusterType: cloud\n  statusContext: flux/dev-3\n")}, "one cluster instead of two")
    with fleet.context() as ctx:
        assert schedule_environment(ctx, "dev").operation == "created"
    third = check_head_equals_render(fleet, "dev", tmp_path / "r3")
    assert "cloud/_status" in listed
    assert repo.read_file(third, "cloud/_status/reporter.yaml") == alert + b"flux/dev-3\n"


def test_a_schedule_over_a_version_2_state_converts_it_and_the_pr_says_so(tmp_path: Path) -> None:
    """A GitOps branch whose state an earlier fleetflow wrote (version 2: the whole index in ``state.json``, no
    parts): a schedule with nothing to render leaves it as it is (no PR only for the format); the next change's PR
    converts it (the index and its parts, the shards kept) and its body says so."""
    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    fleet.approve("dev")
    state = fleet.gitops_state("dev")
    whole = {
        "apiVersion": "fleetflow.dev/v1alpha1", "kind": "RenderState", "version": 2, "environment": state.environment,
        "mainCommit": state.main_commit, "envCommit": state.env_commit, "engine": state.engine,
        "clusters": [{"name": c.name, "clusterType": c.cluster_type, "statusContext": c.status_context}
                     for c in state.clusters],
        "configKeys": state.config_keys,
        "fingerprints": state.fingerprints.to_json() if state.fingerprints else None,
        "shards": {ct: {"assignments": len(s), "members": s.members} for ct, s in state.assignments.shards.items()},
    }
    seed = fleet.root / "gitops-seed"
    git(seed, "fetch", "-q", fleet.gitops_url, "dev")
    git(seed, "checkout", "-q", "-B", "dev", "FETCH_HEAD")
    git(seed, "rm", "-q", "-r", PART_DIR)
    (seed / STATE_PATH).write_text(json.dumps(whole, indent=2) + "\n")
    git(seed, "commit", "-q", "-am", "the state as fleetflow 2 wrote it")
    git(seed, "push", "-q", fleet.gitops_url, "HEAD:refs/heads/dev")
    assert fleet.gitops_state("dev").version == WHOLE_INDEX_VERSION

    with fleet.context() as ctx:
        nothing = schedule_environment(ctx, "dev")
    assert nothing.operation == "none" and fleet.open_pr("dev") is None
    fleet.push_env("dev", {"cluster-types-edge.yaml": EDGE_TYPE}, "a second cluster type")
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "created", outcome.message
    pr = fleet.open_pr("dev")
    assert pr is not None and "moves fleetflow's state from format 2 to 3" in pr.body
    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    assert fleet.gitops_state("dev", head).version == STATE_VERSION
    files = tree_files(BareRepo(Path(fleet.gitops_url)), head)
    assert any(p.startswith(f"{PART_DIR}/") for p in files)
    fleet.approve("dev")
    fleet.push_env("dev", {"cluster-types-edge2.yaml": EDGE_TYPE.replace("name: edge", "name: edge2")},
                   "a third cluster type")
    with fleet.context() as ctx:
        later = schedule_environment(ctx, "dev")
    assert later.operation == "created" and "fleetflow's state" not in fleet.open_pr("dev").body  # once


def test_a_schedule_says_which_files_it_kept_that_fleetflow_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file a person put in a folder the PR writes to is kept, and the PR's description, the command's text and
    its JSON (``foreign``, as ``render`` names them) list it, so the reviewer sees what the clusters will apply
    besides the rendered manifests (until 2026-11-28 only ``render`` listed them). Folders the change does not write
    to are not looked at (the schedule reads only what changed), and files outside cluster-type folders never."""
    from tests.test_cli_contract import envelope, invoke

    fleet = make_local_fleet(tmp_path)
    add_foreign_files(fleet, "dev")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    body = fleet.open_pr("dev").body
    assert "Files kept that fleetflow did not write (1)" in body and "`cloud/_platform/extra.yaml`" in body
    assert "README.md" not in body and "notes/keep.md" not in body
    fleet.approve("dev")
    person = tmp_path / "person"  # a person adds a runbook to an assignment's folder on the GitOps branch
    git(tmp_path, "clone", "-q", "-b", "dev", fleet.gitops_url, str(person))
    (person / "cloud" / "app-dev" / "RUNBOOK.md").write_text("call the platform team\n")
    git(person, "add", "-A")
    git(person, "commit", "-q", "-m", "a runbook")
    git(person, "push", "-q", "origin", "dev")

    fleet.push_env("dev", {"configs.yaml": DEV_FILES["configs.yaml"].replace("LOG_LEVEL: info", "LOG_LEVEL: debug")},
                   "more logs")
    monkeypatch.setenv("FLEETFLOW_FORGE", "local")
    monkeypatch.setenv("FLEETFLOW_CONTROL_PLANE", fleet.cp_url)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache-cli"))
    code, stdout, _ = invoke("schedule", "--environment", "dev")
    assert code == 0, stdout
    assert "Kept 1 file not managed by fleetflow (not in its state):\n  cloud/app-dev/RUNBOOK.md" in stdout
    body = fleet.open_pr("dev").body
    assert "Files kept that fleetflow did not write (1)" in body and "`cloud/app-dev/RUNBOOK.md`" in body
    assert "extra.yaml" not in body  # in a folder this change does not write to: not looked at
    fleet.push_env("dev", {"configs.yaml": DEV_FILES["configs.yaml"].replace("LOG_LEVEL: info", "LOG_LEVEL: warn")},
                   "fewer logs")
    code, stdout, _ = invoke("schedule", "--environment", "dev", "--format", "json")
    assert code == 0, stdout
    assert envelope(stdout)["result"]["foreign"] == ["cloud/app-dev/RUNBOOK.md"]
    committed = tree_files(BareRepo(Path(fleet.gitops_url)), fleet.branch_sha(fleet.gitops_url, "fleetflow/dev"))
    assert {p: committed.get(p) for p in FOREIGN} == FOREIGN
    assert committed["cloud/app-dev/RUNBOOK.md"] == b"call the platform team\n"
