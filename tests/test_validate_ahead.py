"""``validate`` reports, up front, what would otherwise fail later or silently do nothing.

Errors (exit 1): the gate expecting zero clusters (DESIGN §5: "zero expected clusters is a configuration error
unless allowEmpty: true"), an empty tree, an --env tree of another environment. Warnings (exit 0 unless
--strict): a selector or ConfigMap label no cluster type or target carries (with the closest label as "did you
mean"), targets of environments main does not define (DESIGN §2: "Only targets whose environment equals the
environment being scheduled take part"), an environment scheduling nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import ENV_FILES, make_plane, run_cli, tree_bytes

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
