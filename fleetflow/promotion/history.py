"""The promotion history of every environment, read from what fleetflow already records (nothing new is written):

- the pin commits on the environment branch (``git log -- base-repo.yaml``): which ``main`` commit, and the hold
  a rollback sets;
- the ``main`` commits themselves: subject, author, and when they landed on ``main`` (committer date);
- every ``fleetflow/<env>`` status posted on those ``main`` commits (``Forge.status_history``): the ``pending``
  "scheduled" post that opens a promotion is when it was pinned, the gate's ``success``/``failure`` is when and
  how it was decided;
- the first-parent history of the environment's GitOps branch: the first commit after the pin whose message
  names ``main@<sha>`` (a merge commit carries the PR title, a squash commit the title too) is when it was merged.

Cost, for the last ``limit`` promotions of each environment: git on the mirrors fleetflow already keeps (the
environment branches, ``main`` and the GitOps branches; no work tree), and one forge request per distinct
``main`` commit (a commit's statuses fit in one page of 100), shared by every environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from fleetflow.delivery.metrics import MetricsReport, compute, last_environments
from fleetflow.delivery.records import Outcome, Promotion
from fleetflow.errors import GitError, InputError, Problem
from fleetflow.forge.base import CommitStatus
from fleetflow.forge.git import CommitInfo
from fleetflow.model.controlplane import Resource
from fleetflow.model.resources import EnvironmentSpec
from fleetflow.promotion.context import SCHEDULED, Context, chain_order, head_branch, short, status_context
from fleetflow.promotion.pin import PIN_FILE, PIN_MESSAGE, Pin, past_pin
from fleetflow.promotion.status import UNREADABLE_GITOPS_HINT

DEFAULT_LIMIT = 50
_MAIN_REF = re.compile(r"main@([0-9a-f]{7,40})\b")


@dataclass
class History:
    order: list[str]  # environments in promotion order
    after: dict[str, list[str]]
    promotions: dict[str, list[Promotion]]  # per environment, oldest first, at most ``limit``
    status_reads: int = 0  # forge reads of a commit's status history
    gitops: dict[str, tuple[str, str]] = field(default_factory=dict)  # environment → (GitOps repo, branch)
    # main commit → the last environments of the chain at that commit (of those read), where they differ from now's
    sinks_at: dict[str, list[str]] = field(default_factory=dict)

    def all(self) -> list[Promotion]:
        return [p for name in self.order for p in self.promotions.get(name, [])]

    def metrics(self, now: datetime, since: datetime | None = None) -> MetricsReport:
        """The delivery metrics of this history (:func:`fleetflow.delivery.metrics.compute`), each commit counted
        through the chain as it was at that commit (``sinks_at``)."""
        return compute(self.all(), self.after, now, since, self.sinks_at)


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def is_rollback(pin: Pin) -> bool:
    """promote writes ``rollback from <old> to <new>`` when it pins an older commit."""
    return bool(pin.hold and pin.commit and pin.hold.startswith("rollback") and pin.hold.endswith(short(pin.commit)))


def pins(ctx: Context, env_sha: str, limit: int) -> list[tuple[str, Pin]]:
    """The pins of an environment branch, oldest first: (pin commit, pin), one per change of the pinned commit
    (a release, which only drops the hold, is not a promotion)."""
    found: list[tuple[str, Pin]] = []
    previous: Pin | None = None
    for sha in reversed(ctx.git.log(ctx.cp_url, env_sha, PIN_FILE, limit=limit * 2 + 1)):
        pin = past_pin(ctx.git.read_bytes(ctx.cp_url, sha, PIN_FILE))
        if pin.commit and (previous is None or previous.commit != pin.commit):
            found.append((sha, pin))
        previous = pin
    return found[-limit:]


def episodes(posts: list[CommitStatus], context: str) -> list[list[CommitStatus]]:
    """The posts of ``context`` cut into promotions: each starts at a ``pending`` "scheduled" post."""
    found: list[list[CommitStatus]] = []
    for post in posts:
        if post.context != context:
            continue
        if not found or (post.state == "pending" and post.description == SCHEDULED):
            found.append([])
        found[-1].append(post)
    return found


def decide(episode: list[CommitStatus]) -> tuple[Outcome, datetime | None, datetime | None, str]:
    """(outcome, decided at, restored at, last description) of one promotion's posts."""
    outcome: Outcome = "pending"
    decided = restored = None
    for post in episode:
        if outcome == "pending" and post.state in ("success", "failure", "error"):
            outcome, decided = ("success" if post.state == "success" else "failure"), post.updated_at
        elif outcome == "failure" and post.state == "success" and restored is None:
            restored = post.updated_at
    return outcome, decided, restored, episode[-1].description if episode else ""


def environment_history(ctx: Context, name: str, env: Resource[EnvironmentSpec], limit: int,
                        statuses: Callable[[str], list[CommitStatus]],
                        gitops: Callable[[str], list[CommitInfo]], *, warn_missing: bool = True) -> list[Promotion]:
    branch = ctx.env_branch(env)
    env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
    if env_sha is None:  # its pins are gone with it: said, not counted as "no promotion" (until 2026-11-29)
        if warn_missing:
            ctx.warn(Problem(f"{name}: branch {branch!r} does not exist in the control-plane repo "
                             f"{ctx.control_plane}: its promotions are not counted", None,
                             f"push it back at its last commit, or correct Environment {name}'s branch"))
        return []
    pinned = pins(ctx, env_sha, limit)
    infos = {c.sha: c for c in ctx.git.commits(ctx.cp_url, sorted({p.commit for _, p in pinned if p.commit}),
                                               no_walk=True)}
    gone = sorted({p.commit for _, p in pinned if p.commit and p.commit not in infos and p.commit.strip("0")})
    if gone:  # main force-pushed back past them: no landing time to measure from (until 2026-11-29 not a word)
        ctx.warn(Problem(f"{name}: {len(gone)} pinned commit(s) not on {ctx.main_branch} (main@{short(gone[0])}"
                         f"{', ...' if len(gone) > 1 else ''}): their promotions are not counted", None,
                         f"{ctx.main_branch} was rewritten since they were promoted"))
    pinned = [(sha, pin) for sha, pin in pinned if pin.commit in infos]  # a placeholder pin is no promotion
    written = {c.sha: c for c in ctx.git.commits(ctx.cp_url, [sha for sha, _ in pinned], no_walk=True)}
    by_hand = {sha for sha, _ in pinned if sha in written and not PIN_MESSAGE.match(written[sha].message)}
    runs_of: dict[str, dict[str, list[CommitStatus]]] = {}
    for main_sha in dict.fromkeys(pin.commit for _, pin in pinned if pin.commit):
        runs_of[main_sha] = pair_episodes([sha for sha, pin in pinned if pin.commit == main_sha], by_hand,
                                          episodes(statuses(main_sha), status_context(name)))
    merges = [(c, _MAIN_REF.search(c.message)) for c in reversed(gitops(name))]  # oldest first
    result: list[Promotion] = []
    next_pinned_at: datetime | None = None  # of the pin after this one
    for index in range(len(pinned) - 1, -1, -1):
        pin_sha, pin = pinned[index]
        assert pin.commit is not None
        episode = runs_of[pin.commit].get(pin_sha, [])
        outcome, decided, restored, description = decide(episode)
        info = infos.get(pin.commit)
        pinned_at = episode[0].updated_at if episode else None
        rollback = is_rollback(pin)
        if pin_sha in by_hand and not episode:  # a person's pin (``git revert``, an edit): no post of its own
            pinned_at = _at(written[pin_sha].committed)
            previous = pinned[index - 1][1].commit if index else None
            rollback = rollback or (previous is not None and ctx.git.is_ancestor(ctx.cp_url, pin.commit, previous))
        merged = None
        for commit, match in merges:
            if match is None or not pin.commit.startswith(match.group(1)):
                continue
            if pinned_at is None or _at(commit.committed) >= pinned_at.replace(microsecond=0) - timedelta(seconds=1):
                merged = commit
                break
        if merged is None and pinned_at is not None:  # a PR whose title a person edited before merging it
            merged = merge_of_retitled_pr(merges, head_branch(name), pinned_at, next_pinned_at)
        next_pinned_at = pinned_at
        if pin_sha in by_hand and not episode and succeeded_before(statuses(pin.commit), status_context(name)):
            # the gate posts nothing for a commit it passed once ("gate success (recorded)"): it rolled out when merged
            outcome, decided = "success", _at(merged.committed) if merged else pinned_at
            description = "rolled out again (pinned by hand; the gate had passed this commit before)"
        if outcome == "pending" and index < len(pinned) - 1:
            outcome = "superseded"
        result.append(Promotion(
            environment=name, commit=pin.commit, subject=info.subject if info else "",
            author=info.author if info else "", landed_at=_at(info.committed) if info else pinned_at or ctx.clock(),
            pin_commit=pin_sha, pinned_at=pinned_at, merged_at=_at(merged.committed) if merged else None,
            gitops_commit=merged.sha if merged else None, decided_at=decided, outcome=outcome,
            restored_at=restored, description=description, rollback=rollback, hold=pin.hold,
        ))
    return result[::-1]


def pair_episodes(pin_shas: list[str], by_hand: set[str], runs: list[list[CommitStatus]]
                  ) -> dict[str, list[CommitStatus]]:
    """Which gate run (``episodes``, oldest first) belongs to which pin of one commit (``pin_shas`` oldest first).
    ``promote`` opens each of its pins with a "scheduled" post: the k-th last pin it wrote gets the k-th last run
    so opened (older ones may be past ``limit``). A pin a person wrote (a ``git revert`` of a pin commit, an
    edited ``base-repo.yaml``, a squash of the branch's pin commits) has no such post of its own: it gets the
    newest run left between the runs of promote's pins around it, if any. Until 2026-11-29 every pin took the
    next run from the end, so a ``git revert`` back to a commit promoted before took that commit's first run (its
    success shown at the old time, the original promotion "superseded", the outage the revert ended left open)."""
    if not by_hand.intersection(pin_shas):
        return dict(zip(reversed(pin_shas), reversed(runs), strict=False))
    opened = [i for i, run in enumerate(runs) if run[0].state == "pending" and run[0].description == SCHEDULED]
    mine = [sha for sha in pin_shas if sha not in by_hand]
    index = dict(zip(reversed(mine), reversed(opened), strict=False))  # pin → its run's index
    taken = set(index.values())
    upper = len(runs)
    for position in range(len(pin_shas) - 1, -1, -1):
        sha = pin_shas[position]
        if sha not in by_hand:
            upper = index.get(sha, upper)
            continue
        lower = next((index[s] for s in reversed(pin_shas[:position]) if s in index and s not in by_hand), -1)
        free = [i for i in range(lower + 1, upper) if i not in taken]
        if free:
            index[sha] = upper = free[-1]
            taken.add(upper)
    return {sha: runs[i] for sha, i in index.items()}


def merge_of_retitled_pr(merges: list[tuple[CommitInfo, re.Match[str] | None]], head: str, pinned_at: datetime,
                         until: datetime | None) -> CommitInfo | None:
    """The first merge commit of fleetflow's PR (GitHub's default message "Merge pull request #N from
    owner/fleetflow/<env>", then the PR title) after ``pinned_at`` and before the next pin (``until``), when its
    message names no ``main@``: a person edited the title ("Deploy to prod (CHG-1234)"). Until 2026-11-29 such a
    promotion had no merge time on the page. A squash commit with an edited title carries nothing to match."""
    suffix = f"/{head}"
    for commit, match in merges:
        words = commit.subject.split()
        if match is not None or len(words) != 6 or words[:3] != ["Merge", "pull", "request"] or words[4] != "from":
            continue
        if not words[5].endswith(suffix) or words[5].count("/") != head.count("/") + 1:
            continue
        when = _at(commit.committed)
        if when >= pinned_at.replace(microsecond=0) - timedelta(seconds=1) and (until is None or when < until):
            return commit
    return None


def succeeded_before(posts: list[CommitStatus], context: str) -> bool:
    """Whether the gate's last post of ``context`` on the commit is a success (it then does not judge it again)."""
    last = next((p for p in reversed(posts) if p.context == context), None)
    return last is not None and last.state == "success"


def read_history(ctx: Context, limit: int = DEFAULT_LIMIT, *, warn_missing: bool = True) -> History:
    """The last ``limit`` promotions of every environment of the chain on ``main``'s tip. ``warn_missing``: an
    environment branch that does not exist is a warning (the status page's status lines say it already)."""
    envs = ctx.current_environments(ctx.main_tip())
    order = chain_order(envs)
    history = History(order, {n: list(envs[n].spec.after) for n in order}, {})
    cache: dict[str, list[CommitStatus]] = {}

    def statuses(sha: str) -> list[CommitStatus]:
        if sha not in cache:
            cache[sha] = ctx.forge.status_history(ctx.control_plane, sha)
            history.status_reads += 1
        return cache[sha]

    def gitops(name: str) -> list[CommitInfo]:
        target = _gitops_target(ctx, envs[name])
        if target is None:
            return []
        repo, branch = target
        history.gitops[name] = target
        url = ctx.forge.git_url(repo)
        try:
            tip = ctx.git.fetch_branch(url, branch)
        except GitError as exc:  # deleted, moved, out of the token's reach: no merge times (until 2026-11-29: exit 3)
            why = exc.reason or str(exc).splitlines()[0]
            if warn_missing:
                ctx.warn(Problem(f"{name}: cannot read the GitOps repo {repo}: {why}: "
                                 "when its PRs were merged is not known", None, UNREADABLE_GITOPS_HINT))
            return []
        return [] if tip is None else ctx.git.commits(url, [tip], limit=limit * 4, first_parent=True)

    for name in order:
        history.promotions[name] = environment_history(ctx, name, envs[name], limit, statuses, gitops,
                                                         warn_missing=warn_missing)
    history.sinks_at = chains_then(ctx, history)
    return history


def chains_then(ctx: Context, history: History) -> dict[str, list[str]]:
    """The last environments of the chain at each commit that succeeded in one of them (of the environments read),
    where they differ from those of now's chain: the chain's metrics count a commit through the chain it went
    through. One read of the Environments per such commit (cached by the context)."""
    now = last_environments(history.after)
    found: dict[str, list[str]] = {}
    for commit in dict.fromkeys(p.commit for name in now for p in history.promotions.get(name, [])):
        try:
            then = ctx.environments(commit)
        except (InputError, GitError):  # a commit whose Environments do not read: measured against now's chain
            continue
        sinks = [s for s in last_environments({n: list(e.spec.after) for n, e in then.items()}) if s in history.after]
        if sinks and sinks != now:
            found[commit] = sinks
    return found


def _gitops_target(ctx: Context, env: Resource[EnvironmentSpec]) -> tuple[str, str] | None:
    """The GitOps repo and branch of an environment, from the GitOpsRepo on its branch (at the branch tip)."""
    branch = ctx.env_branch(env)
    env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
    try:
        pin = ctx.pin(env_sha, branch)
        if env_sha is None or pin.commit is None:
            return None
        main_sha = ctx.git.resolve(ctx.cp_url, pin.commit)
        if main_sha is None:
            return None
        plane = ctx.plane(main_sha, branch, env_sha)
    except (InputError, GitError):  # a broken branch: no merge times, the rest of the history still shows
        return None
    gitops = plane.gitops_repo()
    if gitops is None:
        return None
    return gitops.spec.repo, gitops.spec.branch or env.name
