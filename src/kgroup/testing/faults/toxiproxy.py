"""Shopify's toxiproxy: a TCP proxy whose faults (toxics) are set through an HTTP API.

* :func:`toxiproxy_binary` finds the pinned server build in ``~/.cache/kgroup/toxiproxy/bin`` and
  :func:`install_toxiproxy` builds it with ``go install`` (``make faults-tools``); CI must have it, a
  machine without Go skips the fault tests with the reason (:func:`require_toxiproxy`).
* :class:`Toxiproxy` runs one server on 127.0.0.1 (a free port) and talks to its API with urllib;
  :class:`Proxy` is one proxy and its toxics.

The toxics used here (toxiproxy's README describes each): ``latency`` (``latency``, ``jitter`` ms),
``bandwidth`` (``rate`` KB/s), ``reset_peer`` (``timeout`` ms, then a TCP RST), ``timeout`` with
``timeout: 0`` (nothing passes until the toxic is removed; what was sent is held, not dropped, and
flows when it is — as TCP retransmits across a cut link). ``stream`` is ``upstream`` (client →
broker) or ``downstream`` (broker → client).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kgroup.child_process import stop_process
from kgroup.model import KgroupError
from kgroup.testing.lifecycle import Started

__all__ = [
    "TOXIPROXY_MODULE",
    "TOXIPROXY_VERSION",
    "Proxy",
    "Toxiproxy",
    "ToxiproxyUnavailable",
    "install_toxiproxy",
    "require_toxiproxy",
    "toxiproxy_binary",
]

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_VERSION = "v2.12.0"
_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 10.0
_API_TIMEOUT_S = 10.0
_INSTALL_TIMEOUT_S = 600.0


class ToxiproxyUnavailable(KgroupError):
    """The toxiproxy server is not built and cannot be (no Go, no network)."""


def _bin_dir() -> Path:
    root = os.environ.get("KGROUP_CACHE_DIR") or str(Path.home() / ".cache" / "kgroup")
    return Path(root) / "toxiproxy" / "bin"


def _built_version(binary: Path) -> str | None:
    """The module version ``go version -m`` reads from the binary (None if it cannot tell)."""
    go = shutil.which("go")
    if go is None:
        return None
    try:
        done = subprocess.run([go, "version", "-m", str(binary)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "mod" and parts[1] == "github.com/Shopify/toxiproxy/v2":
            return parts[2]
    return None


def toxiproxy_binary() -> Path:
    """The pinned toxiproxy server, or :class:`ToxiproxyUnavailable` saying how to get it."""
    binary = _bin_dir() / "server"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    raise ToxiproxyUnavailable(
        f"toxiproxy {TOXIPROXY_VERSION} is not built in {binary.parent}; run `make faults-tools` "
        "(`python -m kgroup.testing.faults fetch`, needs Go)"
    )


def install_toxiproxy() -> Path:
    """Build the pinned toxiproxy server with ``go install`` into the cache (kept if already there)."""
    binary = _bin_dir() / "server"
    if binary.is_file() and _built_version(binary) in (TOXIPROXY_VERSION, None):
        return binary
    go = shutil.which("go")
    if go is None:
        raise ToxiproxyUnavailable(
            f"toxiproxy {TOXIPROXY_VERSION}: `go` is not on PATH; install Go (https://go.dev/dl/) "
            "or put a toxiproxy server binary at " + str(binary)
        )
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOBIN": str(binary.parent), "CGO_ENABLED": "0"}
    try:
        done = subprocess.run(
            [go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise ToxiproxyUnavailable(
            f"toxiproxy: `go install` took over {_INSTALL_TIMEOUT_S:.0f} s; check the network"
        ) from None
    if done.returncode != 0 or not binary.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToxiproxyUnavailable(f"toxiproxy: `go install` failed: {last}")
    return binary


_checked: list[Path | str] = []


def require_toxiproxy() -> Path:
    """The toxiproxy server for a test, or ``pytest.skip`` (outside CI) / ``pytest.fail`` (in CI)."""
    import pytest

    from kgroup.testing.apache_kafka.skips import in_ci

    if not _checked:
        try:
            _checked.append(toxiproxy_binary())
        except ToxiproxyUnavailable as exc:
            _checked.append(str(exc))
    found = _checked[0]
    if isinstance(found, Path):
        return found
    if in_ci():
        pytest.fail(f"toxiproxy is required in CI: {found}", pytrace=False)
    pytest.skip(f"toxiproxy unavailable: {found}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Proxy:
    """One proxy of a :class:`Toxiproxy` server: ``listen`` (``127.0.0.1:PORT``) forwards to ``upstream``."""

    def __init__(self, server: Toxiproxy, name: str, listen: str, upstream: str) -> None:
        self.server = server
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self._toxics = 0

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    def set_upstream(self, upstream: str) -> None:
        """Forward new connections to ``upstream`` (the proxy restarts on its port)."""
        answer = self.server.api("POST", f"/proxies/{self.name}", {"upstream": upstream})
        self.upstream = str(answer["upstream"])
        self.listen = str(answer["listen"])

    def add_toxic(self, kind: str, attributes: dict[str, int], *, stream: str = "both") -> list[str]:
        """Add toxic ``kind`` to one direction, or to both (two toxics); returns their names."""
        streams = ("upstream", "downstream") if stream == "both" else (stream,)
        names = []
        for direction in streams:
            self._toxics += 1
            name = f"{kind}-{direction}-{self._toxics}"
            self.server.api(
                "POST",
                f"/proxies/{self.name}/toxics",
                {"name": name, "type": kind, "stream": direction, "toxicity": 1.0, "attributes": attributes},
            )
            names.append(name)
        return names

    def remove_toxic(self, name: str) -> None:
        self.server.api("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def toxics(self) -> list[dict[str, Any]]:
        found = self.server.api("GET", f"/proxies/{self.name}/toxics")
        return list(found)

    def remove_all_toxics(self) -> None:
        for toxic in self.toxics():
            self.remove_toxic(str(toxic["name"]))


class Toxiproxy(Started):
    """A toxiproxy server on 127.0.0.1 (a free API port) for one test module or run.

    >>> with Toxiproxy() as toxiproxy:  # doctest: +SKIP
    ...     proxy = toxiproxy.proxy("c0", upstream="127.0.0.1:9092")
    ...     proxy.add_toxic("latency", {"latency": 50, "jitter": 10})

    :meth:`stop` ends the server by its pid (SIGTERM, SIGKILL after a bound): every proxy, its
    listening port and its connections go with it.
    """

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary
        self.api_port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.log_path: Path | None = None

    def start(self) -> Toxiproxy:
        if self._process is not None:
            raise KgroupError("Toxiproxy: already started; call stop() first")
        binary = self.binary or toxiproxy_binary()
        for _attempt in range(3):
            self.api_port = _free_port()
            handle, name = tempfile.mkstemp(prefix="kgroup-toxiproxy-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
            self._log = self.log_path.open("wb")
            self._process = subprocess.Popen(
                [str(binary), "-host", "127.0.0.1", "-port", str(self.api_port)],
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + _START_TIMEOUT_S
            while time.monotonic() < deadline and self._process.poll() is None:
                with contextlib.suppress(OSError, KgroupError):
                    self.api("GET", "/version")
                    return self
                time.sleep(0.05)
            self.stop()
        raise KgroupError(f"Toxiproxy: the server did not answer on its API within {_START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process, _STOP_TIMEOUT_S, kill_wait_s=_STOP_TIMEOUT_S)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API call; the answer's JSON (None for 204), or :class:`KgroupError` with toxiproxy's words."""
        if self._process is None:
            raise KgroupError("Toxiproxy: not running; use it inside `with Toxiproxy() as toxiproxy:`")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_API_TIMEOUT_S) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise KgroupError(f"toxiproxy: {method} {path}: HTTP {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise KgroupError(f"toxiproxy: {method} {path}: {exc}") from None
        return json.loads(text) if text else None

    def proxy(self, name: str, upstream: str = "127.0.0.1:1", listen: str = "127.0.0.1:0") -> Proxy:
        """A new proxy (``listen`` port 0: a free one, read back). The upstream may be set later."""
        answer = self.api("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream})
        return Proxy(self, name, str(answer["listen"]), str(answer["upstream"]))

    def reset(self) -> None:
        """Remove every toxic of every proxy and enable them all (toxiproxy's ``POST /reset``)."""
        self.api("POST", "/reset")
