"""``kgroup serve``: run a Kafka-wire-protocol broker on 127.0.0.1 until SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import typer

from kgroup.model import KgroupError

FSYNC_POLICIES = ("always", "interval", "never")


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_command(
        port: int = typer.Option(
            9092, "--port", help="Port of broker 0 (broker i: port + i); 0 picks free ports."
        ),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
        topic: list[str] = typer.Option(  # noqa: B008
            [], "--topic", help="Create a topic at start: NAME:PARTITIONS (repeatable)."
        ),
        data_dir: Path | None = typer.Option(  # noqa: B008
            None, "--data-dir", help="Where partition logs and group records live (default: a new temp dir)."
        ),
        fsync: str = typer.Option(
            "interval", "--fsync", help="always | interval | never (see docs/broker.md)."
        ),
        brokers: int = typer.Option(
            1,
            "--brokers",
            help="Brokers in this process (one listener each); `kgroup serve-ctl` stops and starts one.",
        ),
        num_partitions: int = typer.Option(
            1, "--num-partitions", help="num.partitions for auto-created topics."
        ),
        auto_create: bool = typer.Option(
            True, "--auto-create/--no-auto-create", help="auto.create.topics.enable."
        ),
        max_request_bytes: int = typer.Option(
            100 * 1024 * 1024, "--max-request-bytes", help="socket.request.max.bytes."
        ),
        max_request_elements: int = typer.Option(
            100_000,
            "--max-request-elements",
            help="Array elements one request may hold in all (kgroup's limit; see docs/broker.md).",
        ),
        max_connections: int = typer.Option(1000, "--max-connections", help="max.connections per broker."),
        consumer_heartbeat_interval_ms: int = typer.Option(
            5000,
            "--group-consumer-heartbeat-interval-ms",
            help="group.consumer.heartbeat.interval.ms: the interval consumer-protocol members are told.",
        ),
        consumer_session_timeout_ms: int = typer.Option(
            45_000,
            "--group-consumer-session-timeout-ms",
            help="group.consumer.session.timeout.ms: a silent consumer-protocol member is fenced after it.",
        ),
        leader_imbalance_check_interval_s: int = typer.Option(
            300,
            "--leader-imbalance-check-interval-seconds",
            help="leader.imbalance.check.interval.seconds: how often preferred brokers take leaderships "
            "and group coordinators back after a restart.",
        ),
        auto_leader_rebalance: bool = typer.Option(
            True, "--auto-leader-rebalance/--no-auto-leader-rebalance", help="auto.leader.rebalance.enable."
        ),
        max_open_files: int = typer.Option(
            256, "--max-open-files", help="Segment files open at once (kgroup's limit; see docs/broker.md)."
        ),
        record: Path | None = typer.Option(  # noqa: B008
            None, "--record", help="Write the groups' events here for `kgroup report DIR`."
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Log warnings only."),
    ) -> None:
        """Run a Kafka-protocol broker (produce, fetch, topics, consumer groups) on this machine."""
        from kgroup.broker.broker import open_logs, run_broker
        from kgroup.broker.config import BrokerConfig, parse_topic_spec

        if fsync not in FSYNC_POLICIES:
            raise KgroupError(f"--fsync: {fsync!r} is not one of {', '.join(FSYNC_POLICIES)}")
        topics = tuple(parse_topic_spec(spec) for spec in topic)
        config = BrokerConfig(
            host=host,
            port=port,
            brokers=brokers,
            max_request_bytes=max_request_bytes,
            max_request_elements=max_request_elements,
            max_connections=max_connections,
            auto_create_topics=auto_create,
            num_partitions=num_partitions,
            group_consumer_heartbeat_interval_ms=consumer_heartbeat_interval_ms,
            group_consumer_session_timeout_ms=consumer_session_timeout_ms,
            auto_leader_rebalance_enable=auto_leader_rebalance,
            leader_imbalance_check_interval_s=leader_imbalance_check_interval_s,
            topics=topics,
        )
        logging.basicConfig(
            level=logging.WARNING if quiet else logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        if data_dir is None:
            data_dir = Path(tempfile.mkdtemp(prefix="kgroup-serve-"))
        data_dir.mkdir(parents=True, exist_ok=True)
        logs = open_logs(data_dir, fsync, max_open_files)
        recorder: Any = None
        if record is not None:
            from kgroup.broker.recorder import GroupRecorder

            recorder = GroupRecorder(record)

        def started(broker: Any) -> None:
            if recorder is not None:
                broker.coordinator_host.recorder = recorder
            for broker_id in sorted(broker.ports):
                typer.echo(f"broker {broker_id} listening on {host}:{broker.ports[broker_id]}")
            typer.echo(f"bootstrap.servers={broker.bootstrap_servers}  data-dir={data_dir}", err=False)
            sys.stdout.flush()

        # a cluster gets the control channel of `kgroup serve-ctl` (its port in DATA_DIR/serve-ctl.port)
        run_broker(config, logs, started, control_dir=data_dir if brokers > 1 else None)
        if recorder is not None:
            recorder.close()
