"""Shared test fixtures: the copied Kafka vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Hypothesis's per-example deadline is a timed assertion: on a loaded 2-core machine (parallel workers,
# JVMs beside) a first example can take 0.6 s and fail a test whose checks all pass. Speed is measured
# by the benchmarks; here every example only has to be right.
settings.register_profile("kgroup", deadline=None)
settings.load_profile("kgroup")

VECTORS = Path(__file__).parent / "vectors"


def load_vectors(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """Every assignor vector file under ``tests/vectors/<kind>/`` as (relative name, data)."""
    files = sorted((VECTORS / kind).rglob("*.json"))
    return [(str(f.relative_to(VECTORS)), json.loads(f.read_text())) for f in files]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return VECTORS


@pytest.fixture(scope="session")
def spark() -> Any:
    """The one local Spark session of the test run (``local[2]``, no UI, 4 shuffle partitions).

    Every Spark test shares it; code under test that asks for a session (``get_spark``) gets this
    one back and leaves it running. Stopped when the run ends.
    """
    from kgroup.spark.session import get_spark

    session = get_spark("local[2]", app_name="kgroup-tests", shuffle_partitions=4)
    yield session
    session.stop()
