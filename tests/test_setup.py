"""``fleetflow init`` and ``fleetflow doctor`` on both forges (the local forge; the GitHub stand-in with PyGithub).

Which branch must carry which workflow file follows GitHub's rules for where a run's workflow file is read from
(https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows):
``push`` runs the file of the pushed commit ("the workflow file ... in the commit that was pushed" -> every
control-plane environment branch); ``status``, ``schedule``, ``workflow_dispatch`` and ``repository_dispatch``
run the file on the default branch ("Last commit on default branch"); ``pull_request`` reads it from the merge
ref (the GitOps environment branches, the PRs' bases). The App's installation permissions come from
``GET /repos/{owner}/{repo}/installation`` (REST: "Get a repository installation for the authenticated app",
``permissions``); ``allow_auto_merge`` from ``GET /repos/{owner}/{repo}``; the default branch is set with
``PATCH /repos/{owner}/{repo}`` (``default_branch``), PyGithub's ``Repository.edit``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fleetflow.cli import main as cli
from fleetflow.errors import ForgeError, GitError
from fleetflow.forge.base import Forge
from fleetflow.forge.git import GitRepos
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.bootstrap import MARKER, WORKFLOW_FILE, apply_init, plan_init
from fleetflow.promotion.context import Context
from fleetflow.promotion.doctor import diagnose
from fleetflow.promotion.promote import promote
from tests.fleet import ENVIRONMENTS, Fleet, environments_file, git
from tests.ghstub.fixtures import github_stub  # noqa: F401
from tests.ghstub.pushrefusals import protected, refuse_pushes
from tests.ghstub.server import GitHubStub
from tests.ghstub.state import Ruleset
from tests.test_promotion import FORGES, first_commit, make_github_fleet, make_local_fleet

FAST = {"retries": 3, "backoff_factor": 0, "seconds_between_requests": 0, "seconds_between_writes": 0}


class Pair:
    """An empty control-plane and GitOps repository pair on one forge, with a way to look at their refs."""

    def __init__(self, forge: Forge, cp: str, gitops: str, cp_path: Path, gitops_path: Path, cache: Path) -> None:
        self.forge, self.cp, self.gitops = forge, cp, gitops
        self.cp_path, self.gitops_path, self.cache = cp_path, gitops_path, cache

    def repos(self) -> GitRepos:
        return GitRepos(self.cache)

    def refs(self) -> dict[str, str]:
        out = {}
        for role, repo, path in (("cp.git", self.cp, self.cp_path), ("gitops.git", self.gitops, self.gitops_path)):
            listing = git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
            for line in listing.splitlines():
                name, sha = line.split()
                out[f"{role}:{name}"] = sha
            out[f"{role}:HEAD"] = "refs/heads/" + self.forge.default_branch(repo)
        return out

    def show(self, path: Path, branch: str, file: str) -> str:
        return git(path, "show", f"refs/heads/{branch}:{file}")


@pytest.fixture(params=FORGES)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    cp_path, gitops_path = tmp_path / "cp.git", tmp_path / "gitops.git"
    if request.param == "local":
        for path in (cp_path, gitops_path):
            git(tmp_path, "init", "-q", "--bare", "--initial-branch=master", str(path))
        yield Pair(LocalForge(cache_dir=tmp_path / "forge"), str(cp_path), str(gitops_path), cp_path, gitops_path,
                   tmp_path / "git")
        return
    from fleetflow.forge.github import GitHubForge

    stub: GitHubStub = request.getfixturevalue("github_stub")
    cp = stub.create_repo("contoso/control-plane")  # GitHub's auto_init: main with an empty "Initial commit"
    go = stub.create_repo("contoso/gitops", auto_init=False, default_branch="trunk")
    forge = GitHubForge(token="stub-token", api_url=stub.url, **FAST)  # type: ignore[arg-type]
    yield Pair(forge, "contoso/control-plane", "contoso/gitops", cp.git.path, go.git.path, tmp_path / "git")
    forge.close()


def run_init(pair: Pair, *, dry_run: bool = False) -> tuple[int, int]:
    """(changes planned, conflicts)."""
    plan = plan_init(pair.forge, pair.repos(), pair.cp, pair.gitops)
    if not dry_run:
        apply_init(plan, pair.forge, pair.repos())
    return len(plan.todo), len(plan.conflicts)


def test_init_sets_up_an_empty_pair_once_and_then_changes_nothing(pair: Pair) -> None:
    before = pair.refs()
    changes, conflicts = run_init(pair, dry_run=True)
    assert changes > 0 and conflicts == 0
    assert pair.refs() == before  # the dry run wrote nothing

    run_init(pair)
    after = pair.refs()
    # control plane: main (default) + one branch per starter Environment, each with the caller workflow
    for branch in ("main", "dev", "qa", "prod"):
        flow = pair.show(pair.cp_path, branch, WORKFLOW_FILE)
        assert flow.startswith(MARKER) and "push:\n    branches: [main, dev, qa, prod]" in flow
    assert after["cp.git:HEAD"] == "refs/heads/main"
    assert "kind: Environment" in pair.show(pair.cp_path, "main", ".environments/qa.yaml")
    assert f"controlPlane: {pair.cp}" in pair.show(pair.cp_path, "main", ".fleetflow.yaml")
    assert f"repo: {pair.gitops}" in pair.show(pair.cp_path, "dev", "gitops-repo.yaml")
    # GitOps: main becomes the default branch (status/schedule), every environment branch has the caller too
    assert after["gitops.git:HEAD"] == "refs/heads/main"
    for branch in ("main", "dev", "qa", "prod"):
        flow = pair.show(pair.gitops_path, branch, WORKFLOW_FILE)
        assert "status:" in flow and f"control-plane: {pair.cp}" in flow

    assert run_init(pair) == (0, 0)  # idempotent: nothing planned, nothing written
    assert pair.refs() == after


def test_init_never_overwrites_a_file_it_did_not_write(pair: Pair, tmp_path: Path) -> None:
    run_init(pair)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "-b", "qa", str(pair.cp_path), str(work))
    (work / WORKFLOW_FILE).write_text("name: mine\non: push\njobs: {}\n")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "my own workflow")
    git(work, "push", "-q", "origin", "qa")
    before = pair.refs()

    plan = plan_init(pair.forge, pair.repos(), pair.cp, pair.gitops)
    [conflict] = plan.conflicts
    assert (conflict.branch, conflict.what) == ("qa", f"file {WORKFLOW_FILE}")
    assert plan.todo == []
    apply_init(plan, pair.forge, pair.repos())
    assert pair.refs() == before
    assert pair.show(pair.cp_path, "qa", WORKFLOW_FILE).startswith("name: mine")


def test_init_cli_dry_run_and_conflict_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", str(path))
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    args = ["init", "--forge", "local", "--control-plane", str(cp), "--gitops", str(gitops)]
    runner = CliRunner()
    dry = runner.invoke(cli, [*args, "--dry-run", "--format", "json"])
    assert dry.exit_code == 0, dry.output
    envelope = json.loads(dry.output)
    assert envelope["ok"] and not envelope["result"]["applied"] and envelope["result"]["changes"] > 0
    assert git(tmp_path, "--git-dir", str(cp), "for-each-ref") == ""

    first = runner.invoke(cli, args)
    assert first.exit_code == 0 and "change(s) written" in first.output
    again = runner.invoke(cli, args)
    assert again.exit_code == 0 and "Nothing to do: the repositories are set up." in again.output


# -- doctor ---------------------------------------------------------------------------------------------------


def findings(fleet: Fleet) -> list[tuple[str, str]]:
    with fleet.context() as ctx:
        return [(f.check, f.where) for f in diagnose(ctx).findings]


def init_fleet(fleet: Fleet) -> None:
    repos = GitRepos(fleet.root / "cache-git")
    apply_init(plan_init(fleet.forge, repos, fleet.cp_id, fleet.gitops_id), fleet.forge, repos)


def test_doctor_finds_missing_workflows_then_init_fixes_them(fleet: Fleet) -> None:
    """The test fleet has every branch but no workflow file anywhere, and a GitOps repository whose HEAD names a
    branch that does not exist."""
    found = findings(fleet)
    cp, go = fleet.cp_id, fleet.gitops_id
    workflows = {where for check, where in found if check == "workflows"}
    expected = {f"{cp}@main", *(f"{cp}@{e}" for e in ENVIRONMENTS), *(f"{go}@{e}" for e in ENVIRONMENTS)}
    assert expected <= workflows

    init_fleet(fleet)
    assert findings(fleet) == []


def test_doctor_reports_a_status_context_no_cluster_matches(fleet: Fleet) -> None:
    init_fleet(fleet)
    tip = fleet.branch_sha(fleet.gitops_url, "qa")
    fleet.post_status(tip, "flux/qa-cluster-typo", "success", "applied")
    fleet.post_status(tip, "fleetflow/qa", "success", "fleetflow's own")  # never an unknown reporter
    # the seeded GitOps branches (and init's commits on them) are one commit: every branch there shows the status
    sharing = [e for e in ENVIRONMENTS if fleet.branch_sha(fleet.gitops_url, e) == tip]
    with fleet.context() as ctx:
        found = diagnose(ctx).findings
    assert sorted((f.check, f.where) for f in found) == sorted(
        ("contexts", f"{fleet.gitops_id}@{e} ({tip[:12]})") for e in sharing)
    assert "qa" in sharing and all("'flux/qa-cluster-typo'" in f.problem for f in found)


def test_doctor_reports_many_unknown_contexts_as_one_problem_per_branch(fleet: Fleet) -> None:
    """150 contexts no Cluster matches (more than one page of GitHub's combined status, 100 a page: "Get the
    combined status for a specific reference",
    https://docs.github.com/en/rest/commits/statuses#get-the-combined-status-for-a-specific-reference) are one
    problem per branch that counts them and names the first five, sorted, not 150 problems per branch."""
    init_fleet(fleet)
    tip = fleet.branch_sha(fleet.gitops_url, "qa")
    for i in reversed(range(150)):
        fleet.post_status(tip, f"flux/typo-{i:03d}", "success", "applied")
    fleet.post_status(tip, "flux/qa-1", "success", "applied")  # a Cluster's own context: never counted
    sharing = [e for e in ENVIRONMENTS if fleet.branch_sha(fleet.gitops_url, e) == tip]
    with fleet.context() as ctx:
        found = diagnose(ctx).findings
    assert sorted((f.check, f.where) for f in found) == sorted(
        ("contexts", f"{fleet.gitops_id}@{e} ({tip[:12]})") for e in sharing)
    qa = next(f for f in found if f.where.startswith(f"{fleet.gitops_id}@qa "))
    assert qa.problem.startswith("150 status contexts ('flux/typo-000', 'flux/typo-001', 'flux/typo-002', "
                                 "'flux/typo-003', 'flux/typo-004' and 145 more) match no Cluster of qa")
    assert "flux/qa-1" not in qa.problem and "'flux/typo-005'" not in qa.problem
    assert qa.fix.startswith("set the Cluster's spec.statusContext to exactly this context")


def test_doctor_reports_a_workflow_removed_from_an_environment_branch(fleet: Fleet) -> None:
    init_fleet(fleet)
    work = fleet.root / "rm"
    git(fleet.root, "clone", "-q", "-b", "prod-eu", fleet.cp_url, str(work))
    git(work, "rm", "-q", WORKFLOW_FILE)
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "drop the workflow")
    git(work, "push", "-q", "origin", "prod-eu")
    assert findings(fleet) == [("workflows", f"{fleet.cp_id}@prod-eu")]


def test_a_caller_under_a_name_of_its_own_is_the_caller_for_doctor_and_init(fleet: Fleet) -> None:
    """examples/workflows/README.md says to copy the caller to .github/workflows/fleetflow.yml, but GitHub runs every
    file in .github/workflows/ whatever its name (https://docs.github.com/en/actions/reference/workflows-and-actions/
    workflow-syntax: "You must store workflow files in the .github/workflows directory of your repository"). Before,
    doctor reported a caller named control-plane.yml as missing ("add the caller workflow ... fleetflow init does it")
    and init then added fleetflow.yml beside it: two callers, every event ran fleetflow twice. Now both see it; two
    callers on one branch are a problem of their own."""
    init_fleet(fleet)
    work = fleet.root / "own"
    git(fleet.root, "clone", "-q", "-b", "prod-eu", fleet.cp_url, str(work))
    own = ".github/workflows/control-plane.yml"
    text = (work / WORKFLOW_FILE).read_text().replace(MARKER + "\n", "")
    git(work, "mv", WORKFLOW_FILE, own)
    (work / own).write_text(text)
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "our own name for the caller")
    git(work, "push", "-q", "origin", "prod-eu")
    assert findings(fleet) == []
    with fleet.context() as ctx:
        assert f"{fleet.cp_id}@prod-eu: {own} calls fleetflow-control-plane.yml" in diagnose(ctx).checked
        plan = plan_init(ctx.forge, ctx.git, fleet.cp_id, fleet.gitops_id)
    assert plan.todo == [] and plan.conflicts == []
    [step] = [s for s in plan.steps if (s.repo, s.branch, s.what) == (fleet.cp_id, "prod-eu", f"file {WORKFLOW_FILE}")]
    assert step.detail.startswith(f"not added: {own} calls fleetflow-control-plane.yml already")

    (work / ".github/workflows/copy.yaml").write_text(text)
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a second caller")
    git(work, "push", "-q", "origin", "prod-eu")
    with fleet.context() as ctx:
        [problem] = diagnose(ctx).findings
    assert (problem.check, problem.where) == ("workflows", f"{fleet.cp_id}@prod-eu")
    assert problem.problem == (f"2 workflows call fleetflow-control-plane.yml ({own}, .github/workflows/copy.yaml): "
                               "every event runs fleetflow once per file, and a manual promotion is done twice")


def test_doctor_cli_exit_codes_and_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = make_local_fleet(tmp_path)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    args = ["doctor", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json"]
    sick = CliRunner().invoke(cli, args)
    assert sick.exit_code == 1
    envelope = json.loads(sick.output)
    assert not envelope["ok"] and envelope["problems"] and all(p["hint"] for p in envelope["problems"])
    assert envelope["result"]["findings"][0]["fix"]
    init_fleet(fleet)
    healthy = CliRunner().invoke(cli, args)
    assert healthy.exit_code == 0, healthy.output
    assert json.loads(healthy.output)["result"]["healthy"] is True


# -- GitHub only: the App's permissions and the auto-merge setting -------------------------------------------


def _pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def test_doctor_on_github_checks_app_permissions_and_auto_merge(tmp_path: Path, request: pytest.FixtureRequest
                                                                ) -> None:
    from fleetflow.forge.github import GitHubForge

    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    # an installation without the statuses permission (docs/setup.md asks for statuses: write)
    stub.register_app(4242, public, installed_on=["contoso"], slug="fleetflow",
                      permissions={"contents": "write", "pull_requests": "write", "checks": "read",
                                   "metadata": "read"})
    forge = GitHubForge(app_id="4242", app_private_key=_pem(key), api_url=stub.url, **FAST)  # type: ignore[arg-type]
    assert forge.installation_permissions("contoso/gitops") == {
        "contents": "write", "pull_requests": "write", "checks": "read", "metadata": "read"}
    with Context(forge=forge, git=GitRepos(tmp_path / "app-git"), control_plane=fleet.cp_id) as ctx:
        found = diagnose(ctx)
    checks = sorted((f.check, f.where) for f in found.findings)
    assert ("app", "contoso/control-plane") in checks and ("app", "contoso/gitops") in checks
    assert all("statuses: write" in f.problem for f in found.findings if f.check == "app")
    assert not any(check == "autoMerge" for check, _ in checks)  # no Environment of this fleet sets autoMerge
    assert forge.auto_merge_allowed("contoso/gitops") is False  # GitHub's default for a new repository
    forge.close()


def test_set_default_branch_refuses_a_missing_branch(pair: Pair) -> None:
    run_init(pair)
    with pytest.raises(ForgeError):
        pair.forge.set_default_branch(pair.gitops, "no-such-branch")
    assert pair.forge.set_default_branch(pair.gitops, "dev") is True
    assert pair.forge.default_branch(pair.gitops) == "dev"
    assert pair.forge.set_default_branch(pair.gitops, "dev") is False


def test_init_workflows_trigger_like_the_examples() -> None:
    """init's callers and the documented examples (examples/workflows/) must not drift apart: the same events,
    the same reusable workflow, the same secrets; only the branch lists and the control plane differ."""
    import yaml

    from fleetflow.promotion.bootstrap import control_plane_workflow, gitops_workflow

    root = Path(__file__).resolve().parent.parent / "examples" / "workflows"
    for written, example in (
        (control_plane_workflow(["main", "dev", "qa", "prod"], "v0"), root / "control-plane.yml"),
        (gitops_workflow("contoso/platform-control-plane", ["dev", "qa", "prod"], "v0"), root / "gitops.yml"),
    ):
        mine, theirs = yaml.safe_load(written), yaml.safe_load(example.read_text())
        assert mine[True].keys() == theirs[True].keys(), example.name  # PyYAML reads the key `on` as True
        for event in mine[True]:
            assert mine[True][event] == theirs[True][event], (example.name, event)
        assert mine["jobs"]["fleetflow"]["uses"] == theirs["jobs"]["fleetflow"]["uses"]
        assert mine["jobs"]["fleetflow"]["secrets"] == theirs["jobs"]["fleetflow"]["secrets"]
        assert mine["permissions"] == theirs["permissions"] == {}


@pytest.mark.parametrize("branch", ["16.0", "1.10", "2024", "on", "null", "1e3", "0o17"])
def test_init_workflows_list_a_branch_yaml_would_type_as_that_branch(branch: str) -> None:
    """A branch named ``16.0`` (an environment named by a release line) is listed quoted, so every YAML reader (YAML
    1.1's PyYAML, YAML 1.2's core schema in ruamel.yaml, check-jsonschema's) reads that very name: written plain it
    was the number 16.0, the branch ``16`` (GitHub's runner: peter-evans/create-pull-request#3493), or a boolean
    (``on``). Until 2026-11-29 init wrote every name plain; plain names stay plain (files init wrote stay the same)."""
    import yaml
    from ruamel.yaml import YAML

    from fleetflow.promotion.bootstrap import control_plane_workflow, gitops_workflow

    for text, listed in ((control_plane_workflow(["main", "dev", branch], "v0"), ["main", "dev", branch]),
                         (gitops_workflow("contoso/platform-control-plane", ["dev", branch], "v0"), ["dev", branch])):
        for loaded in (yaml.safe_load(text), YAML(typ="safe", pure=True).load(text)):
            on = loaded.get("on", loaded.get(True))  # PyYAML reads the key `on` as True
            assert on["pull_request"]["branches"] == listed, text
    assert "branches: [main, dev, '" + branch + "']" in control_plane_workflow(["main", "dev", branch], "v0")


def test_example_status_reporter_address_is_the_repository_web_address(tmp_path: Path) -> None:
    """Flux's github provider takes the host and ``<owner>/<repo>`` from the Provider's ``address`` (notification-
    controller ``internal/notifier/util.go``, ``parseGitAddress``), so the example template renders
    ``https://github.com/<owner>/<repo>`` also from a GitOpsRepo whose ``repo`` is ``owner/name`` (what the GitHub
    forge takes)."""
    import shutil

    from tests.helpers import run_cli

    example = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
    env = tmp_path / "dev"
    shutil.copytree(example / "envs" / "dev", env)
    gitops = env / "gitops-repo.yaml"
    gitops.write_text(gitops.read_text().replace("https://github.com/contoso/platform-gitops",
                                                  "contoso/platform-gitops"))
    out = tmp_path / "out"
    result = run_cli("render", "--main", example / "main", "--env", env, "--environment", "dev", "--output", out)
    assert result.exit_code == 0, result.output
    providers = list(out.glob("*/_status/flux-status-reporter.yaml"))
    assert providers
    for provider in providers:
        assert "address: https://github.com/contoso/platform-gitops\n" in provider.read_text()


# -- branch rules and GitHub Environments ---------------------------------------------------------------------


def require_checks(fleet: Fleet, branch: str, contexts: list[str]) -> None:
    """Required status checks on a GitOps branch: a ruleset on the GitHub stand-in, the branch rules of the local
    forge."""
    stub = getattr(fleet, "stub", None)
    if stub is not None:
        stub.repo(fleet.gitops_id).rulesets[branch] = contexts
    else:
        assert isinstance(fleet.forge, LocalForge)
        fleet.forge.protect_branch(fleet.gitops_id, branch, contexts)


def commit_file(fleet: Fleet, url: str, branch: str, path: str, text: str) -> None:
    work = fleet.root / f"edit-{branch}-{len(list(fleet.root.iterdir()))}"
    git(fleet.root, "clone", "-q", "-b", branch, url, str(work))
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(text)
    git(work, "add", path)
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"edit {path}")
    git(work, "push", "-q", "origin", branch)


def test_doctor_checks_required_checks_against_auto_merge(fleet: Fleet) -> None:
    """Branch protection and rulesets, read through the forge's ``merge_rules``: on GitHub "Get a branch"
    (``protection.required_status_checks``, https://docs.github.com/en/rest/branches/branches#get-a-branch) and
    "Get rules for a branch" ("Returns all active rules that apply to the specified branch ... Rules in rulesets
    with "evaluate" or "disabled" enforcement statuses are not returned",
    https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch). An autoMerge environment whose branch
    requires no check is merged as soon as the checks on the head are green (GitHub refuses auto-merge for a PR in
    "clean status"), and a required context that only reports after the merge (a cluster's, fleetflow's own) makes
    every PR unmergeable."""
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    if stub is not None:  # the autoMerge check's own concern (tested below); set before the forge reads the repo
        stub.repo(fleet.gitops_id).allow_auto_merge = True
    init_fleet(fleet)
    fleet.push_main(environments_file(auto_merge=("dev",)), "dev merges itself")
    go = fleet.gitops_id
    with fleet.context() as ctx:
        found = diagnose(ctx).findings
    assert [(f.check, f.where) for f in found] == [("branch-rules", f"{go}@dev")]
    assert "requires no status check" in found[0].problem and "Require status checks" in found[0].fix

    require_checks(fleet, "dev", ["ci/validate"])
    require_checks(fleet, "qa", ["fleetflow/qa", "ci/validate"])
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert [(f.check, f.where) for f in diagnosis.findings] == [("branch-rules", f"{go}@qa")]
    [qa] = diagnosis.findings
    assert "'fleetflow/qa'" in qa.problem and "ci/validate" not in qa.problem and "never" in qa.problem
    assert qa.fix.startswith("remove fleetflow/qa from the required status checks of qa")
    assert f"{go}@dev: required checks (ci/validate)" in diagnosis.checked


def test_doctor_finds_a_required_cluster_context_written_in_other_letters(fleet: Fleet) -> None:
    """GitHub's "Create a commit status" (github/rest-api-description, ``context``): "This field is
    case-insensitive". A branch that requires ``Flux/Dev-1`` requires the cluster's ``flux/dev-1``, which only
    reports after the merge, and ``FleetFlow/qa`` is fleetflow's own record: no PR can ever be merged by the rules.
    Until 2026-11-29 doctor compared them with case and said "required checks (Flux/Dev-1)", all fine."""
    init_fleet(fleet)
    require_checks(fleet, "dev", ["Flux/Dev-1", "ci/validate"])
    require_checks(fleet, "qa", ["FleetFlow/qa"])
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    go = fleet.gitops_id
    dev, qa = (next(f for f in diagnosis.findings if f.where == f"{go}@{b}") for b in ("dev", "qa"))
    assert "requires 'Flux/Dev-1', which never reports on a PR's head (the clusters report" in dev.problem
    assert "requires 'FleetFlow/qa', which never reports on a PR's head (fleetflow/<env> is recorded" in qa.problem


def test_doctor_checks_tag_rulesets_against_the_merge_records(fleet: Fleet) -> None:
    """fleetflow creates, moves and deletes the tags ``fleetflow/auto-merge/<env>`` and
    ``fleetflow/merge-when-green/<env>`` of each autoMerge environment (``merge_records``). A tag ruleset can decline
    each of those pushes: REST "Get all repository rulesets" (``targets``, ``includes_parents``) and "Get a
    repository ruleset" (``conditions.ref_name``, ``rules``, ``current_user_can_bypass``; "REST API endpoints for
    rules", https://docs.github.com/en/rest/repos/rules, the same page as "Get rules for a branch", which says the
    token needs ``metadata:read``), described in ``@octokit/openapi`` 23.0.2 (``repos/get-repo-rulesets``,
    ``repos/get-repo-ruleset``); which refs a ruleset
    targets follows GitHub Docs, "Creating rulesets for a repository", "Using fnmatch syntax" (``tests/
    test_rulesets.py``). Only active enforcement declines; ``evaluate`` only reports. The local forge has no
    rulesets: skipped there, and nothing is read on GitHub when no environment sets autoMerge."""
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    if stub is not None:
        stub.repo(fleet.gitops_id).allow_auto_merge = True
    init_fleet(fleet)
    require_checks(fleet, "dev", ["ci/validate"])
    go = fleet.gitops_id
    mark = stub.mark() if stub is not None else 0
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert diagnosis.findings == [] and not any("tag rulesets" in s for s in diagnosis.skipped)
    assert stub is None or stub.count(mark, path="/rulesets") == 0  # no autoMerge environment: not read

    fleet.push_main(environments_file(auto_merge=("dev",)), "dev merges itself")
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert diagnosis.findings == []
    if stub is None:
        assert f"{go}: tag rulesets (the local forge has none)" in diagnosis.skipped
        return
    assert f"{go}: tag rulesets let fleetflow write its merge records" in diagnosis.checked

    rules = stub.repo(go).ruleset_list
    rules += [
        # the usual "protect every tag", with an exclusion that misses the records: "**" not followed by "/" is "*"
        Ruleset(1, "protect tags", exclude=["refs/tags/fleetflow/**"],
                rules=[{"type": "update", "parameters": {"update_allows_fetch_and_merge": False}},
                       {"type": "deletion"}, {"type": "required_linear_history"}]),
        Ruleset(2, "release tags", include=["refs/tags/v*"], rules=[{"type": "creation"}]),  # not the records'
        Ruleset(3, "trial", enforcement="evaluate", rules=[{"type": "creation"}]),  # reports, declines nothing
        Ruleset(4, "org tags", rules=[{"type": "creation"}], bypass="always", organization=True),
        Ruleset(5, "branches", target="branch", rules=[{"type": "deletion"}]),
    ]
    mark = stub.mark()
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert [(f.check, f.where) for f in diagnosis.findings] == [
        ("tag-rules", f"{go} ruleset 'protect tags' (Repository {go})")]
    [found] = diagnosis.findings
    assert found.problem == (
        "it declines moving and deleting the tags fleetflow keeps its merge records in (fleetflow/auto-merge/dev, "
        "fleetflow/merge-when-green/dev; moving: Restrict updates; deleting: Restrict deletions): the reconcile run "
        "of dev that writes one ends with a git error (exit 3) at that push, and takes the merge step again at "
        "every run")
    assert "Exclude by pattern: fleetflow/**/* (refs/tags/fleetflow/**/* through the API" in found.fix
    assert "bypass list" in found.fix
    bypassed = [c for c in diagnosis.checked if "'org tags'" in c]
    assert bypassed == [f"{go} ruleset 'org tags' (Organization contoso): declines creating fleetflow's merge "
                        "records (creating: Restrict creations), but the credentials this doctor ran with bypass it "
                        "(always); unless they are fleetflow's GitHub App's, the App must be on its bypass list "
                        "too (run doctor with FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY to check as the App)"]
    # one list, then one read per active tag ruleset
    assert (stub.count(mark, path="/rulesets$"), stub.count(mark, path="/rulesets/[0-9]+$")) == (1, 3)

    stub.inject("GET", "/rulesets$", "status_5xx", status=404)  # not found: no rulesets on this plan or token
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert not [f for f in diagnosis.findings if f.check == "tag-rules"]
    [skipped] = [s for s in diagnosis.skipped if "tag rulesets" in s]
    assert skipped.startswith(f"{go}: tag rulesets could not be read (") and "Metadata: read" in skipped

    rules[0].exclude = ["refs/tags/fleetflow/**/*"]
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert diagnosis.findings == [] and [c for c in diagnosis.checked if "'org tags'" in c] == bypassed
    assert f"{go}: tag rulesets let fleetflow write its merge records" not in diagnosis.checked  # but for a bypass


PULL_REQUEST_RULE = {"type": "pull_request", "parameters": {
    "dismiss_stale_reviews_on_push": True, "require_code_owner_review": False, "require_last_push_approval": False,
    "required_approving_review_count": 1, "required_review_thread_resolution": False}}


def test_doctor_checks_the_rules_of_the_branches_fleetflow_pushes_to(fleet: Fleet) -> None:
    """fleetflow pushes commits itself to two kinds of branch: promote's pin to each control-plane environment branch
    (a fast-forward) and schedule's PR head branch ``fleetflow/<env>`` in the GitOps repository (created, then
    force-updated). "Get rules for a branch" returns the active rules that apply to a branch, whatever their
    ruleset's level ("REST API endpoints for rules", https://docs.github.com/en/rest/repos/rules); each declining
    ruleset is read for its name and ``current_user_can_bypass``. docs/setup.md, section 4, asks for the App on the
    environment branches' bypass list and for no rule on ``fleetflow/*``."""
    init_fleet(fleet)
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    cp, go = fleet.cp_id, fleet.gitops_id
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert diagnosis.findings == []
    if stub is None:
        assert f"{cp}@dev: rulesets (the local forge has none)" in diagnosis.skipped
        assert f"{go}@fleetflow/dev: rulesets (the local forge has none)" in diagnosis.skipped
        return
    assert f"{cp}@dev: no ruleset declines fleetflow's pushes" in diagnosis.checked
    assert f"{go}@fleetflow/qa: no ruleset declines fleetflow's pushes" in diagnosis.checked

    stub.repo(cp).ruleset_list += [
        Ruleset(31, "environment branches", target="branch", include=["refs/heads/dev", "refs/heads/qa"],
                rules=[PULL_REQUEST_RULE, {"type": "deletion"}], branches=["dev", "qa"], bypass="always"),
        Ruleset(32, "dev checks", target="branch", include=["refs/heads/dev"], branches=["dev"], rules=[
            {"type": "required_status_checks", "parameters": {
                "required_status_checks": [{"context": "fleetflow / Check the change"}],
                "strict_required_status_checks_policy": False}}]),
    ]
    stub.repo(go).ruleset_list.append(  # the organization's "no force pushes anywhere", as GitHub applies it
        Ruleset(33, "all branches", target="branch", include=["~ALL"], organization=True,
                rules=[{"type": "non_fast_forward"}, {"type": "deletion"}], branches=["fleetflow/dev"]))
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert [(f.check, f.where) for f in diagnosis.findings] == [
        ("push-rules", f"{cp}@dev ruleset 'dev checks' (Repository {cp})"),
        ("push-rules", f"{go}@fleetflow/dev ruleset 'all branches' (Organization contoso)"),
    ]
    pin, head = diagnosis.findings
    stub.inject("GET", "/rules/branches/fleetflow%2Fdev$", "status_5xx", status=404, times=5)
    with fleet.context() as ctx:
        unread = diagnose(ctx)
    assert [f.where for f in unread.findings] == [pin.where]  # the other checks still report
    assert any(s.startswith(f"{go}@fleetflow/dev: rulesets could not be read (") for s in unread.skipped)
    stub.clear_faults()
    assert pin.problem == ("its rules (Require status checks to pass) decline promote's push of the pin commit "
                           "(base-repo.yaml), so dev is never promoted")
    assert pin.fix.startswith("add fleetflow's GitHub App to its bypass list")
    assert head.problem == ("its rules (Block force pushes) decline schedule's push of the PR head branch, so dev's "
                            "PR is never opened or updated")
    assert "pattern fleetflow/*, refs/heads/fleetflow/* through the API" in head.fix
    assert [c for c in diagnosis.checked if "'environment branches'" in c] == [
        f"{cp}@{env}: ruleset 'environment branches' (Repository {cp}) declines fleetflow's pushes (Require a pull "
        "request before merging), but the credentials this doctor ran with bypass it (always); unless they are "
        "fleetflow's GitHub App's, the App must be on its bypass list too (run doctor with FLEETFLOW_APP_ID and "
        "FLEETFLOW_APP_PRIVATE_KEY to check as the App)" for env in ("dev", "qa")]


def test_github_doctor_reads_the_classic_branch_protection_of_the_environment_branches(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A classic branch protection rule (Settings → Branches) on a control-plane environment branch is not a ruleset:
    "Get rules for a branch" does not list it ("Returns all active rules that apply to the specified branch", the
    rules of rulesets, https://docs.github.com/en/rest/repos/rules). "Get a branch" shows anyone with read access
    ``protected`` and ``protection.required_status_checks`` (https://docs.github.com/en/rest/branches/branches
    #get-a-branch), and a required check declines a push of a commit that has not passed it ("You won't be able to
    push local changes to a protected branch until all required status checks pass", GitHub Docs, "Troubleshooting
    required status checks"; GitHub's answer "GH006: Protected branch update failed ... Required status check
    \"Build\" is expected", supportpal/github-gh-cli#47). So promote's pin push is declined while doctor, reading
    rulesets only, found such a branch healthy. A rule without required checks may require a pull request, which
    only admins can see: a "skipped" line says what to check."""
    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    cp = fleet.cp_id
    repo = stub.repo(cp)
    repo.protection["dev"] = ["fleetflow / Check the change"]
    repo.protection["qa"] = []  # protected, no required check
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert [(f.check, f.where) for f in diagnosis.findings] == [("push-rules", f"{cp}@dev branch protection")]
    [found] = diagnosis.findings
    assert found.problem == (
        "its rule requires the status checks 'fleetflow / Check the change', and GitHub declines a push of a commit "
        "that has not passed them (GH006 \"Required status check ... is expected\"): promote's push of the pin "
        "commit (base-repo.yaml) is declined, so dev is never promoted")
    assert found.fix.startswith("move dev's protection to a ruleset with the same rules and fleetflow's GitHub App "
                                "on its bypass list")
    [qa] = [s for s in diagnosis.skipped if s.startswith(f"{cp}@qa: ")]
    assert "a branch protection rule applies" in qa and "Allow specified actors to bypass required pull" in qa
    assert not [s for s in diagnosis.skipped if s.startswith(f"{cp}@prod-eu: ")]  # no rule there

    # what promote meets on GitHub: the push of the pin declined with GH006
    refuse_pushes(repo.path, protected("refs/heads/dev"))
    with fleet.context() as ctx, pytest.raises(GitError) as refused:
        promote(ctx, "dev", first_commit(fleet))
    assert "GH006: Protected branch update failed for refs/heads/dev." in str(refused.value)


def test_github_a_ruleset_on_every_head_branch_is_read_once(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """An organization's "no force pushes on any branch" applies to every environment's head branch: "Get rules for
    a branch" is read per branch, the ruleset itself once for the whole diagnosis, and each branch is reported."""
    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    heads = [f"fleetflow/{env}" for env in ENVIRONMENTS]
    stub.repo(fleet.gitops_id).ruleset_list.append(Ruleset(
        61, "all branches", target="branch", include=["~ALL"], organization=True,
        rules=[{"type": "non_fast_forward"}], branches=heads))
    mark = stub.mark()
    with fleet.context() as ctx:
        found = [f for f in diagnose(ctx).findings if f.check == "push-rules"]
    assert sorted(f.where for f in found) == sorted(
        f"{fleet.gitops_id}@{head} ruleset 'all branches' (Organization contoso)" for head in heads)
    assert stub.count(mark, path="/rulesets/61$") == 1
    assert stub.count(mark, path="/rules/branches/fleetflow%2F") == len(heads)


def test_github_a_ruleset_that_declines_the_pin_stops_promote_as_doctor_says(tmp_path: Path,
                                                                              request: pytest.FixtureRequest) -> None:
    """A pull request rule on an environment branch that the App cannot bypass: promote's push of the pin is
    declined with GitHub's words ("- Changes must be made through a pull request.", as GitHub answers a direct push
    under that rule, henne49/dbus-opendtu#235), nothing is pinned, and doctor names the ruleset and the fix. With the
    App (the credentials in use) on the bypass list, the same promote goes through."""
    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    repo = stub.repo(fleet.cp_id)
    repo.ruleset_list.append(Ruleset(41, "protect dev", target="branch", include=["refs/heads/dev"],
                                     rules=[PULL_REQUEST_RULE], branches=["dev"]))
    repo.decline_ref_writes({"refs/heads/dev": ["update"]}, why="Changes must be made through a pull request.")
    sha = first_commit(fleet)
    before = fleet.pin("dev")
    with fleet.context() as ctx, pytest.raises(GitError) as refused:
        promote(ctx, "dev", sha)
    assert "GH013: Repository rule violations found for refs/heads/dev." in str(refused.value)
    assert "- Changes must be made through a pull request." in str(refused.value)
    assert str(refused.value).endswith("GitHub's rulesets declined pushing the pin to dev: `fleetflow doctor` names "
                                       "the ruleset and its fix (check push-rules)")
    assert fleet.pin("dev") == before
    with fleet.context() as ctx:
        [found] = [f for f in diagnose(ctx).findings if f.check == "push-rules"]
    assert found.where == f"{fleet.cp_id}@dev ruleset 'protect dev' (Repository {fleet.cp_id})"
    assert "decline promote's push of the pin commit" in found.problem and "bypass list" in found.fix
    repo.ruleset_list[0].bypass = "always"  # the App on the bypass list: GitHub lets its pushes through
    repo.decline_ref_writes({})
    with fleet.context() as ctx:
        promote(ctx, "dev", sha)
    assert fleet.pin("dev") == sha


def test_github_a_ruleset_on_the_head_branch_stops_schedule_as_doctor_says(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """An organization ruleset restricting branch creations everywhere (``~ALL``) declines schedule's push of the new
    head branch ``fleetflow/dev`` with GitHub's words (GH013, "- Cannot create ref due to creations being
    restricted.", as quoted for a tag in guardian/gha-scala-library-release-workflow#126). No PR is opened, the error
    says where doctor looks, and doctor names the ruleset and the exclusion."""
    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    go = stub.repo(fleet.gitops_id)
    go.ruleset_list.append(Ruleset(51, "branch creations", target="branch", organization=True,
                                   rules=[{"type": "creation"}], branches=["fleetflow/dev"]))
    go.decline_ref_writes({"refs/heads/fleetflow/dev": ["create"]})
    with fleet.context() as ctx, pytest.raises(GitError) as refused:
        promote(ctx, "dev", first_commit(fleet))
    assert "GH013: Repository rule violations found for refs/heads/fleetflow/dev." in str(refused.value)
    assert str(refused.value).endswith(f"GitHub's rulesets declined pushing fleetflow/dev to {fleet.gitops_id}: "
                                       "`fleetflow doctor` names the ruleset and its fix (check push-rules)")
    assert fleet.open_pr("dev") is None
    with fleet.context() as ctx:
        [found] = [f for f in diagnose(ctx).findings if f.check == "push-rules"]
    assert found.where == f"{fleet.gitops_id}@fleetflow/dev ruleset 'branch creations' (Organization contoso)"
    assert "(Restrict creations) decline schedule's push of the PR head branch" in found.problem


def test_doctor_checks_the_github_environments_the_jobs_use(fleet: Fleet) -> None:
    """The GitHub Environments of the jobs that need them, from "List environments" (``GET
    /repos/{owner}/{repo}/environments``, ``protection_rules``: ``required_reviewers``, ``wait_timer``;
    https://docs.github.com/en/rest/deployments/environments#list-environments). A job that references an
    environment waits for its protection rules ("When a workflow job references an environment, the job won't
    start until all of the environment's protection rules pass", https://docs.github.com/en/actions/reference/
    environments): with ``approval-environment: fleetflow-{0}``, the environments whose PRs a person merges need
    required reviewers; with ``status-page: true`` the deploy job needs ``github-pages`` (Pages deployed from
    GitHub Actions, actions/deploy-pages' README). The local forge has no GitHub Environments: skipped."""
    init_fleet(fleet)
    with fleet.context() as ctx:
        caller = ctx.git.read_file(ctx.cp_url, ctx.main_tip(), WORKFLOW_FILE)
    assert caller is not None and "    secrets:\n" in caller
    fleet.push_main({WORKFLOW_FILE: caller.replace(
        "    secrets:\n", "    with:\n      approval-environment: fleetflow-{0}\n    secrets:\n")}, "approvals")
    gitops_caller = fleet.forge.default_branch(fleet.gitops_id)
    with fleet.context() as ctx:
        text = ctx.git.read_file(fleet.gitops_url, ctx.git.fetch_branch(fleet.gitops_url, gitops_caller) or "",
                                 WORKFLOW_FILE)
    assert text is not None and "    secrets:\n" in text
    commit_file(fleet, fleet.gitops_url, gitops_caller, WORKFLOW_FILE,
                text.replace("    secrets:\n", "    with:\n      status-page: true\n    secrets:\n"))
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    if stub is None:
        assert diagnosis.findings == []
        assert f"{fleet.cp_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        assert f"{fleet.gitops_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        return
    found = {(f.check, f.where): f for f in diagnosis.findings}
    assert set(found) == {("environments", fleet.cp_id), ("environments", f"{fleet.gitops_id}@{gitops_caller}")}
    pages = found[("environments", f"{fleet.gitops_id}@{gitops_caller}")]
    assert "'github-pages'" in pages.problem and "Source: GitHub Actions" in pages.fix
    approvals = [f for f in diagnosis.findings if f.where == fleet.cp_id]
    assert len(approvals) == len(ENVIRONMENTS)  # one per environment whose PRs a person merges: all of them here
    assert all("does not exist" in f.problem and "Required reviewers" in f.fix for f in approvals)

    cp_repo = stub.repo(fleet.cp_id)
    for env in ENVIRONMENTS:
        cp_repo.environments[f"fleetflow-{env}"] = {"reviewers": ["alice"]}
    cp_repo.environments["fleetflow-qa"] = {"wait_timer": 5}  # a timer alone approves nothing
    stub.repo(fleet.gitops_id).environments["github-pages"] = {}
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert [(f.check, f.where) for f in diagnosis.findings] == [("environments", fleet.cp_id)]
    assert "'fleetflow-qa' has no required reviewers" in diagnosis.findings[0].problem
    assert f"{fleet.cp_id}: GitHub Environment fleetflow-dev (1 required reviewer(s))" in diagnosis.checked


SHARDS_CALLER = """\
name: fleetflow shards
on:
  push:
    branches: [dev]
  workflow_dispatch:
permissions: {}
jobs:
  dev:
    permissions: {}
    uses: fleetflow/fleetflow/.github/workflows/fleetflow-schedule-shards.yml@v0
    with:
      environment: ENV
      shards: 3
"""


def test_doctor_checks_a_sharded_environment_has_the_shards_workflow(fleet: Fleet) -> None:
    """``shardedSchedule: true``: promote and reconcile never render the environment, only the shards workflow
    does, so a caller of it must be where GitHub reads it: ``main`` (``workflow_dispatch`` and ``schedule`` run the
    default branch's file) and the environment's branch (``push`` runs the pushed commit's file), as the
    "Events that trigger workflows" page says (docs.github.com/en/actions/writing-workflows/choosing-when-your-
    workflow-runs/events-that-trigger-workflows). A caller for another environment does not count; one whose
    ``environment`` is an expression cannot be read, and counts."""
    init_fleet(fleet)
    fleet.push_main(environments_file(sharded=("dev",)), "dev: sharded schedule")
    cp = fleet.cp_id
    assert sorted(findings(fleet)) == [("sharded-schedule", f"{cp}@dev"), ("sharded-schedule", f"{cp}@main")]
    with fleet.context() as ctx:
        [problem] = [f.problem for f in diagnose(ctx).findings if f.where == f"{cp}@main"]
    assert "environment dev has shardedSchedule: true" in problem and "fleetflow-schedule-shards.yml" in problem

    caller = ".github/workflows/fleetflow-shards.yml"
    fleet.push_main({caller: SHARDS_CALLER.replace("ENV", "qa")}, "a shards caller for another environment")
    assert sorted(findings(fleet)) == [("sharded-schedule", f"{cp}@dev"), ("sharded-schedule", f"{cp}@main")]
    fleet.push_main({caller: SHARDS_CALLER.replace("ENV", "dev")}, "the shards caller for dev")
    assert findings(fleet) == [("sharded-schedule", f"{cp}@dev")]
    fleet.push_env("dev", {caller: SHARDS_CALLER.replace("ENV", "${{ vars.SHARDED_ENV }}")}, "on dev too")
    assert findings(fleet) == []


# -- GitHub only: may a workflow's GITHUB_TOKEN open the GitOps PRs? --------------------------------------------

WORKFLOW_TOKEN = "ghs_" + "A1b2C3d4" * 4 + "e5F6"  # the shape of a workflow's GITHUB_TOKEN: an installation token
ACTIONS_PULLS = "\"Allow GitHub Actions to create and approve pull requests\""


def test_doctor_says_when_github_refuses_the_prs_of_a_workflow_token(tmp_path: Path,
                                                                     request: pytest.FixtureRequest) -> None:
    """"Get default workflow permissions for a repository" (``GET /repos/{owner}/{repo}/actions/permissions/
    workflow``: ``default_workflow_permissions``, ``can_approve_pull_request_reviews``;
    https://docs.github.com/en/rest/actions/permissions, described in ``@octokit/openapi`` 23.0.2 as
    ``actions/get-github-actions-default-workflow-permissions-repository``) on the GitOps repository. While "Allow
    GitHub Actions to create and approve pull requests" is off (GitHub's default, GitHub Docs "Managing GitHub Actions
    settings for a repository"), GitHub refuses a pull request opened with a workflow's GITHUB_TOKEN, an installation
    token (``ghs_``: github.blog changelog 2021-03-31, "Authentication token format updates are generally
    available"). doctor finds it with such a token; with a person's token (``ghp_``) or one of no known format it
    reports the setting as fine, saying what it does to a workflow's token; the setting on, it is fine for all."""
    from fleetflow.forge.github import GitHubForge

    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    gitops = stub.repo(fleet.gitops_id)
    assert gitops.actions_can_create_pulls is False  # as in every new repository

    def diagnosis(token: str) -> Any:
        forge = GitHubForge(token=token, api_url=stub.url, **FAST)  # type: ignore[arg-type]
        with Context(forge=forge, git=GitRepos(tmp_path / "git-doctor"), control_plane=fleet.cp_id) as ctx:
            found = diagnose(ctx)
        forge.close()
        return found

    found = diagnosis(WORKFLOW_TOKEN)
    assert [(f.check, f.where) for f in found.findings] == [("actions-pulls", fleet.gitops_id)]
    [problem] = found.findings
    assert problem.problem == (
        f"{ACTIONS_PULLS} is off (default workflow permissions: read) and fleetflow runs with an installation token "
        "(ghs_), as a workflow's GITHUB_TOKEN is: GitHub refuses every pull request fleetflow opens with it (403 "
        "\"GitHub Actions is not permitted to create or approve pull requests\"), so no promotion reaches this "
        "repository")
    assert problem.fix.startswith("Settings → Actions → General → Workflow permissions → Allow GitHub Actions to "
                                  "create and approve pull requests (greyed out there: the organization's")
    assert problem.fix.endswith("or give fleetflow a GitHub App's credentials (FLEETFLOW_APP_ID and "
                                "FLEETFLOW_APP_PRIVATE_KEY; docs/setup.md, step 1) instead of the token")

    for token, whose in (("ghp_" + "x" * 36, "a person's token"), ("test-token", "a token of no known kind")):
        found = diagnosis(token)
        assert found.findings == [], token
        assert (f"{fleet.gitops_id}: {ACTIONS_PULLS} is off (default workflow permissions: read): GitHub refuses a "
                "pull request opened with a workflow's GITHUB_TOKEN, not with the token this doctor ran with "
                f"({whose}); run fleetflow as its GitHub App or with a token secret, never with GITHUB_TOKEN, or "
                "turn the setting on") in found.checked

    gitops.actions_can_create_pulls = True
    gitops.default_workflow_permissions = "write"
    found = diagnosis(WORKFLOW_TOKEN)
    assert found.findings == []
    assert (f"{fleet.gitops_id}: GitHub Actions may create pull requests (default workflow permissions: write)"
            in found.checked)
    assert stub.count(method="GET", path="/actions/permissions/workflow$") == 4  # the GitOps repository only


def test_doctor_cannot_read_the_actions_setting_without_administration(tmp_path: Path,
                                                                       request: pytest.FixtureRequest) -> None:
    """The endpoint needs Administration: read (a GitHub App or fine-grained token; https://docs.github.com/en/rest/
    actions/permissions), which a workflow's GITHUB_TOKEN has no ``permissions:`` key for: GitHub answers 403
    "Resource not accessible by integration" (with ``X-Accepted-GitHub-Permissions: administration=read``) or 404.
    doctor then says it could not check the setting and why, and the diagnosis stays healthy."""
    from fleetflow.forge.github import GitHubForge

    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    forge = GitHubForge(token=WORKFLOW_TOKEN, api_url=stub.url, **FAST)  # type: ignore[arg-type]
    for status in (403, 404):
        if status == 403:
            stub.inject("GET", "/actions/permissions/workflow$", "forbidden",
                        accepted_permissions="administration=read")
        else:
            stub.inject("GET", "/actions/permissions/workflow$", "status_5xx", status=404)
        with Context(forge=forge, git=GitRepos(tmp_path / "git-doctor"), control_plane=fleet.cp_id) as ctx:
            found = diagnose(ctx)
        assert found.healthy and found.findings == [], status
        [line] = [s for s in found.skipped if ACTIONS_PULLS in s]
        assert line.startswith(f"{fleet.gitops_id}: {ACTIONS_PULLS} could not be read (GitHub answered {status}); ")
        assert line.endswith("\"Get default workflow permissions for a repository\" needs Administration: read (a "
                             "GitHub App or fine-grained token; the repo scope and admin access for a classic one), "
                             "which a workflow's GITHUB_TOKEN cannot be given: see Settings → Actions → General → "
                             "Workflow permissions, or run doctor with such a token")
    forge.close()


def test_doctor_does_not_read_the_actions_setting_as_the_app(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A GitHub App's installation tokens are not a workflow's GITHUB_TOKEN: the setting does not apply and doctor
    reads nothing (the App needs no Administration permission, docs/setup.md). The stand-in answers an installation
    token without Administration: read as GitHub does (403, ``X-Accepted-GitHub-Permissions: administration=read``),
    which the forge turns into a hint naming that permission."""
    from fleetflow.forge.github import GitHubForge

    fleet = make_github_fleet(tmp_path, request)
    stub: GitHubStub = fleet.stub  # type: ignore[attr-defined]
    init_fleet(fleet)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    stub.register_app(4242, public, installed_on=["contoso"], slug="fleetflow",
                      permissions={"contents": "write", "pull_requests": "write", "statuses": "write",
                                   "checks": "read", "metadata": "read"})
    forge = GitHubForge(app_id="4242", app_private_key=_pem(key), api_url=stub.url, **FAST)  # type: ignore[arg-type]
    with Context(forge=forge, git=GitRepos(tmp_path / "app-git"), control_plane=fleet.cp_id) as ctx:
        found = diagnose(ctx)
    assert found.findings == []
    assert (f"{fleet.gitops_id}: fleetflow opens pull requests as its GitHub App: {ACTIONS_PULLS} applies only to a "
            "workflow's GITHUB_TOKEN") in found.checked
    assert stub.count(path="/actions/permissions/workflow$") == 0
    with pytest.raises(ForgeError) as refused:
        forge.workflow_permissions(fleet.gitops_id)
    assert "403" in str(refused.value) and "this request needs administration: read" in str(refused.value)
    forge.close()


def test_doctor_has_no_actions_setting_to_read_on_the_local_forge(tmp_path: Path) -> None:
    fleet = make_local_fleet(tmp_path)
    init_fleet(fleet)
    with fleet.context() as ctx:
        found = diagnose(ctx)
    assert found.findings == []
    assert f"{fleet.gitops_id}: GitHub Actions workflow permissions (the local forge has none)" in found.skipped


def test_doctor_cli_names_the_actions_setting_before_the_first_promotion_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, github_stub: GitHubStub) -> None:  # noqa: F811
    """The run of f2152a5's end-to-end test, asked first: ``fleetflow doctor`` with a workflow's GITHUB_TOKEN
    (github-actions[bot], an installation token) names the setting and its fix (exit 1) before ``fleetflow
    promote`` is refused with GitHub's 403; the setting on, doctor no longer names it and the same promote opens
    the PR."""
    from tests.fleet import git as run_git
    from tests.ghstub.errors import ACTIONS_BOT
    from tests.test_fleet_edits import fresh_fleet

    github_stub.store.login = ACTIONS_BOT
    cp = fresh_fleet(tmp_path, monkeypatch, 0, github_stub)
    monkeypatch.setenv("GITHUB_TOKEN", WORKFLOW_TOKEN)
    sha = run_git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    gitops = github_stub.repo("team0/gitops")
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert doctor.exit_code == 1
    [problem] = [line for line in doctor.stderr.splitlines() if "[actions-pulls]" in line]
    assert problem.startswith(
        f"error: [actions-pulls] team0/gitops: {ACTIONS_PULLS} is off (default workflow permissions: read) and "
        "fleetflow runs with an installation token (ghs_), as a workflow's GITHUB_TOKEN is: GitHub refuses every pull "
        "request fleetflow opens with it (403 \"GitHub Actions is not permitted to create or approve pull requests\"), "
        "so no promotion reaches this repository (hint: Settings → Actions → General → Workflow permissions → Allow "
        "GitHub Actions to create and approve pull requests"), problem
    refused = CliRunner().invoke(cli, ["promote", "--commit", sha])
    assert refused.exit_code == 3 and "GitHub Actions is not permitted to create" in refused.stderr
    gitops.actions_can_create_pulls = True
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert "[actions-pulls]" not in doctor.stderr
    assert "ok       team0/gitops: GitHub Actions may create pull requests (default workflow permissions: read)" in (
        doctor.output)
    opened = CliRunner().invoke(cli, ["promote", "--commit", sha])
    assert opened.exit_code == 0, opened.stderr


def init_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cp: str, gitops: str) -> Any:
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(cli, ["init", "--forge", "local", "--control-plane", cp, "--gitops", gitops])


def test_init_refuses_the_control_plane_as_the_gitops_repository(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``--gitops`` naming the control-plane repository (a trailing slash, or another spelling of it): until
    2026-11-29 init wrote the control plane's branches, then planned the GitOps caller over the control-plane caller
    on dev, qa and prod (its own marker, so "update"), and stopped at "main moved on ... while fleetflow worked"
    with those branches pushed. Now it is a usage error before anything is read or written."""
    cp = tmp_path / "cp.git"
    git(tmp_path, "init", "-q", "--bare", str(cp))
    for gitops in (f"{cp}/", "./cp.git"):
        result = init_cli(tmp_path, monkeypatch, "cp.git", gitops)
        assert result.exit_code == 2, result.output
        assert f"usage error: --gitops {gitops} is the control-plane repository cp.git" in result.stderr
        assert "Nothing was written." in result.stderr
        assert git(tmp_path, "--git-dir", str(cp), "for-each-ref") == ""


def test_same_repository_reads_urls_as_github_names_them() -> None:
    """GitHub's owner and repository names are not case sensitive, and a clone URL may carry a token or leave out
    ``.git`` (https://docs.github.com/en/repositories/creating-and-managing-repositories/about-repositories)."""
    from fleetflow.promotion.bootstrap import same_repository

    assert same_repository("https://x-access-token:a@github.com/Contoso/CP.git", "https://github.com/contoso/cp")
    assert not same_repository("https://github.com/contoso/cp.git", "https://github.com/contoso/gitops.git")
    assert not same_repository("https://github.com/contoso/cp.git", "https://ghe.contoso.com/contoso/cp.git")


def test_init_stopped_half_way_says_what_it_wrote_and_a_second_run_finishes(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The GitOps repository refuses pushes (here a pre-receive hook, as a branch protection or a ruleset does on
    GitHub): init has pushed the control plane's branches by then. Until 2026-11-29 the text said "Branches pushed
    before it are listed above" above no list; now it names what it wrote, and once the repository takes pushes a
    second run writes the rest and a third finds nothing to do. git's pre-receive hook refuses every ref when it
    exits non-zero (https://git-scm.com/docs/githooks#pre-receive)."""
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", str(path))
    hook = gitops / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch'\nexit 1\n")
    hook.chmod(0o755)
    stopped = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert stopped.exit_code == 3, stopped.output
    assert ("Stopped at this error. Written before it: cp.git@main, cp.git@dev, cp.git@qa, cp.git@prod. Running "
            "init again is safe") in stopped.stderr
    assert "listed above" not in stopped.stderr
    assert git(tmp_path, "--git-dir", str(gitops), "for-each-ref") == ""
    hook.unlink()
    again = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert again.exit_code == 0 and "change(s) written" in again.output, again.output
    assert "+ cp.git@" not in again.output.replace("+ cp.git@main: default branch", "")
    third = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert third.exit_code == 0 and "Nothing to do: the repositories are set up." in third.output


@pytest.mark.parametrize(("edit", "said"), [
    ("branch: main", "dev.yaml:8:11: Environment dev: branch 'main' is the control plane's main branch"),
    ("branch: qa", "dev.yaml:8:11: Environment dev: branch 'qa' is also Environment qa's branch"),
])
def test_init_checks_the_chain_as_every_fleet_command_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           edit: str, said: str) -> None:
    """An Environment whose branch is main, or another Environment's: until 2026-11-29 init planned main's caller
    twice (``branches: [main, main, qa, prod]``), or qa's twice, and wrote it (exit 0), while every fleet command
    refuses the chain. Now init refuses it too, at the line, before writing (exit 1)."""
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", str(path))
    assert init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git").exit_code == 0
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(cp), str(work))
    env_file = work / ".environments" / "dev.yaml"
    env_file.write_text(env_file.read_text().replace("branch: dev", edit))
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", f"dev: {edit}")
    git(work, "push", "-q", "origin", "main")
    before = git(tmp_path, "--git-dir", str(cp), "for-each-ref")
    result = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert result.exit_code == 1, result.output
    assert said in result.stderr and "Nothing was written." in result.stderr
    assert git(tmp_path, "--git-dir", str(cp), "for-each-ref") == before


@pytest.mark.parametrize("ref", ["", "v1 beta", "v1\nname: other", "-x", "v1..v2"])
def test_init_refuses_a_ref_no_uses_line_can_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str) -> None:
    """``--ref`` goes into ``uses: fleetflow/fleetflow/.github/workflows/<file>@<ref>``, which names "a SHA, a
    release tag, or a branch name" (https://docs.github.com/en/actions/sharing-automations/reusing-workflows#calling-a-reusable-workflow).
    Until 2026-11-29 ``--ref ""`` planned ``...@`` (a workflow GitHub rejects) and a line break wrote another YAML
    key into the caller, exit 0. Now a usage error (exit 2), with the repositories' problems, nothing written."""
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", str(path))
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["init", "--forge", "local", "--control-plane", "cp.git", "--gitops", "gitops.git",
                                      "--ref", ref])
    assert result.exit_code == 2, result.output
    assert f"usage error: --ref: {ref!r} is not a usable ref" in result.stderr
    assert "Nothing was written." in result.stderr
    assert git(tmp_path, "--git-dir", str(cp), "for-each-ref") == ""
    both = CliRunner().invoke(cli, ["init", "--forge", "local", "--control-plane", "cp.git", "--ref", ref])
    assert both.exit_code == 2 and "no GitOps repository given" in both.stderr and "--ref:" in both.stderr


def test_init_on_github_names_the_owner_and_name_of_a_pasted_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  github_stub: GitHubStub) -> None:  # noqa: F811
    """``--gitops https://github.com/contoso/platform-gitops`` (the browser's address, or the clone URL): the GitHub
    forge takes owner/name only, and until 2026-11-29 init said "forge/git error: invalid GitHub repository ...:
    expected owner/name" (exit 3, a forge failure). Now a usage error (exit 2) that names the owner/name to pass, for
    every such option at once, before any request."""
    github_stub.create_repo("contoso/control-plane")
    monkeypatch.setenv("GITHUB_TOKEN", "stub-token")
    monkeypatch.setenv("GITHUB_API_URL", github_stub.url)
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(cli, ["init", "--forge", "github", "--control-plane",
                                      "git@github.com:contoso/control-plane.git", "--gitops",
                                      "https://github.com/contoso/platform-gitops", "--dry-run"])
    assert result.exit_code == 2, result.output
    assert ("usage error: --control-plane git@github.com:contoso/control-plane.git: GitHub repositories are named "
            "owner/name here (hint: pass --control-plane contoso/control-plane)") in result.stderr
    assert ("usage error: --gitops https://github.com/contoso/platform-gitops: GitHub repositories are named "
            "owner/name here (hint: pass --gitops contoso/platform-gitops)") in result.stderr
    assert github_stub.requests == []


@pytest.mark.parametrize("command", ["status", "metrics"])
def test_status_of_an_empty_control_plane_says_to_run_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           command: str) -> None:
    """``status`` or ``metrics`` on a control plane created but not set up yet (no ``main``): until 2026-11-29 the
    message said "has no main branch" and no more; it names ``fleetflow init`` now."""
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "cp.git"))
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [command, "--forge", "local", "--control-plane", "cp.git"])
    assert result.exit_code == 3, result.output
    assert "the control-plane repo cp.git has no main branch: set it up with fleetflow init" in result.stderr


@pytest.mark.parametrize("holds", ["fleet", "readme"])
def test_init_does_not_sideline_a_default_branch_that_holds_the_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     holds: str) -> None:
    """A control plane whose default branch is ``master`` and holds the Environments (an older repository, or one
    created where the default branch name is ``master``). Until 2026-11-29 init wrote a new ``main`` with the
    starter dev → qa → prod chain and made it the default branch, exit 0: the fleet on ``master`` sidelined
    without a word. Now it refuses at the first document and says how to rename the branch (GitHub: "Renaming a
    branch", https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-branches-in-your-repository/renaming-a-branch);
    a ``master`` holding no YAML (GitHub's "Initial commit" with a README) still gets the starter chain."""
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", "--initial-branch=master", str(path))
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "--initial-branch=master", str(work))
    if holds == "fleet":
        (work / ".environments").mkdir()
        (work / ".environments" / "staging.yaml").write_text(
            "apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: staging\nspec: {}\n")
    else:
        (work / "README.md").write_text("# control plane\n")
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    git(work, "push", "-q", str(cp), "master")
    before = git(tmp_path, "--git-dir", str(cp), "for-each-ref")
    result = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    if holds == "readme":
        assert result.exit_code == 0 and "+ cp.git@main: file .environments/dev.yaml: add" in result.output
        return
    assert result.exit_code == 1, result.output
    assert "error: master@" in result.stderr
    assert ("/.environments/staging.yaml:1:1: cp.git has no main branch, but its default branch master holds 1 YAML "
            "document(s)") in result.stderr
    assert "git push origin master:main" in result.stderr and "Nothing was written." in result.stderr
    assert git(tmp_path, "--git-dir", str(cp), "for-each-ref") == before


def test_a_file_owned_by_deleting_its_init_line_is_no_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first line of every file init writes says "delete the line to own it". Until 2026-11-29 a file whose
    line was deleted, and nothing else changed, was a conflict on every later run (exit 1, "delete it or add the
    line"); it is the owner's file as init would write it now. A file edited beyond that stays a conflict: init
    cannot merge it."""
    cp, gitops = tmp_path / "cp.git", tmp_path / "gitops.git"
    for path in (cp, gitops):
        git(tmp_path, "init", "-q", "--bare", str(path))
    assert init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git").exit_code == 0
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(cp), str(work))
    config = work / ".fleetflow.yaml"
    config.write_text(config.read_text().replace(f"{MARKER}\n", ""))
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "own the config")
    git(work, "push", "-q", "origin", "main")
    owned = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert owned.exit_code == 0, owned.output
    assert "= cp.git@main: file .fleetflow.yaml: yours (its init line deleted), as init would write it" in owned.output
    config.write_text(config.read_text() + "cacheDir: .cache\n")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "edit the config")
    git(work, "push", "-q", "origin", "main")
    edited = init_cli(tmp_path, monkeypatch, "cp.git", "gitops.git")
    assert edited.exit_code == 1 and "! cp.git@main: file .fleetflow.yaml: exists and was not written" in edited.output
