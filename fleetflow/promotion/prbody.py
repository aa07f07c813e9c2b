"""The title and body of a fleetflow pull request: what a reviewer needs to approve a promotion, under GitHub's limit.

The text is the report template ``pr_body.md.j2`` (``fleetflow/report/templates/``); this module holds the facts
it is rendered from and the one rule templates cannot express: the body must fit in GitHub's 65,536 characters
(https://docs.github.com/rest/pulls/pulls#create-a-pull-request documents ``body``; longer bodies are refused with
422 "body is too long (maximum is 65536 characters)"). The diff is cut first, then the lists, each time with a
pointer to the full plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from fleetflow.forge.base import PR_MARKER
from fleetflow.model.durations import format_duration
from fleetflow.model.resources import RolloutPolicy
from fleetflow.render.incremental import LEGACY_VERSION, PART_DIR, SHARD_DIR, STATE_PATH, STATE_VERSION, ExpectedCluster
from fleetflow.render.pipeline import Changes
from fleetflow.report import render_report

BODY_LIMIT = 65_536
END_MARKER = "<!-- fleetflow:end -->"  # the end of fleetflow's part of the description (pr_body.md.j2)
LIST_LIMIT = 50
_MARGIN = 400  # room for the lines around the diff and the pointer to the full plan
# what the body names when the commit converts the state's files from an earlier format
STATE_FILES = {"version": STATE_VERSION, "index": STATE_PATH, "parts": f"{PART_DIR}/", "shards": f"{SHARD_DIR}/",
               "single_file": LEGACY_VERSION}


@dataclass(frozen=True)
class PullRequestFacts:
    environment: str
    main_commit: str
    env_branch: str
    env_commit: str
    previous_main_commit: str | None
    changes: Changes
    clusters: list[ExpectedCluster]
    rollout: RolloutPolicy
    next_environments: list[str]
    diff: str
    plan_hint: str  # the command that shows the full plan when the body is cut (printed as code)
    plan_url: str | None = None  # the workflow run whose artifact holds the full plan (fleetflow.promotion.fullplan)
    compare_url: str | None = None  # GitHub's compare view of the GitOps branch and the PR's head branch
    earlier_state_format: int | None = None  # the commit converts the state from it (incremental.earlier_format)
    # files in the folders the commit writes to that fleetflow did not write: kept as they are
    kept: list[str] = field(default_factory=list)
    # files fleetflow wrote that were changed on the GitOps branch after its commit: put back as rendered
    restored: list[str] = field(default_factory=list)


def title(facts: PullRequestFacts) -> str:
    return render_report("pr_title.txt.j2", facts=facts).strip()


def marker(environment: str) -> str:
    return f"{PR_MARKER}{environment} -->"


def _render(facts: PullRequestFacts, *, lists: bool, diff: str, diff_cut: bool = False) -> str:
    return render_report("pr_body.md.j2", facts=facts, marker=Markup(marker(facts.environment)), limit=LIST_LIMIT,
                         lists=lists, diff=diff, diff_cut=diff_cut, soak=format_duration(facts.rollout.soak_time),
                         timeout=format_duration(facts.rollout.timeout), state=STATE_FILES)


def body(facts: PullRequestFacts) -> str:
    if len(facts.diff) < BODY_LIMIT:  # else it cannot fit: do not render it whole only to measure
        text = _render(facts, lists=True, diff=facts.diff)
        if len(text) <= BODY_LIMIT:
            return text
    if facts.diff:  # cut the diff at a line end to what fits beside everything else
        # measured with the pointer to the full plan, whose links have any length
        room = BODY_LIMIT - len(_render(facts, lists=True, diff="\n", diff_cut=True)) - _MARGIN
        if room > 0:
            diff = facts.diff[:room].rsplit("\n", 1)[0] + "\n"
            text = _render(facts, lists=True, diff=diff, diff_cut=True)
            if len(text) <= BODY_LIMIT:
                return text
    return _render(facts, lists=False, diff="")  # the lists alone are too long: keep the head and the gate plan


def with_added_text(current: str, ours: str) -> str:
    """``ours`` (a new :func:`body`) with what a person wrote around fleetflow's part of the PR's ``current``
    description kept: the text before its marker and after :data:`END_MARKER`, as it is (GitHub's editor may have
    made its line ends CRLF). Until 2026-11-29 a new pin replaced the whole description, and a person's note (a
    change ticket, "wait for Monday") was gone without a word. A description with no end marker (written by an
    earlier version, or a person deleted it), or one that would pass GitHub's limit, is replaced whole."""
    start = current.find(PR_MARKER)
    end = current.find(END_MARKER, start)
    if start < 0 or end < 0:
        return ours
    kept = current[:start] + ours + current[end + len(END_MARKER):]
    return kept if len(kept) <= BODY_LIMIT else ours


def environment_of(pr_body: str) -> str | None:
    """The environment named by a fleetflow PR's hidden marker, or None for other PRs."""
    start = pr_body.find(PR_MARKER)
    if start < 0:
        return None
    rest = pr_body[start + len(PR_MARKER):]
    end = rest.find(" -->")
    return rest[:end] if end > 0 else None
