"""What ``fleetflow status`` (and the status page, which shows the same lines) says about the fleet after the
ordinary mistakes and mishaps of the people who run it: a PR closed instead of merged, a GitOps repo that moved,
environment names that differ only in punctuation."""

from __future__ import annotations

import json
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import pytest

from fleetflow.promotion.check_rollout import check_rollout
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.reconcile import reconcile
from fleetflow.promotion.status import EnvironmentStatus, as_markdown, as_text, fleet_status
from tests.fleet import Fleet, push_file
from tests.helpers import run_cli


def roll_out(fleet: Fleet, env: str) -> str:
    fleet.approve(env)
    fleet.clock.advance(timedelta(minutes=0.5))
    fleet.clusters_report(env)
    fleet.clock.advance(timedelta(minutes=2))
    with fleet.context() as ctx:
        return check_rollout(ctx, env).state


def test_a_pr_closed_without_merging_is_said_not_shown_as_a_rollout_on_its_way(
        fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dev rolled out; a person closes qa's PR instead of merging it (a reviewer rejecting the change). Nothing rolls
    out to qa until the pin or the branch changes (reconcile waits and says "closed without merging"); until
    2026-11-29 ``status`` showed qa as "pending: scheduled" with no PR, as for a rollout on its way, exit 0 and no
    word. GitHub lists a head's closed PRs, merged or not, with ``state=closed`` and ``head=owner:branch``, an unmerged
    one with ``merged_at: null`` (REST "List pull requests", https://docs.github.com/en/rest/pulls/pulls#list-pull-
    requests). A merged PR (dev's) is not taken for a rejection."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"
    rejected = fleet.open_pr("qa")
    assert rejected is not None
    fleet.forge.update_pull(fleet.gitops_id, rejected.number, state="closed")
    with fleet.context() as ctx:
        entries = {e.name: e for e in fleet_status(ctx)}
    said = (f"scheduled (PR #{rejected.number} was closed without merging: nothing rolls out; promote or push the "
            "environment branch to propose it again)")
    assert (entries["qa"].gate_state, entries["qa"].gate_description) == ("pending", said)
    assert entries["dev"].gate_description == "rolled out: 2/2 clusters"
    if fleet.forge.name == "local":  # the command line, once
        monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
        shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
        assert shown.exit_code == 0, shown.output
        envelope = json.loads(shown.stdout)
        [qa] = [e for e in envelope["result"]["environments"] if e["environment"] == "qa"]
        assert qa["gate"]["description"] == said and qa["pullRequest"] is None
        [warning] = envelope["warnings"]
        assert warning["message"] == (f"qa: PR #{rejected.number} proposed main@{sha[:12]} and was closed without "
                                      "merging: the gate waits for a rollout that will not come")
        assert f"fleetflow promote --environment qa --commit {sha[:12]}" in warning["hint"]
    with fleet.context() as ctx:  # proposed again by hand: the new PR is what status shows
        promote_many(ctx, "qa", sha)
    with fleet.context() as ctx:
        [qa_now] = [e for e in fleet_status(ctx) if e.name == "qa"]
    assert qa_now.gate_description == "scheduled" and qa_now.pull_request is not None
    assert qa_now.pull_request.number != rejected.number


def test_a_gitops_repo_fleetflow_cannot_read_is_said_on_its_lines_and_the_rest_still_shows(
        fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dev rolled out and qa waits for its PR; then the GitOps repo cannot be read: deleted, moved without a
    redirect, or out of the token's reach (a workflow's ``GITHUB_TOKEN`` "only reaches the repository its workflow
    runs in", docs/setup.md step 1; git over HTTPS then fails with "remote: Repository not found", as in
    https://github.com/actions/checkout/issues/1845, closed as "User error"). Until 2026-11-29 ``status``, the status
    page and ``metrics`` all failed (exit 3) on the first such environment, so the one view that should show what is
    wrong showed nothing. Now each line of an environment whose GitOps repo does not read says so (its pin and gate
    still shown), with a warning at its GitOpsRepo; the others show as before, and ``metrics`` counts the promotions
    without their merge times."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, None, sha)
    assert roll_out(fleet, "dev") == "success"
    Path(fleet.gitops_url).rename(fleet.gitops_url + ".moved")
    with fleet.context() as ctx:
        entries = {e.name: e for e in fleet_status(ctx, warn_pins=True)}
    dev, qa = entries["dev"], entries["qa"]
    assert (dev.gate_state, dev.pinned, dev.last_success) == ("success", sha, sha)
    assert dev.gate_description.startswith(f"rolled out: 2/2 clusters (cannot read the GitOps repo {fleet.gitops_id}: ")
    assert qa.gate_state == "pending" and f"cannot read the GitOps repo {fleet.gitops_id}" in qa.gate_description
    assert entries["prod-eu"].gate_description == "not promoted yet"
    if fleet.forge.name != "local":
        return
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    warnings = json.loads(shown.stdout)["warnings"]
    assert [(w["message"].split(":")[0], w["location"]["file"]) for w in warnings] == [
        ("dev", "dev/gitops-repo.yaml"), ("qa", "qa/gitops-repo.yaml")]
    assert all("GITHUB_TOKEN" in w["hint"] for w in warnings)
    page = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "html", "--output",
                   str(tmp_path / "site"))
    assert page.exit_code == 0, page.output
    assert f"cannot read the GitOps repo {fleet.gitops_id}" in (tmp_path / "site" / "index.html").read_text()
    measured = run_cli("metrics", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert measured.exit_code == 0, measured.output
    said = [w["message"] for w in json.loads(measured.stdout)["warnings"]]
    assert len(said) == 2 and all(m.endswith("when its PRs were merged is not known") for m in said), said


def test_environments_whose_names_differ_only_in_punctuation_are_separate_nodes_of_the_chain() -> None:
    """``prod-eu``, ``prod.eu`` and ``prod_eu`` are three valid Environment names (DNS subdomain characters, as
    Kubernetes names). In a Mermaid flowchart a node is its id: text set for an id "several times, it is the last
    text found for the node that will be used", and edges name nodes by id (mermaid-js/mermaid
    docs/syntax/flowchart.md, "Node with text"; https://mermaid.js.org/syntax/flowchart.html). Until 2026-11-29
    all three got the id ``env_prod_eu``: the summary's chain showed one box with arrows to itself, coloured by the
    last one's gate. Names of letters, digits and ``-`` keep their id (``env_prod_eu``), as before."""
    names = ["prod-eu", "prod.eu", "prod_eu", "prod-2EXeu", "a-5", "a.5"]
    entries = [EnvironmentStatus(name=n, after=names[i - 1:i], branch=n, pinned=None, held=None,
                                 gate_state="failure" if n == "prod-eu" else "none")
               for i, n in enumerate(names)]
    graph = as_markdown(entries).split("```mermaid\n", 1)[1].split("```", 1)[0]
    nodes = [line.split("[", 1)[0].strip() for line in graph.splitlines() if '["' in line]
    assert len(set(nodes)) == len(names), nodes
    assert nodes[0] == "env_prod_eu"
    edges = [line.strip() for line in graph.splitlines() if "-->" in line]
    assert edges == [f"{a} --> {b}" for a, b in pairwise(nodes)]
    assert f"class {nodes[0]} failure" in graph and f"class {nodes[1]} none" in graph
    assert all(node.replace("_", "").isalnum() and node.isascii() for node in nodes)


def test_a_pin_no_promote_wrote_is_not_shown_as_not_promoted_yet(fleet: Fleet) -> None:
    """A team moving from Kalypso keeps its ``base-repo.yaml`` (the same file, docs/design.md section 2: "Kalypso
    compatible"), whose ``commit`` Kalypso or a person wrote; or a person edits the pin by hand. There is no
    ``fleetflow/dev`` status on that commit (promote posts "scheduled" when it pins); reconcile schedules the pin
    and opens its PR. Until 2026-11-29 ``status`` said "not promoted yet" next to the pin and that open PR. Now the
    line says the pin has no status yet and what posts one; once the PR is merged and the clusters report, the
    gate's own words show."""
    sha = fleet.branch_sha(fleet.cp_url, "main")
    push_file(fleet.root, Path(fleet.cp_url), "dev", "base-repo.yaml",
              lambda text: "\n".join(f"  commit: {sha}" if line.strip().startswith("commit:") else line
                                     for line in text.splitlines()) + "\n")
    with fleet.context() as ctx:
        reconcile(ctx)
    with fleet.context() as ctx:
        [dev] = [e for e in fleet_status(ctx) if e.name == "dev"]
    assert dev.pinned == sha and dev.pull_request is not None and dev.gate_state == "none"
    assert dev.gate_description == (f"pinned; no fleetflow/dev status on main@{sha[:12]} yet (a pin written by hand "
                                    "or by Kalypso, not by promote; or promote's post failed): check-rollout posts "
                                    "it once the PR is merged")
    assert roll_out(fleet, "dev") == "success"
    with fleet.context() as ctx:
        [dev] = [e for e in fleet_status(ctx) if e.name == "dev"]
    assert (dev.gate_state, dev.gate_description) == ("success", "rolled out: 2/2 clusters")


def test_the_json_keys_of_status_are_the_documented_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A script reads ``fleetflow status --format json`` with ``jq``; docs/status-page.md ("As JSON") lists each
    environment's keys and the gate states. Until 2026-11-29 nothing said which keys there are (docs/design.md only
    "``status``: ``environments``"). The keys of a real run (one environment rolled out, one with an open PR, the
    rest not promoted) are exactly the documented ones, and so are the merge record kinds."""
    from typing import get_args

    from fleetflow.promotion.merge_records import RecordKind
    from tests.fleet import local_fleet

    fleet = local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, fleet.branch_sha(fleet.cp_url, "main"))
    assert roll_out(fleet, "dev") == "success"
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cli-cache"))
    shown = run_cli("status", "--forge", "local", "--control-plane", fleet.cp_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    environments = json.loads(shown.stdout)["result"]["environments"]
    doc = (Path(__file__).parents[1] / "docs" / "status-page.md").read_text().split("## As JSON", 1)[1]
    rows = [line for line in doc.split("\n## ", 1)[0].splitlines() if line.startswith("| `")]
    table = "\n".join(rows)
    documented = [key.strip("`") for row in rows for key in row.split("|")[1].strip().split(", ")]
    assert all(list(e) == documented for e in environments), (documented, [list(e) for e in environments])
    assert {e["gate"]["state"] for e in environments} <= {"success", "failure", "error", "pending", "none"}
    pr = next(e["pullRequest"] for e in environments if e["pullRequest"])
    assert f"`{{{', '.join(pr)}}}`" in table
    assert all(f"`{kind}`" in table for kind in get_args(RecordKind))


def test_every_format_of_status_says_how_to_release_a_held_environment() -> None:
    """A rollback holds the environment until ``--release``; the HTML page said how, the text and Markdown
    (``status`` in a terminal, the job summary) only said "held" until 2026-11-29, and a person had to find the
    command in ``promote --help``."""
    entries = [EnvironmentStatus(name="dev", after=[], branch="dev", pinned="a" * 40, held=None),
               EnvironmentStatus(name="qa", after=["dev"], branch="qa", pinned="b" * 40,
                                 held="rollback from cccccccccccc to bbbbbbbbbbbb")]
    command = "fleetflow promote --environment qa --commit SHA --release"
    text = as_text(entries)
    assert text.splitlines()[-1] == f"qa is held: release it with: {command}"
    assert text.count("--release") == 1
    markdown = as_markdown(entries)
    assert markdown.rstrip().splitlines()[-1] == (
        f"- `qa` is held (rollback from cccccccccccc to bbbbbbbbbbbb): release it with `{command}`")
    assert markdown.count("--release") == 1
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    assert markdown.index(table[-1]) < markdown.index("- `qa` is held")  # after the table, not in it
    assert "\n\n- `qa`" in markdown  # a list of its own, a blank line after the table
    assert as_text(entries[:1]).count("release") == 0
    assert "held" not in as_markdown(entries[:1]).split("```", 2)[2]
