"""The one way problems travel (the rule in ``fleetflow/errors.py``'s docstring), held by a test over the source.

Every module of the package is read with :mod:`ast`; the test fails on the shapes the rule replaced:

* a ``(result, problems)`` tuple: a return annotation, a parameter's ``Callable[..., ...]`` or a type alias with
  ``Problem``/``Problems`` inside a ``tuple[...]``;
* a function that gives back a union of a result and problems (``X | list[Problem]``), which callers then tell
  apart with ``isinstance``;
* a ``list[Problem]`` parameter that a function fills in (an out-parameter): checking code takes a ``Problems``
  collector instead;
* ``except Exception`` (or ``BaseException``, or a bare ``except:``) anywhere but the places where a user's own
  code runs, each named in the rule: a template's expressions, a JSON schema, YAML inside a config value.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import build_file_tree

PACKAGE = Path(__file__).resolve().parents[1] / "fleetflow"

# (file, enclosing function): where user code runs, so any error it raises becomes a problem (errors.py, rule 4)
BROAD_EXCEPT_ALLOWED = {
    ("fleetflow/render/templates.py", "_text"),  # a template's expressions (one manifest of CompiledTemplate's)
    ("fleetflow/render/validation.py", "_violations"),  # a user's JSON schema (an unresolvable $ref...)
    ("fleetflow/render/composition.py", "_parse_value"),  # YAML inside a config value
}
# No exception left: the state file's reader takes a collector for its warning too.
SHAPE_ALLOWED: set[tuple[str, str]] = set()

_PROBLEM_NAMES = {"Problem", "Problems"}


def _mentions_problem(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in _PROBLEM_NAMES)
        or (isinstance(n, ast.Attribute) and n.attr in _PROBLEM_NAMES)
        for n in ast.walk(node)
    )


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _union_arms(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_arms(node.left), *_union_arms(node.right)]
    if isinstance(node, ast.Subscript) and _name(node.value) in ("Union", "Optional"):
        inner = node.slice
        return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    return [node]


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _bad_shape(annotation: ast.AST | None, unions: bool = True) -> str | None:
    """What is wrong with a type expression (a quoted one included), or None. ``unions``: whether a union of a
    result and problems counts (it does for what a function gives back, not for what it accepts: an error class
    takes a message, one problem or many)."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and _name(node.value) in ("tuple", "Tuple") and _mentions_problem(node):
            return "a tuple holding problems"
        arms = _union_arms(node) if unions else []
        if len(arms) > 1:
            with_problems = [a for a in arms if _mentions_problem(a)]
            others = [a for a in arms if not _mentions_problem(a) and not _is_none(a)]
            if with_problems and others:
                return "a union of a result and problems"
    return None


def _is_problem_list(annotation: ast.AST | None) -> bool:
    return (
        isinstance(annotation, ast.Subscript)
        and _name(annotation.value) in ("list", "List", "MutableSequence")
        and _mentions_problem(annotation.slice)
    )


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def rule_violations(package: Path) -> list[str]:
    """``file:line: what`` for every place that reports problems another way than the rule's."""
    out: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in _functions(tree):
            if (rel, func.name) in SHAPE_ALLOWED:
                continue
            shape = _bad_shape(func.returns)
            if shape:
                out.append(f"{rel}:{func.lineno}: {func.name} returns {shape}")
            args = func.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if _is_problem_list(arg.annotation):
                    out.append(f"{rel}:{func.lineno}: {func.name} takes list[Problem] {arg.arg} to fill in "
                               "(take a Problems collector)")
                elif shape := _bad_shape(arg.annotation, unions=False):
                    out.append(f"{rel}:{func.lineno}: {func.name} takes {arg.arg} as {shape}")
            if (rel, func.name) in BROAD_EXCEPT_ALLOWED:
                continue
            for node in ast.walk(func):
                # a handler of a nested function is checked as that function's
                if isinstance(node, ast.ExceptHandler) and _broad(node) and _owner(func, node):
                    out.append(f"{rel}:{node.lineno}: {func.name} catches {_caught(node)}")
        for node in ast.walk(tree):
            target = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(node, ast.AnnAssign) and _bad_shape(node.annotation) and not _in_function(tree, node):
                out.append(f"{rel}:{node.lineno}: a variable typed as {_bad_shape(node.annotation)}")
            elif isinstance(node, ast.Assign) and target is not None and not _in_function(tree, node):
                if shape := _bad_shape(target):
                    out.append(f"{rel}:{node.lineno}: a type alias of {shape}")
            elif isinstance(node, ast.ExceptHandler) and _broad(node) and not _in_function(tree, node):
                out.append(f"{rel}:{node.lineno}: module code catches {_caught(node)}")
    return out


def _broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_name(c) in ("Exception", "BaseException") for c in caught)


def _caught(handler: ast.ExceptHandler) -> str:
    return "everything (bare except)" if handler.type is None else ast.unparse(handler.type)


def _owner(func: ast.AST, handler: ast.ExceptHandler) -> bool:
    """Whether ``handler`` belongs to ``func`` itself, not to a function nested in it (checked on its own)."""
    for child in ast.iter_child_nodes(func):
        if child is handler:
            return True
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if _owner(child, handler):
            return True
    return False


def _in_function(tree: ast.AST, target: ast.AST) -> bool:
    return any(
        isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and any(n is target for n in ast.walk(f))
        for f in ast.walk(tree)
    )


def test_problems_travel_one_way_in_the_whole_package() -> None:
    assert rule_violations(PACKAGE) == []


def test_the_allowed_places_still_exist() -> None:
    """An allowance for a place that is gone (renamed, or fixed) is removed with it, so it cannot cover a new one."""
    for rel, name in BROAD_EXCEPT_ALLOWED | SHAPE_ALLOWED:
        tree = ast.parse((PACKAGE.parent / rel).read_text(encoding="utf-8"))
        assert name in {f.name for f in _functions(tree)}, (rel, name)


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("def load(p) -> tuple[int, Problems]:\n    ...\n", "returns a tuple holding problems"),
        ("def parse(t) -> tuple[list[str], list[Problem]]:\n    ...\n", "returns a tuple holding problems"),
        ("def need(p) -> tuple[int, int] | list[Problem]:\n    ...\n", "returns a union of a result and problems"),
        ("def need(p) -> 'int | list[Problem]':\n    ...\n", "returns a union of a result and problems"),
        ("def need(p) -> Union[int, list[Problem]]:\n    ...\n", "returns a union of a result and problems"),
        ("def check(x, failures: list[Problem]) -> None:\n    ...\n", "takes list[Problem] failures"),
        ("Fetch = Callable[[str], tuple[list[str], list[Problem]]]\n", "a type alias of a tuple holding problems"),
        ("def f(fetch: Callable[[str], tuple[str, Problems]]) -> None:\n    ...\n", "takes fetch as a tuple"),
        ("def f():\n    try:\n        g()\n    except Exception:\n        pass\n", "f catches Exception"),
        ("def f():\n    try:\n        g()\n    except (OSError, BaseException):\n        pass\n",
         "f catches (OSError, BaseException)"),
        ("def f():\n    try:\n        g()\n    except:\n        pass\n", "f catches everything"),
        ("try:\n    import x\nexcept Exception:\n    x = None\n", "module code catches Exception"),
        ("class C:\n    def m(self) -> tuple[str, list[Problem]]:\n        ...\n", "m returns a tuple"),
    ],
)
def test_a_planted_violation_is_caught(tmp_path: Path, source: str, what: str) -> None:
    """The check itself can fail: a copy of the package with one shape the rule forbids is reported, once."""
    build_file_tree(tmp_path / "fleetflow", {"model/bad.py": source})
    found = rule_violations(tmp_path / "fleetflow")
    assert len(found) == 1 and found[0].startswith("fleetflow/model/bad.py:") and what in found[0], found


@pytest.mark.parametrize(
    "source",
    [
        "def check(x, problems: Problems) -> int:\n    ...\n",
        "def warnings(x) -> list[Problem]:\n    ...\n",  # problems as the whole result (warnings, a checker's)
        "def read(x) -> Problem | None:\n    ...\n",
        "def f():\n    try:\n        g()\n    except (OSError, ValueError):\n        pass\n",
    ],
)
def test_the_one_way_passes(tmp_path: Path, source: str) -> None:
    build_file_tree(tmp_path / "fleetflow", {"model/good.py": source})
    assert rule_violations(tmp_path / "fleetflow") == []
