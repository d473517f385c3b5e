"""The import statements of every module of the checkout, read from the source (nothing runs).

Each import is recorded with where it sits: at module level (runs on import), under
``if TYPE_CHECKING:`` (never runs), or inside a function (runs when that code does). The
layering tests check their rules over all of them, so a lazy import cannot hide a broken rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

CHECKOUT = Path(__file__).resolve().parents[1]
# Import name -> source folder (setup.py's package_dir; the data-only packages hold no code).
SOURCE_FOLDERS = {"osworld_gym": CHECKOUT / "osworld_gym", "osworld_agents": CHECKOUT / "agents"}

Where = Literal["module", "type_checking", "lazy"]


@dataclass(frozen=True)
class Import:
    """One imported name: ``target`` is the module (or ``module.attribute``) it names."""

    importer: str
    target: str
    where: Where
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target} ({self.where})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the two source packages: dotted name -> file."""
    found: dict[str, Path] = {}
    for top, folder in SOURCE_FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def _imports_in(name: str, path: Path) -> Iterator[Import]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, where: Where) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, where, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                yield Import(name, f"{base}.{alias.name}", where, node.lineno)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, "type_checking")
            for child in node.orelse:
                yield from visit(child, where)
        else:
            inner: Where = (
                "lazy"
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                else where
            )
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(), str(path)), "module")


@cache
def all_imports() -> tuple[Import, ...]:
    """The imports of every module of both packages."""
    return tuple(i for name, path in modules().items() for i in _imports_in(name, path))


def module_of(target: str) -> str | None:
    """The checkout's module a target names (``pkg.mod.attr`` -> ``pkg.mod``), if any."""
    while target:
        if target in modules():
            return target
        target = target.rpartition(".")[0]
    return None


def top_level(target: str) -> str:
    """The distribution-level name of a target: ``torch.nn`` -> ``torch``."""
    return target.split(".")[0]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_edges(kinds: tuple[Where, ...], within: str = "") -> dict[str, set[str]]:
    """Module -> the checkout's modules it imports (of the given kinds), under ``within``.

    ``from package import name`` depends on the package's ``__init__`` when ``name`` is
    defined there, and on the submodule when ``name`` is one; a submodule is not counted as
    depending on its package merely because Python runs the ``__init__`` first.
    """
    edges: dict[str, set[str]] = {m: set() for m in modules() if m.startswith(within)}
    for imp in all_imports():
        if imp.where not in kinds or imp.importer not in edges:
            continue
        target = module_of(imp.target)
        if target is None or not target.startswith(within) or target == imp.importer:
            continue
        edges[imp.importer].add(target)
    return edges
