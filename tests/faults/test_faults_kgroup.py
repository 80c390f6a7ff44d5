"""Real clients through real network faults (toxiproxy) on ``kgroup serve``; the same scenarios run on
Apache Kafka in test_faults_apache.py. The full matrix: ``benchmarks/run_faults.py`` (docs/faults.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.faults.scenarios import CUT, RESETS, assert_cut_seen, assert_invariants

from kgroup.model import KgroupError
from kgroup.testing.faults import FaultBed, Toxiproxy, run_fault
from kgroup.testing.faults.simulated import headline_real, headline_simulated


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
    assert outcome.resets >= 3, outcome.notes
    simulated = headline_simulated(outcome)  # the same count of resets on c1's link
    print(f"\nkgroup resets: real {headline_real(outcome).cells()} simulated {simulated.cells()}")


def test_a_bed_removes_its_proxies_and_a_bad_toxic_is_refused_in_one_line(toxiproxy: Toxiproxy) -> None:
    with FaultBed("kgroup", toxiproxy, consumers=1) as one:
        names = [proxy.name for proxy in one.proxies]
        assert set(names) <= set(toxiproxy.api("GET", "/proxies"))
        with pytest.raises(KgroupError, match=r"toxiproxy: POST /proxies/.*/toxics: HTTP 400"):
            one.proxies[0].add_toxic("flood", {})
    assert set(names).isdisjoint(toxiproxy.api("GET", "/proxies"))
