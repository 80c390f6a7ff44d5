"""``kgroup serve``: run a Kafka-wire-protocol broker on 127.0.0.1 until SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import shutil
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
        consumer_assignment_interval_ms: int = typer.Option(
            1000,
            "--group-consumer-assignment-interval-ms",
            help="group.consumer.assignment.interval.ms: a consumer group's new target assignment at most "
            "this often.",
        ),
        share_max_size: int = typer.Option(
            200, "--group-share-max-size", help="group.share.max.size: members a share group may hold."
        ),
        share_session_timeout_ms: int = typer.Option(
            45_000,
            "--group-share-session-timeout-ms",
            help="group.share.session.timeout.ms (45000-60000): a silent share member is fenced after it.",
        ),
        share_heartbeat_interval_ms: int = typer.Option(
            5000,
            "--group-share-heartbeat-interval-ms",
            help="group.share.heartbeat.interval.ms (5000-15000): the interval named to share members.",
        ),
        share_assignment_interval_ms: int = typer.Option(
            1000,
            "--group-share-assignment-interval-ms",
            help="group.share.assignment.interval.ms (0-15000): a share group's new target assignment at "
            "most this often.",
        ),
        share_record_lock_duration_ms: int = typer.Option(
            30_000,
            "--group-share-record-lock-duration-ms",
            help="group.share.record.lock.duration.ms (15000-60000): how long a share consumer holds "
            "the records it acquired.",
        ),
        share_delivery_count_limit: int = typer.Option(
            5,
            "--group-share-delivery-count-limit",
            help="group.share.delivery.count.limit (2-10): deliveries of a record before it is archived.",
        ),
        share_auto_offset_reset: str = typer.Option(
            "latest",
            "--share-auto-offset-reset",
            help="share.auto.offset.reset of every share group: latest, earliest or "
            "by_duration:<ISO-8601 duration>.",
        ),
        consumer_session_timeout_ms: int = typer.Option(
            45_000,
            "--group-consumer-session-timeout-ms",
            help="group.consumer.session.timeout.ms: a silent consumer-protocol member is fenced after it.",
        ),
        consumer_min_heartbeat_interval_ms: int = typer.Option(
            5000,
            "--group-consumer-min-heartbeat-interval-ms",
            help="group.consumer.min.heartbeat.interval.ms.",
        ),
        consumer_max_heartbeat_interval_ms: int = typer.Option(
            15_000,
            "--group-consumer-max-heartbeat-interval-ms",
            help="group.consumer.max.heartbeat.interval.ms.",
        ),
        consumer_min_session_timeout_ms: int = typer.Option(
            45_000, "--group-consumer-min-session-timeout-ms", help="group.consumer.min.session.timeout.ms."
        ),
        consumer_max_session_timeout_ms: int = typer.Option(
            60_000, "--group-consumer-max-session-timeout-ms", help="group.consumer.max.session.timeout.ms."
        ),
        transaction_max_timeout_ms: int = typer.Option(
            900_000,
            "--transaction-max-timeout-ms",
            help="transaction.max.timeout.ms: the largest transaction.timeout.ms a producer may ask for.",
        ),
        transactional_id_expiration_ms: int = typer.Option(
            604_800_000,
            "--transactional-id-expiration-ms",
            help="transactional.id.expiration.ms: a transactional id idle this long is removed.",
        ),
        transaction_abort_interval_ms: int = typer.Option(
            10_000,
            "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
            help="transaction.abort.timed.out.transaction.cleanup.interval.ms: how often transactions past "
            "their timeout are aborted.",
        ),
        transaction_remove_interval_ms: int = typer.Option(
            3_600_000,
            "--transaction-remove-expired-transaction-cleanup-interval-ms",
            help="transaction.remove.expired.transaction.cleanup.interval.ms: how often expired "
            "transactional ids are removed.",
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
        replica_placement_seed: int = typer.Option(
            0,
            "--replica-placement-seed",
            help="Seed of the java.util.Random that Kafka 4.4.0's StripedReplicaPlacer places new topics' "
            "replicas with (Kafka's controller draws one at random).",
        ),
        max_open_files: int = typer.Option(
            256, "--max-open-files", help="Segment files open at once (kgroup's limit; see docs/broker.md)."
        ),
        record: Path | None = typer.Option(  # noqa: B008
            None, "--record", help="Write the groups' events here for `kgroup report DIR`."
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Log warnings only."),
        listener: list[str] = typer.Option(  # noqa: B008
            [],
            "--listener",
            help="NAME://HOST:PORT (repeatable; Kafka's listeners). Default: PLAINTEXT on --host/--port.",
        ),
        protocol_map: str = typer.Option(
            "",
            "--listener-security-protocol-map",
            help="NAME:PROTOCOL,... (listener.security.protocol.map) for listeners not named after one.",
        ),
        advertised_listener: list[str] = typer.Option(  # noqa: B008
            [],
            "--advertised-listeners",
            help="NAME://HOST:PORT (repeatable or comma-separated; Kafka's advertised.listeners): the "
            "address clients of listener NAME are told of, e.g. a proxy's. Port 0: the bound port. "
            "Default: each listener's own address.",
        ),
        ssl_certfile: Path | None = typer.Option(  # noqa: B008
            None, "--ssl-certfile", help="Server certificate chain, PEM (SSL and SASL_SSL listeners)."
        ),
        ssl_keyfile: Path | None = typer.Option(  # noqa: B008
            None, "--ssl-keyfile", help="The server certificate's private key, PEM."
        ),
        ssl_cafile: Path | None = typer.Option(  # noqa: B008
            None, "--ssl-cafile", help="CA certificates that sign client certificates, PEM."
        ),
        ssl_client_auth: str = typer.Option(
            "none", "--ssl-client-auth", help="ssl.client.auth: none | requested | required."
        ),
        sasl_mechanism: list[str] = typer.Option(  # noqa: B008
            [],
            "--sasl-mechanism",
            help="sasl.enabled.mechanisms (repeatable; default PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; "
            "OAUTHBEARER: unsecured tokens, for tests only).",
        ),
        sasl_user: list[str] = typer.Option(  # noqa: B008
            [], "--sasl-user", help="A SASL user NAME:PASSWORD (repeatable; prefer --sasl-users-file)."
        ),
        sasl_users_file: Path | None = typer.Option(  # noqa: B008
            None, "--sasl-users-file", help="A file of NAME:PASSWORD lines (# comments)."
        ),
        authorizer: bool = typer.Option(
            False, "--authorizer/--no-authorizer", help="Enforce ACLs (Kafka's StandardAuthorizer rules)."
        ),
        super_user: list[str] = typer.Option(  # noqa: B008
            [],
            "--super-user",
            help="super.users: a principal allowed everything, e.g. User:admin (repeatable).",
        ),
        allow_everyone_if_no_acl_found: bool = typer.Option(
            False, "--allow-everyone-if-no-acl-found", help="allow.everyone.if.no.acl.found."
        ),
        connections_max_reauth_ms: int = typer.Option(
            0, "--connections-max-reauth-ms", help="connections.max.reauth.ms (KIP-368; 0: never)."
        ),
        failed_authentication_delay_ms: int = typer.Option(
            100,
            "--connection-failed-authentication-delay-ms",
            help="connection.failed.authentication.delay.ms.",
        ),
    ) -> None:
        """Run a Kafka-protocol broker (produce, fetch, topics, consumer groups) on this machine."""
        from kgroup.broker.broker import open_logs, run_broker
        from kgroup.broker.config import BrokerConfig, parse_topic_spec
        from kgroup.security.credentials import parse_user_spec, read_users_file
        from kgroup.security.listeners import SASL_MECHANISMS, build_security_config, is_loopback

        if fsync not in FSYNC_POLICIES:
            raise KgroupError(f"--fsync: {fsync!r} is not one of {', '.join(FSYNC_POLICIES)}")
        topics = tuple(parse_topic_spec(spec) for spec in topic)
        # no --data-dir: a fresh temporary directory, printed once the broker serves and kept after it
        # stops (`kgroup serve --data-dir` reopens it); removed when the command fails before the broker
        # serves, since nothing can reach it then
        temporary = data_dir is None
        if data_dir is None:
            data_dir = Path(tempfile.mkdtemp(prefix="kgroup-serve-"))
        data_dir.mkdir(parents=True, exist_ok=True)
        served = False  # set once the broker listens
        try:
            users = [parse_user_spec(spec) for spec in sasl_user]
            if sasl_users_file is not None:
                users += read_users_file(sasl_users_file)
            security = build_security_config(
                listeners=listener,
                listener_security_protocol_map=protocol_map,
                advertised_listeners=advertised_listener,
                ssl_certfile=ssl_certfile,
                ssl_keyfile=ssl_keyfile,
                ssl_cafile=ssl_cafile,
                ssl_client_auth=ssl_client_auth,
                sasl_mechanisms=tuple(sasl_mechanism) or SASL_MECHANISMS,
                sasl_users=tuple(users),
                authorizer=authorizer,
                super_users=tuple(super_user),
                allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
                connections_max_reauth_ms=connections_max_reauth_ms,
                failed_authentication_delay_ms=failed_authentication_delay_ms,
                state_dir=data_dir,
            )
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
                group_consumer_assignment_interval_ms=consumer_assignment_interval_ms,
                group_consumer_min_heartbeat_interval_ms=consumer_min_heartbeat_interval_ms,
                group_consumer_max_heartbeat_interval_ms=consumer_max_heartbeat_interval_ms,
                group_consumer_min_session_timeout_ms=consumer_min_session_timeout_ms,
                group_consumer_max_session_timeout_ms=consumer_max_session_timeout_ms,
                group_share_max_size=share_max_size,
                group_share_session_timeout_ms=share_session_timeout_ms,
                group_share_heartbeat_interval_ms=share_heartbeat_interval_ms,
                group_share_assignment_interval_ms=share_assignment_interval_ms,
                group_share_record_lock_duration_ms=share_record_lock_duration_ms,
                group_share_delivery_count_limit=share_delivery_count_limit,
                share_auto_offset_reset=share_auto_offset_reset,
                transaction_max_timeout_ms=transaction_max_timeout_ms,
                transactional_id_expiration_ms=transactional_id_expiration_ms,
                transaction_abort_timed_out_interval_ms=transaction_abort_interval_ms,
                transaction_remove_expired_interval_ms=transaction_remove_interval_ms,
                auto_leader_rebalance_enable=auto_leader_rebalance,
                leader_imbalance_check_interval_s=leader_imbalance_check_interval_s,
                replica_placement_seed=replica_placement_seed,
                topics=topics,
                security=security,
            )
            logging.basicConfig(
                level=logging.WARNING if quiet else logging.INFO,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                stream=sys.stderr,
            )
            log = logging.getLogger("kgroup.broker")
            open_ones = security.open_listeners_beyond_loopback()
            if not security.listeners and not is_loopback(host):
                log.warning(
                    "listening on %s beyond loopback without authentication: anyone who reaches it may do "
                    "anything; add a SASL or SSL listener (docs/security.md)",
                    host,
                )
            for item in open_ones:
                log.warning(
                    "listener %s listens beyond loopback without authentication: anyone who reaches it "
                    "may do anything (docs/security.md)",
                    item,
                )
            logs = open_logs(data_dir, fsync, max_open_files)
            recorder: Any = None
            if record is not None:
                from kgroup.broker.recorder import GroupRecorder

                recorder = GroupRecorder(record)

            def started(broker: Any) -> None:
                nonlocal served
                served = True
                if recorder is not None:
                    broker.coordinators.set_recorder(recorder)
                    broker.shares.observer = recorder.share_event
                for broker_id in sorted(broker.ports):
                    if not security.listeners:
                        typer.echo(f"broker {broker_id} listening on {host}:{broker.ports[broker_id]}")
                    for item in security.listeners:
                        port_of = broker.listener_ports[item.name][broker_id]
                        typer.echo(f"broker {broker_id} listening on {item.name}://{item.host}:{port_of}")
                for item in security.advertised_listeners:
                    name = "" if item.name == "PLAINTEXT" and not security.listeners else item.name
                    host_of, ports_of = broker.advertised(name)
                    where = ",".join(f"{host_of}:{ports_of[b]}" for b in sorted(ports_of))
                    typer.echo(f"advertised {item.name}://{where}")
                typer.echo(f"bootstrap.servers={broker.bootstrap_servers}  data-dir={data_dir}", err=False)
                sys.stdout.flush()

            _load_records_kernel()
            # the control channel of `kgroup serve-ctl` (its port in DATA_DIR/serve-ctl.port); a single
            # broker has one too, so that serve-ctl can say what it needs instead of finding nothing
            run_broker(config, logs, started, control_dir=data_dir)
            if recorder is not None:
                recorder.close()
        finally:
            if temporary and not served:
                shutil.rmtree(data_dir, ignore_errors=True)

    @app.command("test-ca")
    def test_ca_command(
        directory: Path = typer.Argument(..., help="Where to write the PEM files."),  # noqa: B008
        client: list[str] = typer.Option(  # noqa: B008
            [], "--client", help="Make a client certificate with this common name (repeatable)."
        ),
        host: list[str] = typer.Option(  # noqa: B008
            [],
            "--host",
            help="A name or address the server certificate is for (default 127.0.0.1, localhost).",
        ),
        days: int = typer.Option(30, "--days", help="Validity in days."),
    ) -> None:
        """Make a throw-away CA, a server certificate and client certificates for tests (PEM files)."""
        from kgroup.security.testca import make_test_ca

        if days < 1:
            raise KgroupError(f"--days: {days}; use at least 1")
        try:
            made = make_test_ca(directory, tuple(client), tuple(host) or ("127.0.0.1", "localhost"), days)
        except OSError as exc:
            raise KgroupError(
                f"directory: cannot write {directory} ({exc.strerror}); pick a writable one"
            ) from None
        typer.echo(f"ca: {made.ca_cert}")
        typer.echo(f"server: {made.server_cert} key {made.server_key}")
        for name, (cert, key) in made.clients.items():
            typer.echo(f"client {name}: {cert} key {key}")


def _load_records_kernel() -> None:
    """The numba kernel that walks the records of large produced batches, loaded before the broker
    listens: loading it (about a second of CPU, holding the GIL) while requests wait would stall the
    event loop. Without numba the Python walk serves every batch."""
    from kgroup.log.records import load_kernel

    try:
        load_kernel()
    except Exception as exc:  # numba unusable here
        logging.getLogger("kgroup.broker").warning("records are walked in Python: %s", exc)
