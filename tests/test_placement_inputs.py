"""Mistakes in an environment branch's placement inputs (labels, selectors, the Cluster inventory), as a platform
engineer makes them: each gets an error or a warning at its line, never a quietly different schedule.

Kubernetes' label rules are apimachinery's: pkg/api/validate/content/kube.go (IsLabelKey, which
pkg/util/validation's IsQualifiedName is: ``[prefix/]name``, the name at most 63 characters of ``[-A-Za-z0-9_.]``
starting and ending alphanumeric, the prefix a DNS subdomain; IsLabelValue, which IsValidLabelValue is: empty or of
the name's form), applied by pkg/apis/meta/v1/validation/validation.go: ValidateLabels to metadata.labels and to a
selector's matchLabels, ValidateLabelSelectorRequirement to each matchExpressions key and value.
"""

from __future__ import annotations

import json
from pathlib import Path

from fleetflow.errors import Problems
from fleetflow.model.controlplane import load_control_plane
from fleetflow.render.scheduling import schedule
from tests.helpers import ENV_FILES, make_plane, run_cli

# the helper's edge cluster type, labelled with values YAML reads as numbers
CT_NUMBERS = ENV_FILES["cluster-types/types.yaml"].replace(
    "            kind: edge\n", "            kind: edge\n            firmware: 1.10\n            rev: 0x1F\n")

FIRMWARE_POLICY = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: SchedulingPolicy
    metadata:
      name: everything
    spec:
      deploymentTargetSelector:
        labelSelector:
          matchLabels:
            purpose: test
      clusterTypeSelector:
        labelSelector:
          matchLabels:
            firmware: "1.10"
          matchExpressions:
            - key: rev
              operator: In
              values: ["0x1F"]
"""


def test_a_label_yaml_reads_as_a_number_is_the_text_the_file_writes(tmp_path: Path) -> None:
    """``firmware: 1.10`` on a ClusterType is the label ``1.10``, as written: YAML's number 1.1 made it ``1.1`` until
    2026-11-29, so a policy asking for ``firmware: "1.10"`` (what validate's own hint says to write in a selector)
    selected nothing, with the warning "did you mean firmware: '1.1'?"."""
    main_dir, env_dir = make_plane(tmp_path, env={
        "cluster-types/types.yaml": CT_NUMBERS, "policies.yaml": FIRMWARE_POLICY,
        "clusters.yaml": ENV_FILES["clusters.yaml"].replace("cloud-eu", "edge-line1")})
    plane = load_control_plane(main_dir, env_dir)
    assert plane.cluster_types["edge-line1"].labels == {
        "region": "eu", "kind": "edge", "firmware": "1.10", "rev": "0x1F"}
    problems = Problems()
    sched = schedule(plane, "dev", problems)
    assert not problems and list(sched.by_type) == ["edge-line1"]

    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--format", "json")
    assert result.exit_code == 0, result.output
    assert not [w for w in json.loads(result.stdout)["warnings"] if "firmware" in w["message"]]


BAD_LABELS_CT = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: ClusterType
    metadata:
      name: cloud-eu
      labels:
        region: West Europe
        kind: cloud
    spec:
      reconciler: flux
      namespaceService: namespace
      configType: config
"""

BAD_SELECTOR = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: SchedulingPolicy
    metadata:
      name: everything
    spec:
      deploymentTargetSelector:
        labelSelector:
          matchExpressions:
            - key: Purpose Of Use
              operator: Exists
            - key: tier
              operator: In
              values: [web, "-front"]
            - key: example.com/a/b
              operator: DoesNotExist
      clusterTypeSelector:
        labelSelector:
          matchLabels:
            "site!": x
            region: West Europe
"""

BAD_TARGET = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Workload
    metadata:
      name: app
    spec:
      workspace: team-a
      deploymentTargets:
        - name: dev
          environment: dev
          labels:
            purpose: test
            owner: "platform team"
            "/x": y
          manifests:
            path: ./app
"""


def test_labels_kubernetes_refuses_are_errors_at_their_lines(tmp_path: Path) -> None:
    """A label key or value Kubernetes refuses (apimachinery IsLabelKey / IsLabelValue), in a resource's
    metadata.labels, a deployment target's labels, a selector's matchLabels or a matchExpressions key or value, is an
    error at it, with the rule as the hint. Until 2026-11-29 only metadata.labels' keys were checked: ``region: West
    Europe`` was a label no Kubernetes object (nor Kalypso's ClusterType) can carry, matched as written, and a
    selector with ``key: Purpose Of Use`` or a target with ``"/x": y`` was taken without a word."""
    main_dir, env_dir = make_plane(tmp_path, main={"workloads/app.yaml": BAD_TARGET}, env={
        "cluster-types/types.yaml": BAD_LABELS_CT, "policies.yaml": BAD_SELECTOR})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    expected = [
        (f"{main_dir}/workloads/app.yaml:12:16: Workload app: target dev: invalid value 'platform team' of label "
         "owner: it has ' '", "a label value is empty, or letters"),
        (f"{main_dir}/workloads/app.yaml:13:15: Workload app: target dev: invalid label key '/x': it has an empty "
         "prefix before '/'", "a label key is a name of at most 63 characters"),
        (f"{env_dir}/cluster-types/types.yaml:6:13: invalid value 'West Europe' of label region: it has ' '",
         "a label value is empty"),
        (f"{env_dir}/policies.yaml:9:16: SchedulingPolicy everything: deploymentTargetSelector: matchExpressions: "
         "invalid label key 'Purpose Of Use': it has ' '", "a label key"),
        (f"{env_dir}/policies.yaml:13:25: SchedulingPolicy everything: deploymentTargetSelector: matchExpressions: "
         "invalid value '-front' of label tier: it does not start and end with a letter or digit", "a label value"),
        (f"{env_dir}/policies.yaml:14:16: SchedulingPolicy everything: deploymentTargetSelector: matchExpressions: "
         "invalid label key 'example.com/a/b': it has more than one '/'", "a label key"),
        (f"{env_dir}/policies.yaml:19:18: SchedulingPolicy everything: clusterTypeSelector: matchLabels: invalid "
         "label key 'site!': it has '!'", "a label key"),
        (f"{env_dir}/policies.yaml:20:17: SchedulingPolicy everything: clusterTypeSelector: matchLabels: invalid "
         "value 'West Europe' of label region: it has ' '", "a label value"),
    ]
    assert len(errors) == len(expected), result.stderr
    for line, (start, hint) in zip(sorted(errors), sorted(expected), strict=True):
        assert line.startswith(f"error: {start} (hint: {hint}"), (line, start)
    assert not (tmp_path / "out").exists()


def test_labels_kubernetes_takes_are_taken(tmp_path: Path) -> None:
    """The other side of the rule: a prefixed key, dots, underscores, capitals, an empty value, and a value longer
    than Kubernetes' 63 characters (fleetflow's names, up to 253, are label values of ConfigMaps' cluster-type and
    deployment-target labels: their length is not refused)."""
    long_value = "a" * 100
    ct = BAD_LABELS_CT.replace("region: West Europe", "region: eu\n        example.com/Zone_1.b: A-1_b.c\n"
                               f"        empty: \"\"\n        long: {long_value}")
    main_dir, env_dir = make_plane(tmp_path, env={"cluster-types/types.yaml": ct})
    plane = load_control_plane(main_dir, env_dir)
    assert plane.cluster_types["cloud-eu"].labels["example.com/Zone_1.b"] == "A-1_b.c"
    assert plane.cluster_types["cloud-eu"].labels["long"] == long_value
