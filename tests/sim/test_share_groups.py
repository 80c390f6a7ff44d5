"""Share groups (KIP-932) as the simulator's fourth protocol (``protocol: share``): the share
coordinator's assignment, ShareFetch over ``kgroup.share`` partitions, redelivery and archiving, the
invariants the simulator checks, ``--compare``'s share row, and the campaign's share runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from kgroup.model import KgroupError, TopicPartition
from kgroup.share import PersisterStateBatch, StateWrite
from kgroup.sim import parse_scenario, simulate, with_overrides
from kgroup.sim.campaign import SHARE_GROUP_SHARE, campaign_scenario, check_scenario, random_share_scenario
from kgroup.sim.compare import SHARE_COLUMNS, result_row
from kgroup.sim.share_group import ShareSimulation
from kgroup.sim.share_ledger import IntervalSet, LatencyHistogram
from kgroup.sim.variants import Variant, compare_variants

from .conftest import EXAMPLE_RUNS


def share(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "seed": 3,
        "duration_ms": 90_000,
        "topics": {"orders": 2},
        "group": {"protocol": "share"},
        "consumers": [{"count": 6, "prefix": "c", "topics": ["orders"]}],
        "workload": {"produce_per_partition_per_s": 200, "consume_per_consumer_per_s": 300},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def run(data: dict[str, Any]) -> dict[str, Any]:
    metrics: dict[str, Any] = simulate(parse_scenario(data)).metrics
    assert metrics["invariant_violations"] == [], metrics["invariant_violations"]
    return metrics


def test_members_beyond_the_partition_count_share_partitions_and_all_consume() -> None:
    m = run(share())
    assert m["protocol"] == "share" and m["final_protocol"] == "simple"
    # SimpleAssignor: 6 members on 2 partitions, each partition shared by ceil(6/2) = 3 members
    holders = {"orders[0]": 0, "orders[1]": 0}
    for partitions in m["final_assignment"].values():
        holders[partitions] += 1
    assert holders == {"orders[0]": 3, "orders[1]": 3}
    assert m["idle_consumers"] == 0 and m["final_group_state"] == "Stable"
    assert all(n > 0 for n in m["member_records_accepted"].values())
    # nothing fails: every record processed once and accepted; none redelivered or archived
    assert m["records_redelivered"] == 0 and m["records_archived"] == 0
    assert m["records_accepted"] == m["records_processed"] > 0
    assert m["delivery_latency_ms"]["p50"] is not None


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_draws() -> None:
    data = share(workload={"failure_share": 0.02, "poison_share": 0.002})
    first = simulate(parse_scenario(data)).to_json()
    assert simulate(parse_scenario(data)).to_json() == first
    assert simulate(parse_scenario({**data, "seed": 4})).to_json() != first


def test_the_json_is_the_same_under_another_hash_seed(tmp_path: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(share(duration_ms=30_000, workload={"failure_share": 0.05})))
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-m", "kgroup", "simulate", str(path), "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert outs[0] == outs[1] and '"protocol": "share"' in outs[0]


def test_poison_records_are_released_redelivered_and_archived_at_the_delivery_count_limit() -> None:
    limit = 3
    m = run(share(group={"share_delivery_count_limit": limit}, workload={"poison_share": 0.01}))
    archived = m["records_archived_by"]["delivery_limit"]
    assert archived > 50 and m["records_archived_by"]["reject"] == 0
    # a poison record is delivered `limit` times: released limit-1 times, archived at the last;
    # the few still on their way at the end add less than `limit` deliveries each
    released = m["records_redelivered_by"]["release"]
    assert (limit - 1) * archived <= released < (limit - 1) * archived + (limit - 1) * 60
    assert m["records_redelivered_by"]["lock_timeout"] == m["records_redelivered_by"]["crash"] == 0


def test_rejected_records_are_archived_at_once() -> None:
    m = run(share(workload={"poison_share": 0.01, "failure_action": "reject"}))
    assert m["records_archived_by"]["reject"] > 50
    assert m["records_archived_by"]["delivery_limit"] == 0 and m["records_redelivered"] == 0


#: consumers behind the producers: every member always holds a batch
BUSY = {"produce_per_partition_per_s": 400, "consume_per_consumer_per_s": 120}


def test_a_crashed_members_records_come_back_at_once_a_cut_members_after_the_lock_timeout() -> None:
    # kill -9: the kernel closes the socket and Kafka 4.4's share-session cache releases at once
    crash = run(share(workload=BUSY, events=[{"at_ms": 40_000, "kind": "crash", "consumer": "c1"}]))
    assert crash["records_redelivered_by"]["crash"] > 0
    assert crash["records_redelivered_by"]["lock_timeout"] == 0
    # a cut longer than the 10 s lock: the records wait for the lock, then go to someone else, and
    # the cut member's acknowledgements after the cut come too late (its records processed twice)
    cut = run(
        share(
            workload=BUSY,
            group={"share_record_lock_duration_ms": 10_000},
            events=[{"at_ms": 40_000, "kind": "network_partition", "consumer": "c1", "duration_ms": 20_000}],
        )
    )
    assert cut["records_redelivered_by"]["lock_timeout"] > 0
    assert cut["records_redelivered_by"]["crash"] == 0


def test_processing_stuck_past_the_lock_gets_its_records_processed_twice() -> None:
    m = run(
        share(
            workload=BUSY,
            group={"share_record_lock_duration_ms": 10_000},
            events=[{"at_ms": 30_000, "kind": "slow_poll", "consumer": "c2", "duration_ms": 25_000}],
        )
    )
    assert m["records_redelivered_by"]["lock_timeout"] > 0
    assert m["records_acknowledged_late"] > 0  # the stuck member's batch was redelivered meanwhile
    assert m["records_reprocessed"] >= m["records_acknowledged_late"]


def test_a_graceful_stop_releases_the_rest_and_leaves() -> None:
    m = run(share(events=[{"at_ms": 40_000, "kind": "stop", "consumer": "c0"}]))
    assert "c0" not in m["final_assignment"] and m["running_consumers"] == 5
    assert m["records_redelivered_by"]["crash"] == m["records_redelivered_by"]["lock_timeout"] == 0


def test_a_scale_out_beyond_the_partition_count_buys_throughput_only_for_a_share_group() -> None:
    base = share(
        duration_ms=120_000,
        topics={"orders": 2},
        consumers=[{"count": 2, "prefix": "c", "topics": ["orders"]}],
        workload={"produce_per_partition_per_s": 400, "consume_per_consumer_per_s": 200},
    )
    scaled = {**base, "events": [{"at_ms": 30_000, "kind": "scale", "count": 2, "topics": ["orders"]}]}
    alone, more = run(base), run(scaled)
    assert more["records_accepted"] > 1.4 * alone["records_accepted"]
    assert more["max_lag_records"] < alone["max_lag_records"]
    assert more["idle_consumers"] == 0
    # the same scale-out in a consumer group: the two new members sit idle, nothing more processed
    classic = simulate(with_overrides(parse_scenario(scaled), protocol="eager")).metrics
    classic_alone = simulate(with_overrides(parse_scenario(base), protocol="eager")).metrics
    assert classic["idle_consumers"] == 2
    assert classic["records_processed"] <= classic_alone["records_processed"] * 1.01


def test_a_new_topic_and_a_subscription_change_reach_the_share_group() -> None:
    m = run(
        share(
            topics={"orders": 2, "audit": 1},
            events=[
                {"at_ms": 20_000, "kind": "add_partitions", "topic": "orders", "count": 2},
                {"at_ms": 40_000, "kind": "subscribe", "consumer": "c0", "topics": ["audit"]},
            ],
        )
    )
    assert m["final_assignment"]["c0"] == "audit[0]"
    shared = [p for c, p in m["final_assignment"].items() if c != "c0"]
    assert all(p.startswith("orders[") for p in shared)
    assert m["time_to_stable_ms"][0] is not None and m["time_to_stable_ms"][1] is not None


def test_the_ledger_catches_a_record_accepted_twice_or_held_by_two() -> None:
    sim = ShareSimulation(parse_scenario(share()))
    i = sim.index[TopicPartition("orders", 0)]
    sim._share_partition(i)
    write = StateWrite(0, 0, 0, 0, (PersisterStateBatch(0, 9, 2, 1),))
    sim._written(i, write, "release")
    assert sim.violation_count == 0
    sim._written(i, write, "release")
    assert sim.violation_count == 1 and "accepted twice" in sim.violations[0]
    ledger = sim.ledgers[i]
    assert ledger is not None
    ledger.holders[20] = ("m1", 1)
    sim._written(i, StateWrite(0, 0, 0, 0, (PersisterStateBatch(20, 20, 2, 1),)), "release", acker="m2")
    assert "held by m1" in sim.violations[-1]


def test_the_end_check_finds_a_lost_record() -> None:
    sim = ShareSimulation(parse_scenario(share()))
    i = sim.index[TopicPartition("orders", 0)]
    sp = sim._share_partition(i)
    sp.start_offset = 10  # (as if the partition moved its start past records nobody accepted)
    sim._check_nothing_lost()
    assert sim.violation_count == 1 and "lost" in sim.violations[0]


def test_interval_set_and_latency_histogram() -> None:
    s = IntervalSet()
    s.add(0, 5)
    s.add(10, 12)
    s.add(5, 10)
    assert list(s.runs()) == [(0, 12)] and s.covers(0, 12) and s.overlap(11, 20) == 1
    s.add(20, 22)
    assert s.total() == 14 and not s.covers(0, 21)
    h = LatencyHistogram()
    h.add(10, 99)
    h.add(1000, 1)
    assert h.percentile(0.5) == 10 and h.percentile(0.99) == 10 and h.percentile(0.999) == 1000
    assert h.summary()["max"] == 1000


def test_bad_share_settings_get_one_line() -> None:
    cases = [
        ({"group": {"share_delivery_count_limit": 5}}, "group.share_delivery_count_limit: only applies"),
        ({"group": {"protocol": "share", "assignors": ["range"]}}, "group.assignors: does not apply"),
        ({"group": {"protocol": "share", "share_delivery_count_limit": 11}}, "give 2..10"),
        (
            {"group": {"protocol": "share", "share_heartbeat_interval_ms": 45000}},
            "group.share_heartbeat_interval_ms",
        ),
        ({"consumers": [{"id": "a", "topics": ["orders"], "static": True}]}, "consumers[0].static"),
        ({"workload": {"poison_share": 2}}, "workload.poison_share"),
        ({"workload": {"failure_action": "drop"}}, "workload.failure_action"),
    ]
    for overrides, expected in cases:
        data = share(**overrides)
        if "share_delivery_count_limit: only" in expected:
            data["group"] = overrides["group"]
        with pytest.raises(KgroupError) as err:
            parse_scenario(data)
        assert expected in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(KgroupError, match="no static membership"):
        with_overrides(parse_scenario(share()), membership="static")
    with pytest.raises(KgroupError, match="simple only"):
        with_overrides(parse_scenario(share()), assignors=["range"])


def test_protocol_overrides_go_to_and_from_share() -> None:
    classic = parse_scenario({**share(), "group": {"assignors": ["range"]}})
    to_share = with_overrides(classic, protocol="share")
    assert to_share.group.share_protocol
    back = with_overrides(parse_scenario(share(group={"share_delivery_count_limit": 3})), protocol="eager")
    assert back.group.protocol == "classic" and back.group.share_delivery_count_limit == 5
    # every variant's scenario reads back as it is (what a Spark task and a campaign file need)
    for variant in compare_variants()[0]:
        applied = variant.apply(parse_scenario(share()))
        assert parse_scenario(applied.to_data(), name=applied.name) == applied


def test_compare_has_the_share_row_with_its_own_columns() -> None:
    variants, _ = compare_variants()
    assert variants[-1] == Variant("simple", "share") and variants[-1].label == "simple/share"
    assert len(variants) == 15
    scenario = parse_scenario(share(duration_ms=40_000))
    rows = {}
    for variant in (Variant("simple", "share"), Variant("range", "eager", "dynamic")):
        applied = variant.apply(scenario)
        rows[variant.protocol] = result_row(applied, variant, simulate(applied))
    assert rows["share"]["delivery_p99_ms"] >= 0 and rows["share"]["records_redelivered"] == 0
    assert all(rows["eager"][c] == -1 for c in SHARE_COLUMNS)


def test_campaign_share_seeds_run_their_invariants() -> None:
    protocols = [campaign_scenario(s)["group"].get("protocol", "classic") for s in range(200)]
    # its own stream: SHARE_GROUP_SHARE of the seeds not on the consumer protocol (a quarter)
    assert abs(protocols.count("share") / 200 - 0.75 * SHARE_GROUP_SHARE) < 0.06
    assert campaign_scenario(34) == random_share_scenario(34)
    for seed in (34, 41):
        run_ = check_scenario(campaign_scenario(seed), seed)
        assert run_.protocol == "share" and not run_.failed, run_


@EXAMPLE_RUNS
def test_the_share_group_example_shows_what_its_readme_line_says() -> None:
    from .conftest import run_example

    result = run_example("share-group.yaml")
    m = result.metrics
    assert m["invariant_violations"] == [] and m["final_group_state"] == "Stable"
    # 8 members on 4 partitions (then 7 after the crash): every running member consumes
    assert m["idle_consumers"] == 0 and all(n > 0 for n in m["member_records_accepted"].values())
    assert all(m["member_records_accepted"][f"extra-{k}"] > 0 for k in range(4))
    assert m["records_redelivered_by"]["crash"] > 0
    assert m["records_redelivered_by"]["lock_timeout"] > 0 and m["records_acknowledged_late"] > 0
    assert m["records_archived_by"]["delivery_limit"] > 0
    # the backlog the first 4 could not keep up with drains once 8 share the partitions (before the
    # crash leaves 7: two partitions then share one member's time and only break even)
    before_crash = [s.committed_lag for s in result.lag if 140_000 <= s.t_ms <= 150_000]
    assert m["max_lag_records"] > 50_000 and max(before_crash) < m["max_lag_records"] / 10
    assert m["final_assignment"]["extra-0"] == "orders[2-3]"


def test_the_campaign_command_counts_its_share_group_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", "--campaign", "2", "--seed", "34", "--engine", "local",
         "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["scenarios"], summary["failed"], summary["share_group_runs"]) == (2, 0, 1)


def test_a_poll_past_max_poll_interval_leaves_the_group_and_rejoins_at_the_next_poll() -> None:
    result = simulate(
        parse_scenario(
            share(
                workload=BUSY,
                group={"max_poll_interval_ms": 20_000},
                events=[{"at_ms": 30_000, "kind": "slow_poll", "consumer": "c2", "duration_ms": 40_000}],
            )
        )
    )
    m = result.metrics
    assert m["invariant_violations"] == []
    kinds = [(e["kind"], e["t_ms"]) for e in result.events if e.get("consumer") == "c2"]
    left = [t for k, t in kinds if k == "poll_timeout_left"]
    back = [t for k, t in kinds if k == "rejoin_after_poll_timeout"]
    # poll() returned c2's batch just before the stall; 20 s later its heartbeat thread leaves, and the
    # member rejoins when the stall is over and the loop polls again
    assert len(left) == 1 and 45_000 <= left[0] <= 50_000
    assert len(back) == 1 and back[0] >= 70_000
    lost = [o for o in result.ownership if o["member"] == "c2" and o["revoked"] and o["t_ms"] == left[0]]
    assert lost and m["final_assignment"]["c2"]  # it gave its partition up, and has one again at the end
    # without the stall's length past the poll interval nothing of the kind happens
    quiet = simulate(parse_scenario(share(workload=BUSY, group={"max_poll_interval_ms": 60_000},
                                          events=[{"at_ms": 30_000, "kind": "slow_poll", "consumer": "c2",
                                                   "duration_ms": 40_000}])))  # fmt: skip
    assert not [e for e in quiet.events if e["kind"] == "poll_timeout_left"]
