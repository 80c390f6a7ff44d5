"""The Spark package's pure parts, without a Spark session: formats, seeds, event generation, results."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from kgroup.model import KgroupError
from kgroup.spark.demo.events import EVENT_TYPES, EventSpec, event_columns
from kgroup.spark.null_keys import task_seed
from kgroup.spark.partitioning.job import _hot_partitions, detect_format
from kgroup.spark.partitioning.results import CountSummary, MovedShare
from kgroup.spark.session import check_master


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.parquet", "parquet"),
        ("a.PQ", "parquet"),
        ("a.csv", "csv"),
        ("a.csv.gz", "csv"),
        ("a.json", "json"),
        ("a.jsonl", "json"),
        ("a.ndjson", "json"),
    ],
)
def test_format_from_file_name(tmp_path: Path, name: str, fmt: str) -> None:
    path = tmp_path / name
    path.write_text("x")
    assert detect_format(path) == fmt


def test_format_of_a_directory_ignores_spark_markers_and_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.parquet.crc").write_text("")
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "x.csv").write_text("")
    (tmp_path / "part-0.snappy.parquet").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "part-1.parquet").write_text("x")
    assert detect_format(tmp_path) == "parquet"


def test_format_errors_name_the_fix(tmp_path: Path) -> None:
    unknown = tmp_path / "data.txt"
    unknown.write_text("x")
    with pytest.raises(KgroupError, match=r"cannot tell the format of .*data\.txt.*pass --format"):
        detect_format(unknown)
    assert detect_format(unknown, "csv") == "csv"
    with pytest.raises(KgroupError, match=r"format: 'xml' is not supported; use parquet, csv, json or auto"):
        detect_format(unknown, "xml")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(KgroupError, match=r"no \.parquet, \.csv or \.json files"):
        detect_format(empty)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.csv").write_text("x")
    (mixed / "b.json").write_text("x")
    with pytest.raises(KgroupError, match=r"mixes formats \(csv, json\); pass --format"):
        detect_format(mixed)


def test_task_seed_is_a_stable_hash_of_seed_task_and_count() -> None:
    expected = int.from_bytes(hashlib.blake2b(b"kgroup:7:3:12", digest_size=8).digest(), "big")
    assert task_seed(7, 3, 12) == expected
    seeds = {task_seed(s, t, n) for s in range(3) for t in range(4) for n in (6, 12)}
    assert len(seeds) == 3 * 4 * 2


def test_events_do_not_depend_on_batch_boundaries() -> None:
    spec = EventSpec(events=10_000, seed=9, customers=500)
    cdf = spec.customer_cdf()
    ids = np.arange(10_000, dtype=np.int64)
    whole = event_columns(spec, ids, cdf)
    first, second = event_columns(spec, ids[:3_333], cdf), event_columns(spec, ids[3_333:], cdf)
    for name in whole:
        assert np.array_equal(whole[name], np.concatenate([first[name], second[name]]))
    other_seed = event_columns(EventSpec(events=10_000, seed=10, customers=500), ids, cdf)
    assert not np.array_equal(whole["customer_rank"], other_seed["customer_rank"])


def test_events_follow_the_zipf_law_and_the_keyless_share() -> None:
    n = 200_000
    spec = EventSpec(events=n, seed=1, customers=1_000, zipf_exponent=1.1, keyless_share=0.1)
    cols = event_columns(spec, np.arange(n, dtype=np.int64), spec.customer_cdf())
    ranks = cols["customer_rank"]
    keyless = np.count_nonzero(ranks == 0) / n
    assert abs(keyless - 0.1) < 0.005  # binomial sd ≈ 0.0007
    keyed = ranks[ranks > 0]
    assert keyed.min() >= 1 and keyed.max() <= spec.customers
    for rank in (1, 2, 10):
        observed = np.count_nonzero(keyed == rank) / keyed.size
        assert abs(observed - spec.customer_share(rank)) < 0.01
    assert set(np.unique(cols["event_type"]).tolist()) == set(range(len(EVENT_TYPES)))
    assert cols["amount_cents"].min() >= 1 and cols["amount_cents"].max() <= 100_000


def test_event_spec_rejects_bad_values() -> None:
    with pytest.raises(KgroupError, match="events: 0"):
        EventSpec(events=0)
    with pytest.raises(KgroupError, match=r"keyless_share: 1\.5"):
        EventSpec(keyless_share=1.5)
    with pytest.raises(KgroupError, match="customers: 0"):
        EventSpec(customers=0)


def test_hot_partitions_most_records_first_lower_id_on_ties_never_empty() -> None:
    assert _hot_partitions([5, 9, 9, 0, 1], 3) == [1, 2, 0]
    assert _hot_partitions([0, 0, 2], 3) == [2]


def test_summary_figures() -> None:
    count = CountSummary(num_partitions=4, per_partition=(10, 30, 0, 40), hottest=())
    assert count.records == 80 and count.mean == 20.0 and count.max_over_mean == 2.0
    assert CountSummary(2, (0, 0), ()).max_over_mean == 0.0
    moved = MovedShare(6, 12, keys_moved=5, distinct_keys=10, records_moved=30, keyed_records=120)
    assert moved.keys_moved_share == 0.5 and moved.records_moved_share == 0.25
    assert moved.to_json()["from"] == 6 and moved.to_json()["to"] == 12


@pytest.mark.parametrize(("a", "b"), [(6, 12), (12, 16), (12, 6), (5, 7), (1, 3), (10, 25)])
def test_uniform_moved_share_counts_residues_over_one_period(a: int, b: int) -> None:
    period = a * b  # a multiple of lcm(a, b): the pattern of h % a and h % b repeats within it
    moved = sum(1 for h in range(period) if h % a != h % b) / period
    share = MovedShare(a, b, 0, 1, 0, 1).uniform_keys_moved_share
    assert share == pytest.approx(moved)


def test_importing_the_packages_loads_no_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kgroup.spark, kgroup.spark.partitioning.job, kgroup.spark.demo.events, kgroup.demo, "
        "kgroup.demo.partitioning, kgroup.report, kgroup.cli.demo, kgroup.cli.partition_input\n"
        "heavy = sorted(m for m in ('pyspark', 'matplotlib', 'numba', 'pyarrow') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


@pytest.mark.parametrize(
    "master", ["local", "local[*]", "local[2]", "local[4,2]", "spark://h:7077", "yarn", "k8s://h:443"]
)
def test_master_urls_spark_accepts(master: str) -> None:
    check_master(master)


@pytest.mark.parametrize("master", ["", "bogus", "local[x]", "spark://", "mesos://h:5050", " local[*]"])
def test_other_master_urls_are_refused_before_spark_starts(master: str) -> None:
    with pytest.raises(KgroupError, match=r"is not a Spark master URL; use local\[\*\], local\[N\]"):
        check_master(master)
