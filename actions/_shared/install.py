"""Install fleetflow for the composite actions: a venv next to this file, hash-pinned dependencies, fleetflow from
the action's own checkout. Standard library only; run by ``run.py`` (or directly: ``python3 install.py``).

- Dependencies come from ``actions/requirements.txt`` (``pip-compile --generate-hashes``) and are installed with
  ``pip install --require-hashes --no-deps``: a file whose hash is not in the list is refused.
- fleetflow itself is built from this checkout (``$GITHUB_ACTION_PATH/../..``), copied to a temporary directory
  first so the checkout is never written to, with ``--no-deps --no-build-isolation --no-index``: the build
  backend (setuptools) is one of the hash-pinned requirements, nothing else is downloaded.
- Cached: ``.venv/.fleetflow-install.json`` records the sha256 of the requirements file, the Python that built
  the venv, the venv's path, and the sha256 of fleetflow's sources. Same requirements, Python and path: the
  dependencies are kept; same sources too: nothing is installed at all (fleetflow alone is reinstalled when only
  its sources changed). So every fleetflow action after the first in a job (and every test run on one machine)
  starts in well under a second. Delete ``actions/_shared/.venv`` to force a clean install.
- Between jobs: ``python3 install.py --cache-key`` writes the step outputs ``path`` (the venv), ``key`` (OS, CPU,
  Python version, sha256 of the requirements) and ``ready`` (already current) for the ``actions/cache`` step of
  each composite action, which restores the venv before ``run.py`` installs (and saves it after a job that built
  it). A restored venv goes through the same marker check.
- Concurrent jobs sharing one checkout (self-hosted runners, ``act``) take a file lock; one installs, the others
  wait and reuse.

Environment: ``FLEETFLOW_PYTHON`` (the interpreter for the venv, default: the one running this script; needs
3.11 or newer), ``FLEETFLOW_ACTION_VENV`` (put the venv elsewhere: when the action directory is read-only, or under
``act``, which copies the action checkout for every job, so a fixed path lets all runs share one install).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

SHARED = Path(__file__).resolve().parent
ROOT = SHARED.parent.parent  # the fleetflow checkout: actions/_shared/ -> actions/ -> root
REQUIREMENTS = ROOT / "actions" / "requirements.txt"
MARKER_NAME = ".fleetflow-install.json"
MIN_PYTHON = (3, 11)
SOURCE_FILES = ("pyproject.toml", "README.md")
SOURCE_DIRS = ("fleetflow",)
IGNORED = ("__pycache__", "*.pyc", "*.pyo", "*.egg-info", ".mypy_cache", ".pytest_cache")


class InstallError(Exception):
    """A failure with a message meant for the workflow log (an ``::error::`` annotation)."""


def venv_dir() -> Path:
    override = os.environ.get("FLEETFLOW_ACTION_VENV")
    return Path(override).expanduser().resolve() if override else SHARED / ".venv"


def bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def fleetflow_executable(venv: Path | None = None) -> Path:
    venv = venv or venv_dir()
    return bin_dir(venv) / ("fleetflow.exe" if os.name == "nt" else "fleetflow")


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in IGNORED)


def source_files() -> list[Path]:
    """fleetflow's sources as the build sees them, in a stable order (relative to ROOT)."""
    files = [Path(name) for name in SOURCE_FILES if (ROOT / name).is_file()]
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(ROOT / top):
            dirnames[:] = sorted(d for d in dirnames if not _ignored(d))
            for name in sorted(filenames):
                if not _ignored(name):
                    files.append((Path(dirpath) / name).relative_to(ROOT))
    return files


def source_hash() -> str:
    digest = hashlib.sha256()
    for rel in source_files():
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update((ROOT / rel).read_bytes() + b"\0")
    return digest.hexdigest()


def _python() -> str:
    return os.environ.get("FLEETFLOW_PYTHON") or sys.executable


def _python_identity(python: str) -> dict[str, object]:
    probe = "import json, os, sys; print(json.dumps([list(sys.version_info[:3]), os.path.realpath(sys.executable)]))"
    try:
        out = subprocess.run([python, "-c", probe], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise InstallError(f"cannot run the Python interpreter {python!r}: {exc}") from None
    version, real = json.loads(out)
    if tuple(version) < MIN_PYTHON:
        raise InstallError(
            f"fleetflow needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; {python} is "
            f"{'.'.join(map(str, version))} (add actions/setup-python before this step, or set FLEETFLOW_PYTHON)"
        )
    return {"version": ".".join(map(str, version)), "executable": real}


def _read_marker(venv: Path) -> dict[str, object]:
    try:
        data = json.loads((venv / MARKER_NAME).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _pip(venv: Path, *args: str) -> None:
    python = bin_dir(venv) / ("python.exe" if os.name == "nt" else "python")
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    cmd = [str(python), "-m", "pip", "install", "--quiet", *args]
    result = subprocess.run(cmd, env=env)
    if result.returncode != 0:
        raise InstallError(f"pip install failed (exit {result.returncode}): {' '.join(args)}")


def _install_fleetflow(venv: Path) -> None:
    """Build from a copy of the sources: the checkout stays untouched (no build/ or *.egg-info in it)."""
    with tempfile.TemporaryDirectory(prefix="fleetflow-build-") as tmp:
        build = Path(tmp) / "src"
        build.mkdir()
        for name in SOURCE_FILES:
            if (ROOT / name).is_file():
                shutil.copy2(ROOT / name, build / name)
        for top in SOURCE_DIRS:
            shutil.copytree(ROOT / top, build / top, ignore=shutil.ignore_patterns(*IGNORED))
        _pip(venv, "--no-deps", "--no-build-isolation", "--no-index", "--force-reinstall", str(build))


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on the directory that holds the venv (no lock file is left behind). fcntl where available;
    jobs on Windows do not share a checkout."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _wanted(venv: Path) -> tuple[dict[str, object], str]:
    """What the marker of an up-to-date venv says: its dependencies (the requirements' hash, the Python, the venv's
    own path: a venv cannot move, its scripts name their interpreter by absolute path, and act copies action
    checkouts around, venv included), and the hash of fleetflow's sources."""
    if not REQUIREMENTS.is_file():
        raise InstallError(f"{REQUIREMENTS} is missing: the action checkout is incomplete")
    identity = _python_identity(_python())
    return {"requirements": _sha256_file(REQUIREMENTS), "python": identity, "venv": str(venv)}, source_hash()


def _state(venv: Path, wanted_deps: dict[str, object], wanted_source: str) -> tuple[bool, bool]:
    """(the dependencies are the wanted ones, fleetflow's sources too)."""
    marker = _read_marker(venv)
    identity = wanted_deps["python"]
    deps_ok = (
        {k: marker.get(k) for k in wanted_deps} == wanted_deps
        and fleetflow_executable(venv).exists()
        and isinstance(identity, dict) and Path(str(identity["executable"])).exists()
    )
    return deps_ok, deps_ok and marker.get("source") == wanted_source


def cache_key() -> dict[str, str]:
    """For the ``actions/cache`` step of each composite action: where the venv lives (``path``), the key it is kept
    under between jobs (``key``: the runner's OS and CPU, the Python version that builds it, the sha256 of
    ``requirements.txt``), and whether it is already current here (``ready``: a second fleetflow action in one job
    skips the restore). fleetflow's own sources are not in the key: a restored venv with an older fleetflow gets
    fleetflow alone reinstalled (its marker says so)."""
    venv = venv_dir()
    wanted_deps, wanted_source = _wanted(venv)
    identity = wanted_deps["python"]
    version = identity["version"] if isinstance(identity, dict) else "unknown"
    parts = [platform.system().lower(), platform.machine().lower(), f"py{version}",
             str(wanted_deps["requirements"])[:24]]
    ready = _state(venv, wanted_deps, wanted_source)[1]
    return {"path": str(venv), "key": "fleetflow-venv-" + "-".join(parts), "ready": "true" if ready else "false"}


def write_cache_key(environ: Mapping[str, str]) -> int:
    """``install.py --cache-key``: the step outputs of :func:`cache_key` in ``$GITHUB_OUTPUT`` (GitHub's multiline
    form, a random delimiter). When they cannot be computed the outputs stay empty: the cache step is skipped and
    the install step reports the problem."""
    try:
        outputs = cache_key()
    except InstallError as exc:
        print(f"fleetflow's environment is not cached: {exc}", flush=True)
        return 0
    for name, value in outputs.items():
        print(f"{name}={value}", flush=True)
    target = environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            for name, value in outputs.items():
                delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
                handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return 0


def install(log: Callable[[str], None] = print) -> Path:
    """Make sure the venv holds exactly the pinned dependencies and this checkout's fleetflow; return the venv."""
    venv = venv_dir()
    python = _python()
    wanted_deps, wanted_source = _wanted(venv)
    with _locked(venv.parent):
        deps_ok, source_ok = _state(venv, wanted_deps, wanted_source)
        if source_ok:
            log(f"fleetflow is already installed in {venv} (requirements and sources unchanged)")
            return venv
        if not deps_ok:
            log(f"creating {venv} with {python} and installing the hash-pinned requirements")
            if venv.exists():
                shutil.rmtree(venv)
            result = subprocess.run([python, "-m", "venv", str(venv)])
            if result.returncode != 0:
                raise InstallError(f"could not create the virtual environment {venv}")
            _pip(venv, "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", str(REQUIREMENTS))
        else:
            log("requirements unchanged; reinstalling fleetflow only (its sources changed)")
        (venv / MARKER_NAME).unlink(missing_ok=True)  # an interrupted install must not look complete
        _install_fleetflow(venv)
        (venv / MARKER_NAME).write_text(
            json.dumps({**wanted_deps, "source": wanted_source}, indent=2) + "\n", encoding="utf-8"
        )
        log(f"fleetflow installed in {venv}")
    return venv


def main(argv: list[str]) -> int:
    if argv == ["--cache-key"]:
        return write_cache_key(os.environ)
    try:
        install()
    except InstallError as exc:
        print(f"::error title=fleetflow install::{exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
