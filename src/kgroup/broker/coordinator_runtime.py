"""The group coordinators on a thread of their own: the broker's loop serves connections, nothing else.

Kafka runs its group coordinator on a runtime of its own threads (``CoordinatorRuntime``), apart from
the request handlers that serve Produce and Fetch, and runs the coordinator's heavy background work —
regex resolution — on an executor apart from both. kgroup does the same:

* :class:`CoordinatorRuntime` runs the :class:`~kgroup.broker.coordinator_host.CoordinatorHost` on a
  thread with an asyncio loop of its own (``kgroup-coordinator``): every request a coordinator
  answers (JoinGroup … ConsumerGroupHeartbeat), every timer, every rebuild and the coordinator log's
  writes and fsyncs run there. The broker's loop hands a request over and awaits the answer; a
  100,000-name subscription or a 10,000-member assignment costs the other connections nothing but
  the CPU the two threads share.
* the coordinator's tasks (regex resolution with RE2) run in one more thread
  (``kgroup-coordinator-tasks``), so a group's many regexes over many topics hold up no coordinator
  either; their results come back to the coordinator's loop. A task type that needs the broker's loop
  too has a runner registered for it (:mod:`kgroup.broker.coordinator_tasks`): the runtime knows no
  task kind.
* what the coordinator knows of the cluster is handed to it as values: the metadata image at every
  topic change, the placement of the offsets topic's leaders at every broker change.
* what ``__consumer_offsets`` shows is appended on the broker's loop, which serves it to readers,
  before the answer of the call that wrote it.
* the two loops hand each other work through a :class:`Mailbox` each way: the requests and what the
  broker tells the coordinators one way, the answers and the ``__consumer_offsets`` appends the
  other, in order, with one wake-up of the other thread for everything queued until it runs (not one
  per request and answer: each wake-up is a system call whose thread must then wait to take the
  interpreter lock back).
* while the log is being replayed after a start (``loaded`` is false), the broker answers every group
  request COORDINATOR_LOAD_IN_PROGRESS, as Kafka does for an offsets partition it is still loading:
  the broker listens at once, however many groups the log holds.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from kgroup.broker.cluster import Cluster
from kgroup.broker.coordinator_host import (
    CoordinatorHost,
    CoordinatorPlacement,
    OffLoop,
    OffsetsEntries,
    error_response,
)
from kgroup.broker.coordinator_tasks import TaskPlaces, TaskRunner, run_apart
from kgroup.broker.internal_topic import OffsetsTopicAppender
from kgroup.broker.logapi import CoordinatorLogLike
from kgroup.group import CoordinatorConfig
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.txn import CoordinatorTask
from kgroup.messages import Envelope, Response
from kgroup.model import ErrorCode, KgroupError, TopicId

__all__ = ["CoordinatorRuntime", "Mailbox", "metadata_image", "placement"]

log = logging.getLogger("kgroup.broker")
T = TypeVar("T")


def metadata_image(cluster: Cluster) -> MetadataImage:
    """The cluster's topics as the consumer groups' coordinator reads them (Kafka's metadata image):
    each topic's id, name and partition count, at the cluster's topic version."""
    return MetadataImage.of(
        (
            TopicImage(TopicId.from_int(info.topic_id.int), info.name, info.partitions)
            for info in cluster.topics.values()
        ),
        cluster.topics_version,
    )


def placement(cluster: Cluster) -> CoordinatorPlacement:
    """Where each group's coordinator is: the live brokers, the leader of each offsets partition."""
    return CoordinatorPlacement(frozenset(cluster.alive), cluster.offsets_leaders())


class Mailbox:
    """Calls for one event loop, posted from another thread: run there in the order posted, all those
    posted until the loop gets to them with one wake-up (one ``call_soon_threadsafe``).

    ``wake_ups`` counts the wake-ups asked for.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.wake_ups = 0
        self._calls: deque[Callable[[], object]] = deque()
        self._scheduled = False

    @property
    def pending(self) -> int:
        """Calls posted and not yet run."""
        return len(self._calls)

    def post(self, call: Callable[[], object]) -> None:
        """Run ``call()`` on the loop, after every call posted before it."""
        self._calls.append(call)
        if not self._scheduled:
            # (only the posting thread sets the flag, only the loop clears it, before it empties the
            # queue: a call appended meanwhile is run by this drain or by the next one)
            self._scheduled = True
            self.wake_ups += 1
            self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        calls = self._calls
        while calls:
            call = calls.popleft()
            try:
                call()
            except Exception:  # a bug in the call: the ones after it still run
                log.exception("a call handed between the broker's and the coordinators' loops failed")


class _Call:
    """One call of the broker's on the coordinators' loop: the future of its outcome there once
    started."""

    __slots__ = ("cancelled", "pending")

    def __init__(self) -> None:
        self.pending: asyncio.Future[Any] | None = None
        self.cancelled = False

    def cancel(self) -> None:  # on the coordinators' loop
        self.cancelled = True
        if self.pending is not None:
            self.pending.cancel()


class CoordinatorRuntime:
    """The coordinator host on its own thread and loop; the broker's side of it.

    Built on the broker's thread; :meth:`start` (on the broker's loop) starts the thread and the
    loading of the log, and returns at once.
    """

    def __init__(
        self,
        config: CoordinatorConfig,
        coordinator_log: CoordinatorLogLike,
        *,
        clock_ms: Callable[[], int],
        cluster: Cluster,
        off_loop: OffLoop,
        checkpoint_min_bytes: int,
        flush_interval_ms: int | None,
        notify_appended: Callable[[str, int, int], None] | None = None,
        task_runners: Mapping[type, TaskRunner] | None = None,
    ) -> None:
        self._cluster = cluster
        #: task type -> its runner, for the types that need more than the tasks' thread
        #: (``coordinator_tasks.task_runners``)
        self._task_runners: Mapping[type, TaskRunner] = task_runners or {}
        self._places = TaskPlaces(apart=self._apart, on_broker=self._on_broker)
        self._appender = OffsetsTopicAppender(cluster, notify_appended)
        self._tasks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-coordinator-tasks")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broker_loop: asyncio.AbstractEventLoop | None = None
        #: to the coordinators' loop, and back to the broker's (made by :meth:`start`)
        self._inbox: Mailbox | None = None
        self._outbox: Mailbox | None = None
        self._thread: threading.Thread | None = None
        self._loading: Future[None] | None = None
        #: the placement last handed to the host (from the broker's thread)
        self._placement = placement(cluster)
        self.host = CoordinatorHost(
            config,
            coordinator_log,
            clock_ms=clock_ms,
            placement=self._placement,
            off_loop=off_loop,
            checkpoint_min_bytes=checkpoint_min_bytes,
            run_task=self._run_task,
            publish_offsets=self._publish_offsets,
            flush_interval_ms=flush_interval_ms,
        )
        self.host.set_image(metadata_image(cluster))
        cluster.watch_topics(self._topics_changed)

    @property
    def config(self) -> CoordinatorConfig:
        return self.host.config

    @property
    def loaded(self) -> bool:
        """The log has been replayed: groups are served."""
        return self.host.loaded

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the coordinators' thread and load the log there; returns before the loading ends."""
        self._broker_loop = asyncio.get_running_loop()
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="kgroup-coordinator", daemon=True)
        self._thread.start()
        ready.wait()
        assert self._loop is not None
        self._inbox, self._outbox = Mailbox(self._loop), Mailbox(self._broker_loop)
        self._loading = asyncio.run_coroutine_threadsafe(self._load(), self._loop)

    async def _load(self) -> None:
        try:
            self.host.start()
        except Exception:
            log.exception("loading the coordinator log failed; groups are not served")
            raise

    async def wait_loaded(self) -> None:
        """Until the log is replayed (re-raises what made the loading fail)."""
        if self._loading is not None:
            await asyncio.wrap_future(self._loading)

    async def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._loading is not None:
            self._loading.cancel()
        try:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.host.close(), loop))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 30)
            self._tasks.shutdown(wait=True, cancel_futures=True)
            self._loop = self._thread = None
            self._inbox = self._outbox = None

    # --- the broker's requests -----------------------------------------------------------------------

    async def _on_coordinators(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` as a task on the coordinators' loop, its outcome back on the broker's."""
        return await self._hand_over(lambda: asyncio.ensure_future(work), work.close)

    async def _hand_over(
        self, start: Callable[[], asyncio.Future[T]], discard: Callable[[], object] | None = None
    ) -> T:
        """``start()`` on the coordinators' loop; the outcome of the future it returns back on the
        broker's (both ways through the mailboxes: an outcome known at once goes back at once).
        Cancelled here (the asking connection is gone), it is cancelled there; not started yet, it
        never starts (``discard()``)."""
        inbox, outbox = self._inbox, self._outbox
        if inbox is None or outbox is None:
            if discard is not None:
                discard()
            raise KgroupError("the coordinators are not running")
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        call = _Call()

        def settle(outcome: asyncio.Future[T]) -> None:  # on the broker's loop
            if answer.done():
                return
            if outcome.cancelled():
                answer.cancel()
            elif (exc := outcome.exception()) is not None:
                answer.set_exception(exc)
            else:
                answer.set_result(outcome.result())

        def failed(exc: Exception) -> None:  # on the broker's loop
            if not answer.done():
                answer.set_exception(exc)

        def begin() -> None:  # on the coordinators' loop
            if call.cancelled:
                if discard is not None:
                    discard()
                return
            try:
                pending = call.pending = start()
            except Exception as exc:  # handed to the caller (a PeerError closes its connection)
                outbox.post(functools.partial(failed, exc))
                return
            if pending.done():
                outbox.post(functools.partial(settle, pending))
            else:
                pending.add_done_callback(lambda done: outbox.post(functools.partial(settle, done)))

        inbox.post(begin)
        try:
            return await answer
        except asyncio.CancelledError:
            if not answer.done() or answer.cancelled():
                inbox.post(call.cancel)
            raise

    async def call(self, node_id: int, envelope: Envelope) -> Response:
        """The answer of ``node_id``'s coordinator to one request."""
        if not self.host.loaded:
            return error_response(envelope.body, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        host = self.host
        return await self._hand_over(lambda: host.submit(node_id, envelope))

    async def delete_group(self, node_id: int, group_id: str) -> ErrorCode:
        if not self.host.loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

        async def delete() -> ErrorCode:
            return self.host.delete_group(node_id, group_id)

        return await self._on_coordinators(delete())

    async def end_transaction(self, partition: int, producer_id: int, committed: bool) -> bool:
        """A transaction marker reached ``__consumer_offsets``-``partition`` (from the transaction
        host): the producer's pending offsets there are committed or dropped, durably; True once
        written. Waits for the log's loading first."""
        await self.wait_loaded()

        async def end() -> bool:
            return self.host.end_transaction(partition, producer_id, committed)

        return await self._on_coordinators(end())

    async def inspect(self, read: Callable[[CoordinatorHost], T]) -> T:
        """``read(host)`` on the coordinators' thread, once loaded (tests, ``KafkaBroker.group``)."""
        await self.wait_loaded()

        async def run() -> T:
            return read(self.host)

        return await self._on_coordinators(run())

    def set_recorder(self, recorder: Any) -> None:
        """``serve --record``: the recorder follows every record from now on (on the coordinators'
        thread)."""

        def set_it() -> None:
            self.host.recorder = recorder

        if self._inbox is None:
            set_it()
        else:
            self._inbox.post(set_it)

    # --- what the broker tells the coordinators --------------------------------------------------------

    def _topics_changed(self) -> None:
        image = metadata_image(self._cluster)
        if self._inbox is None:
            self.host.set_image(image)
        else:  # (through the mailbox: a request that comes after the change sees it)
            self._inbox.post(functools.partial(self.host.set_image, image))
        if placement(self._cluster) != self._placement:  # the offsets topic was made: its leaders
            self.brokers_changed()

    def brokers_changed(self) -> None:
        """A broker stopped or started, or a leadership moved: groups follow their offsets partition."""
        where = self._placement = placement(self._cluster)
        if self._inbox is None:
            self.host.placement = where
        else:
            self._inbox.post(functools.partial(self.host.set_placement, where))

    # --- what the coordinators hand back ----------------------------------------------------------------

    async def _run_task(self, task: CoordinatorTask) -> object:
        """On the coordinators' loop: the task by the runner registered for its type, else
        ``task.run()`` in the tasks' thread."""
        runner = self._task_runners.get(type(task), run_apart)
        return await runner(task, self._places)

    async def _apart(self, work: Callable[[], object]) -> object:
        """``work()`` in the tasks' thread."""
        return await asyncio.get_running_loop().run_in_executor(self._tasks, work)

    async def _on_broker(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` on the broker's loop (from the coordinators')."""
        broker_loop = self._broker_loop
        assert broker_loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, broker_loop))

    def _publish_offsets(self, now_ms: int, entries: OffsetsEntries) -> None:
        """On the coordinators' thread: append to ``__consumer_offsets`` on the broker's loop (queued
        before the answer of the call that wrote them, so a client reading it after that answer sees
        them)."""
        outbox = self._outbox
        if outbox is None:
            self._appender.append(now_ms, entries)
        else:
            outbox.post(functools.partial(self._appender.append, now_ms, entries))
