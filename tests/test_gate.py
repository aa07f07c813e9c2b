from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from fleetflow.errors import InputError, Problems
from fleetflow.forge.base import CommitStatus
from fleetflow.model.controlplane import Resource, build_resource
from fleetflow.model.durations import format_duration, parse_duration
from fleetflow.model.resources import EnvironmentSpec, RolloutPolicy
from fleetflow.promotion.context import chain_order
from fleetflow.promotion.gate import (
    GateDecision,
    configuration_problems,
    configuration_warnings,
    evaluate,
)
from fleetflow.promotion.pin import Pin, past_pin, read_pin, write_pin
from fleetflow.render.incremental import ExpectedCluster
from tests.helpers import parsed

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CLUSTERS = [ExpectedCluster("a", "ct", "flux/a"), ExpectedCluster("b", "ct", "flux/b")]


def st(context: str, state: str, minutes: int = 0, description: str = "") -> CommitStatus:
    return CommitStatus(context, state, description, T0 + timedelta(minutes=minutes))  # type: ignore[arg-type]


def decide(statuses: list[CommitStatus], now_min: int = 10, **policy: object) -> GateDecision:
    result = evaluate(RolloutPolicy.model_validate(policy), CLUSTERS, {s.context: s for s in statuses}, T0,
                      T0 + timedelta(minutes=now_min))
    assert isinstance(result, GateDecision), result
    return result


def test_all_clusters_successful() -> None:
    d = decide([st("flux/a", "success", 1), st("flux/b", "success", 2), st("other", "failure")])
    assert d.state == "success" and d.description == "rolled out: 2/2 clusters"


def test_missing_status_is_pending_never_success() -> None:
    d = decide([st("flux/a", "success", 1)])
    assert d.state == "pending" and d.missing == ["b"] and d.description == "rolling out: 1/2 clusters"
    d = decide([st("flux/a", "success", 1), st("flux/b", "pending", 1)])
    assert d.state == "pending"


def test_failure_fails_fast() -> None:
    d = decide([st("flux/a", "failure", 1, "health check failed"), st("flux/b", "pending")])
    assert d.state == "failure" and "a (health check failed)" in d.description
    assert decide([st("flux/a", "error", 1)]).state == "failure"


def test_timeout() -> None:
    d = decide([st("flux/a", "success", 1)], now_min=31, timeout="30m")
    assert d.state == "failure" and "timed out after 30m" in d.description and "missing: b" in d.description


def test_soak_time() -> None:
    statuses = [st("flux/a", "success", 1), st("flux/b", "success", 5)]
    d = decide(statuses, now_min=10, soakTime="10m")
    assert d.state == "pending" and d.ready_at == T0 + timedelta(minutes=15) and "soaking" in d.description
    assert decide(statuses, now_min=15, soakTime="10m").state == "success"


def test_min_clusters_without_inventory() -> None:
    policy = RolloutPolicy.model_validate({"minClusters": 2, "contextPattern": "argocd/*"})
    statuses = {s.context: s for s in [st("argocd/x", "success"), st("argocd/y", "success"), st("ci", "failure")]}
    result = evaluate(policy, [], statuses, T0, T0 + timedelta(minutes=1))
    assert isinstance(result, GateDecision) and result.state == "success"
    result = evaluate(policy, [], {"argocd/x": st("argocd/x", "success")}, T0, T0 + timedelta(minutes=1))
    assert isinstance(result, GateDecision) and result.state == "pending"


def test_zero_expected_is_a_configuration_error_unless_allowed() -> None:
    with pytest.raises(InputError, match="zero clusters"):
        evaluate(RolloutPolicy(), [], {}, T0, T0)
    allowed = evaluate(RolloutPolicy(allow_empty=True), [], {}, T0, T0)
    assert isinstance(allowed, GateDecision) and allowed.state == "success"


def test_context_pattern_for_clusters_without_status_context() -> None:
    policy = RolloutPolicy.model_validate({"contextPattern": "flux/{cluster}"})
    result = evaluate(policy, [ExpectedCluster("c", "ct", None)], {"flux/c": st("flux/c", "success")}, T0,
                      T0 + timedelta(minutes=1))
    assert isinstance(result, GateDecision) and result.state == "success"
    with pytest.raises(InputError, match="no statusContext"):
        evaluate(RolloutPolicy(), [ExpectedCluster("c", "ct", None)], {}, T0, T0)


def test_two_clusters_expecting_one_context_are_a_configuration_error_not_a_timeout() -> None:
    """GitHub keeps one status per context that counts: the combined status is "success if the latest status for
    all contexts is success" (docs.github.com/en/rest/commits/statuses, "Get the combined status for a specific
    reference"), so two Clusters expecting one context can never both be seen. Until 2026-11-29 the gate waited
    for two reports where one could come, and every rollout ended "timed out ...; missing: 1 more" (after 4h in
    the example's prod). Now the gate refuses to decide, as for a cluster with no context, and validate says so
    up front (tests/test_bad_input.py)."""
    copied = [ExpectedCluster("a", "ct", "flux/a"), ExpectedCluster("b", "ct", "flux/a")]
    statuses = {"flux/a": st("flux/a", "success", 1)}
    with pytest.raises(InputError) as refused:
        evaluate(RolloutPolicy(), copied, statuses, T0, T0 + timedelta(hours=5))
    (problem,) = refused.value.problems()
    assert problem.message == ("Cluster b expects the status context 'flux/a' (its statusContext), as Cluster a "
                               "does: the gate counts a context once, so it would wait for a report that cannot "
                               "come and time out")
    assert problem.hint is not None and problem.hint.startswith("give each Cluster the context its own agent posts")
    # a pattern without {cluster} over a cluster type of several clusters: one problem per cluster past the first
    policy = RolloutPolicy.model_validate({"contextPattern": "flux/{clusterType}"})
    three = [ExpectedCluster(n, "ct", None) for n in "xyz"]
    with pytest.raises(InputError) as refused:
        evaluate(policy, three, {"flux/ct": st("flux/ct", "success", 1)}, T0, T0 + timedelta(hours=5))
    assert [p.message.split(" (")[0] for p in refused.value.problems()] == [
        "Cluster y expects the status context 'flux/ct'", "Cluster z expects the status context 'flux/ct'"]
    assert all("{cluster} in rollout.contextPattern" in (p.hint or "") for p in refused.value.problems())
    # each cluster its own context: decided as before
    policy = RolloutPolicy.model_validate({"contextPattern": "flux/{clusterType}/{cluster}"})
    found = {f"flux/ct/{n}": st(f"flux/ct/{n}", "success", 1) for n in "xyz"}
    decided = evaluate(policy, three, found, T0, T0 + timedelta(hours=5))
    assert isinstance(decided, GateDecision) and decided.description == "rolled out: 3/3 clusters"

def test_a_min_clusters_the_gate_can_never_reach_is_refused_not_a_timeout() -> None:
    """``evaluate`` succeeds once ``len(succeeded) >= required and required > 0``, and with an inventory watches only
    the inventory's contexts. Until 2026-11-29 ``minClusters: 0`` without ``allowEmpty`` and a ``minClusters`` above
    the inventory's count were accepted, and every rollout timed out: "timed out after 30m: 2/2 clusters; missing:
    -2 more" with both clusters green. Now the gate refuses to decide, as for a cluster with no context, and
    validate says so up front (tests/test_validate_ahead.py)."""
    green = {s.context: s for s in [st("flux/a", "success", 1), st("flux/b", "success", 2)]}
    for policy, message in [({"minClusters": 0}, "rollout.minClusters is 0 without allowEmpty: "),
                            ({"minClusters": 3}, "rollout.minClusters is 3, but the gate expects 2 clusters ")]:
        with pytest.raises(InputError) as refused:
            evaluate(RolloutPolicy.model_validate(policy), CLUSTERS, green, T0, T0 + timedelta(hours=1))
        (problem,) = refused.value.problems()
        assert problem.message.startswith(message), problem
        assert configuration_problems(RolloutPolicy.model_validate(policy), CLUSTERS) == [problem]
    # without an inventory, minClusters: 0 is the same gate that never passes
    no_inventory = RolloutPolicy.model_validate({"minClusters": 0, "contextPattern": "flux/*"})
    with pytest.raises(InputError, match="minClusters is 0 without allowEmpty"):
        evaluate(no_inventory, [], green, T0, T0 + timedelta(hours=1))
    # what can be reached decides as before: a quorum of the inventory, or all of it
    for policy in ({"minClusters": 1}, {"minClusters": 2}, {}):
        decided = evaluate(RolloutPolicy.model_validate(policy), CLUSTERS, green, T0, T0 + timedelta(minutes=10))
        assert isinstance(decided, GateDecision) and decided.state == "success", (policy, decided)
        assert configuration_problems(RolloutPolicy.model_validate(policy), CLUSTERS) == []
    assert configuration_warnings(RolloutPolicy.model_validate({"minClusters": 1}), CLUSTERS) == []


def test_a_gate_that_passes_without_a_report_or_counts_any_context_is_a_warning() -> None:
    """Decidable, but probably not meant: ``minClusters: 0`` with ``allowEmpty`` passes at once over an inventory
    of two (no report read), and ``minClusters`` with no ``contextPattern`` watches ``*``: a CI check run on the
    GitOps commit is counted as a cluster."""
    skip = RolloutPolicy.model_validate({"minClusters": 0, "allowEmpty": True})
    decided = evaluate(skip, CLUSTERS, {}, T0, T0)
    assert isinstance(decided, GateDecision) and decided.state == "success"
    (warning,) = configuration_warnings(skip, CLUSTERS)
    assert warning.message.startswith("rollout.minClusters is 0 with allowEmpty: the gate passes as soon as a "
                                      "rollout is merged, without waiting for any of the 2 expected clusters")
    assert configuration_warnings(skip, []) == []  # nothing expected: what allowEmpty is for
    count_any = RolloutPolicy.model_validate({"minClusters": 2})
    ci = {s.context: s for s in [st("flux/x", "success"), st("ci/lint", "success")]}
    decided = evaluate(count_any, [], ci, T0, T0 + timedelta(minutes=1))
    assert isinstance(decided, GateDecision) and decided.state == "success"  # one cluster and CI: "2/2 clusters"
    (warning,) = configuration_warnings(count_any, [])
    assert "counts every status context on the GitOps commits (no rollout.contextPattern)" in warning.message
    assert configuration_warnings(RolloutPolicy.model_validate({"minClusters": 2, "contextPattern": "flux/*"}),
                                  []) == []


def test_contexts_that_differ_only_in_case_are_one_context_as_on_github() -> None:
    """GitHub's REST description of "Create a commit status" (github/rest-api-description, the ``context``
    parameter): "A string label to differentiate this status from the status of other systems. This field is
    case-insensitive." Flux posts its default context lowercased (fluxcd/notification-controller
    internal/server/provider_commit_status.go at 2e46958, ``generateDefaultCommitStatus``: ``strings.ToLower(id)``),
    so a statusContext copied from ``kubectl`` (``Kustomization/flux-system/E3173055``) waited for a context that
    never came, and the rollout timed out with the cluster green on GitHub (until 2026-11-29: validate warned, the
    gate failed). Now the report counts; two Clusters whose contexts differ only in case share one context, which
    is refused like any shared context; and the warning is gone."""
    copied = [ExpectedCluster("copied-from-kubectl", "ct", "Kustomization/flux-system/E3173055"),
              ExpectedCluster("b", "ct", "flux/b")]
    posted = [st("kustomization/flux-system/e3173055", "success", 1), st("FLUX/B", "success", 2)]
    decided = evaluate(RolloutPolicy(), copied, {s.context: s for s in posted}, T0, T0 + timedelta(minutes=5))
    assert decided.state == "success" and decided.succeeded == ["b", "copied-from-kubectl"]
    failing = [st("kustomization/flux-system/e3173055", "failure", 1, "health check failed")]
    assert evaluate(RolloutPolicy(), copied, {s.context: s for s in failing}, T0, T0).failed == [
        "copied-from-kubectl (health check failed)"]
    # a count over a pattern: the pattern without case too, the context shown as posted
    count = RolloutPolicy.model_validate({"minClusters": 1, "contextPattern": "flux/*"})
    decided = evaluate(count, [], {"Flux/x": st("Flux/x", "success", 1)}, T0, T0 + timedelta(minutes=5))
    assert decided.state == "success" and decided.succeeded == ["Flux/x"]
    twins = [ExpectedCluster("a", "ct", "flux/a"), ExpectedCluster("a2", "ct", "Flux/A")]
    with pytest.raises(InputError) as refused:
        evaluate(RolloutPolicy(), twins, {}, T0, T0)
    (problem,) = refused.value.problems()
    assert problem.message.startswith("Cluster a2 expects the status context 'Flux/A' (its statusContext), as "
                                      "Cluster a does ('flux/a': GitHub tells contexts apart without case): ")


def _stray(contexts: dict[str, str], posted: list[str], now_min: int = 10) -> GateDecision:
    clusters = [ExpectedCluster(name, "ct", context) for name, context in contexts.items()]
    statuses = {c: st(c, "success", 1) for c in posted}
    return evaluate(RolloutPolicy.model_validate({"timeout": "30m"}), clusters, statuses, T0,
                    T0 + timedelta(minutes=now_min))


@pytest.mark.parametrize(("expected", "posted", "how"), [
    ("flux/k3s-ham-l1-dev", "flux/k3s-ham-l1-dev ", "only spaces differ"),
    ("argocd/k3s-mty-l1-dev", "argocd/k3s-mty-l1-dev.contoso.internal",
     "the name with and without its domain"),
    ("kustomization/fleetflow/e3173055", "kustomization/fleetflow/9a8b7c6d",
     "Flux's default context with another Provider UID: was the Provider recreated?"),
    ("flux/k3s-ham-l1-dev", "flux/k3s-ham-l1-dve", "a close name: a typo, or a cluster not in the inventory?"),
], ids=["spaces", "fqdn", "flux-uid", "typo"])
def test_a_context_close_to_a_missing_clusters_is_named(expected: str, posted: str, how: str) -> None:
    """A cluster whose reporter posts under another name than its statusContext (a ``commitStatusExpr`` or an Argo
    CD ``status.label`` built from the node's domain name, a Provider recreated on old Flux, a typo): the gate
    waits for it and cannot count the report. Until 2026-11-29 it said "rolling out: 1/2 clusters", then "timed out
    after 30m: 1/2 clusters; missing: one", and nothing of the report sitting on the same commit."""
    decided = _stray({"one": expected, "two": "flux/two"}, [posted, "flux/two", "ci/lint"])
    stray = f"{posted!r} reported success, not one's {expected!r} ({how})"
    assert decided.state == "pending" and decided.missing == ["one"]
    assert decided.description == f"rolling out: 1/2 clusters; {stray}"
    assert [str(s) for s in decided.strays] == [stray]
    late = _stray({"one": expected, "two": "flux/two"}, [posted, "flux/two"], now_min=31)
    assert late.state == "failure" and late.description == f"timed out after 30m: 1/2 clusters; missing: one; {stray}"


def test_strays_pair_one_context_with_one_cluster_and_leave_others_alone() -> None:
    """Each context is named for one cluster at most; a context far from every expected one (a CI check), a cluster
    that reported, fleetflow's own records and a pending report are not strays; Flux's default context with
    another UID is named only when the pair is unambiguous."""
    decided = _stray({"a": "flux/k3s-a", "b": "flux/k3s-b", "c": "flux/k3s-c"},
                     ["flux/k3s-a", "flux/k3s-b.example.org", "ci/lint", "fleetflow/dev"])
    assert [(s.cluster, s.context) for s in decided.strays] == [("b", "flux/k3s-b.example.org")]
    pending = evaluate(RolloutPolicy(), [ExpectedCluster("a", "ct", "flux/a")],
                       {"flux/a": st("flux/a", "pending"), "flux/a ": st("flux/a ", "success")}, T0, T0)
    assert pending.strays == []  # a reported; its pending report is what it waits for
    two = _stray({"a": "kustomization/fleetflow/e3173055", "b": "kustomization/fleetflow/0c9c2e41"},
                 ["kustomization/fleetflow/9a8b7c6d", "kustomization/fleetflow/11111111"])
    assert all("Provider UID" not in s.how for s in two.strays)


def test_strays_cost_no_quadratic_work_on_a_big_fleet() -> None:
    """30,000 clusters whose contexts all changed: the spelling rules are dictionary look-ups; the similarity rule
    (difflib) runs only for at most STRAY_PAIRS pairs."""
    contexts = {f"c{i:05}": f"flux/c{i:05}" for i in range(30_000)}
    posted = [f"argo/c{i:05}" for i in range(30_000)] + ["FLUX/C00007 "]
    started = time.perf_counter()
    decided = _stray(contexts, posted)
    assert time.perf_counter() - started < 10
    assert [(s.cluster, s.how) for s in decided.strays] == [("c00007", "only the case and spaces differ")]


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("2m", 120), ("1h30m", 5400), (45, 45)])
def test_durations(text: str | int, seconds: int) -> None:
    assert parse_duration(text).total_seconds() == seconds


def test_bad_duration() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("soon")


def test_pin_roundtrip_keeps_comments() -> None:
    abc, dfe, ghi = (c * 40 for c in "abc")  # full shas: read_pin refuses any other commit
    text = "# pinned by fleetflow\napiVersion: scheduler.kalypso.io/v1alpha1\nkind: BaseRepo\nmetadata:\n" \
           "  name: main\nspec:\n  repo: r  # the control plane\n  branch: main\n  path: .\n  commit: " + abc + "\n"
    assert read_pin(text).commit == abc
    new = write_pin(text, commit=dfe, repo="r", hold="rollback from abc")
    assert "# pinned by fleetflow" in new and "# the control plane" in new
    assert read_pin(new).commit == dfe and read_pin(new).hold == "rollback from abc"
    released = write_pin(new, commit=ghi, repo="r", hold=None)
    assert read_pin(released).hold is None and "annotations" not in released
    assert read_pin(write_pin(None, commit=abc, repo="r", hold=None)).commit == abc
    # an annotation of the user's stays through a hold and its release (only the hold's own key comes and goes)
    mine = text.replace("  name: main\n", "  name: main\n  annotations:\n    team.example/owner: platform\n")
    held = write_pin(mine, commit=dfe, repo="r", hold="rollback from abc")
    again = write_pin(held, commit=ghi, repo="r", hold=None)
    assert "team.example/owner: platform" in held and "team.example/owner: platform" in again
    assert read_pin(held).hold == "rollback from abc" and read_pin(again).hold is None


@pytest.mark.parametrize(("tail", "where", "message", "hint"), [
    ("spec: [1]\n", "p.yaml:5:1", "BaseRepo spec must be a mapping, not a list", "write spec: on a line of its own"),
    ("spec:\n  commit: 123\n", "p.yaml:6:3", "BaseRepo spec.commit must be text, not 123 (a number)",
     'quote it: commit: "123"'),
    ("spec:\n  commit: true\n", "p.yaml:6:3", "BaseRepo spec.commit must be text, not true (a boolean)",
     'quote it: commit: "true"'),
    ("metadata2: {}\nmetadata: x\n", "p.yaml:4:1", "BaseRepo metadata must be a mapping, not text", "write metadata:"),
    ("annotations: [x]\n", "p.yaml:5:3", "BaseRepo metadata.annotations must be a mapping, not a list", None),
    ("annotations:\n    fleetflow.dev/hold: 1\n", "p.yaml:6:5",
     "BaseRepo metadata.annotations.fleetflow.dev/hold must be text, not 1 (a number)", None),
])
def test_a_pin_file_of_the_wrong_shape_is_one_problem_at_its_key(tail: str, where: str, message: str,
                                                                 hint: str | None) -> None:
    """A BaseRepo whose spec, metadata or annotations is not a mapping, or whose commit or hold is not text, made
    ``read_pin`` raise AttributeError (a crash in every fleet command) or read ``commit: 0123`` as the number 123.
    Each is now an InputError at the key (found by feeding it changed shapes; the plane's own check of the BaseRepo
    comes later, after the pin is read)."""
    head = "apiVersion: fleetflow.dev/v1alpha1\nkind: BaseRepo\n"
    text = head + (tail if tail.startswith("metadata2") else "metadata:\n  name: main\n" + (
        "  " + tail if tail.startswith("annotations") else tail))
    with pytest.raises(InputError) as refused:
        read_pin(text, "p.yaml")
    [problem] = refused.value.problems()
    assert str(problem.location) == where and problem.message.startswith(message), problem
    assert problem.hint is not None and (hint is None or problem.hint.startswith(hint)), problem.hint
    assert past_pin(text) == Pin(None, None)


def test_an_empty_commit_or_spec_is_no_pin_yet() -> None:
    head = "kind: BaseRepo\nmetadata:\n  name: main\n"
    for tail in ("", "spec:\n", "spec:\n  commit:\n", 'spec:\n  commit: ""\n'):
        assert read_pin(head + tail) == Pin(None, None, present=True)


def test_durations_are_parsed_once_into_timedelta() -> None:
    policy = RolloutPolicy.model_validate({"soakTime": "15m", "timeout": 5400})
    assert policy.soak_time == timedelta(minutes=15) and policy.timeout == timedelta(hours=1, minutes=30)
    assert RolloutPolicy().timeout == timedelta(minutes=30) and RolloutPolicy().soak_time == timedelta(0)
    assert [format_duration(parse_duration(t)) for t in ("90s", "15m", "1h30m", "0", 3600)] == [
        "1m30s", "15m", "1h30m", "0s", "1h"]
    with pytest.raises(ValueError, match="invalid duration 'soon'"):
        RolloutPolicy.model_validate({"soakTime": "soon"})


def _envs(chain: dict[str, list[str]]) -> dict[str, Resource[EnvironmentSpec]]:
    docs = "---\n".join(f"apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: {name}\n"
                        f"spec:\n  after: {after}\n" for name, after in chain.items())
    documents, problems = parsed(docs, "envs.yaml")
    assert not problems
    collected = Problems()
    built = [build_resource(d, "main", collected) for d in documents]
    assert not collected
    return {r.name: r for r in built if r is not None}


def test_chain_order_is_topological_by_steps_and_names() -> None:
    """graphlib.TopologicalSorter: every environment after all of its upstreams; one step's ready ones by name."""
    envs = _envs({"prod": ["qa"], "qa": ["dev"], "dev": [], "dr": ["prod", "qa"], "canary": []})
    assert chain_order(envs) == ["canary", "dev", "qa", "prod", "dr"]


def test_a_cycle_in_the_chain_is_one_clear_problem() -> None:
    envs = _envs({"dev": ["prod"], "qa": ["dev"], "prod": ["qa"], "sandbox": []})
    with pytest.raises(InputError) as raised:
        chain_order(envs)
    [problem] = raised.value.problems()
    assert problem.message == (
        "Environment chain has a cycle: dev -> qa -> prod -> dev (each comes after the one before it)"
    )
    assert problem.location is not None and problem.location.file == "envs.yaml" and problem.location.line == 6
