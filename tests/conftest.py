"""Shared test fixtures: the copied Kafka vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).parent / "vectors"


def load_vectors(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """Every assignor vector file under ``tests/vectors/<kind>/`` as (relative name, data)."""
    files = sorted((VECTORS / kind).rglob("*.json"))
    return [(str(f.relative_to(VECTORS)), json.loads(f.read_text())) for f in files]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return VECTORS
