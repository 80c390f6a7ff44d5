"""Running Kafka's reference vectors through kgroup's file format (shared by the assignor tests)."""

from __future__ import annotations

from typing import Any

from kgroup.assignors.fileformat import check_vector


def assert_vector_exact(name: str, data: dict[str, Any]) -> None:
    """Run one vector and fail with the differing members if kgroup's answer is not Kafka's."""
    result = check_vector(data, name=name)
    assert result.error is None, f"{name}: {result.error}"
    lines = [
        f"{m.member}: expected {[str(tp) for tp in m.expected or ()]}, got {[str(tp) for tp in m.got or ()]}"
        for m in result.mismatches[:5]
    ]
    assert result.exact, f"{name} differs from Kafka:\n" + "\n".join(lines)
