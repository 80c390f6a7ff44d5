"""``kgroup validate``: the simulator held to real clients on ``kgroup serve`` and on Apache Kafka.

A scenario (the simulator's format; the built-in set is in ``scenarios/``) is simulated, then played
with real consumers (:mod:`kgroup.validate.driver`) against each broker, and every run is reduced to
the same metrics (:mod:`kgroup.validate.metrics`). See ``docs/validate.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["builtin_scenarios"]


def builtin_scenarios() -> dict[str, Path]:
    """The built-in validation scenarios: name -> file."""
    folder = resources.files("kgroup.validate") / "scenarios"
    return {
        Path(str(entry)).stem: Path(str(entry))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    }
