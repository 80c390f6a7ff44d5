"""Real clients through real network faults (toxiproxy) on ``kgroup serve``; the same scenarios run on
Apache Kafka in test_faults_apache.py. The full matrix: ``benchmarks/run_faults.py`` (docs/faults.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.faults.scenarios import CUT, RESETS, assert_cut_seen, assert_invariants

from kgroup.testing.faults import FaultBed, Toxiproxy, run_fault


@pytest.fixture(scope="module")
def bed(toxiproxy: Toxiproxy) -> Iterator[FaultBed]:
    with FaultBed("kgroup", toxiproxy) as started:
        yield started


def test_a_consumer_cut_off_past_its_session_timeout(bed: FaultBed) -> None:
    outcome = run_fault(bed, CUT)
    assert_invariants(outcome)
    assert_cut_seen(outcome)


def test_connection_resets_on_an_eager_group(bed: FaultBed) -> None:
    outcome = run_fault(bed, RESETS)
    assert_invariants(outcome)
    assert any("bursts of resets" in note for note in outcome.notes), outcome.notes
