"""``kgroup lag``: a consumer group's lag, as ``kafka-consumer-groups.sh --describe --group G`` shows it.

Works against any Kafka broker (``kgroup serve`` or Apache Kafka), for classic and consumer-protocol
groups, and for share groups as ``kafka-share-groups.sh --describe --offsets --group G`` shows them
(GROUP, TOPIC, PARTITION, START-OFFSET, LAG); the requests are
:func:`kgroup.client.lag.describe_group_lag`'s.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import typer

from kgroup.cli.command_config import command_config_option
from kgroup.model import KgroupError

MISSING = "-"  # Kafka's MISSING_COLUMN_VALUE
HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def format_table(group_id: str, rows: list[dict[str, object]]) -> str:
    """Kafka's ``printOffsets`` layout: GROUP, TOPIC, CONSUMER-ID and HOST at least 15 wide, the
    numbers 15 (PARTITION 10), left-aligned, ``-`` for what is unknown."""

    def cell(value: object) -> str:
        return MISSING if value is None else str(value)

    group_w = max(15, len(group_id))
    topic_w = max([15] + [len(cell(r["topic"])) for r in rows])
    consumer_w = max([15] + [len(cell(r["consumer_id"])) for r in rows])
    host_w = max([15] + [len(cell(r["host"])) for r in rows])
    widths = (group_w, topic_w, 10, 15, 15, 15, consumer_w, host_w)

    def line(cells: tuple[str, ...]) -> str:
        return " ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)) + " " + cells[-1]

    out = [line(HEADER)]
    for r in rows:
        keys = (
            "topic",
            "partition",
            "current_offset",
            "log_end_offset",
            "lag",
            "consumer_id",
            "host",
            "client_id",
        )
        out.append(line((group_id, *(cell(r[k]) for k in keys))))
    return "\n".join(out)


SHARE_HEADER = ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")


def format_share_table(group_id: str, rows: list[dict[str, object]]) -> str:
    """``ShareGroupCommand.printOffsets``' layout: GROUP and TOPIC at least 15 wide, PARTITION 10,
    START-OFFSET 13, left-aligned, ``-`` for what is unknown."""

    def cell(value: object) -> str:
        return MISSING if value is None else str(value)

    widths = (max(15, len(group_id)), max([15] + [len(str(r["topic"])) for r in rows]), 10, 13)

    def line(cells: tuple[str, ...]) -> str:
        return " ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)) + " " + cells[-1]

    out = [line(SHARE_HEADER)]
    for r in rows:
        out.append(line((group_id, *(cell(r[k]) for k in ("topic", "partition", "start_offset", "lag")))))
    return "\n".join(out)


def register(app: typer.Typer) -> None:
    @app.command("lag")
    def lag_command(
        bootstrap_servers: str = typer.Option(
            ..., "--bootstrap-servers", help="host:port[,host:port…] of any broker of the cluster."
        ),
        group: str = typer.Option(..., "--group", help="The consumer group's group.id."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON instead of the table."),
        timeout_s: float = typer.Option(30.0, "--timeout", help="Seconds to wait for each answer."),
        command_config: Path | None = command_config_option(),  # noqa: B008
    ) -> None:
        """Show a consumer group's committed offsets, log end offsets, lag and owners per partition
        (a share group's start offsets and lag, as kafka-share-groups.sh --describe --offsets)."""
        from kgroup.cli.command_config import load_command_config
        from kgroup.cli.output import emit_json
        from kgroup.client.consumer import parse_bootstrap
        from kgroup.client.lag import describe_group_lag
        from kgroup.client.probe import ListenerMismatch
        from kgroup.client.security import ClientSecurity

        try:
            parse_bootstrap(bootstrap_servers)
        except KgroupError as exc:
            raise KgroupError(
                f"--bootstrap-servers: {exc.message.removeprefix('bootstrap servers: ')}"
            ) from None
        if not group:
            raise KgroupError("--group: empty; give the group.id of the consumer group")
        if not 0 < timeout_s <= 3600:
            raise KgroupError(f"--timeout: {timeout_s:g}; give seconds between 0 (exclusive) and 3600")
        security = None
        if command_config is not None:
            security = ClientSecurity.from_config(load_command_config(command_config))
        try:
            result = asyncio.run(describe_group_lag(bootstrap_servers, group, timeout_s, security=security))
        except ListenerMismatch as exc:
            raise exc.for_command_config() from None
        except KgroupError as exc:
            if command_config is None or not exc.message.startswith("sasl."):
                raise
            raise KgroupError(f"--command-config {command_config}: {exc.message}") from None
        except (OSError, TimeoutError) as exc:
            raise KgroupError(
                f"--bootstrap-servers: the cluster stopped answering ({exc or type(exc).__name__}); try again"
            ) from None
        data = result.to_json()
        if json_out:
            emit_json(data)
            return
        if data["type"] == "share":
            if data["partitions"]:
                typer.echo("\n" + format_share_table(group, data["partitions"]))
            else:
                typer.echo(f"\nShare group '{group}' has no offset information.")
            return
        if result.state == "Empty":
            sys.stderr.write(f"\nConsumer group '{group}' has no active members.\n")
        elif result.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
            sys.stderr.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
        if data["partitions"]:
            typer.echo("\n" + format_table(group, data["partitions"]))
