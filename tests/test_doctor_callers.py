"""``fleetflow doctor`` reads the caller workflows by what they call, whatever their names: the inputs they pass
(``approval-environment``, ``status-page``), the secrets they pass, and the branches their triggers run for.

GitHub runs every file in ``.github/workflows/`` whatever its name ("You must store workflow files in the
.github/workflows directory of your repository", https://docs.github.com/en/actions/reference/workflows-and-actions/
workflow-syntax), so a caller copied from examples/workflows/ and named as its owner likes is the caller.
"""

from __future__ import annotations

from fleetflow.promotion.bootstrap import MARKER, WORKFLOW_FILE
from fleetflow.promotion.doctor import diagnose
from tests.fleet import ENVIRONMENTS, Fleet, git
from tests.ghstub.server import GitHubStub
from tests.test_setup import init_fleet


def rename_caller(fleet: Fleet, url: str, branch: str, name: str, edit: tuple[str, str] = ("", "")) -> str:
    """Move init's caller on ``branch`` to ``.github/workflows/<name>`` (without init's marker line), with the one
    replacement ``edit``; push. The new path."""
    work = fleet.root / f"rename-{branch}-{len(list(fleet.root.iterdir()))}"
    git(fleet.root, "clone", "-q", "-b", branch, url, str(work))
    own = f".github/workflows/{name}"
    text = (work / WORKFLOW_FILE).read_text().replace(MARKER + "\n", "")
    if edit[0]:
        assert text.count(edit[0]) == 1
        text = text.replace(*edit)
    git(work, "mv", WORKFLOW_FILE, own)
    (work / own).write_text(text)
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", f"the caller as {name}")
    git(work, "push", "-q", "origin", branch)
    return own


def test_the_inputs_of_a_caller_under_a_name_of_its_own_are_read(fleet: Fleet) -> None:
    """``approval-environment`` (control plane's main) and ``status-page`` (GitOps default branch) in a caller not
    named fleetflow.yml: until 2026-11-29 doctor read only fleetflow.yml for them, so with the caller renamed it
    said "no approval-environment in the caller" and never checked the GitHub Environments the jobs run in ("When a
    workflow job references an environment, the job won't start until all of the environment's protection rules
    pass", https://docs.github.com/en/actions/reference/environments): a manual promotion ran unapproved in an
    environment GitHub created without rules, and doctor said healthy."""
    init_fleet(fleet)
    rename_caller(fleet, fleet.cp_url, "main", "control-plane.yml",
                  ("    secrets:\n", "    with:\n      approval-environment: fleetflow-{0}\n    secrets:\n"))
    default = fleet.forge.default_branch(fleet.gitops_id)
    rename_caller(fleet, fleet.gitops_url, default, "gitops.yaml",
                  ("      control-plane:", "      status-page: true\n      control-plane:"))
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert f"{fleet.cp_id}: no approval-environment in the caller" not in " ".join(diagnosis.checked)
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    if stub is None:  # the local forge has no GitHub Environments: both are looked for, and skipped
        assert diagnosis.findings == []
        assert f"{fleet.cp_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        assert f"{fleet.gitops_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        return
    found = {(f.check, f.where) for f in diagnosis.findings}
    assert found == {("environments", fleet.cp_id), ("environments", f"{fleet.gitops_id}@{default}")}
    approvals = [f for f in diagnosis.findings if f.where == fleet.cp_id]
    assert len(approvals) == len(ENVIRONMENTS)
    assert all("does not exist" in f.problem for f in approvals)
