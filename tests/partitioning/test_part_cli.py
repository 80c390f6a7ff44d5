"""`kgroup partition` (keys mode) and `kgroup place`: output, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgroup.cli import main
from kgroup.partitioning import murmur2, partition_for_key

VECTORS = Path(__file__).parents[1] / "vectors"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out, err


def assert_one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kgroup: error: ")
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err


def test_partition_keys_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "partition", "--partitions", "6", "--json", "foobar", "", "héllo")
    assert code == 0
    data = json.loads(out)
    assert data["partitions"] == 6
    assert data["keys"] == [
        {"key": k, "partition": partition_for_key(k, 6), "murmur2": murmur2(k)}
        for k in ("foobar", "", "héllo")
    ]
    assert data["keys"][0] == {"key": "foobar", "partition": 0, "murmur2": -790332482}  # Kafka's vector


def test_partition_several_counts_and_hex(capsys: pytest.CaptureFixture[str]) -> None:
    vector: dict[str, Any] = json.loads((VECTORS / "murmur2" / "murmur2.json").read_text())[0]
    key_hex = vector["input"]["keyHex"]
    code, out, _ = run(capsys, "partition", "-p", "6,12,1000", "--hex", "--json", key_hex)
    assert code == 0
    data = json.loads(out)
    assert data["partitions"] == [6, 12, 1000]
    row = data["keys"][0]
    assert row["murmur2"] == vector["expected"]["murmur2"]
    assert row["partition"] == {n: vector["expected"]["partitions"][n] for n in ("6", "12", "1000")}


def test_partition_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "partition", "--partitions", "6,12", "foobar")
    assert code == 0
    assert "partition of 6" in out and "partition of 12" in out
    row = next(line for line in out.splitlines() if "foobar" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells == ["foobar", "-790332482", "0", "6"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("partition", "--partitions", "x", "k"), "--partitions: 'x' is not a whole number"),
        (("partition", "--partitions", "0", "k"), "--partitions: 0; a topic has at least 1 partition"),
        (("partition", "--partitions", "6,6", "k"), "--partitions: 6 is listed twice"),
        (("partition", "k"), "--partitions: missing"),
        (("partition", "-p", "3"), "no keys; give KEY arguments, or --input PATH"),
        (("partition", "-p", "3", "--hex", "abc"), "KEY 'abc': not valid hex bytes"),
        (("partition", "-p", "3", "--hex", "zz"), "KEY 'zz': not valid hex bytes"),
        (("partition", "-p", "3", "--input", "x.parquet", "k"), "KEY and --input both given"),
        (("partition", "-p", "3", "--input", "x", "--format", "xml"), "--format: 'xml' is not one of"),
    ],
)
def test_partition_bad_input(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str) -> None:
    code, out, err = run(capsys, *args)
    assert_one_line_error(code, err, needle)
    assert out == ""


def test_partition_input_mode_is_delegated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import kgroup.cli.partition_input as partition_input

    seen: dict[str, Any] = {}

    def fake_run_input_mode(**kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(partition_input, "run_input_mode", fake_run_input_mode)
    code, _, _ = run(
        capsys,
        "partition",
        "--input",
        str(tmp_path / "in.parquet"),
        "--partitions",
        "6,12",
        "--key-column",
        "user",
        "--null-key-strategy",
        "uniform-sticky",
        "--seed",
        "7",
        "--format",
        "parquet",
        "--key-serializer",
        "long",
        "--json",
    )
    assert code == 0
    assert seen == {
        "input_path": tmp_path / "in.parquet",
        "key_column": "user",
        "partition_counts": [6, 12],
        "output_dir": None,
        "null_key_strategy": "uniform-sticky",
        "seed": 7,
        "master": "local[*]",
        "input_format": "parquet",
        "json_output": True,
        "key_serializer": "long",
    }


def test_place_json_kafka_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """The default: Kafka 4.4.0's StripedReplicaPlacer with java.util.Random(0) — the answer Kafka's own
    class gives (asked through the oracle), partition after partition one broker on."""
    code, out, _ = run(capsys, "place", "--brokers", "1,2,3,4", "--partitions", "6", "-r", "3", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["rule"] == "kafka"
    assert data["assignment"] == {
        "0": [3, 4, 1], "1": [4, 1, 2], "2": [1, 2, 3], "3": [2, 3, 4], "4": [3, 1, 4], "5": [1, 4, 2]
    }  # fmt: skip
    code, out, _ = run(capsys, "place", "-b", "1,2,3", "-p", "4", "-r", "3", "--fenced", "3", "--json")
    data = json.loads(out)
    assert [r[-1] for r in data["assignment"].values()] == [3, 3, 3, 3]  # the fenced broker last
    assert data["brokerLoad"]["3"] == {"rack": None, "fenced": True, "replicas": 4, "leaders": 0}
    code, out, _ = run(capsys, "place", "-b", "1,2,3", "-p", "4", "-r", "3", "--fenced", "3")
    assert code == 0 and "fenced" in out


def test_place_json_adminutils_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "place", "--brokers", "1,2,3,4", "--partitions", "6", "--replication-factor", "3",
        "--rule", "adminutils", "--start-index", "0", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["assignment"]["0"] == [1, 2, 3]
    assert data["assignment"]["4"] == [1, 3, 4]  # the follower shift after the leaders wrap
    assert sum(v["leaders"] for v in data["brokerLoad"].values()) == 6
    assert sum(v["replicas"] for v in data["brokerLoad"].values()) == 18


def test_place_racks_and_seed_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "place", "-b", "0,1,2,3,4,5", "--racks", "rack1,rack3,rack3,rack2,rack2,rack1",
        "-p", "6", "-r", "3", "--rule", "adminutils", "--start-index", "0", "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["assignment"]["1"] == [3, 1, 5]  # Kafka's javadoc example
    code, out, _ = run(capsys, "place", "-b", "3,1,2", "-p", "4", "-r", "2", "--rule", "seed", "--json")
    assert code == 0
    assert json.loads(out)["assignment"] == {"0": [1, 2], "1": [2, 3], "2": [3, 1], "3": [1, 2]}
    code, out, _ = run(capsys, "place", "-b", "1,2,3", "-p", "3", "-r", "2")
    assert code == 0
    assert "Per broker" in out and "leaders" in out


def test_place_random_start_is_seeded(capsys: pytest.CaptureFixture[str]) -> None:
    outs = [
        run(capsys, "place", "-b", "1,2,3,4,5", "-p", "5", "-r", "2", "--seed", "3", "--json")[1]
        for _ in "ab"
    ]
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "3", "--rule", "adminutils"),
            "replication_factor: 3 larger than available brokers: 2",
        ),
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "3"),
            "--replication-factor: The target replication factor of 3 cannot be reached because only 2 "
            "broker(s) are registered",
        ),
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "1", "--fenced", "1,2"),
            "--replication-factor: All brokers are currently fenced",
        ),
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "1", "--fenced", "3"),
            "--fenced: broker 3 is not in --brokers",
        ),
        (("place", "-b", "1,2", "-p", "3", "-r", "1", "--fenced", "x"), "--fenced: 'x' is not a broker id"),
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "1", "--fenced", "1", "--rule", "seed"),
            "--fenced: the seeds' rule has no fenced brokers",
        ),
        (
            ("place", "-b", "1,2", "-p", "3", "-r", "1", "--start-index", "0"),
            "--start-index/--start-partition-id apply to --rule adminutils only",
        ),
        (
            ("place", "-b", "1,2,3", "--racks", "a,,b", "-p", "3", "-r", "2", "--rule", "adminutils"),
            "not all brokers have rack information",
        ),
        (("place", "-b", "1,2,3", "--racks", "a,b", "-p", "3", "-r", "2"), "--racks: 2 racks for 3 brokers"),
        (("place", "-b", "1,x", "-p", "3", "-r", "1"), "--brokers: 'x' is not a broker id"),
        (
            ("place", "-b", "1,2", "-p", "0", "-r", "1"),
            "partitions: 0; the number of partitions must be larger",
        ),
        (("place", "-b", "1,2", "-p", "2", "-r", "0"), "--replication-factor: Invalid replication factor 0"),
        (("place", "-b", "1,1", "-p", "2", "-r", "1"), "broker id 1 listed more than once"),
        (("place", "-b", "1,2", "-p", "two", "-r", "1"), "Invalid value for '--partitions'"),
        (("place", "-p", "2", "-r", "1"), "--brokers: missing"),
        (("place", "-b", "1,2", "-r", "1"), "--partitions: missing"),
        (("place", "-b", "1,2", "-p", "2", "--rule", "zk", "-r", "1"), "--rule: 'zk' is not one of"),
        (("place", "--check", "/no/such/path"), "--check: /no/such/path does not exist"),
    ],
)
def test_place_bad_input(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str) -> None:
    code, _, err = run(capsys, *args)
    assert_one_line_error(code, err, needle)


def test_place_check_all_vectors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "place", "--check", str(VECTORS / "replicas"))
    assert code == 0
    assert out.strip().splitlines()[-1] == "120/120 exact"  # 60 AdminUtils, 60 StripedReplicaPlacer
    code, out, _ = run(
        capsys, "place", "--check", str(VECTORS / "replicas" / "adminutils_000.json"), "--json"
    )
    assert code == 0
    assert json.loads(out) == {"exact": 1, "total": 1, "mismatches": []}
    code, out, _ = run(capsys, "place", "--check", str(VECTORS / "replicas" / "striped_001.json"), "--json")
    assert (code, json.loads(out)["exact"]) == (0, 1)


def test_place_check_reports_mismatches(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("adminutils_001.json", "adminutils_002.json"):
        shutil.copy(VECTORS / "replicas" / name, tmp_path / name)
    broken = json.loads((tmp_path / "adminutils_002.json").read_text())
    broken["expected"]["assignment"]["0"] = [999]
    (tmp_path / "adminutils_002.json").write_text(json.dumps(broken))
    (tmp_path / "other.json").write_text(json.dumps({"assignor": "range", "input": {}}))  # skipped
    code, out, _ = run(capsys, "place", "--check", str(tmp_path))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[-1] == "1/2 exact"
    assert lines[0].startswith("MISMATCH ") and "adminutils_002.json: partition 0" in lines[0]
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = run(capsys, "place", "--check", str(tmp_path))
    assert_one_line_error(code, err, "bad.json: not valid JSON")


def test_place_check_reports_a_striped_mismatch_and_an_error_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    vector = json.loads((VECTORS / "replicas" / "striped_000.json").read_text())
    vector["input"]["seed"] += 1  # another Random: another placement
    (tmp_path / "moved.json").write_text(json.dumps(vector))
    vector["input"]["replicationFactor"] = 10  # more replicas than brokers: Kafka refuses
    (tmp_path / "refused.json").write_text(json.dumps(vector))
    code, out, _ = run(capsys, "place", "--check", str(tmp_path))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[-1] == "0/2 exact"
    assert "moved.json: partition 0 expected" in lines[0]
    assert (
        "refused.json: expected {" in lines[1]
        and "got InvalidReplicationFactorException: The target" in lines[1]
    )


def test_subprocess_error_is_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgroup", "partition", "-p", "3", "--hex", "0g"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "kgroup: error: KEY '0g': not valid hex bytes (need an even number of 0-9a-f digits); "
        "fix it or drop --hex"
    )


def test_commands_and_library_import_without_heavy_modules() -> None:
    """numba and pyarrow load only on the first vectorised call, so `kgroup --help` stays fast."""
    probe = (
        "import sys\n"
        "import kgroup.cli.partition, kgroup.cli.place, kgroup.partitioning\n"
        "from kgroup.partitioning import partition_for_key, assign_replicas\n"
        "partition_for_key(b'k', 3); assign_replicas([1, 2], 2, 2, fixed_start_index=0)\n"
        "print(sorted(m for m in ('numba', 'pyarrow', 'pyspark', 'matplotlib') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
