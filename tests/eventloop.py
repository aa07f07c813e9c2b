"""GitHub's event rules over the stand-in server: state changes become the events GitHub would send, delivered to
the workflow file GitHub would pick, filtered by ``on:`` and the job's ``if:``, serialized by a concurrency group.

The rules (GitHub docs, "Events that trigger workflows" and "Control the concurrency of workflows and jobs",
https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows,
https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency):

* ``push`` runs the workflow file **in the pushed commit**; ``status``, ``schedule``, ``workflow_dispatch`` and
  ``repository_dispatch`` run the file **on the default branch**; ``pull_request`` runs it from the **merge ref**
  (for a merged PR: the merge commit);
* ``on:`` filters: ``push.branches``, ``pull_request.types`` / ``branches``, ``repository_dispatch.types``;
* writes made with ``GITHUB_TOKEN`` start no workflow (dispatches excepted): a status whose creator is
  ``github-actions[bot]`` gives no event;
* one concurrency group holds one running and one pending run; a newer pending run cancels the older pending one.

A :class:`Loop` watches the repositories (refs of the bare repos, statuses, merged PRs, dispatches), turns every
change into events, lets a seeded :class:`Faults` drop, duplicate and reorder deliveries, and runs each surviving
delivery through a ``runner`` (``fleetflow reconcile`` in process here: the reusable workflow's one job). The
people (merging PRs) and the clusters (posting statuses as Flux does) are actors called between runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML

from tests.ghstub import GitHubStub

WORKFLOW = ".github/workflows/fleetflow.yml"
GITHUB_TOKEN_LOGIN = "github-actions[bot]"


@dataclass(frozen=True)
class Event:
    repo: str
    name: str  # push, status, pull_request, repository_dispatch, workflow_dispatch, schedule
    payload: dict[str, Any]
    workflow_sha: str | None = None  # the commit whose workflow file runs

    def describe(self) -> str:
        p = self.payload
        what = {"push": p.get("ref"), "status": f"{p.get('context')}={p.get('state')}",
                "pull_request": f"#{(p.get('pull_request') or {}).get('number')} {p.get('action')}"}.get(self.name, "")
        return f"{self.repo} {self.name} {what}".strip()


@dataclass
class Faults:
    """Seeded delivery faults: drop, duplicate, reorder."""

    seed: int = 0
    drop: float = 0.0
    duplicate: float = 0.0
    reorder: bool = False
    rng: random.Random = field(init=False)
    dropped: int = 0
    duplicated: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def deliver(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if self.rng.random() < self.drop:
                self.dropped += 1
                continue
            out.append(event)
            if self.rng.random() < self.duplicate:
                self.duplicated += 1
                out.append(event)
        if self.reorder:
            self.rng.shuffle(out)
        return out


@dataclass
class _Snapshot:
    refs: dict[str, dict[str, str]]
    statuses: dict[str, int]
    merged: dict[str, set[int]]
    dispatches: dict[str, int]


def workflow_on(stub: GitHubStub, repo: str, sha: str | None) -> dict[str, Any] | None:
    """The ``on:`` of the caller workflow in commit ``sha``, or None when that commit has no such file."""
    if sha is None:
        return None
    try:
        text = stub.repo(repo).git.git("show", f"{sha}:{WORKFLOW}")
    except Exception:  # no such file at that commit: GitHub runs nothing
        return None
    doc = YAML(typ="safe").load(text)
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads the key `on` as True
    return on if isinstance(on, dict) else {str(on): None}


def _branch_ok(branches: Iterable[str] | None, branch: str) -> bool:
    return branches is None or branch in set(branches)


def triggered(on: dict[str, Any], event: Event) -> bool:
    """``on:`` filters as GitHub applies them (branches, types)."""
    if event.name not in on:
        return False
    spec = on[event.name] or {}
    p = event.payload
    if event.name == "push":
        return _branch_ok(spec.get("branches"), str(p["ref"]).removeprefix("refs/heads/"))
    if event.name == "pull_request":
        return p["action"] in (spec.get("types") or ["opened", "synchronize", "reopened"]) and _branch_ok(
            spec.get("branches"), p["pull_request"]["base"]["ref"])
    if event.name == "repository_dispatch":
        return spec.get("types") is None or p["action"] in spec["types"]
    return True


def job_if(event: Event) -> bool:
    """The reconcile job's ``if:`` in the reusable workflows (kept in step with tests/test_workflow_files.py)."""
    p = event.payload
    if event.name == "status":
        return p["state"] != "pending" and not str(p["context"]).startswith("fleetflow/")
    if event.name == "pull_request":
        return bool(p["pull_request"].get("merged"))
    return True


@dataclass(frozen=True)
class Hold:
    """What a run that holds its slot returns (``Loop.run_for``): it keeps the slot until ``seconds`` after its
    start, but from the end of its work on it calls ``changed()`` every ``poll`` seconds, which may do work (the
    reconcile action reconciles again when the reports may have changed a gate: fleetflow.promotion.reconcile.
    reconcile_holding) and says whether the run ends; it lets go ``work`` seconds after that poll."""

    seconds: int
    poll: int
    changed: Callable[[], bool]
    work: int = 0


@dataclass
class Loop:
    stub: GitHubStub
    repos: list[str]
    # runs one delivery; in run_for it may return how long the run keeps its slot at least, or a Hold (the gitops
    # workflow's hold while a gate waits for reports), else the run lasts run_seconds
    runner: Callable[[Event], int | Hold | None]
    faults: Faults = field(default_factory=Faults)
    actors: list[Callable[[], None]] = field(default_factory=list)
    runs: list[Event] = field(default_factory=list)
    started: list[float] = field(default_factory=list)  # run_for: the simulated second each run started
    filtered: int = 0
    cancelled: int = 0
    polls: int = 0  # run_for: how often holding runs looked whether to let go
    # the reusable workflow's job ``if:`` and the concurrency group of a delivery (``run`` only): today's design
    # by default; benchmarks/old_design_under_act.py passes the old design's (no ``if:``, no workflow-level group)
    job_filter: Callable[[Event], bool] = job_if
    group: Callable[[Event], str] = lambda event: event.repo
    _seen: _Snapshot | None = None
    _on: dict[tuple[str, str | None], dict[str, Any] | None] = field(default_factory=dict)

    def _snapshot(self) -> _Snapshot:
        refs, statuses, merged, dispatches = {}, {}, {}, {}
        for name in self.repos:
            repo = self.stub.repo(name)
            refs[name] = {r.removeprefix("refs/heads/"): s for r, s in repo.git.refs("refs/heads/").items()}
            statuses[name] = len(repo.statuses)
            merged[name] = {n for n, pr in repo.pulls.items() if pr.merged}
            dispatches[name] = len(repo.dispatches)
        return _Snapshot(refs, statuses, merged, dispatches)

    def start(self) -> None:
        self._seen = self._snapshot()

    def changes(self) -> list[Event]:
        """Every event GitHub would send for what changed since the last look."""
        assert self._seen is not None, "start() first"
        now, before = self._snapshot(), self._seen
        self._seen = now
        events: list[Event] = []
        for name in self.repos:
            repo = self.stub.repo(name)
            default = repo.branch_sha(repo.default_branch)
            for branch, sha in sorted(now.refs[name].items()):
                old = before.refs[name].get(branch)
                if old != sha:
                    payload = {"ref": f"refs/heads/{branch}", "before": old or "0" * 40, "after": sha,
                               "deleted": False, "created": old is None}
                    events.append(Event(name, "push", payload, sha))
            for status in repo.statuses[before.statuses[name]:]:
                if status.creator == GITHUB_TOKEN_LOGIN:
                    continue  # GITHUB_TOKEN's writes start no workflow
                tips = [{"name": b} for b, s in sorted(now.refs[name].items()) if s == status.sha][:10]
                payload = {"sha": status.sha, "context": status.context, "state": status.state,
                           "description": status.description, "branches": tips}
                events.append(Event(name, "status", payload, default))
            for number in sorted(now.merged[name] - before.merged[name]):
                pr = repo.pulls[number]
                payload = {"action": "closed", "number": number, "pull_request": {
                    "number": number, "merged": True, "head": {"ref": pr.head_ref}, "base": {"ref": pr.base_ref},
                    "merge_commit_sha": pr.merge_commit_sha}}
                events.append(Event(name, "pull_request", payload, pr.merge_commit_sha))
            for dispatch in repo.dispatches[before.dispatches[name]:]:
                payload = {"action": dispatch.event_type, "client_payload": dispatch.client_payload}
                events.append(Event(name, "repository_dispatch", payload, default))
        return events

    def tick(self) -> list[Event]:
        """A cron tick: a schedule event for every repository (its default branch's file decides)."""
        out = []
        for name in self.repos:
            repo = self.stub.repo(name)
            out.append(Event(name, "schedule", {"schedule": "*/15 * * * *"}, repo.branch_sha(repo.default_branch)))
        return out

    def _wanted(self, event: Event) -> bool:
        key = (event.repo, event.workflow_sha)  # a commit's file never changes: read it once
        if key not in self._on:
            self._on[key] = workflow_on(self.stub, event.repo, event.workflow_sha)
        on = self._on[key]
        if on is None or not triggered(on, event) or not self.job_filter(event):
            self.filtered += 1
            return False
        return True

    def run(self, first: list[Event], *, done: Callable[[], bool], max_runs: int = 60, max_ticks: int = 12) -> None:
        """Deliver ``first``, then whatever follows, until ``done()`` or the limits. Runs are one at a time; per
        repository group one pending run, a newer one replacing it (GitHub's concurrency)."""
        pending: dict[str, Event] = {}  # group (repository) -> the pending run
        order: list[str] = []

        def enqueue(events: list[Event]) -> None:
            for event in self.faults.deliver(events):
                if not self._wanted(event):
                    continue
                group = self.group(event)
                if group in pending:
                    self.cancelled += 1  # the older pending run is cancelled
                    order.remove(group)
                pending[group] = event
                order.append(group)

        enqueue(first)
        ticks = 0
        while len(self.runs) < max_runs and not done():
            if not order:
                if ticks >= max_ticks:
                    break
                ticks += 1
                enqueue(self.tick())
                continue
            group = order.pop(0)
            event = pending.pop(group)
            self.runs.append(event)
            self.runner(event)
            for actor in self.actors:
                actor()
            enqueue(self.changes())

    def run_for(self, seconds: int, *, happenings: dict[int, list[Callable[[], None]]], run_seconds: int,
                at: Callable[[int], None] = lambda _t: None, ticks: Iterable[int] = (),
                drain: int = 900) -> None:
        """Simulated time, one second at a time, for ``seconds`` and then until every group is idle (at most
        ``drain`` more): ``at(t)`` sets the clocks, ``happenings[t]`` change the world at second ``t`` (clusters
        reporting), ``ticks`` are cron ticks. Every run takes ``run_seconds``; per repository group one run at a time
        and one pending, a newer pending run cancelling the older one (GitHub's concurrency): a cancelled pending
        run never starts, installs nothing and costs no request. A run reads the state when it starts (it is
        executed then, at once); what its writes cause is delivered while it runs. A runner that returns a number
        holds its group's slot that many seconds from its start when that is longer than ``run_seconds`` (the
        gitops workflow's hold while a gate waits for reports); one that returns a :class:`Hold` also lets go
        ``work`` seconds after the first poll whose ``changed()`` says so (polled every ``poll`` seconds after
        ``run_seconds``, before the pending runs of that second start; what a poll's work writes is delivered
        then)."""
        busy_until: dict[str, int] = {}
        pending: dict[str, Event] = {}
        holding: dict[str, tuple[int, Hold]] = {}  # group -> (when its work ended, the hold)
        tick_at = set(ticks)

        def start(event: Event, now: int) -> None:
            busy_until[event.repo] = now + run_seconds
            self.runs.append(event)
            self.started.append(now)
            held = self.runner(event)
            if isinstance(held, Hold):
                holding[event.repo] = (now + run_seconds, held)
                held = held.seconds
            else:
                holding.pop(event.repo, None)
            busy_until[event.repo] = now + max(run_seconds, held or 0)
            for actor in self.actors:
                actor()
            offer(self.changes(), now)

        def offer(events: list[Event], now: int) -> None:
            for event in self.faults.deliver(events):
                if not self._wanted(event):
                    continue
                if busy_until.get(event.repo, -1) <= now and event.repo not in pending:
                    start(event, now)
                    continue
                if event.repo in pending:
                    self.cancelled += 1
                pending[event.repo] = event

        now = 0
        while now <= seconds or (now <= seconds + drain and (pending or any(t > now for t in busy_until.values()))):
            at(now)
            for group, (worked, hold) in list(holding.items()):
                if now >= busy_until[group]:
                    del holding[group]
                elif now > worked and (now - worked) % hold.poll == 0:
                    self.polls += 1
                    if hold.changed():
                        busy_until[group] = min(busy_until[group], now + hold.work)
                        del holding[group]
                    for actor in self.actors:  # what the poll's work wrote raises its events now
                        actor()
                    offer(self.changes(), now)
            for group in [g for g in pending if busy_until.get(g, -1) <= now]:
                start(pending.pop(group), now)
            acted = happenings.get(now, [])
            for happening in acted:
                happening()
            if acted:
                offer(self.changes(), now)
            if now in tick_at:
                offer(self.tick(), now)
            now += 1
