"""``fleetflow init``: set up a control-plane and GitOps repository pair so that every event reaches a workflow.

Where GitHub reads a workflow file from decides which branches need the caller workflow
(https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows):

* ``push`` runs the workflow file of the pushed commit: the control plane's ``main`` **and every environment
  branch** carry the control-plane caller (a push to an environment branch re-schedules that environment);
* ``status``, ``schedule``, ``workflow_dispatch`` and ``repository_dispatch`` run the file on the **default
  branch**: the control plane's default branch is ``main``, the GitOps repository's default branch carries the
  GitOps caller;
* ``pull_request`` reads the file from the PR's merge ref (the base branch merged with the head): every GitOps
  environment branch (a PR's base) carries the GitOps caller too.

The plan is computed from what is there (branches, files, default branches) and only then applied, so a second
run finds nothing to do, and ``--dry-run`` prints the same plan without writing. A file fleetflow did not write
(no :data:`MARKER` line) is never overwritten: it is reported as a conflict and left as it is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

import yaml
from ruamel.yaml import YAML

from fleetflow.clock import utc_now
from fleetflow.errors import ForgeError, InputError, Problem, Problems, UsageError
from fleetflow.forge.base import Forge
from fleetflow.forge.factory import GITHUB_NAME, GITHUB_URL
from fleetflow.forge.git import GitRepos
from fleetflow.model.controlplane import Resource, build_resource
from fleetflow.model.documents import Tree, read_tree
from fleetflow.model.references import check_environment_chain
from fleetflow.model.resources import EnvironmentSpec, unsafe_branch
from fleetflow.promotion.caller_workflows import calls_reusable
from fleetflow.promotion.context import Context
from fleetflow.results import Result

MAIN = "main"
WORKFLOWS_DIR = ".github/workflows"
WORKFLOW_FILE = f"{WORKFLOWS_DIR}/fleetflow.yml"
# the reusable workflows the callers call (.github/workflows/ of fleetflow's repository)
CONTROL_PLANE_REUSABLE = "fleetflow-control-plane.yml"
GITOPS_REUSABLE = "fleetflow-gitops.yml"
CONFIG_FILE = ".fleetflow.yaml"
MARKER = "# Written by fleetflow init: it updates this file while this line is here (delete the line to own it)."
STARTER_CHAIN: tuple[tuple[str, tuple[str, ...]], ...] = (("dev", ()), ("qa", ("dev",)), ("prod", ("qa",)))
EVENTS_DOC = (
    "https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows"
)

StepState = Literal["todo", "unchanged", "conflict"]


class Step(Result):
    """One thing init makes sure of. ``state``: ``todo`` (init writes it), ``unchanged`` (already so), or
    ``conflict`` (something else is there that init will not overwrite)."""

    repo: str
    branch: str
    what: str  # "branch", "file <path>", "default branch"
    state: StepState
    detail: str


class InitOutcome(Result):
    """What ``fleetflow init`` prints: the plan, and whether it was written."""

    control_plane: str
    gitops: str
    applied: bool
    changes: int
    conflicts: int
    steps: list[Step]


@dataclass
class BranchWrite:
    """The files init writes in one commit on one branch (``parent`` None: a new branch)."""

    url: str
    branch: str
    parent: str | None
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class InitPlan:
    control_plane: str
    gitops: str
    steps: list[Step] = field(default_factory=list)
    writes: list[BranchWrite] = field(default_factory=list)
    cp_url: str = ""  # the control plane's git URL (to name a write's repository)
    defaults: list[tuple[str, str]] = field(default_factory=list)  # (repo, branch) to make the default
    applied: bool = False

    @property
    def todo(self) -> list[Step]:
        return [s for s in self.steps if s.state == "todo"]

    @property
    def conflicts(self) -> list[Step]:
        return [s for s in self.steps if s.state == "conflict"]

    def outcome(self) -> InitOutcome:
        return InitOutcome(control_plane=self.control_plane, gitops=self.gitops, applied=self.applied,
                           changes=len(self.todo), conflicts=len(self.conflicts), steps=self.steps)


def flow_items(names: list[str]) -> str:
    """``names`` as the items of a YAML flow sequence, each read back as the very string: a plain ``1.10``, ``16.0``,
    ``2024``, ``null``, ``true`` or ``on`` is a number, null or boolean to a YAML reader, so a workflow listing the
    branch that way watched ``1.1`` (GitHub's runner reads ``16.0`` as ``16``: peter-evans/create-pull-request#3493) or
    failed to load. Those are single-quoted (a branch name here holds no quote: ``resources.BRANCH_NAME``); the others
    stay plain, so the files init wrote before 2026-11-29 are still the ones it writes."""
    return ", ".join(name if _plain_string(name) else f"'{name}'" for name in names)


def _plain_string(name: str) -> bool:
    """``name`` written plain in a flow sequence is read back as itself by YAML 1.1 (PyYAML: ``on``, ``yes``) and by
    YAML 1.2's core schema (ruamel.yaml: ``1e3``, ``0o17``)."""
    text = f"[{name}]"
    return bool(yaml.safe_load(text) == [name] and YAML(typ="safe", pure=True).load(text) == [name])


def control_plane_workflow(branches: list[str], ref: str) -> str:
    """The control-plane caller (as in examples/workflows/control-plane.yml), listing ``branches`` under push."""
    listed = flow_items(branches)
    return f"""{MARKER}
# On main (push to main; dispatches and the cron tick run the default branch's file) and on every environment
# branch (a push runs the workflow file of the pushed commit): {EVENTS_DOC}
# Needs the FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY secrets (docs/setup.md).
name: fleetflow

on:
  push:
    branches: [{listed}]
  # a pull request into these branches: the `Check the change` job validates it (make that check required)
  pull_request:
    branches: [{listed}]
  repository_dispatch:
    types: [fleetflow-promote]
  workflow_dispatch:
    inputs:
      environment:
        description: Environment to promote to (empty - the first environments)
        type: string
        required: false
      commit:
        description: Main commit (sha) to promote; an older one is a rollback
        type: string
        required: true
      release:
        description: Release an environment held by a rollback
        type: boolean
        default: false
  schedule:
    - cron: "7,22,37,52 * * * *"

permissions: {{}}

jobs:
  fleetflow:
    name: fleetflow
    # GITHUB_TOKEN only reads the repository, for the pull request check when no App token is there (forks)
    permissions:
      contents: read
    # zizmor: ignore[unpinned-uses] pin to the commit sha of the fleetflow release you adopt
    uses: fleetflow/fleetflow/.github/workflows/fleetflow-control-plane.yml@{ref}
    secrets:
      app-id: ${{{{ secrets.FLEETFLOW_APP_ID }}}}
      app-private-key: ${{{{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}}}
"""


def gitops_workflow(control_plane: str, branches: list[str], ref: str) -> str:
    """The GitOps caller (as in examples/workflows/gitops.yml)."""
    listed = flow_items(branches)
    return f"""{MARKER}
# On the default branch (status, schedule and workflow_dispatch run the default branch's file) and on every
# environment branch (pull_request reads the file from the PR's merge ref): {EVENTS_DOC}
# Needs the FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY secrets (docs/setup.md).
name: fleetflow

on:
  status:
  pull_request:
    types: [closed]
    branches: [{listed}]
  schedule:
    - cron: "*/15 * * * *"
  workflow_dispatch:

permissions: {{}}

jobs:
  fleetflow:
    name: fleetflow
    permissions: {{}}
    # zizmor: ignore[unpinned-uses] pin to the commit sha of the fleetflow release you adopt
    uses: fleetflow/fleetflow/.github/workflows/fleetflow-gitops.yml@{ref}
    with:
      control-plane: {control_plane}
    secrets:
      app-id: ${{{{ secrets.FLEETFLOW_APP_ID }}}}
      app-private-key: ${{{{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}}}
"""


def config_file(forge: str, control_plane: str) -> str:
    return f"{MARKER}\nforge: {forge}\ncontrolPlane: {control_plane}\n"


def starter_environment(name: str, after: tuple[str, ...]) -> str:
    listed = ", ".join(after)
    return f"""{MARKER}
apiVersion: fleetflow.dev/v1alpha1
kind: Environment
metadata:
  name: {name}
spec:
  after: [{listed}]
  branch: {name}
  pullRequest:
    autoMerge: {"false" if name == "prod" else "true"}
"""


def starter_gitops_repo(name: str, gitops: str) -> str:
    return f"""{MARKER}
apiVersion: fleetflow.dev/v1alpha1
kind: GitOpsRepo
metadata:
  name: {name}
spec:
  repo: {gitops}
  branch: {name}
  path: "."
"""


@dataclass(frozen=True)
class ChainEntry:
    environment: str
    branch: str  # control-plane branch
    gitops_branch: str


@contextmanager
def _exported(git: GitRepos, url: str, sha: str) -> Iterator[Path]:
    """A temporary folder holding the files of ``sha`` (read by the parser, then removed)."""
    with tempfile.TemporaryDirectory(prefix="fleetflow-init-") as tmp:
        yield git.export(url, sha, Path(tmp) / "tree")


def _chain(git: GitRepos, url: str, main_sha: str | None) -> tuple[list[ChainEntry], bool]:
    """The environments on main in promotion order, or the starter chain (True) when main does not exist yet or
    holds no YAML document."""
    if main_sha is None:
        return [ChainEntry(n, n, n) for n, _ in STARTER_CHAIN], True
    collected = Problems()
    envs: dict[str, Resource[EnvironmentSpec]] = {}
    with _exported(git, url, main_sha) as root:
        docs = read_tree(Tree(root, f"main@{main_sha[:12]}"), collected)
        if not docs and not collected:  # a main with no documents yet (GitHub's "Initial commit", a README)
            return [ChainEntry(n, n, n) for n, _ in STARTER_CHAIN], True
        for doc in docs:
            if doc.kind == "Environment":
                env = build_resource(doc, "main", collected)
                if env is not None and isinstance(env.spec, EnvironmentSpec):
                    envs[env.name] = cast(Resource[EnvironmentSpec], env)
    if not envs and not collected:
        collected.add(f"no Environment on main@{main_sha[:12]}", None,
                      "define the environment chain on main (kind: Environment), or start from an empty repository "
                      "and let fleetflow init write a starter chain")
    # the chain's own rules, as every fleet command checks them: until 2026-11-29 an Environment on branch main
    # made init plan main's workflow twice ('branches: [main, main, qa, prod]') and two on one branch wrote it twice
    order = check_environment_chain(envs, collected, main_branch=MAIN)
    collected.raise_if_any()
    return [ChainEntry(name, Context.env_branch(envs[name]), name) for name in order], False


def _no_chain_elsewhere(forge: Forge, git: GitRepos, repo: str, url: str) -> None:
    """Without ``main``, init writes a starter chain there and makes ``main`` the default branch: right for an empty
    repository or GitHub's "Initial commit" (a README), wrong when the default branch is another (``master``) that
    already holds the fleet. Until 2026-11-29 init sidelined such a branch without a word: a new ``main`` with
    dev → qa → prod, made the default. Now that is refused, with how to rename the branch."""
    current = _current_default(forge, repo)
    sha = git.fetch_branch(url, current) if current and current != MAIN else None
    if current is None or sha is None:
        return
    with _exported(git, url, sha) as root:
        docs = read_tree(Tree(root, f"{current}@{sha[:12]}"), Problems())
    if docs:
        raise InputError(Problem(
            f"{repo} has no {MAIN} branch, but its default branch {current} holds {len(docs)} YAML document(s) "
            f"(this is the first): init would write a starter chain on a new {MAIN} and make it the default",
            docs[0].location,
            f"fleetflow promotes from {MAIN}: rename {current} to {MAIN} (GitHub: Settings → Branches → rename; git: "
            f"git push origin {current}:{MAIN}), then run init again"))


def _gitops_branch(git: GitRepos, url: str, sha: str, fallback: str) -> str:
    """The GitOps branch the environment branch's GitOpsRepo names (its name when it names none)."""
    collected = Problems()
    with _exported(git, url, sha) as root:
        docs = read_tree(Tree(root, "env"), Problems())  # unreadable files name no GitOpsRepo: the fallback holds
        for doc in docs:
            if doc.kind == "GitOpsRepo":
                res = build_resource(doc, "env", collected)
                if res is not None:
                    return str(getattr(res.spec, "branch", None) or fallback)
    return fallback


def plan_init(forge: Forge, git: GitRepos, control_plane: str, gitops: str, *, ref: str = "v0") -> InitPlan:
    """What init would do: read both repositories, compare with what they should hold. Writes nothing."""
    plan = InitPlan(control_plane, gitops)
    cp_url, go_url = forge.git_url(control_plane), forge.git_url(gitops)
    if same_repository(cp_url, go_url):
        raise UsageError(Problem(
            f"--gitops {gitops} is the control-plane repository {control_plane}", None,
            "give the platform GitOps repository (a repository of its own): its environment branches hold the "
            "rendered output and the GitOps caller workflow, the control plane's branches of the same names hold "
            "the environments' files and the control-plane caller"))
    plan.cp_url = cp_url
    main_sha = git.fetch_branch(cp_url, MAIN)
    if main_sha is None:
        _no_chain_elsewhere(forge, git, control_plane, cp_url)
    chain, starter = _chain(git, cp_url, main_sha)
    cp_tips = git.fetch(cp_url, [c.branch for c in chain])
    chain = [ChainEntry(c.environment, c.branch,
                        _gitops_branch(git, cp_url, tip, c.gitops_branch) if (tip := cp_tips[c.branch]) else
                        c.gitops_branch) for c in chain]
    env_branches = [c.branch for c in chain]
    cp_flow = control_plane_workflow([MAIN, *env_branches], ref)
    gitops_branches = sorted({c.gitops_branch for c in chain})
    go_flow = gitops_workflow(control_plane, gitops_branches, ref)

    main_files = {WORKFLOW_FILE: cp_flow, CONFIG_FILE: config_file(forge.name, control_plane)}
    if starter:
        main_files |= {f".environments/{n}.yaml": starter_environment(n, a) for n, a in STARTER_CHAIN}
    _branch_files(plan, git, control_plane, cp_url, MAIN, main_sha, main_files, CONTROL_PLANE_REUSABLE)
    for entry in chain:
        files = {WORKFLOW_FILE: cp_flow}
        if cp_tips[entry.branch] is None:
            files["gitops-repo.yaml"] = starter_gitops_repo(entry.gitops_branch, gitops)
        _branch_files(plan, git, control_plane, cp_url, entry.branch, cp_tips[entry.branch], files,
                      CONTROL_PLANE_REUSABLE)

    go_default = _wanted_default(forge, git, gitops, go_url, set(gitops_branches))
    go_tips = git.fetch(go_url, [go_default, *gitops_branches])
    _branch_files(plan, git, gitops, go_url, go_default, go_tips[go_default], {WORKFLOW_FILE: go_flow},
                  GITOPS_REUSABLE)
    for branch in gitops_branches:
        _branch_files(plan, git, gitops, go_url, branch, go_tips[branch], {WORKFLOW_FILE: go_flow}, GITOPS_REUSABLE)

    for repo, branch in ((control_plane, MAIN), (gitops, go_default)):
        current = _current_default(forge, repo)
        if current == branch:
            plan.steps.append(Step(repo=repo, branch=branch, what="default branch", state="unchanged",
                                   detail=f"{branch} is the default branch"))
        else:
            plan.steps.append(Step(repo=repo, branch=branch, what="default branch", state="todo", detail=
                                   f"make {branch} the default branch (now {current or 'none'}): status, schedule "
                                   "and dispatch events run the default branch's workflow file"))
            plan.defaults.append((repo, branch))
    return plan


def callers(git: GitRepos, url: str, sha: str, reusable: str) -> list[str]:
    """The workflow files of ``sha`` (``.github/workflows/*.yml``, ``*.yaml``) with a job that calls fleetflow's
    reusable workflow ``reusable`` (``uses: <owner>/<repo>/.github/workflows/<reusable>@<ref>``, or a vendored
    ``./.github/workflows/<reusable>``), whatever their names: a caller copied from examples/workflows/ under a name
    of its own is one too. A file that is not YAML calls nothing."""
    return sorted(caller_files(git, url, sha, reusable))


def caller_files(git: GitRepos, url: str, sha: str, reusable: str) -> dict[str, str]:
    """:func:`callers` with each file's text."""
    listed = git.mirror(url).ls_tree(sha, [f"{WORKFLOWS_DIR}/"])
    found: dict[str, str] = {}
    for entry in listed:
        if entry.kind != "blob" or not entry.path.endswith((".yml", ".yaml")):
            continue
        text = git.read_file(url, sha, entry.path)
        if text and calls_reusable(text, reusable):
            found[entry.path] = text
    return found


def _current_default(forge: Forge, repo: str) -> str | None:
    try:
        return forge.default_branch(repo)
    except ForgeError:  # an empty repository may have no readable default branch yet
        return None


def _wanted_default(forge: Forge, git: GitRepos, repo: str, url: str, env_branches: set[str]) -> str:
    """The GitOps default branch: the current one when it exists and is no environment branch, else main."""
    current = _current_default(forge, repo)
    if current and current not in env_branches and git.fetch_branch(url, current) is not None:
        return current
    return MAIN


def _branch_files(plan: InitPlan, git: GitRepos, repo: str, url: str, branch: str, tip: str | None,
                  files: dict[str, str], reusable: str) -> None:
    """``files`` on ``branch``; the caller workflow (:data:`WORKFLOW_FILE`) is left out when the branch has no such
    file but a workflow of another name that calls ``reusable`` (two callers would run fleetflow twice per event)."""
    write = BranchWrite(url, branch, tip)
    if tip is None:
        plan.steps.append(Step(repo=repo, branch=branch, what="branch", state="todo", detail=f"create {branch}"))
    for path, content in files.items():
        current = git.read_file(url, tip, path) if tip else None
        if path == WORKFLOW_FILE and current is None and tip and (own := callers(git, url, tip, reusable)):
            plan.steps.append(Step(repo=repo, branch=branch, what=f"file {path}", state="unchanged", detail=
                                   f"not added: {', '.join(own)} calls {reusable} already (a second caller would "
                                   "run fleetflow twice for every event)"))
            continue
        if current is not None and current.rstrip("\n") == content.rstrip("\n"):
            plan.steps.append(Step(repo=repo, branch=branch, what=f"file {path}", state="unchanged",
                                   detail="as init writes it"))
        elif current is not None and current.rstrip("\n") == content.replace(f"{MARKER}\n", "", 1).rstrip("\n"):
            # the marker line deleted, as it says to own the file: until 2026-11-29 a conflict (exit 1) on every run
            plan.steps.append(Step(repo=repo, branch=branch, what=f"file {path}", state="unchanged",
                                   detail="yours (its init line deleted), as init would write it"))
        elif current is not None and MARKER not in current:
            plan.steps.append(Step(repo=repo, branch=branch, what=f"file {path}", state="conflict", detail=
                                   "exists and was not written by fleetflow init: left as it is; compare it with "
                                   "`fleetflow init --dry-run --format json` and merge by hand"))
        else:
            plan.steps.append(Step(repo=repo, branch=branch, what=f"file {path}", state="todo", detail=
                                   "update (written by init before)" if current is not None else "add"))
            write.files[path] = content
    if write.files:
        plan.writes.append(write)


def apply_init(plan: InitPlan, forge: Forge, git: GitRepos, clock: Callable[[], datetime] = utc_now,
               done: Callable[[str], None] = lambda _what: None) -> None:
    """Write the plan: one commit per branch (pushed only if the branch did not move meanwhile), then the default
    branches. A branch that moved makes the push fail: nothing is overwritten, run init again. ``done`` hears each
    write as it is made ("<repo>@<branch>", "<repo>: default branch <branch>"), so that a run stopped half-way can
    say what it wrote."""
    when = int(clock().timestamp())
    for write in plan.writes:
        sha = git.commit_files(write.url, write.parent, {p: c.encode() for p, c in write.files.items()},
                               f"fleetflow init: {', '.join(sorted(write.files))}", when)
        if sha is not None:
            git.push(write.url, sha, write.branch, write.parent)
            done(f"{_repo_of(plan, write.url)}@{write.branch}")
    for repo, branch in plan.defaults:
        forge.set_default_branch(repo, branch)
        done(f"{repo}: default branch {branch}")
    plan.applied = True


def _repo_of(plan: InitPlan, url: str) -> str:
    return plan.control_plane if url == plan.cp_url else plan.gitops


def same_repository(a: str, b: str) -> bool:
    """Whether two git URLs (or paths) name one repository: the same host and path, whatever the credentials in
    the URL, a trailing ``.git`` or ``/`` and the case (GitHub's owner and repository names are not case
    sensitive); paths after resolving them."""
    def key(url: str) -> tuple[str, str]:
        parts = urlsplit(url)
        if parts.scheme and parts.netloc:
            path = parts.path.rstrip("/").removesuffix(".git").casefold()
            return (parts.hostname or "").casefold(), path
        return "", os.path.realpath(url.removeprefix("file://"))
    return key(a) == key(b)


def conflicts_as_problems(plan: InitPlan) -> list[Problem]:
    return [Problem(f"{s.repo}@{s.branch}: {s.what} {s.detail}", None,
                    f"delete it or add the line '{MARKER}' to let init manage it") for s in plan.conflicts]


def require_repos(control_plane: str, gitops: str, ref: str = "v0", forge: str = "local") -> None:
    """The command line's repositories, and ``--ref``: it goes into the callers' ``uses: .../<file>@<ref>``, which
    names "a SHA, a release tag, or a branch name" (https://docs.github.com/en/actions/sharing-automations/
    reusing-workflows#calling-a-reusable-workflow). Until 2026-11-29 ``--ref ""`` wrote ``...@`` and a ref with a
    space or a line break wrote a workflow GitHub rejects (or another YAML key), exit 0."""
    problems = []
    why = unsafe_branch(ref)
    if why is not None:
        problems.append(Problem(f"--ref: {why.replace('branch name', 'ref')}", None,
                                "give the commit sha (or tag) of the fleetflow release you adopt, e.g. --ref 1a2b3c4"))
    if not control_plane:
        problems.append(Problem("no control-plane repository given", None,
                                "pass --control-plane (owner/name on GitHub, a path for the local forge)"))
    if not gitops:
        problems.append(Problem("no GitOps repository given", None, "pass --gitops (owner/name, or a path)"))
    for option, repo in (("--control-plane", control_plane), ("--gitops", gitops)):
        if forge == "github" and repo and not GITHUB_NAME.match(repo):  # a URL pasted from the browser, mostly
            named = GITHUB_URL.match(repo)
            problems.append(Problem(
                f"{option} {repo}: GitHub repositories are named owner/name here", None,
                f"pass {option} {named.group(1)}" if named else
                f"pass {option} owner/name (e.g. contoso/platform-gitops)"))
    if problems:  # the command line's (exit 2, as docs/design.md section 6 says); until 2026-11-29 exit 1
        raise UsageError(problems)
