"""A synthetic fleet for benchmarks: a control plane (main tree + the ``dev`` environment tree) on disk.

``W`` workloads (one ``dev`` deployment target each) × ``T`` cluster types, one SchedulingPolicy selecting
every target and every cluster type: ``W × T`` assignments, three rendered files each.

Cluster type ``i`` carries ``region = i % regions``, ``site = i % sites``, ``line = i % lines``; with the
defaults (10 regions, 50 sites, 100 lines) one ``line`` value is carried by exactly 1% of the cluster types.

ConfigMaps, lowest precedence first (the numeric name prefix orders ConfigMaps with one label):

* ``env-defaults``: no label, the whole environment;
* ``10-region-rNN``: one per region;
* ``20-site-sNN``: one per site;
* ``30-line-tuning``: ``line: l000``, exactly ``1/lines`` of the assignments (the one phase (b) changes);
* ``40-ct-NNNN``: one per cluster type (``cluster-type: ct-NNNN``), written one file per region;
* ``50-wl-NNN``: one per workload (``workload: wl-NNN``).

Everything is written with plain string formatting (multi-document files), so generating 100,000
assignments takes well under a second. :func:`model` gives the same fleet as Python data (the effective
ConfigMap values, templates, targets), which the plain-Jinja2 baseline uses without reading any file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENVIRONMENT = "dev"
LINE_TUNING_FILE = "configs/line-tuning.yaml"
LINE_TUNING_KEY = "CACHE_SIZE_MB"
LINE_TUNING_OLD = 512
LINE_TUNING_NEW = 1024

RECONCILER_MANIFESTS = (
    """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: {{ DeploymentTargetName }}
  namespace: flux-system
spec:
  interval: 1m
  url: {{ Manifests.repo }}
  ref:
    branch: {{ Manifests.branch }}
""",
    """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {{ DeploymentTargetName }}
  namespace: flux-system
spec:
  interval: 5m
  prune: true
  sourceRef:
    kind: GitRepository
    name: {{ DeploymentTargetName }}
  path: {{ Manifests.path }}
  targetNamespace: {{ Namespace }}
""",
)

NAMESPACE_MANIFESTS = (
    """\
apiVersion: v1
kind: Namespace
metadata:
  name: {{ Namespace }}
  labels:
    environment: {{ Environment }}
    workspace: {{ Workspace }}
    workload: {{ Workload }}
    cluster-type: {{ ClusterType }}
""",
)

CONFIG_MANIFESTS = (
    """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-config
  namespace: {{ Namespace }}
data:{{ ConfigData | stringify | toYaml | nindent(2) }}
""",
)

#: template name -> (type, manifests)
TEMPLATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "flux": ("reconciler", RECONCILER_MANIFESTS),
    "namespace": ("namespace", NAMESPACE_MANIFESTS),
    "config": ("config", CONFIG_MANIFESTS),
}
#: output file role -> template name, in the order the engine renders them
ROLE_TEMPLATES = (("reconciler", "flux"), ("namespace", "namespace"), ("platform-config", "config"))

SCHEMA = {
    "type": "object",
    "required": ["LOG_LEVEL", "REPLICAS", "REGION", "CLUSTER_TYPE"],
    "properties": {
        "LOG_LEVEL": {"enum": ["debug", "info", "warn", "error"]},
        "REPLICAS": {"type": "integer", "minimum": 1},
        "TIMEOUT_SECONDS": {"type": "integer", "minimum": 1},
        "FEATURE_FLAGS": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "LIMITS": {
            "type": "object",
            "properties": {"cpu": {"type": "string"}, "memory": {"type": "string"}},
        },
    },
}


@dataclass(frozen=True)
class FleetSize:
    workloads: int = 100
    cluster_types: int = 1000
    regions: int = 10
    sites: int = 50
    lines: int = 100
    workspaces: int = 5
    clusters_per_type: int = 1  # Cluster documents per cluster type (bench_load.py: 30,000 clusters)
    # "packed": a few multi-document files (one per kind and region); "per-file": one document a file, in folders
    # as Kalypso's sample control plane keeps them (microsoft/kalypso-control-plane: cluster-types/<region>/<type>/
    # holding <type>-cluster-type.yaml and <type>-config.yaml, scheduling/<policy>.yaml, workloads/<workload>.yaml)
    layout: str = "packed"

    @property
    def assignments(self) -> int:
        return self.workloads * self.cluster_types


@dataclass(frozen=True)
class ClusterTypeModel:
    name: str
    region: str
    site: str
    line: str

    @property
    def labels(self) -> dict[str, str]:
        return {"region": self.region, "site": self.site, "line": self.line}


@dataclass(frozen=True)
class WorkloadModel:
    name: str
    workspace: str
    tier: str

    @property
    def target_id(self) -> str:
        return f"{self.name}-{ENVIRONMENT}"

    @property
    def manifests(self) -> dict[str, str]:
        return {
            "repo": f"https://git.example.com/{self.workspace}/{self.name}",
            "branch": ENVIRONMENT,
            "path": f"./deploy/{ENVIRONMENT}",
        }

    @property
    def target_labels(self) -> dict[str, str]:
        """Effective labels (DESIGN §2): target labels, workload labels, workload=, workspace=."""
        return {"purpose": "app", "tier": self.tier, "workload": self.name, "workspace": self.workspace}


@dataclass(frozen=True)
class ConfigMapModel:
    name: str
    labels: dict[str, str]
    data: dict[str, Any]  # effective values (maps are written as YAML-in-a-string, Kalypso style)


@dataclass
class FleetModel:
    size: FleetSize
    cluster_types: list[ClusterTypeModel] = field(default_factory=list)
    workloads: list[WorkloadModel] = field(default_factory=list)
    env_config: ConfigMapModel | None = None
    region_configs: dict[str, ConfigMapModel] = field(default_factory=dict)
    site_configs: dict[str, ConfigMapModel] = field(default_factory=dict)
    line_config: ConfigMapModel | None = None
    cluster_type_configs: dict[str, ConfigMapModel] = field(default_factory=dict)
    workload_configs: dict[str, ConfigMapModel] = field(default_factory=dict)

    def config_maps(self) -> Iterator[ConfigMapModel]:
        assert self.env_config is not None and self.line_config is not None
        yield self.env_config
        yield from self.region_configs.values()
        yield from self.site_configs.values()
        yield self.line_config
        yield from self.cluster_type_configs.values()
        yield from self.workload_configs.values()

    def cluster_side_configs(self, ct: ClusterTypeModel) -> list[ConfigMapModel]:
        """ConfigMaps that apply to every assignment on ``ct``, lowest precedence first."""
        assert self.env_config is not None and self.line_config is not None
        chain = [self.env_config, self.region_configs[ct.region], self.site_configs[ct.site]]
        if self.line_config.labels["line"] == ct.line:
            chain.append(self.line_config)
        chain.append(self.cluster_type_configs[ct.name])
        return chain


def _region(i: int) -> str:
    return f"r{i:02d}"


def _site(i: int) -> str:
    return f"s{i:02d}"


def _line(i: int) -> str:
    return f"l{i:03d}"


def model(size: FleetSize, *, changed: bool = False) -> FleetModel:
    """The fleet as data. ``changed`` gives the fleet after :func:`change_one_value`."""
    fleet = FleetModel(size)
    fleet.cluster_types = [
        ClusterTypeModel(f"ct-{i:04d}", _region(i % size.regions), _site(i % size.sites), _line(i % size.lines))
        for i in range(size.cluster_types)
    ]
    fleet.workloads = [
        WorkloadModel(f"wl-{i:03d}", f"team-{i % size.workspaces}", ("web", "api", "worker")[i % 3])
        for i in range(size.workloads)
    ]
    fleet.env_config = ConfigMapModel("env-defaults", {}, {
        "LOG_LEVEL": "info",
        "REPLICAS": 1,
        "TIMEOUT_SECONDS": 30,
        "ENDPOINT": "https://api.example.com",
        "FEATURE_FLAGS": {"metrics": True, "tracing": False, "beta": False},
    })
    for r in range(size.regions):
        name = _region(r)
        fleet.region_configs[name] = ConfigMapModel(f"10-region-{name}", {"region": name}, {
            "REGION": name,
            "ENDPOINT": f"https://api.{name}.example.com",
            "DNS_SERVER": f"10.{r}.0.53",
            "NTP_SERVER": f"ntp.{name}.example.com",
            "FEATURE_FLAGS": {"tracing": r % 2 == 0},
        })
    for s in range(size.sites):
        name = _site(s)
        fleet.site_configs[name] = ConfigMapModel(f"20-site-{name}", {"site": name}, {
            "SITE": name,
            "GATEWAY": f"10.{s % 10}.{s}.1",
            "VLAN": 100 + s,
            "STORAGE_CLASS": "fast-ssd" if s % 3 else "standard",
            "LOG_LEVEL": "warn" if s % 7 == 0 else "info",
        })
    fleet.line_config = ConfigMapModel("30-line-tuning", {"line": _line(0)}, {
        LINE_TUNING_KEY: LINE_TUNING_NEW if changed else LINE_TUNING_OLD,
        "BATCH_SIZE": 64,
        "LOG_LEVEL": "debug",
        "FEATURE_FLAGS": {"beta": True},
        "PROFILE": "line-tuned",
    })
    for i, ct in enumerate(fleet.cluster_types):
        fleet.cluster_type_configs[ct.name] = ConfigMapModel(f"40-{ct.name}", {"cluster-type": ct.name}, {
            "CLUSTER_TYPE": ct.name,
            "CAPACITY": 10 + i % 90,
            "NODE_POOL": f"pool-{i % 4}",
            "ZONE": f"{ct.region}-{'abc'[i % 3]}",
            "MAX_PODS": 110,
        })
    for i, wl in enumerate(fleet.workloads):
        fleet.workload_configs[wl.name] = ConfigMapModel(f"50-{wl.name}", {"workload": wl.name}, {
            "APP_NAME": wl.name,
            "REPLICAS": 1 + i % 5,
            "IMAGE_TAG": f"1.{i % 10}.{i}",
            "PORT": 8000 + i,
            "LIMITS": {"cpu": f"{100 * (1 + i % 4)}m", "memory": f"{128 * (1 + i % 4)}Mi"},
        })
    return fleet


# --- writing ------------------------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    """A YAML scalar for ``value``: maps as a JSON string (a ConfigMap value holding YAML, parsed by
    fleetflow like Kalypso does), strings double-quoted, ints and bools bare."""
    if isinstance(value, dict):
        return json.dumps(json.dumps(value, separators=(", ", ": ")))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def _labels_block(labels: dict[str, str], indent: str = "    ") -> str:
    return "".join(f"{indent}{k}: {json.dumps(v)}\n" for k, v in labels.items())


def _config_map(cm: ConfigMapModel) -> str:
    data = "".join(f"  {k}: {_scalar(v)}\n" for k, v in cm.data.items())
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        f"  name: {cm.name}\n  labels:\n    platform-config: \"true\"\n{_labels_block(cm.labels)}"
        f"data:\n{data}"
    )


def _template(name: str, kind: str, manifests: tuple[str, ...]) -> str:
    body = "".join(
        "    - |\n" + "".join(f"      {line}\n" if line else "\n" for line in text.rstrip("\n").split("\n"))
        for text in manifests
    )
    return (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Template\nmetadata:\n"
        f"  name: {name}\nspec:\n  type: {kind}\n  manifests:\n{body}"
    )


def _cluster_type(ct: ClusterTypeModel) -> str:
    return (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: ClusterType\nmetadata:\n"
        f"  name: {ct.name}\n  labels:\n{_labels_block(ct.labels)}"
        "spec:\n  reconciler: flux\n  namespaceService: namespace\n  configType: config\n"
    )


def _cluster(ct: ClusterTypeModel, number: int = 1) -> str:
    return (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
        f"  name: {ct.name}-{number}\nspec:\n  clusterType: {ct.name}\n  statusContext: flux/{ct.name}-{number}\n"
    )


def _workload(wl: WorkloadModel) -> str:
    m = wl.manifests
    return (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n"
        f"  name: {wl.name}\n  labels:\n    tier: {wl.tier}\n"
        f"spec:\n  workspace: {wl.workspace}\n  deploymentTargets:\n"
        f"    - name: {ENVIRONMENT}\n      environment: {ENVIRONMENT}\n"
        "      labels:\n        purpose: app\n"
        f"      manifests:\n        repo: {m['repo']}\n        branch: {m['branch']}\n        path: {m['path']}\n"
    )


def _docs(parts: list[str]) -> str:
    return "---\n".join(parts)


def write_fleet(root: Path, size: FleetSize) -> tuple[Path, Path]:
    """Write the control plane under ``root``: ``root/main`` and ``root/env``. Returns (main, env)."""
    fleet = model(size)
    main, env = root / "main", root / "env"
    files: dict[Path, str] = {}
    files[main / ".environments/dev.yaml"] = (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: dev\nspec: {}\n"
    )
    layouts = {"packed": _packed, "per-file": _per_file}
    if size.layout not in layouts:
        raise ValueError(f"layout {size.layout!r} is not {' or '.join(layouts)}")
    layouts[size.layout](files, main, env, fleet, size)
    files[env / "gitops-repo.yaml"] = (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: GitOpsRepo\nmetadata:\n  name: dev\n"
        "spec:\n  repo: https://git.example.com/platform/gitops\n  branch: dev\n"
    )
    files[env / "schemas/platform.yaml"] = (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: ConfigSchema\nmetadata:\n  name: platform\n"
        f"spec:\n  schema: {json.dumps(SCHEMA)}\n"
    )
    assert fleet.env_config is not None and fleet.line_config is not None
    files[env / "configs/environment.yaml"] = _config_map(fleet.env_config)
    files[env / LINE_TUNING_FILE] = _config_map(fleet.line_config)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return main, env


_POLICY = (
    "apiVersion: fleetflow.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata:\n  name: everything\nspec:\n"
    "  deploymentTargetSelector:\n    labelSelector:\n      matchLabels:\n        purpose: app\n"
    "  clusterTypeSelector:\n    labelSelector:\n      matchExpressions:\n"
    "        - key: region\n          operator: Exists\n"
)


def _per_file(files: dict[Path, str], main: Path, env: Path, fleet: FleetModel, size: FleetSize) -> None:
    """The ``per-file`` layout: the same documents as ``packed``, one a file."""
    for name, (kind, manifests) in TEMPLATES.items():
        files[main / f"templates/{name}.yaml"] = _template(name, kind, manifests)
    for wl in fleet.workloads:
        files[main / f"workloads/{wl.name}.yaml"] = _workload(wl)
    for ct in fleet.cluster_types:
        folder = env / f"cluster-types/{ct.region}/{ct.name}"
        files[folder / f"{ct.name}-cluster-type.yaml"] = _cluster_type(ct)
        files[folder / f"{ct.name}-config.yaml"] = _config_map(fleet.cluster_type_configs[ct.name])
        for n in range(1, size.clusters_per_type + 1):
            files[env / f"clusters/{ct.region}/{ct.name}-{n}.yaml"] = _cluster(ct, n)
    files[env / "scheduling/everything.yaml"] = _POLICY
    for group, configs in (("regions", fleet.region_configs), ("sites", fleet.site_configs),
                           ("workloads", fleet.workload_configs)):
        for cm in configs.values():
            files[env / f"configs/{group}/{cm.name}.yaml"] = _config_map(cm)


def _packed(files: dict[Path, str], main: Path, env: Path, fleet: FleetModel, size: FleetSize) -> None:
    """The ``packed`` layout: a file per kind (per region for cluster types and their ConfigMaps)."""
    files[main / "templates/templates.yaml"] = _docs(
        [_template(name, kind, manifests) for name, (kind, manifests) in TEMPLATES.items()]
    )
    files[main / "workloads/workloads.yaml"] = _docs([_workload(wl) for wl in fleet.workloads])
    by_region: dict[str, list[ClusterTypeModel]] = {}
    for ct in fleet.cluster_types:
        by_region.setdefault(ct.region, []).append(ct)
    for region, cts in by_region.items():
        files[env / f"cluster-types/{region}.yaml"] = _docs([_cluster_type(ct) for ct in cts])
        files[env / f"configs/cluster-types/{region}.yaml"] = _docs(
            [_config_map(fleet.cluster_type_configs[ct.name]) for ct in cts]
        )
    files[env / "clusters.yaml"] = _docs(
        [_cluster(ct, n) for ct in fleet.cluster_types for n in range(1, size.clusters_per_type + 1)]
    )
    files[env / "policies.yaml"] = _POLICY
    files[env / "configs/regions.yaml"] = _docs([_config_map(cm) for cm in fleet.region_configs.values()])
    files[env / "configs/sites.yaml"] = _docs([_config_map(cm) for cm in fleet.site_configs.values()])
    files[env / "configs/workloads.yaml"] = _docs([_config_map(cm) for cm in fleet.workload_configs.values()])


def change_one_value(env: Path) -> str:
    """Change ``CACHE_SIZE_MB`` in the ``30-line-tuning`` ConfigMap (1% of the assignments). Returns a
    description of the change."""
    path = env / LINE_TUNING_FILE
    text = path.read_text(encoding="utf-8")
    old, new = f"  {LINE_TUNING_KEY}: {LINE_TUNING_OLD}\n", f"  {LINE_TUNING_KEY}: {LINE_TUNING_NEW}\n"
    if old not in text:
        raise ValueError(f"{path} does not hold {old.strip()!r}")
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"{LINE_TUNING_FILE}: 30-line-tuning {LINE_TUNING_KEY} {LINE_TUNING_OLD} -> {LINE_TUNING_NEW}"


# --- the expected variables, without fleetflow -----------------------------------------------------------


def deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Maps merge deeply, anything else replaces (DESIGN §3)."""
    out = dict(base)
    for key, value in overlay.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict) and current:
            out[key] = deep_merge(current, value)
        else:
            out[key] = value
    return out


def assignment_variables(fleet: FleetModel) -> Iterator[tuple[str, dict[str, Any]]]:
    """(assignment id, template variables) for every assignment, with ConfigData merged per assignment."""
    for ct in fleet.cluster_types:
        cluster_data: dict[str, Any] = {}
        for cm in fleet.cluster_side_configs(ct):
            cluster_data = deep_merge(cluster_data, cm.data)
        for wl in fleet.workloads:
            config = deep_merge(cluster_data, fleet.workload_configs[wl.name].data)
            tid = wl.target_id
            yield f"{ct.name}/{tid}", {
                "DeploymentTargetName": tid,
                "Namespace": f"{ENVIRONMENT}-{wl.workspace}-{tid}",
                "Environment": ENVIRONMENT,
                "Workspace": wl.workspace,
                "Workload": wl.name,
                "ClusterType": ct.name,
                "ClusterTypeLabels": ct.labels,
                "Labels": wl.target_labels,
                "Manifests": wl.manifests,
                "ConfigData": config,
            }
