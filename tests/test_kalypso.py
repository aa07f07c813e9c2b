"""A Kalypso control plane, its files unchanged (Go templates converted by dropping the leading dots), loads,
schedules and renders; its Workload comes from an app repo through a WorkloadRegistration (file:// git)."""

from __future__ import annotations

import json
from pathlib import Path

import git

from fleetflow.render.templates import convert_go_template
from tests.helpers import build_file_tree, run_cli, tree_bytes

K = "scheduler.kalypso.io/v1alpha1"

GO_RECONCILER = """\
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: GitRepository
metadata:
  name: {{ .Environment}}.{{ .Workspace}}.{{ .DeploymentTargetName}}.{{ .ClusterType}}
  namespace: flux-system
spec:
  interval: 30s
  url: {{ .Manifests.repo}}
  ref:
    branch: {{ .Manifests.branch}}
"""

GO_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-config
  namespace: {{ .Namespace}}
data:
{{ toYaml .ConfigData | indent 2}}
"""


def block(text: str, indent: int = 6) -> str:
    pad = " " * indent
    return "\n".join(pad + line if line else "" for line in text.splitlines())


def kalypso_template(name: str, ttype: str, go_text: str) -> str:
    return (
        f"apiVersion: {K}\nkind: Template\nmetadata:\n  name: {name}\nspec:\n  type: {ttype}\n"
        f"  manifests:\n    - |\n{block(convert_go_template(go_text))}\n"
    )


def make_app_repo(path: Path) -> str:
    repo = git.Repo.init(path, initial_branch="main")
    build_file_tree(
        path,
        {
            "workload/workload.yaml": f"""
        apiVersion: {K}
        kind: Workload
        metadata:
          name: hello-world-app
          labels:
            type: application
            family: force
        spec:
          deploymentTargets:
            - name: functional-test
              labels:
                purpose: functional-test
                edge: "true"
              environment: dev
              manifests:
                repo: https://github.com/kaizentm/hello-world-app-gitops
                branch: dev
                path: ./functional-test
            - name: performance-test
              labels:
                purpose: performance-test
                edge: "false"
              environment: dev
              manifests:
                repo: https://github.com/kaizentm/hello-world-app-gitops
                branch: dev
                path: ./performance-test
    """,
            "README.md": "app repo\n",
        },
    )
    repo.git.add("-A")
    repo.index.commit("workload")
    return path.as_uri()


def test_kalypso_control_plane(tmp_path: Path) -> None:
    app_url = make_app_repo(tmp_path / "app")
    main = build_file_tree(
        tmp_path / "main",
        {
            ".environments/dev.yaml": f"""
            apiVersion: {K}
            kind: Environment
            metadata:
              name: dev
            spec:
              controlPlane:
                repo: https://github.com/kaizentm/kalypso-control-plane
                branch: dev
                path: .
        """,
            "templates/reconciler.yaml": kalypso_template("arc-flux", "reconciler", GO_RECONCILER),
            "templates/namespace.yaml": kalypso_template(
                "default",
                "namespace",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Namespace}}\n",
            ),
            "templates/config.yaml": kalypso_template("configmap", "config", GO_CONFIG),
            "workloads/hello-world-app.yaml": f"""
            apiVersion: {K}
            kind: WorkloadRegistration
            metadata:
              name: hello-world-app
              labels:
                type: application
            spec:
              workload:
                repo: {app_url}
                branch: main
                path: workload/
              workspace: kaizen-app-team
        """,
        },
    )
    env = build_file_tree(
        tmp_path / "env",
        {
            "cluster-types/drone.yaml": f"""
            apiVersion: {K}
            kind: ClusterType
            metadata:
              name: drone
              labels:
                region: west-us
                size: small
                edge: "true"
            spec:
              reconciler: arc-flux
              namespaceService: default
              configType: configmap
        """,
            "cluster-types/large.yaml": f"""
            apiVersion: {K}
            kind: ClusterType
            metadata:
              name: large
              labels:
                region: west-us
                size: large
                edge: "false"
            spec:
              reconciler: arc-flux
              namespaceService: default
              configType: configmap
        """,
            "configs/west-us-config.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: west-us-config
              labels:
                platform-config: "true"
                region: west-us
            data:
              REGION: West US
              DATABASE_URL: mysql://west-stage:8806/mysql
        """,
            "configs/drone-config.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: drone-config
              labels:
                platform-config: "true"
                cluster-type: drone
            data:
              DATABASE_URL: mysql://drone:8806/mysql
              LIMITS_CPU: 200m
        """,
            "scheduling/functional-test-policy.yaml": f"""
            apiVersion: {K}
            kind: SchedulingPolicy
            metadata:
              name: functional-test-policy
            spec:
              deploymentTargetSelector:
                workspace: kaizen-app-team
                labelSelector:
                  matchLabels:
                    purpose: functional-test
                    edge: "true"
              clusterTypeSelector:
                labelSelector:
                  matchLabels:
                    edge: "true"
        """,
            "scheduling/performance-test-policy.yaml": f"""
            apiVersion: {K}
            kind: SchedulingPolicy
            metadata:
              name: performance-test-policy
            spec:
              deploymentTargetSelector:
                workspace: kaizen-app-team
                labelSelector:
                  matchLabels:
                    purpose: performance-test
              clusterTypeSelector:
                labelSelector:
                  matchLabels:
                    size: large
        """,
            "gitops-repo.yaml": f"""
            apiVersion: {K}
            kind: GitOpsRepo
            metadata:
              name: dev
            spec:
              repo: https://github.com/kaizentm/kalypso-gitops
              branch: dev
              path: .
        """,
            "base-repo.yaml": f"""
            apiVersion: {K}
            kind: BaseRepo
            metadata:
              name: main
            spec:
              repo: https://github.com/kaizentm/kalypso-control-plane
              branch: main
              path: .
              commit: 0123456789abcdef0123456789abcdef01234567
        """,
        },
    )
    out = tmp_path / "out"
    result = run_cli(
        "render", "--main", main, "--env", env, "--environment", "dev", "--output", out, "--format", "json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["result"]["changes"]["added"] == [
        "drone/hello-world-app-functional-test",
        "large/hello-world-app-performance-test",
    ]
    files = tree_bytes(out)
    reconciler = files["drone/hello-world-app-functional-test/reconciler.yaml"].decode()
    assert "name: dev.kaizen-app-team.hello-world-app-functional-test.drone" in reconciler
    assert "url: https://github.com/kaizentm/hello-world-app-gitops" in reconciler
    config = files["drone/hello-world-app-functional-test/platform-config.yaml"].decode()
    assert "namespace: dev-kaizen-app-team-hello-world-app-functional-test" in config
    # one label each: equal specificity, so the name decides (west-us-config sorts after drone-config)
    assert "  DATABASE_URL: mysql://west-stage:8806/mysql" in config
    assert "  REGION: West US" in config
    # a YAML map held in a value is parsed (test_composition.py), and toYaml would write it into the ConfigMap's
    # data as a map, which Kubernetes refuses (test_configmap_data.py): this config template takes text only
    assert "  LIMITS_CPU: 200m" in config
    large = files["large/hello-world-app-performance-test/platform-config.yaml"].decode()
    assert "DATABASE_URL: mysql://west-stage:8806/mysql" in large


def test_unreachable_workload_repo_exits_3(tmp_path: Path) -> None:
    main = build_file_tree(
        tmp_path / "main",
        {
            "reg.yaml": f"""
        apiVersion: {K}
        kind: WorkloadRegistration
        metadata:
          name: ghost
        spec:
          workload:
            repo: {(tmp_path / "missing").as_uri()}
            branch: main
            path: .
          workspace: w
    """
        },
    )
    env = build_file_tree(tmp_path / "env", {"x.yaml": "# empty\n"})
    result = run_cli(
        "render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "o"
    )
    assert result.exit_code == 3, result.output
    assert "cannot fetch branch 'main'" in result.output and "reg.yaml:7" in result.output
    assert not (tmp_path / "o").exists()


def test_every_unreachable_workload_repo_is_reported_at_once(tmp_path: Path) -> None:
    """Two registrations git cannot fetch: one error (exit 3) names both, each at its file:line, not only the
    first; nothing is written."""
    files = {
        f"{name}.yaml": f"""
        apiVersion: {K}
        kind: WorkloadRegistration
        metadata:
          name: {name}
        spec:
          workload:
            repo: {(tmp_path / name).as_uri()}
            branch: main
            path: .
          workspace: w
    """
        for name in ("ghost", "phantom")
    }
    main = build_file_tree(tmp_path / "main", files)
    env = build_file_tree(tmp_path / "env", {"x.yaml": "# empty\n"})
    result = run_cli(
        "render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "o"
    )
    assert result.exit_code == 3, result.output
    assert "ghost.yaml:7" in result.output and "phantom.yaml:7" in result.output, result.output
    assert result.output.count("cannot fetch branch 'main'") == 2
    assert not (tmp_path / "o").exists()


def test_problems_in_a_workload_repo_come_with_every_other_problem(tmp_path: Path) -> None:
    """A broken file in a registered workload repo, one on main and one on the environment branch: one run reports
    all three at once, each at its file:line (exit 1), and writes nothing."""
    app = tmp_path / "app"
    repo = git.Repo.init(app, initial_branch="main")
    build_file_tree(app, {"workload/workload.yaml": "apiVersion: v1\nkind: Workload\nmetadata: [oops\n"})
    repo.git.add("-A")
    repo.index.commit("a broken workload")
    main = build_file_tree(tmp_path / "main", {
        "reg.yaml": f"""
        apiVersion: {K}
        kind: WorkloadRegistration
        metadata:
          name: app
        spec:
          workload:
            repo: {app.as_uri()}
            branch: main
            path: workload
          workspace: w
    """,
        "broken.yaml": "kind: Environment\nmetadata:\n  name: dev\n   spec: {}\n",
    })
    env = build_file_tree(tmp_path / "env", {"bad.yaml": "apiVersion: v1\nkind: Nonsense\nmetadata:\n  name: x\n"})
    result = run_cli(
        "render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "o"
    )
    assert result.exit_code == 1, result.output
    assert f"{main}/broken.yaml:4:8: invalid YAML" in result.output, result.output
    assert f"{env}/bad.yaml:2:7: unknown kind 'Nonsense'" in result.output and "3 problems found." in result.output
    assert f"{app.as_uri()}@" in result.output and ":workload/workload.yaml:4:1: invalid YAML" in result.output
    assert not (tmp_path / "o").exists()
