"""``kgroup partition --input`` on real local Spark: every record's partition checked against the scalar
murmur2, counts and movement against an independent pure-Python computation, and bad input."""

from __future__ import annotations

import json
import struct
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kgroup.cli import main
from kgroup.partitioning import partition_for_key

pytestmark = pytest.mark.spark


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    captured = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), captured.out, captured.err


def expected_hottest(
    per_partition: list[int], keyed: list[str], n: int, hottest: int = 3, top: int = 5
) -> list[dict[str, Any]]:
    """The hottest partitions and their top keys, computed without Spark."""
    order = sorted(range(n), key=lambda p: (-per_partition[p], p))[:hottest]
    by_partition: dict[int, Counter[str]] = defaultdict(Counter)
    for key in keyed:
        by_partition[partition_for_key(key, n)][key] += 1
    out = []
    for p in order:
        if per_partition[p] == 0:
            continue
        ranked = sorted(by_partition[p].items(), key=lambda kv: (-kv[1], kv[0].encode()))[:top]
        out.append(
            {
                "partition": p,
                "records": per_partition[p],
                "top_keys": [{"key": k, "records": c} for k, c in ranked],
            }
        )
    return out


def test_parquet_every_record_counts_moves_and_output(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys: list[str | None] = []
    for i in range(1_500):
        if i % 11 == 0:
            keys.append(None)
        elif i % 13 == 0:
            keys.append(["", "é-ü", "日本", "k\x00z"][i % 4])
        else:
            keys.append(f"user-{(i * 7919) % 97}")
    source = tmp_path / "events.parquet"
    pq.write_table(pa.table({"user": keys, "row": list(range(len(keys)))}), source)
    out_dir = tmp_path / "out"

    code, out, err = run_cli(
        capsys,
        "partition", "-p", "6,12", "--input", str(source), "--key-column", "user",
        "--output", str(out_dir), "--null-key-strategy", "uniform-sticky", "--seed", "3", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    keyed = [k for k in keys if k is not None]
    assert data["records"] == 1_500
    assert data["keyed_records"] == len(keyed)
    assert data["keyless_records"] == 1_500 - len(keyed)
    assert data["distinct_keys"] == len(set(keyed))
    assert data["format"] == "parquet" and data["key_type"] == "string"
    assert data["output"] == str(out_dir)

    # Every record read back from the output: keyed partitions equal the scalar murmur2 answer.
    rows = spark.read.parquet(str(out_dir)).collect()
    assert len(rows) == 1_500
    assert sorted(r["row"] for r in rows) == list(range(1_500))
    actual: dict[int, Counter[int]] = {6: Counter(), 12: Counter()}
    for r in rows:
        assert r["user"] == keys[r["row"]]
        if r["user"] is not None:
            assert r["partition_6"] == partition_for_key(r["user"], 6)
            assert r["partition_12"] == partition_for_key(r["user"], 12)
        else:
            assert 0 <= r["partition_6"] < 6 and 0 <= r["partition_12"] < 12
        actual[6][r["partition_6"]] += 1
        actual[12][r["partition_12"]] += 1
    # The layout: one folder per partition of the first count.
    folders = sorted(p.name for p in out_dir.iterdir() if p.is_dir())
    assert folders == [f"partition_6={p}" for p in range(6) if actual[6][p]]

    for n in (6, 12):
        summary = data["counts"][str(n)]
        per_partition = summary["per_partition"]
        assert per_partition == [actual[n][p] for p in range(n)]
        keyed_only = Counter(partition_for_key(k, n) for k in keyed)
        assert all(per_partition[p] >= keyed_only[p] for p in range(n))
        assert summary["max_over_mean"] == pytest.approx(max(per_partition) / (1_500 / n))
        assert summary["hottest"] == expected_hottest(per_partition, keyed, n)

    moved_keys = {k for k in keyed if partition_for_key(k, 6) != partition_for_key(k, 12)}
    [moved] = data["moved"]
    assert (moved["from"], moved["to"]) == (6, 12)
    assert moved["keys_moved"] == len(moved_keys)
    assert moved["keys_moved_share"] == pytest.approx(len(moved_keys) / len(set(keyed)))
    assert moved["records_moved"] == sum(1 for k in keyed if k in moved_keys)
    assert moved["records_moved_share"] == pytest.approx(moved["records_moved"] / len(keyed))


def test_a_long_key_column_with_its_serializer(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--key-serializer long``: each key partitioned as Kafka's LongSerializer writes it (8 bytes,
    big-endian), counts checked against the scalar murmur2; a null key is keyless."""
    keys = [None if i % 9 == 0 else (i * 7_919 - 50_000) * (2**33 if i % 5 == 0 else 1) for i in range(600)]
    source = tmp_path / "longs.parquet"
    pq.write_table(pa.table({"id": pa.array(keys, pa.int64())}), source)
    code, out, err = run_cli(
        capsys, "partition", "-p", "6", "--input", str(source), "--key-column", "id",
        "--key-serializer", "long", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    keyed = [k for k in keys if k is not None]
    assert data["key_type"] == "bigint as long"
    assert data["keyed_records"] == len(keyed) and data["keyless_records"] == len(keys) - len(keyed)
    assert data["distinct_keys"] == len(set(keyed))
    keyed_only = Counter(partition_for_key(struct.pack(">q", k), 6) for k in keyed)
    per_partition = data["counts"]["6"]["per_partition"]
    assert sum(per_partition) == len(keys)
    assert all(per_partition[p] >= keyed_only[p] for p in range(6))
    top = data["counts"]["6"]["hottest"][0]
    for entry in top["top_keys"]:  # each reported key sits in the partition it is reported under
        assert partition_for_key(struct.pack(">q", int(entry["key"])), 6) == top["partition"]


def test_csv_folder_human_output(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "csv"
    folder.mkdir()
    # Keys that look like numbers stay strings: "007" and "7" are different keys.
    all_keys = ["007", "7", "a,b", "x y"] * 30 + ["hot"] * 100
    for part in range(2):
        lines = ["id,key"] + [
            f'{i},"{k}"' for i, k in enumerate(all_keys) if i % 2 == part
        ]  # a quoted field may hold the separator
        (folder / f"part-{part}.csv").write_text("\n".join(lines) + "\n")
    (folder / "_SUCCESS").write_text("")

    code, out, err = run_cli(
        capsys, "partition", "-p", "5", "--input", str(folder), "--key-column", "key", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["format"] == "csv" and data["records"] == len(all_keys) and data["keyless_records"] == 0
    expected = Counter(partition_for_key(k, 5) for k in all_keys)
    per_partition = data["counts"]["5"]["per_partition"]
    assert per_partition == [expected[p] for p in range(5)]
    assert data["counts"]["5"]["hottest"] == expected_hottest(per_partition, all_keys, 5)
    assert data["moved"] == []

    out_dir = tmp_path / "by-partition"
    code, out, err = run_cli(
        capsys,
        "partition",
        "-p",
        "5",
        "--input",
        str(folder),
        "--key-column",
        "key",
        "--output",
        str(out_dir),
    )
    assert code == 0, err
    # one count: the column is "partition" and the layout partition=<p>/
    assert sorted(p.name for p in out_dir.iterdir() if p.is_dir()) == [
        f"partition={p}" for p in range(5) if expected[p]
    ]
    written = spark.read.parquet(str(out_dir)).collect()
    assert sorted(r["key"] for r in written) == sorted(all_keys)
    assert all(r["partition"] == partition_for_key(r["key"], 5) for r in written)
    text = " ".join(out.split())  # rich wraps lines at the console width
    assert f"{len(all_keys):,} records" in text
    assert "5 partitions" in text and "max/mean" in text
    assert "hot (100)" in text  # the hottest partition's top key, with its record count
    assert err == ""  # no spinner noise when stderr is not a terminal


def test_json_lines_with_null_keys(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "events.jsonl"
    records = [{"id": i, "k": (None if i % 4 == 0 else f"key-{i % 9}")} for i in range(400)]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, err = run_cli(
        capsys, "partition", "-p", "3,4", "--input", str(source), "--key-column", "k", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    keyed = [r["k"] for r in records if r["k"] is not None]
    assert data["format"] == "json"
    assert data["keyless_records"] == 100 and data["keyed_records"] == 300
    assert data["null_key_strategy"] == "adaptive"  # the CLI's default: Kafka 3.3+'s built-in behaviour
    for n in (3, 4):
        per_partition = data["counts"][str(n)]["per_partition"]
        keyed_only = Counter(partition_for_key(k, n) for k in keyed)
        assert sum(per_partition) == 400
        assert all(per_partition[p] >= keyed_only[p] for p in range(n))
    moved = data["moved"][0]
    assert moved["keys_moved"] == sum(
        1 for k in set(keyed) if partition_for_key(k, 3) != partition_for_key(k, 4)
    )


def _one_line_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_cli(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.startswith("kgroup: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_bad_input_gives_one_line_and_exit_2(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"key": ["a", "b"], "n": [1, 2]}), good)
    ints = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"key": pa.array([1, 2], pa.int64())}), ints)
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"key": pa.array([], pa.string())}), empty)
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"this is not parquet at all")
    no_data = tmp_path / "nodata"
    no_data.mkdir()
    (no_data / "README").write_text("x")
    taken = tmp_path / "taken"
    taken.mkdir()

    cases = [
        (["--input", str(tmp_path / "missing.parquet")], "does not exist"),
        (
            ["--input", str(good), "--key-column", "nope"],
            "key column 'nope' is not in the data (columns: 'key', 'n')",
        ),
        (["--input", str(ints)], "key column 'key' has type bigint"),
        (
            ["--input", str(ints), "--key-serializer", "integer"],
            "type bigint, which Kafka's IntegerSerializer",
        ),
        (["--input", str(ints), "--key-serializer", "int32"], "--key-serializer: 'int32' is not one of"),
        (["--input", str(empty)], "holds no records"),
        (["--input", str(corrupt)], "could not read"),
        (["--input", str(no_data)], "no .parquet, .csv or .json files"),
        (["--input", str(good), "--format", "json"], "not JSON lines"),
        (
            ["--input", str(good), "--output", str(taken)],
            "already exists; remove it or choose a new directory",
        ),
        (
            ["--input", str(good), "--null-key-strategy", "zzz"],
            "--null-key-strategy: 'zzz' is not a null-key strategy; choose one of: adaptive",
        ),
    ]
    for extra, needle in cases:
        err = _one_line_error(capsys, "partition", "-p", "4", *extra)
        assert needle in err, (extra, err)
