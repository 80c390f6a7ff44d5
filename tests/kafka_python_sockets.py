"""kafka-python 3.0.12 leaves the socket of a refused connection (a broker stopped under its consumer)
to the garbage collector. With warnings as errors, the ResourceWarning of such a socket fails whichever
unrelated test happens to be running when it is collected. The fixture below collects it right after
the test that used kafka-python, ignoring only that warning: an unconnected client socket (its local
address is the wildcard address), which kgroup itself never creates (its servers and clients are asyncio).

A full collection costs up to half a second on a test worker's heap (Hypothesis's and kio's caches), so
it runs only after a test in which kafka-python made a socket: every socket kafka-python makes goes
through ``kafka.net.inet.KafkaNetSocket.socket``, which is counted once kafka-python is imported (a
test that imports it for the first time is collected after, as it may have made sockets uncounted).
"""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_FAILED_CONNECT = r"unclosed <socket\.socket .*laddr=\('0\.0\.0\.0'"

#: sockets kafka-python made since the counter was installed
_made = [0]


def _count_kafka_python_sockets() -> bool:
    """Count kafka-python's sockets from now on; ``False`` if kafka-python is not imported (yet)."""
    inet = sys.modules.get("kafka.net.inet")
    if inet is None:
        return False
    owner = inet.KafkaNetSocket
    made: Callable[..., Any] = owner.socket
    if getattr(made, "_kgroup_counted", False):
        return True

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _made[0] += 1
        return made(self, *args, **kwargs)

    counted._kgroup_counted = True  # type: ignore[attr-defined]
    owner.socket = counted
    return True


@pytest.fixture(autouse=True)
def _collect_refused_client_sockets() -> Iterator[None]:
    counting = _count_kafka_python_sockets()
    before = _made[0]
    yield
    if counting and _made[0] == before:
        return  # kafka-python made no socket during this test: nothing of its to collect
    if not _count_kafka_python_sockets():
        return  # kafka-python is still not imported: it made no socket
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_FAILED_CONNECT, category=ResourceWarning)
        gc.collect()
