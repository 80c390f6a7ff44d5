"""kafka-python 3.0.12 leaves the socket of a refused connection (a broker stopped under its consumer)
to the garbage collector. With warnings as errors, the ResourceWarning of such a socket fails whichever
unrelated test happens to be running when it is collected. The fixture below collects it right after
the test that used kafka-python, ignoring only that warning: an unconnected client socket (its local
address is the wildcard address), which kgroup itself never creates (its servers and clients are asyncio).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

_FAILED_CONNECT = r"unclosed <socket\.socket .*laddr=\('0\.0\.0\.0'"


@pytest.fixture(autouse=True)
def _collect_refused_client_sockets() -> Iterator[None]:
    yield
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_FAILED_CONNECT, category=ResourceWarning)
        gc.collect()
