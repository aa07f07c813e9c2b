from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleetflow.errors import Problems
from fleetflow.model.controlplane import load_control_plane
from fleetflow.render.scheduling import Assignment, effective_labels, schedule
from tests.helpers import make_plane, run_cli

POLICY = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: SchedulingPolicy
    metadata:
      name: {name}
    spec:
      deploymentTargetSelector:
        {workspace}
        labelSelector:
          matchLabels: {{{labels}}}
      clusterTypeSelector:
        labelSelector:
          matchLabels: {{{ct_labels}}}
"""


def plan(
    tmp_path: Path, env: dict[str, str] | None = None, main: dict[str, str] | None = None
) -> list[Assignment]:
    main_dir, env_dir = make_plane(tmp_path, main, env)
    plane = load_control_plane(main_dir, env_dir)  # raises every problem, if any
    p = Problems()
    result = schedule(plane, "dev", p)
    assert not p, list(p)
    return result.assignments


def test_policy_selects_targets_by_labels_and_cluster_types(tmp_path: Path) -> None:
    assert plan(tmp_path) == [Assignment("cloud-eu", "app-dev"), Assignment("edge-line1", "app-dev")]


def test_only_targets_of_the_environment_take_part(tmp_path: Path) -> None:
    env = {"policies.yaml": POLICY.format(name="all", workspace="", labels="", ct_labels="")}
    assert {a.target for a in plan(tmp_path, env)} == {"app-dev"}  # app-qa is for qa


def test_overlapping_policies_give_one_assignment(tmp_path: Path) -> None:
    env = {
        "p2.yaml": POLICY.format(
            name="edge", workspace="workspace: team-a", labels="workload: app", ct_labels="kind: edge"
        ),
    }
    assert plan(tmp_path, env).count(Assignment("edge-line1", "app-dev")) == 1


def test_workspace_filter(tmp_path: Path) -> None:
    env = {
        "policies.yaml": POLICY.format(name="other", workspace="workspace: team-b", labels="", ct_labels="")
    }
    assert plan(tmp_path, env) == []


def test_no_policy_no_assignment(tmp_path: Path) -> None:
    main_dir, env_dir = make_plane(tmp_path, drop=("policies.yaml",))
    plane = load_control_plane(main_dir, env_dir)
    assert schedule(plane, "dev", Problems()).assignments == []


def test_effective_labels_precedence() -> None:
    labels = effective_labels({"tier": "db", "purpose": "x"}, {"tier": "web"}, "app", "team-a")
    assert labels == {"tier": "web", "purpose": "x", "workload": "app", "workspace": "team-a"}
    # workload= and workspace= always win
    assert effective_labels({"workload": "spoof"}, {}, "app", "w")["workload"] == "app"


def test_which_policies_selected_each_assignment(tmp_path: Path) -> None:
    """``Schedule.policies`` answers from each policy's selections (no entry per pair): every policy that selects
    a pair, in name order; a pair no policy selects is not in it; it iterates the assignments, in order."""
    env = {
        "p2.yaml": POLICY.format(
            name="edge", workspace="workspace: team-a", labels="workload: app", ct_labels="kind: edge"
        ),
    }
    main_dir, env_dir = make_plane(tmp_path, None, env)
    result = schedule(load_control_plane(main_dir, env_dir), "dev", Problems())
    default = next(iter(result.policies[Assignment("cloud-eu", "app-dev")]))
    assert dict(result.policies) == {
        Assignment("cloud-eu", "app-dev"): [default],
        Assignment("edge-line1", "app-dev"): sorted([default, "edge"]),
    }
    assert list(result.policies) == result.assignments and len(result.policies) == 2
    assert Assignment("edge-line1", "app-qa") not in result.policies
    assert ("edge-line1", "app-dev") in result.policies  # a plain pair finds it too (an Assignment is a tuple)


def test_the_schedule_is_kept_per_cluster_type_one_tuple_per_kind(tmp_path: Path) -> None:
    """``Schedule.by_type`` is the schedule: cluster types in name order, each with its targets in name order, the
    same pairs as ``assignments``. Cluster types picked by the same policies share one tuple (the render and its
    incremental checks then cost a lookup per kind of cluster type, not a pass per assignment); cluster types
    picked by different policies do not."""
    main_dir, env_dir = make_plane(tmp_path)
    alike = schedule(load_control_plane(main_dir, env_dir), "dev", Problems())
    assert alike.by_type == {"cloud-eu": ("app-dev",), "edge-line1": ("app-dev",)}
    assert alike.by_type["cloud-eu"] is alike.by_type["edge-line1"]
    assert alike.assignments == [Assignment(ct, t) for ct, ts in alike.by_type.items() for t in ts]
    assert alike.count() == 2

    env = {"p2.yaml": POLICY.format(name="edge", workspace="", labels="", ct_labels="kind: edge")}
    main_dir, env_dir = make_plane(tmp_path / "two", None, env)
    apart = schedule(load_control_plane(main_dir, env_dir), "dev", Problems())
    assert apart.by_type["cloud-eu"] == apart.by_type["edge-line1"] == ("app-dev",)
    assert apart.by_type["cloud-eu"] is not apart.by_type["edge-line1"]


# --- a selector left out is an error; "every" is written ``labelSelector: {}`` ----------------------------------

_HEAD = "apiVersion: fleetflow.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata:\n  name: everything\n"
_EVERY_TYPE = "  clusterTypeSelector:\n    labelSelector: {}\n"
_EVERY_TARGET = "  deploymentTargetSelector:\n    labelSelector: {}\n"


@pytest.mark.parametrize(("spec", "expected"), [
    ("spec: {}\n", [("spec.clusterTypeSelector: required field is missing", 5,
                     "for every cluster type, write clusterTypeSelector: {labelSelector: {}}"),
                    ("spec.deploymentTargetSelector: required field is missing", 5,
                     "for every target of the environment, write deploymentTargetSelector: {labelSelector: {}}")]),
    ("spec:\n" + _EVERY_TARGET, [("spec.clusterTypeSelector: required field is missing", 5,
                                  "clusterTypeSelector: {labelSelector: {}}")]),
    ("spec:\n" + _EVERY_TYPE + "  deploymentTargetSelector:\n    workspace: team-a\n",
     [("spec.deploymentTargetSelector.labelSelector: required field is missing", 8,
       "or labelSelector: {} for every target (of its workspace, when workspace is set)")]),
    ("spec:\n  deploymentTargetSelector:\n    labelSelector:\n" + _EVERY_TYPE,
     [("spec.deploymentTargetSelector.labelSelector is empty", 7,
       "or labelSelector: {} for every target")]),
    ("spec:\n" + _EVERY_TARGET + "  clusterTypeSelector: {}\n",
     [("spec.clusterTypeSelector.labelSelector: required field is missing", 8,
       "or labelSelector: {} for every cluster type")]),
], ids=["spec-empty", "no-cluster-type-selector", "workspace-only", "null-label-selector", "empty-cluster-selector"])
def test_a_policy_must_write_both_selectors(
    tmp_path: Path, spec: str, expected: list[tuple[str, int | None, str]]
) -> None:
    """``spec: {}`` scheduled every deployment target of the environment onto every cluster type, silently: a
    selector left out selected everything. Kalypso's SchedulingPolicy CRD requires both selectors and the
    ``labelSelector`` of each (github.com/microsoft/kalypso-scheduler config/crd/bases/
    scheduler.kalypso.io_schedulingpolicies.yaml; api/v1alpha1/schedulingpolicy_types.go has no ``omitempty`` on
    them), and Kubernetes reads a null label selector as matching no objects, an empty one (``{}``) as matching
    all (k8s.io/apimachinery pkg/apis/meta/v1/types.go ``LabelSelector``; helpers.go ``LabelSelectorAsSelector``:
    nil -> ``labels.Nothing()``, no requirements -> ``labels.Everything()``). So a selector left out (or written
    with no value) is an error, one per selector, naming its field and saying how to write "every"."""
    main_dir, env_dir = make_plane(tmp_path, env={"policies.yaml": _HEAD + spec})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--format", "json")
    assert result.exit_code == 1, result.output
    problems = json.loads(result.output)["problems"]
    found = sorted((p["message"], p["location"]["line"], p["hint"]) for p in problems)
    assert len(found) == len(expected), found
    for (message, line, hint), (want, want_line, want_hint) in zip(found, expected, strict=True):
        assert message == f"SchedulingPolicy everything: {want}"
        assert want_line is None or line == want_line, found
        assert want_hint in hint


def test_an_empty_label_selector_selects_every_target_and_cluster_type(tmp_path: Path) -> None:
    """``labelSelector: {}`` on both sides, written: every target of the environment on every cluster type (the
    empty selector of Kubernetes, which matches all objects)."""
    env = {"policies.yaml": _HEAD + "spec:\n" + _EVERY_TARGET + _EVERY_TYPE}
    assert plan(tmp_path, env) == [Assignment("cloud-eu", "app-dev"), Assignment("edge-line1", "app-dev")]
