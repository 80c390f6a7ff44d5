"""The layout of ``kgroup.spark``: no import circle (function-level imports included), and the three
products — ``source``, ``partitioning``, ``demo`` — depend on each other only as
``docs/spark.md`` (Layout) says. Reads the source files (``ast``); imports nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import kgroup.spark

SPARK = Path(kgroup.spark.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(SPARK.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Every kgroup.spark module -> the kgroup.spark modules it imports, wherever the import is
    (module level, in a function, or by name through ``import_module``)."""
    files = {_module_name(p): p for p in SPARK.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from package import submodule`` imports the submodule
                targets = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files else node.module
                    for a in node.names
                ]
            elif (
                path.name == "__init__.py"
                and isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in files
            ):
                targets = [node.value]  # a lazy import by name (the packages' __getattr__)
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _edges_between(graph: dict[str, set[str]], src: str, dst: str) -> list[tuple[str, str]]:
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if a.startswith(src) and b.startswith(dst)
    )


def test_the_graph_sees_function_level_imports() -> None:
    graph = _graph()
    assert len(graph) >= 20
    # imported inside functions only: the test would be blind without them
    assert "kgroup.spark.source.group_stream" in graph["kgroup.spark.source.datasource"]
    assert "kgroup.spark.partitioning.jvm" in graph["kgroup.spark.session"]
    assert "kgroup.spark.source.datasource" in graph["kgroup.spark"]  # by name, lazily


def test_no_import_circle_in_kgroup_spark() -> None:
    # package __init__ modules re-export lazily, by name: leave them out, as an import of a
    # submodule runs its package's __init__ first without the __init__ importing it back
    graph = {k: {t for t in v if not _is_package(t)} for k, v in _graph().items() if not _is_package(k)}
    assert _cycles(graph) == []


def _is_package(name: str) -> bool:
    return (SPARK.parent.parent / name.replace(".", "/") / "__init__.py").exists()


def test_the_products_depend_on_each_other_only_as_documented() -> None:
    graph = _graph()
    source, partitioning, demo = (f"kgroup.spark.{p}" for p in ("source", "partitioning", "demo"))
    assert _edges_between(graph, partitioning, source) == []
    assert _edges_between(graph, partitioning, demo) == []
    assert _edges_between(graph, source, demo) == []
    assert _edges_between(graph, source, partitioning) == []
    # the shared helpers use no product but the JVM function every session loads
    shared = ("kgroup.spark.session", "kgroup.spark.progress", "kgroup.spark.null_keys")
    assert sorted(t for s in shared for t in graph[s]) == ["kgroup.spark.partitioning.jvm"]
