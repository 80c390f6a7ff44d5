"""`kgroup serve-ctl`: stop and start one broker of a running `kgroup serve --brokers 3` while a real
consumer group keeps consuming and committing through the coordinator's move and back."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.broker.groupclients import Owned, confluent_consumer, wait_until
from tests.broker.procs import BrokerProcess

from kgroup.broker.control import CONTROL_FILE
from kgroup.cli import main
from kgroup.client.lag import describe_group_lag
from kgroup.group.discovery import coordinator_partition

TOPIC, GROUP, PARTITIONS = "orders", "billing", 3


def ctl_process(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kgroup serve-ctl`` as a user runs it: its own process."""
    return subprocess.run(
        [sys.executable, "-m", "kgroup", "serve-ctl", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def kgroup_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """A ``kgroup`` command through the console script's entry point in this process (its exit status,
    stdout and stderr): the same code as the command without a second of interpreter and CLI start-up."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    return subprocess.CompletedProcess(args, code if isinstance(code, int) else 0, out, err)


def ctl(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kgroup serve-ctl`` in this process (:func:`kgroup_in_process`); each test also runs the real
    process once (:func:`ctl_process`)."""
    return kgroup_in_process(capsys, "serve-ctl", "--data-dir", str(data_dir), *args)


def produce(bootstrap: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for n in range(count):
        producer.produce(TOPIC, key=f"k{n}".encode(), value=b"v")
    assert producer.flush(30) == 0


def caught_up(bootstrap: str) -> bool:
    """Every partition has a committed offset equal to its log end offset."""
    try:
        lag = asyncio.run(describe_group_lag(bootstrap, GROUP, timeout_s=5))
    except Exception:
        return False
    rows = [r for r in lag.rows if r.topic == TOPIC]
    return len(rows) == PARTITIONS and all(r.lag == 0 and r.log_end_offset for r in rows)


def refuses(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return False
    except OSError:
        return True


def test_stop_and_start_the_coordinator_while_a_group_consumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = BrokerProcess(tmp_path, "--brokers", "3", "--topic", f"{TOPIC}:{PARTITIONS}")
    try:
        assert (tmp_path / CONTROL_FILE).is_file()
        addresses = broker.bootstrap_servers.split(",")
        coordinator = coordinator_partition(GROUP, 50) % 3  # the seed rule: partition i led by broker i % 3
        status = ctl(capsys, tmp_path, "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.splitlines() == [f"broker {n} up {addresses[n]}" for n in range(3)]

        owned = Owned()
        consumer = confluent_consumer(
            broker.bootstrap_servers,
            GROUP,
            TOPIC,
            owned,
            "c",
            **{"auto.commit.interval.ms": 200},
        )
        consumer.start()
        try:
            produce(broker.bootstrap_servers, 30)
            wait_until(lambda: caught_up(broker.bootstrap_servers), 90, "the group to commit everything")

            stopped = ctl_process(tmp_path, "stop-node", str(coordinator))  # the real command
            assert stopped.returncode == 0, stopped.stderr
            assert stopped.stdout.strip() == f"broker {coordinator} stopped"
            assert f"broker {coordinator} down" in ctl(capsys, tmp_path, "status").stdout
            assert refuses(addresses[coordinator])
            others = ",".join(a for n, a in enumerate(addresses) if n != coordinator)
            produce(others, 30)
            wait_until(lambda: caught_up(others), 90, "commits through the new coordinator")

            started = ctl(capsys, tmp_path, "start-node", str(coordinator))
            assert started.returncode == 0, started.stderr
            assert started.stdout.strip() == f"broker {coordinator} listening on {addresses[coordinator]}"
            assert (
                f"broker {coordinator} up {addresses[coordinator]}" in ctl(capsys, tmp_path, "status").stdout
            )
            assert not refuses(addresses[coordinator])
            produce(broker.bootstrap_servers, 30)
            wait_until(lambda: caught_up(broker.bootstrap_servers), 90, "commits after the restart")
            assert owned.snapshot()["c"] == frozenset(range(PARTITIONS))
            # `kgroup lag` (the command, in-process) against the `kgroup serve` process: all caught up
            lag = kgroup_in_process(
                capsys, "lag", "--bootstrap-servers", broker.bootstrap_servers, "--group", GROUP
            )
            assert lag.returncode == 0, lag.stderr
            rows = [line.split() for line in lag.stdout.strip().splitlines()]
            assert rows[0][:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
            assert sorted(int(r[2]) for r in rows[1:]) == list(range(PARTITIONS))
            assert sum(int(r[4]) for r in rows[1:]) == 90 and all(
                r[5] == "0" and r[3] == r[4] for r in rows[1:]
            )
        finally:
            consumer.join_checked()
    finally:
        assert broker.terminate() == 0
    assert not (tmp_path / CONTROL_FILE).exists()


def test_bad_commands_are_one_line_and_the_broker_keeps_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = ctl_process(tmp_path, "status")  # the real command
    assert missing.returncode == 2 and "--data-dir" in missing.stderr and missing.stderr.count("\n") == 1
    broker = BrokerProcess(tmp_path, "--brokers", "2")
    try:
        cases = [
            (("reboot", "1"), "ACTION"),
            (("stop-node",), "NODE: missing"),
            (("stop-node", "7"), "is not a broker of this cluster"),
            (("start-node", "1"), "already running"),
            (("status", "1"), "status takes no node"),
        ]
        for args, needle in cases:
            done = ctl(capsys, tmp_path, *args)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert done.stderr.startswith("kgroup: error: ") and needle in done.stderr, (args, done.stderr)
            assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert ctl(capsys, tmp_path, "stop-node", "1").returncode == 0
        again = ctl(capsys, tmp_path, "stop-node", "1")
        assert again.returncode == 2 and "already stopped" in again.stderr
        # a raw garbage line: answered with an error, the channel keeps serving
        host, _, port = (tmp_path / CONTROL_FILE).read_text().strip().rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"\xff\x00 nonsense\n")
            assert sock.recv(4096).startswith(b"error: unknown command")
        assert ctl(capsys, tmp_path, "status").stdout.splitlines()[1] == "broker 1 down"
        assert broker.proc.poll() is None
    finally:
        assert broker.terminate() == 0


_PROBE = """
import sys
from pathlib import Path
from kgroup.cli.serve_ctl import send_command
from kgroup.model import KgroupError
try:
    send_command(Path(sys.argv[1]), "status")
except KgroupError:
    pass
print(sorted(m for m in sys.modules if m.startswith("kgroup.broker")))
"""


def test_serve_ctl_does_not_import_the_broker(tmp_path: Path) -> None:
    """`kgroup serve-ctl` is a one-line client: it runs without the broker's handlers and schemas."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_single_broker_answers_status_and_says_what_stop_node_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: `serve-ctl` against a running one-broker `kgroup serve` said "no running kgroup serve
    uses DIR"; it has a control channel too, answers status, and says stop-node needs --brokers N > 1."""
    broker = BrokerProcess(tmp_path)
    try:
        status = ctl(capsys, tmp_path, "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.splitlines() == [f"broker 0 up {broker.bootstrap_servers}"]
        for action in ("stop-node", "start-node"):
            done = ctl(capsys, tmp_path, action, "0")
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert done.stderr.startswith(f"kgroup: error: {action}: this kgroup serve runs one broker")
            assert "--brokers N` with N > 1" in done.stderr
        assert broker.proc.poll() is None
    finally:
        assert broker.terminate() == 0
    assert not (tmp_path / CONTROL_FILE).exists()
