"""The package's shape, as docs/architecture.md draws it: no import cycles, few top-level
modules, no reaching into another module's private names, each layer importing only what
is below it. Read from the source with `ast`, so nothing is imported to check it."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sheetgen"

#: Imports inside a function that are allowed to close a cycle, each with why (a module-level
#: import either way would be a cycle, or the import is deferred for start-up time).
DOCUMENTED_LAZY: dict[tuple[str, str], str] = {
    ("sheetgen.console", "sheetgen.cli"): "imported inside the Ctrl-C guard",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, *, top_level_only: bool, type_checking: bool = False
            ) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for each sheetgen import in `path`;
    `top_level_only`: those that run when the module is imported (not inside a function);
    `type_checking`: include those under `if TYPE_CHECKING:` (run by type checkers only)."""
    tree = ast.parse(path.read_text("utf-8"))
    known = modules()
    is_package = path.name == "__init__.py"

    def walk(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) \
                    and not type_checking:
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and top_level_only:
                continue
            yield node
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    yield from walk([c for c in children
                                     if isinstance(c, ast.stmt | ast.ExceptHandler)])

    for node in walk(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("sheetgen"):
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node)
            if not target.startswith("sheetgen"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from sheetgen.sheets import matmul`: the module
                    yield sub, None, node.lineno
                else:
                    yield target, alias.name, node.lineno


def graph(top_level_only: bool = True, type_checking: bool = False) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    known = modules()
    for name, path in known.items():
        deps = out.setdefault(name, set())
        for target, _, _ in imports(name, path, top_level_only=top_level_only,
                                    type_checking=type_checking):
            if target in known and target != name and (name, target) not in DOCUMENTED_LAZY:
                deps.add(target)
    return out


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _strip_parents(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop edges to a package's own __init__ from inside it (Python imports a package
    before its modules, so `sheetgen.x.y` importing `sheetgen.x` is no cycle)."""
    return {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in g.items()}


def test_the_reader_sees_the_package():
    """Control: the graph is the real one (known edges present), so an empty cycle list
    means something."""
    g = graph()
    assert len(g) > 100
    assert "sheetgen.layout.planner" in g["sheetgen.assemble"]
    assert "sheetgen.evaluate.registry" in g["sheetgen.evaluate.evaluator"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_at_module_level():
    assert _cycles(_strip_parents(graph(top_level_only=True))) == []


def test_no_import_cycle_through_lazy_imports_except_documented_ones():
    """Imports inside functions count too: a cycle hidden in a function is still a cycle,
    unless DOCUMENTED_LAZY says why it must be one; so do imports for type checkers only
    (the planner, its rules and text fitting share layout/cells.py, not each other)."""
    assert _cycles(_strip_parents(graph(top_level_only=False, type_checking=True))) == []


def test_at_most_ten_top_level_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for name, path in modules().items():
        for target, imported, line in imports(name, path, top_level_only=False,
                                              type_checking=True):
            if imported and imported.startswith("_") and not imported.startswith("__") \
                    and target != name:
                offenders.append(f"{name}:{line} imports {target}.{imported}")
    assert offenders == []


def test_every_subpackage_says_in_one_line_what_lives_there():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert doc, f"{init.relative_to(PACKAGE.parent)} has no docstring"
        assert doc.splitlines()[0].strip(), init


def _third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("layer", ["core"])
def test_core_imports_nothing_else_of_sheetgen(layer):
    g = graph(top_level_only=False)
    for name, deps in g.items():
        if name.startswith(f"sheetgen.{layer}"):
            outside = {d for d in deps if not d.startswith(f"sheetgen.{layer}")
                       and d != "sheetgen"}
            assert not outside, (name, outside)


def test_layout_imports_no_writer_and_no_workbook_library():
    g = graph(top_level_only=False)
    for name, path in modules().items():
        if not name.startswith("sheetgen.layout"):
            continue
        assert not {d for d in g[name] if d.startswith("sheetgen.writers")}, name
        libs = _third_party(path) & {"xlsxwriter", "openpyxl", "gspread"}
        assert not libs, (name, libs)


def test_the_model_takes_nothing_from_the_evaluator_or_the_styles():
    """The reference model is Python arithmetic over the vocabulary: Excel's number rules
    come from core, regime labels from the model, never from evaluate/ or layout/styles."""
    g = graph(top_level_only=False)
    for name, deps in g.items():
        if name.startswith("sheetgen.model"):
            bad = {d for d in deps if d.startswith(("sheetgen.evaluate", "sheetgen.layout",
                                                    "sheetgen.writers"))}
            assert not bad, (name, bad)


def test_inputs_import_no_sheet_and_the_google_writer_no_checker():
    g = graph(top_level_only=False)
    for name, deps in g.items():
        if name.startswith("sheetgen.inputs"):
            assert not {d for d in deps if d.startswith("sheetgen.sheets")}, name
        if name.startswith("sheetgen.writers.google"):
            assert "sheetgen.verify.check" not in deps, name
