"""What a test starts and stops (a broker, Apache Kafka, the oracle JVM, toxiproxy, a fault bed):
``with X(...) as x:`` is ``x = X(...).start()``, then ``x.stop()`` however the block ends."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Started"]


class Started:
    """``__enter__`` starts, ``__exit__`` stops; the class gives ``start`` (returning itself) and ``stop``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
