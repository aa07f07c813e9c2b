"""The composite actions' install cache key (``actions/_shared/install.py --cache-key``): the ``path`` and ``key`` the
``actions/cache`` step of each action keeps fleetflow's venv under between jobs, and ``ready`` (already current:
the restore is skipped).

actions/cache (action.yml of actions/cache v5.0.5, README "Inputs"): ``path`` is "A list of files, directories, and
wildcard patterns to cache and restore", ``key`` "An explicit key for restoring and saving the cache"; the cache is
saved in the post step only when the key missed. The outputs are written in GitHub's multiline form
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands, "Multiline strings").
The real action under act with its cache server is measured in ``benchmarks/bench_action_install.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_workflow_files import ROOT, read_outputs, run

install = run.install


@pytest.fixture
def requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of actions/requirements.txt that the test may change, and a venv folder of its own."""
    copy = tmp_path / "requirements.txt"
    copy.write_bytes((ROOT / "actions" / "requirements.txt").read_bytes())
    monkeypatch.setattr(install, "REQUIREMENTS", copy)
    monkeypatch.setenv("FLEETFLOW_ACTION_VENV", str(tmp_path / "venv"))
    return copy


def test_the_key_is_the_runner_the_python_and_the_requirements_hash(requirements: Path) -> None:
    first = install.cache_key()
    assert first["path"] == str(requirements.parent / "venv")
    assert re.fullmatch(r"fleetflow-venv-[a-z0-9_]+-[a-z0-9_]+-py3\.\d+\.\d+-[0-9a-f]{24}", first["key"]), first
    assert first["ready"] == "false"  # no venv yet: the cache step restores one
    assert install.cache_key() == first  # stable
    requirements.write_text(requirements.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    changed = install.cache_key()
    assert changed["key"] != first["key"] and changed["path"] == first["path"]


def test_a_current_venv_is_ready_and_skips_the_restore(requirements: Path) -> None:
    """A venv whose marker says these requirements, this Python, this path and these sources is current; one
    whose fleetflow sources are older is not (fleetflow alone gets reinstalled after the restore)."""
    venv = Path(install.cache_key()["path"])
    executable = install.fleetflow_executable(venv)
    executable.parent.mkdir(parents=True)
    executable.write_text("", encoding="utf-8")
    deps, source = install._wanted(venv)
    (venv / install.MARKER_NAME).write_text(json.dumps({**deps, "source": source}), encoding="utf-8")
    assert install.cache_key()["ready"] == "true"
    (venv / install.MARKER_NAME).write_text(json.dumps({**deps, "source": "older"}), encoding="utf-8")
    assert install.cache_key()["ready"] == "false"


def test_the_outputs_go_to_github_output(requirements: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "output"
    assert install.write_cache_key({"GITHUB_OUTPUT": str(out)}) == 0
    assert read_outputs(out) == install.cache_key()
    assert f"key={install.cache_key()['key']}" in capsys.readouterr().out


def test_no_key_when_the_install_cannot_work(requirements: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A missing requirements file: no outputs (the action skips its cache step), exit 0 (the install step says
    what is wrong, as an ``::error``)."""
    requirements.unlink()
    out = tmp_path / "output"
    assert install.write_cache_key({"GITHUB_OUTPUT": str(out)}) == 0
    assert not out.exists()
    assert "is not cached" in capsys.readouterr().out


def test_every_action_restores_the_venv_before_it_runs() -> None:
    """Each action: the key step, then actions/cache (skipped without a key or with a current venv) with the key
    step's path and key, then the run step; one pinned sha for all."""
    shas = set()
    for action in sorted((ROOT / "actions").glob("*/action.yml")):
        text = action.read_text(encoding="utf-8")
        key, cache, step = (text.index('install.py" --cache-key'), text.index("uses: actions/cache@"),
                            text.index('_shared/run.py"'))
        assert key < cache < step, action
        assert "if: steps.venv.outputs.key != '' && steps.venv.outputs.ready != 'true'" in text, action
        assert "path: ${{ steps.venv.outputs.path }}" in text and "key: ${{ steps.venv.outputs.key }}" in text
        shas.add(text[cache:].split("@", 1)[1][:40])
    assert len(shas) == 1
