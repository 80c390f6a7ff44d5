"""``kgroup serve-ctl``: stop or start one broker of a running ``kgroup serve --brokers N``.

It reads ``<data-dir>/serve-ctl.port`` (written by ``kgroup serve``) and sends one command over
127.0.0.1; see :mod:`kgroup.broker.control`. It does not import the broker package.
"""

from __future__ import annotations

import socket
from pathlib import Path

import typer

from kgroup.control_file import CONTROL_FILE
from kgroup.model import KgroupError

ACTIONS = ("stop-node", "start-node", "status")
TIMEOUT_S = 30.0


def send_command(data_dir: Path, command: str, timeout_s: float = TIMEOUT_S) -> list[str]:
    """Send one control command to the ``kgroup serve`` running on ``data_dir``; its answer's lines
    (:class:`KgroupError` when none runs there or it answers an error)."""
    path = data_dir / CONTROL_FILE
    try:
        address = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise KgroupError(
            f"--data-dir: no running kgroup serve uses {data_dir} (no {CONTROL_FILE}); "
            f"give the data-dir that `kgroup serve` printed"
        ) from None
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise KgroupError(f"{path}: {address[:60]!r} is not HOST:PORT; restart `kgroup serve`")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall((command + "\n").encode("utf-8"))
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except ConnectionRefusedError:
        raise KgroupError(
            f"--data-dir: no kgroup serve answers at {address} ({path} is left from one that was killed); "
            f"start `kgroup serve --data-dir {data_dir}`"
        ) from None
    except (TimeoutError, OSError) as exc:
        raise KgroupError(
            f"--data-dir: kgroup serve at {address} did not answer ({exc}); try again"
        ) from None
    lines = b"".join(chunks).decode("utf-8", "replace").splitlines()
    if not lines or not lines[0].startswith("ok"):
        raise KgroupError(
            lines[0].removeprefix("error: ") if lines else "kgroup serve closed without answering"
        )
    first = lines[0].removeprefix("ok").removeprefix(": ")
    return ([first] if first else []) + lines[1:]


def register(app: typer.Typer) -> None:
    @app.command("serve-ctl")
    def serve_ctl_command(
        action: str = typer.Argument(..., help="stop-node | start-node | status"),
        node: int | None = typer.Argument(None, help="The broker id (stop-node, start-node)."),
        data_dir: Path = typer.Option(  # noqa: B008
            ..., "--data-dir", help="The data dir of the running `kgroup serve` (it prints it)."
        ),
    ) -> None:
        """Stop or start one broker of a running `kgroup serve --brokers N`, or show which are up."""
        if action not in ACTIONS:
            raise KgroupError(f"ACTION: {action!r} is not one of {', '.join(ACTIONS)}")
        if action == "status":
            if node is not None:
                raise KgroupError("NODE: status takes no node; use `kgroup serve-ctl --data-dir DIR status`")
            command = "status"
        else:
            if node is None:
                raise KgroupError(f"NODE: missing; give the broker id, e.g. `kgroup serve-ctl {action} 1`")
            command = f"{action} {node}"
        for line in send_command(data_dir, command):
            typer.echo(line)
