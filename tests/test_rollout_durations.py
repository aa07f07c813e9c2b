"""A rollout's ``timeout`` and ``soakTime`` written as a bare whole number: valid (a whole number is seconds), but
short ones warn at their line, as the other validate warnings do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import make_plane, run_cli

ENVIRONMENTS = """apiVersion: fleetflow.dev/v1alpha1
kind: Environment
metadata:
  name: dev
spec:
{dev}---
apiVersion: fleetflow.dev/v1alpha1
kind: Environment
metadata:
  name: qa
spec:
  after: [dev]
{qa}"""


def _validate(tmp_path: Path, dev: str, qa: str = "", *options: str) -> tuple[int, str, Path]:
    main_dir, env_dir = make_plane(tmp_path, {".environments/dev.yaml": ENVIRONMENTS.format(dev=dev, qa=qa)})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev", *options)
    return result.exit_code, result.stderr, main_dir


def test_a_short_duration_without_a_unit_warns_at_its_line(tmp_path: Path) -> None:
    """``timeout: 30`` is 30 seconds, but Flux's durations, which the engineers writing these know, take no bare
    number: ``KustomizationSpec.Timeout`` is a metav1.Duration whose pattern needs a unit,
    ``^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$`` (fluxcd/kustomize-controller api/v1/kustomization_types.go), so one who
    writes 30 often means 30m; a gate that times out after 30 s fails every real rollout. Until 2026-11-29 validate
    said ok; now a warning at the value, with the two ways to say it (exit 0; 1 with --strict, as every warning)."""
    dev = "  rollout:\n    timeout: 30\n    soakTime: \"10\"\n"
    code, stderr, main_dir = _validate(tmp_path, dev)
    assert code == 0, stderr
    where = f"{main_dir}/.environments/dev.yaml"
    assert (f"warning: {where}:7:14: Environment dev: spec.rollout.timeout 30 has no unit and is read as 30 seconds "
            "(hint: write 30s to keep 30 seconds, or 30m; a number without a unit is seconds here, where Flux's and "
            "Kubernetes' durations always take one)\n") in stderr, stderr
    assert (f"warning: {where}:8:15: Environment dev: spec.rollout.soakTime '10' has no unit and is read as 10 "
            "seconds (hint: write 10s to keep 10 seconds, or 10m;") in stderr, stderr
    assert stderr.count("warning: ") == 2, stderr

    code, stderr, _ = _validate(tmp_path / "strict", dev, "", "--strict")
    assert code == 1, stderr


@pytest.mark.parametrize("dev", [
    "  rollout:\n    timeout: 30s\n    soakTime: 10s\n",  # a unit: what was meant is written
    "  rollout:\n    timeout: 15m\n    soakTime: 1h30m\n",
    "  rollout:\n    timeout: 300\n    soakTime: 0\n",  # five minutes or more, or no soak at all: plausible seconds
    "  rollout: {}\n",
], ids=["seconds", "minutes", "long-or-zero", "defaults"])
def test_a_duration_with_a_unit_or_a_long_one_does_not_warn(tmp_path: Path, dev: str) -> None:
    code, stderr, _ = _validate(tmp_path, dev)
    assert code == 0, stderr
    assert "warning: " not in stderr, stderr


def test_only_the_environment_validated_is_warned_of(tmp_path: Path) -> None:
    """Each environment's rollout is checked when it is validated (``validate --into main`` checks every one), so a
    warning is said once, not once per environment validated."""
    code, stderr, _ = _validate(tmp_path, "", "  rollout:\n    timeout: 45\n")
    assert code == 0, stderr
    assert "warning: " not in stderr, stderr
