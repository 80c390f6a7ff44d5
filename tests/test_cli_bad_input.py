"""Bad input met as a user meets it (issue 10): each case is one line ``kgroup: error: …`` naming
the field and the fix, exit status 2, no traceback — and none of them starts Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgroup.cli import main

EXAMPLES = Path(__file__).parents[1] / "examples"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out, err


def one_line_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("kgroup: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0].removeprefix("kgroup: error: ")


def group_file(tmp_path: Path, data: Any, name: str = "g.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def _group(partitions: int = 6, owned: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "assignor": "range",
        "input": {
            "topics": [{"name": "t1", "partitions": partitions}],
            "members": [
                {"memberId": "a", "topics": ["t1"], "owned": owned or []},
                {"memberId": "b", "topics": ["t1"]},
            ],
        },
        **extra,
    }


# --- kgroup assign --------------------------------------------------------------------------------


def test_assign_owned_partition_beyond_the_topic_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = group_file(tmp_path, _group(owned=["t1-99"]))
    assert one_line_error(capsys, "assign", path) == (
        f"{path}: input.members['a'].owned: t1-99 does not exist ('t1' has 6 partitions, numbered 0..5); "
        "fix or drop it"
    )


def test_assign_without_topics_is_an_error_like_without_members(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    no_topics = group_file(tmp_path, {"assignor": "range", "input": {"members": []}}, "t.json")
    assert one_line_error(capsys, "assign", no_topics).startswith(
        f"{no_topics}: input.topics: is missing; add"
    )
    no_members = group_file(tmp_path, {"assignor": "range", "input": {"topics": []}}, "m.json")
    assert one_line_error(capsys, "assign", no_members).startswith(f"{no_members}: input.members: is missing")


@pytest.mark.parametrize(
    ("partitions", "needle"),
    [
        (10**12, "is 1000000000000, beyond Java's int; give at most 2,147,483,647"),
        (2**31 - 1, "hold 2,147,483,647 partitions, more than kgroup assigns in one run (10,000,000)"),
    ],
)
def test_assign_partition_counts_are_bounded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, partitions: int, needle: str
) -> None:
    message = one_line_error(capsys, "assign", group_file(tmp_path, _group(partitions)))
    assert "input.topics[0].partitions: " in message and needle in message


def test_assign_deeply_nested_json_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = group_file(tmp_path, "[" * 200_000 + "]" * 200_000)
    assert one_line_error(capsys, "assign", path) == (
        f"{path}: JSON nested too deeply to read; give an assignment file (see docs/assignors.md)"
    )
    assert one_line_error(capsys, "assign", "--check", path).endswith(
        "JSON nested too deeply to read; give an assignment file (see docs/assignors.md)"
    )


def test_assign_check_of_an_uncheckable_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    malformed = group_file(tmp_path, "{oops", "bad.json")
    assert one_line_error(capsys, "assign", "--check", malformed).startswith(
        f"{malformed}: malformed JSON at line 1 column 2"
    )
    no_expected = group_file(tmp_path, _group(), "plain.json")
    assert one_line_error(capsys, "assign", "--check", no_expected).startswith(
        f"{no_expected}: 'expected' is missing; add Kafka's answer"
    )


def test_assign_check_of_a_folder_without_vectors_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert one_line_error(capsys, "assign", "--check", str(tmp_path)) == (
        f"--check: no consumer-assignor vectors under {tmp_path}; give a vector file or a folder of them, "
        "e.g. tests/vectors"
    )


def test_assign_heading_counts_withheld_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "assign", str(EXAMPLES / "assign" / "group.json"))
    assert code == 0
    first = out.splitlines()[0]
    assert first == (
        "cooperative-sticky: 6 of 9 subscribed partitions over 3 members; 3 withheld (they change owner, "
        "so the follow-up rebalance assigns them)"
    )


def test_assign_large_groups_are_summarised_with_the_full_table_one_flag_away(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    members = [{"memberId": f"m{i:04d}", "topics": ["t1"]} for i in range(1200)]
    data = {
        "assignor": "range",
        "input": {"topics": [{"name": "t1", "partitions": 2400}], "members": members},
    }
    path = group_file(tmp_path, data)
    code, out, _ = run(capsys, "assign", path)
    assert code == 0
    assert "m0049" in out and "m0050" not in out
    assert "… 1,150 more members not shown (of 1,200): --full prints them all, --json too" in out
    code, out, _ = run(capsys, "assign", path, "--full")
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("m0") or line.startswith("m1")]
    assert len(rows) == 1200 and rows[-1] == ["m1199", "2", "t1[2398-2399]"]  # plain text beyond 500 rows


# --- kgroup place ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--brokers", "-1,2,3"),
            "--brokers: -1 is not a broker id (Kafka's node.id is 0..2,147,483,647); fix it",
        ),
        (
            ("--brokers", "1,2,2147483648"),
            "--brokers: 2147483648 is not a broker id (Kafka's node.id is 0..2,147,483,647); fix it",
        ),
        (
            ("--brokers", "1,2,3", "--racks", "a,b,c", "--rule", "seed"),
            "--racks: the seeds' rule ignores racks; drop --racks or use --rule kafka",
        ),
    ],
)
def test_place_rejects_what_kafka_would_not_accept(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    assert one_line_error(capsys, "place", *args, "-p", "3", "-r", "1") == message


def test_place_refuses_a_seed_java_cannot_hold(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_error(capsys, "place", "-b", "1,2,3", "-p", "3", "-r", "2", "--seed", str(2**63)) == (
        f"--seed: {2**63} does not fit Java's long; give a smaller seed"
    )


def test_place_refuses_more_partitions_than_its_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_error(capsys, "place", "-b", "1,2,3", "-p", "20000000", "-r", "2") == (
        "--partitions: 20,000,000 is more than kgroup places in one run (1,000,000, already beyond the "
        "partitions a Kafka cluster holds); give fewer"
    )


def test_place_summarises_a_long_table_and_prints_it_all_with_full(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "place", "-b", "1,2,3", "-p", "2000", "-r", "2")
    assert code == 0
    assert "… 1,950 more partitions not shown (of 2,000): --full prints them all, --json too" in out
    code, out, _ = run(capsys, "place", "-b", "1,2,3", "-p", "2000", "-r", "2", "--full")
    assert code == 0
    _, out_json, _ = run(capsys, "place", "-b", "1,2,3", "-p", "2000", "-r", "2", "--json")
    assignment = json.loads(out_json)["assignment"]
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert len(assignment) == 2000
    assert all(rows[p] == ",".join(map(str, replicas)) for p, replicas in assignment.items())


# --- kgroup partition -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option",
    [
        ("--output", "out"),
        ("--null-key-strategy", "bogus"),
        ("--key-column", "c"),
        ("--seed", "3"),
        ("--master", "local[2]"),
        ("--format", "csv"),
    ],
)
def test_partition_input_options_without_input_are_errors(
    capsys: pytest.CaptureFixture[str], option: tuple[str, str]
) -> None:
    assert one_line_error(capsys, "partition", "-p", "6", *option, "key") == (
        f"{option[0]}: only applies with --input PATH; drop it or add --input"
    )


def _strategies() -> str:
    """The null-key strategies a message lists: the four built-in ones (plus any a test registered),
    never the keyed partitioner."""
    from kgroup.partitioning.partitioners.api import null_key_strategy_names

    names = null_key_strategy_names()
    assert {"adaptive", "legacy-round-robin", "round-robin", "uniform-sticky"} <= set(names)
    assert "keyed" not in names
    return ", ".join(names)


def test_partition_input_is_validated_before_spark(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("key\na\n")
    assert (
        one_line_error(capsys, "partition", "-p", "6", "--input", str(data), "--null-key-strategy", "keyed")
        == f"--null-key-strategy: 'keyed' is not a null-key strategy; choose one of: {_strategies()}"
    )
    assert one_line_error(capsys, "partition", "-p", "2147483647", "--input", str(data)).startswith(
        "--partitions: 2,147,483,647 is more than a --input job counts (1,000,000"
    )


def test_partition_keys_that_are_not_utf8_are_hashed_as_their_bytes() -> None:
    """argv bytes that are not UTF-8 (``$'\\xff\\xfe'``) are the key's bytes, as --hex fffe gives."""
    from kgroup.partitioning import murmur2

    result = subprocess.run(
        [sys.executable, "-m", "kgroup", "partition", "-p", "6", "--json", b"\xff\xfe"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    row = json.loads(result.stdout)["keys"][0]
    assert row == {
        "key": "\\xff\\xfe",
        "keyHex": "fffe",
        "partition": (murmur2(b"\xff\xfe") & 0x7FFFFFFF) % 6,
        "murmur2": murmur2(b"\xff\xfe"),
    }
    table = subprocess.run(
        [sys.executable, "-m", "kgroup", "partition", "-p", "6", b"\xff\xfe"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert table.returncode == 0 and b"\\xff\\xfe" in table.stdout and table.stderr == b""


# --- kgroup demo (validated before Spark starts) ------------------------------------------------


def test_demo_null_key_strategy_keyed_fails_before_spark(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_error(capsys, "demo", "--events", "10", "--null-key-strategy", "keyed") == (
        f"null-key-strategy: 'keyed' is not a null-key strategy; choose one of: {_strategies()}"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--partitions", "2147483648"),
            "partitions: 2147483648; give a partition count from 1 to 1,000,000 (the demo counts every "
            "partition's records)",
        ),
        (("--seed", "-1"), "seed: -1; give a whole number from 0 to 9,223,372,036,854,775,807"),
        (("--report", "/proc/kgroup-report"), "--report: cannot write to /proc/kgroup-report"),
        (("--master", "nowhere"), "master: 'nowhere' is not a Spark master URL"),
    ],
)
def test_demo_options_fail_before_spark_starts(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    import pyspark.sql

    before = pyspark.sql.SparkSession.getActiveSession()  # the suite's shared session, if it runs
    assert one_line_error(capsys, "demo", "--events", "10", *args).startswith(message)
    assert pyspark.sql.SparkSession.getActiveSession() is before  # no session was started


# --- kgroup simulate ------------------------------------------------------------------------------


def test_simulate_binary_file_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    assert one_line_error(capsys, "simulate", str(path)) == (
        f"scenario: '{path}' is not UTF-8 text (byte 128); give a scenario YAML file"
    )
    path.write_bytes(b"duration_ms: 1000\x00\x01")
    assert one_line_error(capsys, "simulate", str(path)) == (
        f"scenario: '{path}' is binary (it holds NUL bytes); give a scenario YAML file"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--static", "--dynamic"),
            "--static and --dynamic: choose one (or neither, to keep the file's own)",
        ),
        (("--seeds", "3"), "--seeds: only applies with --compare; add --compare or drop it"),
        (("--engine", "local"), "--engine: only applies with --compare; add --compare or drop it"),
        (("--master", "local[2]"), "--master: only applies with --compare; add --compare or drop it"),
        (
            ("--compare", "--engine", "local", "--master", "local[2]"),
            "--master: only applies with --engine spark; drop it",
        ),
        (("--report", "/proc/kgroup-report"), "--report: cannot write to /proc/kgroup-report"),
    ],
)
def test_simulate_contradictory_or_unused_options_are_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    assert one_line_error(capsys, "simulate", str(EXAMPLES / "crash.yaml"), *args).startswith(message)


def test_simulate_duplicate_yaml_key_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        "duration_ms: 600000\ntopics: {t: 2}\nconsumers: [{id: a, topics: [t]}]\nduration_ms: 1000\n"
    )
    assert one_line_error(capsys, "simulate", str(path)) == (
        "scenario: key 'duration_ms' appears twice in one mapping at line 4; keep one (YAML would silently "
        "take the last)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--static",), "--static: does not apply to --campaign (each seed draws its own); drop it"),
        (("--seeds", "2"), "--seeds: does not apply to --campaign (each seed draws its own); drop it"),
        (("--report", "out"), "--report: does not apply to --campaign (each seed draws its own); drop it"),
        (
            ("--engine", "local", "--master", "local[2]"),
            "--master: only applies with --engine spark; drop it",
        ),
    ],
)
def test_simulate_campaign_options_it_does_not_read_are_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    assert one_line_error(capsys, "simulate", "--campaign", "2", *args) == message


def test_simulate_warns_about_events_that_do_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "noop.yaml"
    path.write_text(
        "duration_ms: 20000\ntopics: {t: 2}\nconsumers: [{count: 3, prefix: c, topics: [t]}]\n"
        "events:\n  - {at_ms: 1000, kind: crash, consumer: c1}\n"
        "  - {at_ms: 2000, kind: crash, consumer: c1}\n"
        "  - {at_ms: 3000, kind: scale, count: -10}\n"
    )
    code, out, err = run(capsys, "simulate", str(path), "--json")
    assert code == 0
    assert err.splitlines() == [
        "kgroup: warning: crash of 'c1' at 2000 ms does nothing: it is crashed earlier and not started since",
        "kgroup: warning: scale -10 at 3000 ms stops at most 3: only 3 consumer(s) are deployed then",
    ]
    assert json.loads(out)["metrics"]["invariant_violations"] == []


# --- kgroup serve ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("orders", "'orders' has no partition count; write NAME:PARTITIONS, e.g. orders:12"),
        (":3", "has no name"),
        ("orders:x", "'x' is not a partition count"),
        ("orders:0", "at least 1"),
    ],
)
def test_serve_topic_needs_a_partition_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, needle: str
) -> None:
    """Issue 31: `--topic orders` silently made a one-partition topic; it is refused before the broker
    starts, as a bad count is."""
    message = one_line_error(capsys, "serve", "--port", "0", "--data-dir", str(tmp_path), "--topic", spec)
    assert message.startswith(f"--topic: {spec!r}") and needle in message, message
    assert not list(tmp_path.iterdir())  # nothing was started or written
