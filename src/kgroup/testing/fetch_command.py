"""What ``python -m kgroup.testing.<tool> fetch`` does for each pinned tool the tests use (Apache Kafka's
jars, toxiproxy, Spark's Kafka connector): one line saying what it fetched and where, or its error as one
line on stderr and exit status 1; another command line prints the usage and exits 2."""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["fetch_main"]


def fetch_main(
    argv: list[str],
    *,
    usage: str,
    fetch: Callable[[list[str]], str],
    unavailable: type[Exception],
    optional_args: int = 0,
    progress: str | None = None,
) -> int:
    """``fetch ARG…`` (at most ``optional_args`` arguments): ``fetch(args)``, which returns the line to
    print, ``progress`` first on a terminal (fetching can take a while the first time)."""
    if argv[:1] != ["fetch"] or len(argv) > 1 + optional_args:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    if progress is not None and sys.stderr.isatty():
        print(progress, file=sys.stderr)
    try:
        line = fetch(argv[1:])
    except unavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(line)
    return 0
