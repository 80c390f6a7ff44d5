"""Hypothesis state machine: appends, idempotent retries, reopen and crash-torn tails against a model."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from tests.log.batches import client_batch, decode, kio_batch
from tests.log.conftest import partition_settings

from kgroup.log import PartitionLog
from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

SETTINGS = {"segment_bytes": 700, "index_interval_bytes": 150}
PID = 42


class PartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kgroup-log-"))
        self.directory = self.root / "t-0"
        self.log = PartitionLog(self.directory, partition_settings(**SETTINGS), recover_tail=False)
        self.model: list[bytes] = []  # value of each offset
        self.batch_ends: list[int] = []  # log end offset after each batch
        self.sequence = 0
        self.last_idempotent: tuple[bytes, int, int] | None = None  # raw, base, last
        self.counter = 0

    def _values(self, count: int, size: int) -> list[bytes]:
        self.counter += 1
        return [b"%d-%d-" % (self.counter, n) + b"x" * size for n in range(count)]

    @rule(count=st.integers(1, 4), size=st.integers(0, 120), gzip=st.booleans())
    def append(self, count: int, size: int, gzip: bool) -> None:
        values = self._values(count, size)
        raw = client_batch(values) if gzip else kio_batch(values)
        result = self.log.append(raw, now_ms=1)
        assert result.base_offset == len(self.model)
        self.model.extend(values)
        self.batch_ends.append(len(self.model))

    @rule(count=st.integers(1, 3))
    def append_idempotent(self, count: int) -> None:
        values = self._values(count, 10)
        raw = kio_batch(values, producer_id=PID, producer_epoch=0, base_sequence=self.sequence)
        result = self.log.append(raw, now_ms=1)
        assert not result.duplicate and result.base_offset == len(self.model)
        self.sequence += count
        self.model.extend(values)
        self.batch_ends.append(len(self.model))
        self.last_idempotent = (raw, result.base_offset, result.last_offset)

    @precondition(lambda self: self.last_idempotent is not None)
    @rule()
    def retry_last_idempotent(self) -> None:
        assert self.last_idempotent is not None
        raw, base, last = self.last_idempotent
        result = self.log.append(raw, now_ms=1)
        assert result.duplicate and (result.base_offset, result.last_offset) == (base, last)

    @rule(gap=st.integers(1, 5))
    def out_of_order(self, gap: int) -> None:
        if self.last_idempotent is None:
            return
        raw = kio_batch([b"never"], producer_id=PID, producer_epoch=0, base_sequence=self.sequence + gap)
        try:
            self.log.append(raw, now_ms=1)
        except PeerError as error:
            assert error.error_code == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        else:
            raise AssertionError("an out-of-order sequence was appended")

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        self.log.close()
        self.log = PartitionLog(self.directory, partition_settings(**SETTINGS), recover_tail=not clean)
        assert self.log.recovery.truncated_bytes == 0

    @precondition(lambda self: bool(self.batch_ends))
    @rule(keep=st.floats(0, 0.999), zeros=st.booleans())
    def crash_tearing_the_last_batch(self, keep: float, zeros: bool) -> None:
        active = sorted(self.directory.glob("*.log"))[-1]
        self.log.close()
        data = active.read_bytes()
        if data:
            last = self.log_last_batch(data)
            start = len(data) - len(last)
            torn = data[: start + int(len(last) * keep)] + (b"\0" * 64 if zeros else b"")
            active.write_bytes(torn)
            # a batch whose last bytes were zeros anyway is whole again after a zero fill: it stays
            if torn[start : start + len(last)] != last:
                self.batch_ends.pop()
                del self.model[self.batch_ends[-1] if self.batch_ends else 0 :]
        self.log = PartitionLog(self.directory, partition_settings(**SETTINGS), recover_tail=True)
        # the producer learns where its sequence stands (a retry of a lost batch would be accepted)
        entry = self.log.producers.entry(PID)
        self.sequence = entry.last_seq + 1 if entry is not None else 0
        self.last_idempotent = None

    @staticmethod
    def log_last_batch(data: bytes) -> bytes:
        position = 0
        last = b""
        while position < len(data):
            size = int.from_bytes(data[position + 8 : position + 12], "big") + 12
            last = data[position : position + size]
            position += size
        return last

    @invariant()
    def log_matches_model(self) -> None:
        assert self.log.log_end_offset == len(self.model)
        records = []
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            batch = decode(self.log.read(offset, 1 << 20))
            records.extend(batch)
            offset = batch[-1][0] + 1
        assert [r[0] for r in records] == list(range(len(self.model)))
        assert [r[3] for r in records] == self.model

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


PartitionMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_partition_machine = PartitionMachine.TestCase
