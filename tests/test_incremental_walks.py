"""Random walks of control-plane changes: after every step of a walk, the incremental render of the folder the
previous steps left equals a fresh full render byte for byte, and a second run writes nothing. A step the render
refuses (a value a schema forbids, a template that no longer renders) changes nothing in the output, and is then
taken back.

``test_incremental.py`` checks each kind of change alone, once, from a full render. A walk puts them in sequence
and in combination, on a plane large enough that the state's index is in parts (more than ``SMALL_INDEX`` names), so
each render starts from a state that earlier incremental renders wrote, as every schedule does. It also moves
documents between files, which must change nothing but the files' line numbers, and commits in registered workload
repos, which change the render's input with no control-plane commit. The walks are seeded: a failure names its
seed and its steps, and the same seed repeats them. CI takes the seeds below; ``FLEETFLOW_WALK_SEEDS`` (for example
``100-199``) takes others, for a longer search by hand (:func:`walk_seeds`).

The ``--keep-last-good`` walk leaves broken values or templates in the plane for a few steps, with other changes
meanwhile: what fails is held back with its files as they were, and the first render once the plane is valid again
is a fresh full render byte for byte.
"""

from __future__ import annotations

import io
import json
import random
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from ruamel.yaml import YAML

from fleetflow.errors import InputError
from fleetflow.forge.git import BareRepo
from fleetflow.promotion.pin import PIN_FILE
from fleetflow.promotion.promote import promote, promote_many
from fleetflow.promotion.schedule import ScheduleOutcome, render_commit, schedule_environment
from fleetflow.promotion.shards import stitch_environment
from fleetflow.render.incremental import PART_DIR, SMALL_INDEX
from fleetflow.render.ownership import cluster_type_of
from tests.fleet import Fleet, git
from tests.helpers import run_cli, searched_seeds, tree_bytes
from tests.test_gitops_commit import add_foreign_files, check_head_equals_render
from tests.test_promotion import make_local_fleet
from tests.test_render import STATUS_TEMPLATE
from tests.test_schedule_shards import run_shards, runner
from tests.test_state_shards import legacy_tree, whole_index_tree

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
SEEDS_VARIABLE = "FLEETFLOW_WALK_SEEDS"
SEARCH = searched_seeds(SEEDS_VARIABLE)
PIN = ["--main-commit", "0" * 40, "--env-commit", "1" * 40]
EXTRA_TYPES = 50  # cluster types added to the example's dev branch, so that the index is in parts
STEPS = 20


def walk_seeds(default: list[tuple[int, Any]], variants: list[Any], label: Callable[[Any], str]) -> list[Any]:
    """The walks a test takes, as (seed, variant) with the id ``seed-label(variant)`` (just the seed when the label
    is empty): ``default``, or, when the environment variable ``FLEETFLOW_WALK_SEEDS`` names seeds (``10-39``,
    ``3,8,11``, or both: ``3,10-19``), those seeds, each in the variant ``variants[seed % len(variants)]``. It is a
    longer search, run by hand, for a sequence of steps that breaks a walk's rule:
    ``FLEETFLOW_WALK_SEEDS=100-199 pytest tests/test_incremental_walks.py``."""
    chosen = default
    if SEARCH:
        chosen = [(seed, variants[seed % len(variants)]) for seed in SEARCH]
    return [pytest.param(seed, variant, id="-".join(x for x in (str(seed), label(variant)) if x))
            for seed, variant in chosen]


def took_enough(enough: bool, message: str) -> None:
    """A walk's last check: it took what it is there to take (enough steps; for the keep-last-good walk, held-back
    steps and a catch-up). CI's seeds are chosen so that they do, and a failure there is a failure. In a search over
    other seeds (``FLEETFLOW_WALK_SEEDS``), a walk that took too little found nothing wrong either: it is skipped,
    with the message, so that the search's failures are the walks' rules broken."""
    if enough:
        return
    if SEARCH:
        pytest.skip(f"a thin walk, not a finding: {message}")
    raise AssertionError(message)


def _yaml() -> YAML:
    y = YAML()  # round trip: comments and quotes stay, so an untouched document keeps its text
    y.preserve_quotes = True
    y.width = 4096
    return y


@dataclass
class Doc:
    file: Path
    index: int  # its place in the file
    body: Any  # the round-trip mapping; changed in place, then the file is written again

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


class Plane:
    """The control plane of one walk on disk (by default ``main/`` and ``envs/dev/`` under ``root``), read and written
    document by document."""

    def __init__(self, root: Path, main: Path | None = None, env: Path | None = None) -> None:
        self.root = root
        self.main = main or root / "main"
        self.env = env or root / "envs" / "dev"
        self.files: dict[Path, list[Any]] = {}
        for tree in (self.main, self.env):
            for path in sorted(tree.rglob("*.yaml")):
                self.files[path] = [d for d in _yaml().load_all(path.read_text()) if d is not None]

    def docs(self, kind: str | None = None, tree: Path | None = None) -> list[Doc]:
        return [
            Doc(path, i, body) for path, bodies in self.files.items() for i, body in enumerate(bodies)
            if (kind is None or body.get("kind") == kind) and (tree is None or path.is_relative_to(tree))
        ]

    def write(self, *paths: Path) -> None:
        for path in paths:
            bodies = self.files[path]
            if not bodies:
                path.unlink(missing_ok=True)
                del self.files[path]
                continue
            out = io.StringIO()
            _yaml().dump_all(bodies, out)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(out.getvalue())

    def add(self, path: Path, body: Any) -> None:
        self.files.setdefault(path, []).append(body)
        self.write(path)

    def remove(self, doc: Doc) -> None:
        del self.files[doc.file][doc.index]
        self.write(doc.file)


def _walk_types(env: Path) -> None:
    """``EXTRA_TYPES`` cloud cluster types like ``aks-westeurope``, one Cluster each, in two files."""
    types, clusters = [], []
    for i in range(EXTRA_TYPES):
        name = f"walk-{i:02d}"
        types.append(
            "apiVersion: fleetflow.dev/v1alpha1\nkind: ClusterType\nmetadata:\n"
            f"  name: {name}\n  labels:\n    tier: cloud\n    runtime: kubernetes\n    provider: aks\n"
            f"    gitops-agent: flux\n    region: westeurope\n    group: g{i % 5}\n"
            "spec:\n  reconciler: flux-reconciler\n  statusReporter: flux-status-reporter\n"
            "  namespaceService: kubernetes-namespace\n  configType: configmap-config\n"
        )
        clusters.append(_cluster(f"{name}-01", name))
    (env / "cluster-types" / "walk.yaml").write_text("---\n".join(types))
    (env / "clusters" / "walk.yaml").write_text("---\n".join(clusters))


def _child(parent: Any, key: str) -> Any:
    """The mapping under ``key`` in ``parent``, made (empty) when it is missing or null."""
    if parent.get(key) is None:
        parent[key] = {}
    return parent[key]


def _cluster(name: str, cluster_type: str) -> str:
    return (f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n"
            f"  clusterType: {cluster_type}\n  statusContext: \"flux/{name}\"\n")


def _new_config_map(name: str, label: tuple[str, str], key: str, value: str) -> Any:
    return _yaml().load(
        f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels:\n    platform-config: "true"\n'
        f"    {label[0]}: {json.dumps(label[1])}\ndata:\n  {key}: {json.dumps(value)}\n"
    )


def _label_pairs(plane: Plane) -> list[tuple[str, str]]:
    """Every (key, value) a cluster type or a workload carries: what a changed selector may select."""
    pairs = {
        (str(k), str(v))
        for d in plane.docs() if d.kind in ("ClusterType", "Workload")
        for k, v in (d.body["metadata"].get("labels") or {}).items()
    }
    return sorted(pairs)


Step = Callable[[Plane, random.Random, int], str | None]  # the change made (None: none applied here)


def config_value(plane: Plane, rng: random.Random, n: int) -> str | None:
    cms = [d for d in plane.docs("ConfigMap") if d.body.get("data")]
    doc = rng.choice(cms)
    key = rng.choice(sorted(doc.body["data"]))
    value = str(doc.body["data"][key])
    doc.body["data"][key] = str(int(value) + 1) if value.isdigit() else f"{value}{n}"
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: {key} changed"


def config_key_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ConfigMap"))
    _child(doc.body, "data")[f"WALK_{n}"] = f"v{n}"
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: WALK_{n} added"


def config_key_removed(plane: Plane, rng: random.Random, n: int) -> str | None:
    cms = [d for d in plane.docs("ConfigMap") if d.body.get("data")]
    doc = rng.choice(cms)
    key = rng.choice(sorted(doc.body["data"]))
    del doc.body["data"][key]
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: {key} removed"


def config_labels(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ConfigMap"))
    labels = doc.body["metadata"]["labels"]
    for key in [k for k in labels if k != "platform-config"]:
        del labels[key]
    key, value = rng.choice(_label_pairs(plane))
    labels[key] = value
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: now selects {key}={value}"


def config_map_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    files = sorted({d.file for d in plane.docs("ConfigMap")})
    plane.add(rng.choice(files), _new_config_map(f"walk-cm-{n}", rng.choice(_label_pairs(plane)), f"WALK_{n}", "1"))
    return f"ConfigMap walk-cm-{n} added"


def config_map_removed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ConfigMap"))
    plane.remove(doc)
    return f"ConfigMap {doc.name} removed"


def config_priority(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ConfigMap"))
    priority = str(rng.choice([-5, 0, 50, 100, 200]))
    _child(doc.body["metadata"], "annotations")["fleetflow.dev/priority"] = priority
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: priority {priority}"


def cluster_type_labels(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ClusterType"))
    labels = doc.body["metadata"]["labels"]
    key = rng.choice(sorted(labels))
    values = sorted({v for k, v in _label_pairs(plane) if k == key} | {f"walk{n}"})
    labels[key] = rng.choice(values)
    plane.write(doc.file)
    return f"ClusterType {doc.name}: {key}={labels[key]}"


def cluster_type_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    source = rng.choice(plane.docs("ClusterType"))
    text = io.StringIO()
    _yaml().dump(source.body, text)
    body = _yaml().load(text.getvalue())
    name = f"walk-new-{n}"
    body["metadata"]["name"] = name
    plane.add(plane.env / "cluster-types" / f"{name}.yaml", body)
    plane.add(plane.env / "clusters" / "walk.yaml", _yaml().load(_cluster(f"{name}-01", name)))
    return f"ClusterType {name} added (copy of {source.name}), with a Cluster"


def cluster_type_removed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("ClusterType"))
    for cluster in reversed(plane.docs("Cluster")):  # from the end, so the places of the others hold
        if cluster.body["spec"]["clusterType"] == doc.name:
            plane.remove(cluster)
    plane.remove(next(d for d in plane.docs("ClusterType") if d.name == doc.name))
    return f"ClusterType {doc.name} removed, with its Clusters"


def cluster_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    ct = rng.choice(plane.docs("ClusterType")).name
    files = sorted({d.file for d in plane.docs("Cluster")})
    plane.add(rng.choice(files), _yaml().load(_cluster(f"walk-cluster-{n}", ct)))
    return f"Cluster walk-cluster-{n} added to {ct}"


def cluster_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("Cluster"))
    if rng.random() < 0.5:
        plane.remove(doc)
        return f"Cluster {doc.name} removed"
    doc.body["spec"]["statusContext"] = f"flux/{doc.name}-{n}"
    plane.write(doc.file)
    return f"Cluster {doc.name}: status context changed"


def document_moved(plane: Plane, rng: random.Random, n: int) -> str | None:
    tree = rng.choice([tree for tree in (plane.main, plane.env) if plane.docs(tree=tree)])
    doc = rng.choice(plane.docs(tree=tree))
    files = sorted({d.file for d in plane.docs(tree=tree)} - {doc.file})
    target = rng.choice(files) if rng.random() < 0.7 else tree / "moved" / f"walk-{n}.yaml"
    plane.remove(doc)
    plane.add(target, doc.body)
    return f"{doc.kind} {doc.name} moved from {doc.file.relative_to(plane.root)} to {target.relative_to(plane.root)}"


def target_labels(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("Workload"))
    targets = [t for t in doc.body["spec"]["deploymentTargets"] if t.get("environment") == "dev"]
    if not targets:
        return None
    slo = rng.choice(["best-effort", "silver", "gold", f"walk{n}"])
    _child(targets[0], "labels")["slo"] = slo
    plane.write(doc.file)
    return f"Workload {doc.name}: dev target slo={slo}"


def template_edited(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("Template"))
    manifests = doc.body["spec"]["manifests"]
    i = rng.randrange(len(manifests))
    manifests[i] = type(manifests[i])(f"{manifests[i].rstrip()}\n# walk {n}\n")  # keeps a block scalar a block
    plane.write(doc.file)
    return f"Template {doc.name}: manifest {i} edited"


def policy_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("SchedulingPolicy"))
    match = _child(_child(_child(doc.body["spec"], "clusterTypeSelector"), "labelSelector"), "matchLabels")
    if match and rng.random() < 0.5:
        key = rng.choice(sorted(match))
        del match[key]
        plane.write(doc.file)
        return f"SchedulingPolicy {doc.name}: no longer requires {key}"
    key, value = rng.choice([p for p in _label_pairs(plane) if p[0] in {"group", "provider", "region", "tier"}])
    match[key] = value
    plane.write(doc.file)
    return f"SchedulingPolicy {doc.name}: now requires {key}={value}"


def schema_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A ConfigSchema applies to other assignments (its labels), or asks for one more key."""
    doc = rng.choice(plane.docs("ConfigSchema"))
    if rng.random() < 0.5:
        key, value = rng.choice(_label_pairs(plane))
        doc.body["metadata"]["labels"] = {key: value}
        plane.write(doc.file)
        return f"ConfigSchema {doc.name}: applies to {key}={value}"
    schema = doc.body["spec"]["schema"]
    key = rng.choice(["LOG_LEVEL", "SITE_ID", "REPLICAS", f"WALK_{n}"])
    schema["required"] = sorted({*(schema.get("required") or []), key})
    plane.write(doc.file)
    return f"ConfigSchema {doc.name}: requires {key}"


def workspace_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("Workload"))
    doc.body["spec"]["workspace"] = rng.choice(["commerce", "manufacturing", "platform", f"walk{n}"])
    plane.write(doc.file)
    return f"Workload {doc.name}: workspace {doc.body['spec']['workspace']}"


def policy_targets_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A policy picks one workload's target instead of the ones it picked: a cluster type may hold as many
    targets as before, and other ones, with no fingerprint changed (only the index's digest of its ids)."""
    doc = rng.choice(plane.docs("SchedulingPolicy"))
    workload = rng.choice(plane.docs("Workload")).name
    doc.body["spec"]["deploymentTargetSelector"] = {"labelSelector": {"matchLabels": {"workload": workload}}}
    plane.write(doc.file)
    return f"SchedulingPolicy {doc.name}: now picks workload {workload}"


def gitops_repo_changed(plane: Plane, rng: random.Random, n: int) -> str | None:
    doc = rng.choice(plane.docs("GitOpsRepo"))
    doc.body["spec"]["branch"] = f"dev-{n}"
    plane.write(doc.file)
    return f"GitOpsRepo {doc.name}: branch dev-{n}"


def _registered_workload(name: str, slo: str, path: str) -> str:
    """A Workload kept in its own repo, with no config schema of its own: a ``dev`` target that the example's
    cloud-services policy picks (workspace commerce, ``placement: cloud``) and the test fleet's (``purpose: app``)."""
    return ("apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n"
            f"  name: {name}\n  labels: {{team: commerce, placement: cloud}}\nspec:\n  deploymentTargets:\n"
            f"    - name: dev\n      environment: dev\n      labels: {{slo: {slo}, purpose: app}}\n"
            f"      manifests: {{repo: https://example.invalid/{name}, branch: dev, path: {path}}}\n")


def registration_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A WorkloadRegistration on main naming a new workload repo (a local git repo, beside the plane)."""
    name = f"reg-{n}"
    repo = plane.root.parent / "apps" / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "workload.yaml").write_text(_registered_workload(name, "best-effort", "deploy"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the workload")
    plane.add(plane.main / "registrations" / f"{name}.yaml", _yaml().load(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: WorkloadRegistration\nmetadata:\n  name: {name}\nspec:\n"
        f"  workload: {{repo: {json.dumps(repo.as_uri())}, branch: main, path: .}}\n  workspace: commerce\n"))
    return f"WorkloadRegistration {name} added (its repo: apps/{name})"


def registered_workload_edited(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A commit in a workload repo (registered now or earlier): nothing in the control plane changes, the render's
    input does (or nothing does, when the repo is no longer registered)."""
    apps = plane.root.parent / "apps"
    repos = sorted(apps.iterdir()) if apps.is_dir() else []
    if not repos:
        return None
    repo = rng.choice(repos)
    target = _yaml().load((repo / "workload.yaml").read_text())["spec"]["deploymentTargets"][0]
    slo, path = target["labels"]["slo"], target["manifests"]["path"]
    if rng.random() < 0.5:  # one of the two: a target's labels, or where its manifests are (its fingerprint only)
        slo = rng.choice(["best-effort", "silver", "gold"])
        change = f"slo={slo}"
    else:
        path = f"deploy-{n}"
        change = f"manifests path {path}"
    (repo / "workload.yaml").write_text(_registered_workload(repo.name, slo, path))
    git(repo, "commit", "-q", "--allow-empty", "-am", change)
    return f"workload repo {repo.name}: dev target {change}"


def registration_removed(plane: Plane, rng: random.Random, n: int) -> str | None:
    regs = plane.docs("WorkloadRegistration")
    if not regs:
        return None
    doc = rng.choice(regs)
    plane.remove(doc)
    return f"WorkloadRegistration {doc.name} removed"


STEP_KINDS: list[Step] = [
    config_value, config_key_added, config_key_removed, config_labels, config_map_added, config_map_removed,
    config_priority, cluster_type_labels, cluster_type_added, cluster_type_removed, cluster_added, cluster_changed,
    document_moved, target_labels, template_edited, policy_changed, policy_targets_changed, gitops_repo_changed,
    schema_changed, workspace_changed, registration_added, registered_workload_edited, registration_removed,
]


def _app_heads(apps: Path) -> dict[Path, str]:
    """The commit each registered workload's repo is at."""
    return {repo: git(repo, "rev-parse", "HEAD") for repo in sorted(apps.iterdir())} if apps.is_dir() else {}


def _restore(root: Path, files: dict[str, bytes], apps: dict[Path, str]) -> Plane:
    """The plane as ``files`` held it, and the workload repos at the commits ``apps`` names: a step taken back."""
    shutil.rmtree(root)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    for repo, head in apps.items():
        git(repo, "reset", "-q", "--hard", head)
    return Plane(root)


def _render_cli(plane: Plane, out: Path, *options: str) -> Result:
    return run_cli("render", "--main", plane.main, "--env", plane.env, "--environment", "dev", "--output", out,
                   *PIN, *options, "--format", "json")


def render(plane: Plane, out: Path, *options: str) -> tuple[int, dict[str, Any], str]:
    result = _render_cli(plane, out, *options)
    data = json.loads(result.output)["result"] if result.exit_code == 0 else {}
    return result.exit_code, data, result.output


def _example_plane(tmp_path: Path, walk_types: bool = True) -> Plane:
    """The example control plane's ``main`` and ``dev`` branch in ``tmp_path/plane``, with ``EXTRA_TYPES`` more
    cluster types unless ``walk_types`` is False."""
    root = tmp_path / "plane"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("qa", "prod"))
    if walk_types:
        _walk_types(root / "envs" / "dev")
    return Plane(root)


def _add_foreign(out: Path, rng: random.Random, n: int, foreign: dict[str, bytes]) -> None:
    """A file of the user's in a folder fleetflow writes into: an assignment's, or its cluster type's (never a
    status reporter's ``_status/``, which fleetflow reserves, nor a name fleetflow gives its own files)."""
    paths = (p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    folders = sorted({
        path.rsplit("/", 1)[0] for path in paths
        if path.count("/") == 2 and not path.startswith(".fleetflow/") and "/_status/" not in path
    })
    folder = rng.choice(folders)
    if rng.random() < 0.4:
        folder = cluster_type_of(folder)
    path = f"{folder}/ours-{n}.txt"
    foreign[path] = f"the user's own file, placed at step {n}\n".encode()
    (out / path).write_bytes(foreign[path])


def _pruned(foreign: dict[str, bytes], after: dict[str, bytes], before: dict[str, bytes],
            rendered: dict[str, bytes], where: str) -> dict[str, bytes]:
    """The user's files left after ``--prune-foreign``, checked: it deletes those in every cluster-type folder the
    render writes into, may delete those in a folder it wrote into before, and keeps every other one."""
    now = {cluster_type_of(path) for path in rendered if not path.startswith(".fleetflow/")}
    earlier = {cluster_type_of(path) for path in before
               if path not in foreign and "/" in path and not path.startswith(".fleetflow/")}
    for path in foreign:
        folder = cluster_type_of(path) if "/" in path else None
        if folder in now:
            assert path not in after, f"{where}: {path} pruned"
        elif folder not in earlier:
            assert path in after, f"{where}: {path} is in no folder fleetflow writes into: kept"
    return {path: data for path, data in foreign.items() if path in after}


def _start(tmp_path: Path, earlier: str | None) -> tuple[Plane, Path]:
    """The walk's plane and its first render (in parts). ``earlier``: the output starts as a tree an earlier
    version wrote for the example's dev environment (``v1``: one state file; ``v2``: a whole index), converted by
    the first render of the example, then the walk's cluster types come as one more change."""
    out = tmp_path / "out"
    if earlier is None:
        plane = _example_plane(tmp_path)
        code, _, output = render(plane, out)
        assert code == 0, output
        return plane, out
    (legacy_tree if earlier == "v1" else whole_index_tree)(out)
    plane = _example_plane(tmp_path, walk_types=False)
    _renders_as_fresh(plane, out, tmp_path / "fresh", f"{earlier}: the example over the earlier tree")
    _walk_types(plane.env)
    plane = Plane(plane.root)
    _renders_as_fresh(plane, out, tmp_path / "fresh", f"{earlier}: the walk's cluster types")
    return plane, out


def _renders_as_fresh(plane: Plane, out: Path, fresh: Path, where: str) -> None:
    """The incremental render into ``out`` is what a render into the empty folder ``fresh`` gives."""
    code, _, output = render(plane, out)
    fresh_code, _, _ = render(plane, fresh)
    assert code == fresh_code == 0, f"{where}: {output}"
    assert tree_bytes(out) == tree_bytes(fresh), where
    shutil.rmtree(fresh)


@pytest.mark.parametrize(("seed", "earlier"), walk_seeds(
    [(1, None), (2, None), (3, None), (4, None), (5, "v1"), (6, "v2")], [None, None, "v1", "v2"],
    lambda earlier: f"from-{earlier}" if earlier else ""))
def test_a_walk_of_changes_renders_what_a_full_render_gives_at_every_step(tmp_path: Path, seed: int,
                                                                         earlier: str | None) -> None:
    """Each step's incremental render is a fresh full render byte for byte, plus the files the user put in the
    output's cluster-type and assignment folders now and then: those stay as they are through every step, when
    their assignment or cluster type goes too (fleetflow deletes only what it wrote), and through the steps
    rendered with ``--full`` over the folder (every assignment again, every cluster-type folder swept). A step
    rendered with ``--prune-foreign`` deletes the user's files in the cluster-type folders it writes into, and no
    others (the output's README, a ``notes/`` folder beside the cluster types). Two walks start from a tree an
    earlier version of fleetflow wrote (its state in one file, or a whole index), which the first render converts."""
    plane, out = _start(tmp_path, earlier)
    root = plane.root
    assert len(list((out / PART_DIR).iterdir())) > 1, f"more than {SMALL_INDEX} names: the index is in parts"

    rng = random.Random(seed)
    users = random.Random(-seed)  # where the user's files go: apart, so the steps are those of the seed
    foreign = {"README.md": b"the GitOps repo\n", "notes/keep.md": b"outside every cluster-type folder\n"}
    for path, data in foreign.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(data)
    done: list[str] = []
    refused = 0
    for n in range(STEPS):
        if n == 0 or users.random() < 0.3:
            _add_foreign(out, users, n, foreign)
        before_plane, before_apps = tree_bytes(root), _app_heads(tmp_path / "apps")
        step = rng.choice(STEP_KINDS)
        change = step(plane, rng, n)
        if change is None:
            continue
        mode = users.random()  # now and then all of it again over the folder, or the user's files pruned too
        options = ["--full"] if mode < 0.15 else ["--prune-foreign", "--yes"] if mode < 0.25 else []
        where = f"seed {seed}, step {n}: {change} {options} (after: {done})"
        before = tree_bytes(out)
        code, _, output = render(plane, out, *options)
        full = tmp_path / f"full-{n}"
        full_code, _, full_output = render(plane, full)
        if full_code != 0:  # the plane is wrong now: the incremental render refuses it with the same messages
            assert (code, output) == (full_code, full_output), where
            assert tree_bytes(out) == before, where  # and writes nothing
            plane = _restore(root, before_plane, before_apps)
            refused += 1
            continue
        assert code == 0, f"{where}: {output}"
        after, rendered = tree_bytes(out), tree_bytes(full)
        if "--prune-foreign" in options:  # the user's files in the cluster-type folders fleetflow writes into go
            foreign = _pruned(foreign, after, before, rendered, where)
        assert {path: after.get(path) for path in foreign} == foreign, f"{where}: the user's files stay"
        assert {path: data for path, data in after.items() if path not in foreign} == rendered, where
        again_code, again, _ = render(plane, out)
        assert again_code == 0 and again["written"] == [] and again["rendered"] == 0, where
        shutil.rmtree(full)
        done.append(change)
    took_enough(len(done) >= STEPS // 2, f"seed {seed}: too few steps rendered ({done}, {refused} refused)")


# --- the same walk with --keep-last-good: broken values stay broken for a while, held back meanwhile ------------

BREAKABLE = ("LOG_LEVEL", "TLS_MIN_VERSION", "TELEMETRY_ENDPOINT", "SITE_ID", "LINE_ID", "SCRAPE_INTERVAL")


def value_broken(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A value a schema forbids (an enum's or a pattern's: ``broken-N`` fits none of them): every assignment it
    reaches fails, unless a ConfigMap of higher precedence sets the key for it."""
    found = [(d, k) for d in plane.docs("ConfigMap") for k in (d.body.get("data") or {}) if k in BREAKABLE]
    doc, key = rng.choice(found)
    doc.body["data"][key] = f"broken-{n}"
    plane.write(doc.file)
    return f"ConfigMap {doc.name}: {key}=broken-{n}"


def template_broken(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A template line that reads a target label many targets lack (``slo``): it renders for the targets that have
    one and fails for the others."""
    doc = rng.choice(plane.docs("Template"))
    manifests = doc.body["spec"]["manifests"]
    i = rng.randrange(len(manifests))
    manifests[i] = type(manifests[i])(f"{manifests[i].rstrip()}\n# walk {n}: {{{{ Labels['slo'] }}}}\n")
    plane.write(doc.file)
    return f"Template {doc.name}: manifest {i} reads the label slo"


def render_keeping(plane: Plane, out: Path) -> tuple[int, dict[str, Any], str]:
    """``render --keep-last-good``: its exit code, its JSON reply and its output."""
    result = _render_cli(plane, out, "--keep-last-good")
    return result.exit_code, json.loads(result.output), result.output


def _about_an_assignment(message: str) -> bool:
    """Whether a problem is an assignment's: its config breaks a schema (``ct/target: KEY ...``) or its template
    does not render (``..., rendering assignment ct/target: ...``)."""
    return re.match(r"[^\s:/]+/[^\s:/]+: ", message) is not None or "rendering assignment " in message


def _assignment(path: str) -> str:
    """The assignment a rendered file belongs to (``<clusterType>/<target>``, its folder)."""
    return "/".join(path.split("/")[:2])


def _outside_state(files: dict[str, bytes], held: set[str]) -> dict[str, bytes]:
    return {p: b for p, b in files.items() if not p.startswith(".fleetflow/") and _assignment(p) not in held}


def _of(files: dict[str, bytes], assignment: str) -> dict[str, bytes]:
    return {p: b for p, b in files.items() if _assignment(p) == assignment}


@pytest.mark.parametrize(("seed", "variant"), walk_seeds([(5, None), (6, None), (111, None)], [None], lambda _: ""))
def test_a_walk_with_keep_last_good_holds_back_only_what_fails_and_catches_up(tmp_path: Path, seed: int,
                                                                             variant: None) -> None:
    """``render --keep-last-good`` after each step, with broken values or templates left in the plane for a few steps
    (and other changes made meanwhile) until the plane goes back to its last valid version. A status reporter's
    template that fails refuses the whole render, as without --keep-last-good (it is no assignment to hold back),
    and is taken back; an assignment's failure never does. While something is broken:
    exit 1, each held-back assignment (the state's ``heldBack``) keeps exactly the files it had before the step,
    and every other file is what a --keep-last-good render into an empty folder gives; a second run writes
    nothing. Once the plane is valid again: exit 0, and the folder is a fresh full render byte for byte (what was
    held back is rendered again, with every change made meanwhile), as in the walk above."""
    plane = _example_plane(tmp_path)
    root = plane.root
    out = tmp_path / "out"
    code, _, output = render_keeping(plane, out)
    assert code == 0, output

    rng = random.Random(seed)
    good, good_apps = tree_bytes(root), _app_heads(tmp_path / "apps")
    broken = 0  # steps since the plane was last valid
    held_steps = caught_up = 0
    done: list[str] = []
    for n in range(STEPS):
        if broken and (broken >= 4 or rng.random() < 0.35):
            plane = _restore(root, good, good_apps)
            change: str | None = "back to the last valid plane"
        elif rng.random() < 0.3:
            change = rng.choice([value_broken, template_broken])(plane, rng, n)
        else:
            change = rng.choice(STEP_KINDS)(plane, rng, n)
        if change is None:
            continue
        done.append(change)
        where = f"seed {seed}, step {n}: {change} (after: {done[:-1]})"
        before = tree_bytes(out)
        code, reply, output = render_keeping(plane, out)
        full = tmp_path / f"full-{n}"
        full_code, _, _ = render(plane, full)
        if full_code == 0:
            assert code == 0, f"{where}: {output}"
            assert tree_bytes(out) == tree_bytes(full), where
            caught_up += broken > 0
            good, good_apps, broken = tree_bytes(root), _app_heads(tmp_path / "apps"), 0
        elif reply["result"] is None:  # refused whole (a status reporter's template, a reference): nothing held
            assert code == full_code and tree_bytes(out) == before, where
            # never for an assignment's failure: that one is held back
            assert not any(_about_an_assignment(p["message"]) for p in reply["problems"]), f"{where}: {output}"
            plane = _restore(root, good, good_apps)
            broken = 0
            done.append("taken back")
            continue
        else:
            assert code == 1, f"{where}: {output}"
            after = tree_bytes(out)
            held = set(json.loads(after[".fleetflow/state.json"])["fingerprints"]["heldBack"])
            assert held, where
            named = [p["message"] for p in reply["problems"]]
            assert set(reply["result"]["changes"]["heldBack"]) == held, where  # each held back is listed
            # each is told why: named in a problem, or one of the "N more" of a problem that fails alike for many
            # (pipeline.same_problem_once names five of them)
            assert all(any(aid in text for text in named) for aid in held) or any(
                re.search(r"\(and the same in \d+ more assignments: .*, \.\.\.\)", text) for text in named), where
            assert all(any(aid in text for aid in held) for text in named), where  # and only those
            for assignment in held:
                assert _of(after, assignment) == _of(before, assignment), f"{where}: {assignment} held back"
            fresh = tmp_path / f"fresh-{n}"
            fresh_code, _, _ = render_keeping(plane, fresh)
            assert fresh_code == 1, where
            assert _outside_state(after, held) == _outside_state(tree_bytes(fresh), held), where
            shutil.rmtree(fresh)
            held_steps += 1
            broken += 1
        again_code, again, _ = render_keeping(plane, out)
        assert again_code == code and again["result"]["written"] == [], where
        shutil.rmtree(full, ignore_errors=True)
    took_enough(held_steps >= 2 and caught_up >= 1, f"seed {seed}: {held_steps} held, {caught_up} caught up ({done})")


# --- the same walk through ``schedule``: the GitOps commit, written as git objects over the previous one -------

def reporter_toggled(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A cluster type starts or stops naming the status reporter: its ``_status/`` folder comes or goes."""
    doc = rng.choice(plane.docs("ClusterType"))
    spec = doc.body["spec"]
    if spec.get("statusReporter"):
        del spec["statusReporter"]
        plane.write(doc.file)
        return f"ClusterType {doc.name}: no status reporter"
    spec["statusReporter"] = "reporter"
    plane.write(doc.file)
    return f"ClusterType {doc.name}: status reporter"


def base_repo_annotated(plane: Plane, rng: random.Random, n: int) -> str | None:
    """The engineer annotates the BaseRepo (the pin's document) by hand: the environment branch moves, nothing
    rendered changes; promote's later pin commits keep the annotation (they rewrite only the pin and the hold:
    ``tests/test_gate.py::test_pin_roundtrip_keeps_comments``)."""
    docs = [d for d in plane.docs("BaseRepo") if d.file == plane.env / PIN_FILE]
    if not docs:
        return None
    meta = _child(docs[0].body, "metadata")
    _child(meta, "annotations")["walk.example/note"] = f"step {n}"
    plane.write(docs[0].file)
    return f"BaseRepo {docs[0].name}: annotated by hand"


SCHEDULE_STEP_KINDS: list[Step] = [  # what an environment branch holds, and a workload repo's commit
    config_value, config_key_added, config_key_removed, config_labels, config_map_added, config_map_removed,
    config_priority, cluster_type_labels, cluster_type_added, cluster_type_removed, cluster_added, cluster_changed,
    document_moved, policy_changed, reporter_toggled, registered_workload_edited, base_repo_annotated,
]


def workload_added(plane: Plane, rng: random.Random, n: int) -> str | None:
    """A Workload with a ``dev`` target every policy of the test fleet picks: an assignment per cluster type."""
    plane.add(plane.main / "workloads" / f"walk-{n}.yaml", _yaml().load(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: walk-{n}\nspec:\n"
        "  workspace: team-a\n  deploymentTargets:\n    - name: dev\n      environment: dev\n"
        "      labels: {purpose: app}\n"
        f"      manifests: {{repo: https://example.invalid/walk-{n}, branch: main, path: ./dev}}\n"))
    return f"Workload walk-{n} added"


def workload_removed(plane: Plane, rng: random.Random, n: int) -> str | None:
    added = [d for d in plane.docs("Workload") if d.name.startswith("walk-")]
    if not added:
        return None
    doc = rng.choice(added)
    plane.remove(doc)
    return f"Workload {doc.name} removed"


def environment_edited(plane: Plane, rng: random.Random, n: int) -> str | None:
    """dev's Environment (on main) changes its rollout or its PR's labels: promotion reads them, the render only
    whether dev exists, so the tree changes only by the state's main commit."""
    docs = [d for d in plane.docs("Environment") if d.name == "dev"]
    if not docs:
        return None
    spec = _child(docs[0].body, "spec")
    if rng.random() < 0.5:
        _child(spec, "rollout")["soakTime"] = f"{n % 5 + 1}m"
        change = f"soakTime {n % 5 + 1}m"
    else:
        _child(spec, "pullRequest")["labels"] = ["fleetflow", f"walk-{n}"]
        change = f"PR labels fleetflow, walk-{n}"
    plane.write(docs[0].file)
    return f"Environment dev: {change}"


# what main holds; a change there reaches the environment when main is promoted to it
MAIN_STEP_KINDS: list[Step] = [
    template_edited, target_labels, workload_added, workload_removed, workspace_changed, document_moved,
    registration_added, registered_workload_edited, registration_removed, environment_edited,
]


def _earlier_main(clone: Path, walk_start: str, rng: random.Random) -> str | None:
    """One of the last few main commits before main's tip, back to the walk's first one (None: there is none)."""
    git(clone, "pull", "-q", "--ff-only")
    history = git(clone, "rev-list", "--first-parent", f"{walk_start}^..HEAD").split()  # newest first
    return rng.choice(history[1:6]) if len(history) > 1 else None


def _proposed(fleet: Fleet) -> str | None:
    """The commit dev's open fleetflow PR proposes (None: no PR is open)."""
    return fleet.branch_sha(fleet.gitops_url, "fleetflow/dev") if fleet.open_pr("dev") else None


def _roll_back(fleet: Fleet, older: str, work: Path, where: str) -> bool:
    """``promote --environment dev --commit OLDER``: dev is pinned back, with a hold, and its commit is a fresh
    render of main@OLDER and the environment branch as it is now. True when dev is held; when the render refuses
    that pair (nothing pushed), dev is released to main's tip again and False."""
    head_before = _proposed(fleet)
    try:
        with fleet.context() as ctx:
            outcome = promote(ctx, "dev", older).schedule
    except InputError:
        assert _proposed(fleet) == head_before
        with fleet.context() as ctx:
            promote(ctx, "dev", fleet.branch_sha(fleet.cp_url, "main"), release=True)
        return False
    assert outcome is not None and fleet.pin("dev") == older, where
    if outcome.operation in ("created", "updated", "unchanged"):
        check_head_equals_render(fleet, "dev", work)
        fleet.approve("dev")
    return True


def _fleet_types(count: int) -> dict[str, str]:
    """``count`` more cluster types for the test fleet's ``dev`` branch, a Cluster each, half of them with a status
    reporter (``STATUS_TEMPLATE``, pushed to main), and ConfigMaps that select some of them: more than
    ``SMALL_INDEX`` names, so the index is in parts."""
    types = "---\n".join(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: ClusterType\nmetadata:\n"
        f"  name: walk-{i:02d}\n  labels: {{region: dev, group: g{i % 4}, tier: t{i % 3}}}\n"
        "spec: {reconciler: flux, namespaceService: namespace, configType: config"
        + (", statusReporter: reporter}\n" if i % 2 == 0 else "}\n")
        for i in range(count)
    )
    clusters = "---\n".join(
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
        f"  name: walk-{i:02d}-1\nspec:\n  clusterType: walk-{i:02d}\n  statusContext: flux/walk-{i:02d}-1\n"
        for i in range(count)
    )
    configs = "---\n".join(
        f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: group-g{g}\n'
        f'  labels: {{platform-config: "true", group: g{g}}}\ndata:\n  GROUP: g{g}\n  REPLICAS: "{g + 1}"\n'
        for g in range(4)
    )
    return {"cluster-types-walk.yaml": types, "clusters-walk.yaml": clusters, "configs-walk.yaml": configs}


def _sharded_schedule(fleet: Fleet, artifacts: Path, where: str) -> ScheduleOutcome:
    """``schedule --shard K/3`` for K = 1..3 and the stitch, each on a runner of its own (its cache kept from step
    to step): the stitched commit is the one the single job writes (``render_commit``, not pushed), the same id."""
    with runner(fleet, "single") as ctx:
        single = render_commit(ctx, "dev").written.commit
    run_shards(fleet, 3, artifacts)
    with runner(fleet, "stitch") as ctx:
        outcome = stitch_environment(ctx, "dev", artifacts)
    if outcome.operation in ("created", "updated", "unchanged"):
        assert single is not None and outcome.gitops_commit == single, where
    return outcome


@pytest.mark.parametrize(("seed", "sharded"), walk_seeds(
    [(4, False), (7, False), (5, True), (111, False)], [False, False, True],
    lambda sharded: "sharded" if sharded else ""))
def test_a_walk_of_changes_schedules_commits_that_are_fresh_renders(tmp_path: Path, seed: int,
                                                                     sharded: bool) -> None:
    """After every step pushed to the environment branch, ``schedule`` writes its GitOps commit from the previous
    commit's tree and the changed files only (tree ids reused, the state's parts and shards rewritten where they
    changed); after a step pushed to main, the promotion of main to ``dev`` does. The PR is merged or left open
    before the next step. The commit's tree is always a fresh ``fleetflow render`` plus the files fleetflow did
    not write; a step the render refuses pushes nothing. Now and then dev is rolled back (``promote --commit`` of
    an earlier main commit of the walk): the render goes back to older templates and workloads over a state that
    newer ones wrote, environment-branch steps are scheduled over the older main while dev is held, and the next
    main step releases it (``promote --release``). Sharded, an environment branch's step is scheduled by three
    shard jobs and a stitch, whose commit must be the single job's, over states either of them wrote."""
    (tmp_path / "fleet").mkdir()
    fleet = make_local_fleet(tmp_path / "fleet")
    add_foreign_files(fleet, "dev")
    fleet.push_main({"templates/reporter.yaml": STATUS_TEMPLATE}, "a status reporter template")
    fleet.push_env("dev", _fleet_types(EXTRA_TYPES + 20), "cluster types for the walk")
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    check_head_equals_render(fleet, "dev", tmp_path / "r-first")
    parts = BareRepo(Path(fleet.gitops_url)).listings(fleet.branch_sha(fleet.gitops_url, "fleetflow/dev"), [PART_DIR])
    assert len(parts[PART_DIR] or []) > 1, f"more than {SMALL_INDEX} names: the index is in parts"
    fleet.approve("dev")

    clones = {branch: tmp_path / f"{branch}-branch" for branch in ("main", "dev")}
    for branch, clone in clones.items():
        git(tmp_path, "clone", "-q", "-b", branch, fleet.cp_url, str(clone))
    rng = random.Random(seed)
    done: list[str] = []
    walk_start, held = fleet.branch_sha(fleet.cp_url, "main"), False
    for n in range(STEPS):
        if not held and rng.random() < 0.15:  # a rollback: dev pinned to an earlier main commit of the walk
            older = _earlier_main(clones["main"], walk_start, rng)
            if older is not None:
                held = _roll_back(fleet, older, tmp_path / f"r-{n}", f"seed {seed}, step {n} (after: {done})")
                done.append(f"dev rolled back to main@{older[:8]}" + ("" if held else " [refused, released]"))
            continue
        branch = "main" if rng.random() < 0.3 else "dev"
        clone = clones[branch]
        git(clone, "pull", "-q", "--ff-only")  # a promotion writes the pin on the environment branch
        if branch == "main":
            change = rng.choice(MAIN_STEP_KINDS)(Plane(clone, main=clone, env=clone / ".no-env"), rng, n)
        else:
            change = rng.choice(SCHEDULE_STEP_KINDS)(Plane(clone, main=clone / ".no-main", env=clone), rng, n)
        if change is None:
            continue
        where = f"seed {seed}, step {n}: {change} on {branch} (after: {done})"
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "--allow-empty", "-m", change)
        git(clone, "push", "-q", "origin", f"HEAD:{branch}")
        head_before = _proposed(fleet)
        try:
            with fleet.context() as ctx:
                if branch == "main":  # a push to main promotes it to dev, the first environment
                    # (after a rollback dev is held: the engineer releases it, promote --release)
                    [promoted] = promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"), release=held)
                    assert promoted.schedule is not None, where
                    outcome = promoted.schedule
                    held = False
                elif sharded:
                    outcome = _sharded_schedule(fleet, tmp_path / f"artifacts-{n}", where)
                else:
                    outcome = schedule_environment(ctx, "dev")
        except InputError:  # the plane is wrong now: nothing pushed, and the step is taken back
            after = _proposed(fleet)
            assert after == head_before, where
            git(clone, "revert", "--no-edit", "HEAD")  # (git revert has no -q)
            git(clone, "push", "-q", "origin", f"HEAD:{branch}")
            continue
        if outcome.operation in ("created", "updated", "unchanged"):
            check_head_equals_render(fleet, "dev", tmp_path / f"r-{n}")
            if rng.random() < 0.7:  # merged before the next step, or left open for the next schedule to update
                fleet.approve("dev")
        else:
            assert outcome.operation in ("none", "closed"), where
        done.append(f"{change} on {branch} [{outcome.operation}]")
    took_enough(len(done) >= STEPS // 2, f"seed {seed}: too few steps scheduled ({done})")
