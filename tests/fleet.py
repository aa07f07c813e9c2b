"""A small fleet of real repos for promotion scenarios, on either forge.

Environments: dev → qa → {prod-eu, prod-us} → dr (dr comes after both prods: fan-out then fan-in).
Each environment has one cluster type and two clusters (contexts ``flux/<env>-1``, ``flux/<env>-2``).
The control-plane and GitOps repos are bare repos; on the ``github`` forge they are served by the stand-in
server (tests/ghstub) and the forge is the real ``GitHubForge`` talking to it through PyGithub.
"""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetflow.clock import Clock
from fleetflow.forge.base import Forge
from fleetflow.forge.git import BareRepo, GitRepos, serve_partial_clones
from fleetflow.forge.github import GitHubForge
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.context import Context, head_branch
from fleetflow.promotion.gitops import GitOpsTree
from fleetflow.render.incremental import STATE_PATH, RenderState
from tests.helpers import MAIN_FILES, build_file_tree

ENVIRONMENTS: dict[str, list[str]] = {
    "dev": [], "qa": ["dev"], "prod-eu": ["qa"], "prod-us": ["qa"], "dr": ["prod-eu", "prod-us"],
}


def _environment(name: str, after: list[str], extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: fleetflow.dev/v1alpha1
        kind: Environment
        metadata:
          name: {name}
        spec:
          after: [{", ".join(after)}]
          rollout:
            soakTime: 1m
            timeout: 30m
        """) + extra


# A shorter chain with no soak time, for scenarios that run many workflow deliveries (tests/test_event_loop.py,
# benchmarks/bench_rollout.py): its Environments and the workload targeting each of them.
SHORT_CHAIN: dict[str, list[str]] = {"dev": [], "qa": ["dev"], "prod-eu": ["qa"]}
SHORT_CHAIN_WORKLOAD = (
    "apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: app\nspec:\n  workspace: team\n"
    "  deploymentTargets:" + "".join(f"""
    - name: {env}
      environment: {env}
      labels: {{purpose: app}}
      manifests: {{repo: https://example.invalid/app, branch: main, path: ./{env}}}""" for env in SHORT_CHAIN) + "\n"
)
SHORT_CHAIN_ENVS = "---\n".join(
    _environment(n, a).replace("soakTime: 1m", "soakTime: 0s") for n, a in SHORT_CHAIN.items()
)


AUTO_MERGE = "  pullRequest:\n    autoMerge: true\n"
SHARDED = "  shardedSchedule: true\n"


def environments_file(auto_merge: tuple[str, ...] = (), sharded: tuple[str, ...] = ()) -> dict[str, str]:
    """The Environments file of the chain with ``pullRequest.autoMerge`` on for ``auto_merge`` and
    ``shardedSchedule`` on for ``sharded`` (push it to main)."""
    return {".environments/envs.yaml": "---\n".join(
        _environment(n, a, (AUTO_MERGE if n in auto_merge else "") + (SHARDED if n in sharded else ""))
        for n, a in ENVIRONMENTS.items())}


def main_files(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    files = {k: v for k, v in MAIN_FILES.items() if k.startswith("templates/")}
    files[".environments/envs.yaml"] = "---\n".join(
        _environment(n, a, (extra_env or {}).get(n, "")) for n, a in ENVIRONMENTS.items()
    )
    targets = "".join(
        f"""
    - name: {env}
      environment: {env}
      labels: {{purpose: app}}
      manifests: {{repo: https://example.invalid/app, branch: main, path: ./{env}}}"""
        for env in ENVIRONMENTS
    )
    files["workloads/app.yaml"] = (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: app\nspec:\n  workspace: team\n"
        "  deploymentTargets:" + targets + "\n"
    )
    return files


def env_files(env: str, gitops: str, control_plane: str) -> dict[str, str]:
    return {
        "cluster-types.yaml": f"""
            apiVersion: fleetflow.dev/v1alpha1
            kind: ClusterType
            metadata:
              name: cloud
              labels: {{region: {env}}}
            spec: {{reconciler: flux, namespaceService: namespace, configType: config}}
        """,
        "clusters.yaml": "---\n".join(
            f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: {env}-{i}\n"
            f"spec:\n  clusterType: cloud\n  statusContext: flux/{env}-{i}\n"
            for i in (1, 2)
        ),
        "policy.yaml": """
            apiVersion: fleetflow.dev/v1alpha1
            kind: SchedulingPolicy
            metadata:
              name: app
            spec:
              deploymentTargetSelector:
                labelSelector: {matchLabels: {purpose: app}}
              clusterTypeSelector:
                labelSelector: {}
        """,
        "configs.yaml": f"""
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: env-wide
              labels: {{platform-config: "true"}}
            data:
              LOG_LEVEL: info
              ENVIRONMENT: {env}
        """,
        "gitops-repo.yaml": f"""
            apiVersion: fleetflow.dev/v1alpha1
            kind: GitOpsRepo
            metadata:
              name: {env}
            spec:
              repo: {gitops}
              branch: {env}
              path: .
        """,
        "base-repo.yaml": f"""
            apiVersion: fleetflow.dev/v1alpha1
            kind: BaseRepo
            metadata:
              name: main
            spec:
              repo: {control_plane}
              branch: main
              path: .
              commit: ""
        """,
    }


def git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def push_file(root: Path, cp: Path, branch: str, path: str, edit: Callable[[str], str]) -> str:
    """An engineer's commit of ``edit`` applied to ``path`` on ``branch`` of the control-plane repo ``cp`` (from a
    clone kept under ``root``): its sha."""
    work = root / f"{branch}-work"
    if not work.exists():
        git(root, "clone", "-q", "-b", branch, str(cp), str(work))
    git(work, "pull", "-q", "origin", branch)
    file = work / path
    file.write_text(edit(file.read_text()))
    git(work, "commit", "-q", "--allow-empty", "-am", f"edit {path}")
    git(work, "push", "-q", "origin", f"HEAD:{branch}")
    return git(work, "rev-parse", "HEAD")


def start_clock() -> Clock:
    """The tests' fleet clock: 2026-03-01 08:00 UTC until moved."""
    return Clock(datetime(2026, 3, 1, 8, 0, tzinfo=UTC))


@dataclass
class Fleet:
    """Repos + a forge + helpers that play the people and the clusters."""

    root: Path
    forge: Forge
    cp_id: str  # how the forge names the control-plane repo
    gitops_id: str
    cp_url: str  # where tests push (a bare repo path)
    gitops_url: str
    clock: Clock
    post_status: Callable[[str, str, str, str], None]  # (sha, context, state, description) on the GitOps repo
    merge: Callable[[int], None]  # a person merges a PR in the GitOps repo
    work: Path = field(init=False)

    def __post_init__(self) -> None:
        self.work = self.root / "work"

    def context(self, say: Callable[[str], None] | None = None) -> Context:
        return Context(
            forge=self.forge, git=GitRepos(self.root / "cache-git"), control_plane=self.cp_id, clock=self.clock,
            say=say or (lambda _t: None),
        )

    # --- people ---------------------------------------------------------------------------------------------
    def push_main(self, files: dict[str, str], message: str = "change") -> str:
        git(self.work, "checkout", "-q", "main")
        git(self.work, "pull", "-q", "--ff-only", self.cp_url, "main")
        build_file_tree(self.work, files)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", self.cp_url, "HEAD:refs/heads/main")
        return git(self.work, "rev-parse", "HEAD")

    def push_env(self, env: str, files: dict[str, str], message: str = "env change") -> str:
        git(self.work, "fetch", "-q", self.cp_url, f"+refs/heads/{env}:refs/remotes/cp/{env}")
        git(self.work, "checkout", "-q", "-B", env, f"cp/{env}")
        build_file_tree(self.work, files)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", self.cp_url, f"HEAD:refs/heads/{env}")
        git(self.work, "checkout", "-q", "main")
        return git(self.work, "rev-parse", env)

    def open_pr(self, env: str) -> Any:
        return self.forge.open_pull(self.gitops_id, head_branch(env), env)

    def approve(self, env: str) -> int:
        pr = self.open_pr(env)
        assert pr is not None, f"no open PR for {env}"
        self.merge(pr.number)
        return int(pr.number)

    # --- clusters -------------------------------------------------------------------------------------------
    def gitops_tip(self, env: str) -> str:
        return git(self.root, "--git-dir", self.gitops_url, "rev-parse", f"refs/heads/{env}")

    def gitops_state(self, env: str, rev: str | None = None) -> RenderState:
        """The state of ``env``'s GitOps tip (or of ``rev``), read as schedule reads it (``GitOpsTree``)."""
        at = rev or f"refs/heads/{env}"
        state = GitOpsTree(BareRepo(Path(self.gitops_url)), at, "").read_state()
        assert state is not None, f"no readable {STATE_PATH} on the GitOps repo's {at}"
        return state

    def clusters_report(self, env: str, states: dict[int, str] | None = None) -> str:
        """Clusters 1 and 2 of ``env`` report on the GitOps tip (success unless ``states`` says otherwise)."""
        tip = self.gitops_tip(env)
        for i in (1, 2):
            state = (states or {}).get(i, "success")
            if state != "missing":
                self.post_status(tip, f"flux/{env}-{i}", state, f"reconciled {tip[:7]}")
        return tip

    def cp_status(self, sha: str, env: str) -> str | None:
        for s in self.forge.statuses(self.cp_id, sha):
            if s.context == f"fleetflow/{env}":
                return s.state
        return None

    def pin(self, env: str) -> str:
        text = git(self.root, "--git-dir", self.cp_url, "show", f"refs/heads/{env}:base-repo.yaml")
        for line in text.splitlines():
            if line.strip().startswith("commit:"):
                return line.split(":", 1)[1].strip().strip('"')
        return ""

    def branch_sha(self, url: str, branch: str) -> str:
        return git(self.root, "--git-dir", url, "rev-parse", f"refs/heads/{branch}")


def build_bare_repos(root: Path, gitops_id: str, cp_id: str) -> tuple[Path, Path]:
    """Control-plane (main + one branch per environment) and GitOps (one branch per environment) bare repos."""
    cp, gitops = root / "control-plane.git", root / "gitops.git"
    git(root, "init", "-q", "--bare", str(cp))
    git(root, "init", "-q", "--bare", str(gitops))
    for bare in (cp, gitops):
        serve_partial_clones(bare)  # as GitHub: blobless fetches, then blobs by id
    work = root / "work"
    work.mkdir()
    git(work, "init", "-q")
    build_file_tree(work, main_files())
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "control plane")
    git(work, "push", "-q", str(cp), "HEAD:refs/heads/main")
    for env in ENVIRONMENTS:
        tree = root / f"env-{env}"
        git(root, "init", "-q", str(tree))
        build_file_tree(tree, env_files(env, gitops_id, cp_id))
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", f"{env} branch")
        git(tree, "push", "-q", str(cp), f"HEAD:refs/heads/{env}")
    seed = root / "gitops-seed"
    git(root, "init", "-q", str(seed))
    (seed / "README.md").write_text("GitOps\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "seed")
    for env in ENVIRONMENTS:
        git(seed, "push", "-q", str(gitops), f"HEAD:refs/heads/{env}")
    return cp, gitops


def stand_in_forge(stub: Any, retries: int = 0) -> GitHubForge:
    """The real ``GitHubForge`` talking to the stand-in server ``stub`` (tests/ghstub) through PyGithub, with no
    waiting between requests. Close it when done (``forge.close()``)."""
    return GitHubForge(token="test-token", api_url=stub.url, retries=retries, backoff_factor=0,
                       seconds_between_requests=0, seconds_between_writes=0)


def github_fleet(root: Path, stub: Any) -> Fleet:
    """The fleet on the GitHub stand-in ``stub`` (a started ``GitHubStub``): repos ``contoso/control-plane`` and
    ``contoso/gitops`` served by it, the real ``GitHubForge``, the stand-in's clock the fleet's. ``fleet.stub`` is
    the stand-in (for request counts and for playing GitHub's side). Tests get it through
    ``tests.test_promotion.make_github_fleet``; benchmarks/bench_requests.py calls it directly."""
    clock = start_clock()
    stub.store.clock = clock
    cp_path, gitops_path = build_bare_repos(root, "contoso/gitops", "contoso/control-plane")
    stub.create_repo("contoso/control-plane", bare=cp_path)
    stub.create_repo("contoso/gitops", bare=gitops_path)
    gitops = stub.repo("contoso/gitops")
    fleet = Fleet(
        root, stand_in_forge(stub, retries=3), "contoso/control-plane", "contoso/gitops", str(cp_path),
        str(gitops_path), clock,
        post_status=lambda sha, c, s, d: gitops.add_status(sha, s, c, d) and None,
        merge=lambda n: gitops.merge_pull(n) and None,
    )
    fleet.stub = stub  # type: ignore[attr-defined]
    return fleet


def local_fleet(root: Path) -> Fleet:
    """The fleet on the local forge: bare repos under ``root``, the forge's records in the repos themselves."""
    clock = start_clock()
    cp_path, gitops_path = root / "control-plane.git", root / "gitops.git"
    build_bare_repos(root, str(gitops_path), str(cp_path))
    forge = LocalForge(cache_dir=root / "cache-forge", clock=clock)
    return Fleet(
        root, forge, str(cp_path), str(gitops_path), str(cp_path), str(gitops_path), clock,
        post_status=lambda sha, c, s, d: forge.set_status(str(gitops_path), sha, c, s, d),  # type: ignore[arg-type]
        merge=lambda n: forge.merge_pull(str(gitops_path), n) and None,
    )
