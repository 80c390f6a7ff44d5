"""``kgroup serve``: run a Kafka-wire-protocol broker on 127.0.0.1 until SIGINT/SIGTERM."""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from kgroup.model import KgroupError

FSYNC_POLICIES = ("always", "interval", "never")


@dataclass(frozen=True, slots=True)
class _Flag:
    """One option of ``kgroup serve``: its parameter name, type, default, declarations and help, and the
    :class:`~kgroup.broker.config.BrokerConfig` field (``config``) or ``build_security_config`` argument
    (``security``) it is passed to as given (``None``: the command reads it itself)."""

    name: str
    type: Any
    default: Any
    decls: str | tuple[str, ...]
    help: str
    config: str | None = None
    security: str | None = None

    def parameter(self) -> inspect.Parameter:
        decls = (self.decls,) if isinstance(self.decls, str) else self.decls
        option = typer.Option(self.default, *decls, help=self.help)
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=self.type
        )


#: every option of ``kgroup serve``, in the order ``--help`` lists them
# fmt: off
SERVE_FLAGS: tuple[_Flag, ...] = (
    _Flag("port", int, 9092, "--port",
          "Port of broker 0 (broker i: port + i); 0 picks free ports.", config="port"),
    _Flag("host", str, "127.0.0.1", "--host", "Address to listen on.", config="host"),
    _Flag("topic", list[str], [], "--topic", "Create a topic at start: NAME:PARTITIONS (repeatable)."),
    _Flag("data_dir", Path | None, None, "--data-dir",
          "Where partition logs and group records live (default: a new temp dir)."),
    _Flag("fsync", str, "interval", "--fsync", "always | interval | never (see docs/broker.md)."),
    _Flag("brokers", int, 1, "--brokers",
          "Brokers in this process (one listener each); `kgroup serve-ctl` stops and starts one.",
          config="brokers"),
    _Flag("num_partitions", int, 1, "--num-partitions",
          "num.partitions for auto-created topics.", config="num_partitions"),
    _Flag("auto_create", bool, True, "--auto-create/--no-auto-create",
          "auto.create.topics.enable.", config="auto_create_topics"),
    _Flag("max_request_bytes", int, 100 * 1024 * 1024, "--max-request-bytes",
          "socket.request.max.bytes.", config="max_request_bytes"),
    _Flag("max_request_elements", int, 100_000, "--max-request-elements",
          "Array elements one request may hold in all (kgroup's limit; see docs/broker.md).",
          config="max_request_elements"),
    _Flag("max_connections", int, 1000, "--max-connections",
          "max.connections per broker.", config="max_connections"),
    _Flag("consumer_heartbeat_interval_ms", int, 5000, "--group-consumer-heartbeat-interval-ms",
          "group.consumer.heartbeat.interval.ms: the interval consumer-protocol members are told.",
          config="group_consumer_heartbeat_interval_ms"),
    _Flag("consumer_assignment_interval_ms", int, 1000, "--group-consumer-assignment-interval-ms",
          "group.consumer.assignment.interval.ms: a consumer group's new target assignment at most this "
          "often.", config="group_consumer_assignment_interval_ms"),
    _Flag("share_max_size", int, 200, "--group-share-max-size",
          "group.share.max.size: members a share group may hold.", config="group_share_max_size"),
    _Flag("share_session_timeout_ms", int, 45_000, "--group-share-session-timeout-ms",
          "group.share.session.timeout.ms (45000-60000): a silent share member is fenced after it.",
          config="group_share_session_timeout_ms"),
    _Flag("share_heartbeat_interval_ms", int, 5000, "--group-share-heartbeat-interval-ms",
          "group.share.heartbeat.interval.ms (5000-15000): the interval named to share members.",
          config="group_share_heartbeat_interval_ms"),
    _Flag("share_assignment_interval_ms", int, 1000, "--group-share-assignment-interval-ms",
          "group.share.assignment.interval.ms (0-15000): a share group's new target assignment at most this"
          " often.", config="group_share_assignment_interval_ms"),
    _Flag("share_record_lock_duration_ms", int, 30_000, "--group-share-record-lock-duration-ms",
          "group.share.record.lock.duration.ms (15000-60000): how long a share consumer holds the records "
          "it acquired.", config="group_share_record_lock_duration_ms"),
    _Flag("share_delivery_count_limit", int, 5, "--group-share-delivery-count-limit",
          "group.share.delivery.count.limit (2-10): deliveries of a record before it is archived.",
          config="group_share_delivery_count_limit"),
    _Flag("share_auto_offset_reset", str, "latest", "--share-auto-offset-reset",
          "share.auto.offset.reset of every share group: latest, earliest or by_duration:<ISO-8601 "
          "duration>.", config="share_auto_offset_reset"),
    _Flag("consumer_session_timeout_ms", int, 45_000, "--group-consumer-session-timeout-ms",
          "group.consumer.session.timeout.ms: a silent consumer-protocol member is fenced after it.",
          config="group_consumer_session_timeout_ms"),
    _Flag("consumer_min_heartbeat_interval_ms", int, 5000, "--group-consumer-min-heartbeat-interval-ms",
          "group.consumer.min.heartbeat.interval.ms.", config="group_consumer_min_heartbeat_interval_ms"),
    _Flag("consumer_max_heartbeat_interval_ms", int, 15_000, "--group-consumer-max-heartbeat-interval-ms",
          "group.consumer.max.heartbeat.interval.ms.", config="group_consumer_max_heartbeat_interval_ms"),
    _Flag("consumer_min_session_timeout_ms", int, 45_000, "--group-consumer-min-session-timeout-ms",
          "group.consumer.min.session.timeout.ms.", config="group_consumer_min_session_timeout_ms"),
    _Flag("consumer_max_session_timeout_ms", int, 60_000, "--group-consumer-max-session-timeout-ms",
          "group.consumer.max.session.timeout.ms.", config="group_consumer_max_session_timeout_ms"),
    _Flag("transaction_max_timeout_ms", int, 900_000, "--transaction-max-timeout-ms",
          "transaction.max.timeout.ms: the largest transaction.timeout.ms a producer may ask for.",
          config="transaction_max_timeout_ms"),
    _Flag("transactional_id_expiration_ms", int, 604_800_000, "--transactional-id-expiration-ms",
          "transactional.id.expiration.ms: a transactional id idle this long is removed.",
          config="transactional_id_expiration_ms"),
    _Flag("transaction_abort_interval_ms", int, 10_000,
          "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
          "transaction.abort.timed.out.transaction.cleanup.interval.ms: how often transactions past their "
          "timeout are aborted.", config="transaction_abort_timed_out_interval_ms"),
    _Flag("transaction_remove_interval_ms", int, 3_600_000,
          "--transaction-remove-expired-transaction-cleanup-interval-ms",
          "transaction.remove.expired.transaction.cleanup.interval.ms: how often expired transactional ids "
          "are removed.", config="transaction_remove_expired_interval_ms"),
    _Flag("leader_imbalance_check_interval_s", int, 300, "--leader-imbalance-check-interval-seconds",
          "leader.imbalance.check.interval.seconds: how often preferred brokers take leaderships and group "
          "coordinators back after a restart.", config="leader_imbalance_check_interval_s"),
    _Flag("auto_leader_rebalance", bool, True, "--auto-leader-rebalance/--no-auto-leader-rebalance",
          "auto.leader.rebalance.enable.", config="auto_leader_rebalance_enable"),
    _Flag("replica_placement_seed", int, 0, "--replica-placement-seed",
          "Seed of the java.util.Random that Kafka 4.4.0's StripedReplicaPlacer places new topics' replicas"
          " with (Kafka's controller draws one at random).", config="replica_placement_seed"),
    _Flag("max_open_files", int, 256, "--max-open-files",
          "Segment files open at once (kgroup's limit; see docs/broker.md)."),
    _Flag("record", Path | None, None, "--record", "Write the groups' events here for `kgroup report DIR`."),
    _Flag("quiet", bool, False, ("--quiet", "-q"), "Log warnings only."),
    _Flag("listener", list[str], [], "--listener",
          "NAME://HOST:PORT (repeatable; Kafka's listeners). Default: PLAINTEXT on --host/--port.",
          security="listeners"),
    _Flag("protocol_map", str, "", "--listener-security-protocol-map",
          "NAME:PROTOCOL,... (listener.security.protocol.map) for listeners not named after one.",
          security="listener_security_protocol_map"),
    _Flag("advertised_listener", list[str], [], "--advertised-listeners",
          "NAME://HOST:PORT (repeatable or comma-separated; Kafka's advertised.listeners): the address "
          "clients of listener NAME are told of, e.g. a proxy's. Port 0: the bound port. Default: each "
          "listener's own address.", security="advertised_listeners"),
    _Flag("ssl_certfile", Path | None, None, "--ssl-certfile",
          "Server certificate chain, PEM (SSL and SASL_SSL listeners).", security="ssl_certfile"),
    _Flag("ssl_keyfile", Path | None, None, "--ssl-keyfile",
          "The server certificate's private key, PEM.", security="ssl_keyfile"),
    _Flag("ssl_cafile", Path | None, None, "--ssl-cafile",
          "CA certificates that sign client certificates, PEM.", security="ssl_cafile"),
    _Flag("ssl_client_auth", str, "none", "--ssl-client-auth",
          "ssl.client.auth: none | requested | required.", security="ssl_client_auth"),
    _Flag("sasl_mechanism", list[str], [], "--sasl-mechanism",
          "sasl.enabled.mechanisms (repeatable; default PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; OAUTHBEARER: "
          "unsecured tokens, for tests only)."),
    _Flag("sasl_user", list[str], [], "--sasl-user",
          "A SASL user NAME:PASSWORD (repeatable; prefer --sasl-users-file)."),
    _Flag("sasl_users_file", Path | None, None, "--sasl-users-file",
          "A file of NAME:PASSWORD lines (# comments)."),
    _Flag("authorizer", bool, False, "--authorizer/--no-authorizer",
          "Enforce ACLs (Kafka's StandardAuthorizer rules).", security="authorizer"),
    _Flag("super_user", list[str], [], "--super-user",
          "super.users: a principal allowed everything, e.g. User:admin (repeatable)."),
    _Flag("allow_everyone_if_no_acl_found", bool, False, "--allow-everyone-if-no-acl-found",
          "allow.everyone.if.no.acl.found.", security="allow_everyone_if_no_acl_found"),
    _Flag("connections_max_reauth_ms", int, 0, "--connections-max-reauth-ms",
          "connections.max.reauth.ms (KIP-368; 0: never).", security="connections_max_reauth_ms"),
    _Flag("failed_authentication_delay_ms", int, 100, "--connection-failed-authentication-delay-ms",
          "connection.failed.authentication.delay.ms.", security="failed_authentication_delay_ms"),
)
# fmt: on


def _with_flags(command: Callable[..., None], flags: tuple[_Flag, ...]) -> Callable[..., None]:
    """``command(**options)`` as typer sees a function with one keyword parameter per flag."""
    command.__signature__ = inspect.Signature([flag.parameter() for flag in flags])  # type: ignore[attr-defined]
    command.__annotations__ = {flag.name: flag.type for flag in flags} | {"return": None}
    return command


def register(app: typer.Typer) -> None:
    def serve_command(**options: Any) -> None:
        """Run a Kafka-protocol broker (produce, fetch, topics, consumer groups) on this machine."""
        _serve(**options)

    app.command("serve")(_with_flags(serve_command, SERVE_FLAGS))

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


def _serve(
    *,
    topic: list[str],
    data_dir: Path | None,
    fsync: str,
    max_open_files: int,
    record: Path | None,
    quiet: bool,
    sasl_mechanism: list[str],
    sasl_user: list[str],
    sasl_users_file: Path | None,
    super_user: list[str],
    **options: Any,
) -> None:
    """``kgroup serve`` with its options (those :data:`SERVE_FLAGS` passes on as given in ``options``)."""
    from kgroup.broker.broker import open_logs, run_broker
    from kgroup.broker.config import BrokerConfig, parse_topic_spec
    from kgroup.security.credentials import parse_user_spec, read_users_file
    from kgroup.security.listeners import SASL_MECHANISMS, build_security_config, is_loopback

    host: str = options["host"]
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
            **_passed(options, "security"),
            sasl_mechanisms=tuple(sasl_mechanism) or SASL_MECHANISMS,
            sasl_users=tuple(users),
            super_users=tuple(super_user),
            state_dir=data_dir,
        )
        config = BrokerConfig(**_passed(options, "config"), topics=topics, security=security)
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
    _end_warm_up()


#: how long a stopped ``kgroup serve`` waits for its warm-up threads (a cold cache compiles for ~40 s)
WARM_UP_EXIT_WAIT_S = 20.0


def _end_warm_up() -> None:
    """The broker is closed and its data written: wait for the warm-up threads
    (:mod:`kgroup.broker.warmup`); one still compiling is not left to the interpreter's finalization,
    which aborts the process in numba's compiler (exit -6), but the process leaves at once, exit 0."""
    from kgroup.broker.warmup import finish

    if finish(WARM_UP_EXIT_WAIT_S):
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _passed(options: dict[str, Any], target: str) -> dict[str, Any]:
    """The options a :class:`_Flag` passes on as given to ``target`` (``config`` or ``security``), by
    the name they are passed under."""
    return {
        getattr(flag, target): options[flag.name] for flag in SERVE_FLAGS if getattr(flag, target) is not None
    }
