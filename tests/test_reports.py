"""The report templates (``fleetflow/report/templates/``) rendered from real result objects and read back the way
GitHub reads them: with cmark-gfm, GitHub's own fork of cmark (the ``cmarkgfm`` bindings), tables and the other GFM
extensions on. Data in a report stays data: it cannot add a row, a heading, a link or an HTML element.

Rules checked against: GitHub Flavored Markdown spec (https://github.github.com/gfm/): "Tables (extension)" (a
``\\|`` inside a cell, code spans included), "Code spans" (backtick runs, one space stripped from each side),
"Backslash escapes", "Fenced code blocks" (a fence closes only on one at least as long).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given
from hypothesis import strategies as st

from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.prbody import BODY_LIMIT, PullRequestFacts, body, environment_of, title
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.status import as_markdown, fleet_status
from fleetflow.render.incremental import ExpectedCluster
from fleetflow.render.pipeline import Changes, Meta, render_environment
from fleetflow.render.summary import changes_text, headline
from fleetflow.report.markdown import code, fenced, one_line, text
from tests.fleet import ENVIRONMENTS, Fleet
from tests.helpers import make_plane, run_cli
from tests.test_promotion import make_local_fleet


def gfm(markdown: str) -> str:
    """HTML as GitHub renders Markdown (raw HTML kept, so that an injected element would show)."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class Elements(HTMLParser):
    """Every element of an HTML fragment, with its text: tables as rows of cells, code blocks, headings, links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.stack: list[tuple[str, list[str]]] = []
        self.rows: list[list[str]] = []
        self.blocks: dict[str, list[str]] = {}
        self.texts: dict[str, list[str]] = {}
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self._row = []
        name = tag + "".join(f".{v}" for k, v in attrs if k == "lang" and v)  # cmark-gfm: <pre lang="diff">
        self.stack.append((name, []))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            name, parts = self.stack.pop()
            content = "".join(parts)
            if self.stack:
                self.stack[-1][1].append(content)
            self.texts.setdefault(name.split(".")[0], []).append(content)
            if name.startswith("pre."):
                self.blocks.setdefault(name.split(".", 1)[1], []).append(content)
            if name.split(".")[0] in ("td", "th") and self._row is not None:
                self._row.append(content)
            if name.split(".")[0] == "tr" and self._row is not None:
                self.rows.append(self._row)
                self._row = None
            if name.split(".")[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.stack:
            self.stack[-1][1].append(data)


def elements(markdown: str) -> Elements:
    parser = Elements()
    parser.feed(gfm(markdown))
    parser.close()
    return parser


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    yield make_local_fleet(tmp_path)


# --- the PR body and title ---

def test_pr_body_and_title_of_a_real_promotion(fleet: Fleet) -> None:
    sha = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        [promotion] = promote_many(ctx, "dev", sha)
    outcome = promotion.schedule
    assert outcome is not None and outcome.pull_request is not None
    pr = fleet.open_pr("dev")
    assert pr.title == f"fleetflow: promote main@{sha[:12]} to dev"
    assert environment_of(pr.body) == "dev" and len(pr.body) <= BODY_LIMIT
    page = elements(pr.body)
    c = outcome.changes
    assert page.rows[1:] == [
        ["Environment", "dev"],
        ["main commit", f"{outcome.main_commit} (was nothing yet)"],
        ["dev branch commit", outcome.env_commit],
        ["Assignments", f"{len(c.added)} added, {len(c.changed)} changed, {len(c.removed)} removed, "
                        f"{c.unchanged} unchanged"],
        ["Config keys changed", str(len(c.config_keys))],
    ]
    assert page.texts["summary"] == [f"Assignments added ({len(c.added)})",
                                     f"Config keys changed ({len(c.config_keys)})", "Rendered changes (diff)"]
    assert page.texts["li"] == [*c.added, *c.config_keys]
    assert page.texts["h3"] == ["Gate plan"]
    [plan] = [p for p in page.texts["p"] if p.startswith("Merging this PR")]
    assert "(flux/dev-1, flux/dev-2), soaks 1m, and fails after 30m" in plan
    nxt = sorted(n for n, after in ENVIRONMENTS.items() if "dev" in after)
    assert plan.endswith(f"promoted to: {', '.join(nxt)}.")
    [diff] = page.blocks["diff"]
    assert "+++ b/cloud/app-dev/" in diff


def hostile_facts(diff: str = "", n: int = 3) -> PullRequestFacts:
    """Names and keys a reviewer's page must show as text: table pipes, HTML, a heading after a line break,
    backticks, a link, emphasis."""
    nasty = ["a|b", "<img src=x onerror=alert(1)>", "x\n## Injected", "``` `tick` ```", "[click](http://evil)",
             "*bold* _it_ ~~s~~"]
    return PullRequestFacts(
        environment="qa", main_commit="a" * 40, env_branch="qa", env_commit="b" * 40, previous_main_commit=None,
        changes=Changes(added=[f"ct/app-{i}" for i in range(n)] + nasty, changed=nasty, config_keys=nasty),
        clusters=[ExpectedCluster("qa-1", "ct", "flux/qa|1"), ExpectedCluster("qa-2", "ct", None)],
        rollout=RolloutPolicy.model_validate({"soakTime": "15m", "timeout": "1h"}),
        next_environments=["prod"], diff=diff, plan_hint="fleetflow plan --environment qa",
    )


def test_pr_body_shows_hostile_names_as_text() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-````\n+</details>\n+## not a heading\n"
    facts = hostile_facts(diff)
    page = elements(body(facts))
    assert "img" not in page.tags and "a" not in page.tags and "em" not in page.tags and "strong" in page.tags
    assert page.texts["h2"] == ["Promote main@aaaaaaaaaaaa to qa"] and page.texts["h3"] == ["Gate plan"]
    assert len(page.rows) == 6 and all(len(row) == 2 for row in page.rows)
    items = page.texts["li"]
    assert items == [one_line(name) for name in [*facts.changes.added, *facts.changes.changed,
                                                 *facts.changes.config_keys]]
    assert page.blocks["diff"] == [diff]  # the whole diff, in one block, whatever it holds
    assert "flux/qa|1" in page.texts["code"]


def test_long_diff_and_long_lists_are_cut_with_a_pointer() -> None:
    diff = "".join(f"+line {i} " + "x" * 100 + "\n" for i in range(5000))
    cut = body(hostile_facts(diff))
    assert len(cut) <= BODY_LIMIT and "The diff is cut to fit" in cut
    [shown] = elements(cut).blocks["diff"]
    assert diff.startswith(shown) and shown.endswith("\n")
    huge = hostile_facts(n=20_000)
    lists = body(replace(huge, changes=huge.changes.model_copy(update={"added": ["x" * 2000] * 200})))
    assert len(lists) <= BODY_LIMIT and "Lists cut to fit" in lists
    assert title(huge) == f"fleetflow: promote main@{'a' * 12} to qa"


# --- status ---

def test_status_markdown_of_a_real_fleet(fleet: Fleet) -> None:
    sha = fleet.branch_sha(fleet.cp_url, "main")
    with fleet.context() as ctx:
        promote_many(ctx, "dev", sha)
        entries = fleet_status(ctx)
    page = elements(as_markdown(entries))
    assert page.texts["h2"] == ["fleetflow status"]
    [chart] = page.blocks["mermaid"]
    for e in entries:
        node = "env_" + e.name.replace("-", "_")
        assert f'{node}["{e.name}<br/>{(e.pinned or "-")[:12]}<br/>{e.gate_state}"]' in chart
        for upstream in e.after:
            assert f"env_{upstream.replace('-', '_')} --> {node}" in chart
        assert f"class {node} {e.gate_state}" in chart
    rows = page.rows[1:]
    assert [row[0] for row in rows] == [e.name for e in entries]
    dev = rows[0]
    assert dev[1] == sha[:12] and dev[2].endswith(f"{entries[0].gate_state}: {entries[0].gate_description}")
    assert dev[3] == f"#{entries[0].pull_request.number}" if entries[0].pull_request else "–"


# --- the escaping itself, against the parser ---

BLANKS = " \t\n\r\x0b\x0c"  # CommonMark's whitespace: what it trims from a paragraph or a cell (not U+00A0)
LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1).filter(lambda s: s.strip())


@given(value=LINE, literal=LINE)
def test_text_and_code_stay_in_their_cell(value: str, literal: str) -> None:
    """Whatever a value holds, a table row keeps its two cells, the text cell reads as the value and the code cell
    holds the value literally."""
    page = elements(f"| a | b |\n|---|---|\n| {text(value)} | {code(literal)} |\n")
    assert len(page.rows) == 2 and len(page.rows[1]) == 2
    assert page.rows[1][0] == value.strip(BLANKS)
    assert page.rows[1][1] == literal
    assert {"img", "a", "em", "strong", "del", "script"}.isdisjoint(page.tags)


@given(value=LINE)
def test_a_paragraph_stays_a_paragraph(value: str) -> None:
    page = elements(f"{text(value)}\n\n- {code(value, cell=False)}\n")
    assert page.texts.get("p") == [value.strip(BLANKS)]
    assert page.texts["code"] == [value]
    assert {"h1", "h2", "h3", "table", "img", "a", "em", "strong"}.isdisjoint(page.tags)


@given(body_text=st.text())
def test_a_fenced_block_holds_anything(body_text: str) -> None:
    page = elements(f"{fenced(body_text, 'diff')}\n\nafter\n")
    # line ends as Markdown reads them; NUL is shown as U+FFFD (CommonMark 0.31, "Insecure characters")
    expected = re.sub(r"\r\n?", "\n", body_text).rstrip("\n").replace("\0", "\ufffd")
    assert html.unescape("".join(page.blocks.get("diff", []))) == expected + "\n"
    assert page.texts["p"][-1] == "after"


def test_terminal_summary_of_a_real_render(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    result = run_cli("plan", "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out",
                     "--no-diff")
    assert result.exit_code == 0, result.output
    from fleetflow.cli.common import load

    rendered = render_environment(load(main, env), "dev", meta=Meta(None, None))
    lines = result.output.splitlines()
    assert lines[0] == f"Plan for {headline(rendered)}"
    assert lines[1:] == changes_text(rendered.changes)
    assert lines[1] == f"  added ({len(rendered.changes.added)}):"
    assert lines[2:2 + len(rendered.changes.added)] == [f"    {a}" for a in rendered.changes.added[:20]]
