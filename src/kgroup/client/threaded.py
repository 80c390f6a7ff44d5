"""Group consumers driven from synchronous code: their own event loop in a daemon thread.

:class:`GroupConsumer` is asyncio code; a caller that is not (a Spark data source's planning
methods, a plain script) gets :class:`ThreadedGroupConsumers`: the consumers live on an event loop
in a background thread of this process, and :meth:`~ThreadedGroupConsumers.run` runs a coroutine
over them there, waiting for its result up to a timeout. The consumers keep heartbeating between
calls, as they would in an asyncio application.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kgroup.client.consumer import GroupConsumer

__all__ = ["LoopCallTimeout", "ThreadedGroupConsumers"]

LOG = logging.getLogger("kgroup.client")
T = TypeVar("T")


class LoopCallTimeout(Exception):
    """A call on the consumers' thread did not finish in time (it was cancelled)."""


class ThreadedGroupConsumers:
    """Group consumers on an event loop of their own, in a daemon thread.

    ``make_consumers`` builds the (not yet started) consumers; it is called on the loop's thread,
    and each consumer is started there. If starting fails, whatever was started is closed and the
    error is raised here. ``timeout_s`` bounds every :meth:`run` that gives no timeout of its own.
    """

    def __init__(
        self,
        make_consumers: Callable[[], Sequence[GroupConsumer]],
        *,
        timeout_s: float,
        thread_name: str = "kgroup-group",
    ) -> None:
        self.timeout_s = timeout_s
        self.consumers: list[GroupConsumer] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=thread_name, daemon=True)
        self._thread.start()
        try:
            self.run(self._start(make_consumers))
        except BaseException:
            self.close()
            raise

    async def _start(self, make_consumers: Callable[[], Sequence[GroupConsumer]]) -> None:
        for consumer in make_consumers():
            await consumer.start()
            self.consumers.append(consumer)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coro`` on the consumers' loop and return its result (or raise its error).

        Raises :class:`LoopCallTimeout` when it has not finished after ``timeout_s`` (default: the
        constructor's); it is then cancelled. A ``TimeoutError`` the coroutine raises itself is
        raised as it is."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            return future.result(limit)
        except TimeoutError:
            if future.done() and not future.cancelled():
                raise  # the coroutine's own TimeoutError
            future.cancel()
            raise LoopCallTimeout(f"no answer within {limit:g} s") from None

    def close(self, timeout_s: float | None = None) -> None:
        """Close every consumer (best effort: a failure is logged), stop the loop, end the thread.
        Calling it again does nothing."""

        async def close_all() -> None:
            for consumer in self.consumers:
                await consumer.close()

        if self._loop.is_running():
            try:
                self.run(close_all(), timeout_s)
            except Exception as exc:  # the group expires the members' sessions anyway
                LOG.info("closing the group consumers: %s", exc)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
