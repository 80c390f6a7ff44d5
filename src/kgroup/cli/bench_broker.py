"""``kgroup bench broker``: kgroup's broker beside Tansu, Apache Kafka and librdkafka's mock cluster (see
:mod:`kgroup.bench.broker`)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Annotated

import typer

__all__ = ["register_bench"]


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so the brokers and clients the benchmark started are stopped."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _peer_names(values: list[str] | None) -> tuple[str, ...]:
    """``--peer a --peer b`` and ``--peers a,b`` alike: the names in order (BrokerBenchConfig checks them)."""
    return tuple(name.strip() for value in values or () for name in value.split(",") if name.strip())


def register_bench(bench_app: typer.Typer) -> None:
    @bench_app.command("broker")
    def bench_broker_command(
        peer: Annotated[list[str] | None, typer.Option("--peer", "--peers", help="kgroup (kgroup serve in "
                        "a subprocess), kgroup-inproc, tansu, apache (Apache Kafka, one KRaft node), mock "
                        "(repeat, or comma-separated: --peers kgroup,tansu,apache; default: all)")] = None,
        records: Annotated[int, typer.Option("--records", help="records to produce and fetch")] = 200_000,
        record_bytes: Annotated[int, typer.Option("--record-bytes", help="bytes per record value")] = 1024,
        warmup_records: Annotated[int, typer.Option("--warmup-records", help="records produced to a topic "
                                  "of their own first, on every peer (0: none)")] = 50_000,
        group_size: Annotated[list[int] | None, typer.Option("--group-size", help="consumers in a group "
                              "(repeat; default: 10 and 50)")] = None,
        group_topics: Annotated[int, typer.Option("--group-topics", help="topics of 4 partitions the "
                                "groups subscribe to")] = 15,
        session_timeout_ms: Annotated[int, typer.Option("--session-timeout-ms", help="the consumers' "
                                      "session.timeout.ms (librdkafka's default 45000)")] = 45_000,
        runs: Annotated[int, typer.Option("--runs", help="runs; the median is reported")] = 3,
        timeout: Annotated[float, typer.Option("--timeout", help="seconds per measurement before it "
                           "counts as failed")] = 120.0,
        json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Produce/fetch MB/s and consumer-group stabilisation time with confluent-kafka, side by side."""
        from rich.console import Console

        from kgroup.bench.broker import PEERS, BrokerBenchConfig, render_table, run_broker_bench
        from kgroup.cli.output import console, emit_json, err_console
        from kgroup.cli.partition_input import StageProgress

        config = BrokerBenchConfig(
            peers=_peer_names(peer) if peer else PEERS, records=records, record_bytes=record_bytes,
            warmup_records=warmup_records,
            group_sizes=tuple(group_size or (10, 50)), group_topics=group_topics,
            session_timeout_ms=session_timeout_ms, runs=runs,
            timeout_s=timeout,
        )
        progress = StageProgress(enabled=not json_out, stream=err_console)
        with _sigterm_as_interrupt():
            result = run_broker_bench(config, progress.stage)
        if json_out:
            emit_json(result.to_json())
            return
        # the table is wide: never squeeze it into a narrow (or absent) terminal
        Console(highlight=False, width=max(console.width, 130)).print(render_table(result))
