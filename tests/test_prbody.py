from __future__ import annotations

from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.prbody import BODY_LIMIT, PullRequestFacts, body, environment_of, title
from fleetflow.render.incremental import ExpectedCluster
from fleetflow.render.pipeline import Changes


def facts(diff: str = "", n: int = 3, earlier_state_format: int | None = None) -> PullRequestFacts:
    return PullRequestFacts(
        environment="qa",
        main_commit="a" * 40,
        env_branch="qa",
        env_commit="b" * 40,
        previous_main_commit="c" * 40,
        changes=Changes(added=[f"ct/app-{i}" for i in range(n)], changed=["ct/x"], unchanged=5,
                        config_keys=["region-eu: LOG_LEVEL (changed)"]),
        clusters=[ExpectedCluster("qa-1", "ct", "flux/qa-1"), ExpectedCluster("qa-2", "ct", None)],
        rollout=RolloutPolicy.model_validate({"soakTime": "15m", "timeout": "1h"}),
        next_environments=["prod"],
        diff=diff,
        plan_hint="fleetflow plan --environment qa",
        earlier_state_format=earlier_state_format,
    )


def test_body_says_what_a_reviewer_needs() -> None:
    text = body(facts("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))
    assert environment_of(text) == "qa"
    for part in ("`qa`", "a" * 40, "b" * 40, "c" * 40, "3 added, 1 changed, 0 removed, 5 unchanged",
                 "region-eu: LOG_LEVEL (changed)", "`flux/qa-1`", "soaks 15m", "after 1h", "`prod`", "```diff"):
        assert part in text, part
    assert title(facts()) == f"fleetflow: promote main@{'a' * 12} to qa"


def test_body_says_when_the_commit_converts_the_state() -> None:
    """A commit written over a state of an earlier format converts the state's files once: the body says so, with
    the files named as code, so that the reviewer knows why they change. Otherwise it says nothing of it."""
    assert "fleetflow's state" not in body(facts())
    whole = body(facts(earlier_state_format=2))
    assert ("_This commit also moves fleetflow's state from format 2 to 3: `.fleetflow/state.json` is rewritten and "
            "its parts are added in `.fleetflow/index/`. This happens once; no rendered file changes because of "
            "it._") in whole
    single = body(facts(earlier_state_format=1))
    assert "from format 1 to 3" in single and "with a shard per cluster type in `.fleetflow/state/`" in single


def test_long_diff_is_cut_with_a_pointer() -> None:
    diff = "".join(f"+line {i} " + "x" * 100 + "\n" for i in range(5000))
    text = body(facts(diff))
    assert len(text) <= BODY_LIMIT
    assert "The diff is cut" in text and "fleetflow plan --environment qa" in text


def test_huge_lists_are_cut() -> None:
    text = body(facts(n=20_000))
    assert len(text) <= BODY_LIMIT
    assert "and 19950 more" in text


def test_kept_files_stay_when_the_lists_are_cut() -> None:
    """Names as long as names go (253 characters) make the lists too long for a body, which then leaves them out;
    the files fleetflow kept and did not write are the one list a reviewer needs to see whatever the size: until
    2026-11-28 it was left out with the others (a bug hunt read it in the template)."""
    from dataclasses import replace

    long = "x" * 240  # an assignment id is a cluster type's name and a target's: 500 characters here
    many = facts()
    many = replace(many, changes=Changes(added=[f"{long}/{long}-{i}" for i in range(300)],
                                         changed=[f"{long}/{long}-c{i}" for i in range(300)],
                                         removed=[f"{long}/{long}-r{i}" for i in range(300)]),
                   kept=[f"ct/{long}-{i}/RUNBOOK.md" for i in range(3)])
    text = body(many)
    assert len(text) <= BODY_LIMIT and "_Lists cut to fit." in text
    assert "Files kept that fleetflow did not write (3)" in text and f"ct/{long}-2/RUNBOOK.md" in text


def test_other_prs_have_no_environment() -> None:
    assert environment_of("a normal PR") is None
