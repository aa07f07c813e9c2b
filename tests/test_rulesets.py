"""Which refs a GitHub ruleset targets, and which of fleetflow's ref writes it declines (``fleetflow.forge.rulesets``).

Sources:
* GitHub Docs, "Creating rulesets for a repository", "Using fnmatch syntax"
  (https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-rulesets/
  creating-rulesets-for-a-repository#using-fnmatch-syntax): "GitHub uses the File::FNM_PATHNAME flag for the
  File.fnmatch syntax, the wildcard does not match directory separators (/). For example, qa/* will match all
  branches beginning with qa/ and containing a single slash, but will not match qa/foo/bar. You can include any
  number of slashes after qa with qa/**/*, which would match, for example, qa/foo/bar/foobar/hello-world. You can
  also extend the qa string with qa**/**/* to make the rule more inclusive."
* Ruby's ``File.fnmatch`` (https://rubydoc.info/stdlib/core/File.fnmatch, ``dir.c``), its examples with
  ``File::FNM_PATHNAME``: ``'**/foo'`` matches ``'a/b/c/foo'`` and not ``'a/.b/c/foo'``; ``'**.rb'`` does not
  match ``'lib/song.rb'``; ``'*'`` does not match ``'.profile'`` (no ``FNM_DOTMATCH``).
* GitHub's answers to declined pushes, quoted in public threads: a ``required_status_checks`` rule refuses a push
  ("Required status check "pre-commit" is expected", mxcube/mxcubecore#891), a ``pull_request`` rule refuses a
  direct push ("Changes must be made through a pull request", henne49/dbus-opendtu#235);
  ``required_status_checks``' ``do_not_enforce_on_create`` "Allow repositories and branches to be created if a
  check would otherwise prohibit it" (``repository-rule-required-status-checks``).
* The REST API's description of a ruleset (``@octokit/openapi`` 23.0.2, ``repository-ruleset``,
  ``repository-ruleset-conditions``, ``repository-rule-*``): ``ref_name.include`` "One of these patterns must
  match ... Also accepts ``~DEFAULT_BRANCH`` ... or ``~ALL``"; ``exclude`` "The condition will not pass if any of
  these patterns match"; ``creation`` / ``update`` / ``deletion`` "Only allow users with bypass permission to
  create / update / delete matching refs"; ``non_fast_forward`` "Prevent users with push access from force pushing
  to refs"; ``tag_name_pattern``'s ``negate`` "If true, the rule will fail if the pattern matches".
"""

from __future__ import annotations

import pytest

from fleetflow.forge.rulesets import (
    BranchRule,
    NamePattern,
    Ruleset,
    declined_pushes,
    declined_writes,
    fnmatch_pathname,
    name_pattern_passes,
    ruleset_of,
    targets_ref,
    writes_text,
)
from fleetflow.promotion.merge_records import RECORDS_PATTERN, record_refs

RECORD = "refs/tags/fleetflow/auto-merge/dev"


@pytest.mark.parametrize(("pattern", "name", "matches"), [
    ("qa/*", "qa/foo", True),  # GitHub Docs
    ("qa/*", "qa/foo/bar", False),
    ("qa/**/*", "qa/foo/bar/foobar/hello-world", True),
    ("qa**/**/*", "qa-next/foo/bar", True),
    ("**/foo", "a/b/c/foo", True),  # Ruby's examples
    ("**/foo", "a/.b/c/foo", False),
    ("**.rb", "lib/song.rb", False),
    ("*", ".profile", False),
    ("c?t", "cat", True),
    ("ca[a-z]", "cat", True),
    ("ca[!t]", "cat", False),
    ("v\\*", "v*", True),
    ("v\\*", "v1", False),
    ("refs/tags/*", RECORD, False),  # one level only
    ("refs/tags/**", RECORD, False),  # "**" that is not followed by "/" is "*"
    ("refs/tags/fleetflow/**", RECORD, False),
    ("refs/tags/**/*", RECORD, True),
    ("refs/tags/fleetflow/**/*", RECORD, True),
    ("refs/tags/fleetflow/*/dev", RECORD, True),
    ("refs/tags/v[0-9]*", "refs/tags/v1.2.0", True),
])
def test_fnmatch_follows_rubys_pathname_rules(pattern: str, name: str, matches: bool) -> None:
    assert fnmatch_pathname(pattern, name) is matches


def test_the_exclusion_doctor_gives_covers_every_merge_record() -> None:
    assert RECORDS_PATTERN == "fleetflow/**/*"
    for env in ("dev", "prod-eu"):
        for ref in record_refs(env):
            assert fnmatch_pathname(f"refs/tags/{RECORDS_PATTERN}", ref)
            assert not fnmatch_pathname("refs/tags/fleetflow/**", ref)


def test_include_and_exclude_pick_the_refs_of_the_target() -> None:
    every_tag = Ruleset(1, "tags", "tag", "active", include=("~ALL",))
    assert targets_ref(every_tag, RECORD) and not targets_ref(every_tag, "refs/heads/main")
    assert not targets_ref(Ruleset(2, "branches", "branch", "active", include=("~ALL",)), RECORD)
    kept_out = Ruleset(3, "tags", "tag", "active", include=("~ALL",), exclude=("refs/tags/fleetflow/**/*",))
    assert not targets_ref(kept_out, RECORD) and targets_ref(kept_out, "refs/tags/v1")
    too_narrow = Ruleset(4, "tags", "tag", "active", include=("~ALL",), exclude=("refs/tags/fleetflow/**",))
    assert targets_ref(too_narrow, RECORD)
    default = Ruleset(5, "main", "branch", "active", include=("~DEFAULT_BRANCH",))
    assert targets_ref(default, "refs/heads/trunk", "trunk") and not targets_ref(default, "refs/heads/main", "trunk")
    assert not targets_ref(Ruleset(6, "none", "tag", "active"), RECORD)  # no include: nothing


def test_the_writes_a_ruleset_declines() -> None:
    everything = Ruleset(1, "protect", "tag", "active", include=("~ALL",),
                         rules=("creation", "update", "deletion", "non_fast_forward", "required_linear_history"))
    assert declined_writes(everything, RECORD) == {
        "create": ["Restrict creations"],
        "move": ["Restrict updates", "Block force pushes"],
        "delete": ["Restrict deletions"],
    }
    for enforcement in ("evaluate", "disabled"):
        assert declined_writes(Ruleset(2, "x", "tag", enforcement, include=("~ALL",), rules=("deletion",)),
                               RECORD) == {}
    assert declined_writes(Ruleset(3, "x", "tag", "active", include=("refs/tags/v*",), rules=("deletion",)),
                           RECORD) == {}
    releases_only = NamePattern("starts_with", "v")
    named = Ruleset(4, "names", "tag", "active", include=("~ALL",), name_patterns=(releases_only,))
    assert declined_writes(named, RECORD) == {"create": ["tag name must start with 'v'"],
                                              "move": ["tag name must start with 'v'"]}
    not_fleetflow = NamePattern("regex", "^fleetflow/", negate=True)
    assert declined_writes(Ruleset(5, "n", "tag", "active", include=("~ALL",), name_patterns=(not_fleetflow,)),
                           RECORD)["create"] == ["tag name must not match '^fleetflow/'"]
    allowed = NamePattern("contains", "auto-merge")
    assert declined_writes(Ruleset(6, "n", "tag", "active", include=("~ALL",), name_patterns=(allowed,)),
                           RECORD) == {}
    assert writes_text(["delete", "create"]) == "creating and deleting"
    assert writes_text(["move", "create", "delete"]) == "creating, moving and deleting"


def test_a_ruleset_as_the_api_returns_it() -> None:
    """The shape of "Get a repository ruleset" (GitHub's example, with a tag target), and of a listed one."""
    whole = ruleset_of({
        "id": 42, "name": "release tags", "target": "tag", "source_type": "Organization", "source": "contoso",
        "enforcement": "active", "current_user_can_bypass": "never",
        "conditions": {"ref_name": {"include": ["~ALL"], "exclude": ["refs/tags/fleetflow/**/*"]}},
        "rules": [{"type": "deletion"}, {"type": "tag_name_pattern", "parameters": {
            "name": "semver", "negate": False, "operator": "regex", "pattern": "^v[0-9]"}}],
    })
    assert whole == Ruleset(42, "release tags", "tag", "active", "Organization contoso", ("~ALL",),
                            ("refs/tags/fleetflow/**/*",), ("deletion", "tag_name_pattern"),
                            (NamePattern("regex", "^v[0-9]", False, "semver"),), "never")
    listed = ruleset_of({"id": 7, "name": "x", "source_type": "Repository", "source": "contoso/gitops",
                         "enforcement": "evaluate"})
    assert (listed.target, listed.include, listed.rules, listed.can_bypass) == ("branch", (), (), None)


def test_the_pushes_a_branch_rule_declines() -> None:
    """fleetflow pushes new, unsigned commits: the pin to a control-plane environment branch (a fast-forward), the
    PR head branch ``fleetflow/<env>`` (created, then forced)."""
    head = ("create", "update", "force")
    rules = [BranchRule("non_fast_forward", 3), BranchRule("deletion", 3), BranchRule("required_linear_history", 4),
             BranchRule("pull_request", 5, {"required_approving_review_count": 1}), BranchRule("creation", 6)]
    assert declined_pushes(rules, head) == {3: ["Block force pushes"], 5: ["Require a pull request before merging"],
                                            6: ["Restrict creations"]}
    assert declined_pushes(rules, ("update",)) == {5: ["Require a pull request before merging"]}
    checks = BranchRule("required_status_checks", 7, {"required_status_checks": [{"context": "ci"}]})
    lenient = BranchRule("required_status_checks", 8, {"do_not_enforce_on_create": True})
    assert declined_pushes([checks, lenient], ("create",)) == {7: ["Require status checks to pass"]}
    assert declined_pushes([lenient], ("update",)) == {8: ["Require status checks to pass"]}
    signed = [BranchRule("required_signatures", 9), BranchRule("update", 9), BranchRule("update", 9)]
    assert declined_pushes(signed, ("update",)) == {9: ["Require signed commits", "Restrict updates"]}  # once each
    assert declined_pushes([BranchRule("deletion", 1), BranchRule("merge_queue", 2)], head) == {}


def test_a_name_pattern_regex_runs_on_re2_as_on_github() -> None:
    """GitHub runs a ruleset's regex name patterns on RE2 (GitHub Docs, "Creating rulesets for a repository",
    "Using regular expressions for commit metadata": "Rulesets support RE2 syntax"; negative lookahead is not
    supported). fleetflow ran them on Python's ``re``, which does not know RE2's ``\\pL`` (every such pattern was
    then "not judged" and passed) and backtracks (``^(a+)+$`` against a long name of a's took exponential time);
    on RE2 both are judged as GitHub judges them, and a pattern RE2 refuses is still not judged here."""
    letters_first = NamePattern("regex", r"^\pL+/")
    assert name_pattern_passes(letters_first, "fleetflow/auto-merge/dev")
    assert not name_pattern_passes(letters_first, "1fleetflow/auto-merge/dev")
    nested = NamePattern("regex", "^(a+)+$")
    assert not name_pattern_passes(nested, "a" * 40 + "b")  # Python's re: 2^40 steps
    assert name_pattern_passes(NamePattern("regex", "^(?!fleetflow/)"), "fleetflow/x")  # RE2 refuses: not judged
