"""A command run as a GitHub Actions step (``--github-actions``, ``fleetflow/cli/github_actions.py``): workflow
commands escaped so data cannot end or start one, outputs that data cannot forge, problems as located annotations,
the job summary; on real repos with the local forge, through the real CLI.

GitHub's rules, from "Workflow commands for GitHub Actions"
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands: "Setting an error message",
"Setting an output parameter", "Multiline strings", "Adding a job summary", "Stopping and starting workflow
commands") and the runner that applies them
(actions/runner ``src/Runner.Common/ActionCommand.cs``, ``ActionCommand.TryParseV2``: a command is a line starting
with ``::``; ``::name k=v,k=v::data``; data unescapes ``%0D %0A %25``, properties also ``%3A %2C``;
``src/Runner.Worker/FileCommandManager.cs``: ``$GITHUB_OUTPUT`` holds ``name<<DELIMITER`` lines closed by a line equal
to the delimiter).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from fleetflow.cli import main as cli_main
from fleetflow.cli.github_actions import command, output_lines, problem_command, protected_excepthook
from fleetflow.cli.route import one_line
from fleetflow.errors import Location, Problem
from tests.fleet import ENVIRONMENTS, Fleet, _environment, build_bare_repos, git
from tests.test_promotion import make_local_fleet

DATA_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
PROPERTY_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))


def runner_unescape(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    """ActionCommand.cs ``UnescapeValue`` / ``UnescapeProperty``: the escapes undone in that order."""
    for escaped, plain in escapes:
        text = text.replace(escaped, plain)
    return text


def runner_parse(line: str) -> tuple[str, dict[str, str], str] | None:
    """ActionCommand.TryParseV2: ``::command props::data`` on one line, leading blanks trimmed (None: not one)."""
    line = line.lstrip()
    if not line.startswith("::"):
        return None
    end = line.find("::", 2)
    if end < 0:
        return None
    head, data = line[2:end], line[end + 2:]
    name, _, props_text = head.partition(" ")
    props = {}
    for pair in filter(None, props_text.split(",")):
        key, _, value = pair.partition("=")
        props[key] = runner_unescape(value, PROPERTY_ESCAPES)
    return name, props, runner_unescape(data, DATA_ESCAPES)


def runner_outputs(text: str) -> dict[str, str]:
    """FileCommandManager: ``name<<DELIMITER``, then lines up to the one equal to DELIMITER."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if "<<" in lines[i]:
            key, delimiter = lines[i].split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[key] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            i += 1
    return outputs


# --- workflow commands ---

def test_workflow_command_escaping() -> None:
    assert command("error", "50% done\r\nnext", file="a,b:c.yaml", line=3) == (
        "::error file=a%2Cb%3Ac.yaml,line=3::50%25 done%0D%0Anext"
    )
    assert command("notice", "plain") == "::notice::plain"


@given(message=st.text(), file=st.text())
def test_data_cannot_end_or_start_a_command(message: str, file: str) -> None:
    """Whatever a message or a file name holds (``::``, line breaks, ``%0A`` written out), the command stays one
    line and the runner reads back exactly the text."""
    line = command("error", message, file=file or None, title="fleetflow x")
    assert "\n" not in line and "\r" not in line
    parsed = runner_parse(line)
    assert parsed is not None
    name, props, data = parsed
    assert name == "error" and data == message
    assert props.get("file", "") == file and props["title"] == "fleetflow x"


HOSTILE = [
    "line one\nline two",
    "::warning::injected",
    "50% done %0A not a newline %25",
    "ends in a bare CR\r",
    "x\r\n::set-output name=action::promote",
    "a:b,c::d",
    "##[error]legacy form",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_problems_stay_one_annotation(text: str) -> None:
    """A problem whose message, hint and file name hold line breaks, ``::``, ``%`` (and ``%0A`` written out), ``,``
    and ``:``: one line, one ``::error`` command, and the runner reads back exactly the file, line and column and the
    message (with its hint) - nothing can end the command early or add a property (``,line=99`` in a file name
    stays part of the name). "Setting an error message", workflow-commands page above; the escapes are the
    runner's ``_escapeDataMappings`` / ``_escapePropertyMappings``."""
    problem = Problem(text, Location(f"envs/{text},line=99/config.yaml", 7, 3), f"hint {text}")
    line = problem_command(problem, f"fleetflow {text}")
    assert "\n" not in line and "\r" not in line
    parsed = runner_parse(line)
    assert parsed is not None
    name, props, data = parsed
    assert name == "error"
    assert props == {"title": f"fleetflow {text}", "file": f"envs/{text},line=99/config.yaml", "line": "7",
                     "col": "3"}
    assert data == f"{text} (hint: hint {text})"
    assert commands_in(line) == [parsed]  # the legacy ##[ form inside the escaped data is no second command


def test_escapes_of_the_documented_characters() -> None:
    """Each character the runner unescapes, one by one: ``%`` first (so ``%0A`` written out survives), CR, LF; in
    properties also ``:`` and ``,``."""
    assert command("warning", "%") == "::warning::%25"
    assert command("warning", "\r\n") == "::warning::%0D%0A"
    assert command("warning", "%0A") == "::warning::%250A"
    assert command("warning", "a:b,c") == "::warning::a:b,c"  # the message is the rest of the line
    assert command("warning", "m", title="a:b,c%\n") == "::warning title=a%3Ab%2Cc%25%0A::m"


@given(values=st.dictionaries(st.sampled_from(["result", "reason", "commit"]),
                              st.text(alphabet=st.characters(exclude_characters="\r"))))
def test_outputs_cannot_be_forged(values: dict[str, str]) -> None:
    """A value holding ``x<<EOF`` lines or a guessed delimiter sets nothing else and keeps every byte."""
    assert runner_outputs(output_lines(values)) == values


# --- the CLI as a step, on real repos ---

@dataclass
class Step:
    fleet: Fleet
    tmp: Path

    @property
    def env(self) -> dict[str, str]:
        return {"GITHUB_OUTPUT": str(self.tmp / "output"), "GITHUB_STEP_SUMMARY": str(self.tmp / "summary.md"),
                "FLEETFLOW_CACHE_DIR": str(self.tmp / "cache")}

    def run(self, *args: str) -> tuple[int, str]:
        base = ["--forge", "local", "--control-plane", self.fleet.cp_url, "--format", "json", "--github-actions"]
        result = CliRunner().invoke(cli_main, [*args, *base], env=self.env, catch_exceptions=False)
        return result.exit_code, result.output

    def run_plain(self, *args: str) -> tuple[int, str]:
        """A command line as given, with the local forge (no ``--format json``)."""
        base = ["--forge", "local", "--control-plane", self.fleet.cp_url]
        result = CliRunner().invoke(cli_main, [*args, *base], env=self.env, catch_exceptions=False)
        return result.exit_code, result.output

    def outputs(self) -> dict[str, str]:
        path = self.tmp / "output"
        return runner_outputs(path.read_text(encoding="utf-8")) if path.exists() else {}

    def summary(self) -> str:
        path = self.tmp / "summary.md"
        return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture
def step(tmp_path: Path) -> Iterator[Step]:
    (tmp_path / "fleet").mkdir()
    yield Step(make_local_fleet(tmp_path / "fleet"), tmp_path)


def commands_in(log: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands the runner would act on (ActionCommandManager.TryProcessCommand): none between
    ``::stop-commands::T`` and ``::T::``."""
    found, stopped = [], None
    for line in log.splitlines():
        if stopped is not None:
            if line.strip() == f"::{stopped}::":
                stopped = None
            continue
        parsed = runner_parse(line)
        if parsed is None:
            if "##[" in line:  # ActionCommand.TryParse: the legacy form, anywhere in a line
                found.append(("legacy", {}, line))
            continue
        if parsed[0] == "stop-commands":
            stopped = parsed[2]
            continue
        found.append(parsed)
    return found


def test_promote_sets_outputs_annotates_and_summarizes(step: Step) -> None:
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    code, log = step.run("promote", "--commit", sha[:10])
    assert code == 0, log
    result = json.loads(step.outputs()["result"])  # the whole envelope
    [promotion] = result["result"]["promotions"]
    outputs = step.outputs()
    assert outputs["operation"] == promotion["schedule"]["operation"] == "created"
    assert outputs["commit"] == sha and json.loads(outputs["environments"]) == ["dev"]
    assert outputs["pull-request-number"] == str(promotion["schedule"]["pullRequest"]["number"])
    assert outputs["pull-request-url"] == promotion["schedule"]["pullRequest"]["url"]
    # the JSON went to the log with commands off; the notice after they came back on
    assert json.dumps(result, indent=2) in log
    assert ("notice", {"title": "fleetflow promote"}, promotion["message"]) in commands_in(log)
    summary = step.summary()
    assert summary.startswith("## fleetflow promote\n")
    assert f"| `dev` | created | #{outputs['pull-request-number']} (open) |" in summary  # local:// URLs are no links
    assert "## fleetflow status" in summary and "```mermaid" in summary  # this run, then the fleet
    # a short list starts open: the details element's ``open`` attribute (HTML Living Standard, "The details
    # element"); until 2026-11-29 the Markdown escaping ate the blank before it and wrote ``<detailsopen>``
    assert "<details open><summary>Added (1)</summary>" in summary and "<detailsopen>" not in summary


def test_problems_become_located_annotations(step: Step) -> None:
    """A broken environment branch: each problem is an ``::error`` at its file and line, the summary says Failed,
    no output is set (nothing the workflow could act on)."""
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    assert step.run("promote", "--commit", sha)[0] == 0
    (step.tmp / "output").unlink()
    (step.tmp / "summary.md").unlink()
    step.fleet.push_env("dev", {"clusters.yaml": (
        "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dev-1\n"
        "spec:\n  clusterType: nowhere\n  statusContext: flux/dev-1\n")})
    code, log = step.run("schedule", "--environment", "dev", "--no-job-summary")
    assert code == 1, log
    errors = [c for c in commands_in(log) if c[0] == "error"]
    assert errors, log
    failure = json.loads(log[log.index("{"):log.rindex("}") + 1])
    assert failure["ok"] is False and len(errors) == len(failure["problems"])
    for (_name, props, message), problem in zip(errors, failure["problems"], strict=True):
        where = problem["location"] or {}
        located = {key: str(where[field]) for key, field in (("file", "file"), ("line", "line"), ("col", "column"))
                   if where.get(field) is not None}
        assert props == {"title": "fleetflow schedule", **located}
        assert message.startswith(problem["message"])
    assert any(props.get("file", "").endswith("clusters.yaml") and props.get("line") for _n, props, _m in errors)
    assert step.outputs() == {} and step.summary() == ""  # --no-job-summary


def test_failure_summary(step: Step) -> None:
    code, log = step.run("promote", "--commit", "0" * 40)
    assert code == 1
    [(_name, props, message)] = [c for c in commands_in(log) if c[0] == "error"]
    assert "is not on main" in message and props["title"] == "fleetflow promote"
    summary = step.summary()
    assert summary.startswith("## fleetflow promote\n\n**Failed** (exit code 1):")
    assert "0000000000000000000000000000000000000000 is not on main" in summary


def test_route_outputs_and_a_hostile_event(step: Step) -> None:
    """A manual request whose input holds a newline and a workflow command: the reason carries it as data; no line
    of the log starts a command but fleetflow's own."""
    event = step.tmp / "event.json"
    hostile = "x\n::set-output name=action::promote ##[error]y"
    event.write_text(json.dumps({"inputs": {"environment": hostile, "commit": ""}}))
    code, log = step.run("route", "--event-name", "workflow_dispatch", "--event-path", str(event),
                         "--environments", "dev,qa")
    outputs = step.outputs()
    assert code == 1 and outputs["action"] == "none"
    assert "::set-output name=action::promote" in outputs["reason"]
    [(name, _p, message)] = commands_in(log)  # the invalid request is the envelope's one problem
    assert name == "error" and message.startswith(one_line(outputs["reason"]))


def test_a_bug_is_one_annotation_and_exit_1(step: Step, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Not a FleetflowError: one ``::error`` after the step's report, the exception goes on (exit 1), and Python's
    report of it prints the traceback with commands off: it may quote anything. (The bug is planted: fleetflow has
    none on purpose.)"""
    promote_cli = importlib.import_module("fleetflow.cli.promote")  # the module (the package exports the command)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("planted\n::warning::injected")

    monkeypatch.setattr(promote_cli, "promote_many", broken)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    base = ["--forge", "local", "--control-plane", step.fleet.cp_url, "--format", "json", "--github-actions"]
    result = CliRunner().invoke(cli_main, ["promote", "--commit", "abcdef1", *base], env=step.env)
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
    [(name, _props, message)] = commands_in(result.output)
    assert name == "error" and "crashed" in message
    assert sys.excepthook is protected_excepthook
    sys.excepthook(RuntimeError, result.exception, result.exception.__traceback__)
    printed = capsys.readouterr().out
    assert "RuntimeError: planted\n::warning::injected" in printed and commands_in(printed) == []


def test_outputs_of_check_rollout_and_schedule(step: Step) -> None:
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    step.run("promote", "--commit", sha)
    code, _log = step.run("schedule", "--environment", "dev")
    outputs = step.outputs()
    assert code == 0 and outputs["operation"] == "unchanged" and outputs["commit"] == sha
    (step.tmp / "output").unlink()
    code, _log = step.run("check-rollout", "--environment", "dev")
    outputs = step.outputs()
    assert code == 0 and outputs["gate-state"] == "waiting-for-merge" and outputs["promoted"] == "[]"
    assert outputs["description"] == json.loads(outputs["result"])["result"]["description"]
    assert re.search(r"^## fleetflow check-rollout\n\n⏳ \*\*dev\*\*: waiting-for-merge", step.summary(), re.M)


def test_reconcile_as_a_step(step: Step) -> None:
    """``reconcile --github-actions`` (what every workflow runs): ``steps`` (environment -> steps taken, the others
    left out), ``main-commit`` and ``waiting-for-reports`` (what the gitops workflow's hold step reads) outputs,
    one notice per step, the summary's table of what each environment looked like, what was done and what it waits
    for, then the fleet status."""
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    code, log = step.run("reconcile")
    assert code == 0, log
    outputs = step.outputs()
    envelope = json.loads(outputs["result"])
    assert envelope["ok"] is True and envelope["result"]["mainCommit"] == sha
    assert json.loads(outputs["steps"]) == {"dev": ["promote"]} and outputs["main-commit"] == sha
    assert json.loads(outputs["waiting-for-reports"]) == envelope["result"]["waitingForReports"] == []
    [dev] = [e for e in envelope["result"]["environments"] if e["environment"] == "dev"]
    [(name, props, message)] = commands_in(log)
    assert (name, props) == ("notice", {"title": "fleetflow reconcile"})
    assert message == f"dev: promote: {dev['did'][0]['message']}"
    summary = step.summary()
    assert summary.startswith(f"## fleetflow reconcile\n\nMain at `{sha[:12]}`.\n")
    assert re.search(r"^\| `dev` \| pinned `[0-9a-f]{12}`, .* \| \*\*promote\*\*: .* \| "
                     r"PR #1 waits for a person to merge it \(autoMerge off\) \|$", summary, re.M)
    assert "| `qa` | pinned `-`, GitOps carries `-`, gate none | – | nothing promoted here yet |" in summary
    assert "## fleetflow status" in summary
    (step.tmp / "output").unlink()
    code, log = step.run("reconcile", "--no-job-summary")  # nothing new is due: no step, no notice
    assert code == 0 and json.loads(step.outputs()["steps"]) == {} and commands_in(log) == []


def test_reconcile_summary_shows_the_merge_step_as_its_own_row(step: Step) -> None:
    """The merge step's outcome (``merging.MergeOutcome``: state, pull request, reason, merge commit) is a row of
    its own under the reconcile table: here dev has ``autoMerge`` and its branch requires ``ci/validate``; the
    local forge has no auto-merge, so reconcile waits for the check, then merges when the check's status on the head
    is the run's event (``--recheck``; another run waits at no cost, tests/test_merge_records.py)."""
    fleet = step.fleet
    fleet.forge.protect_branch(fleet.gitops_id, "dev", ["ci/validate"])  # type: ignore[attr-defined]
    auto = {"dev": "  pullRequest:\n    autoMerge: true\n"}
    fleet.push_main({".environments/envs.yaml": "---\n".join(_environment(n, a, auto.get(n, ""))
                                                             for n, a in ENVIRONMENTS.items())}, "dev merges itself")
    header = "| environment | merge | pull request | reason | merge commit |\n|---|---|---|---|---|\n"
    code, log = step.run("reconcile")
    assert code == 0, log
    pr = fleet.open_pr("dev")
    assert pr is not None
    assert f"{header}| `dev` | waiting | #{pr.number} | waiting for required checks: ci/validate | – |\n" \
        in step.summary()

    head = fleet.branch_sha(fleet.gitops_url, "fleetflow/dev")
    fleet.post_status(head, "ci/validate", "success", "ok")
    for written in ("summary.md", "output"):
        (step.tmp / written).unlink()
    code, log = step.run("reconcile", "--recheck", head)  # as the status event on the head would
    assert code == 0, log
    [dev] = [e for e in json.loads(step.outputs()["result"])["result"]["environments"] if e["environment"] == "dev"]
    merge_commit = fleet.branch_sha(fleet.gitops_url, "dev")
    assert dev["merge"]["mergeCommit"] == merge_commit
    assert f"{header}| `dev` | merged | #{pr.number} | – | `{merge_commit[:12]}` |\n" in step.summary()


def test_the_status_page_as_a_step(step: Step) -> None:
    """``status --format html --output DIR --github-actions`` (the status-page action): the ``path`` output for
    actions/upload-pages-artifact, the envelope as ``result``, the delivery metrics as the job summary."""
    code, log = step.run_plain("status", "--format", "html", "--output", str(step.tmp / "site"), "--github-actions")
    assert code == 0, log
    outputs = step.outputs()
    assert outputs["path"] == str((step.tmp / "site").resolve())
    assert json.loads(outputs["result"])["result"] == {"page": str(step.tmp / "site" / "index.html")}
    assert (step.tmp / "site" / "index.html").is_file()
    assert step.summary().startswith("## Delivery metrics")
    assert commands_in(log) == []


def validate_a_change_that_breaks_every_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    """``validate --into main --github-actions`` in a clone whose workload's label no policy selects any more (every
    environment breaks), with the step's output and summary files at ``tmp_path``/output and /summary.md."""
    cp, _gitops = build_bare_repos(tmp_path, "gitops", "control-plane")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(cp), str(checkout))
    workload = checkout / "workloads" / "app.yaml"
    workload.write_text(workload.read_text().replace("purpose: app", "purpose: web"))
    monkeypatch.chdir(checkout)
    env = {"GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    return CliRunner().invoke(cli_main, ["validate", "--into", "main", "--format", "json", "--github-actions"],
                              env=env, catch_exceptions=False)


def test_validate_as_a_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``validate --into --github-actions`` (the pull request check): each problem an ``::error`` at its file and
    line (paths in the repository: it runs inside the checkout), each warning a ``::warning``; the summary lists
    the warnings and what was checked; on success an ``environments`` output."""
    result = validate_a_change_that_breaks_every_environment(tmp_path, monkeypatch)
    assert result.exit_code == 1
    commands = commands_in(result.output)
    errors = [(props, message) for name, props, message in commands if name == "error"]
    assert {props["file"] for props, _ in errors} == {".environments/envs.yaml"}
    assert sorted(m.split(":")[0] for _, m in errors) == [f"Environment {e}" for e in
                                                           ("dev", "dr", "prod-eu", "prod-us", "qa")]
    warned = {props["file"].split("@")[0] for name, props, _ in commands if name == "warning" and "@" in props["file"]}
    assert warned == {"dev", "dr", "prod-eu", "prod-us", "qa"}  # each branch's policy, at the commit read
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## fleetflow validate\n\n**Failed** (exit code 1):")

    workload = tmp_path / "checkout" / "workloads" / "app.yaml"
    workload.write_text(workload.read_text().replace("purpose: web", "purpose: app"))
    (tmp_path / "summary.md").unlink()
    env = {"GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    result = CliRunner().invoke(cli_main, ["validate", "--into", "main", "--strict", "--format", "json",
                                           "--github-actions"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    outputs = runner_outputs((tmp_path / "output").read_text(encoding="utf-8"))
    checked = json.loads(outputs["environments"])
    assert [e["name"] for e in checked] == ["dev", "dr", "prod-eu", "prod-us", "qa"]
    assert all(e["mainTree"] == "." for e in checked)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "| environment | assignments | main | environment branch |" in summary and "| `qa` | 1 | `.` |" in summary


# --- GitHub's limits: 10 annotations of a kind per step, 1 MiB of summary per step ---

def bad_clusters(count: int) -> dict[str, str]:
    """An environment branch whose ``count`` clusters each name a ClusterType that does not exist: one problem
    each (a renamed ClusterType does this to a whole fleet)."""
    return {"clusters.yaml": "---\n".join(
        f"apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dev-{i}\n"
        f"spec:\n  clusterType: nowhere{i}\n  statusContext: flux/dev-{i}\n" for i in range(count))}


def schedule_broken_clusters(step: Step, count: int) -> str:
    """dev promoted, then ``count`` broken clusters (:func:`bad_clusters`) pushed to its branch and scheduled as a
    step with a fresh summary file: the schedule fails (exit 1); its log."""
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    assert step.run("promote", "--commit", sha)[0] == 0
    (step.tmp / "summary.md").unlink()
    step.fleet.push_env("dev", bad_clusters(count))
    code, log = step.run("schedule", "--environment", "dev")
    assert code == 1, log
    return log


def test_more_problems_than_github_annotates_say_how_many_more(step: Step) -> None:
    """GitHub shows 10 error, 10 warning and 10 notice annotations per step and drops the rest without a word
    (actions/toolkit docs/problem-matchers.md, "Limitations": "10 warning annotations, 10 error annotations, and 10
    notice annotations per step"; actions/runner src/Runner.Worker/ExecutionContext.cs ``AddIssue`` counts them per
    step). Until 2026-11-29 a schedule with 30 broken clusters printed 30 ``::error`` lines, GitHub showed 10, and
    nothing said 20 more existed. Now the first 9 are annotations and the 10th says how many more and where: every
    one is in the job summary's list and in the log."""
    log = schedule_broken_clusters(step, 30)
    errors = [c for c in commands_in(log) if c[0] == "error"]
    assert len(errors) == 10
    assert [message.split(":")[0] for _n, _p, message in errors[:9]] == [f"Cluster dev-{i}" for i in range(9)]
    assert errors[9] == ("error", {"title": "fleetflow schedule"},
                         "… and 21 more errors, not shown as annotations (GitHub shows 10 errors per step): all 30 are "
                         "in the job summary and the step's log")
    summary = step.summary()
    assert all(f"Cluster dev-{i}: unknown clusterType 'nowhere{i}'" in summary for i in range(30))
    code, log = step.run("schedule", "--environment", "dev", "--no-job-summary")
    assert code == 1, log
    assert commands_in(log)[9][2].endswith("all 30 are in the step's log")


def test_the_summary_lists_at_most_200_problems_and_stays_under_1_mib(step: Step) -> None:
    """GitHub drops a step summary over 1 MiB whole, with one error annotation of its own (actions/runner
    src/Runner.Worker/FileCommandManager.cs, ``CreateStepSummaryCommand``: a file longer than
    ``AttachmentSizeLimit = 1024 * 1024`` is not uploaded, "$GITHUB_STEP_SUMMARY upload aborted, supports content up
    to a size of 1024k"). The list of problems stops at 200 (the rest: the log), and a run whose part would take the
    step's file past 1 MiB (an earlier fleetflow run in the same step wrote most of it) writes what fits and says
    so, instead of costing the step every summary it had."""
    log = schedule_broken_clusters(step, 205)
    summary = step.summary()
    assert "Cluster dev-199:" in summary and "Cluster dev-200:" not in summary
    assert "- … and 5 more problems: every one is in the step's log\n" in summary
    assert commands_in(log)[9][2].endswith("all 205 are in the step's log")  # not all of them in the summary

    earlier = "x" * 60 + "\n"
    (step.tmp / "summary.md").write_text(earlier * (1024 * 1024 // len(earlier) - 30), encoding="utf-8")
    code, log = step.run("schedule", "--environment", "dev")
    written = (step.tmp / "summary.md").read_bytes()
    assert len(written) <= 1024 * 1024
    assert written.decode().endswith("**… the summary stops here**: GitHub shows no step summary over 1024 KiB; "
                                     "everything this run did is in the step's log.\n\n")
    assert "## fleetflow schedule\n" in written.decode()

    (step.tmp / "summary.md").write_text(earlier * (1024 * 1024 // len(earlier)), encoding="utf-8")
    before = (step.tmp / "summary.md").read_bytes()
    code, log = step.run("schedule", "--environment", "dev")
    assert code == 1, log
    assert (step.tmp / "summary.md").read_bytes() == before  # no room: nothing written, and a warning says so
    [(_n, _p, message)] = [c for c in commands_in(log) if c[0] == "warning"]
    assert message.startswith("the job summary of this step is full")


def test_warnings_reach_the_job_summary(step: Step) -> None:
    """A warning was an annotation only (validate's summary aside), so past GitHub's 10 it was lost, and a failed
    run's summary left its warnings out. Now every command's summary lists them: here the status page's delivery
    metrics cannot count qa, whose branch is gone from the control plane."""
    git(step.fleet.root, "--git-dir", step.fleet.cp_url, "update-ref", "-d", "refs/heads/qa")
    code, log = step.run_plain("status", "--format", "html", "--output", str(step.tmp / "site"), "--github-actions")
    assert code == 0, log
    warnings = [message for name, _p, message in commands_in(log) if name == "warning"]
    assert len(warnings) == 2 and all(m.startswith("qa: branch 'qa' does not exist") for m in warnings)
    summary = step.summary()
    assert summary.startswith("2 warnings:\n\n- qa: branch 'qa' does not exist in the control-plane repo ")
    assert ": its promotions are not counted (hint: push it back at its last commit" in summary
    assert summary.index("2 warnings:") < summary.index("## Delivery metrics")


def test_a_failed_runs_summary_lists_its_warnings_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request that breaks every environment (validate, as in :func:`test_validate_as_a_step`): until
    2026-11-29 the failure's summary listed the problems only, and each branch's policy warning was an annotation
    alone. Now the summary lists the warnings after the problems."""
    result = validate_a_change_that_breaks_every_environment(tmp_path, monkeypatch)
    assert result.exit_code == 1
    warnings = [(props, message) for name, props, message in commands_in(result.output) if name == "warning"]
    assert len(warnings) == 10
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    failed, listed = summary.split("\n\n10 warnings:\n\n")
    assert failed.startswith("## fleetflow validate\n\n**Failed** (exit code 1):")
    for props, message in warnings:
        assert f"- `{props['file']}:{props['line']}" in listed and message.split(" (hint")[0][:60] in listed


def test_output_files_that_cannot_be_written(step: Step) -> None:
    """``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY`` name files the runner makes for each step ("Workflow commands
    for GitHub Actions", environment files); a step that runs fleetflow in a container of its own with ``docker run
    -e GITHUB_OUTPUT`` and no volume hands it a path that is not there. Until 2026-11-29 that was a traceback after
    the run, "crashed (a bug in fleetflow)". Now the outputs that could not be written are an error and the step
    fails with exit 2 (the next steps would read them empty: route's ``action`` empty is "nothing to do"); a summary
    that could not be written is a warning, and the run's own exit code stands."""
    sha = step.fleet.branch_sha(step.fleet.cp_url, "main")
    missing = step.tmp / "not-mounted"
    env = {**step.env, "GITHUB_OUTPUT": str(missing / "output"), "GITHUB_STEP_SUMMARY": str(missing / "summary.md")}
    base = ["--forge", "local", "--control-plane", step.fleet.cp_url, "--format", "json", "--github-actions"]
    result = CliRunner().invoke(cli_main, ["promote", "--commit", sha, *base], env=env, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    [(_n, _p, error)] = [c for c in commands_in(result.output) if c[0] == "error"]
    assert error == (f"the step's outputs could not be written to $GITHUB_OUTPUT ({missing / 'output'}): No such file "
                     "or directory (hint: GitHub's runner makes this file for each step; when fleetflow runs in a "
                     "container the step starts, pass the file in with the variable (docker run -e GITHUB_OUTPUT -v "
                     "\"$GITHUB_OUTPUT:$GITHUB_OUTPUT\"), or leave out --github-actions)")
    [(_n, _p, warning)] = [c for c in commands_in(result.output) if c[0] == "warning"]
    summary = missing / "summary.md"
    assert warning.startswith(f"the job summary could not be written to $GITHUB_STEP_SUMMARY ({summary})")

    env["GITHUB_OUTPUT"] = step.env["GITHUB_OUTPUT"]  # the outputs are there: the summary alone costs nothing
    result = CliRunner().invoke(cli_main, ["check-rollout", "--environment", "dev", *base], env=env,
                                catch_exceptions=False)
    assert result.exit_code == 0 and step.outputs()["gate-state"] == "waiting-for-merge"
    assert sorted(c[0] for c in commands_in(result.output)) == ["notice", "warning"]
