"""Mistakes in what the rollout gate waits for, caught by ``validate`` before any rollout: a ``timeout`` that
gives the clusters no time, a ``statusContext`` or ``contextPattern`` that no reporter can ever post. Each of these
passed ``validate`` and the gate then failed every rollout at once or waited for it until its timeout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.gate import evaluate
from fleetflow.render.incremental import ExpectedCluster
from tests.helpers import MAIN_FILES, make_plane, run_cli


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
