"""Assignors by name: the built-ins (:mod:`kgroup.assignors.builtin`) and third-party ones found through
the ``kgroup.assignors`` entry-point group (see ``docs/assignors.md``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from kgroup.assignors.api import Assignor
from kgroup.assignors.builtin import builtin_factories
from kgroup.model import KgroupError

__all__ = ["NamedRegistry", "available_assignors", "create_assignor", "register_assignor"]

_T = TypeVar("_T")


class NamedRegistry(Generic[_T]):
    """Factories by name, plus plug-ins from an entry-point group: one mechanism for every kind of assignor.

    kgroup has two kinds: the consumer's (:class:`Assignor`, below) and the KIP-848 coordinator's
    (:mod:`kgroup.group.assignors.registry`). Each kind is one instance, seeded with its built-ins.
    """

    def __init__(
        self,
        base: type,  # _T itself (abstract, so not a type[_T] to mypy): checked at run time
        base_name: str,
        entry_point_group: str,
        kind: str,
        builtins: Mapping[str, Callable[[], _T]],
    ) -> None:
        self.base = base
        self.base_name = base_name  # as users import it, for the error message
        self.entry_point_group = entry_point_group
        self.kind = kind
        self.factories: dict[str, Callable[[], _T]] = dict(builtins)

    def register(self, name: str, factory: Callable[[], _T]) -> None:
        """Make ``factory`` available under ``name`` (a later registration replaces an earlier one)."""
        self.factories[name] = factory

    def _plugins(self) -> dict[str, Callable[[], _T]]:
        found: dict[str, Callable[[], _T]] = {}
        for ep in entry_points(group=self.entry_point_group):
            found[ep.name] = ep.load()
        return found

    def available(self) -> list[str]:
        """Every name: built-ins first (sorted), then plug-ins."""
        names = sorted(self.factories)
        names += sorted(n for n in self._plugins() if n not in self.factories)
        return names

    def create(self, name: str) -> _T:
        """A fresh instance by name; unknown names get a one-line error listing the known ones."""
        factory = self.factories.get(name) or self._plugins().get(name)
        if factory is None:
            known = ", ".join(self.available())
            raise KgroupError(f"unknown {self.kind} {name!r}; use one of: {known}")
        instance = factory()
        if not isinstance(instance, self.base):
            raise KgroupError(f"{self.kind} plug-in {name!r} did not return a {self.base_name}")
        return instance


AssignorFactory = Callable[[], Assignor]
_REGISTRY: NamedRegistry[Assignor] = NamedRegistry(
    Assignor, "kgroup.assignors.Assignor", "kgroup.assignors", "assignor", builtin_factories()
)
_BUILTIN: dict[str, AssignorFactory] = _REGISTRY.factories


def register_assignor(name: str, factory: AssignorFactory) -> None:
    """Make ``factory`` available under ``name`` (a later registration replaces an earlier one)."""
    _REGISTRY.register(name, factory)


def available_assignors() -> list[str]:
    """Every assignor name: built-ins first (sorted), then plug-ins."""
    return _REGISTRY.available()


def create_assignor(name: str) -> Assignor:
    """A fresh assignor instance by name; unknown names get a one-line error listing the known ones."""
    return _REGISTRY.create(name)
