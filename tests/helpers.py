"""Small builders for test trees (real files in tmp dirs)."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner, Result

from fleetflow.cli import main as cli_main
from fleetflow.errors import Problem, Problems
from fleetflow.model.documents import Document, ParseCache, Tree, parse_documents, read_tree


def build_file_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> text, dedented) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def parsed(text: str, display: str = "f.yaml") -> tuple[list[Document], list[Problem]]:
    """``parse_documents`` with a fresh collector: the documents and what it collected (tests look at both)."""
    problems = Problems()
    return parse_documents(text, display, problems), problems.items


def tree_read(tree: Tree, cache: ParseCache | None = None) -> tuple[list[Document], list[Problem]]:
    """``read_tree`` with a fresh collector: the documents and what it collected."""
    problems = Problems()
    return read_tree(tree, problems, cache), problems.items


MAIN_FILES: dict[str, str] = {
    ".environments/dev.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: Environment
        metadata:
          name: dev
        spec: {}
        ---
        apiVersion: fleetflow.dev/v1alpha1
        kind: Environment
        metadata:
          name: qa
        spec:
          after: [dev]
    """,
    "templates/flux.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: Template
        metadata:
          name: flux
        spec:
          type: reconciler
          manifests:
            - |
              apiVersion: kustomize.toolkit.fluxcd.io/v1
              kind: Kustomization
              metadata:
                name: {{ DeploymentTargetName }}
                namespace: flux-system
              spec:
                path: {{ Manifests.path }}
                targetNamespace: {{ Namespace }}
    """,
    "templates/namespace.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: Template
        metadata:
          name: namespace
        spec:
          type: namespace
          manifests:
            - |
              apiVersion: v1
              kind: Namespace
              metadata:
                name: {{ Namespace }}
    """,
    "templates/config.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: Template
        metadata:
          name: config
        spec:
          type: config
          manifests:
            - |
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: platform-config
                namespace: {{ Namespace }}
              data:
              {{ ConfigData | stringify | toYaml | indent(2) }}
    """,
    "workloads/app.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: Workload
        metadata:
          name: app
          labels:
            tier: web
        spec:
          workspace: team-a
          deploymentTargets:
            - name: dev
              environment: dev
              labels:
                purpose: test
              manifests:
                repo: https://example.invalid/app
                branch: dev
                path: ./dev
            - name: qa
              environment: qa
              manifests:
                repo: https://example.invalid/app
                branch: qa
                path: ./qa
    """,
}

ENV_FILES: dict[str, str] = {
    "cluster-types/types.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: ClusterType
        metadata:
          name: cloud-eu
          labels:
            region: eu
            kind: cloud
        spec:
          reconciler: flux
          namespaceService: namespace
          configType: config
        ---
        apiVersion: fleetflow.dev/v1alpha1
        kind: ClusterType
        metadata:
          name: edge-line1
          labels:
            region: eu
            kind: edge
        spec:
          reconciler: flux
          namespaceService: namespace
          configType: config
    """,
    "clusters.yaml": """
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
          clusterType: edge-line1
          statusContext: flux/edge-line1-1
    """,
    "policies.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: SchedulingPolicy
        metadata:
          name: everything
        spec:
          deploymentTargetSelector:
            workspace: team-a
            labelSelector:
              matchLabels:
                purpose: test
          clusterTypeSelector:
            labelSelector:
              matchExpressions:
                - key: region
                  operator: In
                  values: [eu]
    """,
    "configs.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: env-wide
          labels:
            platform-config: "true"
        data:
          LOG_LEVEL: info
          REPLICAS: "1"
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: edge
          labels:
            platform-config: "true"
            kind: edge
        data:
          LOG_LEVEL: debug
    """,
    "gitops-repo.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: GitOpsRepo
        metadata:
          name: dev
        spec:
          repo: https://example.invalid/gitops
          branch: dev
    """,
}


def make_plane(
    tmp_path: Path,
    main: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
) -> tuple[Path, Path]:
    """A small control plane; ``main``/``env`` override or add files, ``drop`` removes files by path."""
    main_files = {**MAIN_FILES, **(main or {})}
    env_files = {**ENV_FILES, **(env or {})}
    for rel in drop:
        main_files.pop(rel, None)
        env_files.pop(rel, None)
    return (
        build_file_tree(tmp_path / "main", main_files),
        build_file_tree(tmp_path / "env", env_files),
    )


def run_cli(*args: str | Path) -> Result:
    result = CliRunner().invoke(cli_main, [str(a) for a in args], catch_exceptions=False)
    return result


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root (relative posix path -> bytes)."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


__all__ = ["ENV_FILES", "MAIN_FILES", "build_file_tree", "make_plane", "pytest", "run_cli", "tree_bytes"]


def searched_seeds(variable: str) -> list[int]:
    """The seeds the environment variable ``variable`` names (``10-39``, ``3,8,11``, or both: ``3,10-19``), each
    once, for a longer search run by hand than CI's seeds; [] when it is unset. Read it on import (every test runs
    with ``FLEETFLOW_*`` unset, tests/conftest.py)."""
    text = os.environ.get(variable, "").strip()
    seeds: list[int] = []
    for item in (i.strip() for i in text.split(",") if text):
        first, dash, last = item.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or (dash and int(last) < int(first)):
            raise pytest.UsageError(f"{variable}={text!r}: {item!r} is not a seed or a range of seeds "
                                    "(write 10-39, 3,8,11 or 3,10-19)")
        seeds.extend(range(int(first), int(last or first) + 1))
    return list(dict.fromkeys(seeds))


def action_run_module() -> ModuleType:
    """``actions/_shared/run.py`` (the composite actions' entry point, not part of the package) as a module."""
    path = Path(__file__).resolve().parent.parent / "actions" / "_shared" / "run.py"
    spec = importlib.util.spec_from_file_location("fleetflow_action_run", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
