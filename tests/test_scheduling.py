from __future__ import annotations

from pathlib import Path

from fleetflow.errors import Problems
from fleetflow.model.controlplane import load_control_plane
from fleetflow.render.scheduling import Assignment, effective_labels, schedule
from tests.helpers import make_plane

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
