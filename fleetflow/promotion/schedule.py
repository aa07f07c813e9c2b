"""``schedule``: render one environment at its pinned ``main`` commit and keep its one fleetflow PR up to date.

Renders ``main@pin`` + the environment branch incrementally against the GitOps branch, commits the result on
``fleetflow/<env>`` as git objects built on the GitOps branch's tree (:mod:`fleetflow.promotion.gitops`: no
checkout, no folder; deterministic commit: same inputs, same sha), and creates, updates, closes or leaves the
PR. A new ``main`` commit always gives a PR (its state.json changes); an environment-branch commit that changes no
rendered file gives none, and an open PR that became empty is closed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import Field, computed_field

from fleetflow.errors import ForgeError, GateError, Problem, Problems, shown_path
from fleetflow.forge.base import PullRequest, reviewer_key
from fleetflow.forge.git import CommitInfo, PushRejected, retry_races
from fleetflow.model.controlplane import Resource
from fleetflow.model.resources import EnvironmentSpec
from fleetflow.promotion import merging
from fleetflow.promotion.context import (
    Context,
    Pinned,
    doctor_names_the_rule,
    head_branch,
    pinned_to_render,
    refuse_foreign_state,
    short,
)
from fleetflow.promotion.fullplan import compare_url, plan_header, plan_path, write_plan
from fleetflow.promotion.gitops import (
    GitOpsTree,
    WrittenCommit,
    clean_root,
    hand_edits,
    kustomization_warnings,
    unreadable_state,
    write_commit,
)
from fleetflow.promotion.merging import MergeOutcome
from fleetflow.promotion.prbody import BODY_LIMIT, PullRequestFacts, body, title, with_added_text
from fleetflow.render.diff import diff_chunks
from fleetflow.render.incremental import ExpectedCluster, RenderState, earlier_format, is_state_file
from fleetflow.render.pipeline import Changes, Meta, render_environment
from fleetflow.results import Result

# superseded: a stitch whose shards were rendered from inputs that moved since (it writes nothing; a newer run
# stitches the new ones)
# rejected: the commit is what a PR a person closed without merging proposed; nothing opened (an automatic run)
Operation = Literal["created", "updated", "unchanged", "closed", "none", "queued", "merged", "superseded", "rejected"]


class PullRequestLink(Result):
    """A pull request as results show it (the same shape in ``schedule``, ``promote`` and ``status``)."""

    number: int
    url: str
    state: str
    title: str

    @classmethod
    def of(cls, pr: PullRequest | None) -> PullRequestLink | None:
        return None if pr is None else cls(number=pr.number, url=pr.url, state=pr.state, title=pr.title)


class ScheduleOutcome(Result):
    """``fleetflow schedule``'s result: what happened to the environment's one fleetflow PR."""

    environment: str
    operation: Operation
    main_commit: str
    env_commit: str
    message: str
    pull: PullRequest | None = Field(default=None, exclude=True)  # the forge's view, for the steps that follow
    changes: Changes = Field(default_factory=Changes)
    gitops_commit: str | None = None
    plan_file: str | None = None  # the full plan (summary + whole diff), when asked for (--plan-dir)
    merge: MergeOutcome | None = Field(default=None, exclude=True)  # the merge step's result (autoMerge)
    # what the render warned of (a selector that selects nothing, a state shard that does not read): the CLI's
    # warnings, as ``render`` and ``validate`` give them
    warnings: list[Problem] = Field(default_factory=list, exclude=True)
    # files in the folders the commit wrote to that fleetflow did not write: kept (``render`` lists them too)
    foreign: list[str] = Field(default_factory=list)
    # files fleetflow wrote that were changed on the GitOps branch after its commit (by hand): the commit puts
    # back what fleetflow renders (gitops.hand_edits)
    restored: list[str] = Field(default_factory=list)
    said: bool = Field(default=False, exclude=True)  # the run's narration has its message (Context.say)
    # the PR a person closed without merging that proposed this same commit (operation ``rejected``: not proposed
    # again; ``created``: proposed again, as a person asked by running schedule or promote)
    rejected: PullRequestLink | None = None

    @computed_field(alias="pullRequest")  # type: ignore[prop-decorator]
    @property
    def pull_request(self) -> PullRequestLink | None:
        return PullRequestLink.of(self.pull)


def named_warnings(outcomes: Iterable[ScheduleOutcome | None]) -> list[Problem]:
    """The render's warnings of the schedules a ``promote`` or ``reconcile`` ran, each once and led by its
    environment (one run schedules several; a state shard's warning names a file of that environment's folder)."""
    named = (Problem(f"{o.environment}: {w.message}", w.location, w.hint)
             for o in outcomes if o is not None for w in o.warnings)
    return list(dict.fromkeys(named))


def schedule_environment(ctx: Context, environment: str, rendered: Rendered | None = None, *,
                         propose_rejected: bool = False, tip: str | None = None) -> ScheduleOutcome:
    """Bounded retries when a concurrent run pushes the same head branch first. ``rendered``: a render already
    made (promote's, of the pin it just pushed), published on the first try; a retry renders again.
    ``propose_rejected``: open a PR for the commit even when a person closed one that proposed it without merging
    (a person ran ``schedule`` or ``promote``); otherwise that rejection stands (operation ``rejected``).
    ``tip``: main's tip as the caller fetched it (``promote``: once per promotion)."""
    first = [rendered] if rendered is not None else []
    return retry_races(lambda: publish(ctx, environment,
                                       first.pop() if first else render_commit(ctx, environment, None, tip),
                                       propose_rejected=propose_rejected), 3)


@dataclass
class Rendered:
    """The GitOps commit a schedule proposes (not pushed yet) and what its PR says about it."""

    at: Pinned
    heads: dict[str, str | None]  # the GitOps branch and the head branch, as fetched
    previous: RenderState | None  # the state on the GitOps branch
    written: WrittenCommit
    changes: Changes
    clusters: list[ExpectedCluster]
    diff: Callable[[], Iterator[str]]  # the commit's diff, a file at a time, read only as far as it is iterated
    warnings: list[Problem]  # the render's
    # files fleetflow wrote that were changed on the GitOps branch after its commit, which this commit puts back
    restored: list[str] = field(default_factory=list)


def commit_message(ctx: Context, at: Pinned) -> tuple[str, int]:
    """The GitOps commit's message and date: from the inputs, so the same inputs give the same commit."""
    when = max(ctx.git.commit_time(ctx.cp_url, at.main_sha), ctx.git.commit_time(ctx.cp_url, at.env_sha))
    return f"fleetflow: {at.name} <- main@{short(at.main_sha)} ({at.branch}@{short(at.env_sha)})", when


def render_commit(ctx: Context, environment: str, env_sha: str | None = None, tip: str | None = None) -> Rendered:
    """Render the environment at its pin against the GitOps branch and write the commit (nothing pushed).
    ``env_sha``: the environment branch at this commit (of the mirror, maybe not pushed yet), not at its head;
    ``tip``: main's tip as the caller fetched it."""
    at = pinned_to_render(ctx, environment, env_sha, tip)
    heads = at.fetch_gitops(ctx.git)
    if env_sha is None:
        refuse_moved_branch(ctx, at)
    unpushed = " (the new pin, pushed once this renders)" if env_sha is not None else ""
    ctx.starting(f"{environment}: rendering main@{short(at.main_sha)} + {at.branch}@{short(at.env_sha)}{unpushed} "
                 f"into {at.gitops_repo} (branch {at.gitops_branch})")
    tree = GitOpsTree(ctx.git.mirror(at.gitops_url), heads[at.gitops_branch], clean_root(at.gitops_path))
    previous = tree.read_state()
    refuse_foreign_state(at, previous)
    edited = hand_edits(tree, previous)
    if previous is not None and edited.paths:
        previous.render_again(edited.assignments, edited.reporters)
    result = render_environment(at.plane, environment, previous=previous, meta=Meta(at.main_sha, at.env_sha))
    message, when = commit_message(ctx, at)
    written = write_commit(tree, result, previous, message, ctx.git.identity, when)
    restored = edited.put_back(written.changed)
    return Rendered(at, heads, previous, written, result.changes, result.state.clusters,
                    lambda: diff_chunks(tree, result, written.owned, previous, written.index),
                    [*unreadable_state(tree), *edited.warning(tree, restored), *result.warnings,
                     *kustomization_warnings(tree, result, written.owned)],
                    [shown_path(p) for p in restored])


def refuse_moved_branch(ctx: Context, at: Pinned) -> None:
    """PushRejected (:func:`schedule_environment` renders again) when the environment branch moved after ``at`` read
    it. Call it after reading the GitOps branches: a run that the newer commit's push started and that pushed the
    head before that read left a head the lease of this run's push would not protect (it read that head), so this
    run would replace the newer commit's render with the older one's, and describe the older commit in the PR.
    Until 2026-11-29 it did (a ``schedule`` by hand while the workflow ran; the plane loads between the two reads,
    seconds on a big fleet). One ``git ls-remote`` of the control-plane repository."""
    ref = f"refs/heads/{at.branch}"
    now = ctx.git.remote_refs(ctx.cp_url, [ref]).get(ref)
    if now != at.env_sha:
        raise PushRejected(f"{at.branch} moved from {short(at.env_sha)} to {short(now) if now else 'nothing'} "
                           f"while {at.name} was being rendered; render again", command="ls-remote")


def _first(chunks: Iterator[str], limit: int) -> str:
    """The chunks up to and including the one that passes ``limit`` characters."""
    taken: list[str] = []
    size = 0
    for text in chunks:
        taken.append(text)
        size += len(text)
        if size > limit:
            break
    return "".join(taken)


def publish(ctx: Context, environment: str, rendered: Rendered, *, propose_rejected: bool = False) -> ScheduleOutcome:
    """Create, update, close or leave the environment's one PR for the ``rendered`` commit (pushed here).
    ``propose_rejected``: :func:`schedule_environment`."""
    at, heads, previous, written = rendered.at, rendered.heads, rendered.previous, rendered.written
    envs, env_at_pin, branch, env_sha, main_sha = at.envs, at.env_at_pin, at.branch, at.env_sha, at.main_sha
    g_repo, g_branch, g_path, g_url = at.gitops_repo, at.gitops_branch, at.gitops_path, at.gitops_url
    head = head_branch(environment)
    policy = env_at_pin.spec
    rendered_change = not all(is_state_file(p) for p in written.changed)
    new_main = previous is None or previous.main_commit != main_sha
    outcome = ScheduleOutcome(environment=environment, operation="none", main_commit=main_sha, env_commit=env_sha,
                              message="", changes=rendered.changes, warnings=rendered.warnings)
    open_pr = _open_pull(ctx, environment, g_repo, head, g_branch)
    if not (rendered_change or new_main):
        if open_pr is not None:
            dropped = hand_commits(ctx, rendered, head)
            closed = ctx.forge.update_pull(g_repo, open_pr.number, state="closed")
            outcome.operation, outcome.pull = "closed", closed
            outcome.message = f"PR #{open_pr.number} closed: {g_branch} already has everything it proposed"
            if dropped:
                outcome.message += f" (with {len(dropped)} commit(s) a person pushed to {head}, not merged)"
                outcome.warnings.append(_hand_commits_problem(
                    open_pr.number, head, f"closed with the PR (not in {g_branch})",
                    f"closes its PR when {g_branch} has the render", branch, dropped))
        else:
            outcome.message = f"nothing to change: {g_branch} already has main@{short(main_sha)}"
        return outcome
    new_sha = written.commit
    if new_sha is None:  # defensive: a needed change always changes state.json
        outcome.message = "nothing to change"
        return outcome
    if ctx.plan_dir is not None:  # one pass: the whole diff streams to the file, the PR keeps its first part
        path = plan_path(ctx.plan_dir, environment)
        header = plan_header(environment, main_sha, branch, env_sha, rendered.changes)
        diff = write_plan(path, header, rendered.diff(), BODY_LIMIT)
        outcome.plan_file = str(path)
    else:
        diff = _first(rendered.diff(), BODY_LIMIT)
    outcome.gitops_commit = new_sha
    outcome.foreign = [shown_path(p) for p in written.owned.foreign]
    outcome.restored = rendered.restored
    facts = PullRequestFacts(
        environment=environment,
        main_commit=main_sha,
        env_branch=branch,
        env_commit=env_sha,
        previous_main_commit=previous.main_commit if previous else None,
        changes=rendered.changes,
        clusters=rendered.clusters,
        rollout=policy.rollout,
        next_environments=sorted(n for n, e in envs.items() if environment in e.spec.after),
        diff=diff,
        plan_hint=f"fleetflow plan --environment {environment}",
        plan_url=ctx.run_url if outcome.plan_file else None,
        compare_url=(compare_url(ctx.server_url, g_repo, g_branch, head)
                     if ctx.server_url and ctx.forge.name == "github" else None),
        earlier_state_format=earlier_format(previous),
        kept=outcome.foreign,
        restored=outcome.restored,
    )
    pr_title, pr_body = title(facts), body(facts)
    if open_pr is not None:
        current = open_pr.head_sha == new_sha or heads[head] == new_sha  # its head is this commit already
        if current and _describes(open_pr, pr_title, main_sha, env_sha):
            outcome.operation, outcome.pull = "unchanged", open_pr
            outcome.message = f"PR #{open_pr.number} already proposes exactly this"
            _ask_and_label(ctx, g_repo, env_at_pin, outcome)
            return _maybe_merge(ctx, g_repo, policy.pull_request.auto_merge, outcome)
        if policy.concurrency == "queue" and not current:
            queued = ctx.render_state(g_url, heads[head], g_path)
            queued_main = queued.main_commit if queued is not None else None
            if queued_main is not None and queued_main != main_sha:
                outcome.operation, outcome.pull = "queued", open_pr
                outcome.message = (
                    f"PR #{open_pr.number} for main@{short(queued_main)} stays open (concurrency: queue); "
                    f"main@{short(main_sha)} follows once it is merged or closed"
                )
                return outcome
        # The title and description first, then the head: a run stopped between them leaves a head that does not
        # propose the pin, which the next run (reconcile too, which waits on a PR whose head proposes it without
        # reading the PR) finds with git alone and finishes.
        pr = ctx.forge.update_pull(g_repo, open_pr.number, title=pr_title, body=with_added_text(open_pr.body, pr_body))
        outcome.operation, outcome.pull = "updated", pr
        if current:  # a person edited its title, or a run of an earlier version pushed the head and stopped
            outcome.message = f"PR #{pr.number} updated to main@{short(main_sha)} (its description was behind its head)"
        else:
            ctx.say(f"{environment}: PR #{pr.number} describes main@{short(main_sha)} now; its head follows")
            dropped = hand_commits(ctx, rendered, head)
            _push_head(ctx, rendered, head, narrate=False)
            outcome.pull = pr = replace(pr, head_sha=new_sha)  # as the forge has it now (the merge step reads it)
            outcome.message = f"PR #{pr.number} updated to main@{short(main_sha)}"
            if dropped:
                outcome.message += f" (replacing {len(dropped)} commit(s) a person pushed to {head})"
                outcome.warnings.append(_hand_commits_problem(
                    pr.number, head, f"replaced by the render of main@{short(main_sha)} + {branch}@{short(env_sha)}",
                    "replaces it on every schedule", branch, dropped))
    else:
        rejection = rejected_pull(ctx, g_repo, head, g_branch, new_sha)
        outcome.rejected = PullRequestLink.of(rejection)
        if rejection is not None and not propose_rejected:
            outcome.operation, outcome.pull = "rejected", rejection
            outcome.message = (
                f"PR #{rejection.number} proposed main@{short(main_sha)} + {branch}@{short(env_sha)} and was closed "
                f"without merging: not proposed again (a person rejected it); `fleetflow schedule --environment "
                f"{environment}` proposes it again, a new pin or a change of {branch} proposes anew")
            ctx.say(f"{environment}: {outcome.message}")
            outcome.said = True
            return outcome
        _push_head(ctx, rendered, head)
        pr = ctx.forge.create_pull(g_repo, head, g_branch, pr_title, pr_body)
        outcome.operation, outcome.pull = "created", pr
        outcome.message = f"PR #{pr.number} opened: main@{short(main_sha)} to {environment}"
        if rejection is not None:
            outcome.message += (f" (PR #{rejection.number}, which proposed the same and was closed without merging, "
                                "is not re-opened: this one proposes it again, as asked)")
    ctx.say(f"{environment}: {outcome.message}")  # said before the labels and reviewers, which may fail after it
    outcome.said = True
    _ask_and_label(ctx, g_repo, env_at_pin, outcome)
    return _maybe_merge(ctx, g_repo, policy.pull_request.auto_merge, outcome)


def _open_pull(ctx: Context, environment: str, repo: str, head: str, base: str) -> PullRequest | None:
    """The open PR from ``head`` into ``base``; a GateError when one from ``head`` is open into another branch.
    GitHub lets a person change an open PR's base ("Changing the base branch of a pull request"; REST "Update a pull
    request": ``base``) and keeps it open beside a new PR from the same head into another base (it refuses only a
    second open PR for the same head and base: cli/cli#686 and #718). Until 2026-11-29 schedule then opened a second
    PR into ``base`` and pushed the new render to the head both propose: the PR a person retargeted proposed this
    environment's manifests into the other branch, one merge away from its clusters. One request, as before (the
    open PRs of ``head``)."""
    found = ctx.forge.pulls(repo, head, "open")
    for pr in found:
        if pr.base != base:
            raise GateError(
                f"{environment}: PR #{pr.number} from {head} is open into {pr.base}, not {base} (its base branch was "
                f"changed by hand): merging it would put {environment}'s render into {pr.base}, so nothing is "
                f"pushed to {head} while it is open. Change its base back to {base} (Edit, next to its title), or "
                "close it; then run again")
    return next((pr for pr in found if pr.base == base), None)


REJECTIONS_READ = 10  # the newest closed PRs of a head looked at for a rejection (one request on GitHub)


def _hand_commits_problem(number: int, head: str, fate: str, writes: str, branch: str,
                          dropped: list[CommitInfo]) -> Problem:
    """The warning naming the commits a person pushed to the PR's ``head`` and what became of them (``fate``)."""
    return Problem(f"PR #{number}: {head} had commits fleetflow did not write, {fate}: {_listed(dropped)}", None,
                   f"fleetflow writes {head} from the control plane and {writes}: make the change on the environment "
                   f"branch {branch} (or in main's templates) so each render keeps it")


def rejected_pull(ctx: Context, repo: str, head: str, base: str, commit: str) -> PullRequest | None:
    """The PR from ``head`` into ``base`` that a person closed without merging while it proposed ``commit`` (the
    render is deterministic: the same pin, environment branch and GitOps branch give the same commit, also after
    the head branch was deleted), unless a newer one proposing it was merged. One request (the newest closed PRs
    of ``head``: a rejection is among the last proposals), made only before opening a PR."""
    for pr in ctx.forge.pulls(repo, head, "closed", limit=REJECTIONS_READ):  # newest first
        if pr.base == base and pr.head_sha == commit:
            return None if pr.merged else pr
    return None


def hand_commits(ctx: Context, rendered: Rendered, head: str) -> list[CommitInfo]:
    """The commits on the head branch that pushing the rendered commit drops (or closing its PR leaves unmerged, when
    there is no rendered commit) and that fleetflow did not write (its commits say ``fleetflow: <env> <- ...``,
    :func:`commit_message`): a person's, pushed to the PR by hand. A merge commit (GitHub's "Update branch" brings
    the base in) is not counted: the render is built on the base. One ``git log`` in the mirror, only when an open
    PR's head moves or the PR is closed. The close path named none until 2026-11-29."""
    at, old, new = rendered.at, rendered.heads[head], rendered.written.commit
    if old is None:
        return []
    tip = rendered.heads[at.gitops_branch]
    revs = [old, *([f"^{new}"] if new else []), *([f"^{tip}"] if tip else [])]
    ours = f"fleetflow: {at.name} <- "
    return [c for c in ctx.git.commits(at.gitops_url, revs, limit=50, no_merges=True)
            if not c.subject.startswith(ours)]


def _listed(commits: list[CommitInfo]) -> str:
    return ", ".join(f"{short(c.sha)} {c.subject!r} by {c.author}" for c in commits)


def _describes(pr: PullRequest, title: str, main_sha: str, env_sha: str) -> bool:
    """The PR's title is the one for this commit and its description names both commits it was rendered from. A
    title a person edited, or a run of an earlier version that pushed the head and stopped before the PR, leaves it
    not so (:func:`publish` then updates it); words a person added to the description stay while it is right."""
    return pr.title == title and main_sha in pr.body and env_sha in pr.body


def _push_head(ctx: Context, rendered: Rendered, head: str, *, narrate: bool = True) -> None:
    """Push the rendered commit to the head branch and, when that moved it, say so (``narrate``): a failure after
    it (opening the PR) then ends "the steps finished before it are printed above", not "before any step"."""
    at, new_sha, old = rendered.at, rendered.written.commit, rendered.heads[head]
    assert new_sha is not None
    with doctor_names_the_rule(f"pushing {head} to {at.gitops_repo}", "push-rules"):
        ctx.git.push(at.gitops_url, new_sha, head, old)
    if old != new_sha and narrate:
        ctx.say(f"{at.name}: pushed {head}@{short(new_sha)}, the commit its PR proposes")


def _ask_and_label(ctx: Context, repo: str, env: Resource[EnvironmentSpec], outcome: ScheduleOutcome) -> None:
    """:func:`ask_and_label` on the PR the run opened or found; a refused review request is one of its warnings."""
    if outcome.pull is not None:
        refused = Problems()
        ask_and_label(ctx, repo, outcome.environment, env, outcome.pull, refused,
                      opened=outcome.operation == "created")
        outcome.warnings.extend(refused)


def ask_and_label(ctx: Context, repo: str, environment: str, env: Resource[EnvironmentSpec], pr: PullRequest,
                  warnings: Problems, *, opened: bool = False) -> bool:
    """The Environment's reviewers and labels on an open PR: all of them on the PR just ``opened``; on one found
    open, those a run before did not get to (it stopped first, or the policy named them since), each said so the
    log tells what this run wrote. Whether it wrote; the review requests the forge refused
    (:func:`_request_missing_reviewers`) go to ``warnings``."""
    policy = env.spec.pull_request
    asked = _request_missing_reviewers(ctx, repo, pr, env, warnings, opened=opened)
    if asked and not opened:
        ctx.say(f"{environment}: PR #{pr.number}: review requested from {', '.join(asked)} "
                "(not asked on this PR yet: a run before stopped first, or the policy named them since)")
    added = add_missing_labels(ctx, repo, pr, policy.labels, opened=opened)
    if added and not opened:
        ctx.say(f"{environment}: PR #{pr.number} labelled {', '.join(added)} (a run before stopped before its labels)")
    return bool(asked or added)


def _request_missing_reviewers(ctx: Context, repo: str, pr: PullRequest, env: Resource[EnvironmentSpec],
                               warnings: Problems, *, opened: bool) -> list[str]:
    """Request the Environment's reviewers of an open PR: on the PR just ``opened``, all of them; on one found
    open, those no review was ever requested from (a run before stopped between opening it and asking, or the
    policy named them since). A reviewer still asked (in the PR as read: no request), or one asked before who has
    reviewed since or whom a person took off, is not asked again: only then are the forge's records read (GitHub:
    a request per hundred of the PR's issue events). The reviewers asked; a refusal goes to ``warnings``.

    A request the forge refuses as such (422: GitHub asks only collaborators with write access, and teams the
    credentials can see) is a warning at the Environment's ``reviewers`` and asks no one: it would fail the same
    on every run, and stop the labels and the merge step after it."""
    wanted = list(dict.fromkeys(env.spec.pull_request.reviewers))
    if pr.state != "open" or not wanted:
        return []
    if not opened:
        waiting = set(pr.review_requests) | {pr.author.lower()}
        wanted = [r for r in wanted if reviewer_key(r) not in waiting]
        if wanted:
            made = ctx.forge.review_requests_made(repo, pr.number)
            wanted = [r for r in wanted if reviewer_key(r) not in made]
    if not wanted:
        return []
    try:
        ctx.forge.request_reviewers(repo, pr.number, wanted)
    except ForgeError as exc:
        if exc.request is None or exc.request.status != 422:
            raise
        warnings.add(f"PR #{pr.number}: no review requested from {', '.join(wanted)}: {exc}",
                     env.where("spec", "pullRequest", "reviewers"),
                     "a reviewer must be a collaborator with write access to the GitOps repository, or a "
                     "team that can see it; fix spec.pullRequest.reviewers")
        return []
    return wanted


def add_missing_labels(ctx: Context, repo: str, pr: PullRequest, labels: Iterable[str], *,
                       opened: bool = False) -> list[str]:
    """Add the policy's labels an open PR lacks: the PR just ``opened`` (all of them), or one a run before left
    without them (its labels failed after the PR was opened, or the policy named a label since). A label added by
    hand stays; one a person took off is not added again (until 2026-11-29 every later run put it back). The labels
    added."""
    have = set() if opened else {label.lower() for label in pr.labels}
    missing = [label for label in labels if label.lower() not in have]
    if pr.state == "open" and missing and not opened:  # one a person took off stays off (one request, only now)
        removed = ctx.forge.labels_removed(repo, pr.number)
        missing = [label for label in missing if label.lower() not in removed]
    if pr.state == "open" and missing:
        ctx.forge.add_labels(repo, pr.number, missing)
        return missing
    return []


def _maybe_merge(ctx: Context, repo: str, auto_merge: bool, outcome: ScheduleOutcome) -> ScheduleOutcome:
    """autoMerge: the merge step (fleetflow.promotion.merging): the forge's auto-merge, or a merge once every check
    on the head is green; otherwise the PR waits for a later run."""
    pr = outcome.pull
    if not auto_merge or pr is None or pr.state != "open":
        return outcome
    result = merging.merge_if_due(ctx.forge, repo, pr, auto_merge=True)
    outcome.merge = result
    if result.state == "merged":
        outcome.operation = "merged"
        outcome.message += "; merged (autoMerge: every check green)"
    elif result.state == "auto-merge":
        outcome.message += f"; auto-merge on: {ctx.forge.name} merges it once the branch rules are met"
    else:
        outcome.message += f"; auto-merge waits: {result.reason}"
    ctx.say(f"{outcome.environment}: {result.message}")
    return outcome


__all__ = ["PushRejected", "Rendered", "ScheduleOutcome", "add_missing_labels", "ask_and_label", "commit_message",
           "publish", "refuse_moved_branch", "render_commit", "schedule_environment"]
