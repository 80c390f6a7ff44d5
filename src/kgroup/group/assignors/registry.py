"""Server assignors by name (the client-side assignors' mechanism, a second instance): the built-ins
``uniform`` and ``range``, and plug-ins from the ``kgroup.server_assignors`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable

from kgroup.assignors.registry import NamedRegistry
from kgroup.group.assignors.api import ServerAssignor
from kgroup.group.assignors.range import RangeAssignor
from kgroup.group.assignors.uniform import UniformAssignor

__all__ = ["available_server_assignors", "create_server_assignor", "register_server_assignor"]


_REGISTRY: NamedRegistry[ServerAssignor] = NamedRegistry(
    ServerAssignor,
    "kgroup.group.assignors.ServerAssignor",
    "kgroup.server_assignors",
    "server assignor",
    {UniformAssignor.name: UniformAssignor, RangeAssignor.name: RangeAssignor},
)


def register_server_assignor(name: str, factory: Callable[[], ServerAssignor]) -> None:
    """Make ``factory`` available under ``name`` (plug-ins: the ``kgroup.server_assignors`` entry points)."""
    _REGISTRY.register(name, factory)


def available_server_assignors() -> list[str]:
    """Every server assignor name: built-ins first (sorted), then plug-ins."""
    return _REGISTRY.available()


def create_server_assignor(name: str) -> ServerAssignor:
    """A fresh server assignor by name (``uniform``, ``range``, …); unknown names get a one-line error."""
    return _REGISTRY.create(name)
