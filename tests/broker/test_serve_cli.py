"""`kgroup serve` as a process: a free port printed, graceful shutdown on SIGINT/SIGTERM, bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.broker.procs import BrokerProcess


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_cleanly_and_keeps_its_topics(tmp_path: Path, sig: signal.Signals) -> None:
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path, "--topic", "kept:3")
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("kept", value=b"v", partition=2)
        assert producer.flush(20) == 0
    finally:
        broker.proc.send_signal(sig)
        assert broker.proc.wait(timeout=30) == 0
        assert broker.proc.stdout is not None
        broker.proc.stdout.close()
    again = BrokerProcess(tmp_path)
    try:
        from confluent_kafka import Consumer

        consumer = Consumer({"bootstrap.servers": again.bootstrap_servers, "group.id": "g"})
        metadata = consumer.list_topics("kept", timeout=20)
        assert len(metadata.topics["kept"].partitions) == 3
        low, high = consumer.get_watermark_offsets(
            __import__("confluent_kafka").TopicPartition("kept", 2), timeout=20
        )
        assert (low, high) == (0, 1)
        consumer.close()
    finally:
        assert again.terminate() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "orders:zero"], "topic"),
        (["--topic", "bad name:3"], "topic"),
        (["--fsync", "sometimes"], "--fsync"),
        (["--port", "70000"], "port"),
        (
            ["--group-consumer-heartbeat-interval-ms", "0"],
            "group.consumer.heartbeat.interval.ms: 0; use at least 1",
        ),
        (
            [
                "--group-consumer-session-timeout-ms",
                "4000",
                "--group-consumer-min-session-timeout-ms",
                "4000",
            ],
            "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
        ),
        (
            ["--replica-placement-seed", str(2**63)],
            "replica_placement_seed: 9223372036854775808 does not fit",
        ),
        (
            ["--group-consumer-assignment-interval-ms", "-1"],
            "group.consumer.assignment.interval.ms: -1; use at least 0",
        ),
        (
            ["--group-consumer-assignment-interval-ms", "15001"],
            "group.consumer.assignment.interval.ms must be less than or equal to "
            "group.consumer.max.assignment.interval.ms",
        ),
        (
            ["--group-consumer-heartbeat-interval-ms", "500"],
            "group.consumer.heartbeat.interval.ms must be greater than or equal to "
            "group.consumer.min.heartbeat.interval.ms",
        ),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kgroup", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("kgroup: error:") and message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    # the temporary data directory it made (no --data-dir) is gone with the failed start
    assert list(tmp_path.iterdir()) == []


def test_every_serve_flag_reaches_the_broker() -> None:
    """The table of ``kgroup serve``'s flags: each one is passed to a BrokerConfig field or a
    build_security_config argument that exists, or read by the command itself (exactly one of these)."""
    import dataclasses
    import inspect

    from kgroup.broker.config import BrokerConfig
    from kgroup.cli.serve import SERVE_FLAGS, _serve
    from kgroup.security.listeners import build_security_config

    fields = {f.name: f for f in dataclasses.fields(BrokerConfig)}
    security = inspect.signature(build_security_config).parameters
    own = set(inspect.signature(_serve).parameters) - {"options"}
    names = [flag.name for flag in SERVE_FLAGS]
    assert len(names) == len(set(names)) == 50
    for flag in SERVE_FLAGS:
        targets = [t for t in (flag.config, flag.security) if t is not None]
        assert len(targets) + (flag.name in own) == 1, flag.name
        if flag.config is not None:
            assert flag.config in fields, flag.name
        if flag.security is not None:
            assert flag.security in security, flag.name
    assert own <= set(names)


def test_the_served_broker_runs_with_the_relaxed_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_broker`` (the ``kgroup serve`` process) serves with the collector's relaxed thresholds
    (:mod:`kgroup.collector`) and restores them after."""
    import gc

    from kgroup.broker import broker as broker_module
    from kgroup.broker.config import BrokerConfig
    from kgroup.collector import RELAXED_THRESHOLDS

    seen: list[tuple[int, int, int]] = []

    def run(coroutine: object) -> None:
        seen.append(gc.get_threshold())
        coroutine.close()  # type: ignore[attr-defined]

    before = gc.get_threshold()
    monkeypatch.setattr(broker_module.asyncio, "run", run)
    broker_module.run_broker(BrokerConfig(), logs=None, install_signal_handlers=False)  # type: ignore[arg-type]
    assert len(seen) == 1 and all(t >= r for t, r in zip(seen[0], RELAXED_THRESHOLDS, strict=True))
    assert gc.get_threshold() == before


def test_the_served_broker_switches_threads_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_broker`` (the ``kgroup serve`` process) serves with the interpreter's switch interval at
    most :data:`kgroup.switching.SERVING_SWITCH_INTERVAL_S` (a loop back from a system call waits no
    longer for a busy thread to give the interpreter lock back) and restores it after."""
    import sys

    from kgroup.broker import broker as broker_module
    from kgroup.broker.config import BrokerConfig
    from kgroup.switching import SERVING_SWITCH_INTERVAL_S

    seen: list[float] = []

    def run(coroutine: object) -> None:
        seen.append(sys.getswitchinterval())
        coroutine.close()  # type: ignore[attr-defined]

    before = sys.getswitchinterval()
    assert before > SERVING_SWITCH_INTERVAL_S  # CPython's 5 ms: the test would prove nothing otherwise
    monkeypatch.setattr(broker_module.asyncio, "run", run)
    broker_module.run_broker(BrokerConfig(), logs=None, install_signal_handlers=False)  # type: ignore[arg-type]
    assert seen == [pytest.approx(SERVING_SWITCH_INTERVAL_S)]
    assert sys.getswitchinterval() == before


def test_quick_thread_switches_restore_the_interval_even_after_an_error() -> None:
    import sys

    from kgroup.switching import SERVING_SWITCH_INTERVAL_S, quick_thread_switches

    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError), quick_thread_switches():
        inside = sys.getswitchinterval()
        raise RuntimeError("a failed run")
    assert sys.getswitchinterval() == before
    assert inside == pytest.approx(min(before, SERVING_SWITCH_INTERVAL_S))
    sys.setswitchinterval(0.0001)  # never raised: a shorter interval the process chose is kept
    try:
        with quick_thread_switches():
            assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)  # (kept in µs)
    finally:
        sys.setswitchinterval(before)
