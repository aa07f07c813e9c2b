"""The event-loop scenarios (tests/test_event_loop.py) under act against the OLD design, and against today's with the
same seeds: the harness behind benchmarks/old_design_under_act.py and tests/test_old_design.py.

The old design is commit ``da8feae`` (main before the work on #7-#10): its caller workflows run ``route`` and then
``promote`` / ``schedule`` / ``check-rollout`` (before ``5d76c3b``, "every trigger runs reconcile"). Its
``examples/workflows/`` callers, ``.github/workflows/`` reusable workflows and ``actions/`` come from that commit, as
``tests/legacy/da8feae-design.tar.gz`` (its ``git archive``, checked against git's ids at each unpacking); its
fleetflow is installed by its own ``actions/_shared/install.py`` from its own hash-pinned ``actions/requirements.txt``
into a venv of its own. Today's design is this checkout, in a venv of its own too.

Both designs are delivered by the same event loop (tests/eventloop.py, tests/test_act_e2e.py's ``World.deliver``):
the changes on the GitHub stand-in server become the events GitHub would send, delivered to the caller file GitHub
would pick (``push``: the pushed commit's; ``status`` / ``schedule``: the default branch's; ``pull_request``: the merge
commit's), filtered by the caller's ``on:``, never for a status written with ``GITHUB_TOKEN``; each delivery is an act
run. The people merge every fleetflow PR; the clusters post as Flux does (tests/test_event_loop.py ``World``). The
callers live where each design's setup guide puts them: on ``main`` of the control plane and of the GitOps
repository; the environment branches (tests/fleet.py's) carry none.

What the harness adapts to the old design (never the old code):

- it has no job-level ``if:``: every delivery that passes ``on:`` runs (its ``route`` job says "none" for what does
  not concern it);
- it has no workflow-level concurrency group, only job-level groups per environment: each delivery is its own group
  here, so none is ever cancelled (the loop runs one at a time, so the job groups never overlap). That is kinder to
  the old design than GitHub, which may cancel a pending job;
- its workflows ask actions/create-github-app-token for a token with ``app-id`` (deprecated in v3, still accepted):
  the stand-in accepts it;
- its callers list the environment branches in ``on:`` (``[main, dev, qa, prod]`` in the example): they are set to
  this fleet's (``dev, qa, prod-eu``), as its setup guide says to;
- it has no ``FLEETFLOW_GITHUB_THROTTLE``: its PyGithub keeps the 0.25 s per request and 1 s per write throttle, so
  its runs are slower; that changes no outcome.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import actkit, artifactkit
from tests import test_act_e2e as act_e2e
from tests.eventloop import WORKFLOW, Event, Faults
from tests.fleet import SHORT_CHAIN, SHORT_CHAIN_WORKLOAD, Fleet, _environment, git
from tests.ghstub import GitHubStub
from tests.test_event_loop import CHAIN, EXPECTED, World, faulty, stops_at_qa

ROOT = Path(__file__).resolve().parent.parent
OLD = "da8feae"
OLD_PARTS = (".github", "actions", "fleetflow", "pyproject.toml", "README.md", "examples/workflows")
VENDORED = ROOT / "tests" / "legacy" / "da8feae-design.tar.gz"
"""``git archive --format=tar da8feae <OLD_PARTS> | gzip -9n``: the old design travels with the tests (see
tests/legacy/README.md), checked against ``OLD_IDS`` each time it is unpacked."""
OLD_IDS = {  # git rev-parse da8feae:<part>
    ".github": "1deb36e3446fd60f987924ad90d49080261ab872",
    "actions": "1f3574ec055df27a4ce6bd72343c7463ff8d1327",
    "fleetflow": "30d656a54d05054124c927bd6d18eee87d9d2762",
    "pyproject.toml": "d41708c165452636ddb1be1cad784924a6fb0027",
    "README.md": "0b061797f286abecebc8c852655b25f010be26a7",
    "examples/workflows": "7cb7755484fc04ac4037c6b9d07ed5f57187a345",
}
# the example callers' environment branches, and this fleet's (tests/fleet.py SHORT_CHAIN)
OLD_BRANCH_LISTS = {"control-plane.yml": ("[main, dev, qa, prod]", "[main, dev, qa, prod-eu]"),
                    "gitops.yml": ("[dev, qa, prod]", "[dev, qa, prod-eu]")}
SCENARIOS = ["chain", "faults-1", "faults-2", "faults-3", "qa-fails-1", "qa-fails-2", "env-branch-dev",
             "env-branch-qa", "automerge", "automerge-ci-dropped"]
"""``chain``: a push to main, no faults, until dev, qa and prod-eu record success; ``faults-N``: the same with seed
N's faults (30% of deliveries dropped, 20% duplicated, the rest reordered), the same end state expected (one PR, one
pin, one success record per environment); ``qa-fails-N``: cluster qa-2 fails, seed N: qa records failure and prod-eu
is never pinned; ``env-branch-E``: after the chain, a person changes environment E's branch (its ConfigMap): within
three cron ticks one of E's GitOps branches must carry it (a ``state.json`` whose ``envCommit`` is the new commit);
``automerge``: dev has ``autoMerge`` and its GitOps branch requires the check ``ci/check`` (branch protection),
which a CI posts on every fleetflow PR head (a status from a CI App: it raises an event); nobody merges dev's PR; no
faults: the chain must roll out; ``automerge-ci-dropped``: the same with the first delivery of that status dropped,
nothing else."""


# --- the two designs' parts ------------------------------------------------------------------------------------------
@dataclass
class Design:
    name: str  # old or new
    checkout: Path  # what act sees as fleetflow/fleetflow@v0
    standins: dict[str, Path]  # app_token_standin, checkout_standin, upload_artifact_standin, cache_standin
    venv: Path  # FLEETFLOW_ACTION_VENV
    callers: tuple[str, str] | None  # control-plane and GitOps caller text; None: today's examples

    def parts(self) -> dict[str, Any]:
        return {"action_checkout": self.checkout, "action_venv": self.venv, "callers": self.callers, **self.standins}


def _standins(where: Path, *, old: bool) -> dict[str, Path]:
    return {
        "app_token_standin": actkit.write_app_token_standin(where / "create-github-app-token", accept_app_id=old),
        "checkout_standin": actkit.write_checkout_standin(where / "checkout"),
        "upload_artifact_standin": artifactkit.write_upload_artifact_standin(where / "upload-artifact"),
        "cache_standin": actkit.write_cache_standin(where / "cache"),
    }


def old_archive(rev: str) -> bytes:
    """``OLD_PARTS`` of ``rev`` as a tar. ``OLD`` comes from ``VENDORED`` (a clone without history, such as a shallow
    CI checkout, has no ``da8feae`` to archive); any other commit from ``git archive``."""
    if rev == OLD:
        return gzip.decompress(VENDORED.read_bytes())
    return subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, *OLD_PARTS],
                          check=True, capture_output=True).stdout


def check_vendored(checkout: Path) -> None:
    """The extracted ``VENDORED`` archive is exactly ``OLD``'s parts: git's own ids of its trees and files, computed
    here with ``git add`` + ``write-tree`` into a throwaway object store, equal the ids ``OLD`` has (``OLD_IDS``)."""
    env = {**os.environ, "GIT_DIR": str(checkout.parent / "vendored-check.git"), "GIT_WORK_TREE": str(checkout)}
    def git_(*args: str) -> str:
        return subprocess.run(["git", *args], env=env, check=True, capture_output=True, text=True).stdout.strip()
    git_("init", "-q")
    git_("add", "-A", *OLD_PARTS)
    tree = git_("write-tree")
    found = {part: git_("rev-parse", f"{tree}:{part}") for part in OLD_IDS}
    assert found == OLD_IDS, f"{VENDORED} is not {OLD}'s {', '.join(OLD_PARTS)}: {found} != {OLD_IDS}"


def old_design(rev: str, work: Path, venvs: Path) -> Design:
    """The old commit's workflows, actions and fleetflow (``git archive``), its callers set to this fleet's
    environment branches, its venv built by its own install.py (kept in ``venvs``, one per commit)."""
    checkout = work / "old-checkout"
    checkout.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(old_archive(rev))) as tar:
        tar.extractall(checkout, filter="data")
    if rev == OLD:
        check_vendored(checkout)
    callers = []
    for example, (theirs, ours) in OLD_BRANCH_LISTS.items():
        text = (checkout / "examples" / "workflows" / example).read_text(encoding="utf-8")
        assert text.count(theirs) == 1, f"{rev}:examples/workflows/{example} has no {theirs}"
        callers.append(text.replace(theirs, ours))
    venv = venvs / f"old-{rev if rev == OLD else git(ROOT, 'rev-parse', '--short', rev)}"
    install(checkout, venv)
    return Design("old", checkout, _standins(work / "old-standins", old=True), venv, (callers[0], callers[1]))


def new_design(work: Path, venvs: Path) -> Design:
    checkout = actkit.copy_checkout(work / "new-checkout")
    venv = venvs / "new"
    install(checkout, venv)
    return Design("new", checkout, _standins(work / "new-standins", old=False), venv, None)


def install(checkout: Path, venv: Path) -> None:
    """The design's own installer, once before the runs (act runs would wait on its lock otherwise)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, str(checkout / "actions" / "_shared" / "install.py")],
                          env={**os.environ, "FLEETFLOW_ACTION_VENV": str(venv)}, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"installing {checkout}'s fleetflow into {venv} failed:\n{done.stdout}\n{done.stderr}")


# --- one scenario -------------------------------------------------------------------------------------------------
class DropFirst(Faults):
    """No fault but one: the first delivery ``matches`` accepts is dropped."""

    def __init__(self, matches: Callable[[Event], bool]) -> None:
        super().__init__(0)
        self.matches = matches

    def deliver(self, events: list[Event]) -> list[Event]:
        out = []
        for event in events:
            if not self.dropped and self.matches(event):
                self.dropped += 1
                continue
            out.append(event)
        return out


def _ci_status(event: Event) -> bool:
    return event.name == "status" and event.payload["context"] == CI_CHECK


CI_CHECK = "ci/check"
AUTO_MERGE_ENVS = "---\n".join(
    _environment(n, a, "  pullRequest:\n    autoMerge: true\n" if n == "dev" else "").replace("soakTime: 1m",
                                                                                              "soakTime: 0s")
    for n, a in SHORT_CHAIN.items())


class Observed(World):
    """tests/test_event_loop.py's World under act, every run kept (a failed job is an outcome here, not a crash);
    ``old``: the old design's job filter (none) and concurrency (none at the workflow level)."""

    def __init__(self, fleet: Fleet, act: act_e2e.World, *, old: bool, failing: frozenset[str],
                 faults: Faults) -> None:
        super().__init__(fleet, failing=failing, faults=faults, act=act)
        self.results: list[tuple[Event, actkit.ActResult]] = []
        if old:
            runs = itertools.count()
            self.loop.job_filter = lambda _event: True
            self.loop.group = lambda _event: f"delivery-{next(runs)}"

    def auto_merge(self) -> None:
        """``automerge-ci-dropped``: dev merges by ``autoMerge`` once ``ci/check`` (required) is green; a CI posts
        it on every fleetflow PR head; the people merge the other environments' PRs only."""
        self.auto = True
        self.checked: set[str] = set()
        _stub(self).repo(self.gitops).protection["dev"] = [CI_CHECK]
        self.loop.actors.append(self.ci)

    def people(self) -> None:
        if not getattr(self, "auto", False):
            return super().people()
        repo = _stub(self).repo(self.gitops)
        for pr in repo.list_pulls():
            if pr.state == "open" and pr.head_ref.startswith("fleetflow/") and pr.base_ref != "dev":
                repo.merge_pull(pr.number)

    def ci(self) -> None:
        repo = _stub(self).repo(self.gitops)
        for pr in repo.list_pulls():
            if pr.state == "open" and pr.head_ref.startswith("fleetflow/") and pr.head_sha not in self.checked:
                self.checked.add(pr.head_sha)
                repo.add_status(pr.head_sha, "success", CI_CHECK, "CI passed", creator="ci-app[bot]")

    def push_main(self) -> str:
        if not getattr(self, "auto", False):
            return super().push_main()
        assert self.act is not None
        files = {".environments/envs.yaml": AUTO_MERGE_ENVS, "workloads/app.yaml": SHORT_CHAIN_WORKLOAD,
                 WORKFLOW: self.act.cp_workflow.read_text()}
        return self.fleet.push_main(files, "chain dev -> qa -> prod-eu, dev with autoMerge")

    def runner(self, event: Event) -> None:
        assert self.act is not None
        result = self.act.deliver(event)
        self.seconds.append(result.seconds)
        self.results.append((event, result))

    def failed_jobs(self) -> list[str]:
        return [f"{e.name}: {job}" for e, r in self.results for job, state in r.job_results().items()
                if state != "success"] + [f"{e.name}: act exit {r.returncode}" for e, r in self.results
                                          if r.returncode != 0 and not r.job_results()]

    def jobs(self) -> list[tuple[str, list[str]]]:
        """Per act run: the event and the jobs that ran (their names as act gives them, the repository cut)."""
        return [(e.name, sorted(job.rsplit("/", 1)[-1] for job in r.job_results())) for e, r in self.results]


@dataclass
class Outcome:
    design: str
    scenario: str
    passed: bool
    how: str
    runs: Counter[str] = field(default_factory=Counter)
    failed_jobs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""
    log: list[str] = field(default_factory=list)  # per act run: the delivery and its jobs' results
    jobs: list[tuple[str, list[str]]] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)


def _stub(world: World) -> GitHubStub:
    return world.fleet.stub  # type: ignore[attr-defined, no-any-return]


def _state_line(world: World, sha: str) -> str:
    fleet = world.fleet
    pinned = [env for env in CHAIN if fleet.pin(env) == sha]
    gates = {env: fleet.cp_status(sha, env) for env in CHAIN}
    prs = [f"{p.head_ref} {'merged' if p.merged else p.state}" for p in _stub(world).repo(world.gitops).list_pulls()]
    return (f"pinned: {', '.join(pinned) or 'none'}; records: "
            + ", ".join(f"{env} {state or '-'}" for env, state in gates.items())
            + f"; PRs: {', '.join(prs) or 'none'}")


def _env_commit(world: World, ref: str) -> str | None:
    try:
        text = git(world.fleet.root, "--git-dir", world.fleet.gitops_url, "show", f"{ref}:.fleetflow/state.json")
    except subprocess.CalledProcessError:
        return None
    return str(json.loads(text).get("envCommit"))


def _debug_config(env: str) -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env-wide\n  labels: {platform-config: \"true\"}\n"
            f"data:\n  LOG_LEVEL: debug\n  ENVIRONMENT: {env}\n")


def _chain(world: World, ticks: int) -> bool:
    """A push to main, then deliveries until the chain rolled out (or the loop's limits): rolled out?"""
    sha = world.push_main()
    world.loop.run(world.loop.changes(), done=world.rolled_out(sha), max_ticks=ticks)
    return world.end_state(sha) == EXPECTED


def _scenario(name: str, world: World, ticks: int) -> tuple[bool, str]:
    main = lambda: world.fleet.branch_sha(world.fleet.cp_url, "main")  # noqa: E731
    if name == "chain" or name.startswith("faults-") or name.startswith("automerge"):
        rolled_out = _chain(world, ticks)
        return rolled_out, ("rolled out: " if rolled_out else "") + _state_line(world, main())
    if name.startswith("qa-fails-"):
        try:
            stops_at_qa(world)
        except AssertionError:
            return False, _state_line(world, main())
        return True, f"qa failed, prod-eu never pinned: {_state_line(world, main())}"
    if name.startswith("env-branch-"):
        env = name.removeprefix("env-branch-")
        if not _chain(world, ticks):
            return False, "the chain itself did not roll out"
        change = world.fleet.push_env(env, {"configs.yaml": _debug_config(env)}, f"{env}: LOG_LEVEL debug")
        heads = (f"refs/heads/fleetflow/{env}", f"refs/heads/{env}")
        reached = lambda: change in {_env_commit(world, head) for head in heads}  # noqa: E731
        world.loop.run(world.loop.changes(), done=reached, max_runs=len(world.loop.runs) + 12, max_ticks=3)
        if reached():
            return True, f"the {env} branch change reached {env}'s GitOps PR"
        return False, f"the {env} branch change reached no GitOps branch in 3 cron ticks"
    raise ValueError(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}")


def run_one(design: Design, name: str, root: Path, *, ticks: int = 12) -> Outcome:
    """One scenario on its own stand-in server and repositories (so two can run side by side); ``ticks``: the cron
    ticks the loop may add when nothing is pending (tests/eventloop.py ``Loop.run``'s ``max_ticks``)."""
    seed = int(name.rsplit("-", 1)[1]) if name[-1].isdigit() else 0
    faults = faulty(seed) if seed else DropFirst(_ci_status) if name == "automerge-ci-dropped" else Faults()
    failing = frozenset({"qa-2"}) if name.startswith("qa-fails-") else frozenset()
    root.mkdir(parents=True)
    stub = GitHubStub(root=root / "ghstub").start()
    started = time.monotonic()
    try:
        act = act_e2e.make_world(stub, root, **design.parts())
        act.fleet.stub = stub  # type: ignore[attr-defined]
        world = Observed(act.fleet, act, old=design.name == "old", failing=failing, faults=faults)
        if name.startswith("automerge"):
            world.auto_merge()
        try:
            passed, how = _scenario(name, world, ticks)
            error = ""
        except Exception as exc:  # a harness failure is reported as such, never as an outcome of the design
            passed, how, error = False, "harness error", f"{type(exc).__name__}: {exc}"
        pinned = [env for env in CHAIN if world.fleet.pin(env)]
        act.fleet.forge.close()
    finally:
        stub.stop()
    if stub.server_errors or stub.schema_errors:
        error += " stand-in: " + "; ".join(stub.server_errors + stub.schema_errors)[:2000]
    log = [f"{e.describe()} -> " + ", ".join(f"{job.rsplit('/', 1)[-1]}: {state}"
                                           for job, state in r.job_results().items())
           + "".join(f"\n      error: {text}" for text in r.annotations("error"))
           for e, r in world.results]
    return Outcome(design.name, name, passed and not error, how, Counter(e.name for e, _ in world.results),
                   world.failed_jobs(), time.monotonic() - started, error.strip(), log, world.jobs(), pinned)
