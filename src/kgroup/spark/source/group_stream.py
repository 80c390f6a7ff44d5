"""``consume=group``: a streaming read whose partitions a real consumer group decides.

The query holds ``groupMembers`` members of the group ``kafka.group.id`` — :class:`kgroup.client.
GroupConsumer` instances (kgroup's pure member over the wire, kgroup's exact assignors) living on
an event loop in a background thread of the process that plans the query's batches. Each batch reads
only the partitions the members own, and the group's committed offsets follow the batches:

* **planning a batch** (``latestOffset``) is the members' ``poll()``: the previous batch is done
  when Spark plans the next one, so its end offsets are first committed to the group (with the
  members' generation), then the members poll — a rebalance another consumer started happens here,
  between batches, as a Kafka application rebalances inside ``poll()`` after processing; partitions
  given up are committed first (``onPartitionsRevoked``), partitions gained start at the group's
  committed offset (``startingOffsets`` when the group has none);
* the batch's offsets (Spark's checkpoint) record, per partition, where it starts and ends, and who
  owned it in which generation — so a query restarted from its checkpoint replays exactly the batch
  it planned;
* **when Spark has committed a batch** (``commit(end)``, which Spark calls while planning the next
  one, and :class:`GroupOffsetCommitter`, a streaming query listener registered by
  :func:`kgroup.spark.register`, for the batch Spark never plans after — the last one of an
  ``AvailableNow`` query) its end offsets are committed to the group with the owning member's id and
  generation, so Kafka's lag tools see the query and, once an ``AvailableNow`` query has finished,
  the group's lag is 0.

Spark's checkpoint stays the source of truth for the query itself (exactly-once file sinks); the
group's offsets are what other consumers of the group — and the query's next start without a
checkpoint — begin from. Records are fetched in the executors exactly as in partition mode.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kgroup.model import ErrorCode, KgroupError, TopicPartition
from kgroup.spark.source.kafka_io import OffsetLookup
from kgroup.spark.source.offsets import GROUP_KEY, BatchOwner, GroupBatchOffsets, batch_end_offsets
from kgroup.spark.source.options import SourceOptions
from kgroup.spark.source.ranges import (
    OffsetRange,
    data_loss_reporter,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from kgroup.spark.source.read_task import RangePartition, read_piece

if TYPE_CHECKING:  # kgroup.client (the wire protocol) is imported only by a query that uses a group
    from kgroup.client import GroupConsumer
    from kgroup.client.threaded import ThreadedGroupConsumers

__all__ = ["GroupMembers", "GroupOffsetCommitter", "KgroupGroupStreamReader", "commit_batch_to_group"]

LOG = logging.getLogger("kgroup.spark")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MemberView:
    """One member as a batch saw it: who it was, and its partitions' next offsets."""

    member_id: str
    generation: int
    group_instance_id: str | None
    positions: dict[TopicPartition, int]


class GroupMembers:
    """``groupMembers`` group members on their own event loop (:class:`kgroup.client.threaded.
    ThreadedGroupConsumers`, a daemon thread of this process)."""

    def __init__(self, options: SourceOptions) -> None:
        assert options.group is not None
        self.options = options
        self.settings = options.group
        self._timeout_s = options.api_timeout_ms / 1000
        from kgroup.client.threaded import ThreadedGroupConsumers

        self._threaded: ThreadedGroupConsumers = self._call(
            lambda: ThreadedGroupConsumers(self._make_consumers, timeout_s=self._timeout_s + 5)
        )
        self._consumers = self._threaded.consumers

    def _call(self, call: Callable[[], T]) -> T:
        from kgroup.client.threaded import LoopCallTimeout

        try:
            return call()
        except LoopCallTimeout:
            raise KgroupError(
                f"kafka.group.id: the group {self.settings.group_id!r} did not answer within "
                f"{self.options.api_timeout_ms} ms (kafka.default.api.timeout.ms); is the broker reachable?"
            ) from None

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._call(lambda: self._threaded.run(coro))

    def _make_consumers(self) -> list[GroupConsumer]:
        from kgroup.client import GroupConsumer
        from kgroup.member import MemberConfig

        s = self.settings
        topics = tuple(self.options.subscription.topics)
        pattern = (
            self.options.subscription.pattern
            if self.options.subscription.kind == "subscribePattern"
            else None
        )
        consumer_protocol = s.group_protocol == "consumer"
        consumers = []
        for i in range(s.members):
            config = MemberConfig(
                s.group_id,
                client_id=f"{s.client_id}-{i}",
                group_instance_id=None if s.group_instance_id is None else f"{s.group_instance_id}-{i}",
                session_timeout_ms=s.session_timeout_ms,
                heartbeat_interval_ms=s.heartbeat_interval_ms,
                max_poll_interval_ms=s.max_poll_interval_ms,
                # classic: onPartitionsRevoked commits what the query has processed. The consumer
                # protocol's member commits what was processed before it reconciles when auto-commit
                # is on (Kafka's maybeAutoCommitSyncBeforeRebalance): on, with no periodic commits
                enable_auto_commit=consumer_protocol,
                auto_commit_interval_ms=_NEVER_MS if consumer_protocol else 5000,
                commit_on_revoke=not consumer_protocol,
                assignors=s.assignors,
            )
            consumers.append(
                GroupConsumer(
                    self.options.bootstrap_servers,
                    config,
                    topics=() if pattern is not None else topics,
                    pattern=pattern,
                    request_timeout_ms=min(30000, self.options.api_timeout_ms),
                    metadata_max_age_ms=5000,  # notice new partitions and topics between batches
                    group_protocol=s.group_protocol,
                    remote_assignor=s.remote_assignor,
                )
            )
        return consumers

    async def _settle(self) -> list[MemberView]:
        """Poll every member until all are stable with their partitions' offsets known."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        while True:
            for c in self._consumers:
                await c.poll()
            await asyncio.sleep(0.02)
            views = self._views()
            if views is not None and await self._group_reconciled(views):
                return views
            if loop.time() >= deadline:
                phases = ", ".join(f"{c.member_id or '?'}: {c.state.lower()}" for c in self._consumers)
                raise KgroupError(
                    f"kafka.group.id: the group {self.settings.group_id!r} did not become stable within "
                    f"{self.options.api_timeout_ms} ms ({phases}); raise kafka.default.api.timeout.ms "
                    "or check the other members"
                )

    async def _group_reconciled(self, views: Sequence[MemberView]) -> bool:
        """Consumer protocol: a member only knows its own assignment, so a group still moving
        partitions (a member waiting for partitions another has not released yet) looks settled to
        each member; the batch waits until the coordinator says the group is Stable with our members
        at its assignment epoch (ConsumerGroupDescribe). The classic protocol's generations say it."""
        if self.settings.group_protocol != "consumer":
            return True
        from kgroup.client.oneshot import describe_consumer_group

        described = await describe_consumer_group(
            self.options.bootstrap_servers, self.settings.group_id, self._timeout_s
        )
        if described.error_code is not ErrorCode.NONE or described.group_state != "Stable":
            await asyncio.sleep(0.1)
            return False
        epochs = {m.member_id: m.member_epoch for m in described.members}
        return all(epochs.get(v.member_id) == described.assignment_epoch == v.generation for v in views)

    def _views(self) -> list[MemberView] | None:
        views = []
        generations = set()
        for c in self._consumers:
            if not c.has_member:
                continue  # a pattern that matches nothing yet
            member = _pure_member(c)
            if not c.settled:
                return None
            owned = member.assignment()
            positions = {tp: off for tp, off in member.positions().items() if tp in owned}
            if set(positions) != set(owned):
                return None  # OffsetFetch for new partitions still running
            # classic: every member is in the same generation; consumer protocol: once the group
            # is reconciled every member is at the assignment epoch
            generations.add(member.generation)
            views.append(
                MemberView(member.member_id, member.generation, member.config.group_instance_id, positions)
            )
        if len(generations) > 1:
            return None
        return views

    def plan(self, processed: Mapping[TopicPartition, int]) -> list[MemberView]:
        """The previous batch is done: record and commit its ends, then poll the group to stable."""

        async def run() -> list[MemberView]:
            await self._commit(processed)
            return await self._settle()

        return self._run(run())

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._run(self._commit(offsets))

    async def _commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        from kgroup.client import ClientError

        for c in self._consumers:
            if not c.has_member:
                continue
            owned = c.assignment
            mine = {tp: off for tp, off in offsets.items() if tp in owned and off >= 0}
            if not mine:
                continue
            # recorded first, whatever the member's state: a revocation the next poll starts
            # commits them (the classic member's commit on revoke, the consumer protocol's commit
            # before it reconciles)
            for tp, off in mine.items():
                c.record_processed(tp, off)
            if c.state != "STABLE":
                continue
            try:
                await c.commit(mine, timeout_ms=self.options.api_timeout_ms)
            except ClientError as exc:  # a rebalance started: the revocation commits these positions
                LOG.info("group commit deferred to the rebalance: %s", exc)

    def close(self) -> None:
        self._threaded.close()


def _stop_on_sigterm() -> None:
    """Make the group members leave when Spark ends the query.

    PySpark's streaming source runner calls the reader's ``stop()`` only from a ``finally`` around its
    request loop, and Spark ends that runner by destroying its process (SIGTERM, seen twice in a row),
    so the members never left: the other consumers of the group waited the whole session timeout for
    their partitions. In the runner's main thread, the first SIGTERM now raises ``SystemExit`` (the
    runner's ``finally`` calls ``stop()``, which closes every member: LeaveGroup, or the consumer
    protocol's leave heartbeat) and later ones are ignored while the members close (bounded by
    ``kafka.default.api.timeout.ms``)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def leave(_signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, leave)


#: auto-commit's interval when only the commit before a reconciliation is wanted (Kafka's maximum)
_NEVER_MS = 2**31 - 1


def _pure_member(consumer: Any) -> Any:
    """The pure member a :class:`GroupConsumer` drives, whichever group protocol it speaks."""
    return consumer.consumer_member if consumer.group_protocol == "consumer" else consumer.member


def batch_offsets(
    begin: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    members: Sequence[MemberView],
    options: SourceOptions,
) -> dict[str, Any]:
    """A planned batch's offsets JSON (:class:`GroupBatchOffsets`): its ends, its starts, and which
    member (id, generation) owned which partition."""
    assert options.group is not None
    owners = tuple(
        BatchOwner(
            m.member_id, m.generation, m.group_instance_id, tuple(tp for tp in end if tp in m.positions)
        )
        for m in members
    )
    group_id = options.group.group_id
    return GroupBatchOffsets(dict(end), dict(begin), group_id, options.bootstrap_servers, owners).to_json()


class KgroupGroupStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The planning side of a ``consume=group`` streaming read (see the module documentation)."""

    def __init__(self, options: SourceOptions) -> None:
        assert options.group is not None
        self.options = options
        self._members: GroupMembers | None = None
        self._lookup: OffsetLookup | None = None
        self._target: dict[TopicPartition, int] | None = None
        self._report = data_loss_reporter(options.fail_on_data_loss, LOG.warning)
        _stop_on_sigterm()

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._members = None
        self._lookup = None
        self._target = None
        self._report = data_loss_reporter(self.options.fail_on_data_loss, LOG.warning)

    @property
    def members(self) -> GroupMembers:
        if self._members is None:
            self._members = GroupMembers(self.options)
        return self._members

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.options)
        return self._lookup

    def _plan(
        self, processed: Mapping[TopicPartition, int], limit: ReadLimit | None
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int], list[MemberView]]:
        """Commit ``processed``, poll the group to stable, and plan: (begin, until, members)."""
        views = self.members.plan(processed)
        owned = sorted(tp for v in views for tp in v.positions)
        earliest = self.lookup.offsets(owned, "earliest")
        latest = self.lookup.offsets(owned, "latest")
        begin: dict[TopicPartition, int] = {}
        fresh = sorted(tp for v in views for tp, pos in v.positions.items() if pos < 0)
        if fresh:
            spec = self.options.starting
            if spec.kind == "specific":
                given = spec.as_dict()
                spec = type(spec)("specific", tuple((tp, given.get(tp, -2)) for tp in fresh))
            begin.update(resolve_offsets("startingOffsets", spec, fresh, earliest, latest, self._report))
        for v in views:
            for tp, pos in v.positions.items():
                if pos < 0:
                    continue
                if pos < earliest[tp]:
                    self._report(
                        f"the group's offset {pos} of {tp} is before the earliest kept, "
                        f"{earliest[tp]}"
                    )
                    pos = earliest[tp]
                begin[tp] = min(pos, latest[tp])
        until = dict(latest)
        if self._target is not None:  # AvailableNow: nothing past what was there at the start
            until = {tp: max(begin[tp], min(until[tp], self._target.get(tp, begin[tp]))) for tp in until}
        if isinstance(limit, ReadMaxRows):
            until = rate_limit(limit.max_rows, begin, until)
        elif limit is not None and not isinstance(limit, ReadAllAvailable):
            raise KgroupError(f"read limit: {limit!r} is not supported by the kgroup source")
        return begin, until, views

    def initialOffset(self) -> dict[str, Any]:
        # The query's first start (no checkpoint): where the group's members begin, nothing read yet.
        begin, _until, views = self._plan({}, None)
        return batch_offsets(begin, begin, views, self.options)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        subscribed = self.lookup.subscribed_partitions(
            self.options.subscription, self.options.fail_on_data_loss
        )
        self._target = self.lookup.offsets(subscribed, "latest")

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        processed = batch_end_offsets(start)
        begin, until, views = self._plan(processed, limit)
        if all(until[tp] <= begin[tp] for tp in until):
            return start  # nothing new: the same offsets tell Spark there is no batch to run
        return batch_offsets(begin, until, views, self.options)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        batch = GroupBatchOffsets.from_json(end)
        if batch is None:
            raise KgroupError(
                "consume=group: the checkpoint holds offsets of a consume=partition query; "
                "use a new checkpointLocation"
            )
        until, begin = batch.end, batch.start
        ranges = [
            OffsetRange(tp.topic, tp.partition, begin[tp], until[tp])
            for tp in sorted(until)
            if until[tp] > begin.get(tp, until[tp])
        ]
        return [RangePartition(p) for p in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_piece(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        if self._members is not None:
            self.members.commit(batch_end_offsets(end))

    def stop(self) -> None:
        if self._members is not None:
            self._members.close()
            self._members = None


def commit_batch_to_group(end_offset: Mapping[str, Any], timeout_s: float = 30.0) -> int:
    """Commit a finished batch's end offsets to its group with each owner's id and generation (the
    listener's path). Returns the partitions committed; a stale generation commits nothing (the
    group has moved on and the revocation committed these offsets already)."""
    batch = GroupBatchOffsets.from_json(end_offset)
    if batch is None:
        return 0
    return asyncio.run(_commit_as_owners(batch, timeout_s))


async def _commit_as_owners(batch: GroupBatchOffsets, timeout_s: float) -> int:
    from kgroup.client.oneshot import commit_as_member

    committed = 0
    for owner in batch.owners:
        offsets = {tp: batch.end[tp] for tp in owner.partitions if tp in batch.end}
        if not offsets:
            continue
        ok = await commit_as_member(
            batch.bootstrap,
            batch.group_id,
            owner.member_id,
            owner.generation,
            owner.group_instance_id,
            offsets,
            timeout_s,
        )
        committed += len(offsets) if ok else 0
    return committed


class GroupOffsetCommitter:
    """A streaming query listener: when a batch of a ``consume=group`` read has been committed by
    Spark, commit its end offsets to the group (see the module documentation)."""

    def __new__(cls) -> Any:
        from pyspark.sql.streaming.listener import StreamingQueryListener

        class _Committer(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                return None

            def onQueryProgress(self, event: Any) -> None:
                for source in event.progress.sources:
                    text = source.endOffset
                    if not text or GROUP_KEY not in text:
                        continue
                    try:
                        commit_batch_to_group(json.loads(text))
                    except Exception as exc:  # the next batch's planning commits it again
                        LOG.warning("kgroup: committing a batch's offsets to its group failed: %s", exc)

            def onQueryIdle(self, event: Any) -> None:
                return None

            def onQueryTerminated(self, event: Any) -> None:
                return None

        return _Committer()
