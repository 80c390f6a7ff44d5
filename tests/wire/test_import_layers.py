"""The wire/broker/client layering, checked on the source: every import counts, including imports
inside functions and under ``if TYPE_CHECKING`` (a circle hidden in a type hint is still a circle).

* no import circle among the modules of ``kgroup.wire``, ``kgroup.broker`` and ``kgroup.client``;
* ``kgroup.wire`` imports neither the broker nor the client; the broker and the client do not import
  each other;
* ``kgroup.broker.broker`` (the composition root) is imported by no module of ``kgroup.broker``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kgroup

SRC = Path(kgroup.__file__).parent
PACKAGES = ("wire", "broker", "client")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # "from package import submodule" imports the submodule
            names = [prefix, *(f"{prefix}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            if name in modules:
                found.add(name)
    found.discard(module)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for package in PACKAGES for p in (SRC / package).rglob("*.py")}
    modules = set(paths)
    return {name: _imports(path, name, modules) for name, path in paths.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (a package's ``__init__`` importing its own submodules is how
    a package exposes them, not a circle: the edges from a package to its submodules are left out)."""
    edges = {
        module: {t for t in targets if not t.startswith(module + ".")} for module, targets in graph.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(edges):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_the_graph_sees_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    source = tmp_path / "kgroup" / "broker" / "example.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kgroup.broker.broker import Broker\n"
        "def f():\n    from kgroup.client import connection\n"
        "from . import dispatch\n"
    )
    modules = {"kgroup.broker.broker", "kgroup.client.connection", "kgroup.broker.dispatch"}
    assert _imports(source, "kgroup.broker.example", modules) == modules
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"a.x"}, "a.x": {"a"}}) is None


def test_no_import_circle_among_wire_broker_and_client() -> None:
    graph = _graph()
    assert len(graph) > 30  # every module was read
    assert _cycle(graph) is None


def test_wire_is_below_the_broker_and_the_client_which_are_independent() -> None:
    graph = _graph()
    for module, targets in graph.items():
        layer = module.split(".")[1]
        others = {t.split(".")[1] for t in targets} - {layer}
        if layer == "wire":
            assert not others, f"{module} imports {sorted(targets)}"
        else:
            assert others <= {"wire"}, f"{module} imports {sorted(targets)}"


def test_the_broker_module_is_imported_by_no_module_of_the_broker() -> None:
    importers = [m for m, targets in _graph().items() if "kgroup.broker.broker" in targets]
    assert importers == []
