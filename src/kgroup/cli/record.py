"""``kgroup record``: a group's history from any cluster's ``__consumer_offsets``, for ``kgroup report``."""

from __future__ import annotations

import re
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from kgroup.cli.command_config import command_config_option
from kgroup.model import KgroupError

_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
#: progress appears on a terminal only once a read has taken this long
_PROGRESS_AFTER_S = 2.0


def parse_since(text: str, now_ms: int) -> int:
    """``--since``: ISO 8601 (a time without zone is UTC), epoch milliseconds, or a duration ago
    (``90s``, ``15m``, ``2h``, ``1d``) -> epoch milliseconds."""
    value = text.strip()
    duration = _DURATION.match(value)
    if duration is not None:
        return now_ms - int(duration.group(1)) * _UNIT_MS[duration.group(2)]
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise KgroupError(
            f"--since: {text!r} is not a time; give ISO 8601 (2026-11-26T15:00:00Z), epoch milliseconds "
            "or a duration ago (30m, 2h, 1d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _check_bootstrap(value: str) -> None:
    from kgroup.client import parse_bootstrap

    try:
        parse_bootstrap(value)
    except KgroupError as exc:
        raise KgroupError("--bootstrap-servers: " + exc.message.removeprefix("bootstrap servers: ")) from None


def register(app: typer.Typer) -> None:
    @app.command("record")
    def record_command(
        bootstrap_servers: str = typer.Option(
            ..., "--bootstrap-servers", "-b", help="Any broker of the cluster: HOST:PORT[,HOST:PORT…]."
        ),
        group: str = typer.Option(..., "--group", "-g", help="The consumer group to record."),
        out: Path = typer.Option(  # noqa: B008
            ..., "--out", "-o", help="Folder of the recording (DIR/<group>/result.json); `kgroup report DIR`."
        ),
        since: str | None = typer.Option(
            None,
            "--since",
            help="Start here: ISO 8601, epoch ms or a duration ago (30m, 2h, 1d). Default: the beginning.",
        ),
        follow: bool = typer.Option(
            False, "--follow", "-f", help="Keep following the group (rewriting the recording) until Ctrl-C."
        ),
        timeout_s: float = typer.Option(
            15.0, "--timeout", help="Seconds to wait for the cluster's metadata and offsets."
        ),
        json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON, nothing else."),
        command_config: Path | None = command_config_option(),  # noqa: B008
    ) -> None:
        """Record a consumer group's rebalances and commits from a Kafka cluster's __consumer_offsets."""
        from kgroup.cli.output import emit_json, err_console, prepare_report_dir
        from kgroup.record.reader import RecordOptions, record_group

        if not group:
            raise KgroupError("--group: is empty; give the consumer group's id")
        if timeout_s <= 0:
            raise KgroupError(f"--timeout: is {timeout_s}; give a positive number of seconds")
        _check_bootstrap(bootstrap_servers)
        since_ms = None if since is None else parse_since(since, int(time.time() * 1000))
        prepare_report_dir(out, "--out")
        client_config: tuple[tuple[str, str], ...] = ()
        if command_config is not None:
            from kgroup.cli.command_config import load_command_config

            client_config = tuple(load_command_config(command_config).items())
        options = RecordOptions(bootstrap_servers, group, out, since_ms, follow, timeout_s, client_config)

        started = time.monotonic()
        status: Any = None
        show = not json_output and err_console.is_terminal

        def progress(history: Any, position: int, end: int) -> None:
            nonlocal status
            if not show or time.monotonic() - started < _PROGRESS_AFTER_S:
                return
            text = (
                f"{group}: {history.records:,} records, {history.generations} generations"
                + ("" if follow else f" (offset {position:,} of {end:,})")
            )
            if status is None:
                status = err_console.status(text, spinner="dots")
                status.start()
            else:
                status.update(text)

        interrupted = False

        def on_sigint(_signum: int, _frame: Any) -> None:
            nonlocal interrupted
            interrupted = True

        previous = signal.signal(signal.SIGINT, on_sigint) if follow else None
        try:
            history, path = record_group(
                options, time.monotonic, lambda: int(time.time() * 1000), lambda: interrupted, progress
            )
        finally:
            if status is not None:
                status.stop()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        metrics = history.document()["metrics"]
        summary = {"group": group, "recording": str(path), "records": history.records, **metrics}
        if json_output:
            emit_json(summary)
            return
        typer.echo(
            f"{group}: {history.records} records → {path}\n"
            f"  {metrics['rebalances']} rebalances, generation {metrics['generation']}, "
            f"{metrics['members_seen']} members seen, {metrics['offset_commits']} offset commits\n"
            f"  draw it: kgroup report {out}"
        )
