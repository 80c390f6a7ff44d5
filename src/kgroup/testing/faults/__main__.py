"""``python -m kgroup.testing.faults fetch``: build the pinned toxiproxy server (``make faults-tools``)."""

from __future__ import annotations

import sys

from kgroup.testing.faults.toxiproxy import TOXIPROXY_VERSION, ToxiproxyUnavailable, install_toxiproxy
from kgroup.testing.fetch_command import fetch_main


def main(argv: list[str]) -> int:
    return fetch_main(
        argv,
        usage="python -m kgroup.testing.faults fetch",
        fetch=lambda _: f"toxiproxy {TOXIPROXY_VERSION}: {install_toxiproxy()}",
        unavailable=ToxiproxyUnavailable,
        progress=f"building toxiproxy {TOXIPROXY_VERSION} with go install (the first time)…",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
