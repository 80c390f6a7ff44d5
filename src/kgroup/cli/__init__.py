"""The ``kgroup`` command: one module per sub-command, each with a ``register(app)`` function.

Bad input never shows a traceback: :class:`kgroup.model.KgroupError`, usage errors and unreadable
files become one line on stderr (``kgroup: error: …``) and exit status 2.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module

import typer

from kgroup.model import KgroupError

app = typer.Typer(
    name="kgroup",
    help="Kafka's partitioning and consumer-group rebalancing, exact to Kafka.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root() -> None:
    """Kafka's partitioning and consumer-group rebalancing, exact to Kafka."""


@app.command("version")
def version_command() -> None:
    """Print kgroup's version and the Kafka version it reproduces."""
    from kgroup import __version__
    from kgroup.kafka_release import KAFKA_VERSION

    typer.echo(f"kgroup {__version__} (exact to Apache Kafka {KAFKA_VERSION})")


# Sub-command modules, in the order `kgroup --help` lists them.
COMMAND_MODULES = (
    "partition",
    "place",
    "assign",
    "simulate",
    "serve",
    "serve_ctl",
    "lag",
    "record",
    "report",
    "validate",
    "demo",
    "bench",
)

for _name in COMMAND_MODULES:
    try:
        _module = import_module(f"kgroup.cli.{_name}")
    except ModuleNotFoundError as _exc:  # a command still being written; tests check all are present
        if _exc.name != f"kgroup.cli.{_name}":
            raise
        continue
    _module.register(app)


def _fail(message: str) -> None:
    sys.stderr.write(f"kgroup: error: {message}\n")
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``kgroup`` console script."""
    args = sys.argv[1:] if argv is None else argv
    try:
        result = app(args=args, standalone_mode=False, prog_name="kgroup")
    except KgroupError as exc:
        _fail(exc.message)
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument, bad value
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "kgroup"
        _fail(f"{exc.format_message()} (see '{command} --help')")
    except typer.Abort:
        sys.stderr.write("kgroup: aborted\n")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.stderr.write("kgroup: interrupted\n")
        sys.exit(130)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}")
    except Exception as exc:  # a bug, not bad input: still one line unless asked for more
        if os.environ.get("KGROUP_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set KGROUP_DEBUG=1 for the traceback)")
    sys.exit(result if isinstance(result, int) else 0)
