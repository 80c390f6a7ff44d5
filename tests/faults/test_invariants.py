"""The fault runs' checks (kgroup.testing.faults.invariants) on hand-made observations: each invariant
is broken once on purpose and must be caught; a correct cooperative handover must pass."""

from __future__ import annotations

import sys

import pytest

from kgroup.model import KgroupError
from kgroup.testing.faults.invariants import (
    Callback,
    Commit,
    Observations,
    check,
    ownership_intervals,
    rebalances_after,
    time_to_stable_s,
    unowned_partition_s,
)
from kgroup.testing.faults.run import Fault, FaultRun, generation_of


def _cb(t: float, consumer: str, kind: str, generation: int, *partitions: int) -> Callback:
    return Callback(t, consumer, kind, generation, f"{consumer}-id", partitions)


def test_a_cooperative_handover_is_no_double_ownership() -> None:
    obs = Observations(partitions=2, end_t=10.0)
    obs.callbacks = [
        _cb(1.0, "a", "assign", 1, 0, 1),
        _cb(5.0, "b", "assign", 2),  # b joins generation 2 with nothing yet
        _cb(5.0, "a", "revoke", 2, 1),  # a gives partition 1 up in generation 2
        _cb(6.0, "b", "assign", 3, 1),  # b gets it in generation 3
        _cb(6.0, "a", "assign", 3),
    ]
    report = check(obs)
    assert report.double_owned == []
    assert report.zombie_overlap_s == 0
    assert report.violations() == []
    assert rebalances_after(obs, 2.0) == 2
    assert time_to_stable_s(obs, 2.0, consumers=2) == pytest.approx(4.0)
    # partition 1 had no owner from 5 s to 6 s
    assert unowned_partition_s(ownership_intervals(obs), 2, 2.0, 10.0) == pytest.approx(1.0)


def test_two_owners_in_one_generation_are_caught() -> None:
    obs = Observations(partitions=1, end_t=4.0)
    obs.callbacks = [_cb(1.0, "a", "assign", 1, 0), _cb(2.0, "b", "assign", 1, 0)]
    report = check(obs)
    assert report.double_owned == [(1, 0, ("a", "b"))]
    assert report.zombie_overlap_s == pytest.approx(2.0)
    assert report.violations() == ["generation 1: partition 0 owned by a, b"]


def test_a_zombie_of_an_older_generation_is_measured_not_a_violation() -> None:
    obs = Observations(partitions=1, end_t=10.0)
    obs.callbacks = [
        _cb(1.0, "a", "assign", 1, 0),
        _cb(5.0, "b", "assign", 2, 0),  # a was cut off and removed; b owns partition 0 in generation 2
        _cb(7.0, "a", "lost", 1, 0),  # a hears of it when the link heals
    ]
    report = check(obs)
    assert report.double_owned == []
    assert report.zombie_overlap_s == pytest.approx(2.0)
    assert report.violations() == []


def test_an_acknowledged_record_nobody_read_is_lost() -> None:
    obs = Observations(partitions=1, end_t=1.0)
    obs.acked = {(0, 0), (0, 1), (0, 2)}
    obs.consumed = {(0, 0), (0, 2)}
    report = check(obs)
    assert (report.lost, report.lost_count) == ([(0, 1)], 1)
    assert report.violations() == ["1 acknowledged records never consumed, e.g. [(0, 1)]"]


def test_committed_offsets_going_back_are_caught_in_commits_and_in_samples() -> None:
    obs = Observations(partitions=1, end_t=1.0)
    obs.commits = [Commit(0.1, "a", 0, 10), Commit(0.2, "b", 0, 7)]
    obs.sampled_offsets = [(0.1, 0, 10), (0.3, 0, 12), (0.5, 0, 11)]
    assert check(obs).commits_back == [(0, 10, 7, "b"), (0, 12, 11, "observer")]


def test_an_unsettled_end_has_no_time_to_stable() -> None:
    obs = Observations(partitions=2, end_t=5.0)
    obs.callbacks = [_cb(1.0, "a", "assign", 1, 0)]  # partition 1 never owned
    assert time_to_stable_s(obs, 0.5, consumers=1) is None


def test_generation_and_member_id_are_read_from_librdkafka_group_metadata() -> None:
    blob = b"CGMDv2:" + (7).to_bytes(4, sys.byteorder, signed=True) + b"g\x00c0-abc\x00\x00"
    assert generation_of(blob) == (7, "c0-abc")
    assert generation_of(b"other") == (-1, "")


def test_bad_fault_settings_name_the_field() -> None:
    with pytest.raises(KgroupError, match=r"fault\.kind: 'flood'"):
        Fault("flood")
    with pytest.raises(KgroupError, match=r"fault\.consumer: 5"):
        FaultRun(Fault("cut", consumer=5), consumers=3)
