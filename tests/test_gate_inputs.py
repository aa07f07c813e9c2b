"""Mistakes in what the rollout gate waits for, caught by ``validate`` before any rollout: a ``timeout`` that
gives the clusters no time, a ``statusContext`` or ``contextPattern`` that no reporter can ever post. Each of these
passed ``validate`` and the gate then failed every rollout at once or waited for it until its timeout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetflow.errors import InputError
from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.gate import evaluate
from fleetflow.render.incremental import ExpectedCluster
from tests.helpers import ENV_FILES, MAIN_FILES, make_plane, run_cli


def _dev_rollout(rollout: str) -> dict[str, str]:
    """main's Environments file (tests/helpers.py) with dev's ``rollout`` as given."""
    environments = MAIN_FILES[".environments/dev.yaml"]
    assert environments.count("spec: {}") == 1
    dev_spec = f"spec:\n          rollout:\n            {rollout}"
    return {".environments/dev.yaml": environments.replace("spec: {}", dev_spec)}


def validate(tmp_path: Path, main: dict[str, str] | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    main_dir, env_dir = make_plane(tmp_path, main, env)
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    return result.exit_code, result.stdout + result.stderr


def test_a_timeout_of_zero_or_less_is_an_error_at_its_line(tmp_path: Path) -> None:
    """``timeout: 0`` (or ``0s``, or a negative number of seconds) failed every rollout at the gate's first check,
    "timed out after 0s" (or "after -1h59m55s"), and ``soakTime: -60`` soaked nothing, both with validate saying
    ok (until 2026-11-29). Now each is an error at its line; ``soakTime: 0`` stays fine (no soak)."""
    start = datetime(2026, 11, 29, tzinfo=UTC)
    waiting = evaluate(RolloutPolicy(), [ExpectedCluster("a", "t", "flux/a")], {}, start, start + timedelta(seconds=1))
    assert waiting.state == "pending"  # the default timeout waits: what a zero timeout took away
    for n, (rollout, message) in enumerate([
        ("timeout: 0", "spec.rollout.timeout: 0 gives the clusters no time"),
        ("timeout: 0s", "spec.rollout.timeout: '0s' gives the clusters no time"),
        ("timeout: -5", "spec.rollout.timeout: -5 gives the clusters no time"),
        ("soakTime: -60", "spec.rollout.soakTime: -60 is negative"),
    ]):
        code, out = validate(tmp_path / str(n), _dev_rollout(rollout))
        assert code == 1, out
        assert f".environments/dev.yaml:7:{15 if 'soak' in rollout else 14}: Environment dev: {message}" in out, out
    code, out = validate(tmp_path / "fine", _dev_rollout("{soakTime: 0, timeout: 45m}"))
    assert code == 0, out


def _without_status_contexts() -> dict[str, str]:
    clusters = ENV_FILES["clusters.yaml"]
    for name in ("cloud-eu-1", "edge-line1-1"):
        assert clusters.count(f"          statusContext: flux/{name}\n") == 1
        clusters = clusters.replace(f"          statusContext: flux/{name}\n", "")
    return {"clusters.yaml": clusters}


def _status_context(context: str) -> dict[str, str]:
    clusters = ENV_FILES["clusters.yaml"]
    assert clusters.count("statusContext: flux/cloud-eu-1\n") == 1
    return {"clusters.yaml": clusters.replace("statusContext: flux/cloud-eu-1\n", f"statusContext: '{context}'\n")}


def test_a_whole_flux_provider_uid_in_a_status_context_is_an_error_with_the_context_flux_posts(
        tmp_path: Path) -> None:
    """Flux's github provider posts ``kind/name/<first segment of the Provider's UID>``, lowercased
    (fluxcd/notification-controller internal/notifier/util.go, ``generateCommitStatusID``: ``strings.Split(
    providerUID, "-")``, then ``kind/name/uidParts[0]``; used by internal/notifier/github.go). A statusContext with
    the UID pasted whole (``kubectl get provider -o jsonpath={.metadata.uid}``) is a context no cluster posts: the
    gate waited for it until every rollout timed out, and validate said ok (until 2026-11-29). Now an error at the
    statusContext, whose hint is the context Flux posts; that context passes."""
    uid = "e3173055-8bd8-4b3b-a3f5-6a0e2b7c1f9d"
    code, out = validate(tmp_path / "whole", env=_status_context(f"Kustomization/flux-system/{uid}"))
    assert code == 1, out
    assert ("env/clusters.yaml:7:18: Environment dev: Cluster cloud-eu-1 has the statusContext "
            f"'Kustomization/flux-system/{uid}': it ends in a whole Provider UID, but Flux posts only its first "
            "segment: the gate would wait for a context no cluster posts and time out (hint: write statusContext: "
            "kustomization/flux-system/e3173055 ") in out, out
    code, out = validate(tmp_path / "segment", env=_status_context("kustomization/flux-system/e3173055"))
    assert code == 0, out


def test_a_placeholder_or_a_star_in_a_status_context_is_an_error_at_it(tmp_path: Path) -> None:
    """A statusContext is the exact context (DESIGN §2): ``flux/{cluster}`` (contextPattern's placeholder),
    ``flux/*`` or an Argo CD notification template's ``{{.app.metadata.name}}`` (which Argo CD fills when it posts,
    argoproj/notifications-engine pkg/services/github.go: ``GetTemplater`` executes ``status.label`` as a template,
    ``Send`` posts the result as the context) were waited for as written,
    until every rollout timed out (until 2026-11-29)."""
    for n, (context, held) in enumerate([("flux/{cluster}", "{cluster}"), ("flux/*", "*"),
                                         ("argocd/{{.app.metadata.name}}", "{{.app.metadata.name}}")]):
        code, out = validate(tmp_path / str(n), env=_status_context(context))
        assert code == 1, out
        assert (f"env/clusters.yaml:7:18: Environment dev: Cluster cloud-eu-1 has the statusContext {context!r}: it "
                f"holds {held}, which the gate takes as written") in out, out


def test_a_context_pattern_no_reporter_can_match_is_one_error_at_its_line(tmp_path: Path) -> None:
    """With Clusters listed, ``contextPattern`` is filled with each one's name and compared exactly; without, it is
    a glob (fnmatch) over the reported contexts (fleetflow/promotion/gate.py ``evaluate``). A regular expression, a
    template's braces, or ``{cluster}`` with no Cluster to fill it passed validate and the gate waited until every
    rollout timed out; ``*`` over Clusters was said to be each Cluster "has no statusContext" with the hint to set the
    contextPattern that was set (until 2026-11-29). Now one error at the pattern's line, with the pattern to write;
    that pattern passes, and the gate refuses the bad one instead of waiting."""
    cases = [
        ("^flux/{cluster}$", "is written as a regular expression, but the gate takes it filled with each cluster's "
                             "name and compared exactly", "write it as the context with {cluster} for the name: "
                                                          "flux/{cluster}"),
        ("flux/{{cluster}}", "holds {{cluster}}, which stays as written", "flux/{cluster}"),
        ("flux/${cluster}", "holds ${cluster}, which stays as written", "flux/{cluster}"),
        ("flux/*", "holds *, which the gate does not fill", "write flux/{cluster}"),
    ]
    for n, (pattern, message, hint) in enumerate(cases):
        code, out = validate(tmp_path / str(n), _dev_rollout(f"contextPattern: '{pattern}'"),
                             _without_status_contexts())
        assert code == 1, out
        assert (f".environments/dev.yaml:7:21: Environment dev: rollout.contextPattern {pattern!r} {message}"
                in out), out
        assert out.count("error:") == 1 and hint in out.split("(hint: ", 1)[1], out
    code, out = validate(tmp_path / "fine", _dev_rollout("contextPattern: 'flux/{cluster}'"),
                         _without_status_contexts())
    assert code == 0, out
    start = datetime(2026, 11, 29, tzinfo=UTC)
    with pytest.raises(InputError, match="is written as a regular expression"):
        evaluate(RolloutPolicy(contextPattern="^flux/{cluster}$"), [ExpectedCluster("a", "t", None)], {}, start,
                 start + timedelta(minutes=1))


def test_a_pattern_with_cluster_but_no_cluster_listed_is_an_error(tmp_path: Path) -> None:
    """Without an inventory ``minClusters`` counts the contexts matching the glob: ``flux/{cluster}`` matches only
    itself, and ``flux/.*`` a context that starts with ``flux/.``; every rollout waited until its timeout (until
    2026-11-29). The hint gives the glob; ``flux/*`` passes."""
    for n, (pattern, hint) in enumerate([("flux/{cluster}", "flux/*"), ("flux/.*", "write it as a glob: flux/*"),
                                         ("^flux/", "write it as a glob: flux/*")]):
        code, out = validate(tmp_path / str(n), _dev_rollout(f"{{minClusters: 2, contextPattern: '{pattern}'}}"),
                             {"clusters.yaml": ""})
        assert code == 1, out
        assert f"Environment dev: rollout.contextPattern {pattern!r} " in out and hint in out, out
    code, out = validate(tmp_path / "glob", _dev_rollout("{minClusters: 2, contextPattern: 'flux/*'}"),
                         {"clusters.yaml": ""})
    assert code == 0, out


def test_a_status_context_under_fleetflows_own_prefix_is_an_error(tmp_path: Path) -> None:
    """docs/reporting-status.md: contexts starting with ``fleetflow/`` are fleetflow's own records, "clusters must
    not use that prefix"; the event router drops a status event under it (fleetflow/promotion/events.py), so such a
    cluster's reports started no gate check. validate said ok (until 2026-11-29)."""
    code, out = validate(tmp_path, env=_status_context("fleetflow/cloud-eu-1"))
    assert code == 1, out
    assert ("env/clusters.yaml:7:18: Environment dev: Cluster cloud-eu-1 has the statusContext "
            "'fleetflow/cloud-eu-1': fleetflow/ starts fleetflow's own records") in out, out
