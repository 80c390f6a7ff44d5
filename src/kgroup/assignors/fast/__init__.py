"""Fast implementations of the built-in assignors, proven equal to the exact reference ones.

Each fast assignor returns exactly what the reference assignor of the same name returns (tested on
every Kafka vector and on large random groups, ``tests/assignors/test_fast_*.py``); only the data
layout differs: names become small integers, partitions one flat numbering, loads integer arrays.
``create_fast_assignor(name)`` gives a fresh instance; names without a fast path get a one-line error.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from kgroup.assignors.api import Assignor
from kgroup.model import KgroupError

__all__ = ["FAST_ASSIGNORS", "create_fast_assignor"]

# name -> (module, class); imported only when used
FAST_ASSIGNORS: dict[str, tuple[str, str]] = {
    "sticky": ("kgroup.assignors.fast.sticky", "FastStickyAssignor"),
    "cooperative-sticky": ("kgroup.assignors.fast.sticky", "FastCooperativeStickyAssignor"),
}


def create_fast_assignor(name: str) -> Assignor:
    """A fresh fast assignor by Kafka name (``range``, ``sticky`` …)."""
    try:
        module, cls = FAST_ASSIGNORS[name]
    except KeyError:
        known = ", ".join(FAST_ASSIGNORS) or "none yet"
        raise KgroupError(f"assignor: no fast implementation of {name!r}; fast ones: {known}") from None
    factory: Callable[[], Assignor] = getattr(import_module(module), cls)
    return factory()
