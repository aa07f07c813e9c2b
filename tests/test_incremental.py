"""Incremental rendering (fingerprints + input hashes) always gives what a full render gives, byte for byte,
for every kind of change, on the example control plane."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import run_cli, tree_bytes

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
PIN = ["--main-commit", "0" * 40, "--env-commit", "1" * 40]


def edit(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / rel
        text = path.read_text()
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1))

    return apply


def append(rel: str, text: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        with (root / rel).open("a") as handle:
            handle.write(text)

    return apply


def remove(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


CM = (
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels:\n    platform-config: \"true\"\n"
    "{labels}data:\n  {key}: \"{value}\"\n"
)

def copy_cluster_type(root: Path) -> None:
    source = root / "envs/dev/cluster-types/aks-westeurope.yaml"
    text = source.read_text().replace("name: aks-westeurope", "name: aks-northeurope")
    (root / "envs/dev/cluster-types/aks-northeurope.yaml").write_text(text)


EXTRA = "envs/dev/configs/extra.yaml"
POLICY = "envs/dev/scheduling/cloud-services.yaml"
SETUP = append(EXTRA, CM.format(name="zz-extra", labels="    workload: orders-api\n", key="EXTRA", value="1"))

# name: (set-up applied before the first render, or None; the change)
CHANGES: dict[str, tuple[Callable[[Path], None] | None, Callable[[Path], None]]] = {
    "config value at site level": (None, edit("envs/dev/configs/sites.yaml", "mes-sim.hamburg", "mes-sim2.hamburg")),
    "config map added for one workload": (None, SETUP),
    "config map added by generic label": (None, append(
        EXTRA, CM.format(name="zz-gen", labels="    tier: edge\n", key="GEN", value="2"))),
    "config map labels change": (SETUP, edit(EXTRA, "workload: orders-api", "workload: observability")),
    "config map priority change": (SETUP, edit(
        EXTRA, "  labels:\n", "  annotations:\n    fleetflow.dev/priority: \"-5\"\n  labels:\n")),
    "config map removed": (SETUP, remove(EXTRA)),
    "cluster type labels change": (None, edit("envs/dev/cluster-types/aks-westeurope.yaml", "provider: aks",
                                              "provider: aks-hci")),
    "cluster type added": (None, copy_cluster_type),
    "cluster type removed": (copy_cluster_type, remove("envs/dev/cluster-types/aks-northeurope.yaml")),
    "template change": (None, edit("main/templates/kubernetes-namespace.yaml", "metadata:", "metadata:  # edited")),
    "workload change": (None, edit("main/workloads/orders-api.yaml", "environment: dev",
                                   "environment: dev\n      # touched")),
    "target labels change": (None, edit("main/workloads/orders-api.yaml", "labels: {slo: best-effort}",
                                        "labels: {slo: silver}")),
    # a policy picks fewer or more cluster types: no cluster type's or target's fingerprint changes, only which
    # targets a cluster type holds (the index's digest of its assignment ids)
    "policy drops a cluster type": (None, edit(POLICY, "values: [westeurope, eastus, apsoutheast]",
                                               "values: [eastus, apsoutheast]")),
    "policy adds a cluster type": (edit(POLICY, "values: [westeurope, eastus, apsoutheast]",
                                        "values: [eastus, apsoutheast]"),
                                   edit(POLICY, "values: [eastus, apsoutheast]",
                                        "values: [westeurope, eastus, apsoutheast]")),
    # status reporters: rendered again only when their inputs change, and their folder goes with the reporter
    "cluster added to a cluster type": (None, append("envs/dev/clusters/hamburg.yaml", (
        "---\napiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: k3s-ham-l1-dev-2\nspec:\n"
        "  clusterType: edge-hamburg-line1\n  statusContext: \"flux/k3s-ham-l1-dev-2\"\n"))),
    "status context changes": (None, edit("envs/dev/clusters/hamburg.yaml", 'statusContext: "flux/k3s-ham-l1-dev"',
                                          'statusContext: "flux/k3s-ham-l1-dev-b"')),
    "reporter template change": (None, edit("main/templates/flux-status-reporter.yaml", "# clusters of",
                                            "# the clusters of")),
    "cluster type stops naming a reporter": (None, edit("envs/dev/cluster-types/aks-westeurope.yaml",
                                                        "statusReporter: flux-status-reporter", "")),
    "cluster type starts naming a reporter": (
        edit("envs/dev/cluster-types/aks-westeurope.yaml", "statusReporter: flux-status-reporter", ""),
        edit("envs/dev/cluster-types/aks-westeurope.yaml", "  namespaceService:",
             "  statusReporter: flux-status-reporter\n  namespaceService:")),
    "GitOps repo branch changes": (None, edit("envs/dev/gitops-repo.yaml", "branch: dev", "branch: dev-next")),
    "schema change": (None, edit("main/schemas/platform-baseline.yaml", "type: object", "type: object  # same")),
}


def render(main: Path, env: Path, out: Path, *extra: str) -> dict[str, object]:
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", out, *PIN,
                     "--format", "json", *extra)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)["result"]
    return data


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_incremental_equals_full(tmp_path: Path, change: str) -> None:
    plane = tmp_path / "plane"
    shutil.copytree(EXAMPLE, plane)
    setup, apply = CHANGES[change]
    if setup is not None:
        setup(plane)
    out = tmp_path / "out"
    render(plane / "main", plane / "envs" / "dev", out)
    apply(plane)
    incremental = render(plane / "main", plane / "envs" / "dev", out)
    full_out = tmp_path / "full"
    render(plane / "main", plane / "envs" / "dev", full_out)
    assert tree_bytes(out) == tree_bytes(full_out)
    # and a second incremental run changes nothing
    again = render(plane / "main", plane / "envs" / "dev", out)
    assert again["written"] == [] and again["rendered"] == 0
    assert isinstance(incremental["rendered"], int)


def test_only_touched_assignments_are_rendered(tmp_path: Path) -> None:
    plane = tmp_path / "plane"
    shutil.copytree(EXAMPLE, plane)
    out = tmp_path / "out"
    first = render(plane / "main", plane / "envs" / "dev", out)
    CHANGES["config value at site level"][1](plane)
    second = render(plane / "main", plane / "envs" / "dev", out)
    # site-hamburg applies to the Hamburg cluster types only
    changes = second["changes"]
    assert isinstance(changes, dict)
    assert all("hamburg" in aid for aid in changes["changed"]) and changes["changed"]
    assert second["rendered"] == len([a for a in first["changes"]["added"] if "hamburg" in a])  # type: ignore[index]


def test_status_reporters_are_rendered_again_only_when_their_inputs_change(tmp_path: Path) -> None:
    """A status reporter is rendered again when its template, its cluster type, its clusters or the GitOps repo
    change (the index keeps a fingerprint of them per cluster type); otherwise its ``_status/`` folder is left as it
    is, also by ``--prune-foreign`` (which looks at every cluster-type folder): the tree stays what a full render
    gives. ``--full`` renders them all again (and so repairs a deleted one, as it does an assignment's files)."""
    plane = tmp_path / "plane"
    shutil.copytree(EXAMPLE, plane)
    out, full_out = tmp_path / "out", tmp_path / "full"
    render(plane / "main", plane / "envs" / "dev", out)
    status = sorted(p.relative_to(out).as_posix() for p in out.glob("*/_status/*"))
    assert len(status) == 2  # the example's two cluster types that name a reporter
    CHANGES["config value at site level"][1](plane)
    pruned = render(plane / "main", plane / "envs" / "dev", out, "--prune-foreign", "--yes")
    touched = [*pruned["written"], *pruned["deleted"]]  # type: ignore[misc]
    assert touched and not any("_status" in p for p in touched)
    render(plane / "main", plane / "envs" / "dev", full_out)
    assert tree_bytes(out) == tree_bytes(full_out)
    CHANGES["cluster added to a cluster type"][1](plane)
    again = render(plane / "main", plane / "envs" / "dev", out)
    written = again["written"]
    assert isinstance(written, list)
    assert [p for p in written if "_status" in p] == ["edge-hamburg-line1/_status/flux-status-reporter.yaml"]
    # like an unchanged assignment's files, an unchanged reporter is trusted; --full repairs it
    (out / status[0]).unlink()
    render(plane / "main", plane / "envs" / "dev", out)
    assert not (out / status[0]).exists()
    repaired = render(plane / "main", plane / "envs" / "dev", out, "--full")
    assert repaired["written"] == [status[0]]


HELD_TYPE = "envs/dev/cluster-types/aks-northeurope.yaml"


def _add_a_cluster_type_that_fails_whole(root: Path) -> None:
    """``aks-northeurope``, a copy of ``aks-westeurope`` (it names the status reporter) with a Cluster, and a
    ConfigSchema that only it must meet and that no ConfigMap satisfies: every assignment to it fails validation."""
    source = (root / "envs/dev/cluster-types/aks-westeurope.yaml").read_text()
    (root / HELD_TYPE).write_text(
        source.replace("name: aks-westeurope", "name: aks-northeurope")
        .replace("  labels:\n", "  labels:\n    held: \"yes\"\n", 1))
    append("envs/dev/clusters/cloud.yaml",
           "---\napiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: aks-neu-dev-01\nspec:\n"
           "  clusterType: aks-northeurope\n  statusContext: \"flux/aks-neu-dev-01\"\n")(root)
    (root / "main/schemas/held.yaml").write_text(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: ConfigSchema\nmetadata:\n  name: held\n  labels:\n"
        "    held: \"yes\"\nspec:\n  schema:\n    type: object\n    required: [NOT_SET_ANYWHERE]\n")


def _render_keeping(plane: Path, out: Path) -> tuple[int, dict[str, object]]:
    result = run_cli("render", "--main", plane / "main", "--env", plane / "envs" / "dev", "--environment", "dev",
                     "--output", out, *PIN, "--format", "json", "--keep-last-good")
    return result.exit_code, json.loads(result.output)


@pytest.mark.parametrize("then", ["cluster type removed", "reporter dropped"])
def test_a_status_folder_written_while_its_cluster_type_is_held_back_whole_goes_with_it(tmp_path: Path,
                                                                                        then: str) -> None:
    """``render --keep-last-good``: a cluster type added while every one of its assignments fails gets its
    ``_status/`` folder (its reporter renders), but no assignment in the state's shards. When the cluster type goes,
    or stops naming its reporter, the folder goes too, as with any other cluster type: the state's reporter
    fingerprints name the cluster types whose ``_status/`` folder a render wrote. Found by the keep-last-good walk
    (``FLEETFLOW_WALK_SEEDS=111``): the folder stayed, and since no state named its cluster type, not even
    ``--full`` looked at it."""
    plane = tmp_path / "plane"
    shutil.copytree(EXAMPLE, plane)
    out = tmp_path / "out"
    render(plane / "main", plane / "envs" / "dev", out)
    _add_a_cluster_type_that_fails_whole(plane)
    code, reply = _render_keeping(plane, out)
    assert code == 1, reply
    held = sorted(p.relative_to(out).as_posix() for p in (out / "aks-northeurope").rglob("*") if p.is_file())
    assert held == ["aks-northeurope/_status/flux-status-reporter.yaml"], held  # its reporter, no assignment
    if then == "cluster type removed":  # with its Cluster
        (plane / HELD_TYPE).unlink()
        shutil.copy(EXAMPLE / "envs/dev/clusters/cloud.yaml", plane / "envs/dev/clusters/cloud.yaml")
    else:
        edit(HELD_TYPE, "statusReporter: flux-status-reporter", "")(plane)
    code, reply = _render_keeping(plane, out)
    fresh = tmp_path / "fresh"
    fresh_code, _ = _render_keeping(plane, fresh)
    assert code == fresh_code == (0 if then == "cluster type removed" else 1), reply
    assert not (out / "aks-northeurope" / "_status").exists()
    assert tree_bytes(out) == tree_bytes(fresh)
