"""The file through which ``kgroup serve`` tells ``kgroup serve-ctl`` where its control channel listens.

``kgroup serve`` writes ``HOST:PORT`` to ``<data-dir>/serve-ctl.port`` (:mod:`kgroup.broker.control`);
``kgroup serve-ctl`` reads it (:mod:`kgroup.cli.serve_ctl`). The name lives here, apart from both, so
that the command line tool does not import the broker package (its handlers and wire schemas: over a
second of start-up for a one-line command).
"""

from __future__ import annotations

__all__ = ["CONTROL_FILE"]

CONTROL_FILE = "serve-ctl.port"
