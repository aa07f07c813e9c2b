"""The package's layering, held by a test over the import graph (docs/architecture.md draws it).

Every ``import`` and ``from ... import`` statement of every module is read with :mod:`ast` (imports inside
functions included, ``if TYPE_CHECKING:`` blocks included), so a lazy import cannot sneak past the rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import build_file_tree

PACKAGE = Path(__file__).resolve().parents[1] / "fleetflow"

# what each folder must never import (module prefixes); the pure core must not reach git, GitHub or the network
_EDGES = ("git", "github", "requests", "urllib3", "urllib.request", "http", "socket", "subprocess", "dulwich",
          "pygit2", "tenacity", "rich")
RULES: dict[str, tuple[str, ...]] = {
    "model": ("fleetflow.render", "fleetflow.forge", "fleetflow.promotion", "fleetflow.cli", "fleetflow.demo",
              "fleetflow.settings", "click", *_EDGES),
    "render": ("fleetflow.forge", "fleetflow.promotion", "fleetflow.cli", "fleetflow.demo", "fleetflow.settings",
               "click", *_EDGES),
    "forge": ("fleetflow.render", "fleetflow.promotion", "fleetflow.cli", "fleetflow.demo", "click", "rich"),
    "promotion": ("fleetflow.cli", "fleetflow.demo", "click", "github", "rich"),
    "demo": ("fleetflow.cli", "click", "github", "rich"),
    "delivery": ("fleetflow.model", "fleetflow.render", "fleetflow.forge", "fleetflow.promotion", "fleetflow.cli",
                 "fleetflow.demo", "fleetflow.settings", "fleetflow.report", "click", "jinja2", *_EDGES),
    "report": ("fleetflow.model", "fleetflow.render", "fleetflow.forge", "fleetflow.promotion", "fleetflow.cli",
               "fleetflow.demo", "fleetflow.settings", "click", *_EDGES),
}

# single modules held to more than their folder's rule: pure readers (text in, facts out), no git, no forge, no
# other fleetflow layer but the standalone helpers beside errors.py
PURE_MODULES: dict[str, tuple[str, ...]] = {
    "promotion/caller_workflows.py": ("fleetflow.model", "fleetflow.render", "fleetflow.forge", "fleetflow.promotion",
                                      "fleetflow.cli", "fleetflow.demo", "fleetflow.settings", "click", "github",
                                      "rich", *_EDGES),
}


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """Every module a source file imports, as (line, dotted name); relative imports resolved against ``module``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join([*parts, base]) if base else ".".join(parts)
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names if base == "fleetflow")
    return found


def violations(package: Path, rules: dict[str, tuple[str, ...]]) -> list[str]:
    """``file:line: imports X`` for every import a folder's (or a single module's) rule forbids."""
    out: list[str] = []
    for folder, forbidden in rules.items():
        top = package / folder
        for path in [top] if top.suffix == ".py" else sorted(top.rglob("*.py")):
            rel = path.relative_to(package.parent)
            module = ".".join(rel.with_suffix("").parts)
            for line, name in imported_modules(path.read_text(encoding="utf-8"), module):
                if any(name == f or name.startswith(f + ".") for f in forbidden):
                    what = folder if top.suffix == ".py" else f"{folder}/"
                    out.append(f"{rel}:{line}: {what} must not import {name}")
    return out


def test_every_folder_keeps_to_its_imports() -> None:
    assert violations(PACKAGE, RULES) == []


def test_the_pure_modules_keep_to_their_imports() -> None:
    """promotion/caller_workflows.py reads workflow files' text for doctor and init, which fetch them."""
    assert all((PACKAGE / module).is_file() for module in PURE_MODULES)
    assert violations(PACKAGE, PURE_MODULES) == []


def test_a_pure_module_that_reaches_the_forge_is_caught(tmp_path: Path) -> None:
    source = "from fleetflow.forge.git import GitRepos\nimport yaml\nfrom fleetflow.linear_regex import RegexError\n"
    build_file_tree(tmp_path / "fleetflow", {"promotion/caller_workflows.py": source})
    found = violations(tmp_path / "fleetflow", PURE_MODULES)
    assert found == ["fleetflow/promotion/caller_workflows.py:1: promotion/caller_workflows.py must not import "
                     "fleetflow.forge.git"]


def test_every_folder_exists_and_says_what_it_may_import() -> None:
    for folder in (*RULES, "cli"):
        init = PACKAGE / folder / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"{init} needs a docstring that says what the folder may import"


@pytest.mark.parametrize(
    ("folder", "line"),
    [
        ("model", "from fleetflow.forge.git import GitRepos"),
        ("render", "import git"),
        ("render", "from fleetflow import promotion"),
        ("model", "from ..cli import common"),
        ("render", "def f():\n    import subprocess\n"),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path: Path, folder: str, line: str) -> None:
    """The check itself can fail: a copy of the package with one forbidden import added is reported."""
    build_file_tree(tmp_path / "fleetflow", {f"{folder}/__init__.py": '"""may import nothing"""\n',
                                             f"{folder}/bad.py": line + "\n"})
    found = violations(tmp_path / "fleetflow", {folder: RULES[folder]})
    assert len(found) == 1 and found[0].startswith(f"fleetflow/{folder}/bad.py:")


def test_the_progress_interface_needs_no_terminal() -> None:
    """The core reports progress through fleetflow/progress.py; only the cli draws it (rich, click)."""
    source = (PACKAGE / "progress.py").read_text(encoding="utf-8")
    names = [name for _, name in imported_modules(source, "fleetflow.progress")]
    assert not [n for n in names if n.split(".")[0] in ("rich", "click") or n.startswith("fleetflow.")], names
