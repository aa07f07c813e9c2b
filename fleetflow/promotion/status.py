"""``status``: where every environment stands, as text, JSON, or Markdown with a Mermaid chain for summaries."""

from __future__ import annotations

from pydantic import Field, computed_field

from fleetflow.errors import FleetflowError, GitError, InputError, Problem
from fleetflow.forge.base import PullRequest
from fleetflow.model.controlplane import Resource
from fleetflow.model.resources import GitOpsRepoSpec
from fleetflow.promotion.context import Context, chain_order, gitops_repo_at, head_branch, short, status_context
from fleetflow.promotion.merge_records import MergeRecord, read_record, record_refs, seen_records
from fleetflow.promotion.pin import PIN_FILE, past_pin, promote_command
from fleetflow.promotion.schedule import PullRequestLink
from fleetflow.report import render_report
from fleetflow.results import Result

UNREADABLE_GITOPS_HINT = ("check that the repo is at that address and that fleetflow's token may read it (a "
                          "workflow's GITHUB_TOKEN reaches only its own repository: docs/setup.md, step 1), or "
                          "correct the GitOpsRepo's repo")


class GateRecord(Result):
    state: str  # success | failure | pending | none
    description: str


class EnvironmentStatus(Result):
    """One environment in ``fleetflow status``."""

    name: str = Field(serialization_alias="environment")
    after: list[str]
    branch: str
    pinned: str | None = Field(serialization_alias="pinnedCommit")
    held: str | None
    gitops: str | None = Field(default=None, exclude=True)  # "repo branch", for people
    gitops_repo: str | None = None
    gitops_branch: str | None = None
    gitops_head: str | None = None
    pull_request: PullRequestLink | None = None
    # fleetflow's merge record for the open PR's head (merge_records): auto-merge on, or merged when green
    merge_record: MergeRecord | None = None
    gate_state: str = Field(default="none", exclude=True)  # success | failure | pending | none
    gate_description: str = Field(default="not promoted yet", exclude=True)
    last_success: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gate(self) -> GateRecord:
        return GateRecord(state=self.gate_state, description=self.gate_description)

    @property
    def release_command(self) -> str | None:
        """What ends the environment's hold, when it is held (every format of ``status`` shows it)."""
        return promote_command(self.name, release=True) if self.held else None


class FleetStatus(Result):
    """``fleetflow status``'s result: every environment, in promotion order."""

    environments: list[EnvironmentStatus]


def fleet_status(ctx: Context, history: int = 3, *, warn_pins: bool = False) -> list[EnvironmentStatus]:
    """Every environment's status line, in promotion order. With ``warn_pins`` (``fleetflow status``, whose
    report this is), a pin that does not read is also a warning at its line, through ``ctx.warn``; the commands
    that act on the environment already refuse with it, and the status under their job summary stays quiet."""
    main_tip = ctx.main_tip()
    envs = ctx.current_environments(main_tip)
    result: list[EnvironmentStatus] = []
    for name in chain_order(envs):
        env = envs[name]
        branch = ctx.env_branch(env)
        env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
        if env_sha is None:  # deleted, never made, or the Environment names a branch that is not there
            result.append(missing_branch(ctx, name, list(env.spec.after), branch, warn=warn_pins))
            continue
        try:
            pin = ctx.pin(env_sha, branch)
        except InputError as exc:  # a pin file that does not read: the environment still gets its status line
            result.append(EnvironmentStatus(name=name, after=list(env.spec.after), branch=branch, pinned=None,
                                            held=None, gate_description=f"no pin fleetflow can read: {exc}"))
            for problem in exc.problems() if warn_pins else ():  # each also a warning at its line
                ctx.warn(Problem(f"{name}: no pin fleetflow can read: {problem.message}", problem.location,
                                 problem.hint))
            continue
        pinned = None if pin.commit is None or not pin.commit.strip("0") else pin.commit  # 000…: never promoted
        entry = EnvironmentStatus(name=name, after=list(env.spec.after), branch=branch, pinned=pinned,
                                  held=pin.hold)
        result.append(entry)
        if env_sha is not None and not pin.present:  # a BaseRepo outside the pin file is a pin it cannot see
            elsewhere = ctx.base_repos_elsewhere(branch, env_sha)
            if elsewhere:
                where = elsewhere[0].location
                entry.gate_description = (f"no pin fleetflow can read: a BaseRepo is in {where}, outside "
                                          f"{PIN_FILE} at the root of {branch} (move it there)")
                if warn_pins:
                    ctx.warn(Problem(f"{name}: no pin fleetflow can read: a BaseRepo is outside {PIN_FILE}", where,
                                     f"move it to {PIN_FILE} at the root of {branch}"))
        if env_sha is None or pinned is None:
            continue
        statuses = {s.context: s for s in ctx.forge.statuses(ctx.control_plane, pinned)}
        gate = statuses.get(status_context(name))
        if gate is None:  # until 2026-11-29 "not promoted yet", next to the pin and, after reconcile, its open PR
            entry.gate_description = (f"pinned; no {status_context(name)} status on main@{short(pinned)} yet (a pin "
                                      "written by hand or by Kalypso, not by promote; or promote's post failed): "
                                      "check-rollout posts it once the PR is merged")
        else:
            entry.gate_state, entry.gate_description = gate.state, gate.description
            if gate.state == "success":
                entry.last_success = pinned
        if entry.last_success is None:
            entry.last_success = _previous_success(ctx, name, env_sha, pinned, history)
        gitops: Resource[GitOpsRepoSpec] | None
        try:
            if not on_main(ctx, pinned, main_tip):  # main force-pushed back past the pin: what reconcile says too
                entry.gate_description += (f" (main@{short(pinned)} is not on {ctx.main_branch}: rewritten since? "
                                           f"promote a commit of {ctx.main_branch})")
                gitops = gitops_repo_at(ctx, name, branch, env_sha)
            else:
                gitops = ctx.plane(pinned, branch, env_sha).gitops_repo()
        except FleetflowError as exc:  # a broken branch (bad input, git failure): said, and its GitOps line still shown
            entry.gate_description += f" (cannot read {branch}: {str(exc).splitlines()[0]})"
            try:  # the GitOpsRepo alone, as the gate reads it: the mistake stops the next schedule, not the gate
                gitops = gitops_repo_at(ctx, name, branch, env_sha)
            except FleetflowError:
                continue
        if gitops is None:
            continue
        g_branch = gitops.spec.branch or name
        entry.gitops = f"{gitops.spec.repo} {g_branch}"
        entry.gitops_repo, entry.gitops_branch = gitops.spec.repo, g_branch
        try:
            entry.gitops_head = ctx.git.fetch_branch(ctx.forge.git_url(gitops.spec.repo), g_branch)
        except GitError as exc:  # deleted, moved, or out of the token's reach: this line says so, the others show
            unreadable = f"cannot read the GitOps repo {gitops.spec.repo}: {exc.reason or str(exc).splitlines()[0]}"
            entry.gate_description += f" ({unreadable})"  # (until 2026-11-29 the whole status failed, exit 3)
            if warn_pins:
                ctx.warn(Problem(f"{name}: {unreadable}", gitops.location, UNREADABLE_GITOPS_HINT))
            continue
        if entry.gitops_head is None:  # deleted, or never made: the clusters have nothing to reconcile (until
            gone = f"the GitOps repo {gitops.spec.repo} has no branch {g_branch!r}"  # 2026-11-29 not a word)
            entry.gate_description += f" ({gone})"
            if warn_pins:
                ctx.warn(Problem(f"{name}: {gone}", gitops.location, "push it back at its last commit (the clusters "
                                 "reconcile it), or correct the GitOpsRepo's branch"))
        pr = ctx.forge.open_pull(gitops.spec.repo, head_branch(name), g_branch)
        if pr is None and entry.gate_state == "pending" and entry.gitops_head is not None:
            rejected = closed_by_hand(ctx, gitops, name, g_branch, pinned, entry.gitops_head)
            if rejected is not None:
                entry.gate_description += (f" (PR #{rejected.number} was closed without merging: nothing rolls "
                                           "out; promote or push the environment branch to propose it again)")
                if warn_pins:
                    ctx.warn(Problem(f"{name}: PR #{rejected.number} proposed main@{short(pinned)} and was closed "
                                     "without merging: the gate waits for a rollout that will not come", None,
                                     f"{promote_command(name, short(pinned))} proposes it "
                                     f"again (so does a push to {branch}); or promote another commit"))
        if pr is not None:
            entry.pull_request = PullRequestLink.of(pr)
            url = ctx.forge.git_url(gitops.spec.repo)
            record = read_record(seen_records(ctx.git.remote_refs(url, record_refs(name)), name), name)
            entry.merge_record = record if record is not None and record.head == pr.head_sha else None
    return result


def closed_by_hand(ctx: Context, gitops: Resource[GitOpsRepoSpec], name: str, g_branch: str, pinned: str,
                   g_head: str) -> PullRequest | None:
    """The PR that proposed the environment's pin and a person closed without merging, when its GitOps branch does
    not carry the pin: nothing rolls out until the pin or the environment branch changes (reconcile waits, saying
    so). Until 2026-11-29 ``status`` showed "pending: scheduled" and no PR, as for a rollout on its way. The newest
    closed PR of the head into the branch, unmerged, whose head is the head branch's tip (the rule reconcile
    uses; a head branch deleted since, by a person, is taken as that PR's). One request (the newest closed PRs of
    the head) and one read of the GitOps tip's state, only for a pending environment with no open PR."""
    carried = ctx.render_state(ctx.forge.git_url(gitops.spec.repo), g_head, gitops.spec.path)
    if carried is not None and carried.main_commit == pinned:  # merged (or closed as already there): rolling out
        return None
    newest = next((p for p in ctx.forge.pulls(gitops.spec.repo, head_branch(name), "closed", limit=5)
                   if p.base == g_branch), None)
    if newest is None or newest.merged:
        return None
    head = ctx.git.fetch_branch(ctx.forge.git_url(gitops.spec.repo), head_branch(name))
    return newest if head is None or head == newest.head_sha else None


def missing_branch(ctx: Context, name: str, after: list[str], branch: str, *, warn: bool) -> EnvironmentStatus:
    """The status line of an environment whose control-plane branch does not exist. Until 2026-11-29 it said "not
    promoted yet", next to a later environment that had rolled out: the branch was deleted (``git push --delete``,
    GitHub's "Automatically delete head branches" after a PR from it merged) or the Environment's ``branch``
    names one that is not there, and every promotion to it stops (reconcile and promote say so as a problem)."""
    said = f"branch {branch!r} does not exist in the control-plane repo {ctx.control_plane}"
    if warn:
        ctx.warn(Problem(f"{name}: {said}", None, f"push it back at its last commit, create it with the "
                         f"environment's files (fleetflow init does), or correct Environment {name}'s branch"))
    return EnvironmentStatus(name=name, after=after, branch=branch, pinned=None, held=None, gate_description=said)


def on_main(ctx: Context, commit: str, main_tip: str) -> bool:
    """Whether ``commit`` is on main (at ``main_tip``). Until 2026-11-29 a pin that main was force-pushed back
    past showed as "(cannot read dev: git ls-tree failed: fatal: not a tree object)": the mirror fetches main's
    history only, so the commit is not there to read."""
    sha = ctx.git.resolve(ctx.cp_url, commit)
    return sha is not None and ctx.git.is_ancestor(ctx.cp_url, sha, main_tip)


def _previous_success(ctx: Context, name: str, env_sha: str, current: str, limit: int) -> str | None:
    """The newest earlier pin of this environment whose rollout succeeded (looks at ``limit`` pins)."""
    seen = {current}
    for sha in ctx.git.log(ctx.cp_url, env_sha, PIN_FILE, limit=20):
        pin = past_pin(ctx.git.read_bytes(ctx.cp_url, sha, PIN_FILE)).commit
        if pin is None or pin in seen:
            continue
        seen.add(pin)
        if any(s.context == status_context(name) and s.state == "success"
               for s in ctx.forge.statuses(ctx.control_plane, pin)):
            return pin
        if len(seen) > limit:
            break
    return None


ICON = {"success": "✅", "failure": "❌", "pending": "⏳", "error": "❌", "none": "·"}
COLOUR = {
    "success": "fill:#d3f9d8,stroke:#2b8a3e",
    "failure": "fill:#ffe3e3,stroke:#c92a2a",
    "error": "fill:#ffe3e3,stroke:#c92a2a",
    "pending": "fill:#fff3bf,stroke:#e67700",
    "none": "fill:#f1f3f5,stroke:#868e96",
}


def _at(sha: str | None) -> str:
    return f"main@{short(sha)}" if sha else "-"


def as_text(entries: list[EnvironmentStatus]) -> str:
    """One line per environment; commits labelled (``main@…``); pinned, gate, PR, last success, description."""
    width = max([len("environment"), *(len(e.name) for e in entries)]) + 2
    lines = [f"{'environment':<{width}}{'pinned':<19} {'gate':<9} {'pull request':<14} {'last success':<19} "
             "description"]
    for e in entries:
        pr = f"#{e.pull_request.number} open" if e.pull_request else "-"
        if e.pull_request and e.merge_record:
            pr = f"#{e.pull_request.number} {'auto-merge' if e.merge_record.kind == 'auto-merge' else 'on green'}"
        held = f" [held: {e.held}]" if e.held else ""
        lines.append(f"{e.name:<{width}}{_at(e.pinned):<19} {e.gate_state:<9} {pr:<14} {_at(e.last_success):<19} "
                     f"{e.gate_description}{held}")
    lines.extend(f"{e.name} is held: release it with: {e.release_command}" for e in entries if e.held)
    return "\n".join(lines)


def as_markdown(entries: list[EnvironmentStatus]) -> str:
    """The chain as a Mermaid graph coloured by gate state, then a table (report template ``status.md.j2``)."""
    return render_report("status.md.j2", entries=entries, icons=ICON, styles=COLOUR)
