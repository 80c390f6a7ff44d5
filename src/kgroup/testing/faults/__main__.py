"""``python -m kgroup.testing.faults fetch``: build the pinned toxiproxy server (``make faults-tools``)."""

from __future__ import annotations

import sys

from kgroup.testing.faults.toxiproxy import TOXIPROXY_VERSION, ToxiproxyUnavailable, install_toxiproxy


def main(argv: list[str]) -> int:
    if argv != ["fetch"]:
        print("usage: python -m kgroup.testing.faults fetch", file=sys.stderr)
        return 2
    if sys.stderr.isatty():
        print(f"building toxiproxy {TOXIPROXY_VERSION} with go install (the first time)…", file=sys.stderr)
    try:
        binary = install_toxiproxy()
    except ToxiproxyUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"toxiproxy {TOXIPROXY_VERSION}: {binary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
