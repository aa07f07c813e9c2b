"""What each GitHub event means (``fleetflow.promotion.events.route`` and ``fleetflow route``), on real-shaped payloads
(``tests/events.py``, validated against GitHub's webhook schemas), including hostile ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleetflow.cli import main
from fleetflow.promotion.events import route
from tests import events as ev
from tests.ghstub.openapi import subset

ENVS = ["dev", "qa", "prod-eu", "prod-us", "dr"]
CP, GITOPS = "contoso/control-plane", "contoso/gitops"
OLD, NEW = ev.fake_sha("old"), ev.fake_sha("new")
FLEETFLOW = [sys.executable, "-c", "from fleetflow.cli import main; main()"]


@dataclass(frozen=True)
class Case:
    event: str
    payload: Callable[[], dict[str, Any]]
    action: str
    environments: list[str] = field(default_factory=list)
    commit: str = ""
    release: bool = False
    invalid: bool = False


def dispatch(action: str, **payload: Any) -> Callable[[], dict[str, Any]]:
    return lambda: ev.repository_dispatch_event(CP, action, payload)


def manual(**inputs: Any) -> Callable[[], dict[str, Any]]:
    return lambda: ev.workflow_dispatch_event(CP, "refs/heads/main", inputs)


def pushed(ref: str, before: str = OLD, **kw: Any) -> Callable[[], dict[str, Any]]:
    return lambda: ev.push_event(CP, ref, before, NEW, **kw)


def status(context: str, state: str, branches: list[str]) -> Callable[[], dict[str, Any]]:
    return lambda: ev.status_event(GITOPS, NEW, context, state, branches)


def closed(head: str, base: str, merged: bool) -> Callable[[], dict[str, Any]]:
    return lambda: ev.pull_request_closed_event(GITOPS, 7, head, base, merged)


CASES: dict[str, Case] = {
    # control plane: pushes
    "push main promotes": Case("push", pushed("refs/heads/main"), "promote", [], NEW),
    "push main created": Case("push", pushed("refs/heads/main", created=True, before=ev.ZERO_SHA), "promote", [],
                              NEW),
    "push env branch schedules it": Case("push", pushed("refs/heads/qa"), "schedule", ["qa"]),
    "push other branch": Case("push", pushed("refs/heads/feature/x"), "none"),
    "push fleetflow head branch": Case("push", pushed("refs/heads/fleetflow/dev"), "none"),
    "push tag": Case("push", pushed("refs/tags/v1.0.0"), "none"),
    "push main deleted": Case("push", pushed("refs/heads/main", deleted=True), "none"),
    "push env branch deleted": Case("push", pushed("refs/heads/dev", deleted=True), "none"),
    # control plane: repository_dispatch
    "dispatch promote": Case("repository_dispatch", dispatch("fleetflow-promote", environment="qa", commit=NEW),
                             "promote", ["qa"], NEW),
    "dispatch promote no env": Case("repository_dispatch", dispatch("fleetflow-promote", commit=NEW), "promote",
                                    [], NEW),
    "dispatch promote upper-case sha": Case("repository_dispatch",
                                            dispatch("fleetflow-promote", environment="dr", commit=NEW.upper()),
                                            "promote", ["dr"], NEW),
    "dispatch other type": Case("repository_dispatch", dispatch("deploy", environment="qa", commit=NEW), "none"),
    "dispatch bad sha": Case("repository_dispatch", dispatch("fleetflow-promote", environment="qa", commit="HEAD~1"),
                             "none", invalid=True),
    "dispatch unknown env": Case("repository_dispatch",
                                 dispatch("fleetflow-promote", environment="staging", commit=NEW), "none",
                                 invalid=True),
    "dispatch null payload": Case("repository_dispatch",
                                  lambda: ev.repository_dispatch_event(CP, "fleetflow-promote", None), "none",
                                  invalid=True),
    "dispatch commit as a number": Case("repository_dispatch",
                                        dispatch("fleetflow-promote", environment="qa", commit=1234567), "none",
                                        invalid=True),
    # control plane: workflow_dispatch (inputs arrive as strings)
    "manual promote": Case("workflow_dispatch", manual(environment="prod-eu", commit=OLD, release="false"),
                           "promote", ["prod-eu"], OLD),
    "manual release": Case("workflow_dispatch", manual(environment="dev", commit=OLD, release="true"), "promote",
                           ["dev"], OLD, release=True),
    "manual short sha": Case("workflow_dispatch", manual(environment="", commit=NEW[:7]), "promote", [], NEW[:7]),
    "manual no commit": Case("workflow_dispatch", manual(environment="dev", commit=""), "none", invalid=True),
    "manual unknown env": Case("workflow_dispatch", manual(environment="Prod", commit=NEW), "none", invalid=True),
    "manual env with spaces": Case("workflow_dispatch", manual(environment=" qa ", commit=NEW), "none", invalid=True),
    # GitOps repo: statuses
    "status on env branch": Case("status", status("flux/dev-1", "success", ["dev"]), "check-rollout", ["dev"]),
    "status failure on env": Case("status", status("flux/qa-2", "failure", ["qa"]), "check-rollout", ["qa"]),
    "status on two env branches": Case("status", status("argo/x", "pending", ["qa", "dev", "main"]),
                                       "check-rollout", ["dev", "qa"]),
    "status own context": Case("status", status("fleetflow/dev", "success", ["dev"]), "none"),
    "status non-env branch": Case("status", status("flux/dev-1", "success", ["feature", "main"]), "none"),
    "status green on fleetflow PR head": Case("status", status("ci/lint", "success", ["fleetflow/dev"]), "schedule",
                                              ["dev"]),
    "status pending on fleetflow PR head": Case("status", status("ci/lint", "pending", ["fleetflow/dev"]), "none"),
    "status no branch": Case("status", status("flux/dev-1", "success", []), "none"),
    # GitHub lists at most 10 branches: ten that are not environment branches may hide one that is
    "status on 10 listed branches": Case("status", status("flux/dev-1", "success", [f"feature/{i}" for i in range(10)]),
                                         "check-rollout", sorted(ENVS)),
    "status on 9 listed branches": Case("status", status("flux/dev-1", "success", [f"feature/{i}" for i in range(9)]),
                                        "none"),
    # GitOps repo: pull requests
    "pr merged": Case("pull_request", closed("fleetflow/qa", "qa", True), "check-rollout", ["qa"]),
    "pr closed unmerged": Case("pull_request", closed("fleetflow/qa", "qa", False), "none"),
    "pr foreign head": Case("pull_request", closed("feature/hotfix", "qa", True), "none"),
    "pr into non-env base": Case("pull_request", closed("fleetflow/qa", "main", True), "none"),
    "pr from a fork's fleetflow/qa": Case("pull_request", lambda: ev.pull_request_closed_event(
        GITOPS, 9, "fleetflow/qa", "qa", True, head_repo="mallory/gitops"), "none"),
    "pr opened": Case("pull_request", lambda: {**closed("fleetflow/qa", "qa", False)(), "action": "opened"},
                      "none"),
    # both
    "schedule checks all": Case("schedule", lambda: ev.schedule_event(GITOPS), "check-rollout", sorted(ENVS)),
    "unrelated event": Case("issues", lambda: {"action": "opened"}, "none"),
}


def expected(case: Case) -> dict[str, Any]:
    return {"action": case.action, "environments": case.environments, "commit": case.commit,
            "release": case.release, "invalid": case.invalid}


def observed(decision: dict[str, Any]) -> dict[str, Any]:
    return {k: decision[k] for k in ("action", "environments", "commit", "release", "invalid")}


# --- the payloads are real-shaped --------------------------------------------------------------------------------
@pytest.mark.parametrize("builder", sorted(ev.SCHEMAS))
def test_builders_satisfy_github_webhook_schemas(builder: str) -> None:
    schemas = subset().webhook_schema_names()
    pointer = subset().component_pointer(schemas[ev.SCHEMAS[builder]])
    variants: dict[str, list[dict[str, Any]]] = {
        "push_event": [
            ev.push_event(CP, "refs/heads/main", OLD, NEW, with_installation=True),
            ev.push_event(CP, "refs/heads/dev", ev.ZERO_SHA, NEW, created=True),
            ev.push_event(CP, "refs/heads/dev", OLD, NEW, deleted=True),
            ev.push_event(CP, "refs/tags/v1", ev.ZERO_SHA, NEW, created=True, base_ref="refs/heads/main",
                          api="http://127.0.0.1:8080", clone_url="file:///srv/cp.git"),
        ],
        "status_event": [ev.status_event(GITOPS, NEW, "flux/dev-1", s, ["dev"]) for s in
                         ("pending", "success", "failure", "error")],
        "pull_request_closed_event": [closed("fleetflow/qa", "qa", True)(), closed("x", "qa", False)(),
                                      ev.pull_request_closed_event(GITOPS, 9, "fleetflow/dev", "dev", True,
                                                                   head_repo="mallory/gitops")],
        "pull_request_opened_event": [ev.pull_request_opened_event(CP, 4, "change-qa", "qa")],
        "repository_dispatch_event": [dispatch("fleetflow-promote", environment="qa", commit=NEW)(),
                                      ev.repository_dispatch_event(CP, "fleetflow-promote", None)],
        "workflow_dispatch_event": [manual(environment="qa", commit=NEW, release="true")(),
                                    ev.workflow_dispatch_event(CP, "refs/heads/main", None)],
    }
    for payload in variants[builder]:
        assert subset().errors(pointer, payload) == []
        json.dumps(payload)  # serialisable as GitHub sends it


def test_every_webhook_the_routing_reads_has_a_builder() -> None:
    assert {"push", "status", "pull-request-closed", "repository-dispatch-sample.collected",
            "workflow-dispatch"} <= set(ev.SCHEMAS.values()) <= set(subset().webhook_schema_names())


# --- the routing table ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_route_function(name: str) -> None:
    case = CASES[name]
    decision = route(case.event, case.payload(), environments=ENVS)
    assert observed(decision.model_dump()) == expected(case), decision.reason
    assert decision.reason


def test_route_env_branch_named_differently() -> None:
    payload = ev.push_event(CP, "refs/heads/env/production-eu", OLD, NEW)
    decision = route("push", payload, environments=ENVS, env_branches={"env/production-eu": "prod-eu"})
    assert (decision.action, decision.environments) == ("schedule", ["prod-eu"])
    assert route("push", ev.push_event(CP, "refs/heads/prod-eu", OLD, NEW), environments=ENVS,
                 env_branches={"env/production-eu": "prod-eu"}).action == "none"


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_route(tmp_path: Path, event: str, payload: dict[str, Any], *extra: str, process: bool = False) -> Ran:
    """``fleetflow route`` on a payload file: in-process through click (fast), or as its own process (the
    workflows' way: the real console entry point, real exit code)."""
    path = tmp_path / f"event-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(payload))
    args = ["route", "--event-name", event, "--event-path", str(path), *extra]
    if process:
        done = subprocess.run([*FLEETFLOW, *args], capture_output=True, text=True, timeout=60,
                              env=os.environ | {"PYTHONPATH": str(Path(__file__).parent.parent)})
        return Ran(done.returncode, done.stdout, done.stderr)
    result = CliRunner().invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


@pytest.mark.parametrize("name", list(CASES))
def test_route_cli(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    done = run_route(tmp_path, case.event, case.payload(), "--environments", ",".join(ENVS), "--format", "json")
    assert observed(json.loads(done.stdout)["result"]) == expected(case)
    assert done.returncode == (1 if case.invalid else 0)
    assert done.stderr == ""


@pytest.mark.parametrize("name", ["push main promotes", "push env branch schedules it", "manual unknown env",
                                  "pr merged", "status own context"])
def test_route_cli_process(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    done = run_route(tmp_path, case.event, case.payload(), "--environments", ",".join(ENVS), "--format", "json",
                     process=True)
    assert observed(json.loads(done.stdout)["result"]) == expected(case)
    assert done.returncode == (1 if case.invalid else 0)


def test_route_cli_text_and_errors(tmp_path: Path) -> None:
    done = run_route(tmp_path, "push", pushed("refs/heads/main")(), "--environments", "dev,qa")
    assert done.returncode == 0 and done.stdout.splitlines()[0] == f"promote  {NEW}"
    bad = run_route(tmp_path, "workflow_dispatch", manual(environment="nope", commit=NEW)(), "--environments", "dev")
    assert bad.returncode == 1 and "unknown environment 'nope'" in bad.stderr
    not_json = tmp_path / "event.json"
    not_json.write_text("{")
    result = CliRunner().invoke(main, ["route", "--event-name", "push", "--event-path", str(not_json),
                                       "--environments", "dev"])
    done = Ran(result.exit_code, result.stdout, result.stderr)
    assert done.returncode == 1 and "is not JSON" in done.stderr


# --- hostile input is data ---------------------------------------------------------------------------------------
def hostile(marker: Path) -> list[str]:
    """Values that would run ``touch marker`` (or leak a secret, or delete files) if anything evaluated them."""
    return [
        f"a$(touch${{IFS}}{marker})",
        f"`touch {marker}`",
        "${{ github.token }}",
        f'"; touch {marker}; rm -rf ~; "',
        f"x'; touch {marker}; echo '",
        f"$(touch {marker})\n::set-output name=action::promote",
    ]


def hostile_cases(marker: Path) -> list[tuple[str, str, dict[str, Any], str]]:
    """(label, event, payload, expected action); every hostile value in every field a person can set."""
    out: list[tuple[str, str, dict[str, Any], str]] = []
    for i, bad in enumerate(hostile(marker)):
        out += [
            (f"branch {i}", "push", ev.push_event(CP, f"refs/heads/{bad}", OLD, NEW, message=bad), "none"),
            (f"tag {i}", "push", ev.push_event(CP, f"refs/tags/{bad}", OLD, NEW), "none"),
            (f"dispatch env {i}", "repository_dispatch",
             ev.repository_dispatch_event(CP, "fleetflow-promote", {"environment": bad, "commit": NEW}), "invalid"),
            (f"dispatch commit {i}", "repository_dispatch",
             ev.repository_dispatch_event(CP, "fleetflow-promote", {"environment": "qa", "commit": bad}), "invalid"),
            (f"dispatch type {i}", "repository_dispatch",
             ev.repository_dispatch_event(CP, bad, {"environment": "qa", "commit": NEW}), "none"),
            (f"manual env {i}", "workflow_dispatch",
             ev.workflow_dispatch_event(CP, "refs/heads/main", {"environment": bad, "commit": NEW}), "invalid"),
            (f"manual commit {i}", "workflow_dispatch",
             ev.workflow_dispatch_event(CP, "refs/heads/main", {"environment": "dev", "commit": bad,
                                                                "release": bad}), "invalid"),
            (f"pr head {i}", "pull_request",
             ev.pull_request_closed_event(GITOPS, 3, bad, "dev", True, title=bad, body=bad), "none"),
            (f"pr base {i}", "pull_request",
             ev.pull_request_closed_event(GITOPS, 3, "fleetflow/dev", bad, True, title=bad), "none"),
            (f"status branch {i}", "status", ev.status_event(GITOPS, NEW, "flux/dev-1", "success", [bad]), "none"),
            (f"status own {i}", "status",
             ev.status_event(GITOPS, NEW, f"fleetflow/{bad}", "success", ["dev"], description=bad), "none"),
        ]
    return out


def test_hostile_values_are_data_for_route(tmp_path: Path) -> None:
    marker = Path(f"/tmp/pwned-{uuid.uuid4().hex}")
    cases = hostile_cases(marker)
    for label, event, payload, want in cases:
        decision = route(event, payload, environments=ENVS)
        got = "invalid" if decision.invalid else decision.action
        assert got == want, (label, decision)
        assert decision.commit in ("", NEW), label
        assert set(decision.environments) <= set(ENVS), label
    # and through the command line (every case in-process, one of each kind as its own process)
    for n, (label, event, payload, want) in enumerate(cases):
        done = run_route(tmp_path, event, payload, "--environments", ",".join(ENVS), "--format", "json",
                         process=n in (3, 12, 27, 40, 51, 63))
        decision = json.loads(done.stdout)["result"]
        assert ("invalid" if decision["invalid"] else decision["action"]) == want, label
        assert done.returncode == (1 if want == "invalid" else 0), label
        assert not [line for line in done.stdout.splitlines() if line.startswith("::")], label
    assert not marker.exists()


HOSTILE_CONTEXT = "flux/$(id)\n::error title=pwned::x\n${{ github.token }}"


def test_hostile_status_context_is_only_a_label(tmp_path: Path) -> None:
    """A status with a hostile context on a real env branch is routed (the context is only a label); in JSON
    output it is escaped, never a workflow command on a line of its own."""
    payload = ev.status_event(GITOPS, NEW, HOSTILE_CONTEXT, "success", ["dev"])
    decision = route("status", payload, environments=ENVS)
    assert (decision.action, decision.environments) == ("check-rollout", ["dev"])
    done = run_route(tmp_path, "status", payload, "--environments", ",".join(ENVS), "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["result"]["environments"] == ["dev"]
    assert not [line for line in done.stdout.splitlines() if line.startswith("::")]


def test_hostile_status_context_in_text_output(tmp_path: Path) -> None:
    payload = ev.status_event(GITOPS, NEW, HOSTILE_CONTEXT, "success", ["dev"])
    done = run_route(tmp_path, "status", payload, "--environments", ",".join(ENVS))
    assert not [line for line in done.stdout.splitlines() if line.startswith("::")]


# --- realistic mistakes -----------------------------------------------------------------------------------------
def test_a_fork_s_branch_named_fleetflow_env_is_not_a_promotion() -> None:
    """A pull request's ``head.repo`` is the repository its branch lives in (GitHub, "Webhook events and payloads",
    pull_request: ``head.repo``, null when the fork was deleted). fleetflow pushes its ``fleetflow/<env>`` head
    branches to the GitOps repository itself, so a merged PR whose head is a fork's branch of that name is a person's
    change, not fleetflow's promotion: until 2026-11-29 it was routed to check-rollout of the environment."""
    fork = ev.pull_request_closed_event(GITOPS, 9, "fleetflow/prod-eu", "prod-eu", True, head_repo="mallory/gitops")
    decision = route("pull_request", fork, environments=ENVS)
    assert decision.action == "none" and "mallory/gitops" in decision.reason, decision
    deleted = ev.pull_request_closed_event(GITOPS, 9, "fleetflow/prod-eu", "prod-eu", True, head_repo="mallory/x")
    deleted["pull_request"]["head"]["repo"] = None
    assert route("pull_request", deleted, environments=ENVS).action == "none"
    ours = ev.pull_request_closed_event(GITOPS, 9, "fleetflow/prod-eu", "prod-eu", True)
    assert route("pull_request", ours, environments=ENVS).environments == ["prod-eu"]


def test_a_status_on_a_commit_of_many_branches_checks_every_environment() -> None:
    """The status payload's ``branches`` "includes a maximum of 10 branches" (GitHub, "Webhook events and payloads",
    status; the same words in github/rest-api-description's ``webhook-status`` schema): a commit on more branches may
    be on an environment branch the list leaves out. Until 2026-11-29 such a report was routed to nothing."""
    ten = ev.status_event(GITOPS, NEW, "flux/qa-1", "success", [f"renovate/x-{i}" for i in range(10)])
    decision = route("status", ten, environments=ENVS)
    assert (decision.action, decision.environments) == ("check-rollout", sorted(ENVS))
    assert "at most 10" in decision.reason


@pytest.mark.parametrize(("event", "payload", "reason", "hint"), [
    # workflow_dispatch: the approval environment of the control-plane workflow is format(approval-environment,
    # inputs.environment) as typed; names are compared without case ("Environment names are not case sensitive",
    # GitHub, "Managing environments for deployment") but not trimmed, so " qa " is not fleetflow-qa's approval
    ("workflow_dispatch", manual(environment=" qa ", commit=NEW), "unknown environment ' qa '",
     "did you mean 'qa'?"),
    ("workflow_dispatch", manual(environment="Prod-EU", commit=NEW), "unknown environment 'Prod-EU'",
     "did you mean 'prod-eu'?"),
    ("workflow_dispatch", manual(environment="qa", commit="main"), "commit 'main' is not a sha",
     "not a branch or tag name: git rev-parse main"),
    ("workflow_dispatch", lambda: ev.workflow_dispatch_event(CP, "refs/heads/main", None),
     "input commit is missing", "give input commit"),
    # repository_dispatch: client_payload is whatever POST /repos/{owner}/{repo}/dispatches was sent
    ("repository_dispatch", lambda: {k: v for k, v in ev.repository_dispatch_event(
        CP, "fleetflow-promote", None).items() if k != "client_payload"},
     "client_payload is missing, not an object", '"client_payload": {"environment"'),
    ("repository_dispatch", lambda: ev.repository_dispatch_event(CP, "fleetflow-promote", "qa@" + NEW),  # type: ignore[arg-type]
     "client_payload is a string", "POST /repos/{owner}/{repo}/dispatches"),
    ("repository_dispatch", dispatch("fleetflow-promote", environment="qa", sha=NEW),
     "client_payload.commit is missing", "given: environment, sha"),
    ("repository_dispatch", dispatch("fleetflow-promote", environment="qa", commit=1234567),
     "client_payload.commit is a number, not a string", "as a string"),
    ("repository_dispatch", dispatch("fleetflow-promote", environment=["qa"], commit=NEW),
     "client_payload.environment is a list, not a string", "as a string"),
])
def test_a_bad_manual_request_says_which_field_and_how_to_fix_it(
        event: str, payload: Callable[[], dict[str, Any]], reason: str, hint: str, tmp_path: Path) -> None:
    """Until 2026-11-29 every one of these said "commit '' is not a sha" or "unknown environment" with the hint
    "check the workflow_dispatch / dispatch inputs"; a commit sent as a JSON number was taken as a sha and " qa "
    was trimmed to qa (past the approval environment named after the input as typed)."""
    decision = route(event, payload(), environments=ENVS)
    assert decision.invalid and decision.action == "none"
    assert reason in decision.reason and hint in decision.hint, (decision.reason, decision.hint)
    done = run_route(tmp_path, event, payload(), "--environments", ",".join(ENVS))
    assert done.returncode == 1 and reason in done.stderr and hint in done.stderr, done.stderr


def test_a_forced_push_to_main_says_reconcile_moves_forward_only() -> None:
    """``forced`` is true for a force push ("Webhook events and payloads", push). main reset to an older commit is
    not promoted by reconcile (it never moves an environment back): the reason says so instead of "promote"."""
    back = ev.push_event(CP, "refs/heads/main", NEW, OLD, forced=True)
    decision = route("push", back, environments=ENVS)
    assert decision.action == "promote" and "forced push" in decision.reason and "fleetflow promote" in decision.reason
    assert "forced" not in route("push", ev.push_event(CP, "refs/heads/main", OLD, NEW), environments=ENVS).reason
