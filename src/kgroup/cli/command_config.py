"""``--command-config FILE``: a client's security settings as Kafka's tools take them (a properties
file of ``key=value`` lines: ``security.protocol``, ``ssl.ca.location``, ``sasl.mechanism``, …)."""

from __future__ import annotations

from pathlib import Path

import typer

from kgroup.model import KgroupError

HELP = (
    "Client settings file (key=value): security.protocol, ssl.ca.location, ssl.certificate.location, "
    "ssl.key.location, sasl.mechanism, sasl.username, sasl.password."
)


def command_config_option() -> Path | None:
    return typer.Option(None, "--command-config", help=HELP)


def load_command_config(path: Path) -> dict[str, str]:
    """The file's settings, checked as kgroup's client reads them (one-line errors naming the file)."""
    from kgroup.client.security import ClientSecurity, read_properties

    try:
        settings = read_properties(path)
        ClientSecurity.from_config(settings)
    except KgroupError as exc:
        raise KgroupError(f"--command-config {path}: {exc.message}") from None
    return settings
