"""A search: GitHub refuses or loses one write of a fleet command; the same command again ends where no fault would.

Two worlds are built alike, byte for byte (the same repository names on two GitHub stand-ins, commits with the
same dates), and the same people's steps run in both: promote main, an engineer's commit to the ``dev`` branch
and its schedule, a new main commit promoted over the open PR, a commit that changes no rendered file, reconcile,
a person's merge of dev's PR with its clusters' reports and the gate (which pins qa and opens its PR), reconcile.
``dev`` labels its PRs and asks two reviewers (a person and a team; the person approves before the merge), and in
a third of the trials merges them itself (``autoMerge``: fleetflow turns on
GitHub's auto-merge or merges once every check is green), in another third queues a newer commit behind its open PR
(``concurrency: queue``). In one world, half the steps (seeded) meet a fault on one of the writes the step made
in the other: GitHub's 403 for a permission the App lacks ("Resource not accessible by integration"), a 502
(PyGithub retries it), or an answer lost after GitHub did the write (the connection drops); or a ruleset
declines one of the pushes it made there (the stand-in's pre-receive hook answers as GitHub does, ``GH013``).
Rules such a step is held to, by the contract (DESIGN.md:
"Bad input gets a clear error", exit codes; "idempotent re-runs, nothing lost on failure"):

- it exits 0 or 3 (a forge failure), never with a traceback;
- stopped, it ends "before any step finished" only when nothing was written: no ref moved in either repository
  and GitHub did no write (a write whose answer was lost counts: GitHub did it);
- the same command again, with the fault gone, exits 0.

At the end the two worlds must agree: every branch of both repositories, each PR (head, title, description, labels,
state, the reviews waiting and whom a review was ever requested from) and the newest status of every context on
every commit. ``FLEETFLOW_FAULT_TRIALS`` and
``FLEETFLOW_FAULT_SEEDS`` search longer.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleetflow.cli import main as cli
from fleetflow.cli.errors import FLEET_NO_STEP
from tests.fleet import git, main_files, push_file
from tests.ghstub import FaultKind
from tests.ghstub.server import GitHubStub
from tests.helpers import searched_seeds
from tests.test_fleet_edits import fresh_fleet

TRIALS = int(os.environ.get("FLEETFLOW_FAULT_TRIALS", "4"))
SEEDS = searched_seeds("FLEETFLOW_FAULT_SEEDS") or [1]
LABELS = "  pullRequest:\n    labels: [fleetflow, promotion]\n    reviewers: [alice, team0/platform]\n"
# dev's ways with its PRs: a person merges them; fleetflow does (GitHub's auto-merge, or a merge once every check is
# green); a person merges them and a newer commit waits until the open PR is merged or closed
VARIANTS = {"a person merges dev's PRs": "", "dev merges its own PRs": "    autoMerge: true\n",
            "dev queues its commits": "  concurrency: queue\n"}
FAULTS: list[FaultKind] = ["forbidden", "status_5xx", "drop_after"]


@dataclass
class World:
    """One fleet on its own GitHub stand-in, with what the CLI finds it by."""

    root: Path
    stub: GitHubStub
    cp: Path
    dev: str  # what dev's Environment says besides its labels (VARIANTS)

    def use(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GITHUB_API_URL", self.stub.url)
        monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(self.root / "cache"))

    def refs(self) -> dict[str, str]:
        return {f"{name} {ref}": sha for name in ("control-plane", "gitops")
                for sha, ref in (line.split(" ") for line in git(
                    self.root, "--git-dir", str(self.stub.repo(f"team0/{name}").path),
                    "for-each-ref", "--format=%(objectname) %(refname)").splitlines())}

    def writes(self, since: int) -> list[str]:
        """The writes GitHub did since ``since`` (a dropped answer's too: GitHub did the write)."""
        return [f"{r.method} {r.path} -> {r.status}" for r in self.stub.requests_since(since)
                if r.method != "GET" and 200 <= r.status < 300]

    def end(self) -> dict[str, Any]:
        pulls = [(p.number, p.head_ref, p.base_ref, p.head_sha, p.title, p.body, sorted(p.labels), p.state,
                  sorted(p.requested_reviewers + p.requested_teams),
                  sorted(e["reviewer"] or e["team"] for e in p.events if e["event"] == "review_requested"))
                 for p in self.stub.repo("team0/gitops").list_pulls()]
        newest: dict[tuple[str, str], tuple[str, str | None]] = {}
        for s in self.stub.repo("team0/control-plane").statuses:
            newest[(s.sha, s.context)] = (s.state, s.description)
        return {"refs": self.refs(), "pulls": pulls, "statuses": newest}


def commit(world: World, branch: str, path: str, edit: Callable[[str], str]) -> None:
    """An engineer's commit on ``branch`` of the control-plane repo (the same commit in both worlds)."""
    push_file(world.root, world.cp, branch, path, edit)


def tip(world: World, branch: str = "main") -> str:
    return git(world.root, "--git-dir", str(world.cp), "rev-parse", branch)


def environments(dev: str) -> str:
    """The chain of tests/fleet.py with no soak time; dev labels its PRs and says ``dev`` (VARIANTS) too."""
    return main_files({"dev": LABELS + dev})[".environments/envs.yaml"].replace("soakTime: 1m", "soakTime: 0s")


PULL_FIELDS = ("number", "head", "base", "head sha", "title", "description", "labels", "state", "reviews waiting",
               "review requests made")


def differences(plain: Any, faulted: Any) -> list[str]:
    """What differs, short enough to read in a failure: the refs or statuses that differ, each PR's fields."""
    if isinstance(plain, dict):
        return [f"{k}: {plain.get(k)} != {faulted.get(k)}" for k in sorted({*plain, *faulted}, key=str)
                if plain.get(k) != faulted.get(k)]
    if len(plain) != len(faulted):
        return [f"{len(plain)} PRs != {len(faulted)} PRs: {[p[:2] for p in plain]} != {[f[:2] for f in faulted]}"]
    return [f"PR #{a[0]} {name}: {x!r:.300} != {y!r:.300}" for a, b in zip(plain, faulted, strict=True)
            for name, x, y in zip(PULL_FIELDS, a, b, strict=True) if x != y]


def merge_and_report(world: World) -> None:
    """alice approves dev's open PR and a person merges it (with autoMerge fleetflow has merged it); dev's two
    clusters (tests/fleet.py) report success on the commit they applied."""
    gitops = world.stub.repo("team0/gitops")
    for pr in [p for p in gitops.list_pulls() if p.state == "open" and p.head_ref == "fleetflow/dev"]:
        alice = world.stub.client(token=world.stub.person_token("alice"))
        alice.get_repo("team0/gitops").get_pull(pr.number).create_review(event="APPROVE")
        alice.close()
        gitops.merge_pull(pr.number, user="platform-engineer")
    merged = gitops.branch_sha("dev")
    assert merged is not None
    for cluster in ("dev-1", "dev-2"):
        gitops.add_status(merged, "success", f"flux/{cluster}", "Reconciliation finished", creator="flux")


# The people's steps, each with the fleet command its push (or the cron) runs: the same in both worlds.
Steps = list[tuple[Callable[[World], None], Callable[[World], list[str]]]]
STEPS: Steps = [
    (lambda w: commit(w, "main", ".environments/envs.yaml", lambda _: environments(w.dev)),
     lambda w: ["promote", "--commit", tip(w)]),
    (lambda w: commit(w, "dev", "configs.yaml", lambda text: text.replace("LOG_LEVEL: info", "LOG_LEVEL: debug")),
     lambda w: ["schedule", "--environment", "dev"]),
    (lambda w: commit(w, "main", "templates/flux.yaml", lambda text: text + "# reviewed\n"),
     lambda w: ["promote", "--commit", tip(w)]),
    (lambda w: commit(w, "dev", "clusters.yaml", lambda text: text + "# the inventory, unchanged\n"),
     lambda w: ["schedule", "--environment", "dev"]),
    (lambda w: None, lambda w: ["reconcile"]),
    (merge_and_report, lambda w: ["check-rollout", "--environment", "dev"]),  # on success: qa's pin and PR
    (lambda w: None, lambda w: ["reconcile"]),
]


PUSHED = ("control-plane refs/heads/", "gitops refs/heads/fleetflow/")  # what fleetflow pushes: pins, PR heads


def moved_refs(before: dict[str, str], after: dict[str, str]) -> list[tuple[str, str, str]]:
    """The branches a step pushed (repository, ref, "create" or "update"): not the GitOps branches, which GitHub
    moves when it merges a PR (an API call, no push), nor the pull refs, which GitHub writes itself."""
    return [(*key.split(" "), "update" if key in before else "create") for key, sha in sorted(after.items())
            if before.get(key) != sha and key.startswith(PUSHED)]  # type: ignore[misc]


def build(root: Path, monkeypatch: pytest.MonkeyPatch, now: datetime, dev: str) -> World:
    """``now``: the stand-in's clock, stopped, so that its merge commits are alike in both worlds."""
    root.mkdir()
    stub = GitHubStub(root=root / "ghstub", clock=lambda: now).start()
    cp = fresh_fleet(root, monkeypatch, 0, stub)
    return World(root, stub, cp, dev)


def trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, number: int) -> None:
    """Each step runs in the plain world first; in the other, half the steps meet a fault on one of the writes the
    step made in the plain world (so that it hits)."""
    rng = random.Random(seed * 1000 + number)
    runner = CliRunner()
    now = datetime.now(UTC).replace(microsecond=0)
    variant, dev = rng.choice(list(VARIANTS.items()))
    plain, faulted = (build(tmp_path / f"{number}-{name}", monkeypatch, now, dev) for name in ("plain", "faulted"))
    said: list[str] = [variant]
    try:
        for people, command in STEPS:
            plain.use(monkeypatch)
            people(plain)
            args = command(plain)
            before, since = plain.refs(), plain.stub.mark()
            result = runner.invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 0, (args, result.output)
            writes = [(r.method, r.path) for r in plain.stub.requests_since(since) if r.method != "GET"]
            moved = moved_refs(before, plain.refs())
            faulted.use(monkeypatch)
            people(faulted)
            fault, declined = None, None
            if (writes or moved) and rng.random() < 0.5:
                if moved and (not writes or rng.random() < 0.3):
                    declined = rng.choice(moved)  # a ruleset declines the push that writes it
                    name, ref, write = declined
                    faulted.stub.repo(f"team0/{name}").decline_ref_writes({ref: [write]})
                    said.append(f"{name}'s rules decline the {write} of {ref} in {args[0]}")
                else:
                    method, path = rng.choice(writes)
                    kind = rng.choice(FAULTS)
                    fault = faulted.stub.inject(method, re.escape(path) + "$", kind)
                    said.append(f"{kind} on {method} {path} in {args[0]}")
            what = f"seed {seed} trial {number}: " + "; ".join(said)
            refs, since = faulted.refs(), faulted.stub.mark()
            result = runner.invoke(cli, args, catch_exceptions=False)
            faulted.stub.clear_faults()
            for name in ("control-plane", "gitops"):
                faulted.stub.repo(f"team0/{name}").decline_ref_writes({})
            if fault is None and declined is None:
                assert result.exit_code == 0, (what, args, result.output)
                continue
            assert (fault is None or fault.hits == 1) and result.exit_code in (0, 3), (what, args, result.output)
            if declined is not None:  # GitHub declined that push: the command stops (a push is not retried)
                assert result.exit_code == 3 and "GH013" in result.stderr, (what, args, result.output)
            if result.exit_code == 3 and result.stderr.splitlines()[-1] == FLEET_NO_STEP:
                assert faulted.refs() == refs and not faulted.writes(since), (
                    what, args, "said no step finished, yet wrote", faulted.writes(since), result.stderr)
            # a stopped reconcile is followed by the next event's, or the cron tick's (--verify-merges): only the
            # latter reads a PR it waits on, which a run that opened it and stopped before its labels needs
            again = runner.invoke(cli, [*args, "--verify-merges"] if args == ["reconcile"] else args,
                                  catch_exceptions=False)
            assert again.exit_code == 0, (what, args, "again", again.output)
        ends = plain.end(), faulted.end()
        for key in ends[0]:
            assert ends[1][key] == ends[0][key], (what, key, differences(ends[0][key], ends[1][key]))
    finally:
        for world in (plain, faulted):
            world.stub.stop()
            assert not world.stub.server_errors, world.stub.server_errors
            assert not world.stub.schema_errors, world.stub.schema_errors


@pytest.mark.parametrize("seed", SEEDS)
def test_a_command_run_again_after_a_github_fault_ends_where_no_fault_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)
    for variable in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):  # the engineers' commits alike in both worlds
        monkeypatch.setenv(variable, "2026-03-01T08:00:00Z")
    for number in range(TRIALS):
        trial(tmp_path, monkeypatch, seed, number)
