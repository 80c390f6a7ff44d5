"""The coordinator under random request sequences (hypothesis' state machine): producers of two
transactional ids initialise, recover, add partitions and offsets, commit and abort with transactions v1
and v2, time passes and the sweeps run, markers complete in any order, and the coordinator is rebuilt from
its log's bytes. The invariants:

- the log's transitions are Kafka's legal ones, and an epoch of a producer id never goes back;
- only the producer handed the current producer id and epoch adds to the transaction (one ongoing
  transaction per transactional id, zombies fenced);
- every PrepareCommit ends in CompleteCommit and every PrepareAbort in CompleteAbort;
- replaying the log rebuilds the state (from records; from bytes all but the unpersisted last epoch).
"""

from __future__ import annotations

import dataclasses

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.api import EndTxnAnswer, InitProducerIdAnswer, TxnTimer
from kgroup.transactions.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from kgroup.transactions.records import decode_record, encode_key, encode_value
from kgroup.transactions.state import TV_0, TV_1, TV_2, TxnState, log_value_version

from .helpers import Host

IDS = ("a", "b")
PARTS = (TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0))
S = TxnState


class Coordinator(RuleBasedStateMachine):
    #: the cluster's transaction.version; clients use transactions v2 only where it is 2 (as ApiVersions
    #: tells them), so each request's version is drawn from ``client_versions``
    server_version = TV_2
    client_versions: tuple[int, ...] = (TV_0, TV_2)

    def __init__(self) -> None:
        super().__init__()
        self.host = Host(
            config=TxnCoordinatorConfig(
                transaction_log_partitions=2,
                transactional_id_expiration_ms=500_000,
                transaction_version=self.server_version,
            )
        )
        #: what each transactional id's producers were handed, latest last
        self.handed: dict[str, list[tuple[int, int]]] = {t: [] for t in IDS}

    def _hand(self, txn_id: str, pid: int, epoch: int) -> None:
        self.handed[txn_id].append((pid, epoch))

    def _some(self, txn_id: str, data: st.DataObject) -> tuple[int, int]:
        """A producer's (id, epoch): mostly the latest handed out, sometimes a zombie's or a stranger's."""
        handed = self.handed[txn_id]
        if not handed:
            return 1, 0
        return data.draw(st.sampled_from(handed[-1:] * 3 + handed), label="producer")

    @rule(txn_id=st.sampled_from(IDS), recover=st.booleans(), data=st.data())
    def init(self, txn_id: str, recover: bool, data: st.DataObject) -> None:
        pid, epoch = self._some(txn_id, data) if recover and self.handed[txn_id] else (-1, -1)
        answer = self.host.init(
            txn_id, timeout=data.draw(st.sampled_from([1000, 60_000])), pid=pid, epoch=epoch
        )
        assert isinstance(answer, InitProducerIdAnswer)
        if answer.error is ErrorCode.NONE:
            self._hand(txn_id, answer.producer_id, answer.producer_epoch)

    @rule(txn_id=st.sampled_from(IDS), data=st.data())
    def add(self, txn_id: str, data: st.DataObject) -> None:
        tv = data.draw(st.sampled_from(self.client_versions), label="client version")
        pid, epoch = self._some(txn_id, data)
        parts = data.draw(st.lists(st.sampled_from(PARTS), min_size=1, max_size=3, unique=True))
        error = self.host.add(pid, epoch, *parts, txn_id=txn_id, tv=tv)
        if error is ErrorCode.NONE:
            assert self.handed[txn_id] and (pid, epoch) == self.handed[txn_id][-1], "a fenced producer added"
            m = self.host.meta(txn_id)
            assert m.state is S.ONGOING and set(parts) <= set(m.partitions)

    @rule(txn_id=st.sampled_from(IDS), data=st.data())
    def add_offsets(self, txn_id: str, data: st.DataObject) -> None:
        pid, epoch = self._some(txn_id, data)
        if self.host.add_offsets(pid, epoch, "group", txn_id=txn_id) is ErrorCode.NONE:
            assert (pid, epoch) == self.handed[txn_id][-1], "a fenced producer added offsets"

    @rule(txn_id=st.sampled_from(IDS), commit=st.booleans(), data=st.data())
    def end(self, txn_id: str, commit: bool, data: st.DataObject) -> None:
        tv = data.draw(st.sampled_from(self.client_versions), label="client version")
        pid, epoch = self._some(txn_id, data)
        before = self.host.coordinator.metadata(txn_id)
        answer = self.host.end(pid, epoch, commit, tv, txn_id=txn_id)
        assert isinstance(answer, EndTxnAnswer)
        if answer.error is ErrorCode.NONE and tv == TV_2:
            self._hand(txn_id, answer.producer_id, answer.producer_epoch)
        if answer.error is ErrorCode.NONE and before is not None and before.state is S.ONGOING:
            assert self.host.meta(txn_id).state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)

    @rule(data=st.data())
    def write_some_markers(self, data: st.DataObject) -> None:
        if self.host.markers:
            m = self.host.markers.pop(data.draw(st.integers(0, len(self.host.markers) - 1)))
            self.host.take(
                self.host.coordinator.markers_written(m.transactional_id, m.producer_id, m.producer_epoch)
            )

    @rule(ms=st.sampled_from([1, 999, 20_000, 600_000]))
    def time_passes(self, ms: int) -> None:
        self.host.now += ms
        for timer in TxnTimer:
            self.host.take(self.host.coordinator.on_timer(timer, self.host.now))

    @rule()
    def rebuilt_from_the_log_bytes(self) -> None:
        """The broker restarts: a new coordinator loads the log's bytes; pending markers are asked again."""
        version = log_value_version(self.host.config.transaction_version)
        entries = [
            (encode_key(r.transactional_id), None if r.value is None else encode_value(r.value, version))
            for r in self.host.log
        ]
        fresh = TransactionCoordinator(self.host.config, lambda: next(self.host.ids))
        records = [decode_record(k, v) for k, v in entries]
        result = fresh.load_all([r for r in records if r is not None], self.host.now)
        for txn_id in IDS:
            live, loaded = self.host.coordinator.metadata(txn_id), fresh.metadata(txn_id)
            assert (live is None) == (loaded is None)
            if live is not None and loaded is not None:
                # not in the log: the last epoch, the partitions' order, and below version 1 the
                # previous and next producer ids (tagged fields)
                unwritten = {"last_producer_epoch": live.last_producer_epoch, "partitions": live.partitions}
                if version == 0:
                    assert (loaded.prev_producer_id, loaded.next_producer_id) == (-1, -1)
                    unwritten |= {
                        "prev_producer_id": live.prev_producer_id,
                        "next_producer_id": live.next_producer_id,
                    }
                assert dataclasses.replace(loaded, **unwritten) == live  # type: ignore[arg-type]
                assert set(loaded.partitions) == set(live.partitions)
        self.host.coordinator = fresh
        self.host.log = [r for r in records if r is not None]  # the log as the new coordinator read it
        self.host.markers = []
        self.host.take(result)

    @invariant()
    def log_is_legal_and_replays_to_the_state(self) -> None:
        last: dict[str, object] = {}
        epochs: dict[tuple[str, int], int] = {}
        replayed = TransactionCoordinator(self.host.config, lambda: 0)
        for record in self.host.log:
            replayed.replay(record)
            m = record.value
            prev = last.get(record.transactional_id)
            if m is None:
                last.pop(record.transactional_id, None)
                continue
            if prev is None:
                assert m.state is S.EMPTY
            else:
                assert isinstance(prev, type(m))
                assert prev.state in m.state.valid_previous, (prev.state, m.state)
                if prev.state is S.PREPARE_COMMIT:
                    assert m.state is S.COMPLETE_COMMIT
                if prev.state is S.PREPARE_ABORT:
                    assert m.state is S.COMPLETE_ABORT
            key = (record.transactional_id, m.producer_id)
            assert m.producer_epoch >= epochs.get(key, -1), "an epoch went back"
            epochs[key] = m.producer_epoch
            last[record.transactional_id] = m
        for txn_id in IDS:
            assert replayed.metadata(txn_id) == self.host.coordinator.metadata(txn_id)

    def teardown(self) -> None:
        # every marker written: nothing is left preparing
        self.host.write_markers()
        for txn_id in IDS:
            m = self.host.coordinator.metadata(txn_id)
            assert m is None or m.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE)


class CoordinatorV1(Coordinator):
    """A cluster at transaction.version 1: the flexible log value, transactions v1 only."""

    server_version = TV_1
    client_versions = (TV_0,)


class CoordinatorV0(Coordinator):
    """A cluster at transaction.version 0: log value version 0."""

    server_version = TV_0
    client_versions = (TV_0,)


_SETTINGS = settings(max_examples=60, stateful_step_count=40, deadline=None)
Coordinator.TestCase.settings = _SETTINGS
CoordinatorV1.TestCase.settings = settings(_SETTINGS, max_examples=25)
CoordinatorV0.TestCase.settings = settings(_SETTINGS, max_examples=25)
test_coordinator_state_machine = Coordinator.TestCase
test_coordinator_state_machine_transaction_version_1 = CoordinatorV1.TestCase
test_coordinator_state_machine_transaction_version_0 = CoordinatorV0.TestCase
