"""Benchmarks of kgroup's assignors on Kafka's own large test cases, side by side with Java's figures.

``kgroup.bench.cases`` builds the cases, ``kgroup.bench.worker`` times one cell in a fresh process and
``kgroup.bench.runner`` runs cells with timeouts and assembles the table (``kgroup bench assign``).
"""

from kgroup.bench.cases import ASSIGNORS, CASES, CaseShape, Phase, build_request, phases_for

__all__ = ["ASSIGNORS", "CASES", "CaseShape", "Phase", "build_request", "phases_for"]
