"""Ownership of the output: fleetflow deletes only files its state says it wrote (DESIGN §4, "never delete what
fleetflow did not write"). Foreign files in cluster-type folders are kept and listed; ``plan`` shows every file
render would delete; ``--prune-foreign`` deletes the others too, after a confirmation (``--yes`` off a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

from fleetflow.render.incremental import AssignmentState, RenderState
from fleetflow.render.ownership import examined_folders, ownership, status_folders
from tests.helpers import ENV_FILES, make_plane, run_cli, tree_bytes


def render(main: Path, env: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", out, *extra)
    return result.exit_code, result.stdout, result.stderr


def state(**assignments: tuple[str, ...]) -> RenderState:
    return RenderState(
        "dev",
        assignments={aid.replace("__", "/"): AssignmentState("i", "c", files) for aid, files in assignments.items()},
    )


def test_ownership_rule_is_the_previous_state() -> None:
    previous = state(ct__a=("reconciler.yaml", "namespace.yaml"), ct__gone=("reconciler.yaml",))
    current = state(ct__a=("reconciler.yaml",))
    paths = [
        "ct/a/reconciler.yaml", "ct/a/namespace.yaml", "ct/a/hand-written.yaml", "ct/gone/reconciler.yaml",
        "ct/gone/notes.md", "ct/ingress/hand-written.yaml", "ct/kustomization.yaml", "ct/_status/old.yaml",
        "README.md", "other/x/y.yaml", ".fleetflow/state.json",
    ]
    found = ownership(previous, current, {"ct/_status/new.yaml"}, paths)
    assert found.delete == ["ct/_status/old.yaml", "ct/a/namespace.yaml", "ct/gone/reconciler.yaml"]
    assert found.foreign == [
        "ct/a/hand-written.yaml", "ct/gone/notes.md", "ct/ingress/hand-written.yaml", "ct/kustomization.yaml",
    ]
    # without a previous state only the reserved status folders are known to be fleetflow's
    assert ownership(None, current, set(), paths).delete == ["ct/_status/old.yaml"]


def test_status_folders_are_those_of_every_cluster_type_written_into_now_or_before_but_the_kept() -> None:
    """One rule for which ``_status/`` folders a render decides, used by the ownership sort, the diff and the
    "nothing to write" check alike: a cluster type that only had assignments before (its folder's reporters go),
    one that only has reporters, one whose assignments were removed (named by ``removed`` when the previous state
    was not read), never one whose reporters were kept."""
    previous = state(old__a=("reconciler.yaml",), both__a=("reconciler.yaml",))
    current = state(both__a=("reconciler.yaml",), new__a=("reconciler.yaml",), kept__a=("reconciler.yaml",))
    reporters = ["only/_status/r.yaml", "both/_status/r.yaml"]
    assert status_folders(previous, current, reporters, {"kept"}) == {
        "old/_status", "both/_status", "new/_status", "only/_status",
    }
    assert status_folders(None, current, reporters, {"kept"}, removed=["old/a"]) == {
        "old/_status", "both/_status", "new/_status", "only/_status",
    }
    assert status_folders(None, current, reporters, {"kept"}) == {"both/_status", "new/_status", "only/_status"}
    assert examined_folders(previous, current, ["new/a"], reporters, kept_reporters={"kept"}) == {
        "new/a", "old/a", "old/_status", "both/_status", "new/_status", "only/_status",
    }


def test_first_render_into_an_existing_gitops_folder_keeps_hand_written_files(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    hand = out / "cloud-eu" / "ingress" / "hand-written.yaml"
    hand.parent.mkdir(parents=True)
    hand.write_text("kind: Ingress\n")
    code, stdout, _ = render(main, env, out)
    assert code == 0
    assert hand.read_text() == "kind: Ingress\n"
    assert "Kept 1 file not managed by fleetflow" in stdout and "cloud-eu/ingress/hand-written.yaml" in stdout
    code, stdout, _ = render(main, env, out, "--full", "--format", "json")
    assert code == 0 and hand.is_file()
    assert json.loads(stdout)["result"]["foreign"] == ["cloud-eu/ingress/hand-written.yaml"]


def test_removed_assignment_loses_only_fleetflows_files(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    assert render(main, env, out)[0] == 0
    notes = out / "cloud-eu" / "app-dev" / "NOTES.md"
    notes.write_text("runbook\n")
    # cloud-eu leaves the policy: the cloud-eu/app-dev assignment goes
    policies = ENV_FILES["policies.yaml"].replace("values: [eu]", "values: [eu]\n                - key: kind\n"
                                                  "                  operator: In\n                  values: [edge]")
    main2, env2 = make_plane(tmp_path / "v2", env={"policies.yaml": policies})
    plan = run_cli("plan", "--main", main2, "--env", env2, "--environment", "dev", "--output", out)
    assert plan.exit_code == 0, plan.output
    for name in ("reconciler.yaml", "namespace.yaml", "platform-config.yaml"):
        assert f"delete cloud-eu/app-dev/{name}" in plan.stdout
    assert "cloud-eu/app-dev/NOTES.md" in plan.stdout and "render keeps 1 file not managed" in plan.stdout.lower()
    assert "NOTES.md" not in plan.stdout.split("---", 1)[-1]  # not in the diff: nothing happens to it
    code, stdout, _ = render(main2, env2, out)
    assert code == 0
    assert sorted(p.name for p in (out / "cloud-eu" / "app-dev").iterdir()) == ["NOTES.md"]
    assert "cloud-eu/app-dev/NOTES.md" in stdout


def test_prune_foreign_refuses_off_a_terminal_without_yes(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    assert render(main, env, out)[0] == 0
    stray = out / "cloud-eu" / "app-dev" / "stray.yaml"
    stray.write_text("stray")
    before = tree_bytes(out)
    code, _, err = render(main, env, out, "--prune-foreign")
    assert code == 2 and "pass --yes" in err and "cloud-eu/app-dev/stray.yaml" in err
    assert tree_bytes(out) == before
    code, stdout, _ = render(main, env, out, "--prune-foreign", "--yes", "--format", "json")
    assert code == 0 and not stray.exists()
    assert json.loads(stdout)["result"]["deleted"] == ["cloud-eu/app-dev/stray.yaml"]


def test_schedule_keeps_foreign_files_on_the_gitops_branch(tmp_path: Path) -> None:
    """The GitOps commit schedule proposes follows the same rule: what fleetflow did not write stays."""
    from fleetflow.promotion.promote import promote_many
    from fleetflow.promotion.schedule import schedule_environment
    from tests.fleet import git
    from tests.test_promotion import first_commit, make_local_fleet

    fleet = make_local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, first_commit(fleet))
    fleet.approve("dev")
    clone = tmp_path / "gitops-clone"
    git(tmp_path, "clone", "-q", "--branch", "dev", fleet.gitops_url, str(clone))
    (clone / "cloud" / "app-dev" / "NOTES.md").write_text("runbook\n")
    (clone / "cloud" / "ingress").mkdir()
    (clone / "cloud" / "ingress" / "hand-written.yaml").write_text("kind: Ingress\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "hand-written files")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/dev")
    # the app-dev target leaves dev: its assignment goes
    fleet.push_env("dev", {"policy.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata:\n"
                                          "  name: app\nspec:\n  deploymentTargetSelector:\n"
                                          "    labelSelector: {matchLabels: {purpose: other}}\n"
                                          "  clusterTypeSelector:\n    labelSelector: {}\n"})
    with fleet.context() as ctx:
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation in ("created", "updated"), outcome.message
    files = git(tmp_path, "--git-dir", fleet.gitops_url, "ls-tree", "-r", "--name-only", "refs/heads/fleetflow/dev")
    assert "cloud/app-dev/NOTES.md" in files.splitlines()
    assert "cloud/ingress/hand-written.yaml" in files.splitlines()
    assert "cloud/app-dev/reconciler.yaml" not in files.splitlines()
