"""What a Kalypso user has, copied as it is, where Kalypso and fleetflow read it differently: refused, or warned,
with the Kalypso concept and the fleetflow one named, never a different deployment without a word.

Sources: Kalypso's sample control plane (github.com/microsoft/kalypso-control-plane: main's ``.environments/dev.yaml``
and ``stage.yaml``, ``.github/workflows/ci.yaml``, ``check-promote.yaml``) and its scheduler
(github.com/microsoft/kalypso-scheduler: ``api/v1alpha1/environment_types.go``, ``scheduler/templater.go``,
``controllers/workload_controller.go``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetflow.errors import InputError, Location, Problem, Problems
from fleetflow.model.controlplane import load_control_plane
from fleetflow.model.references import check_environment_chain
from fleetflow.render.templates import TemplateEngine, TemplateSource
from tests.helpers import build_file_tree, run_cli
from tests.test_kalypso import K, kalypso_template

# .environments/dev.yaml and stage.yaml of kalypso-control-plane's main, byte for byte but the trailing blanks
KALYPSO_ENV = """\
apiVersion: scheduler.kalypso.io/v1alpha1
kind: Environment
metadata:
  labels:
  name: {name}
spec:
  controlPlane:
    repo: https://github.com/microsoft/kalypso-control-plane
    branch: {name}
    path: .
"""


def environments(**extra: str) -> dict[str, str]:
    return {f".environments/{name}.yaml": KALYPSO_ENV.format(name=name) + extra.get(name, "")
            for name in ("dev", "stage")}


def kalypso_plane(tmp_path: Path, main_files: dict[str, str], env_files: dict[str, str] | None = None,
                  ) -> tuple[Path, Path]:
    """A small Kalypso control plane (one cluster type, one target, one Cluster for the gate)."""
    main = build_file_tree(tmp_path / "main", {
        **main_files,
        "templates/reconciler.yaml": kalypso_template(
            "arc-flux", "reconciler", "kind: GitRepository\nmetadata:\n  name: {{ .DeploymentTargetName}}\n"),
        "templates/namespace.yaml": kalypso_template(
            "default", "namespace", "kind: Namespace\nmetadata:\n  name: {{ .Namespace}}\n"),
        "templates/config.yaml": kalypso_template(
            "configmap", "config",
            "kind: ConfigMap\nmetadata:\n  name: platform-config\ndata:\n{{ toYaml .ConfigData | indent 2}}\n"),
        "workloads/app.yaml": f"""
            apiVersion: {K}
            kind: Workload
            metadata:
              name: app
            spec:
              deploymentTargets:
                - name: web
                  environment: dev
                  manifests: {{repo: https://github.com/x/app-gitops, branch: dev, path: ./web}}
        """,
    })
    env = build_file_tree(tmp_path / "env", {
        "large.yaml": f"""
            apiVersion: {K}
            kind: ClusterType
            metadata:
              name: large
              labels: {{size: large}}
            spec: {{reconciler: arc-flux, namespaceService: default, configType: configmap}}
        """,
        "cluster.yaml": """
            apiVersion: fleetflow.dev/v1alpha1
            kind: Cluster
            metadata:
              name: large-1
            spec: {clusterType: large, statusContext: large-1}
        """,
        "policy.yaml": f"""
            apiVersion: {K}
            kind: SchedulingPolicy
            metadata:
              name: all
            spec:
              deploymentTargetSelector: {{labelSelector: {{}}}}
              clusterTypeSelector: {{labelSelector: {{}}}}
        """,
        "gitops-repo.yaml": f"""
            apiVersion: {K}
            kind: GitOpsRepo
            metadata:
              name: dev
            spec: {{repo: https://github.com/x/gitops, branch: dev, path: .}}
        """,
        **(env_files or {}),
    })
    return main, env


def test_kalypso_environments_without_an_order_are_refused(tmp_path: Path) -> None:
    """Kalypso's Environment has no field for the order (``EnvironmentSpec`` is ``controlPlane`` only): its sample
    workflows keep it in each GitHub environment's ``NEXT_ENVIRONMENT`` secret (check-promote.yaml). Copied as they
    are, ``dev`` and ``stage`` both lacked ``after``, so both came first: every push to main promoted to stage at
    once, with dev's rollout unseen, and validate said nothing. Now one problem names both, at the first Kalypso
    one, with the fix; the fleet commands read the chain through the same check."""
    main, env = kalypso_plane(tmp_path, environments())
    result = run_cli("validate", "--main", main, "--env", env, "--environment", "dev")
    assert result.exit_code == 1, result.output
    assert (f"{main}/.environments/dev.yaml:6:1: Environments dev and stage have no after: each comes first, so "
            "every push to main promotes to all of them at once") in result.output, result.output
    assert "NEXT_ENVIRONMENT" in result.output and "'after: [dev]' in stage's spec" in result.output
    assert "1 problem" in result.output or result.output.count("error:") == 1, result.output

    problems = Problems()
    check_environment_chain(load_control_plane(main, env).environments, problems)
    assert [p.message.split(":")[0] for p in problems] == ["Environments dev and stage have no after"]


def test_kalypso_environments_with_an_order_pass(tmp_path: Path) -> None:
    """``after: [dev]`` in stage, or ``after: []`` written on purpose in both, is an order: no problem."""
    for extra in ({"stage": "  after: [dev]\n"}, {"dev": "  after: []\n", "stage": "  after: []\n"}):
        main, env = kalypso_plane(tmp_path / str(len(extra)), environments(**extra))
        result = run_cli("validate", "--main", main, "--env", env, "--environment", "dev")
        assert result.exit_code == 0, result.output
        assert "have no after" not in result.output


def test_fleetflow_environments_may_all_come_first(tmp_path: Path) -> None:
    """Two first environments in fleetflow's own apiVersion (dev-eu and dev-us promoted together) stay valid."""
    envs = {f".environments/{name}.yaml": f"apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n"
                                         f"  name: {name}\n" for name in ("dev", "stage")}
    main, env = kalypso_plane(tmp_path, envs)
    result = run_cli("validate", "--main", main, "--env", env, "--environment", "dev")
    assert result.exit_code == 0, result.output


def test_config_value_holding_a_kalypso_go_template_is_warned(tmp_path: Path) -> None:
    """Kalypso's templater renders its output again while it holds ``{{`` (templater.go
    ``replaceTemplateVariables``, "handle nested templates"): ``DB_HOST: "{{ .Environment }}-db"`` in a ConfigMap
    came out ``dev-db``. fleetflow renders templates only, and wrote ``{{ .Environment }}-db`` into the cluster's
    ConfigMap without a word. Now a warning at the value (``--strict`` fails); an Alertmanager template reading
    ``.Labels`` is not one of Kalypso's variables and is not warned."""
    main, env = kalypso_plane(tmp_path, environments(stage="  after: [dev]\n"), {
        "config.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: dev-config
  labels:
    platform-config: "true"
data:
  DB_HOST: "{{ .Environment }}-db.internal"
  ALERT: "{{ .Labels.instance }} is down"
""",
    })
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert (f"warning: {env}/config.yaml:8:12: ConfigMap dev-config: DB_HOST holds the Go template "
            "{{ .Environment }}, which is written into the rendered files as it is") in result.output, result.output
    assert "({{ Environment }} there)" in result.output
    assert "ALERT holds" not in result.output and result.output.count("warning:") == 1, result.output
    strict = run_cli("validate", "--main", main, "--env", env, "--environment", "dev", "--strict")
    assert strict.exit_code == 1, strict.output


def test_kalypso_generated_kinds_say_where_their_content_goes(tmp_path: Path) -> None:
    """A DeploymentTarget, an Assignment or an AssignmentPackage (what Kalypso's controllers make, e.g. copied
    with ``kubectl get -o yaml``) was an "unknown kind" whose hint was to list the file in .fleetflowignore: a
    hand-written DeploymentTarget was then left out without a word. Now each says where fleetflow takes it
    from; in another apiVersion the kind is unknown as before."""
    main, env = kalypso_plane(tmp_path, environments(stage="  after: [dev]\n"), {
        "generated.yaml": f"""\
apiVersion: {K}
kind: DeploymentTarget
metadata:
  name: app-api
spec: {{environment: dev, manifests: {{repo: r, branch: dev, path: ./api}}}}
---
apiVersion: {K}
kind: Assignment
metadata:
  name: a
---
apiVersion: {K}
kind: AssignmentPackage
metadata:
  name: a
---
apiVersion: example.com/v1
kind: DeploymentTarget
metadata:
  name: other
""",
    })
    result = run_cli("validate", "--main", main, "--env", env, "--environment", "dev")
    assert result.exit_code == 1, result.output
    out = result.output
    assert (f"{env}/generated.yaml:2:7: kind 'DeploymentTarget' is made by Kalypso's controllers; fleetflow does "
            "not read one (hint: Kalypso makes a DeploymentTarget from each entry of a Workload's "
            "spec.deploymentTargets") in out, out
    assert f"{env}/generated.yaml:8:7: kind 'Assignment' is made by Kalypso's controllers" in out
    assert f"{env}/generated.yaml:13:7: kind 'AssignmentPackage' is made by Kalypso's controllers" in out
    assert f"{env}/generated.yaml:18:7: unknown kind 'DeploymentTarget'" in out
    assert "4 problems found." in out


def compile_problem(text: str) -> Problem:
    with pytest.raises(InputError) as caught:
        TemplateEngine().compile(TemplateSource(name="t", type="config", content_type="yaml", manifests=(text,),
                                                location=Location("t.yaml", 1),
                                                manifest_locations=(Location("t.yaml", 9),)))
    return caught.value.problems()[0]


def test_go_forms_left_after_the_dots_are_dropped_get_their_jinja_form() -> None:
    """The docs said a Kalypso Go template converts by dropping the leading dots; Kalypso's own config template
    (kalypso-control-plane templates/scheduler_v1alpha1_template_configmap.yaml, ``{{ toYaml .ConfigData |
    indent 2}}``) then read ``{{ toYaml ConfigData | indent 2}}``: "expected token 'end of print statement', got
    'ConfigData'", no hint; ``{{ trunc 63 .X }}`` (sprig, which Kalypso's templater loads) was told to drop the dot,
    and a ``range`` too. Each now gets the Jinja form of what is on its line."""
    problem = compile_problem("kind: ConfigMap\ndata:\n{{ toYaml ConfigData | indent 2}}\n")
    assert problem.message.endswith("expected token 'end of print statement', got 'ConfigData'"), problem
    assert (problem.hint or "").startswith(
        "templates are Jinja2, not Go templates: a function takes its value through a pipe and its other arguments "
        "in parentheses, {{ ConfigData | toYaml | indent(2) }}"), problem
    assert "a pipe" in (compile_problem("name: {{ trunc 63 .DeploymentTargetName }}\n").hint or "")
    problem = compile_problem("data:\n{{- range $k, $v := .ConfigData }}\n  {{ $k }}: x\n{{- end }}\n")
    assert (problem.hint or "").endswith("is {% for k, v in ConfigData.items() %} ... {% endfor %}"), problem
    # not a Go form: no Go hint
    assert compile_problem("name: {{ Namespace + }}\n").hint is None
