"""``fleetflow doctor``: check a live setup through git and the forge's API; every problem comes with its fix.

Checks (each reads, none writes):

* **workflows**: the caller workflow on every branch GitHub reads it from for the events fleetflow needs
  (https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows):
  the control plane's ``main`` and environment branches (``push`` runs the pushed commit's file), the control
  plane's default branch being ``main`` (dispatches and ``schedule`` run the default branch's file), the GitOps
  default branch (``status``, ``schedule``) and the GitOps environment branches (``pull_request`` reads the
  merge ref); a caller is any workflow there that calls the reusable workflow, whatever its name;
* **triggers**: each branch's own caller runs for that branch: the control plane's ``on.push`` filters match
  ``main`` or the environment branch the file is on, a GitOps environment branch's ``on.pull_request`` has
  ``types: [closed]`` and filters that match it (GitHub's filter patterns: ``*``, ``**``, ``?``, ``+``, ``[]``,
  ``!``); otherwise a push or a merge there starts no run and waits for the cron tick. ``status`` has no
  filters, so the GitOps default branch's caller is not read for it. The shards caller of a ``shardedSchedule``
  environment (a workflow of its own, started by events) must run on ``push`` for the environment's branch;
  what a file says is read by :mod:`fleetflow.promotion.caller_workflows`;
* **secrets**: a caller (of any of the three reusable workflows) that passes ``secrets: inherit``: the reusable
  workflows' ``app-id`` and ``app-private-key`` can never be filled so (a secret's name holds no ``-``), and every
  run stops with "no credentials";
* **app**: the GitHub App installation's permissions (``GET /repos/{owner}/{repo}/installation``) against what
  docs/setup.md asks for;
* **autoMerge**: an Environment with ``pullRequest.autoMerge`` in a GitOps repository that does not allow
  auto-merge (``allow_auto_merge``): fleetflow then merges by its own rules only when it runs again;
* **contexts**: statuses on each GitOps environment branch tip whose context matches no ``Cluster``'s
  ``statusContext`` nor the Environment's ``rollout.contextPattern``: a reporter the gate never counts;
* **branch-rules**: the status checks branch protection and rulesets require on each GitOps environment branch
  (the forge's ``merge_rules``: GitHub's "Get a branch", ``protection.required_status_checks``, and "Get rules for
  a branch", the ``required_status_checks`` rules of active rulesets). A required context that can never report on
  a PR's head (``fleetflow/<env>`` is recorded on control-plane main commits; a cluster's context is posted on the
  commit it applied, after the merge) keeps every PR unmergeable; an ``autoMerge`` Environment whose branch
  requires no check gives GitHub's auto-merge nothing to wait for, so the PR is merged as soon as the checks
  already on its head are green, possibly before any has started;
* **merge-records**: fleetflow's merge records in each GitOps repository (tags ``fleetflow/auto-merge/<env>`` and
  ``fleetflow/merge-when-green/<env>``, :mod:`fleetflow.promotion.merge_records`): one whose environment this repo
  no longer serves (renamed or removed) is never read nor removed by reconcile; one on a commit other than the
  head branch's tip is stale and reconcile replaces it at its next run (reported as fine);
* **push-rules**: the rules that apply to the branches fleetflow pushes commits to itself ("Get rules for a
  branch"): each control-plane environment branch (promote's pin commit, a fast-forward) and each GitOps PR head
  branch ``fleetflow/<env>`` (created, then force-updated by schedule). A ruleset whose rules decline such a push
  (:func:`fleetflow.forge.rulesets.declined_pushes`) and that the credentials in use cannot bypass;
* **tag-rules**: the tag rulesets of each GitOps repository serving an ``autoMerge`` environment ("Get all
  repository rulesets" with ``targets=tag``, then "Get a repository ruleset" for each active one): one that declines
  creating, moving or deleting that environment's merge records (:mod:`fleetflow.forge.rulesets`), unless the
  credentials in use may bypass it (then fine, with the reminder that fleetflow's App must bypass it too);
* **actions-pulls**: each GitOps repository's "Allow GitHub Actions to create and approve pull requests" (GitHub's
  "Get default workflow permissions for a repository", ``can_approve_pull_request_reviews``), off in every new
  repository: while off GitHub refuses a pull request opened with a workflow's GITHUB_TOKEN (403 "GitHub Actions is
  not permitted to create or approve pull requests"). A problem when fleetflow runs with such a token (an
  installation token, ``ghs_``), not when it runs as its GitHub App (no request then) or with a person's token
  (reported as fine, with what the setting means for a workflow's token); "could not check" when the credentials
  may not read it (it needs Administration: read, which a workflow's GITHUB_TOKEN cannot be given);
* **sharded-schedule**: an Environment with ``shardedSchedule: true`` is rendered only by the reusable workflow
  ``fleetflow-schedule-shards.yml`` (promote and reconcile leave it to it): a workflow that calls it for that
  environment must be on the control plane's ``main`` (dispatches and the cron tick) and on the environment's
  branch (a push, a promotion's pin included, runs the pushed commit's files);
* **environments**: the GitHub Environments (deployment protection rules, "List environments") of the jobs that
  need them: with the control-plane caller's ``approval-environment``, the environment of each fleetflow
  Environment whose PRs a person merges (``autoMerge`` off) must exist with required reviewers (GitHub creates a
  missing one on first use without rules); with the GitOps caller's ``status-page``, ``github-pages`` must exist
  (GitHub Pages set to "GitHub Actions").
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import Field

from fleetflow.errors import ForgeError, Problem, Problems
from fleetflow.forge.base import context_key
from fleetflow.forge.git import split_credentials
from fleetflow.forge.githubauth import ACTIONS_MAY_NOT_CREATE_PULLS, ACTIONS_PULLS_SETTING
from fleetflow.forge.rulesets import (
    WRITE_TEXT,
    Push,
    Ruleset,
    Write,
    declined_pushes,
    declined_writes,
    writes_text,
)
from fleetflow.model.controlplane import Resource, build_resource
from fleetflow.model.documents import read_paths, read_tree
from fleetflow.model.resources import ClusterSpec, EnvironmentSpec, GitOpsRepoSpec
from fleetflow.promotion.bootstrap import (
    CONTROL_PLANE_REUSABLE,
    GITOPS_REUSABLE,
    WORKFLOW_FILE,
    caller_files,
)
from fleetflow.promotion.caller_workflows import (
    SHARDS_WORKFLOW,
    caller_inputs,
    fleetflow_inputs,
    inheriting_jobs,
    load,
    on_event,
    paths_gap,
    shards_environments,
    trigger_gap,
    unfilled_secrets,
)
from fleetflow.promotion.context import Context, head_branch, short
from fleetflow.promotion.merge_records import KINDS, RECORDS_PATTERN, TAG_PREFIX, record_ref
from fleetflow.promotion.pin import PIN_FILE
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
R = TypeVar("R")


class Finding(Result):
    check: str  # workflows | triggers | secrets | default-branch | app | autoMerge | contexts | branch-rules |
    # merge-records | push-rules | tag-rules | sharded-schedule | environments | actions-pulls
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
    envs = ctx.current_environments(main_sha)
    setups = [_env_setup(ctx, env) for _, env in sorted(envs.items())]
    # a ruleset read once per repository: an organization's applies to every branch the push-rules check looks at
    read_ruleset = functools.cache(ctx.forge.ruleset)
    inherits = Inherits()
    cp_callers: dict[str, dict[str, str]] = {}  # branch -> its control-plane callers (path -> text)
    cp_branches = [ctx.main_branch, *(e.branch for e in setups if e.tip is not None)]
    files = _check_workflow(
        ctx,
        found,
        cp,
        ctx.cp_url,
        ctx.main_branch,
        main_sha,
        "push to main promotes the new commit, and its file is the one pushed",
        CONTROL_PLANE_REUSABLE,
    )
    inherits.add(cp, ctx.main_branch, files, CONTROL_PLANE_REUSABLE)
    _check_trigger(found, cp, ctx.main_branch, files, "push", cp_branches,
                   f"a push to {ctx.main_branch} (a new commit to promote)",
                   read=read_paths(ctx.files(ctx.cp_url, main_sha, ctx.main_branch)))
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
        files = _check_workflow(
            ctx,
            found,
            cp,
            ctx.cp_url,
            env.branch,
            env.tip,
            "a push to this branch runs the workflow file of the pushed commit",
            CONTROL_PLANE_REUSABLE,
        )
        inherits.add(cp, env.branch, files, CONTROL_PLANE_REUSABLE)
        cp_callers[env.branch] = files
        _check_trigger(found, cp, env.branch, files, "push", cp_branches,
                       f"a push to {env.branch} (a promotion's pin, a change to {env.name}'s files)",
                       read=read_paths(ctx.files(ctx.cp_url, env.tip, env.branch)))
        _check_push_rules(ctx, found, read_ruleset, cp, env.branch, ("update",),
                          f"promote's push of the pin commit ({PIN_FILE}), so {env.name} is never promoted",
                          f"add fleetflow's GitHub App to its bypass list (docs/setup.md, section 4: {env.branch} "
                          "keeps its rules for people; the App pushes the pin)")
        _check_branch_protection(ctx, found, cp, env)
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
            files = _check_workflow(
                ctx,
                found,
                repo,
                url,
                default,
                tip,
                "status, schedule and workflow_dispatch run the default branch's workflow file",
                GITOPS_REUSABLE,
            )
            inherits.add(repo, default, files, GITOPS_REUSABLE)
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
            files = _check_workflow(
                ctx,
                found,
                repo,
                url,
                branch,
                sha,
                "a merged PR's pull_request event reads the workflow from the merge ref",
                GITOPS_REUSABLE,
            )
            inherits.add(repo, branch, files, GITOPS_REUSABLE)
            _check_trigger(found, repo, branch, files, "pull_request", sorted(env_branches),
                           f"{env.name}'s merged PR into {branch}")
            _check_contexts(ctx, found, env, repo, branch, sha)
            _check_branch_rules(ctx, found, env, repo, branch)
            head = head_branch(env.name)
            _check_push_rules(ctx, found, read_ruleset, repo, head, ("create", "update", "force"),
                              f"schedule's push of the PR head branch, so {env.name}'s PR is never opened or updated",
                              f"exclude fleetflow's head branches from it (pattern {HEADS_PATTERN}, "
                              f"refs/heads/{HEADS_PATTERN} through the API; docs/setup.md, section 4), or add "
                              "fleetflow's GitHub App to its bypass list")
        if tip is not None:
            _check_status_page_environment(ctx, found, repo, url, default, tip)
        served = [e for e in setups if e.gitops is not None and e.gitops.repo == repo]
        _check_auto_merge(ctx, found, repo, served)
        _check_actions_pulls(ctx, found, repo)
        _check_merge_records(ctx, found, repo, url, served)
        _check_tag_rules(ctx, found, repo, served)
    sharded = [env for env in setups if env.spec.sharded_schedule]
    shards_files = {ctx.main_branch: _shards_files(ctx, main_sha)} if sharded else {}
    for env in sharded:
        if env.tip is not None:
            shards_files.setdefault(env.branch, _shards_files(ctx, env.tip))
    for branch, texts in shards_files.items():
        inherits.add(cp, branch, texts, SHARDS_WORKFLOW)
    inherits.report(found)
    _check_approval_environments(ctx, found, cp, main_sha, setups)
    for env in sharded:
        _check_shards_caller(ctx, found, env.name, ctx.main_branch, shards_files[ctx.main_branch],
                             "dispatches and the cron tick run the default branch's workflow files")
        if env.tip is not None:
            _check_shards_caller(ctx, found, env.name, env.branch, shards_files[env.branch],
                                 "a push to this branch (a promotion's pin too) runs the pushed commit's files")
            _check_shards_triggers(found, cp, env, shards_files[env.branch], cp_callers.get(env.branch, {}))
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
        docs = read_tree(ctx.files(ctx.cp_url, tip, f"{branch}@{short(tip)}"), Problems())
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


def _check_workflow(ctx: Context, found: Diagnosis, repo: str, url: str, branch: str, sha: str, why: str,
                    reusable: str) -> dict[str, str]:
    """The caller on ``branch``: a workflow of any name that calls ``reusable`` (one copied from examples/workflows/
    and named as its owner likes is as good as init's :data:`WORKFLOW_FILE`), else at least that file (a pipeline
    of one's own that runs the composite actions). Two callers run fleetflow twice for every event, a manual
    promotion included (the ``request`` job has no concurrency group, so neither run cancels the other).
    The callers found (path -> text; that file when none calls ``reusable``), for the checks of their contents."""
    files = caller_files(ctx.git, url, sha, reusable)
    found_callers = sorted(files)
    if len(found_callers) > 1:
        found.findings.append(finding(
            "workflows", f"{repo}@{branch}",
            f"{len(found_callers)} workflows call {reusable} ({', '.join(found_callers)}): every event runs "
            "fleetflow once per file, and a manual promotion is done twice",
            f"keep one of them on {branch} and delete the others"))
        return files
    if found_callers and found_callers[0] != WORKFLOW_FILE:
        found.ok(f"{repo}@{branch}: {found_callers[0]} calls {reusable}")
        return files
    own = None if found_callers else ctx.git.read_file(url, sha, WORKFLOW_FILE)
    if own is not None:
        files = {WORKFLOW_FILE: own}
    if not found_callers and own is None:
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
    return files


# -- what the callers say: the secrets they pass, the branches their triggers run for ------------------------------


class Inherits:
    """The callers that pass ``secrets: inherit`` (:func:`inheriting_jobs`), collected over every branch doctor
    reads and reported once per file and job (the same caller is usually on every branch)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str, str], tuple[str, int | None, list[str]]] = {}

    def add(self, repo: str, branch: str, files: dict[str, str], reusable: str) -> None:
        for path, text in files.items():
            for job in inheriting_jobs(text, reusable):
                self.seen.setdefault((repo, path, job.job), (reusable, job.line, []))[2].append(branch)

    def report(self, found: Diagnosis) -> None:
        unfilled = unfilled_secrets()
        for (repo, path, job), (reusable, line, branches) in self.seen.items():
            at = f"{path}:{line}" if line else path
            found.findings.append(finding(
                "secrets", f"{repo}@{', '.join(branches)}",
                f"{at}: job {job} passes secrets: inherit to {reusable}, that is the repository's secrets under "
                f"their own names, but it reads {' and '.join(unfilled)}: a GitHub secret's name holds only "
                "letters, digits and underscores, so no secret fills them and every run stops with 'no "
                "credentials' (only a secret named TOKEN reaches its token)",
                f"in job {job}, pass them by name instead of inherit: secrets: app-id: "
                "${{ secrets.FLEETFLOW_APP_ID }} and app-private-key: ${{ secrets.FLEETFLOW_APP_PRIVATE_KEY }} "
                "(examples/workflows/; docs/setup.md, step 2)"))


def _check_trigger(found: Diagnosis, repo: str, branch: str, files: dict[str, str], event: str, wanted: list[str],
                   what: str, starts: str = "fleetflow run", read: list[str] | None = None) -> None:
    """The one caller on ``branch`` (``files``: two or more are a workflows problem already) runs on ``event`` for
    ``branch`` (:func:`trigger_gap`): GitHub reads the workflow of a ``push`` from the pushed commit and that of a
    ``pull_request`` from the PR's merge ref, whose base is ``branch`` ("Events that trigger workflows",
    https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-
    workflows), so each branch's own file is the one that counts. ``wanted``: main and the environment branches of
    the repository, all named in the fix; ``starts``: what the event starts; ``read``: the files fleetflow reads on
    the branch, each of which must start it when it alone changes (:func:`paths_gap`)."""
    if len(files) != 1:
        return
    [(path, text)] = files.items()
    if not isinstance(load(text), dict):
        return
    where = f"{repo}@{branch}"
    gap = trigger_gap(path, text, event, branch, wanted)
    later = ("it waits for the cron tick" if event == "push"
             else "'rolling out' waits for the clusters' first status or the cron tick")
    if gap is not None:
        found.findings.append(finding("triggers", where, f"{gap.at}: {gap.problem}: {what} starts no {starts}: "
                                      f"{later}", gap.fix))
        return
    missed = paths_gap(path, text, event, read or [], f"files fleetflow reads on {branch}")
    if missed is not None:
        found.findings.append(finding("triggers", where, f"{missed.at}: {missed.problem}: {what} that changes only "
                                      f"them starts no {starts}: {later}", missed.fix))
        return
    filtered = read and {"paths", "paths-ignore"} & set(on_event(load(text), event)[1])
    found.ok(f"{where}: {path} runs on {event} for {branch}{' and each file fleetflow reads' if filtered else ''}")


WORKFLOWS_DIR = ".github/workflows"


def _check_shards_caller(ctx: Context, found: Diagnosis, env: str, branch: str, files: dict[str, str],
                        why: str) -> None:
    """An environment with ``shardedSchedule: true`` is rendered only by the shards workflow (neither promote nor
    reconcile renders it): a caller of it for ``env`` must be on ``branch``, whose workflow files calling it are
    ``files`` (:func:`_shards_files`; docs/setup.md, section 10)."""
    where = f"{ctx.control_plane}@{branch}"
    callers = {name for text in files.values() for name in shards_environments(text)}
    if env in callers or "*" in callers:
        found.ok(f"{where}: {SHARDS_WORKFLOW} called for {env}")
        return
    found.findings.append(finding(
        "sharded-schedule", where,
        f"environment {env} has shardedSchedule: true, but no workflow in {WORKFLOWS_DIR}/ calls {SHARDS_WORKFLOW} "
        f"with environment: {env}, so nothing schedules it ({why})",
        f"copy examples/workflows/schedule-shards.yml to {WORKFLOWS_DIR}/fleetflow-shards.yml on {branch} with "
        f"environment: {env} (docs/setup.md, section 10), or set shardedSchedule: false",
    ))


def _check_shards_triggers(found: Diagnosis, cp: str, env: EnvSetup, files: dict[str, str],
                           checked: dict[str, str]) -> None:
    """The shards caller of ``env`` on its branch runs on ``push`` for that branch: it is a workflow of its own,
    started by events, not by the control-plane caller (examples/workflows/schedule-shards.yml: ``push`` to the
    environment's branch, ``workflow_dispatch``, a rare ``schedule``; docs/setup.md, section 10), and a push (a
    promotion's pin) is when a sharded schedule falls due. A file that is also the branch's control-plane caller
    (``checked``) had its push trigger checked with it."""
    for path, text in sorted(files.items()):
        names = shards_environments(text)
        if path in checked or not (env.name in names or "*" in names):
            continue
        _check_trigger(found, cp, env.branch, {path: text}, "push", [env.branch],
                       f"a push to {env.branch} (a promotion's pin, a change to {env.name}'s files)",
                       f"sharded schedule of {env.name}")


def _shards_files(ctx: Context, sha: str) -> dict[str, str]:
    """The workflow files on ``sha`` with a job that calls the shards workflow (path -> text); a file that is not
    YAML is left to the workflows check."""
    listed = ctx.git.mirror(ctx.cp_url).ls_tree(sha, [f"{WORKFLOWS_DIR}/"])
    names = [e.path for e in listed if e.kind == "blob" and e.path.endswith((".yml", ".yaml"))]
    texts = {path: ctx.git.read_file(ctx.cp_url, sha, path) for path in names}
    return {path: text for path, text in texts.items() if text and shards_environments(text)}


SHOWN_CONTEXTS = 5  # of the unknown contexts on one branch, named in its one problem


def _check_contexts(ctx: Context, found: Diagnosis, env: EnvSetup, repo: str, branch: str, sha: str) -> None:
    """One problem per branch, however many contexts match no Cluster: it names how many and the first few
    (sorted). Until 2026-11-28 each context gave its own problem: 5,000 lines for 5,000 unknown contexts."""
    exact = {context_key(c.spec.status_context) for c in env.clusters if c.spec.status_context}
    pattern = env.spec.rollout.context_pattern
    glob = context_key(pattern.replace("{cluster}", "*").replace("{clusterType}", "*")) if pattern else None
    unknown = sorted(  # without case, as GitHub and the gate tell contexts apart (forge.base.context_key)
        status.context for status in ctx.forge.statuses(repo, sha)
        if not (status.context.startswith("fleetflow/") or context_key(status.context) in exact
                or (glob is not None and fnmatch.fnmatchcase(context_key(status.context), glob)))
    )
    if not unknown:
        found.ok(f"{repo}@{branch}: status contexts")
        return
    if len(unknown) == 1:
        what = f"status context {unknown[0]!r} matches"
        them = "it"
    else:
        named = ", ".join(repr(c) for c in unknown[:SHOWN_CONTEXTS])
        rest = len(unknown) - SHOWN_CONTEXTS
        what = f"{len(unknown)} status contexts ({named}{f' and {rest} more' if rest > 0 else ''}) match"
        them = "them"
    found.findings.append(
        finding(
            "contexts",
            f"{repo}@{branch} ({short(sha)})",
            f"{what} no Cluster of {env.name} (statusContext) nor rollout.contextPattern: the gate never counts "
            f"{them}",
            "set the Cluster's spec.statusContext to exactly this context (Flux: kind/name/<first segment of the "
            "Provider UID>, lowercased, or commitStatusExpr on Flux 2.6+; Argo CD: status.label), or fix the "
            "reporter (docs/reporting-status.md)",
        )
    )


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
                "auto-merge: fleetflow merges only when a run reads the checks green again (a status on the PR's "
                "head, or the cron tick: a check run from Actions raises no event)",
                "Settings → General → Pull Requests → Allow auto-merge (allow_auto_merge), so GitHub merges as soon "
                "as branch protection is satisfied",
            )
        )
    else:
        found.ok(f"{repo}: auto-merge allowed")


def _check_merge_records(ctx: Context, found: Diagnosis, repo: str, url: str, setups: list[EnvSetup]) -> None:
    """fleetflow's merge records in ``repo`` (one ``ls-remote``, no API request)."""
    listing = ctx.git.remote_refs(url, [f"{TAG_PREFIX}{kind}/*" for kind in KINDS])
    names = {e.name for e in setups}
    for ref, sha in sorted(listing.items()):
        kind, _, env = ref.removeprefix(TAG_PREFIX).partition("/")
        tag = ref.removeprefix("refs/tags/")
        if kind not in KINDS or "/" in env:
            continue
        if env not in names:
            found.findings.append(finding(
                "merge-records", f"{repo} tag {tag}",
                f"a merge record for {env}, which this GitOps repository does not serve (renamed or removed): "
                "reconcile never reads nor removes it",
                f"delete the tag: git push {repo_hint(repo, url)} :{ref}"))
            continue
        head = ctx.git.fetch_branch(url, head_branch(env))
        state = "current" if head == sha else "stale (reconcile replaces it at its next run)"
        found.ok(f"{repo}: merge record {tag} on {short(sha)}: {state}")


def _check_push_rules(ctx: Context, found: Diagnosis, read_ruleset: Callable[[str, int], Ruleset], repo: str,
                      branch: str, pushes: tuple[Push, ...], consequence: str, fix: str) -> None:
    """The rules that apply to ``branch`` ("Get rules for a branch": GitHub picks the rulesets) against fleetflow's
    own ``pushes`` of new, unsigned commits there; one finding per ruleset that declines one of them and that the
    credentials in use cannot bypass (one they may bypass: fine, with the reminder that the App must too).
    ``read_ruleset``: the forge's ``ruleset``, remembered for the whole diagnosis."""
    where = f"{repo}@{branch}"

    def read() -> tuple[dict[int, list[str]], dict[int, Ruleset]] | None:
        rules = ctx.forge.branch_rules(repo, branch)
        if rules is None:
            return None
        declined = declined_pushes(rules, pushes)
        return declined, {ident: read_ruleset(repo, ident) for ident in sorted(declined)}

    got = _read_rules(ctx, found, f"{where}: rulesets", read)
    if got is None:
        return
    declined, rulesets = got
    for ident, names in sorted(declined.items()):
        ruleset = rulesets[ident]
        named = f"ruleset {ruleset.name!r} ({ruleset.source or f'id {ident}'})"
        if bypassed := _bypassed(ruleset):
            found.ok(f"{where}: {named} declines fleetflow's pushes ({', '.join(names)}), {bypassed}")
            continue
        found.findings.append(finding(
            "push-rules", f"{where} {named}",
            f"its rules ({', '.join(names)}) decline {consequence}", fix))
    if not declined:
        found.ok(f"{where}: no ruleset declines fleetflow's pushes")


TROUBLESHOOTING_CHECKS = ("https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/"
                          "collaborating-on-repositories-with-code-quality-features/troubleshooting-required-status-"
                          "checks")


def _check_branch_protection(ctx: Context, found: Diagnosis, cp: str, env: EnvSetup) -> None:
    """The classic branch protection rule (Settings → Branches) of a control-plane environment branch, which "Get
    rules for a branch" does not list (rulesets only), against promote's push of the pin commit. "Get a branch"
    shows anyone with read access whether a rule applies and the status checks it requires; a required check
    declines the push of a commit that has not passed it ("You won't be able to push local changes to a protected
    branch until all required status checks pass", GitHub Docs, "Troubleshooting required status checks"), and the
    pin commit never has (fleetflow makes it and pushes it at once). A rule without required checks may still
    require a pull request, which only admins can see ("Get branch protection"): said in a "skipped" line. Until
    2026-11-29 doctor read rulesets only, and found a prod branch under a classic rule healthy while every
    promotion of prod ended with GH006."""
    where = f"{cp}@{env.branch}"
    try:
        got = ctx.forge.branch_protection(cp, env.branch)
    except ForgeError as exc:
        found.skipped.append(f"{where}: branch protection could not be read ({str(exc).splitlines()[0]})")
        return
    if got is None or not got.protected:
        return
    if got.required:
        found.findings.append(finding(
            "push-rules", f"{where} branch protection",
            f"its rule requires the status checks {', '.join(repr(c) for c in got.required)}, and GitHub declines "
            "a push of a commit that has not passed them (GH006 \"Required status check ... is expected\"): "
            f"promote's push of the pin commit ({PIN_FILE}) is declined, so {env.name} is never promoted",
            f"move {env.branch}'s protection to a ruleset with the same rules and fleetflow's GitHub App on its "
            f"bypass list (Settings → Rules → Rulesets; docs/setup.md, section 4), and delete the branch protection "
            f"rule (Settings → Branches); {TROUBLESHOOTING_CHECKS}"))
        return
    found.skipped.append(
        f"{where}: a branch protection rule applies (Settings → Branches); whether it requires a pull request is "
        "shown only to admins: if it does, fleetflow's GitHub App must be under \"Allow specified actors to bypass "
        "required pull requests\", else promote's push of the pin commit is declined (GH006); a ruleset with the "
        "App on its bypass list is what docs/setup.md, section 4, asks for")


def _read_rules(ctx: Context, found: Diagnosis, what: str, read: Callable[[], R | None]) -> R | None:
    """``read()``'s rulesets, or None with a "skipped" line: on a forge that has none, and when GitHub will not show
    them (a plan without rulesets, a token without Metadata: read), so the other checks still report."""
    try:
        got = read()
    except ForgeError as exc:
        found.skipped.append(f"{what} could not be read ({str(exc).splitlines()[0]}); reading them needs Metadata: "
                             "read, and private repositories have rulesets on GitHub Pro, Team and Enterprise plans "
                             "only")
        return None
    if got is None:
        found.skipped.append(f"{what} (the {ctx.forge.name} forge has none)")
    return got


def _bypassed(ruleset: Ruleset) -> str | None:
    """What to say of a ruleset the credentials in use may bypass (``current_user_can_bypass`` is the caller's:
    doctor run with a person's token says nothing of the App's), or None."""
    if ruleset.can_bypass not in ("always", "exempt"):
        return None
    return (f"but the credentials this doctor ran with bypass it ({ruleset.can_bypass}); unless they are fleetflow's "
            "GitHub App's, the App must be on its bypass list too (run doctor with FLEETFLOW_APP_ID and "
            "FLEETFLOW_APP_PRIVATE_KEY to check as the App)")


HEADS_PATTERN = "fleetflow/*"  # the PR head branches, fleetflow/<env> (an environment's name has no "/")


def _check_tag_rules(ctx: Context, found: Diagnosis, repo: str, setups: list[EnvSetup]) -> None:
    """The tag rulesets of ``repo`` against the merge records of its ``autoMerge`` environments, which fleetflow
    creates, moves to a new head and deletes (both names in one atomic push, :mod:`merge_records`). A ruleset
    that declines one of those writes, and that the credentials in use cannot bypass, finds a problem; one this
    run's credentials bypass is reported as fine with that caveat (``current_user_can_bypass`` is about the caller:
    fleetflow's App must bypass it too)."""
    auto = sorted(e.name for e in setups if e.spec.pull_request.auto_merge)
    if not auto:
        return
    rulesets = _read_rules(ctx, found, f"{repo}: tag rulesets", lambda: ctx.forge.rulesets(repo, "tag"))
    if rulesets is None:
        return
    clear = True
    for ruleset in rulesets:
        declined: dict[Write, dict[str, None]] = {}  # write -> the rules that decline it, in order, once each
        tags: list[str] = []
        envs: dict[str, None] = {}
        for env in auto:
            for kind in KINDS:
                ref = record_ref(env, kind)
                writes = declined_writes(ruleset, ref)
                for write, rules in writes.items():
                    declined.setdefault(write, {}).update(dict.fromkeys(rules))
                if writes:
                    tags.append(ref.removeprefix("refs/tags/"))
                    envs[env] = None
        if not declined:
            continue
        where = f"{repo} ruleset {ruleset.name!r} ({ruleset.source or f'id {ruleset.id}'})"
        what = writes_text(list(declined))
        why = "; ".join(f"{WRITE_TEXT[w]}: {', '.join(rules)}" for w, rules in declined.items())
        clear = False
        if bypassed := _bypassed(ruleset):
            found.ok(f"{where}: declines {what} fleetflow's merge records ({why}), {bypassed}")
            continue
        found.findings.append(finding(
            "tag-rules", where,
            f"it declines {what} the tags fleetflow keeps its merge records in ({', '.join(tags)}; {why}): the "
            f"reconcile run of {_either(list(envs))} that writes one ends with a git error (exit 3) at that push, "
            "and takes the merge step again at every run",
            f"exclude fleetflow's tags from it: Settings → Rules → Rulesets → {ruleset.name} → Target tags → "
            f"Exclude by pattern: {RECORDS_PATTERN} (refs/tags/{RECORDS_PATTERN} through the API; fleetflow/** "
            "matches only one level below fleetflow/), or add fleetflow's GitHub App to its bypass list",
        ))
    if clear:
        found.ok(f"{repo}: tag rulesets let fleetflow write its merge records")


def _either(names: list[str]) -> str:
    """``["dev", "qa", "prod"]`` -> ``"dev, qa or prod"``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def repo_hint(repo: str, url: str) -> str:
    """What to push to, for a fix: the URL without credentials (local paths as they are)."""
    return split_credentials(url)[0] if "://" in url else repo


ACTIONS_PULLS_PAGE = (  # GitHub Docs, "Managing GitHub Actions settings for a repository"
    "https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/enabling-features-for-"
    "your-repository/managing-github-actions-settings-for-a-repository"
    "#preventing-github-actions-from-creating-or-approving-pull-requests"
)


def _check_actions_pulls(ctx: Context, found: Diagnosis, repo: str) -> None:
    """The GitOps repository's "Allow GitHub Actions to create and approve pull requests" against the credentials
    fleetflow runs with (:meth:`Forge.credential_kind`, from the settings: FLEETFLOW_APP_ID or GITHUB_TOKEN).

    Only a workflow's GITHUB_TOKEN is refused by it, so: a GitHub App is fine without reading it (reading needs
    Administration: read, which docs/setup.md does not ask the App for); an installation token (``ghs_``, what a
    workflow's GITHUB_TOKEN is) with the setting off is a problem; a person's token (or one of no known format) is
    fine, and the line says what the setting does to a workflow's token.

    ``default_workflow_permissions`` (read or write) is reported, never a problem: it applies only to jobs that
    declare no ``permissions:`` (github.blog changelog 2021-04-20, "GitHub Actions: Control permissions for
    GITHUB_TOKEN": "Any permission that is absent from the list will be set to none"), and fleetflow's callers
    (:func:`fleetflow.promotion.bootstrap.control_plane_workflow`, :func:`~fleetflow.promotion.bootstrap.
    gitops_workflow`, examples/workflows/) and its reusable workflows declare ``permissions:`` at the top and on
    every job; they never open a PR with GITHUB_TOKEN at all (an App's installation token or the ``token`` secret).
    """
    kind = ctx.forge.credential_kind()
    if kind == "app":
        found.ok(f"{repo}: fleetflow opens pull requests as its GitHub App: \"{ACTIONS_PULLS_SETTING}\" applies only "
                 "to a workflow's GITHUB_TOKEN")
        return
    try:
        got = ctx.forge.workflow_permissions(repo)
    except ForgeError as exc:  # 403 or 404: the credentials may not read it (the whole error for anything else)
        status = exc.request.status if exc.request is not None else None
        why = f"GitHub answered {status}" if status in (403, 404) else str(exc).splitlines()[0]
        found.skipped.append(
            f"{repo}: \"{ACTIONS_PULLS_SETTING}\" could not be read ({why}); \"Get default "
            "workflow permissions for a repository\" needs Administration: read (a GitHub App or fine-grained token; "
            "the repo scope and admin access for a classic one), which a workflow's GITHUB_TOKEN cannot be given: see "
            "Settings → Actions → General → Workflow permissions, or run doctor with such a token")
        return
    if got is None:
        found.skipped.append(f"{repo}: GitHub Actions workflow permissions (the {ctx.forge.name} forge has none)")
        return
    settings = f"default workflow permissions: {got.default or 'unknown'}"
    if got.actions_can_create_pulls:
        found.ok(f"{repo}: GitHub Actions may create pull requests ({settings})")
        return
    if kind != "installation-token":
        whose = "a person's token" if kind == "personal-token" else "a token of no known kind"
        found.ok(f"{repo}: \"{ACTIONS_PULLS_SETTING}\" is off ({settings}): GitHub refuses a pull request opened "
                 f"with a workflow's GITHUB_TOKEN, not with the token this doctor ran with ({whose}); run fleetflow "
                 "as its GitHub App or with a token secret, never with GITHUB_TOKEN, or turn the setting on")
        return
    found.findings.append(finding(
        "actions-pulls", repo,
        f"\"{ACTIONS_PULLS_SETTING}\" is off ({settings}) and fleetflow runs with an installation token (ghs_), "
        f"as a workflow's GITHUB_TOKEN is: GitHub refuses every pull request fleetflow opens with it (403 "
        f"\"{ACTIONS_MAY_NOT_CREATE_PULLS}\"), so no promotion reaches this repository",
        f"Settings → Actions → General → Workflow permissions → {ACTIONS_PULLS_SETTING} (greyed out there: the "
        f"organization's Settings → Actions → General has it off; {ACTIONS_PULLS_PAGE}), or give fleetflow a GitHub "
        "App's credentials (FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY; docs/setup.md, step 1) instead of the "
        "token"))


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


def _reporter_contexts(env: EnvSetup) -> tuple[set[str], str | None]:
    """The contexts the clusters of ``env`` post, and the glob of ``rollout.contextPattern``, both by
    ``context_key`` (without case, as GitHub tells contexts apart)."""
    exact = {context_key(c.spec.status_context) for c in env.clusters if c.spec.status_context}
    pattern = env.spec.rollout.context_pattern
    return exact, context_key(pattern.replace("{cluster}", "*").replace("{clusterType}", "*")) if pattern else None


def _check_branch_rules(ctx: Context, found: Diagnosis, env: EnvSetup, repo: str, branch: str) -> None:
    rules = ctx.forge.merge_rules(repo, branch)
    exact, glob = _reporter_contexts(env)
    # without case: a required "Flux/dev-1" is the cluster's "flux/dev-1" on GitHub ("Create a commit status":
    # the context "is case-insensitive"), and it never reports on a PR's head either (compared with case until
    # 2026-11-29, so doctor found nothing wrong with a branch whose PRs could never merge)
    never = [c for c in rules.required if (key := context_key(c)).startswith("fleetflow/") or key in exact
             or (glob is not None and fnmatch.fnmatchcase(key, glob))]
    where = f"{repo}@{branch}"
    if never:
        why = ("fleetflow/<env> is recorded on the control plane's main commit"
               if any(context_key(c).startswith("fleetflow/") for c in never)
               else "the clusters report on the commit they applied, after the merge")
        found.findings.append(finding(
            "branch-rules", where,
            f"the branch requires {', '.join(repr(c) for c in never)}, which never reports on a PR's head ({why}): "
            f"{env.name}'s PRs can never be merged by the rules",
            f"remove {', '.join(never)} from the required status checks of {branch} (branch protection rule or "
            "ruleset); require the checks that run on the PR itself (your CI) instead"))
    if env.spec.pull_request.auto_merge and not rules.required:
        found.findings.append(finding(
            "branch-rules", where,
            f"{env.name} sets pullRequest.autoMerge but {branch} requires no status check: GitHub's auto-merge has "
            "nothing to wait for, so the PR is merged as soon as the checks already on its head are green, possibly "
            "before any has started",
            f"require the checks that validate a GitOps PR on {branch}: Settings → Rules → Rulesets → Require status "
            "checks to pass (or a branch protection rule with Require status checks to pass before merging)"))
    if not never and not (env.spec.pull_request.auto_merge and not rules.required):
        found.ok(f"{where}: required checks ({', '.join(rules.required) or 'none'})")


def _caller_inputs(ctx: Context, url: str, sha: str, reusable: str) -> dict[str, Any]:
    """The ``with:`` inputs the caller workflows on ``sha`` pass to fleetflow's reusable workflow ``reusable``
    (every calling job's, merged): the callers whatever their names (:func:`caller_files`), else
    :data:`WORKFLOW_FILE`'s jobs that use anything of fleetflow's; empty when there is none or it is not YAML (the
    workflows check reports that). Until 2026-11-29 only :data:`WORKFLOW_FILE` was read: a caller named otherwise
    passed nothing."""
    files = caller_files(ctx.git, url, sha, reusable)
    if files:
        return caller_inputs(files.values(), reusable)
    return fleetflow_inputs(ctx.git.read_file(url, sha, WORKFLOW_FILE))


def _environments(ctx: Context, found: Diagnosis, repo: str) -> dict[str, Any] | None:
    try:
        envs = ctx.forge.deployment_environments(repo)
    except ForgeError as exc:
        found.skipped.append(f"{repo}: GitHub Environments could not be read ({str(exc).splitlines()[0]}); "
                             "\"List environments\" needs Actions: read for a GitHub App or fine-grained token")
        return None
    if envs is None:
        found.skipped.append(f"{repo}: GitHub Environments (the {ctx.forge.name} forge has none)")
    return envs


def _check_approval_environments(ctx: Context, found: Diagnosis, cp: str, main_sha: str,
                                 setups: list[EnvSetup]) -> None:
    pattern = _caller_inputs(ctx, ctx.cp_url, main_sha, CONTROL_PLANE_REUSABLE).get("approval-environment")
    if not isinstance(pattern, str) or not pattern:
        found.ok(f"{cp}: no approval-environment in the caller (manual promotions are gated by the GitOps PR review)")
        return
    gated = [e.name for e in setups if not e.spec.pull_request.auto_merge]
    if not gated:
        return
    existing = _environments(ctx, found, cp)
    if existing is None:
        return
    for name in gated:
        wanted = pattern.replace("{0}", name)
        have = existing.get(wanted)
        if have is None:
            problem = (f"the caller runs manual promotions of {name} in the GitHub Environment {wanted!r}, which "
                       "does not exist: GitHub creates it on first use without protection rules, so a manual "
                       f"promotion or rollback of {name} runs without approval")
        elif not have.reviewers:
            problem = (f"the GitHub Environment {wanted!r} has no required reviewers: a manual promotion or "
                       f"rollback of {name} (whose PRs a person merges) runs without approval")
        else:
            found.ok(f"{cp}: GitHub Environment {wanted} ({have.reviewers} required reviewer(s))")
            continue
        found.findings.append(finding(
            "environments", cp, problem,
            f"Settings → Environments → {'New environment ' + wanted if have is None else wanted} → Required "
            "reviewers (docs/setup.md, step 5); or remove approval-environment from the caller"))


def _check_status_page_environment(ctx: Context, found: Diagnosis, repo: str, url: str, branch: str,
                                   sha: str) -> None:
    if _caller_inputs(ctx, url, sha, GITOPS_REUSABLE).get("status-page") is not True:
        return
    existing = _environments(ctx, found, repo)
    if existing is None:
        return
    if "github-pages" in existing:
        found.ok(f"{repo}: GitHub Environment github-pages (status page)")
        return
    found.findings.append(finding(
        "environments", f"{repo}@{branch}",
        "the caller publishes the status page (status-page: true), whose job deploys to the GitHub Environment "
        "'github-pages', but the repository has none: GitHub Pages is not set to deploy from GitHub Actions",
        "Settings → Pages → Build and deployment → Source: GitHub Actions (docs/status-page.md)"))
