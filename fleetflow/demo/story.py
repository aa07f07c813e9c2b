"""``fleetflow demo``: the whole flow on local repos, narrated.

Builds a control-plane repo (``main`` from examples/control-plane/main, one branch per environment from
examples/control-plane/envs/) and a platform GitOps repo as bare git repositories, uses the local forge (PRs and
statuses kept in the repos), and walks a ``main`` commit through dev → qa → prod: PRs opened and merged, simulated
clusters from the ``Cluster`` inventory posting statuses, gates passing. Then a second commit whose qa rollout
fails is stopped before prod. The clock is simulated, so soak times pass instantly (said once, at the start).
Every sha is labelled with its repo: ``main@…`` and ``<env>@…`` in the control plane, ``gitops@…`` in the GitOps
repo.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import Field

from fleetflow.clock import Clock
from fleetflow.forge.git import GitRepos, run_in, serve_partial_clones
from fleetflow.forge.local import LocalForge
from fleetflow.promotion.check_rollout import RolloutOutcome, check_rollout
from fleetflow.promotion.context import Context, head_branch, short
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.status import EnvironmentStatus, as_text, fleet_status
from fleetflow.render.incremental import STATE_PATH
from fleetflow.results import Result

# the example control plane, shipped as package data (in a checkout, a link to examples/control-plane)
EXAMPLES = Path(__file__).parent / "examples"


_DEMO_GIT_CONFIG = {"user.name": "Platform Engineer", "user.email": "platform@contoso.example",
                    "init.defaultBranch": "main", "commit.gpgsign": "false"}


def _git(cwd: Path, *args: str) -> str:
    return run_in(cwd, *args, config=_DEMO_GIT_CONFIG)


def _replace_line(path: Path, key: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = [f"{line.split(key)[0]}{key} {value}" if line.strip().startswith(key) else line for line in lines]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def build_repos(root: Path, examples: Path) -> tuple[Path, Path]:
    """Bare control-plane and GitOps repos built from the examples. Returns their paths."""
    cp_bare, gitops_bare = root / "control-plane.git", root / "platform-gitops.git"
    for bare in (cp_bare, gitops_bare):
        _git(root, "init", "--bare", "-q", str(bare))
        serve_partial_clones(bare)  # as GitHub: the GitOps mirror is fetched without blobs
    work = root / "work-control-plane"
    work.mkdir()
    _git(work, "init", "-q")
    shutil.copytree(examples / "main", work, dirs_exist_ok=True)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "Control plane: environments, templates, workloads")
    _git(work, "push", "-q", str(cp_bare), "HEAD:refs/heads/main")
    envs = sorted(p.name for p in (examples / "envs").iterdir() if p.is_dir())
    for env in envs:
        _git(work, "checkout", "-q", "--orphan", env)
        _git(work, "rm", "-rq", "--cached", ".")
        for child in work.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(examples / "envs" / env, work, dirs_exist_ok=True)
        _replace_line(work / "gitops-repo.yaml", "repo:", str(gitops_bare))
        _replace_line(work / "base-repo.yaml", "repo:", str(cp_bare))
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", f"{env}: cluster types, clusters, config, policies")
        _git(work, "push", "-q", str(cp_bare), f"HEAD:refs/heads/{env}")
    _git(work, "checkout", "-q", "main")
    gw = root / "work-gitops"
    gw.mkdir()
    _git(gw, "init", "-q")
    (gw / "README.md").write_text("Platform GitOps repo: one branch per environment, written by fleetflow.\n")
    _git(gw, "add", "-A")
    _git(gw, "commit", "-q", "-m", "GitOps repo")
    for env in envs:
        _git(gw, "push", "-q", str(gitops_bare), f"HEAD:refs/heads/{env}")
    return cp_bare, gitops_bare


class DemoResult(Result):
    """``fleetflow demo``'s result: where the repos are, how long it took, and the fleet's status at the end."""

    directory: str = Field(serialization_alias="dir")
    seconds: float
    environments: list[EnvironmentStatus]


@dataclass
class Demo:
    root: Path
    say: Callable[[str], None]
    examples: Path = EXAMPLES
    clock: Clock = field(default_factory=lambda: Clock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC)))

    def run(self) -> list[EnvironmentStatus]:
        self.root.mkdir(parents=True, exist_ok=True)
        self.say(f"== Building a control-plane repo and a GitOps repo from {self.examples} in {self.root}")
        self.cp, self.gitops = build_repos(self.root, self.examples)
        self.forge = LocalForge(cache_dir=self.root / "cache" / "forge", clock=self.clock)
        ctx = Context(forge=self.forge, git=GitRepos(self.root / "cache" / "git"), control_plane=str(self.cp),
                      clock=self.clock, say=lambda text: self.say(f"   {text}"))
        self.ctx = ctx
        with ctx:
            self.say("   The clock is simulated: soak times (15m in prod) pass at once; nothing leaves this machine.")
            first = _git(self.root / "work-control-plane", "rev-parse", "HEAD").strip()
            self.say(f"\n== 1. A push to main: promote main@{short(first)} to the first environment")
            self.walk(first, fail_in=None)
            self.say("\n== 2. An engineer changes orders-api on main; qa's rollout of it fails")
            second = self.commit_change()
            self.walk(second, fail_in="qa")
            self.say("\n== fleetflow status")
            entries = fleet_status(ctx)
            self.say(as_text(entries))
            return entries

    def commit_change(self) -> str:
        work = self.root / "work-control-plane"
        path = work / "workloads" / "orders-api.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("# fleetflow demo marker\n", "") + "# fleetflow demo marker\n", encoding="utf-8")
        _git(work, "commit", "-q", "-am", "orders-api: note for the demo")
        _git(work, "push", "-q", str(self.cp), "HEAD:refs/heads/main")
        return _git(work, "rev-parse", "HEAD").strip()

    def walk(self, commit: str, fail_in: str | None) -> None:
        outcomes = promote_many(self.ctx, None, commit)
        pending = [o.environment for o in outcomes]
        while pending:
            env = pending.pop(0)
            self.approve(env)
            result = self.report_and_check(env, fail=(env == fail_in))
            if result.state == "failure":
                self.say(f"   {env}: rollout FAILED — main@{short(commit)} stops here; downstream environments "
                         "keep what they run")
                return
            pending += [p.environment for p in result.promoted]

    def approve(self, env: str) -> None:
        pr = self.forge.open_pull(str(self.gitops), head_branch(env), env)
        if pr is not None:  # no open PR: autoMerge merged it, and schedule said so
            self.say(f"   {env}: a platform engineer approves PR #{pr.number} ({pr.title}) — merged")
            self.forge.merge_pull(str(self.gitops), pr.number)

    def report_and_check(self, env: str, fail: bool) -> RolloutOutcome:
        tip = self.ctx.git.fetch_branch(str(self.gitops), env)
        assert tip is not None
        state = self.ctx.render_state(str(self.gitops), tip, "")
        assert state is not None, f"no readable {STATE_PATH} on {env}@{short(tip)}"
        self.clock.advance(timedelta(minutes=1))
        # the failing cluster is one that runs orders-api (a cloud cluster type), the workload the change touched
        cloud = [i for i, c in enumerate(state.clusters) if c.cluster_type.startswith(("aks", "eks"))]
        failing = cloud[-1] if cloud else len(state.clusters) - 1
        for i, cluster in enumerate(state.clusters):
            broken = fail and i == failing
            context = cluster.status_context or f"flux/{cluster.name}"
            outcome = "failure" if broken else "success"
            text = "health check failed: orders-api not ready" if broken else f"reconciled gitops@{short(tip)}"
            self.forge.set_status(str(self.gitops), tip, context, outcome, text)  # type: ignore[arg-type]
        self.say(f"   {env}: {len(state.clusters)} clusters report on gitops@{short(tip)}, the tip of {env}"
                 + ("; one reports a failure" if fail else ""))
        envs = self.ctx.environments(state.main_commit or "")
        soak = envs[env].spec.rollout.soak_time
        self.clock.advance(soak + timedelta(seconds=1))
        result = check_rollout(self.ctx, env)
        return result  # promotions to the next environments were narrated as they happened
