"""A share consumer's share session with one broker and its acknowledgement batches, pure: Kafka 4.4's
``ShareSessionHandler`` and ``Acknowledgements.getAcknowledgementBatches``.

A share session lives on the partition leader, keyed by (group, member). The opening ShareFetch has
epoch 0 and names every partition wanted from that node; it may carry no acknowledgements (the broker
answers ``INVALID_REQUEST``). Each answered request moves the epoch on (1, 2, …; after
``Integer.MAX_VALUE`` back to 1); an incremental fetch names only partitions added to the session and
partitions with acknowledgements, and lists removed ones as forgotten. ``SHARE_SESSION_NOT_FOUND`` or
``INVALID_SHARE_SESSION_EPOCH`` resets the session: the next fetch is a full one at epoch 0. Closing
sends epoch -1 (``FINAL_EPOCH``): the broker releases what the member still holds there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgroup.model import ErrorCode, TopicId
from kgroup.share.records import AcknowledgeType

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "AcknowledgeType",
    "AcknowledgementBatch",
    "FetchPlan",
    "ShareSession",
    "acknowledgement_batches",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1

#: (topic id, partition)
SharePartitionKey = tuple[TopicId, int]


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One ``AcknowledgementBatch`` of a request: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


def acknowledgement_batches(acks: Mapping[int, int]) -> list[AcknowledgementBatch]:
    """``Acknowledgements.getAcknowledgementBatches``: consecutive offsets form a batch; a batch whose
    offsets share one type carries that type once, else one type per offset."""
    batches: list[AcknowledgementBatch] = []
    offsets = sorted(acks)
    start = 0
    while start < len(offsets):
        end = start
        while end + 1 < len(offsets) and offsets[end + 1] == offsets[end] + 1:
            end += 1
        types = tuple(int(acks[o]) for o in offsets[start : end + 1])
        if len(set(types)) == 1:
            types = types[:1]
        batches.append(AcknowledgementBatch(offsets[start], offsets[end], types))
        start = end + 1
    return batches


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``: 0 -> 1, ..., ``Integer.MAX_VALUE`` -> 1; -1 stays -1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """What the next ShareFetch to a node says: its epoch, the partitions it names (with their
    acknowledgements, if any) and the partitions it forgets."""

    epoch: int
    partitions: dict[SharePartitionKey, list[AcknowledgementBatch]]
    forgotten: tuple[SharePartitionKey, ...]
    #: partitions in the session once this request is answered
    session_after: frozenset[SharePartitionKey]


class ShareSession:
    """The share session with one node (``ShareSessionHandler``)."""

    def __init__(self) -> None:
        self.epoch = INITIAL_EPOCH
        self._partitions: frozenset[SharePartitionKey] = frozenset()

    @property
    def partitions(self) -> frozenset[SharePartitionKey]:
        return self._partitions

    def plan_fetch(
        self, wanted: Iterable[SharePartitionKey], acks: Mapping[SharePartitionKey, Mapping[int, int]]
    ) -> FetchPlan:
        """The next ShareFetch, taken as sent: the full request at epoch 0 (acknowledgements cannot
        ride on it: the caller fails them), else the incremental one. The epoch moves on at once, so
        a ShareAcknowledge may follow on the same connection before the answer (the broker reads one
        connection's requests in order)."""
        target = frozenset(wanted)
        if self.epoch == INITIAL_EPOCH:
            plan = FetchPlan(INITIAL_EPOCH, {key: [] for key in sorted(target, key=_order)}, (), target)
        else:
            named: dict[SharePartitionKey, list[AcknowledgementBatch]] = {}
            for key in sorted(target - self._partitions, key=_order):
                named[key] = []
            for key in sorted(acks, key=_order):
                if key in target or key in self._partitions:
                    named[key] = acknowledgement_batches(acks[key])
            forgotten = tuple(sorted(self._partitions - target, key=_order))
            plan = FetchPlan(self.epoch, named, forgotten, target)
        self._partitions = target
        self.epoch = next_epoch(self.epoch)
        return plan

    def plan_acknowledge(
        self, acks: Mapping[SharePartitionKey, Mapping[int, int]], *, closing: bool
    ) -> FetchPlan:
        """A ShareAcknowledge in the session (``closing``: with epoch -1, which ends the session), taken
        as sent. At epoch 0 there is no session to acknowledge in: the caller fails the
        acknowledgements instead (Kafka's "Cannot send acknowledgements on initial epoch")."""
        named = {key: acknowledgement_batches(acks[key]) for key in sorted(acks, key=_order)}
        epoch = FINAL_EPOCH if closing else self.epoch
        plan = FetchPlan(epoch, named, (), frozenset() if closing else self._partitions)
        if closing:
            self.reset()
        elif self.epoch != INITIAL_EPOCH:
            self.epoch = next_epoch(self.epoch)
        return plan

    def on_answer(self, error: ErrorCode) -> None:
        """A ShareFetch or ShareAcknowledge of the session was answered with this top-level error."""
        if error in (ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH):
            self.reset()

    def on_failure(self) -> None:
        """A request failed (disconnect, timeout): the broker may or may not have seen it; start over."""
        self.reset()

    def reset(self) -> None:
        self.epoch = INITIAL_EPOCH
        self._partitions = frozenset()


def _order(key: SharePartitionKey) -> tuple[str, int]:
    return str(key[0]), key[1]
