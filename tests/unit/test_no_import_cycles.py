"""No import circles among the modules of console/, widgets/ and engines/ (issue 24 opened the last known ones).

import-linter's contracts here are "forbidden" ones, which a circle never breaks, so this walks the import graph
itself: every import a module runs, at the top or inside a function (a lazy import only hides a circle), but not
those under ``if TYPE_CHECKING:`` (they never run; moving an import there is how a circle of type hints is opened).
Importing ``a.b`` is an edge to ``a.b`` only, not also to the package ``a`` (whose __init__ runs first). It
reads the sources with ``ast`` and imports nothing, so it takes about a second.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "widgets", "engines")

# Circles that existed when this test was written, each to be opened by its owner (issue 24). A circle found here
# must lie inside one of these; a new one fails. When a circle is opened, remove its entry (the "still there" test
# says so). Issue 24 opened the last two (engines.spec and the scenarios; engines.backends and its configs): see
# test_the_circles_this_issue_opened_stay_open.
KNOWN_CYCLES: dict[str, frozenset[str]] = {}


# ---- The graph
def find_modules(root: Path, packages: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, whether it is a package's __init__)."""
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: anywhere in the module but under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        for child in ast.iter_child_nodes(stack.pop()):
            if isinstance(child, ast.If) and _type_checking(child.test):
                stack.extend(child.orelse)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            else:
                stack.append(child)


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module → the modules of `packages` it imports (``from a import b`` names the module ``a.b`` when there is
    one, else ``a``)."""
    found = find_modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, (path, is_package) in found.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in _run_time_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base for alias in node.names]
            for target in targets:
                while target and target not in found:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def _a_path_round(graph: dict[str, set[str]], component: frozenset[str]) -> list[str]:
    """One concrete circle inside `component`, as the chain of imports to quote in a failure."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for successor in sorted(graph[node] & component):
            if successor == start:
                return [*paths[node], start]
            if successor not in paths:
                paths[successor] = [*paths[node], successor]
                queue.append(successor)
    return sorted(component)


# ---- The checks
@functools.cache
def _project() -> tuple[dict[str, set[str]], list[frozenset[str]]]:
    """The graph of console/, widgets/ and engines/ and its circles, read once for the checks below."""
    graph = import_graph()
    return graph, cycles(graph)


def test_no_new_import_cycle():
    graph, found = _project()
    new = [component for component in found
           if not any(component <= known for known in KNOWN_CYCLES.values())]
    assert not new, "new import circle(s):\n" + "\n".join(
        " -> ".join(_a_path_round(graph, component)) for component in new
    ) + "\nopen each: move the shared piece into a module both import, or import what only type hints need " \
        "under `if TYPE_CHECKING:`"


def test_the_known_cycles_are_still_there():
    """An opened circle leaves the list, so it cannot come back unnoticed."""
    _, found = _project()
    opened = [name for name, known in KNOWN_CYCLES.items() if not any(component & known for component in found)]
    assert not opened, f"opened, well done: remove {opened} from KNOWN_CYCLES in {Path(__file__).name}"


def test_the_circles_this_issue_opened_stay_open():
    graph, found = _project()
    assert "widgets.chart_export" not in graph["widgets.theme"]  # style_plot lives in widgets.plot_style
    assert "console.telemetry.base" not in graph["console.telemetry.metadata"]  # METHODS in telemetry.methods
    assert "console.cli" not in graph["console.cli.storage_cmd"]  # --db's type lives in console.cli.arguments
    assert not any(name.startswith(("widgets.", "console.telemetry.")) for component in found for name in component)
    # RunSpec is a type hint in the scenarios; GenerationOptions lives in engines.generation, which catalog imports
    assert not {n for n in graph if n.startswith("engines.scenarios.")} & {n for n in graph if "engines.spec" in graph[n]}
    assert "engines.spec" not in graph["engines.catalog"] and "engines.generation" in graph["engines.catalog"]
    # BackendInfo lives in engines.backends.info: the configs no longer import the package that registers them
    assert not any("engines.backends" in graph[f"engines.backends.{c}_config"] for c in ("torch", "onnxruntime"))
    assert not any(name.startswith("engines.") for component in found for name in component)


def test_a_lazy_import_closes_a_circle_and_a_type_checking_one_does_not(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("from pkg.a import x\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n")
    (package / "e.py").write_text("import pkg.d\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.c"] == {"pkg.a"} and graph["pkg.d"] == set() and graph["pkg.e"] == {"pkg.d"}
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.b"})]
    assert _a_path_round(graph, frozenset({"pkg.a", "pkg.b"})) == ["pkg.a", "pkg.b", "pkg.a"]
