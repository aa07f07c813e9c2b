"""``validate`` reports, up front, what would otherwise fail later or silently do nothing.

Errors (exit 1): the gate expecting zero clusters (DESIGN §5: "zero expected clusters is a configuration error
unless allowEmpty: true"), an empty tree, an --env tree of another environment. Warnings (exit 0 unless
--strict): a selector or ConfigMap label no cluster type or target carries (with the closest label as "did you
mean"), targets of environments main does not define (DESIGN §2: "Only targets whose environment equals the
environment being scheduled take part"), an environment scheduling nothing, a ``Namespace`` Kubernetes would
refuse (DESIGN §7).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import ENV_FILES, MAIN_FILES, build_file_tree, make_plane, run_cli, tree_bytes

STAGING_TARGET = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Workload
    metadata:
      name: prep
    spec:
      workspace: team-a
      deploymentTargets:
        - name: staging
          environment: staging
          manifests: {repo: https://example.invalid/prep, branch: main, path: ./staging}
"""


def validate(main: Path, env: Path, *extra: str) -> tuple[int, str, str]:
    result = run_cli("validate", "--main", main, "--env", env, *extra)
    return result.exit_code, result.stdout, result.stderr


def test_gate_expecting_zero_clusters_is_an_error_with_the_environment_location(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, drop=("clusters.yaml",))
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 1, out + err
    assert "the gate expects zero clusters" in err
    assert "dev.yaml:" in err and "allowEmpty" in err


def test_a_cluster_copied_with_another_clusters_context_is_an_error_at_its_status_context(tmp_path: Path) -> None:
    """Two Clusters expecting one status context: every rollout of the environment timed out (the gate counts a
    context once; tests/test_gate.py has the source), and validate said ok (until 2026-11-29). Now an error at the
    second Cluster's statusContext, naming the first; and the same clusters given their own contexts pass."""
    copied = ENV_FILES["clusters.yaml"] + """
        ---
        apiVersion: fleetflow.dev/v1alpha1
        kind: Cluster
        metadata:
          name: cloud-eu-2
        spec:
          clusterType: cloud-eu
          statusContext: flux/cloud-eu-1
    """
    main, env = make_plane(tmp_path / "copied", env={"clusters.yaml": copied})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 1, out + err
    assert re.search(r"clusters.yaml:24:18: Environment dev: Cluster cloud-eu-2 expects the status context "
                     r"'flux/cloud-eu-1' \(its statusContext\), as Cluster cloud-eu-1 does: ", err), err
    main, env = make_plane(tmp_path / "own", env={"clusters.yaml": copied.replace(
        "name: cloud-eu-2\n        spec:\n          clusterType: cloud-eu\n          statusContext: flux/cloud-eu-1",
        "name: cloud-eu-2\n        spec:\n          clusterType: cloud-eu\n          statusContext: flux/cloud-eu-2")})
    assert (tmp_path / "own" / "env" / "clusters.yaml").read_text().count("flux/cloud-eu-2") == 1
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err


def test_allow_empty_or_min_clusters_makes_zero_clusters_fine(tmp_path: Path) -> None:
    for rollout in ("{allowEmpty: true}", "{minClusters: 2, contextPattern: 'flux/*'}"):
        main_files = {".environments/dev.yaml": f"""
            apiVersion: fleetflow.dev/v1alpha1
            kind: Environment
            metadata:
              name: dev
            spec:
              rollout: {rollout}
        """}
        main, env = make_plane(tmp_path / rollout[1:6], main_files, drop=("clusters.yaml",))
        code, out, err = validate(main, env, "--environment", "dev")
        assert code == 0, out + err



def _dev_rollout(rollout: str) -> dict[str, str]:
    """main's Environments file (tests/helpers.py) with dev's ``rollout`` as given."""
    environments = MAIN_FILES[".environments/dev.yaml"]
    assert environments.count("spec: {}") == 1
    dev_spec = f"spec:\n          rollout:\n            {rollout}"
    return {".environments/dev.yaml": environments.replace("spec: {}", dev_spec)}


def test_a_min_clusters_the_gate_can_never_reach_is_an_error_at_its_line(tmp_path: Path) -> None:
    """The gate never passes with ``minClusters: 0`` and no ``allowEmpty``, nor with more than the inventory's
    expected clusters (tests/test_gate.py shows why); validate said ok and every rollout timed out (until
    2026-11-29). Now an error at the minClusters line; a reachable count passes."""
    for count, message in [("0", "rollout.minClusters is 0 without allowEmpty: the gate never takes zero successful "
                                 "reports for a rollout, so every rollout would wait and time out"),
                           ("3", "rollout.minClusters is 3, but the gate expects 2 clusters (the Clusters of the "
                                 "cluster types this environment schedules): with an inventory only their contexts "
                                 "count, so the gate could never succeed and every rollout would time out")]:
        main, env = make_plane(tmp_path / count, _dev_rollout(f"minClusters: {count}"))
        code, out, err = validate(main, env, "--environment", "dev")
        assert code == 1, out + err
        assert f".environments/dev.yaml:7:18: Environment dev: {message} (hint: " in err, err
    main, env = make_plane(tmp_path / "two", _dev_rollout("minClusters: 2"))
    code, out, err = validate(main, env, "--environment", "dev", "--strict")
    assert code == 0, out + err


def test_min_clusters_zero_with_allow_empty_over_an_inventory_is_a_warning(tmp_path: Path) -> None:
    """``minClusters: 0`` + ``allowEmpty: true`` is a gate that passes as soon as the PR is merged: it may be meant
    (an environment nobody waits for), so a warning at the line, and exit 0 without --strict."""
    main, env = make_plane(tmp_path, _dev_rollout("{minClusters: 0, allowEmpty: true}"))
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert re.search(r"warning: \S+/\.environments/dev\.yaml:7:\d+: Environment dev: rollout\.minClusters is 0 "
                     r"with allowEmpty: the gate passes as soon as a rollout is merged, without waiting for any of "
                     r"the 2 expected clusters \(hint: ", err), err


def test_a_flux_default_context_with_capitals_is_no_warning(tmp_path: Path) -> None:
    """Flux posts its default context lowercased, and the gate compares contexts without case, as GitHub does
    (tests/test_gate.py cites both): the kind as Kubernetes spells it counts, so validate has nothing to say (it
    warned that the rollout would time out until 2026-11-29)."""
    clusters = ENV_FILES["clusters.yaml"].replace("statusContext: flux/cloud-eu-1",
                                                  "statusContext: Kustomization/flux-system/e3173055")
    main, env = make_plane(tmp_path, env={"clusters.yaml": clusters})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "warning" not in err, err


def test_two_environments_on_one_branch_are_an_error_at_the_second_ones_branch(tmp_path: Path) -> None:
    """An Environment copied from another with its ``branch``: both pins on one branch (tests/test_reconcile.py
    has what the fleet commands did); validate of either checkout said ok (until 2026-11-29)."""
    main_files = {".environments/dev.yaml": MAIN_FILES[".environments/dev.yaml"].replace(
        "after: [dev]\n", "after: [dev]\n          branch: dev\n")}
    main, env = make_plane(tmp_path, main_files)
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 1, out + err
    assert re.search(r"\.environments/dev\.yaml:13:11: Environment qa: branch 'dev' is also Environment dev's "
                     r"branch: .* \(hint: give qa a branch of its own \(spec\.branch; without it, the environment's "
                     r"name, 'qa'\)\)", err), err

def test_misspelt_policy_label_key_warns_with_did_you_mean(tmp_path: Path) -> None:
    policies = ENV_FILES["policies.yaml"].replace("purpose: test", "purpsoe: test").replace("everything", "typo")
    main, env = make_plane(tmp_path, env={"typo-policy.yaml": policies})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "warning:" in err
    assert "SchedulingPolicy typo selects no deployment targets of dev" in err
    assert "did you mean label key 'purpose'?" in err
    assert "typo-policy.yaml:10" in err  # the matchLabels entry
    strict = validate(main, env, "--environment", "dev", "--strict")
    assert strict[0] == 1


def test_misspelt_cluster_type_value_warns(tmp_path: Path) -> None:
    policies = ENV_FILES["policies.yaml"].replace("values: [eu]", "values: [ue]").replace("everything", "typo")
    main, env = make_plane(tmp_path, env={"typo-policy.yaml": policies})
    code, out, _err = validate(main, env, "--environment", "dev", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    messages = [w["message"] + " " + (w["hint"] or "") for w in data["warnings"]]
    assert any("selects no cluster types" in m and "did you mean region: 'eu'?" in m for m in messages), messages


def test_configmap_label_that_matches_nothing_warns(tmp_path: Path) -> None:
    cm = """
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: edge-only
          labels:
            platform-config: "true"
            knid: edge
        data:
          LOG_LEVEL: trace
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: one-type
          labels:
            platform-config: "true"
            cluster-type: edge-lien1
        data:
          LOG_LEVEL: trace
    """
    main, env = make_plane(tmp_path, env={"extra-configs.yaml": cm})
    code, _out, err = validate(main, env, "--environment", "dev")
    assert code == 0, err
    assert "ConfigMap edge-only applies to no assignment of dev" in err and "did you mean label key 'kind'?" in err
    assert "extra-configs.yaml:7" in err
    assert "ConfigMap one-type applies to no assignment of dev" in err
    assert "did you mean cluster-type: 'edge-line1'?" in err


def test_env_tree_of_another_environment_is_an_error(tmp_path: Path) -> None:
    gitops = ENV_FILES["gitops-repo.yaml"].replace("name: dev", "name: qa").replace("branch: dev", "branch: qa")
    main, env = make_plane(tmp_path, env={"gitops-repo.yaml": gitops})
    code, _out, err = validate(main, env, "--environment", "dev")
    assert code == 1
    assert "this environment tree belongs to environment 'qa'" in err
    assert "gitops-repo.yaml:4" in err and "--environment qa" in err
    # render refuses it too, and writes nothing
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out")
    assert result.exit_code == 1 and tree_bytes(tmp_path / "out") == {}


def test_empty_trees_are_errors(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _out, err = validate(main, empty, "--environment", "dev")
    assert code == 1
    assert f"no fleetflow resource under {empty}" in err
    code, _out, err = validate(empty, env, "--environment", "dev")
    assert code == 1 and f"no fleetflow resource under {empty}" in err


def test_target_of_an_undefined_environment_is_a_warning_and_render_goes_on(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, main={"workloads/prep.yaml": STAGING_TARGET})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "names environment 'staging', which main does not define" in err and "prep.yaml:9" in err
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "cloud-eu" / "app-dev" / "reconciler.yaml").is_file()
    assert "names environment 'staging'" in result.stderr


def test_an_environment_that_schedules_nothing_warns(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, drop=("policies.yaml",))
    code, _out, err = validate(main, env, "--environment", "dev", "--strict")
    assert code == 1
    assert "environment dev schedules no assignment" in err


NOT_READING = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Template
    metadata:
      name: {name}
    spec:
      type: {type}
      contentType: sh
      manifests:
        - |
          echo {{{{ DeploymentTargetName }}}}
"""


def test_a_namespace_kubernetes_refuses_warns_once_at_the_workspace(tmp_path: Path) -> None:
    """A workspace with a dot and capitals gives a ``Namespace`` no Kubernetes namespace may have: a namespace name
    is an RFC 1123 DNS label, lowercase letters, digits and '-', at most 63 characters
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names), so Flux and Argo CD
    would refuse it on every cluster. One warning, at the workspace's line, though the target is scheduled to two
    cluster types; --strict fails; render says the same and still renders."""
    main_files = {"workloads/app.yaml": MAIN_FILES["workloads/app.yaml"].replace("workspace: team-a",
                                                                                "workspace: Team.A")}
    env_files = {"policies.yaml": ENV_FILES["policies.yaml"].replace("workspace: team-a", "workspace: Team.A")}
    main, env = make_plane(tmp_path, main_files, env_files)
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    warned = [line for line in err.splitlines() if "not a valid Kubernetes namespace name" in line]
    assert len(warned) == 1, err
    assert "app.yaml:8:" in warned[0]  # spec.workspace
    assert "workspace 'Team.A' makes Namespace 'dev-Team.A-app-dev'" in warned[0]
    assert "template flux (cluster type cloud-eu) reads it" in warned[0] and "e.g. 'team-a'" in warned[0]
    assert validate(main, env, "--environment", "dev", "--strict")[0] == 1
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "workspace 'Team.A' makes Namespace" in result.stderr


def test_a_namespace_longer_than_63_characters_warns_at_the_target(tmp_path: Path) -> None:
    """``Namespace`` is <environment>-<workspace>-<workload>-<target>: names fleetflow takes (up to 253 characters
    each) make one longer than the 63 characters of a DNS label, which is all a Kubernetes namespace name may be
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names). The warning is at
    the target's name and gives each part's length."""
    long_name = "dev-" + "x" * 50
    app = MAIN_FILES["workloads/app.yaml"].replace("- name: dev\n", f"- name: {long_name}\n")
    main, env = make_plane(tmp_path, {"workloads/app.yaml": app})
    code, out, err = validate(main, env, "--environment", "dev", "--format", "json")
    assert code == 0, out + err
    warned = [w for w in json.loads(out)["warnings"] if "Kubernetes namespace name" in w["message"]]
    assert len(warned) == 1, warned
    assert warned[0]["location"]["file"].endswith("app.yaml") and warned[0]["location"]["line"] == 10
    assert f"Namespace 'dev-team-a-app-{long_name}' of target app-{long_name} is 69 characters" in warned[0][
        "message"]
    assert "workspace 6, workload 3, deployment target name 54" in warned[0]["message"]


def test_a_bad_namespace_no_template_reads_is_not_warned(tmp_path: Path) -> None:
    """A template may use ``Namespace`` for something other than a Kubernetes namespace, or not at all (the
    ansible-pull reconciler of the example names files with it): a workload scheduled only to a cluster type
    whose templates do not read it is not warned; one scheduled where a template reads it is."""
    vm_type = """
        ---
        apiVersion: fleetflow.dev/v1alpha1
        kind: ClusterType
        metadata:
          name: vm
          labels:
            kind: vm
        spec:
          reconciler: script
          namespaceService: no-namespace
          configType: no-config
    """
    vm_policy = """
        apiVersion: fleetflow.dev/v1alpha1
        kind: SchedulingPolicy
        metadata:
          name: vms
        spec:
          deploymentTargetSelector:
            workspace: On.VM
            labelSelector: {}
          clusterTypeSelector:
            labelSelector:
              matchLabels:
                kind: vm
    """
    vm_app = MAIN_FILES["workloads/app.yaml"].replace("name: app", "name: vm-app").replace(
        "workspace: team-a", "workspace: On.VM")
    cloud_app = MAIN_FILES["workloads/app.yaml"].replace("name: app", "name: cloud-app").replace(
        "workspace: team-a", "workspace: In.Cloud")
    main_files = {
        "templates/script.yaml": NOT_READING.format(name="script", type="reconciler"),
        "templates/no-namespace.yaml": NOT_READING.format(name="no-namespace", type="namespace"),
        "templates/no-config.yaml": NOT_READING.format(name="no-config", type="config"),
        "workloads/vm-app.yaml": vm_app,
        "workloads/cloud-app.yaml": cloud_app,
    }
    env_files = {
        "cluster-types/types.yaml": ENV_FILES["cluster-types/types.yaml"] + vm_type,
        "vm-policy.yaml": vm_policy,
        "cloud-policy.yaml": ENV_FILES["policies.yaml"].replace("name: everything", "name: cloud").replace(
            "workspace: team-a", "workspace: In.Cloud"),
    }
    main, env = make_plane(tmp_path, main_files, env_files)
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "5 assignments scheduled" in out  # app and cloud-app on two cluster types each, vm-app on vm
    assert "workspace 'In.Cloud' makes Namespace 'dev-In.Cloud-cloud-app-dev'" in err
    assert "On.VM" not in err, err


def _registration(tmp_path: Path, files: dict[str, str], path: str, workspace: str) -> str:
    """A git repo ``app-repo`` holding ``files`` (one commit on main) and the text of a WorkloadRegistration ``app``
    of it (``path`` at line 9, ``workspace`` at line 10)."""
    import git

    app_repo = tmp_path / "app-repo"
    repo = git.Repo.init(app_repo, initial_branch="main")
    build_file_tree(app_repo, files)
    repo.git.add("-A")
    repo.index.commit("workload")
    return f"""
        apiVersion: fleetflow.dev/v1alpha1
        kind: WorkloadRegistration
        metadata:
          name: app
        spec:
          workload:
            repo: {app_repo.as_uri()}
            branch: main
            path: {path}
          workspace: {workspace}
    """


def test_a_bad_workspace_from_a_registration_warns_at_the_registration(tmp_path: Path) -> None:
    """A Workload read through a WorkloadRegistration takes the registration's workspace: the warning about the
    Namespace it spoils (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names)
    is at the registration's ``workspace`` line, where the fix is."""
    registration = _registration(tmp_path, {"workload.yaml": MAIN_FILES["workloads/app.yaml"].replace(
        "          workspace: team-a\n", "")}, ".", "Team.A")
    env_files = {"policies.yaml": ENV_FILES["policies.yaml"].replace("workspace: team-a", "workspace: Team.A")}
    main, env = make_plane(tmp_path, {"registrations/app.yaml": registration}, env_files, drop=("workloads/app.yaml",))
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    warned = [line for line in err.splitlines() if "not a valid Kubernetes namespace name" in line]
    assert len(warned) == 1, err
    assert "registrations/app.yaml:10:" in warned[0] and "workspace 'Team.A'" in warned[0]


@pytest.mark.parametrize(
    ("old", "new", "expected", "where"),
    [
        ("  name: app\n", "  name: my.app\n", "workload 'my.app' makes Namespace 'dev-team-a-my.app-dev'",
         "app.yaml:4:"),
        ("- name: dev\n", "- name: dev_1\n", "deployment target name 'dev_1' makes Namespace 'dev-team-a-app-dev_1'",
         "app.yaml:10:"),
    ],
    ids=["workload-name", "target-name"],
)
def test_a_name_fleetflow_takes_but_a_namespace_cannot_hold_warns_at_that_name(
    tmp_path: Path, old: str, new: str, expected: str, where: str
) -> None:
    """Workload and target names may hold '.' and '_' (they are folder names), a namespace name may not
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names): the warning is
    at the name that holds them, once."""
    app = MAIN_FILES["workloads/app.yaml"].replace(old, new, 1)
    main, env = make_plane(tmp_path, {"workloads/app.yaml": app})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    warned = [line for line in err.splitlines() if "not a valid Kubernetes namespace name" in line]
    assert len(warned) == 1, err
    assert expected in warned[0] and where in warned[0], warned[0]


def _two_workspaces(tmp_path: Path, second_selects: str, first_only: str | None = None) -> tuple[Path, Path]:
    """Workload team-api of workspace platform and workload api of workspace platform-team, each with a target
    dev: both give the Namespace dev-platform-team-api-dev. The first is scheduled to both cluster types (or to
    those of kind ``first_only``), the second to those ``second_selects`` (a matchLabels line)."""
    team_api = MAIN_FILES["workloads/app.yaml"].replace("name: app", "name: team-api").replace(
        "workspace: team-a", "workspace: platform")
    api = MAIN_FILES["workloads/app.yaml"].replace("name: app", "name: api").replace(
        "workspace: team-a", "workspace: platform-team")
    first = ENV_FILES["policies.yaml"].replace("workspace: team-a", "workspace: platform")
    if first_only is not None:
        first = first.replace("key: region", "key: kind").replace("values: [eu]", f"values: [{first_only}]")
    second = f"""
        apiVersion: fleetflow.dev/v1alpha1
        kind: SchedulingPolicy
        metadata:
          name: platform-team
        spec:
          deploymentTargetSelector:
            workspace: platform-team
            labelSelector: {{}}
          clusterTypeSelector:
            labelSelector:
              matchLabels:
                {second_selects}
    """
    return make_plane(tmp_path, {"workloads/app.yaml": team_api, "workloads/api.yaml": api},
                      {"policies.yaml": first, "second-policy.yaml": second})


def test_two_targets_giving_one_namespace_on_one_cluster_type_warn_once(tmp_path: Path) -> None:
    """``Namespace`` joins environment, workspace and target id with '-', which the names may hold too: workspace
    platform + workload team-api and workspace platform-team + workload api both give dev-platform-team-api-dev.
    Scheduled to one cluster type, their objects share one namespace on its clusters, and both reconcilers own the
    Namespace object: Flux deletes what a Kustomization applied when the Kustomization is deleted with prune on
    (https://fluxcd.io/flux/cmd/flux_delete_kustomization/), Argo CD flags a resource two Applications manage
    (argoproj/argo-cd docs/user-guide/sync-options.md, "Fail the sync if a shared resource is found"). One
    warning (two cluster types have both), at the target named last; --strict fails; render still renders."""
    main, env = _two_workspaces(tmp_path, "kind: edge")
    code, out, err = validate(main, env, "--environment", "dev", "--format", "json")
    assert code == 0, out + err
    shared = [w for w in json.loads(out)["warnings"] if "give one Namespace" in w["message"]]
    assert len(shared) == 1, json.loads(out)["warnings"]
    assert shared[0]["message"] == (
        "targets api-dev (workspace 'platform-team') and team-api-dev (workspace 'platform') of environment dev "
        "give one Namespace 'dev-platform-team-api-dev' and are both scheduled to cluster type edge-line1; "
        "template flux (cluster type cloud-eu) reads it")
    assert shared[0]["location"]["file"].endswith("workloads/app.yaml") and shared[0]["location"]["line"] == 10
    assert "rename a workspace, workload or deployment target" in shared[0]["hint"]
    assert validate(main, env, "--environment", "dev", "--strict")[0] == 1
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "give one Namespace 'dev-platform-team-api-dev'" in result.stderr
    assert (tmp_path / "out" / "edge-line1" / "api-dev").is_dir()


def test_two_targets_giving_one_namespace_on_different_cluster_types_are_not_warned(tmp_path: Path) -> None:
    """The same two Namespaces, but team-api-dev scheduled to the cloud cluster type only and api-dev to the
    edge one only: no cluster holds both, nothing is warned."""
    main, env = _two_workspaces(tmp_path, "kind: edge", first_only="cloud")
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "2 assignments scheduled" in out, out
    assert "give one Namespace" not in err, err


@pytest.mark.parametrize(("length", "code"), [(235, 0), (236, 1)])
def test_a_cluster_type_name_must_leave_room_for_its_state_file(tmp_path: Path, length: int, code: int) -> None:
    """A cluster type's state shard is ``.fleetflow/state/<name>.json``, written through
    ``.<name>.json.fleetflow-tmp``, and a file name holds 255 bytes (ext4's NAME_MAX; git refuses to check out a
    longer one: "File name too long"). A name of 236-253 characters, which the general name rule allows, passed
    validate, then stopped render half-way (errno 36, the manifests already written) and made schedule push a
    branch no cluster could check out (a bad-input hunt, 2026-11-28). Now it is refused at its line, nothing
    written; 235 characters render, state file and all."""
    name = "c" * length
    types = ENV_FILES["cluster-types/types.yaml"].replace("name: cloud-eu\n", f"name: {name}\n")
    clusters = ENV_FILES["clusters.yaml"].replace("clusterType: cloud-eu", f"clusterType: {name}")
    main, env = make_plane(tmp_path, env={"cluster-types/types.yaml": types, "clusters.yaml": clusters})
    result, out = validate(main, env, "--environment", "dev"), tmp_path / "out"
    assert result[0] == code, result
    rendered = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", out)
    assert rendered.exit_code == code, rendered.output
    if code:
        assert f"types.yaml:4:9: invalid name '{name}' (236 characters)" in result[2], result[2]
        assert "at most 235 characters (a cluster type's name is also the file name of its state" in result[2]
        assert tree_bytes(out) == {}
    else:
        assert f".fleetflow/state/{name}.json" in tree_bytes(out)


def _named_environment(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The helpers' plane with its environment dev renamed ``name`` (its Environment, qa's ``after``, the target's
    environment and the GitOpsRepo)."""
    envs = MAIN_FILES[".environments/dev.yaml"].replace("name: dev\n", f"name: {name}\n")
    app = MAIN_FILES["workloads/app.yaml"].replace("environment: dev\n", f"environment: {name}\n")
    gitops = ENV_FILES["gitops-repo.yaml"].replace("name: dev\n", f"name: {name}\n")
    return make_plane(tmp_path, {".environments/dev.yaml": envs.replace("after: [dev]", f"after: [{name}]"),
                                 "workloads/app.yaml": app}, {"gitops-repo.yaml": gitops})


@pytest.mark.parametrize(("length", "code"), [(218, 0), (219, 1), (253, 1)])
def test_an_environment_name_must_leave_room_for_the_names_made_from_it(tmp_path: Path, length: int,
                                                                        code: int) -> None:
    """An environment's name goes into git refs, a file name, a status context and artifact names (see
    ``test_every_name_made_from_the_longest_environment_name_is_valid``). Any name up to 253 characters passed
    validate (``ok``, with Namespace warnings only), then failed later: at 242-250 characters ``schedule --plan-dir``
    stopped with ``usage error: .../.<name>.diff.partial: File name too long (errno 36)``, blaming the path; from
    251 git could not create the branch fleetflow/<name> (``cannot lock ref``: the ref's file and its ``.lock``);
    from 219 GitHub refuses the merge record's tag (``GH005: Sorry, refs longer than 255 bytes are not allowed``).
    Now a name longer than 218 characters is refused at its line, by validate, render and every other reader."""
    name = "e" * length
    main, env = _named_environment(tmp_path, name)
    code_, out, err = validate(main, env)
    assert code_ == code, out + err
    if code:
        assert f"dev.yaml:4:9: invalid name '{name}' ({length} characters)" in err, err
        assert "at most 218 characters (an environment's name is part of the git refs fleetflow writes, such as " \
               "refs/tags/fleetflow/merge-when-green/<name>, and GitHub refuses a ref longer than 255 bytes)" in err
        assert err.count("error:") == 1, err  # the name, once: not its references as well
    else:
        assert f"ok: {name}: 2 assignments" in out, out


def test_every_name_made_from_the_longest_environment_name_is_valid(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The longest name validate accepts, through every name fleetflow derives from it, each against its limit:

    * git refs: GitHub refuses a ref longer than 255 bytes ("GH005: Sorry, refs longer than 255 bytes are not
      allowed", desktop/desktop#819, dependabot/dependabot-core#5761); the merge record's tag
      ``refs/tags/fleetflow/merge-when-green/<name>`` is the longest, exactly 255. git itself keeps a ref as a file
      and locks it with ``<ref>.lock`` beside it: a component of at most 250 bytes (pushed here to a real repo;
      251 gives ``cannot lock ref``);
    * the status context ``fleetflow/<name>``: GitHub's Statuses API takes at most 255 characters (422 beyond,
      runatlantis/atlantis#2506 and #6541);
    * ``<name>.diff`` in ``--plan-dir``, written through ``.<name>.diff.partial``: a file name holds 255 bytes
      (ext4, XFS, APFS: errno 36 beyond), written here by ``schedule --plan-dir``, end to end on the local forge;
    * the workflows' artifacts ``fleetflow-shard-<name>-K-of-N`` (N up to 255) and ``fleetflow-plan-<name>``:
      actions/upload-artifact takes 1 to 256 characters ("name invalid length for artifact name: must be between
      1 and 256 characters", graalvm/mandrel#731).

    Not limited by it: the ``Namespace`` render variable (a DNS label, 63 characters) is warned about where a
    template reads it (fleetflow/render/namespaces.py), since many templates never do."""
    from fleetflow.cli import main as cli
    from fleetflow.model.resources import ENVIRONMENT_NAME_LIMIT
    from fleetflow.promotion.context import head_branch, status_context
    from fleetflow.promotion.merge_records import KINDS, record_ref
    from tests import fleet as fleet_module

    name = "e" * ENVIRONMENT_NAME_LIMIT
    refs = [record_ref(name, kind) for kind in KINDS] + [f"refs/heads/{head_branch(name)}", f"refs/heads/{name}"]
    assert max(len(ref.encode()) for ref in refs) == 255
    assert len(status_context(name)) <= 255
    workflow = (Path(__file__).parent.parent / ".github" / "workflows" / "fleetflow-schedule-shards.yml").read_text()
    artifacts = re.findall(r"name: (fleetflow-(?:shard|plan)-\$\{\{ inputs\.environment \}\}\S*)", workflow)
    assert len(artifacts) == 2, artifacts
    for artifact in artifacts:
        given = artifact.replace("${{ inputs.environment }}", name).replace("${{ matrix.shard }}", "255")
        assert len(given.replace("${{ inputs.shards }}", "255")) <= 256, artifact

    monkeypatch.setattr(fleet_module, "ENVIRONMENTS", {name: []})
    fleet = fleet_module.local_fleet(tmp_path)  # the environment branch <name> on a real git repo
    env = {"FLEETFLOW_CACHE_DIR": str(tmp_path / "cli-cache"), "FLEETFLOW_PLAN_DIR": str(tmp_path / "plans")}
    forge = ["--forge", "local", "--control-plane", fleet.cp_url]
    sha = fleet.branch_sha(fleet.cp_url, "main")
    for args in (["promote", "--environment", name, "--commit", sha], ["schedule", "--environment", name]):
        result = CliRunner().invoke(cli, [*args, *forge], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    assert (tmp_path / "plans" / f"{name}.diff").is_file()
    assert fleet.branch_sha(fleet.gitops_url, head_branch(name))
    tip = fleet.branch_sha(fleet.gitops_url, name)
    for ref in refs:  # every ref, by git's own rules (the .lock beside each file)
        fleet_module.git(tmp_path, "--git-dir", fleet.gitops_url, "update-ref", ref, tip)


def test_a_byte_order_mark_before_the_first_ignore_pattern_is_skipped_as_git_skips_it(tmp_path: Path) -> None:
    """An editor that saves UTF-8 with a byte-order mark put it before the first pattern of ``.fleetflowignore``,
    which then no longer matched (a bad-input hunt, 2026-11-28): the file it named was read, and refused as a kind
    fleetflow does not know. git skips the mark in a ``.gitignore`` (``dir.c``, ``add_patterns_from_buffer``: "skip
    utf8 bom"), and so does fleetflow now."""
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"
    main, env = make_plane(tmp_path, env={"secret.yaml": secret})
    (env / ".fleetflowignore").write_bytes(b"\xef\xbb\xbfsecret.yaml\n")
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0, out + err
    assert "Secret" not in err


@pytest.mark.parametrize(("standing", "said"), [
    ("folder", "a folder stands where fleetflow writes the file cloud-eu/app-dev/reconciler.yaml"),
    ("file", "a file stands where fleetflow writes the folder cloud-eu/"),
], ids=["folder-where-a-file-goes", "file-where-a-folder-goes"])
def test_render_and_plan_refuse_what_stands_in_the_way_before_writing(
    tmp_path: Path, standing: str, said: str
) -> None:
    """A folder where a rendered file goes, or a file where a cluster-type folder goes, in the output folder:
    render wrote the other files, then stopped on the temporary file (errno 21 or 20, exit 2), left
    ``.reconciler.yaml.fleetflow-tmp`` in the GitOps tree, said "the next render finishes the job" (it failed the
    same way), and plan said nothing (a bad-input hunt, 2026-11-28). Now both refuse with the path (exit 1), the
    schedule's rule on the GitOps branch, and render writes nothing."""
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    if standing == "folder":
        (out / "cloud-eu" / "app-dev" / "reconciler.yaml").mkdir(parents=True)
        (out / "cloud-eu" / "app-dev" / "reconciler.yaml" / "mine.txt").write_text("kept\n")
    else:
        out.mkdir()
        (out / "cloud-eu").write_text("kept\n")
    before = tree_bytes(out)
    planned = run_cli("plan", "--main", main, "--env", env, "--environment", "dev", "--output", out)
    assert planned.exit_code == 1 and said in planned.stderr, planned.output
    rendered = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", out)
    assert rendered.exit_code == 1 and said in rendered.stderr, rendered.output
    assert "Nothing was written to" in rendered.stderr and "finishes the job" not in rendered.stderr
    assert tree_bytes(out) == before
    assert not list(out.rglob("*.fleetflow-tmp"))


def test_strict_says_why_it_fails_and_not_ok(tmp_path: Path) -> None:
    """``validate --strict`` failing on a warning printed "ok: dev: ..." and exited 1, and its JSON had ``ok:
    false`` with no problem at all: the reason was only among the warnings (a bad-input hunt, 2026-11-28). Now one
    problem says the warnings fail the check, and the text does not say "ok"; without --strict nothing changes."""
    configs = ENV_FILES["configs.yaml"].replace('platform-config: "true"\n            kind: edge',
                                                'platform-config: "true"\n            kidn: edge')
    main, env = make_plane(tmp_path, env={"configs.yaml": configs})
    code, out, err = validate(main, env, "--environment", "dev", "--strict")
    assert code == 1, out + err
    assert "ok:" not in out and "checked, with warnings: dev:" in out, out
    assert "1 warning and --strict: each warning fails the check" in err, err
    code, out, _ = validate(main, env, "--environment", "dev", "--strict", "--format", "json")
    data = json.loads(out)
    assert (code, data["ok"], data["exitCode"]) == (1, False, 1)
    assert [p["message"] for p in data["problems"]] == ["1 warning and --strict: each warning fails the check"]
    assert len(data["warnings"]) == 1
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 0 and out.startswith("ok: dev:"), out + err


@pytest.mark.parametrize(("path", "said"), [
    ("nope", "path 'nope' not found in"),
    ("../..", "workload path '../..' leaves the repository"),
], ids=["missing", "outside"])
def test_a_registration_path_problem_is_at_its_line(tmp_path: Path, path: str, said: str) -> None:
    """A WorkloadRegistration whose ``path`` names nothing in the branch, or leaves the repository, was reported
    with no file and line (a bad-input hunt, 2026-11-28), where a fetch failure of the same registration had
    them: it is at the registration's ``path`` line now, with a hint."""
    registration = _registration(tmp_path, {"wl/workload.yaml": MAIN_FILES["workloads/app.yaml"]}, path, "team-a")
    main, env = make_plane(tmp_path, {"registrations/app.yaml": registration}, drop=("workloads/app.yaml",))
    code, out, _ = validate(main, env, "--environment", "dev", "--format", "json")
    assert code == 1, out
    [problem] = [p for p in json.loads(out)["problems"] if said in p["message"]]
    assert problem["location"]["file"].endswith("registrations/app.yaml"), problem
    assert problem["location"]["line"] == 9 and problem["hint"], problem


def test_a_policy_for_a_workspace_no_target_is_in_warns_with_did_you_mean(tmp_path: Path) -> None:
    """``deploymentTargetSelector.workspace: team-aa`` (a typo) selected nothing, and nothing said so, even under
    --strict, where the same typo in ``matchLabels`` was warned (a bad-input hunt, 2026-11-28). Now a warning at
    the workspace's line, with the closest workspace of the environment's targets."""
    typo = ENV_FILES["policies.yaml"].replace("name: everything", "name: typo").replace(
        "workspace: team-a", "workspace: team-aa")
    main, env = make_plane(tmp_path, env={"typo-policy.yaml": typo})
    code, out, _ = validate(main, env, "--environment", "dev", "--format", "json")
    assert code == 0, out
    [warning] = [w for w in json.loads(out)["warnings"] if "SchedulingPolicy typo" in w["message"]]
    assert warning["message"] == ("SchedulingPolicy typo selects no deployment targets of dev: no target is in "
                                  "workspace 'team-aa'")
    assert warning["location"]["file"].endswith("typo-policy.yaml") and warning["location"]["line"] == 7
    assert warning["hint"] == "did you mean workspace: 'team-a'? known: team-a"
    assert validate(main, env, "--environment", "dev", "--strict")[0] == 1


def test_an_empty_status_context_is_an_error_at_its_key(tmp_path: Path) -> None:
    """``statusContext: ""`` read as no statusContext: the error stood at the document's start ("has no
    statusContext"), and with ``rollout.contextPattern`` the pattern's context was used without a word. Now an
    error at the key, saying it is empty and how to fix it; left out, the Cluster falls back as documented."""
    empty = ENV_FILES["clusters.yaml"].replace("statusContext: flux/cloud-eu-1", 'statusContext: ""')
    assert empty != ENV_FILES["clusters.yaml"]
    main, env = make_plane(tmp_path / "empty", env={"clusters.yaml": empty})
    code, out, err = validate(main, env, "--environment", "dev")
    assert code == 1, out + err
    written = (tmp_path / "empty" / "env" / "clusters.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(written, 1) if 'statusContext: ""' in text)
    assert re.search(rf"clusters.yaml:{line}:\d+: Cluster cloud-eu-1: spec.statusContext is empty text "
                     r"\(hint: write the text after 'statusContext:', or leave 'statusContext:' out\)", err), err
    assert "has no statusContext" not in err, err
