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
        "cluster-types/types.yaml": CT_NUMBERS, "policies.yaml": FIRMWARE_POLICY})
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


TOGETHER_POLICY = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: SchedulingPolicy
    metadata:
      name: edge-cloud
    spec:
      deploymentTargetSelector:
        labelSelector:
          matchLabels:
            purpose: test
      clusterTypeSelector:
        labelSelector:
          matchLabels:
            kind: edge
          matchExpressions:
            - key: region
              operator: NotIn
              values: [eu]
"""


def test_a_policy_whose_requirements_hold_one_by_one_but_never_together_warns(tmp_path: Path) -> None:
    """Every cluster type is in region eu: ``kind: edge`` is carried (by edge-line1) and ``region NotIn [eu]`` is
    fine on its own (NotIn holds for an absent key, so the label-by-label check says nothing of it), but no cluster
    type matches both. Until 2026-11-29 the policy scheduled nothing without a word; now a warning at its selector,
    and on the targets' side when it is that side that selects nothing."""
    main_dir, env_dir = make_plane(tmp_path / "types", env={"edge-cloud.yaml": TOGETHER_POLICY})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    assert (f"warning: {env_dir}/edge-cloud.yaml:11:5: SchedulingPolicy edge-cloud selects no cluster types: none "
            "matches all of kind=edge,region notin (eu), though each label it asks for is carried by one of them "
            "(hint: loosen the selector, or label one of them with all it asks for; or remove the policy)\n"
            ) in result.stderr, result.stderr

    targets = TOGETHER_POLICY.replace("purpose: test", "purpose: test\n            workload: other").replace(
        "kind: edge\n", "kind: cloud\n")
    other = "\n".join(line for line in BAD_TARGET.replace("name: app", "name: other").replace(
        "purpose: test", "purpose: batch").splitlines() if "owner" not in line and "/x" not in line)
    main_dir, env_dir = make_plane(tmp_path / "targets", main={"workloads/other.yaml": other},
                                   env={"edge-cloud.yaml": targets})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    assert (f"warning: {env_dir}/edge-cloud.yaml:7:5: SchedulingPolicy edge-cloud selects no deployment targets of "
            "dev: none matches all of purpose=test,workload=other, though each label it asks for is carried by one "
            "of them (hint: loosen the selector, or label one of them with all it asks for; or remove the policy "
            "(its clusterTypeSelector is not looked at while this one selects nothing))\n") in result.stderr, (
        result.stderr)
    assert result.stderr.count("warning: ") == 1, result.stderr


def test_a_policy_already_warned_of_gets_no_second_warning(tmp_path: Path) -> None:
    """A label no cluster type carries is said once, by its label ("did you mean"), not again as a whole."""
    typo = TOGETHER_POLICY.replace("kind: edge", "kidn: edge")
    main_dir, env_dir = make_plane(tmp_path, env={"edge-cloud.yaml": typo})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    assert "did you mean label key 'kind'?" in result.stderr, result.stderr
    assert "none matches all of" not in result.stderr, result.stderr


UNWATCHED = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Cluster
    metadata:
      name: cloud-eu-1
    spec:
      clusterType: cloud-eu
      statusContext: flux/cloud-eu-1
    ---
    apiVersion: fleetflow.dev/v1alpha1
    kind: Cluster
    metadata:
      name: edge-line1-1
    spec:
      clusterType: edge-line-1
      statusContext: flux/edge-line1-1
"""


def test_a_scheduled_cluster_type_no_cluster_runs_warns_that_the_gate_does_not_wait_for_it(tmp_path: Path) -> None:
    """The gate expects the Clusters of the cluster types with assignments (docs/design.md §5): a cluster type
    whose Cluster was left out of the inventory is rolled out to, and the gate passes without a report from it.
    Until 2026-11-29 validate said ok; now a warning at the ClusterType (and its Cluster with a misspelt
    clusterType is an error with the name it probably meant)."""
    main_dir, env_dir = make_plane(tmp_path / "typo", env={"clusters.yaml": UNWATCHED})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1
    assert (f"error: {env_dir}/clusters.yaml:14:16: Cluster edge-line1-1: unknown clusterType 'edge-line-1' (hint: "
            "did you mean 'edge-line1'? ClusterTypes on this environment branch: cloud-eu, edge-line1)\n"
            ) in result.stderr, result.stderr

    left_out = UNWATCHED[:UNWATCHED.index("    ---")]
    main_dir, env_dir = make_plane(tmp_path / "left-out", env={"clusters.yaml": left_out})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    assert (f"warning: {env_dir}/cluster-types/types.yaml:16:9: ClusterType edge-line1 has 1 assignment in dev, "
            "but no Cluster of the inventory runs it: dev's rollout gate waits for none of its clusters (hint: add "
            "its Clusters to the environment branch (kind: Cluster, spec.clusterType: edge-line1, with the "
            "statusContext each posts); if no cluster runs it yet, leave it out of the SchedulingPolicies)\n"
            ) in result.stderr, result.stderr
    assert result.stderr.count("warning: ") == 1, result.stderr


def test_a_node_affinity_operator_in_a_label_selector_says_where_it_belongs(tmp_path: Path) -> None:
    """``Gt``/``Lt`` are node affinity's (k8s.io/api core/v1 types.go, NodeSelectorRequirement: "Valid operators are
    In, NotIn, Exists, DoesNotExist. Gt, and Lt."), not a LabelSelectorOperator (apimachinery pkg/apis/meta/v1/
    types.go: In, NotIn, Exists, DoesNotExist); until 2026-11-29 the error only listed the four."""
    gt = TOGETHER_POLICY.replace("operator: NotIn\n              values: [eu]",
                                 'operator: Gt\n              values: ["4"]')
    main_dir, env_dir = make_plane(tmp_path, env={"edge-cloud.yaml": gt})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1
    assert (f"error: {env_dir}/edge-cloud.yaml:16:21: SchedulingPolicy edge-cloud: spec.clusterTypeSelector."
            "labelSelector.matchExpressions.0.operator: Gt compares a label as a number in node affinity (a "
            "NodeSelectorRequirement) only; a label selector takes In, NotIn, Exists or DoesNotExist") in (
        result.stderr), result.stderr


def test_a_workload_or_workspace_label_fleetflow_replaces_warns(tmp_path: Path) -> None:
    """A target's labels end with ``workload=<workload>`` and ``workspace=<workspace>`` (docs/design.md §2): a
    ``workspace: team-b`` written on the target (or ``workload: x`` on its Workload) is replaced, so a policy asking
    for it never selects the target. Until 2026-11-29 that happened without a word (the label-by-label check is
    satisfied as soon as another target carries the value); now a warning at the label."""
    relabelled = BAD_TARGET.replace('owner: "platform team"', "workspace: team-b").replace(
        '            "/x": y\n', "").replace("metadata:\n      name: app\n",
                                             "metadata:\n      name: app\n      labels: {workload: application}\n")
    main_dir, env_dir = make_plane(tmp_path, main={"workloads/app.yaml": relabelled})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if " is replaced by " in line]
    assert warnings == [
        f"warning: {main_dir}/workloads/app.yaml:5:22: Workload app: label workload: 'application' is replaced by "
        "workload=app on each of its deployment targets (fleetflow sets workload= and workspace= last) (hint: "
        "remove the label; select the targets with workload: app, or give it another key)",
        f"warning: {main_dir}/workloads/app.yaml:13:20: workload app: target dev: label workspace: 'team-b' is "
        "replaced by workspace=team-a (fleetflow sets workload= and workspace= last) (hint: remove the label; select "
        "the target with workspace: team-a, or give it another key (set the Workload's spec.workspace to change the "
        "workspace))",
    ], result.stderr


EXCLUDING_POLICY = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: SchedulingPolicy
    metadata:
      name: not-on-edge
    spec:
      deploymentTargetSelector:
        labelSelector:
          matchLabels:
            purpose: test
      clusterTypeSelector:
        labelSelector:
          matchExpressions:
            - key: kind
              operator: NotIn
              values: [edge]
"""


def test_a_misspelt_exclusion_that_excludes_nothing_warns(tmp_path: Path) -> None:
    """``NotIn`` and ``DoesNotExist`` hold when the label is absent (k8s.io/apimachinery pkg/labels/selector.go,
    ``Requirement.Matches``: ``case selection.NotIn, selection.NotEquals: if !ls.Has(r.key) { return true }``;
    ``case selection.DoesNotExist: return !ls.Has(r.key)``), so a misspelt key (``kidn``), or values that are
    each a carried value in other letters (``Edge``), exclude nothing: the policy schedules onto the edge cluster
    type it was written to keep out. Until 2026-11-29 that was exit 0 without a word (the label-by-label check
    looked at In and Exists only); now a warning at the key or value, with the label meant. A requirement whose key
    or values are near nothing carried (a label meant for later) stays unsaid."""
    main_dir, env_dir = make_plane(tmp_path / "ok", env={"policies.yaml": EXCLUDING_POLICY})
    plane = load_control_plane(main_dir, env_dir)
    assert list(schedule(plane, "dev", Problems()).by_type) == ["cloud-eu"]  # the exclusion as written works
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr

    for case, policy, where, said in (
        ("key", EXCLUDING_POLICY.replace("key: kind", "key: kidn"), "13:16",
         "with kidn notin (edge): none carries label key 'kidn', so it holds for every one (hint: did you mean "
         "label key 'kind'? label keys on cluster types: kind, region)"),
        ("value", EXCLUDING_POLICY.replace("[edge]", "[Edge]"), "15:20",
         "with kind notin (Edge): none carries kind: 'Edge', so it holds for every one (hint: did you mean kind: "
         "'edge'? label values are compared as written; values of kind on cluster types: cloud, edge)"),
        ("absent", EXCLUDING_POLICY.replace("key: kind", "key: kinds").replace(
            "operator: NotIn\n              values: [edge]", "operator: DoesNotExist"), "13:16",
         "with !kinds: none carries label key 'kinds', so it holds for every one (hint: did you mean label key "
         "'kind'? label keys on cluster types: kind, region)"),
    ):
        main_dir, env_dir = make_plane(tmp_path / case, env={"policies.yaml": policy})
        plane = load_control_plane(main_dir, env_dir)
        assert list(schedule(plane, "dev", Problems()).by_type) == ["cloud-eu", "edge-line1"], case
        result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
        assert result.exit_code == 0, result.output
        assert (f"warning: {env_dir}/policies.yaml:{where}: SchedulingPolicy not-on-edge excludes none of the "
                f"cluster types {said}\n") in result.stderr, (case, result.stderr)
        assert result.stderr.count("warning: ") == 1, (case, result.stderr)

    for case, policy in (  # a key near no carried one: a label for later; a value of another environment
        ("later", EXCLUDING_POLICY.replace("key: kind", "key: accelerator")),
        ("elsewhere", EXCLUDING_POLICY.replace("[edge]", "[vm]")),
        ("near", EXCLUDING_POLICY.replace("[edge]", "[edges]")),  # a near spelling may be another env's value
    ):
        main_dir, env_dir = make_plane(tmp_path / case, env={"policies.yaml": policy})
        result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
        assert result.exit_code == 0 and "warning" not in result.stderr, (case, result.stderr)


def test_an_in_list_value_in_other_letters_than_the_label_warns(tmp_path: Path) -> None:
    """Label values are compared as written (apimachinery pkg/labels/selector.go, ``Requirement.hasValue``: ``==``):
    ``kind In [cloud, Edge]`` selects cloud-eu only, leaving out edge-line1 (``kind: edge``) it names in other
    letters. Until 2026-11-29 no warning: one of its values is carried, so the policy selected something. A value
    that is no carried one in other letters (``vm``, another environment's) stays unsaid."""
    policy = EXCLUDING_POLICY.replace("operator: NotIn\n              values: [edge]",
                                      "operator: In\n              values: [cloud, Edge]")
    main_dir, env_dir = make_plane(tmp_path / "case", env={"policies.yaml": policy})
    plane = load_control_plane(main_dir, env_dir)
    assert list(schedule(plane, "dev", Problems()).by_type) == ["cloud-eu"]
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output
    assert (f"warning: {env_dir}/policies.yaml:15:27: SchedulingPolicy not-on-edge leaves out the cluster types with "
            "kind: 'edge': its kind in (cloud,Edge) has 'Edge', which none carries (hint: write edge in its values, "
            "as the cluster types write it (label values are compared as written))\n") in result.stderr, result.stderr
    assert result.stderr.count("warning: ") == 1, result.stderr

    main_dir, env_dir = make_plane(tmp_path / "other", env={"policies.yaml": policy.replace("Edge", "vm")})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr


def test_match_labels_written_right_under_a_selector_says_it_goes_under_label_selector(tmp_path: Path) -> None:
    """A SchedulingPolicy's selectors each hold a ``labelSelector`` (Kalypso's CRD, kalypso-scheduler
    config/crd/bases/scheduler.kalypso.io_schedulingpolicies.yaml: ``required: [labelSelector]`` in each);
    ``matchLabels`` written right under ``clusterTypeSelector``, as a Deployment's ``selector`` takes it, is one
    error that says where it goes. Until 2026-11-29 it was two: "labelSelector: required field is missing" and
    "matchLabels: unknown field (hint: check the spelling ...)", which sent one looking for a typo."""
    policy = EXCLUDING_POLICY.replace("        labelSelector:\n          matchExpressions:",
                                      "        matchExpressions:")
    assert "clusterTypeSelector:\n        matchExpressions:" in policy
    main_dir, env_dir = make_plane(tmp_path, env={"policies.yaml": policy})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1, result.output
    assert (f"error: {env_dir}/policies.yaml:10:3: SchedulingPolicy not-on-edge: spec.clusterTypeSelector: "
            "matchExpressions is written right under clusterTypeSelector, not under its labelSelector: write "
            "clusterTypeSelector: {labelSelector: {matchLabels: {<label>: <value>}}} (a SchedulingPolicy's selectors "
            "each hold a labelSelector, as in Kalypso)\n") in result.stderr, result.stderr
    assert result.stderr.count("error: ") == 1, result.stderr


def test_a_workspace_written_beside_the_selectors_says_where_it_goes(tmp_path: Path) -> None:
    """``workspace`` is a field of a Workload's spec, and of a SchedulingPolicy's deploymentTargetSelector (Kalypso's
    CRD, kalypso-scheduler config/crd/bases/scheduler.kalypso.io_schedulingpolicies.yaml), not of the policy's spec
    or its clusterTypeSelector. Until 2026-11-29 either was "unknown field (hint: check the spelling ...)", where
    nothing is misspelt."""
    policy = EXCLUDING_POLICY.replace("    spec:\n", "    spec:\n      workspace: team-a\n").replace(
        "      clusterTypeSelector:\n", "      clusterTypeSelector:\n        workspace: team-a\n")
    main_dir, env_dir = make_plane(tmp_path, env={"policies.yaml": policy})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1, result.output
    assert (f"error: {env_dir}/policies.yaml:6:14: SchedulingPolicy not-on-edge: spec.workspace: unknown field (hint: "
            "a SchedulingPolicy's workspace goes under deploymentTargetSelector (deploymentTargetSelector: "
            "{workspace: <name>, labelSelector: ...}): it chooses the targets of that workspace)\n") in result.stderr, (
        result.stderr)
    assert (f"error: {env_dir}/policies.yaml:12:16: SchedulingPolicy not-on-edge: spec.clusterTypeSelector.workspace: "
            "unknown field (hint: a workspace chooses deployment targets: it goes under deploymentTargetSelector "
            "(deploymentTargetSelector: {workspace: <name>, labelSelector: ...}))\n") in result.stderr, result.stderr
    assert result.stderr.count("error: ") == 2, result.stderr
