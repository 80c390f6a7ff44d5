"""The simulator's exactly-once workload (``workload.processing: exactly_once``, docs/simulator.md):
transactions of output records and offsets through kgroup's transaction coordinator and TxnOffsetCommit,
aborted when partitions are lost or a zombie's commit is fenced; no output record committed twice."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.model import KgroupError
from kgroup.sim import parse_scenario, simulate, with_overrides
from kgroup.sim.campaign import EXACTLY_ONCE_SHARE, campaign_scenario, check_scenario, with_exactly_once
from kgroup.sim.compare import EOS_COLUMNS, run_local, summarize, table_columns
from kgroup.sim.runner import Simulation
from kgroup.sim.variants import Variant

from .conftest import EXAMPLE_RUNS, run_example

pytestmark = pytest.mark.transactions

FENCING_ERRORS = {"ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"}


def scenario(**over: Any) -> dict[str, Any]:
    """Four consumers of 8 partitions; w1 killed mid-interval and back 10 s later; w2 cut off for
    60 s (past its 10 s session): the group gives its partitions away and its commit comes too late."""
    data: dict[str, Any] = {
        "seed": 5,
        "duration_ms": 150_000,
        "topics": {"orders": 8},
        "group": {"assignors": ["cooperative-sticky"], "session_timeout_ms": 10_000},
        "consumers": [{"count": 4, "prefix": "w", "topics": ["orders"]}],
        "workload": {"processing": "exactly_once", "auto_offset_reset": "earliest"},
        "events": [
            {"at_ms": 20_050, "kind": "restart", "consumer": "w1", "graceful": False, "downtime_ms": 10_000},
            {"at_ms": 50_000, "kind": "network_partition", "consumer": "w2", "duration_ms": 60_000},
        ],
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def metrics(data: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    sc = parse_scenario(copy.deepcopy(data))
    if overrides:
        sc = with_overrides(sc, **overrides)
    return simulate(sc).metrics


# --- the scenario file ------------------------------------------------------------------------------


def test_the_workload_fields_are_checked_and_read_back() -> None:
    sc = parse_scenario(scenario(workload={"commit_interval_ms": 250, "transaction_timeout_ms": 10_000}))
    assert sc.workload.exactly_once and sc.workload.commit_interval_ms == 250
    assert parse_scenario(sc.to_data()) == sc
    # at the defaults the fields are left out: an at-least-once scenario reads as it always did
    plain = parse_scenario(scenario(workload={"processing": "at_least_once"}))
    assert not plain.workload.exactly_once
    assert "processing" not in plain.to_data()["workload"]
    for field, value, needle in (
        ("processing", "twice", "use at_least_once (the default) or exactly_once"),
        ("commit_interval_ms", 0, "between 1 and 3600000"),
        ("transaction_timeout_ms", 900_001, "between 1 and 900000"),
    ):
        with pytest.raises(KgroupError, match=f"workload.{field}: .*{re.escape(needle)}"):
            parse_scenario(scenario(workload={field: value}))


def test_a_share_group_has_no_exactly_once_processing() -> None:
    data = scenario(group={"protocol": "share"})
    data["group"].pop("assignors")
    with pytest.raises(
        KgroupError, match=r"workload.processing: exactly_once does not apply with protocol: share"
    ):
        parse_scenario(data)
    with pytest.raises(KgroupError, match=r"^--protocol: a share group has no exactly-once processing"):
        with_overrides(parse_scenario(scenario()), protocol="share")
    plain = parse_scenario(scenario(workload={"processing": "at_least_once"}))
    with pytest.raises(KgroupError, match=r"^--processing: a share group"):
        with_overrides(plain, protocol="share", processing="exactly_once")
    with pytest.raises(KgroupError, match=r"^--processing: 'twice' is not a processing mode"):
        with_overrides(plain, processing="twice")


# --- what a run shows ---------------------------------------------------------------------------------


def test_a_kill_and_a_zombie_abort_their_transactions_and_duplicate_nothing() -> None:
    m = metrics(scenario())
    assert m["invariant_violations"] == []
    assert m["processing"] == "exactly_once"
    assert m["output_duplicates"] == 0 and m["output_gaps"] == 0
    # the kill -9: the open transaction is aborted when the restarted process re-initialises its
    # transactional.id; the zombie's TxnOffsetCommit is refused (its member was removed) and aborted
    assert m["transactions_aborted_by"].get("restart") == 1
    assert m["transactions_aborted_by"].get("fenced", 0) >= 1
    assert set(m["commits_fenced_by"]) <= FENCING_ERRORS and m["commits_fenced_by"]
    # the zombie processed its two partitions for the minute it was cut off: all thrown away, re-read
    assert m["records_thrown_away"] > 2 * 100 * 40
    assert m["records_reprocessed"] >= m["records_thrown_away"]
    assert m["transactions_committed"] > 0
    assert m["records_committed"] + m["records_thrown_away"] == m["records_processed"] - _open_at_end(m)
    # the commit interval's cost: output visible up to one interval (100 ms) after it was processed
    latency = m["latency_added_ms"]
    assert 0 < latency["p50"] <= 100 and latency["max"] <= 100


def _open_at_end(m: dict[str, Any]) -> int:
    """Records processed in transactions still open when the run ended (at most an interval's worth
    per running consumer: 8 partitions × 100 records/s × 0.1 s)."""
    left = m["records_processed"] - m["records_committed"] - m["records_thrown_away"]
    assert 0 <= left <= 8 * 100 // 10 + 8
    return left


def test_at_least_once_duplicates_what_exactly_once_throws_away() -> None:
    data = scenario()
    eos = metrics(data)
    alo = metrics(data, processing="at_least_once")
    assert "output_duplicates" not in alo  # (at least once, every record re-read is output again)
    # at least once: the zombie's minute and the 5 s of auto-commit the kill lost are output twice
    assert alo["records_reprocessed"] > eos["records_thrown_away"] > 0
    assert eos["output_duplicates"] == 0


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_every_consumer_group_protocol_fences_the_zombie(protocol: str) -> None:
    m = metrics(scenario(), protocol=protocol, assignors=("uniform",) if protocol == "consumer" else None)
    assert m["invariant_violations"] == []
    assert m["output_duplicates"] == 0
    assert m["commits_fenced_by"] and set(m["commits_fenced_by"]) <= FENCING_ERRORS
    assert m["transactions_aborted_by"].get("fenced", 0) >= 1


def test_a_crashed_consumer_never_restarted_is_aborted_by_the_transaction_timeout() -> None:
    data = scenario(
        workload={"transaction_timeout_ms": 10_000},
        events=[{"at_ms": 20_050, "kind": "crash", "consumer": "w1"}],
        duration_ms=60_000,
    )
    m = metrics(data)
    assert m["invariant_violations"] == []
    assert m["transactions_aborted_by"] == {"timeout": 1}
    assert m["records_thrown_away"] > 0


def test_a_graceful_restart_and_a_scale_out_commit_on_revocation_and_throw_nothing_away() -> None:
    data = scenario(
        events=[
            {"at_ms": 20_000, "kind": "scale", "count": 2, "topics": ["orders"]},
            {
                "at_ms": 40_000,
                "kind": "rolling_restart",
                "consumers": "all",
                "gap_ms": 5_000,
                "downtime_ms": 1000,
            },
        ],
        duration_ms=90_000,
    )
    for protocol in ("eager", "cooperative"):
        m = metrics(data, protocol=protocol)
        assert m["invariant_violations"] == []
        assert m["transactions_aborted"] == m["records_thrown_away"] == m["records_reprocessed"] == 0
        assert m["commits_fenced_by"] == {}


def test_the_books_catch_a_duplicate_a_gap_and_offsets_apart_from_the_output() -> None:
    """The invariants are not vacuous: a transaction committed over output already committed, one
    starting past it, and offsets left behind the output are each a violation."""
    sim = Simulation(parse_scenario(scenario(events=[], duration_ms=15_000)))
    sim.run()
    eos = sim.eos
    assert eos is not None and sim.violations == []
    producer = eos.producers["w0"]
    i = next(k for k, end in enumerate(eos.output_end) if end > 10)
    end = eos.output_end[i]
    producer.txn.ranges = {i: [end - 5, end + 5]}
    producer.txn.records = 10
    eos._finish(producer, committed=True, reason="test")
    assert eos.duplicates == 5 and "committed twice" in sim.violations[-1]
    producer.txn.ranges = {i: [end + 10, end + 20]}
    producer.txn.records = 10
    eos._finish(producer, committed=True, reason="test")
    assert eos.gaps == 5 and "never output" in sim.violations[-1]
    eos.close()  # the group's committed offset is behind the output the books committed
    assert "committed offset" in sim.violations[-1]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    protocol=st.sampled_from(["eager", "cooperative", "consumer"]),
    static=st.booleans(),
    interval=st.sampled_from([50, 100, 1000]),
    events=st.lists(
        st.tuples(
            st.sampled_from(["crash", "restart", "network_partition", "slow_poll", "stop"]),
            st.integers(0, 3),
            st.integers(5_000, 70_000),
            st.integers(1_000, 30_000),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_exactly_once_never_duplicates_output(
    protocol: str, static: bool, interval: int, events: list[tuple[str, int, int, int]]
) -> None:
    drawn: list[dict[str, Any]] = []
    for kind, who, at, length in events:
        event: dict[str, Any] = {"at_ms": at, "kind": kind, "consumer": f"w{who}"}
        if kind in ("network_partition", "slow_poll"):
            event["duration_ms"] = length
        elif kind == "restart":
            event.update(graceful=length % 2 == 0, downtime_ms=length // 4)
        drawn.append(event)
    data = scenario(
        duration_ms=90_000,
        group={"session_timeout_ms": 10_000, "max_poll_interval_ms": 20_000},
        workload={"commit_interval_ms": interval, "transaction_timeout_ms": 15_000},
        events=drawn,
    )
    membership = "static" if static and protocol != "consumer" else None
    m = metrics(
        data,
        protocol=protocol,
        assignors=("uniform",) if protocol == "consumer" else None,
        membership=membership,
    )
    assert m["output_duplicates"] == 0 and m["output_gaps"] == 0
    assert m["invariant_violations"] == []
    assert set(m["commits_fenced_by"]) <= {*FENCING_ERRORS, "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}


# --- the comparison, the campaign, the CLI ------------------------------------------------------------


def test_compare_runs_each_consumer_group_both_ways_and_the_share_group_at_least_once() -> None:
    sc = parse_scenario(scenario(duration_ms=80_000))
    variants = [Variant("cooperative-sticky", "cooperative", "dynamic"), Variant("simple", "share")]
    rows = run_local(sc, variants, [5])
    group, share = rows
    assert group["eos_output_duplicates"] == 0
    assert group["records_reprocessed"] > group["eos_records_thrown_away"] > 0  # at least once beside
    # (the kill's transaction; the zombie is still cut off when this shorter run ends)
    assert group["eos_transactions_aborted"] == 1 and 0 < group["eos_latency_added_p99_ms"] <= 100
    assert all(share[c] == -1 for c in EOS_COLUMNS)
    summary = summarize(rows)
    assert summary[1]["eos_records_reread"] == -1.0
    assert set(EOS_COLUMNS) <= set(table_columns(2, exactly_once=True))
    assert not set(EOS_COLUMNS) & set(table_columns(2))


def test_a_share_of_campaign_seeds_runs_exactly_once_and_keeps_its_invariants() -> None:
    drawn = [
        s for s in range(120) if campaign_scenario(s).get("workload", {}).get("processing") == "exactly_once"
    ]
    assert abs(len(drawn) / 120 - EXACTLY_ONCE_SHARE * 0.85) < 0.08  # (share groups never are)
    for seed in drawn:
        assert campaign_scenario(seed)["group"].get("protocol") != "share"
    # one of them, and a classic draw made exactly once, checked as the campaign checks them
    run = check_scenario(campaign_scenario(10), 10)
    assert run.exactly_once and not run.failed, run
    data = with_exactly_once(campaign_scenario(12), 12)
    run = check_scenario(data, 12)
    assert run.exactly_once and not run.failed and run.output_duplicates == 0, run


def _kgroup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cli_processing_option_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    data = scenario(workload={"processing": "at_least_once"}, duration_ms=40_000)
    data["events"] = data["events"][:1]  # the kill -9 and restart
    path.write_text(json.dumps(data))
    done = _kgroup(str(path), "--processing", "exactly_once", "--json")
    assert done.returncode == 0, done.stderr
    m = json.loads(done.stdout)["metrics"]
    assert m["processing"] == "exactly_once" and m["output_duplicates"] == 0
    assert m["transactions_aborted_by"] == {"restart": 1}
    for args, needle in (
        (
            ("--processing", "exactly_once", "--protocol", "share"),
            "--protocol: a share group has no exactly-once",
        ),
        (("--processing", "sometimes"), "--processing: 'sometimes' is not a processing mode"),
    ):
        failed = _kgroup(str(path), *args)
        assert failed.returncode == 2 and "Traceback" not in failed.stderr
        assert failed.stderr.startswith("kgroup: error: ") and needle in failed.stderr, failed.stderr
        assert len(failed.stderr.strip().splitlines()) == 1


@EXAMPLE_RUNS
def test_the_example_runs_without_duplicates_and_fences_its_zombie() -> None:
    m = run_example("exactly-once.yaml").metrics  # (the run test_examples.py checks healthy, cached)
    assert m["invariant_violations"] == [] and m["output_duplicates"] == 0
    assert m["transactions_aborted_by"] == {"fenced": 1, "restart": 1}
    assert m["commits_fenced_by"] == {"UNKNOWN_MEMBER_ID": 1}
    # the zombie's minute on two partitions at 100 records/s
    assert 11_000 < m["records_thrown_away"] < 12_500
