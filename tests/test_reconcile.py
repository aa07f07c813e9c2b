"""``reconcile`` on both forges: the whole chain driven by reconcile alone, idempotence, half-done promotions,
holds, failures, autoMerge, and the neighbours of ``--environment``. The people (merging PRs, pushing) and the
clusters (posting statuses) are played in Python; every promotion step is reconcile's."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetflow.cli import main as cli
from fleetflow.errors import ForgeError, InputError, Problem
from fleetflow.promotion import context
from fleetflow.promotion.pin import Pin
from fleetflow.promotion.promote import promote
from fleetflow.promotion.reconcile import ReconcileOutcome, environments_to_reconcile, reconcile
from fleetflow.promotion.schedule import ScheduleOutcome
from fleetflow.promotion.status import fleet_status
from tests.fleet import ENVIRONMENTS, Fleet, _environment, git
from tests.test_promotion import fleet_config, make_local_fleet


def run(fleet: Fleet, environment: str | None = None) -> ReconcileOutcome:
    with fleet.context() as ctx:
        return reconcile(ctx, environment)


def did(outcome: ReconcileOutcome) -> dict[str, list[str]]:
    return {e.environment: [s.step for s in e.did] for e in outcome.environments if e.did}


def refs(fleet: Fleet) -> dict[str, str]:
    from tests.fleet import git

    out = {}
    for url in (fleet.cp_url, fleet.gitops_url):
        for line in git(fleet.root, "--git-dir", url, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
            name, sha = line.split()
            out[f"{url}:{name}"] = sha
    return out


def report(fleet: Fleet, env: str, states: dict[int, str] | None = None) -> None:
    """The clusters apply the merged commit and report; then the soak time passes."""
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report(env, states)
    fleet.clock.advance(timedelta(minutes=2))


def open_prs(fleet: Fleet) -> dict[str, int]:
    found = {}
    for env in ENVIRONMENTS:
        pr = fleet.open_pr(env)
        if pr is not None:
            found[env] = pr.number
    return found


def test_reconcile_alone_drives_the_whole_chain(fleet: Fleet) -> None:
    sha = fleet.branch_sha(fleet.cp_url, "main")
    first = run(fleet)
    assert did(first) == {"dev": ["promote"]}
    assert fleet.pin("dev") == sha and list(open_prs(fleet)) == ["dev"]
    [dev] = [e for e in first.environments if e.environment == "dev"]
    assert dev.waiting.startswith("PR #") and dev.found.pull_request is not None
    for env, nxt in (("dev", ["qa"]), ("qa", ["prod-eu", "prod-us"])):
        fleet.approve(env)
        report(fleet, env)
        outcome = run(fleet)
        assert did(outcome) == {env: ["gate"], **{n: ["promote"] for n in nxt}}, did(outcome)
        assert fleet.cp_status(sha, env) == "success"
        assert all(fleet.pin(n) == sha for n in nxt)
    fleet.approve("prod-eu")
    report(fleet, "prod-eu")
    assert did(run(fleet)) == {"prod-eu": ["gate"]}  # fan-in: dr waits for prod-us
    assert fleet.pin("dr") == ""
    fleet.approve("prod-us")
    report(fleet, "prod-us")
    assert did(run(fleet)) == {"prod-us": ["gate"], "dr": ["promote"]}
    fleet.approve("dr")
    report(fleet, "dr")
    assert did(run(fleet)) == {"dr": ["gate"]}
    assert all(fleet.cp_status(sha, env) == "success" for env in ENVIRONMENTS)
    # converged: the next run finds nothing to do and writes nothing
    before = refs(fleet)
    again = run(fleet)
    assert did(again) == {} and refs(fleet) == before
    assert {e.waiting for e in again.environments} == {f"main@{sha[:12]} rolled out"}


def test_a_merged_pr_is_gated_in_the_same_run_and_a_new_main_commit_follows(fleet: Fleet) -> None:
    first = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    outcome = run(fleet)
    # dev: the gate of the first commit is recorded before dev moves on, so qa gets the first commit
    assert did(outcome) == {"dev": ["gate", "promote"], "qa": ["promote"]}
    assert fleet.cp_status(first, "dev") == "success"
    assert fleet.pin("dev") == second and fleet.pin("qa") == first


def test_a_run_reads_each_pin_once(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """reconcile looks at an environment's pin when it observes it, again to take its steps (``pinned``) and again
    for each upstream whose gate it decides (``_taken_downstream``). A commit's file does not change: it is parsed
    once per run (ruamel round trip plus the complex-key check, a few ms a file)."""
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    run(fleet)  # dev's gate recorded, qa promoted: dev's gate now reads qa's pin
    parsed: Counter[str] = Counter()
    real = context.read_pin

    def counting(text: str | None, where: str) -> Pin:
        parsed[where] += 1
        return real(text, where)

    monkeypatch.setattr(context, "read_pin", counting)
    run(fleet)
    assert {"dev/base-repo.yaml", "qa/base-repo.yaml"} <= set(parsed) and set(parsed.values()) == {1}, parsed


def test_a_mistake_on_an_environment_branch_stops_its_schedule_not_the_gate_of_what_rolled_out(
    fleet: Fleet,
) -> None:
    """dev rolled main@C out (its PR merged, its clusters reported), then an engineer pushed a typo to dev's branch.
    The gate, ``status`` and reconcile's look at dev loaded the whole plane at the branch's tip, so the typo stopped
    dev's gate and qa never got C. They need only where dev's output goes (``context.gitops_repo_at``): the gate
    records success, qa is promoted, and the typo stops the schedule of the new dev commit, at its line, on every
    run until it is fixed. ``status`` says it too, and still shows dev's GitOps branch."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    text = git(fleet.root, "--git-dir", fleet.cp_url, "show", "dev:cluster-types.yaml")
    fleet.push_env("dev", {"cluster-types.yaml": text.replace("kind: ClusterType", "kind: ClusterType\n  bad: [")},
                   "a typo")
    outcome = run(fleet)
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert did(outcome) == {"dev": ["gate"], "qa": ["promote"]}
    assert fleet.cp_status(sha, "dev") == "success" and fleet.pin("qa") == sha
    assert [(p.location.file, p.location.line) for p in dev.problems if p.location] == [("dev/cluster-types.yaml", 3)]
    assert dev.exit_code == 1 and "invalid YAML" in dev.problems[0].message
    with fleet.context() as ctx:
        [shown] = [e for e in fleet_status(ctx) if e.name == "dev"]
    assert shown.pinned == sha and shown.gate.state == "success" and shown.gitops is not None  # and its PR
    assert "(cannot read dev: dev/cluster-types.yaml:3:6: invalid YAML" in shown.gate.description  # and why
    again = run(fleet)
    assert did(again) == {} and [e.problems for e in again.environments if e.environment == "dev"] == [dev.problems]


def test_a_mistake_pushed_to_main_stops_its_own_promotion_not_the_rollouts_on_their_way(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dev rolled main@C out, then an engineer pushed a typo to main's Environments. Every fleet command read the
    Environments at main's tip, so the typo stopped dev's gate, qa's promotion and gate, ``status``, ``metrics``
    and ``doctor`` for commits already on their way (until 2026-11-28). They now go by the newest commit of main
    whose Environments read, and warn with the tip's problem at its line; the tip's own promotion fails at that
    line (dev says so on every run) until a fix is pushed, which is promoted as any commit is."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    envs_file = git(fleet.root, "--git-dir", fleet.cp_url, "show", "main:.environments/envs.yaml")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    bad = fleet.push_main({".environments/envs.yaml": f"{envs_file}\n  typo: [\n"}, "a typo")
    warned: list[Problem] = []
    with fleet.context() as ctx:
        ctx.warn = warned.append
        outcome = reconcile(ctx)
    assert did(outcome) == {"dev": ["gate"], "qa": ["promote"]}
    assert fleet.cp_status(sha, "dev") == "success" and fleet.pin("qa") == sha and fleet.pin("dev") == sha
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert dev.exit_code == 1 and "invalid YAML" in dev.problems[0].message
    line = len(envs_file.splitlines()) + 2  # the YAML parser names the end of the text
    assert [(p.location.file, p.location.line) for p in dev.problems if p.location] == [
        ("main/.environments/envs.yaml", line)]
    assert [(w.location.file, w.location.line) if w.location else None for w in warned] == [
        ("main/.environments/envs.yaml", line), None]
    assert warned[0].message.startswith(f"main's tip main@{bad[:12]} does not read: invalid YAML")
    assert f"goes by the Environments of main@{sha[:12]}, the newest commit before main's tip" in warned[1].message

    fleet.approve("qa")  # the next gate, through the command line: the warnings, and the rollout recorded
    report(fleet, "qa")
    cli_environment(fleet, monkeypatch)
    args = ["--forge", fleet.forge.name, "--control-plane", fleet.cp_id]
    gate = CliRunner().invoke(cli, ["check-rollout", "--environment", "qa", *args])
    assert gate.exit_code == 0, gate.output
    assert f"warning: main/.environments/envs.yaml:{line}:" in gate.stderr and fleet.cp_status(sha, "qa") == "success"
    for command in (["status"], ["metrics"], ["doctor"]):
        shown = CliRunner().invoke(cli, [*command, *args, "--format", "json"])
        data = json.loads(shown.stdout)
        # doctor says no for what this test fleet lacks (the workflows), not for main's tip
        assert shown.exit_code == 0 or (command == ["doctor"] and "envs.yaml" not in str(data["problems"])), \
            shown.output
        assert data["warnings"][0]["location"] == {"file": "main/.environments/envs.yaml", "line": line, "column": 1}
    event = fleet.root / "event.json"  # route, as the workflows run it on a push to an environment branch
    event.write_text(json.dumps({"ref": "refs/heads/qa", "after": fleet.branch_sha(fleet.cp_url, "qa")}))
    routed = CliRunner().invoke(cli, ["route", *args, "--event-name", "push", "--event-path", str(event)])
    assert routed.exit_code == 0 and routed.stdout.startswith("schedule qa"), routed.output
    assert f"warning: main/.environments/envs.yaml:{line}:" in routed.stderr

    fixed = fleet.push_main({".environments/envs.yaml": envs_file}, "the typo fixed")
    warned.clear()
    with fleet.context() as ctx:
        ctx.warn = warned.append
        outcome = reconcile(ctx)
    assert warned == [] and fleet.pin("dev") == fixed and did(outcome)["dev"] == ["promote"]
    assert all(not e.problems for e in outcome.environments)


def test_with_no_readable_commit_near_main_s_tip_the_tip_s_problem_stops_the_run(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the last ``LOOK_BACK`` commits of main are read for Environments: past them, the run stops with the
    tip's problem (exit 1), as it did before, and writes nothing."""
    monkeypatch.setattr(context, "LOOK_BACK", 1)
    envs_file = git(fleet.root, "--git-dir", fleet.cp_url, "show", "main:.environments/envs.yaml")
    fleet.push_main({".environments/envs.yaml": f"{envs_file}\n  first: [\n"}, "a typo")
    fleet.push_main({".environments/envs.yaml": f"{envs_file}\n  second: [\n"}, "another")
    before = refs(fleet)
    with fleet.context() as ctx, pytest.raises(InputError, match="invalid YAML") as raised:
        reconcile(ctx)
    assert raised.value.problems()[0].location.line == len(envs_file.splitlines()) + 2  # type: ignore[union-attr]
    assert refs(fleet) == before


def test_downstream_gets_a_commit_that_rolled_out_upstream_before_it_moved_on(fleet: Fleet) -> None:
    """qa missed the moment dev succeeded on the first commit (no reconcile ran in between): it still gets it."""
    first = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    run(fleet, "dev")  # the gate records success; qa is dev's neighbour: promoted too
    assert fleet.pin("qa") == first
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    run(fleet)
    assert fleet.pin("dev") == second and fleet.pin("qa") == first  # second not rolled out in dev yet
    fleet.approve("dev")
    report(fleet, "dev")
    outcome = run(fleet)
    assert did(outcome)["qa"] == ["promote"] and fleet.pin("qa") == second  # supersedes qa's open PR


def test_waiting_for_reports_names_the_gates_that_wait_for_clusters(fleet: Fleet) -> None:
    """``waitingForReports`` (the gitops workflow holds its concurrency slot while it is not empty): dev's gate is
    pending with one of its two clusters in; once both are in it soaks (no report can end a soak: []), then
    succeeds ([])."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    assert run(fleet).waiting_for_reports == []  # dev promoted, its PR not merged yet
    fleet.approve("dev")
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report("dev", {2: "missing"})
    outcome = run(fleet)
    assert did(outcome) == {"dev": ["gate"]} and fleet.cp_status(sha, "dev") == "pending"
    assert outcome.waiting_for_reports == ["dev"] and outcome.model_dump()["waitingForReports"] == ["dev"]
    fleet.clusters_report("dev")
    soaking = run(fleet)
    assert did(soaking) == {"dev": ["gate"]} and fleet.cp_status(sha, "dev") == "pending"
    assert soaking.waiting_for_reports == []
    fleet.clock.advance(timedelta(minutes=2))
    done = run(fleet)
    assert did(done) == {"dev": ["gate"], "qa": ["promote"]} and done.waiting_for_reports == []


def test_half_done_promotion_is_finished(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin was pushed, then opening the PR failed (the run died): the next run opens it."""
    sha = fleet.branch_sha(fleet.cp_url, "main")

    def refused(*_args: object, **_kwargs: object) -> None:
        raise ForgeError("GitHub is down")

    monkeypatch.setattr(fleet.forge, "create_pull", refused)
    broken = run(fleet)
    [dev] = [e for e in broken.environments if e.environment == "dev"]
    assert dev.exit_code == 3 and "GitHub is down" in dev.problems[0].message
    assert fleet.pin("dev") == sha and open_prs(fleet) == {}
    monkeypatch.undo()
    fixed = run(fleet)
    assert did(fixed) == {"dev": ["schedule"]}
    assert list(open_prs(fleet)) == ["dev"]
    assert fleet.gitops_state("dev", "refs/heads/fleetflow/dev").main_commit == sha


def test_pin_pushed_without_any_schedule_is_scheduled(fleet: Fleet) -> None:
    """A pin written by hand (or by a run killed right after its push): reconcile schedules it."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    fleet.push_env("dev", {"base-repo.yaml": f"""
        apiVersion: fleetflow.dev/v1alpha1
        kind: BaseRepo
        metadata:
          name: main
        spec:
          repo: {fleet.cp_id}
          branch: main
          path: .
          commit: {sha}
    """}, "pin by hand")
    assert did(run(fleet)) == {"dev": ["schedule"]}
    assert list(open_prs(fleet)) == ["dev"]


def test_env_branch_change_is_scheduled_and_a_closed_pr_is_not_reopened(fleet: Fleet) -> None:
    sha = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    run(fleet)
    fleet.push_env("dev", {"configs.yaml": fleet_config("debug")}, "dev: debug logging")
    outcome = run(fleet)
    assert did(outcome) == {"dev": ["schedule"]}
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert isinstance(dev.did[0].result, ScheduleOutcome) and dev.did[0].result.operation == "created"
    assert fleet.cp_status(sha, "dev") == "success"  # the gate's record of the main commit stands
    # a person closes the PR without merging: reconcile leaves it closed
    pr = fleet.open_pr("dev")
    fleet.forge.update_pull(fleet.gitops_id, pr.number, state="closed")
    again = run(fleet)
    assert did(again) == {}
    [dev] = [e for e in again.environments if e.environment == "dev"]
    assert "closed without merging" in dev.waiting and fleet.open_pr("dev") is None


def test_held_environment_stays_and_failure_stops_the_chain(fleet: Fleet) -> None:
    first = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    run(fleet)
    fleet.approve("qa")
    report(fleet, "qa", {2: "failure"})
    for _ in range(2):
        outcome = run(fleet)
        assert "prod-eu" not in did(outcome) and fleet.pin("prod-eu") == "" and fleet.pin("prod-us") == ""
    assert fleet.cp_status(first, "qa") == "failure"
    [qa] = [e for e in outcome.environments if e.environment == "qa"]
    assert qa.found.gate == "failure" and "dev" not in did(outcome)
    # a rollback of dev holds it: new main commits are not promoted there
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    run(fleet)
    assert fleet.pin("dev") == second
    with fleet.context() as ctx:
        promote(ctx, "dev", first)
    third = fleet.push_main({"templates/extra.yaml": "# third\n"}, "third")
    outcome = run(fleet)
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert fleet.pin("dev") == first and "held" in dev.waiting and third[:12] in dev.waiting
    assert f"to release: fleetflow promote --environment dev --commit {third[:12]} --release" in dev.waiting


def test_auto_merge_merges_and_gates_in_one_run(fleet: Fleet) -> None:
    auto = {"dev": "  pullRequest:\n    autoMerge: true\n"}
    files = {".environments/envs.yaml": "---\n".join(_environment(n, a, auto.get(n, "")) for n, a in
                                                     ENVIRONMENTS.items())}
    sha = fleet.push_main(files, "dev merges by itself")
    outcome = run(fleet)
    assert did(outcome)["dev"][:1] == ["promote"]
    assert fleet.gitops_state("dev").main_commit == sha  # merged
    assert fleet.cp_status(sha, "dev") == "pending"  # the gate ran: rolling out
    report(fleet, "dev")
    assert did(run(fleet)) == {"dev": ["gate"], "qa": ["promote"]}


def test_environment_option_takes_its_neighbours() -> None:
    from fleetflow.model.controlplane import Resource
    from fleetflow.model.resources import EnvironmentSpec

    spec = {n: EnvironmentSpec.model_validate({"after": a}) for n, a in ENVIRONMENTS.items()}
    envs = {n: Resource("Environment", n, {}, {}, s, None, "main") for n, s in spec.items()}  # type: ignore[arg-type]
    assert environments_to_reconcile(envs, None) == ["dev", "qa", "prod-eu", "prod-us", "dr"]
    assert environments_to_reconcile(envs, "qa") == ["dev", "qa", "prod-eu", "prod-us"]
    assert environments_to_reconcile(envs, "prod-eu") == ["qa", "prod-eu", "dr"]


def cli_environment(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the CLI finds the fleet's forge by (the GitHub stand-in's address and a token, or nothing for the local
    forge), and a cache of its own."""
    for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY"):
        monkeypatch.delenv(name, raising=False)
    if fleet.forge.name == "github":
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        monkeypatch.setenv("GITHUB_API_URL", fleet.stub.url)  # type: ignore[attr-defined]
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(fleet.root / "cli-cache"))


def test_cli_text_and_json(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_environment(fleet, monkeypatch)
    args = ["reconcile", "--forge", fleet.forge.name, "--control-plane", fleet.cp_id]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "dev: pinned to main@" in text.output and "did promote: main@" in text.output
    # the narration (stderr) says each thing once: the render of the pin commit (before it is pushed), the pin,
    # the push of the PR's head branch, the PR; the summary (stdout) says it again
    said = [line for line in text.stderr.splitlines() if line.startswith("dev: ")]
    assert [line.split(" ")[1] for line in said] == ["rendering", "pinned", "pushed", "PR"], said
    assert "(the new pin, pushed once this renders)" in said[0]
    assert "qa: not promoted yet" in text.output
    result = CliRunner().invoke(cli, [*args, "--format", "json", "--environment", "dev"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    envs = data["result"]["environments"]
    assert data["ok"] is True and data["problems"] == [] and [e["environment"] for e in envs] == ["dev", "qa"]
    assert envs[0]["did"] == [] and envs[0]["waiting"].startswith("PR #")
    bad = CliRunner().invoke(cli, [*args, "--environment", "nope"])
    assert bad.exit_code == 2 and "unknown environment 'nope'" in bad.output


def _chain(after: dict[str, list[str]], branches: dict[str, str] | None = None) -> str:
    """The Environments file of ``after``, with ``spec.branch`` set for the environments in ``branches``."""
    return "---\n".join(_environment(n, a, f"  branch: {(branches or {})[n]}\n" if n in (branches or {}) else "")
                        for n, a in after.items())


CHAIN_PROBLEMS = {
    "unknown": (_chain({n: a for n, a in ENVIRONMENTS.items() if n != "qa"}),
                [f"Environment {n}: after names unknown environment 'qa'" for n in ("prod-eu", "prod-us")]),
    "cycle": (_chain({**ENVIRONMENTS, "dev": ["prod-eu"]}),
              ["Environment chain has a cycle: dev -> qa -> prod-eu -> dev (each comes after the one before it)"]),
    # qa's Environment copied from dev's with its branch: qa's promotion was refused only after dev's gate passed,
    # for "GitOpsRepo dev renders into branch dev ..." (until 2026-11-29); main as a branch, for each resource of main
    "shared branch": (_chain(ENVIRONMENTS, {"qa": "dev"}),
                      ["Environment qa: branch 'dev' is also Environment dev's branch: each environment's pin "
                       "(base-repo.yaml) and configuration live on its own branch, so promoting one would re-pin the "
                       "other, and qa would be rendered from dev's clusters"]),
    "main branch": (_chain(ENVIRONMENTS, {"prod-us": "main"}),
                    ["Environment prod-us: branch 'main' is the control plane's main branch: promote pins the "
                     "environment on its branch (base-repo.yaml) and renders it from the ClusterTypes, Clusters and "
                     "ConfigMaps there, which main does not hold"]),
}


@pytest.mark.parametrize("broken", sorted(CHAIN_PROBLEMS))
def test_a_chain_with_no_order_is_refused_before_anything_is_written(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """A main commit drops qa's Environment while prod-eu and prod-us still come after qa, or makes dev come after
    prod-eu: the chain has no order. ``reconcile`` crashed with a KeyError looking for qa's branch (found by a
    search editing the control plane at random and running the fleet commands), and ``promote`` pinned dev to the
    commit before its render refused it. Its promotion is now refused first, at the line, with nothing written;
    so is one that gives two Environments one branch, or main as an Environment's branch (CHAIN_PROBLEMS);
    the commands about what is already on its way go by the commit before it and warn with the same problems
    (``test_a_mistake_pushed_to_main_stops_its_own_promotion_not_the_rollouts_on_their_way``)."""
    cli_environment(fleet, monkeypatch)
    run(fleet)
    chain, expected = CHAIN_PROBLEMS[broken]
    sha = fleet.push_main({".environments/envs.yaml": chain}, f"the chain: {broken}")
    before = refs(fleet)
    where = ["--forge", fleet.forge.name, "--control-plane", fleet.cp_id, "--format", "json"]
    for args in (["reconcile"], ["promote", "--commit", sha], ["status"], ["schedule", "--environment", "dev"],
                 ["check-rollout", "--environment", "dev"]):
        result = CliRunner().invoke(cli, [*args, *where], catch_exceptions=False)
        data = json.loads(result.stdout)
        refused = [(p["message"], p["location"]["file"]) for p in data["problems"] if (p["location"] or {}).get("line")]
        warned = [(w["message"], w["location"]["file"]) for w in data["warnings"] if (w["location"] or {}).get("line")]
        if args[0] == "promote":  # the commit's own promotion: refused
            assert result.exit_code == 1 and data["result"] is None, result.output
            assert refused == [(m, "main/.environments/envs.yaml") for m in expected], (args, refused)
        else:  # the others go by the commit before it, and say why
            assert warned == [(f"main's tip main@{sha[:12]} does not read: {m}", "main/.environments/envs.yaml")
                              for m in expected], (args, warned)
            if args[0] == "reconcile":  # dev's promotion of it is refused, at the line
                assert result.exit_code == 1, result.output
                assert refused == [(f"dev: {m}", "main/.environments/envs.yaml") for m in expected], refused
            else:
                assert result.exit_code == 0 and not refused, result.output
        assert refs(fleet) == before, args


def test_cli_reports_the_merge_outcome(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """reconcile takes the merge step through ``merging.merge_if_due`` and says what it found, per environment,
    in text and JSON: here the repository does not allow GitHub's auto-merge (a new repository's default,
    ``allow_auto_merge`` false), so fleetflow waits for the check the branch requires, then merges. Its decision
    is recorded in git (tag ``fleetflow/merge-when-green/dev``); only a run started by a status on the head (or the
    cron tick) reads the checks again. A status event's payload carries the commit as ``sha`` ("Webhook events and
    payloads", status: https://docs.github.com/en/webhooks/webhook-events-and-payloads#status); GitHub Actions
    names the event and the payload file in ``GITHUB_EVENT_NAME`` and ``GITHUB_EVENT_PATH`` ("Variables reference",
    default environment variables)."""
    cli_environment(fleet, monkeypatch)
    if fleet.forge.name == "github":
        fleet.stub.repo(fleet.gitops_id).rulesets["dev"] = ["ci/validate"]  # type: ignore[attr-defined]
    else:
        fleet.forge.protect_branch(fleet.gitops_id, "dev", ["ci/validate"])  # type: ignore[attr-defined]
    auto = {"dev": "  pullRequest:\n    autoMerge: true\n"}
    fleet.push_main({".environments/envs.yaml": "---\n".join(_environment(n, a, auto.get(n, ""))
                                                             for n, a in ENVIRONMENTS.items())}, "dev merges itself")
    args = ["reconcile", "--forge", fleet.forge.name, "--control-plane", fleet.cp_id, "--environment", "dev"]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "  merge: waiting (waiting for required checks: ci/validate)" in text.output
    result = CliRunner().invoke(cli, [*args, "--format", "json", "--verify-merges"])  # as the cron tick: reads it
    dev = json.loads(result.output)["result"]["environments"][0]
    pr = fleet.open_pr("dev")
    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    assert pr is not None and dev["found"]["pullRequest"]["number"] == pr.number
    assert dev["merge"]["state"] == "waiting" and dev["merge"]["pullRequest"] == pr.number
    assert dev["merge"]["reason"] == "waiting for required checks: ci/validate"
    assert dev["found"]["mergeRecord"] == {"kind": "merge-when-green", "head": head}
    fleet.post_status(head, "ci/validate", "success", "ok")
    # a run from any other event leaves the decision recorded in git (merge_records): no check is read
    other = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).output)["result"]["environments"][0]
    assert other["did"] == [] and other["merge"]["state"] == "waiting" and "recorded in git" in other["waiting"]
    # the status event on the head (its sha: --recheck, by default from GITHUB_EVENT_PATH) decides again
    event = fleet.root / "status-event.json"
    event.write_text(json.dumps({"sha": head, "state": "success", "context": "ci/validate"}))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "status")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    merged = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).output)["result"]["environments"][0]
    assert [s["step"] for s in merged["did"]][:1] == ["merge"] and merged["merge"]["state"] == "merged"
    assert fleet.open_pr("dev") is None and fleet.gitops_state("dev").main_commit == fleet.pin("dev")


def test_recheck_takes_full_commit_shas_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--recheck`` is matched against a PR head's whole sha (a status event's ``sha``, "Webhook events and
    payloads", status: https://docs.github.com/en/webhooks/webhook-events-and-payloads#status), so ``zzz`` or a
    prefix matched nothing and the option was ignored without a word. Now a usage error (exit 2) naming the values,
    in text and JSON, before anything is read or written; a full sha in capitals is taken."""
    fleet = make_local_fleet(tmp_path)
    cli_environment(fleet, monkeypatch)
    tip = fleet.branch_sha(fleet.gitops_url, "dev")
    args = ["reconcile", "--forge", "local", "--control-plane", fleet.cp_id]
    before = refs(fleet)
    bad = CliRunner().invoke(cli, [*args, "--recheck", "zzz", "--recheck", tip[:12]])
    assert bad.exit_code == 2, bad.output
    assert (f"Invalid value for '--recheck': 'zzz', '{tip[:12]}' are not commit shas: give the full 40 hex digits "
            "of the GitOps commit whose checks changed") in " ".join(bad.output.split())
    data = CliRunner().invoke(cli, [*args, "--recheck", "zzz", "--format", "json"])
    assert data.exit_code == 2 and json.loads(data.output)["problems"][0]["message"].startswith(
        "Invalid value for '--recheck': 'zzz' is not a commit sha: give the full 40 hex digits")
    assert refs(fleet) == before
    good = CliRunner().invoke(cli, [*args, "--recheck", tip.upper()])
    assert good.exit_code == 0, good.output


def test_hold_until_further_ahead_than_a_job_runs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """The hold runs inside the reconcile job, and a job on a GitHub-hosted runner is stopped after 6 hours of
    execution ("Usage limits, billing, and administration", job execution time:
    https://docs.github.com/en/actions/reference/usage-limits-billing-and-administration#usage-limits; self-hosted
    runners: 5 days, "Usage limits for self-hosted runners"). ``--hold-until`` took a date decades away; now a
    deadline more than 6 hours ahead is a usage error (exit 2) naming the value, and nothing is read or written."""
    fleet = make_local_fleet(tmp_path)
    cli_environment(fleet, monkeypatch)
    args = ["reconcile", "--forge", "local", "--control-plane", fleet.cp_id]
    before = refs(fleet)
    for far, ahead in ((4102444800, "(2100-01-01 00:00 UTC) is "), (int(time.time()) + 6 * 3600 + 120, "is 6h")):
        bad = CliRunner().invoke(cli, [*args, "--hold-until", str(far)])
        assert bad.exit_code == 2, bad.output
        said = " ".join(bad.output.split())
        assert f"Invalid value for '--hold-until': {far} (" in said, said
        assert " from now, further than a job runs (6 hours on a GitHub-hosted runner" in said
        assert ahead in said and "give a time at most 6 hours ahead" in said
    absurd = CliRunner().invoke(cli, [*args, "--hold-until", str(10**400)])  # an OverflowError traceback, until a
    assert absurd.exit_code == 2 and "is more than a billion days from now" in absurd.output, absurd.output  # hunt
    assert refs(fleet) == before
    # a deadline already past: no hold, the run goes on
    done = CliRunner().invoke(cli, [*args, "--hold-until", str(int(time.time()) - 1)])
    assert done.exit_code == 0, done.output


def test_the_summary_says_a_pr_this_run_merged_is_merged(fleet: Fleet) -> None:
    """What reconcile found is printed after its steps: a PR its merge step merged in the same run was still said
    to be "PR #N open" (the PR as the step had it before merging). Both ways a run merges: dev's PR in the promote
    step (no check required: merged at once), qa's in the merge step once the check its branch requires is green
    (a status on the head: ``rechecks``). The merge uses GitHub's "Merge a pull request"
    (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request); a merged PR's ``state`` is ``closed``."""
    if fleet.forge.name == "github":
        fleet.stub.repo(fleet.gitops_id).rulesets["qa"] = ["ci/validate"]  # type: ignore[attr-defined]
    else:
        fleet.forge.protect_branch(fleet.gitops_id, "qa", ["ci/validate"])  # type: ignore[attr-defined]
    auto = {n: "  pullRequest:\n    autoMerge: true\n" for n in ("dev", "qa")}
    fleet.push_main({".environments/envs.yaml": "---\n".join(_environment(n, a, auto.get(n, ""))
                                                             for n, a in ENVIRONMENTS.items())}, "dev, qa merge")

    def merged(outcome: ReconcileOutcome, env: str) -> list[str]:
        """The steps ``env`` took, once its merge step says it merged the PR and what it found says so too."""
        [result] = [e for e in outcome.environments if e.environment == env]
        assert result.merge is not None and result.merge.state == "merged", result
        summary = result.found.summary()
        assert f"; PR #{result.merge.number} merged; gate pending" in summary and " open" not in summary, summary
        return [s.step for s in result.did]

    assert merged(run(fleet), "dev") == ["promote", "gate"]
    report(fleet, "dev")
    second = run(fleet)
    [qa] = [e for e in second.environments if e.environment == "qa"]
    assert qa.merge is not None and qa.merge.state == "waiting", qa
    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/qa")
    fleet.post_status(head, "ci/validate", "success", "ok")
    with fleet.context() as ctx:
        third = reconcile(ctx, rechecks=(head,))
    assert merged(third, "qa") == ["merge", "gate"]


def test_a_deleted_environment_branch_is_a_problem_not_not_promoted_yet(fleet: Fleet,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """qa's branch was deleted (a push with ``deleted: true``: ``git push --delete``, or GitHub's "Automatically
    delete head branches" after a pull request from qa was merged) while dev's PR waits. qa's files (cluster types,
    inventory, GitOpsRepo) are gone: until 2026-11-29 reconcile said "qa: not promoted yet / nothing due" and exited
    0 on every run until dev rolled out, and only then failed, in qa's promotion. Now qa's problem says which branch
    is missing and how to get it back (exit 1) at once, and the other environments go on."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    git(fleet.root, "--git-dir", fleet.cp_url, "update-ref", "-d", "refs/heads/qa")
    before = refs(fleet)
    outcome = run(fleet)
    [qa] = [e for e in outcome.environments if e.environment == "qa"]
    assert qa.exit_code == 1 and outcome.exit_code == 1
    assert "branch 'qa' does not exist" in qa.problems[0].message and "push it back" in (qa.problems[0].hint or "")
    assert qa.waiting == "" and did(outcome) == {} and refs(fleet) == before
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert dev.problems == [] and dev.waiting.startswith("PR #") and fleet.pin("dev") == sha
    cli_environment(fleet, monkeypatch)
    text = CliRunner().invoke(cli, ["reconcile", "--forge", fleet.forge.name, "--control-plane", fleet.cp_id])
    assert text.exit_code == 1 and "qa: environment qa: branch 'qa' does not exist" in text.stderr, text.output
    assert "nothing promoted here yet" not in text.stdout.split("qa:", 1)[1].split("prod-eu:")[0]
    assert "qa: not read: environment qa: branch 'qa' does not exist" in text.stdout, text.stdout
    assert "qa: not promoted yet" not in text.stdout


def test_main_forced_back_says_the_pin_it_found(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """main was force-pushed back (``forced: true``) to a commit older than dev's pin: reconcile never moves dev back
    and says that dev's pin is not on main. Until 2026-11-29 its summary line said "dev: not promoted yet" next to
    that problem; it says the pin now."""
    first = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    second = fleet.push_main({"templates/extra.yaml": "# second\n"}, "second")
    run(fleet)
    assert fleet.pin("dev") == second
    git(fleet.root, "--git-dir", fleet.cp_url, "update-ref", "refs/heads/main", first)
    before = refs(fleet)
    outcome = run(fleet)
    [dev] = [e for e in outcome.environments if e.environment == "dev"]
    assert dev.exit_code == 1 and f"pinned to {second}, which is not on main" in dev.problems[0].message
    assert dev.found.pin == second and dev.found.summary().startswith(f"pinned to main@{second[:12]}")
    assert refs(fleet) == before and fleet.pin("dev") == second  # nothing moved back
    cli_environment(fleet, monkeypatch)
    text = CliRunner().invoke(cli, ["reconcile", "--forge", fleet.forge.name, "--control-plane", fleet.cp_id])
    assert text.exit_code == 1 and f"dev: pinned to main@{second[:12]}" in text.stdout, text.output


def test_a_run_that_dies_half_way_says_the_step_it_was_in_and_the_next_runs_finish_it(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """dev's gate is recorded and qa is pinned and its head pushed, then opening qa's PR fails (the forge drops the
    connection). Until 2026-11-29 the summary said "qa: not promoted yet" and nothing else (the pin was only in the
    narration on stderr): now it says the step it was in. The next run finishes it (schedule, not a second pin),
    and the one after writes nothing and says what it waits for."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    real = type(fleet.forge).create_pull

    def drops_qa(self: object, repo: str, head: str, *args: object, **kwargs: object) -> object:
        if head == "fleetflow/qa":
            raise ForgeError("connection reset by peer")
        return real(self, repo, head, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(fleet.forge), "create_pull", drops_qa)
    cli_environment(fleet, monkeypatch)
    args = ["reconcile", "--forge", fleet.forge.name, "--control-plane", fleet.cp_id]
    died = CliRunner().invoke(cli, args)
    assert died.exit_code == 3, died.output
    assert f"  stopped in promote main@{sha[:12]} (connection reset by peer)" in died.stdout, died.stdout
    assert "  did gate: gate success" in died.stdout and fleet.pin("qa") == sha
    # still down: the next run is in qa's schedule (qa is pinned now) when it stops, and says so in JSON
    data = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)
    stopped = {e["environment"]: e["stoppedIn"] for e in data["result"]["environments"] if e["stoppedIn"]}
    assert list(stopped) == ["qa"] and stopped["qa"].startswith(f"schedule main@{sha[:12]} + qa@"), stopped
    assert data["exitCode"] == 3
    monkeypatch.setattr(type(fleet.forge), "create_pull", real)
    finished = run(fleet)
    assert did(finished) == {"qa": ["schedule"]} and list(open_prs(fleet)) == ["qa"]
    assert all(e.stopped_in == "" for e in finished.environments)
    before = refs(fleet)
    again = run(fleet)
    assert did(again) == {} and refs(fleet) == before
    [qa] = [e for e in again.environments if e.environment == "qa"]
    assert qa.waiting.startswith("PR #")


def test_a_closed_pr_whose_head_branch_was_deleted_is_not_reopened(fleet: Fleet) -> None:
    """A person closes dev's PR and presses "Delete branch" (GitHub offers it on a closed PR; deleting a PR's head
    branch closes it: "Deleting and restoring branches in a pull request", docs.github.com). reconcile then found no
    head branch to compare with the closed PR, rendered the same commit and opened a new PR on every run until
    2026-11-29. The render is deterministic, so the closed PR's ``head.sha`` (kept by GitHub, REST "List pull
    requests") is the commit it would propose: it waits instead, naming the closed PR."""
    run(fleet)
    pr = fleet.open_pr("dev")
    fleet.forge.update_pull(fleet.gitops_id, pr.number, state="closed")
    git(fleet.root, "--git-dir", fleet.gitops_url, "update-ref", "-d", "refs/heads/fleetflow/dev")
    for _ in range(2):
        again = run(fleet)
        assert did(again) == {}
        [dev] = [e for e in again.environments if e.environment == "dev"]
        assert f"PR #{pr.number} proposed" in dev.waiting and "closed without merging" in dev.waiting
        assert fleet.open_pr("dev") is None
    assert [p.number for p in fleet.forge.pulls(fleet.gitops_id, "fleetflow/dev")] == [pr.number]


def qa_proposed_first_commit(tmp_path: Path) -> tuple[Fleet, str]:
    """A local fleet whose first main commit X rolled out in dev, reconcile promoted it to qa: qa's PR is open."""
    fleet = make_local_fleet(tmp_path)
    x = fleet.branch_sha(fleet.cp_url, "main")
    run(fleet)
    fleet.approve("dev")
    report(fleet, "dev")
    run(fleet)
    return fleet, x


def test_an_environment_inserted_into_the_chain_starts_with_the_commit_that_defines_it(tmp_path: Path) -> None:
    """``staging`` inserted between dev and qa while qa's PR for X is open: X (whose chain has no staging) finishes
    its way (qa's PR, then the prods), and staging gets the first commit that defines it once dev rolled that out.
    Until 2026-11-29 every reconcile tried to promote X to staging and failed, exit 2, with "unknown environment
    'staging'; environments on main: ..." (main's tip defines it), and a ``promote --environment staging`` of X said
    the same."""
    from tests.fleet import env_files, main_files
    from tests.helpers import build_file_tree

    fleet, x = qa_proposed_first_commit(tmp_path)
    assert fleet.pin("qa") == x and fleet.open_pr("qa") is not None
    chain = {"dev": [], "staging": ["dev"], "qa": ["staging"], "prod-eu": ["qa"], "prod-us": ["qa"],
             "dr": ["prod-eu", "prod-us"]}
    files = main_files()
    files[".environments/envs.yaml"] = "---\n".join(_environment(n, a) for n, a in chain.items())
    files["workloads/app.yaml"] += ("    - name: staging\n      environment: staging\n      labels: {purpose: app}\n"
                                    "      manifests: {repo: https://example.invalid/app, branch: main, path: ./s}\n")
    tree = tmp_path / "env-staging"
    git(tmp_path, "init", "-q", str(tree))
    build_file_tree(tree, env_files("staging", fleet.gitops_id, fleet.cp_id))
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "staging branch")
    git(tree, "push", "-q", fleet.cp_url, "HEAD:refs/heads/staging")
    git(tmp_path / "gitops-seed", "push", "-q", fleet.gitops_url, "HEAD:refs/heads/staging")
    y = fleet.push_main(files, "insert staging between dev and qa")

    outcome = run(fleet)
    staging = next(e for e in outcome.environments if e.environment == "staging")
    assert staging.problems == [] and staging.exit_code == 0, staging.problems
    assert staging.waiting == "nothing promoted here yet" and fleet.pin("staging") == ""
    assert did(outcome) == {"dev": ["promote"]}
    with fleet.context() as ctx, pytest.raises(InputError) as refused:
        promote(ctx, "staging", x)
    assert str(refused.value.problems()[0]).startswith(
        f"main@{x[:12]} does not define environment 'staging' (main@{y[:12]} does: it was added or renamed after "
        "that commit); environments on main@"), refused.value.problems()
    fleet.approve("qa")  # X finishes its way: qa, then the prods of its chain
    report(fleet, "qa")
    assert did(run(fleet)) == {"qa": ["gate"], "prod-eu": ["promote"], "prod-us": ["promote"]}
    fleet.approve("dev")
    report(fleet, "dev")
    assert did(run(fleet)) == {"dev": ["gate"], "staging": ["promote"]}
    assert fleet.pin("staging") == y and fleet.pin("qa") == x


def test_an_environment_renamed_with_its_pr_open_waits_and_names_the_pr_of_its_old_name(tmp_path: Path) -> None:
    """qa renamed qa2 on main (``branch: qa`` kept) while qa's PR for X is open: X's workloads name qa, so X is not
    rendered under the new name; reconcile waits, says why and names the old name's open PR, and qa2 gets the first
    commit that defines it once dev rolled it out. Until 2026-11-29 every run rendered X as qa2 and failed, exit 2,
    "unknown environment 'qa2' (hint: environments defined on main: dev, dr, prod-eu, prod-us, qa)"."""
    from tests.fleet import main_files

    fleet, x = qa_proposed_first_commit(tmp_path)
    old_pr = fleet.open_pr("qa")
    assert fleet.pin("qa") == x and old_pr is not None
    chain = {"dev": [], "qa2": ["dev"], "prod-eu": ["qa2"], "prod-us": ["qa2"], "dr": ["prod-eu", "prod-us"]}
    files = main_files()
    files[".environments/envs.yaml"] = "---\n".join(
        _environment(n, a, "  branch: qa\n" if n == "qa2" else "") for n, a in chain.items())
    files["workloads/app.yaml"] = files["workloads/app.yaml"].replace("environment: qa\n", "environment: qa2\n")
    y = fleet.push_main(files, "rename qa to qa2")

    outcome = run(fleet)
    qa2 = next(e for e in outcome.environments if e.environment == "qa2")
    assert qa2.problems == [] and qa2.exit_code == 0, qa2.problems
    assert qa2.waiting == (
        f"pinned to main@{x[:12]}, which does not define qa2 (it names branch qa's environment qa: renamed since); "
        "not scheduled under the new name: qa2 gets the first commit that defines it once dev rolled it out; "
        f"PR #{old_pr.number} from fleetflow/qa is still open under the old name: merge it (the gate of qa2 then "
        "reads its rollout) or close it")
    assert did(outcome) == {"dev": ["promote"]}
    fleet.approve("dev")
    report(fleet, "dev")
    assert did(run(fleet)) == {"dev": ["gate"], "qa2": ["promote"]}
    assert fleet.pin("qa") == y  # qa2 pins on branch qa
