"""Golden files: the example control plane renders to exactly the committed trees under tests/golden/.

After an intended change to the examples or the renderer, regenerate with:
    UPDATE_GOLDEN=1 python -m pytest tests/test_examples_golden.py
and review the diff of tests/golden/ like any other change.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli, tree_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "control-plane"
GOLDEN = Path(__file__).resolve().parent / "golden"
PIN = ["--main-commit", "0" * 40, "--env-commit", "1" * 40]


@pytest.mark.parametrize("environment", ["dev", "qa", "prod"])
def test_example_renders_to_golden_tree(tmp_path: Path, environment: str) -> None:
    out = tmp_path / environment
    result = run_cli("render", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / environment,
                     "--environment", environment, "--output", out, *PIN)
    assert result.exit_code == 0, result.output
    golden = GOLDEN / environment
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(out, golden)
    expected, actual = tree_bytes(golden), tree_bytes(out)
    assert sorted(actual) == sorted(expected)
    for path in expected:
        assert actual[path] == expected[path], f"{environment}/{path} differs from the golden file"


@pytest.mark.parametrize("environment", ["dev", "qa", "prod"])
def test_example_validates(environment: str) -> None:
    result = run_cli("validate", "--main", EXAMPLE / "main", "--env", EXAMPLE / "envs" / environment)
    assert result.exit_code == 0, result.output
    assert f"ok: {environment}:" in result.output
