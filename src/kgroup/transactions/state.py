"""The transaction states (``TransactionState``), their legal transitions, and the transaction versions
(the ``transaction.version`` feature, ``TransactionVersion``)."""

from __future__ import annotations

import enum

__all__ = [
    "MAX_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TV_0",
    "TV_1",
    "TV_2",
    "TxnState",
    "is_epoch_exhausted",
    "log_value_version",
    "supports_epoch_bump",
]

#: ``RecordBatch.NO_PRODUCER_ID`` / ``NO_PRODUCER_EPOCH``
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: ``Short.MAX_VALUE``
MAX_EPOCH = 0x7FFF

#: ``TransactionVersion``: 0 and 1 are transactions v1 (1 writes the flexible log value), 2 bumps the
#: epoch on every transaction end (KIP-890 part 2)
TV_0, TV_1, TV_2 = 0, 1, 2


def supports_epoch_bump(version: int) -> bool:
    """``TransactionVersion.supportsEpochBump``: transactions v2."""
    return version >= TV_2


def log_value_version(version: int) -> int:
    """``TransactionVersion.transactionLogValueVersion``: the ``TransactionLogValue`` version the
    coordinator writes at the cluster's finalized ``transaction.version``."""
    return 1 if version >= TV_1 else 0


def is_epoch_exhausted(epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``: no epoch may reach ``Short.MAX_VALUE`` through a client,
    so that the coordinator can always fence one more time."""
    return epoch >= MAX_EPOCH - 1


class TxnState(enum.Enum):
    """``TransactionState``: its id (the byte in the log), its name (DescribeTransactions,
    ListTransactions) and whether an idle transactional id in it may expire."""

    EMPTY = (0, "Empty", True)
    ONGOING = (1, "Ongoing", False)
    PREPARE_COMMIT = (2, "PrepareCommit", False)
    PREPARE_ABORT = (3, "PrepareAbort", False)
    COMPLETE_COMMIT = (4, "CompleteCommit", True)
    COMPLETE_ABORT = (5, "CompleteAbort", True)
    DEAD = (6, "Dead", False)
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", False)

    def __init__(self, state_id: int, state_name: str, expiration_allowed: bool) -> None:
        self.id = state_id
        self.state_name = state_name
        self.expiration_allowed = expiration_allowed

    @property
    def valid_previous(self) -> frozenset[TxnState]:
        """The states this state may be entered from."""
        return _VALID_PREVIOUS[self]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        state = _BY_ID.get(state_id)
        if state is None:
            raise ValueError(f"Unknown transaction state id {state_id} from the transaction status message")
        return state

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_S = TxnState
_VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    # transactions v2 may abort from Empty and the Complete states (a client unsure of the server's state)
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
_BY_ID = {s.id: s for s in TxnState}
_BY_NAME = {s.state_name: s for s in TxnState}
