"""``fleetflow doctor``: check a live setup through git and the forge's API; every problem comes with its fix.

Checks (each reads, none writes):

* **workflows**: the caller workflow on every branch GitHub reads it from for the events fleetflow needs
  (https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows):
  the control plane's ``main`` and environment branches (``push`` runs the pushed commit's file), the control
  plane's default branch being ``main`` (dispatches and ``schedule`` run the default branch's file), the GitOps
  default branch (``status``, ``schedule``) and the GitOps environment branches (``pull_request`` reads the
  merge ref);
* **app**: the GitHub App installation's permissions (``GET /repos/{owner}/{repo}/installation``) against what
  docs/setup.md asks for;
* **autoMerge**: an Environment with ``pullRequest.autoMerge`` in a GitOps repository that does not allow
  auto-merge (``allow_auto_merge``): fleetflow then merges by its own rules only when it runs again;
* **contexts**: statuses on each GitOps environment branch tip whose context matches no ``Cluster``'s
  ``statusContext`` nor the Environment's ``rollout.contextPattern``: a reporter the gate never counts.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from pydantic import Field

from fleetflow.errors import Problem, Problems
from fleetflow.model.controlplane import Resource, build_resource
from fleetflow.model.documents import Tree, read_tree
from fleetflow.model.resources import ClusterSpec, EnvironmentSpec, GitOpsRepoSpec
from fleetflow.promotion.bootstrap import WORKFLOW_FILE
from fleetflow.promotion.context import Context, short
from fleetflow.results import Result

# docs/setup.md, "Create the GitHub App": the repository permissions fleetflow needs, and the least access.
NEEDED_PERMISSIONS: dict[str, str] = {
    "contents": "write",
    "pull_requests": "write",
    "statuses": "write",
    "checks": "read",
    "metadata": "read",
}
_LEVEL = {"read": 1, "write": 2, "admin": 3}


class Finding(Result):
    check: str  # workflows | default-branch | app | autoMerge | contexts
    where: str
    problem: str
    fix: str

    def to_problem(self) -> Problem:
        return Problem(f"[{self.check}] {self.where}: {self.problem}", None, self.fix)


def finding(check: str, where: str, problem: str, fix: str) -> Finding:
    return Finding(check=check, where=where, problem=problem, fix=fix)


class Diagnosis(Result):
    """What ``fleetflow doctor`` prints: what was checked and found fine, what could not be checked, the problems."""

    healthy: bool = True
    checked: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # what could not be checked on this forge, and why
    findings: list[Finding] = Field(default_factory=list)

    def ok(self, text: str) -> None:
        self.checked.append(text)


@dataclass(frozen=True)
class EnvSetup:
    name: str
    spec: EnvironmentSpec
    branch: str
    tip: str | None
    gitops: GitOpsRepoSpec | None
    clusters: list[Resource[ClusterSpec]]


def diagnose(ctx: Context) -> Diagnosis:
    found = Diagnosis()
    cp = ctx.control_plane
    main_sha = ctx.main_tip()
    envs = ctx.environments(main_sha)
    setups = [_env_setup(ctx, env) for _, env in sorted(envs.items())]
    _check_workflow(
        ctx,
        found,
        cp,
        ctx.cp_url,
        ctx.main_branch,
        main_sha,
        "push to main promotes the new commit, and its file is the one pushed",
    )
    current = ctx.forge.default_branch(cp)
    if current != ctx.main_branch:
        found.findings.append(
            finding(
                "default-branch",
                cp,
                f"the default branch is {current}, not {ctx.main_branch}: dispatches and the cron "
                f"tick run {current}'s workflow file",
                f"make {ctx.main_branch} the default branch (Settings → "
                "General → Default branch), or run fleetflow init",
            )
        )
    else:
        found.ok(f"{cp}: default branch {current}")
    for env in setups:
        if env.tip is None:
            found.findings.append(
                finding(
                    "workflows",
                    f"{cp}@{env.branch}",
                    f"environment {env.name}'s branch does not exist",
                    "run fleetflow init, or create the branch",
                )
            )
            continue
        _check_workflow(
            ctx,
            found,
            cp,
            ctx.cp_url,
            env.branch,
            env.tip,
            "a push to this branch runs the workflow file of the pushed commit",
        )
    gitops_repos = sorted({e.gitops.repo for e in setups if e.gitops is not None})
    for env in setups:
        if env.tip is not None and env.gitops is None:
            found.findings.append(
                finding(
                    "workflows",
                    f"{cp}@{env.branch}",
                    "no GitOpsRepo on the branch",
                    "add a GitOpsRepo (spec.repo, spec.branch, spec.path)",
                )
            )
    for repo in gitops_repos:
        url = ctx.forge.git_url(repo)
        default = ctx.forge.default_branch(repo)
        env_branches = {e.gitops.branch or e.name for e in setups if e.gitops is not None and e.gitops.repo == repo}
        if default in env_branches:
            found.findings.append(
                finding(
                    "default-branch",
                    repo,
                    f"the default branch {default} is an environment branch: fleetflow's PRs "
                    "merge into it and the clusters reconcile it",
                    "create a main branch with the GitOps caller "
                    "workflow and make it the default (fleetflow init does both)",
                )
            )
        tip = ctx.git.fetch_branch(url, default)
        if tip is None:
            found.findings.append(
                finding("default-branch", repo, f"the default branch {default} has no commit", "run fleetflow init")
            )
        else:
            _check_workflow(
                ctx,
                found,
                repo,
                url,
                default,
                tip,
                "status, schedule and workflow_dispatch run the default branch's workflow file",
            )
        for env in setups:
            if env.gitops is None or env.gitops.repo != repo:
                continue
            branch = env.gitops.branch or env.name
            sha = ctx.git.fetch_branch(url, branch)
            if sha is None:
                found.findings.append(
                    finding(
                        "workflows",
                        f"{repo}@{branch}",
                        f"environment {env.name}'s GitOps branch does not exist",
                        "run fleetflow init",
                    )
                )
                continue
            _check_workflow(
                ctx,
                found,
                repo,
                url,
                branch,
                sha,
                "a merged PR's pull_request event reads the workflow from the merge ref",
            )
            _check_contexts(ctx, found, env, repo, branch, sha)
        _check_auto_merge(ctx, found, repo, [e for e in setups if e.gitops is not None and e.gitops.repo == repo])
    for repo in [cp, *gitops_repos]:
        _check_app(ctx, found, repo)
    found.healthy = not found.findings
    return found


def _env_setup(ctx: Context, env: Resource[EnvironmentSpec]) -> EnvSetup:
    branch = ctx.env_branch(env)
    tip = ctx.git.fetch_branch(ctx.cp_url, branch)
    gitops: GitOpsRepoSpec | None = None
    clusters: list[Resource[ClusterSpec]] = []
    if tip is not None:
        collected = Problems()
        docs = read_tree(Tree(ctx.tree(ctx.cp_url, tip), f"{branch}@{short(tip)}"), Problems())
        for doc in docs:
            if doc.kind not in ("GitOpsRepo", "Cluster"):
                continue
            res = build_resource(doc, "env", collected)
            if res is None:
                continue
            if isinstance(res.spec, GitOpsRepoSpec):
                gitops = res.spec
            elif isinstance(res.spec, ClusterSpec):
                clusters.append(res)
    return EnvSetup(env.name, env.spec, branch, tip, gitops, clusters)


def _check_workflow(ctx: Context, found: Diagnosis, repo: str, url: str, branch: str, sha: str, why: str) -> None:
    if ctx.git.read_file(url, sha, WORKFLOW_FILE) is None:
        found.findings.append(
            finding(
                "workflows",
                f"{repo}@{branch}",
                f"no {WORKFLOW_FILE}: {why}",
                f"add the caller workflow to {branch} (fleetflow init does it)",
            )
        )
    else:
        found.ok(f"{repo}@{branch}: {WORKFLOW_FILE}")


def _check_contexts(ctx: Context, found: Diagnosis, env: EnvSetup, repo: str, branch: str, sha: str) -> None:
    exact = {c.spec.status_context for c in env.clusters if c.spec.status_context}
    pattern = env.spec.rollout.context_pattern
    glob = pattern.replace("{cluster}", "*").replace("{clusterType}", "*") if pattern else None
    for status in ctx.forge.statuses(repo, sha):
        if status.context.startswith("fleetflow/") or status.context in exact:
            continue
        if glob is not None and fnmatch.fnmatchcase(status.context, glob):
            continue
        found.findings.append(
            finding(
                "contexts",
                f"{repo}@{branch} ({short(sha)})",
                f"status context {status.context!r} matches no Cluster of {env.name} (statusContext) nor "
                f"rollout.contextPattern: the gate never counts it",
                "set the Cluster's spec.statusContext to exactly this context (Flux: kind/name/<first segment of the "
                "Provider UID>, lowercased, or commitStatusExpr on Flux 2.6+; Argo CD: status.label), or fix the "
                "reporter (docs/reporting-status.md)",
            )
        )
    found.ok(f"{repo}@{branch}: status contexts")


def _check_auto_merge(ctx: Context, found: Diagnosis, repo: str, setups: list[EnvSetup]) -> None:
    auto = [e.name for e in setups if e.spec.pull_request.auto_merge]
    if not auto:
        return
    allowed = ctx.forge.auto_merge_allowed(repo)
    if allowed is None:
        found.skipped.append(f"{repo}: auto-merge setting (the {ctx.forge.name} forge has none)")
    elif not allowed:
        found.findings.append(
            finding(
                "autoMerge",
                repo,
                f"{', '.join(auto)} set pullRequest.autoMerge, but the repository does not allow "
                "auto-merge: fleetflow can only merge when it runs again after the checks pass",
                "Settings → General → Pull Requests → Allow auto-merge (allow_auto_merge), so GitHub merges as soon "
                "as branch protection is satisfied",
            )
        )
    else:
        found.ok(f"{repo}: auto-merge allowed")


def _check_app(ctx: Context, found: Diagnosis, repo: str) -> None:
    granted = ctx.forge.installation_permissions(repo)
    if granted is None:
        found.skipped.append(f"{repo}: App permissions (the forge does not act as a GitHub App)")
        return
    missing = [
        f"{name}: {level}"
        for name, level in NEEDED_PERMISSIONS.items()
        if _LEVEL.get(granted.get(name, ""), 0) < _LEVEL[level]
    ]
    if missing:
        found.findings.append(
            finding(
                "app",
                repo,
                f"the GitHub App installation lacks {', '.join(missing)}",
                "App settings → Permissions & events → Repository permissions, then accept the new permissions on the "
                "installation (docs/setup.md, step 1)",
            )
        )
    else:
        found.ok(f"{repo}: App permissions")
