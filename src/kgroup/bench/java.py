"""Apache Kafka 4.0's Java assignors on the same cases: the figures to beat.

Measured on a machine of this project's kind (2 vCPU Xeon VM, 23 GiB, OpenJDK 17.0.15, ``-Xmx16g``),
median of 5 runs after one warm-up, one call of the assignor's public entry point on prepared inputs
(``/work/shared/spec/PERFORMANCE.md``), with the cells it re-measured side by side taken from that
re-measurement.
"""

from __future__ import annotations

__all__ = ["JAVA_MEDIAN_MS", "java_median_ms"]

# (case, assignor, phase) -> median milliseconds
JAVA_MEDIAN_MS: dict[tuple[str, str, str], float] = {}


def _row(case: str, range_ms: float, roundrobin_ms: float, sticky: tuple[float, float],
         coop: tuple[float, float]) -> None:
    JAVA_MEDIAN_MS[(case, "range", "initial")] = range_ms
    JAVA_MEDIAN_MS[(case, "roundrobin", "initial")] = roundrobin_ms
    JAVA_MEDIAN_MS[(case, "sticky", "initial")] = sticky[0]
    JAVA_MEDIAN_MS[(case, "sticky", "reassign")] = sticky[1]
    JAVA_MEDIAN_MS[(case, "cooperative-sticky", "initial")] = coop[0]
    JAVA_MEDIAN_MS[(case, "cooperative-sticky", "reassign")] = coop[1]


# PERFORMANCE.md's re-measurement (same machine kind, side by side with kgroup) replaces the first
# table where they differ: uniform sticky initial / reassign 125 / 2,704 ms, cooperative-sticky
# initial 121 ms; nonequal cooperative-sticky initial 6,199 ms; roundrobin uniform-rack 25 ms.
_row("uniform", 1575, 1827, (125, 2704), (121, 3617))
_row("uniform-rack", 424, 25, (547, 508), (716, 378))
_row("nonequal", 1593, 1134, (6600, 10889), (6199, 10930))
_row("nonequal-rack", 302, 22, (365, 470), (555, 381))
_row("notimeout", 111, 24, (4479, 5104), (4769, 3519))
_row("notimeout-rack", 46, 9, (1150, 705), (1066, 719))


def java_median_ms(case: str, assignor: str, phase: str) -> float | None:
    """Java's median for a cell, or ``None`` when there is no Java figure for it."""
    return JAVA_MEDIAN_MS.get((case, assignor, phase))
