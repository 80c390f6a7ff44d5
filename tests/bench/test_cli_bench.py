"""`kgroup bench assign` on tiny (scaled) cases: the JSON shapes, timeouts, one-line errors.

Timings are printed, never asserted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

KGROUP = [sys.executable, "-m", "kgroup"]
TINY = ["--scale", "0.02"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KGROUP, "bench", "assign", *args], capture_output=True, text=True,
                          timeout=300, check=False)


def test_single_cell_json_has_exactly_the_documented_keys() -> None:
    result = run("--case", "notimeout", "--assignor", "roundrobin", "--runs", "3", "--json", *TINY)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"median_ms", "runs_ms", "peak_rss_mb"}
    assert len(data["runs_ms"]) == 3
    assert all(x > 0 for x in data["runs_ms"])
    assert data["median_ms"] == statistics.median(data["runs_ms"])
    assert data["peak_rss_mb"] > 1


def test_single_cell_human_line() -> None:
    result = run("--case", "uniform", "--assignor", "range", "--runs", "1", *TINY)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("uniform range initial [kgroup]: median ")
    # scaled cases are not comparable with Java's figures, so no ratio is printed
    assert "Java" not in result.stdout


def test_all_table_json_with_kafka_python_column() -> None:
    result = run("--all", "--case", "uniform-rack", "--assignor", "range", "--assignor", "roundrobin",
                 "--runs", "1", "--json", *TINY)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["case"], r["assignor"], r["phase"]) for r in rows] == [
        ("uniform-rack", "range", "initial"),
        ("uniform-rack", "roundrobin", "initial"),
    ]
    for row in rows:
        assert row["java_ms"] > 0
        for impl in ("kgroup", "kafka-python"):
            assert row[impl]["status"] == "ok", row[impl]
            assert len(row[impl]["runs_ms"]) == 1


def test_all_table_human_output_lists_java_figures() -> None:
    result = run("--all", "--case", "notimeout", "--assignor", "roundrobin", "--runs", "1", *TINY)
    assert result.returncode == 0, result.stderr
    assert "notimeout" in result.stdout and "roundrobin" in result.stdout
    assert "24" in result.stdout  # Java's figure for the cell
    assert "notimeout roundrobin initial [kafka-python]:" in result.stderr  # progress


def test_a_cell_past_its_timeout_is_killed_and_reported() -> None:
    result = run("--all", "--case", "uniform", "--assignor", "range", "--runs", "1", "--timeout", "0.001",
                 "--impl", "kgroup", "--json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["kgroup"]["status"] == "timeout"
    assert row["kgroup"]["median_ms"] is None


def test_single_cell_timeout_is_a_one_line_error() -> None:
    result = run("--case", "uniform", "--assignor", "range", "--timeout", "0.001")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "kgroup: error: timeout: the measurement did not finish within 0.001 s; raise --timeout"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--case", "huge", "--assignor", "range"), "case: unknown value 'huge'"),
        (("--case", "uniform", "--assignor", "range", "--phase", "reassign"), "has no 'reassign' phase"),
        (("--case", "uniform", "--assignor", "nosuch"), "unknown assignor 'nosuch'"),
        (("--case", "uniform", "--assignor", "range", "--runs", "0"), "runs: 0"),
        (("--case", "uniform", "--assignor", "range", "--phase", "later"), "phase: unknown value 'later'"),
        (("--case", "uniform"), "give exactly one of each"),
        (("--case", "uniform", "--assignor", "range", "--impl", "java"), "impl: unknown value 'java'"),
        (("--all", "--assignor", "range", "--phase", "reassign"), "select no cell"),
        (("--case", "uniform", "--assignor", "range", "--scale", "2"), "scale: 2 is out of range"),
    ],
)
def test_bad_input_is_one_line_with_exit_2(args: tuple[str, ...], needle: str) -> None:
    result = run(*args, *TINY) if "--scale" not in args else run(*args)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kgroup: error: ")
    assert needle in lines[0]


def test_bench_help_lists_assign() -> None:
    result = subprocess.run([*KGROUP, "bench", "--help"], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0
    assert "assign" in result.stdout


def test_register_calls_bench_simulate_when_it_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kgroup bench simulate`` plugs in through ``kgroup.cli.bench_simulate.register_bench``."""
    import types

    import typer

    from kgroup.cli import bench

    seen: list[typer.Typer] = []
    fake = types.ModuleType("kgroup.cli.bench_simulate")
    fake.register_bench = seen.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kgroup.cli.bench_simulate", fake)
    bench.register(typer.Typer())
    assert seen == [bench.bench_app]


def test_fast_column_reads_n_a_where_there_is_no_fast_implementation() -> None:
    result = run("--all", "--case", "notimeout", "--assignor", "range", "--impl", "fast", "--json", *TINY)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["fast"]["status"] == "n/a"
