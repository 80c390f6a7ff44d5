"""The built-in assignors under Kafka's names; each module is imported only when used."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from kgroup.assignors.api import Assignor

# name -> (module, class)
BUILTIN_ASSIGNORS: dict[str, tuple[str, str]] = {
    "range": ("kgroup.assignors.range", "RangeAssignor"),
    "roundrobin": ("kgroup.assignors.roundrobin", "RoundRobinAssignor"),
    # The fast sticky assignors return exactly the reference's answers (kgroup.assignors.sticky; proven
    # on every vector and on large random groups) with integer layouts and numba kernels for large groups.
    "sticky": ("kgroup.assignors.fast.sticky", "FastStickyAssignor"),
    "cooperative-sticky": ("kgroup.assignors.fast.sticky", "FastCooperativeStickyAssignor"),
    "legacy-range": ("kgroup.assignors.legacy", "LegacyRangeAssignor"),
    "legacy-roundrobin": ("kgroup.assignors.legacy", "LegacyRoundRobinAssignor"),
}


def _factory(module: str, cls: str) -> Callable[[], Assignor]:
    def make() -> Assignor:
        assignor_class: type[Assignor] = getattr(import_module(module), cls)
        return assignor_class()

    return make


def builtin_factories() -> dict[str, Callable[[], Assignor]]:
    """The built-in assignors' factories by Kafka's names (each imports its module when first used)."""
    return {name: _factory(module, cls) for name, (module, cls) in BUILTIN_ASSIGNORS.items()}
