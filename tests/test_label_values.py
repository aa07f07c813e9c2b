"""A name of fleetflow's that a rendered object writes as a label value the API server refuses
(fleetflow/render/label_values.py).

Kubernetes checks every object's ``metadata.labels``, a custom resource's too: apimachinery
``pkg/api/validation/objectmeta.go`` ``ValidateObjectMetaAccessor`` → ``ValidateLabels`` → ``IsValidLabelValue``
(at most 63 characters, ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``), called for custom resources by
apiextensions-apiserver ``pkg/registry/customresource/validator.go``. The kustomize-controller labels every object
a Kustomization applies ``kustomize.toolkit.fluxcd.io/name: <its name>`` (fluxcd/kustomize-controller
``docs/spec/v1beta2/kustomizations.md``), so a Kustomization named with more than 63 characters applies nothing:
fluxcd/flux2#2004 ("metadata.labels: Invalid value: ...: must be no more than 63 characters", closed wontfix).
Argo CD truncates its instance label to 63 characters (argo-cd ``docs/user-guide/resource_tracking.md``), so an
Application's name is no such problem. Until 2026-11-29 ``validate`` said "ok" for all of these."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import MAIN_FILES, make_plane, run_cli, tree_bytes

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
LONG_WORKSPACE = "commerce-and-checkout-team-of-the-european-online-shop-platform-x"  # 65 characters


def example_with_workspace(tmp_path: Path, workspace: str) -> Path:
    """A copy of the example whose orders-api workload (and the dev policy that selects its workspace) is in
    ``workspace``."""
    root = tmp_path / "cp"
    shutil.copytree(EXAMPLE, root)
    workload = root / "main" / "workloads" / "orders-api.yaml"
    text = workload.read_text()
    assert text.count("\n  workspace: commerce\n") == 1
    workload.write_text(text.replace("\n  workspace: commerce\n", f"\n  workspace: {workspace}\n"))
    policies = [p for p in (root / "envs" / "dev").rglob("*.yaml") if "workspace: commerce\n" in p.read_text()]
    assert policies
    for policy in policies:
        policy.write_text(policy.read_text().replace("workspace: commerce\n", f"workspace: {workspace}\n"))
    return root


def validate(root: Path) -> tuple[int, dict[str, object]]:
    result = run_cli("validate", "--main", root / "main", "--env", root / "envs" / "dev", "--format", "json")
    return result.exit_code, json.loads(result.output)


def test_a_workspace_too_long_for_the_label_a_template_writes_is_an_error_at_the_workspace(tmp_path: Path) -> None:
    """The example's namespace template writes ``fleetflow.dev/workspace: {{ Workspace }}``: a workspace of 65
    characters makes a Namespace the API server refuses on every cluster. One error at the workspace's line, for
    both assignments of the target; nothing is written."""
    root = example_with_workspace(tmp_path, LONG_WORKSPACE)
    code, reply = validate(root)
    assert code == 1, reply
    [problem] = reply["problems"]  # type: ignore[misc]
    assert problem["message"] == (
        f"aks-westeurope/orders-api-dev: workspace '{LONG_WORKSPACE}' is not a Kubernetes label value, it is 65 "
        "characters long (at most 63): template 'kubernetes-namespace' writes it as the value of label "
        "fleetflow.dev/workspace of a Namespace (namespace.yaml) (and the same in 1 more assignment: "
        "eks-apsoutheast/orders-api-dev)")
    assert problem["location"] == {"file": str(root / "main" / "workloads" / "orders-api.yaml"), "line": 12,
                                   "column": 14}
    assert problem["hint"].startswith("the API server refuses the Namespace on every cluster")
    assert problem["hint"].endswith("shorten the workspace name, or have the template write it as an annotation")
    out = tmp_path / "out"
    result = run_cli("render", "--main", root / "main", "--env", root / "envs" / "dev", "--environment", "dev",
                     "--output", out)
    assert result.exit_code == 1 and not out.exists(), result.output
    # 63 characters is a label value: the example renders (the Namespace name is then too long: a warning)
    code, reply = validate(example_with_workspace(tmp_path / "fits", LONG_WORKSPACE[:63]))
    assert code == 0, reply


def test_a_workspace_with_a_space_is_refused_where_a_label_holds_it(tmp_path: Path) -> None:
    """A workspace is any text to fleetflow; in a label it is what IsValidLabelValue takes."""
    code, reply = validate(example_with_workspace(tmp_path, "Commerce Team"))
    assert code == 1, reply
    messages = [p["message"] for p in reply["problems"]]  # type: ignore[union-attr]
    assert any("workspace 'Commerce Team' is not a Kubernetes label value, it has ' '" in m for m in messages)


def _long_workload_plane(tmp_path: Path, reconciler: str) -> tuple[Path, Path]:
    """The test plane with its workload renamed to 60 characters: its target ``<workload>-dev`` has 64."""
    name = "a" * 60
    files = {k: v.replace("  name: app\n", f"  name: {name}\n", 1) for k, v in MAIN_FILES.items()
             if k == "workloads/app.yaml"}
    files["templates/flux.yaml"] = reconciler
    return make_plane(tmp_path, main=files)


_ARGO = """
apiVersion: fleetflow.dev/v1alpha1
kind: Template
metadata:
  name: flux
spec:
  type: reconciler
  manifests:
    - |
      apiVersion: argoproj.io/v1alpha1
      kind: Application
      metadata:
        name: {{ DeploymentTargetName }}
        namespace: argocd
      spec:
        project: default
"""


def test_a_flux_kustomization_named_past_63_characters_is_an_error_at_the_target(tmp_path: Path) -> None:
    """The test plane names its Kustomization ``{{ DeploymentTargetName }}``: 64 characters, and Flux's label on
    every object it applies would hold them. An error at the target (the name to shorten is the workload's or the
    target's). The same name on an Argo CD Application is taken (Argo CD truncates its label): exit 0."""
    main_dir, env_dir = _long_workload_plane(tmp_path / "flux", MAIN_FILES["templates/flux.yaml"])
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--format", "json")
    assert result.exit_code == 1, result.output
    [problem] = json.loads(result.output)["problems"]
    target = "a" * 60 + "-dev"
    assert problem["message"] == (
        f"cloud-eu/{target}: DeploymentTargetName (<workload>-<target>) '{target}' is not a Kubernetes label value, "
        "it is 64 characters long (at most 63): template 'flux' names a Flux Kustomization after it "
        "(reconciler.yaml), and Flux labels every object the Kustomization applies "
        f"kustomize.toolkit.fluxcd.io/name: <its name> (and the same in 1 more assignment: edge-line1/{target})")
    assert problem["location"]["file"] == str(main_dir / "workloads" / "app.yaml")
    assert "shorten the workload or deployment target name" in problem["hint"]
    main_dir, env_dir = _long_workload_plane(tmp_path / "argo", _ARGO)
    out = tmp_path / "out"
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    assert result.exit_code == 0, result.output
    assert f"cloud-eu/{target}/reconciler.yaml" in tree_bytes(out)
