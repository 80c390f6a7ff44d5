"""Invariants of a share partition under random members, acknowledgements, lock timeouts, leaves and
``kill -9`` restarts (rebuilt from the share coordinator's records):

* no offset is acknowledged (ACCEPT) twice, and nothing acknowledged or rejected is delivered again;
* no record is lost: once every lock has ended and a consumer drains the partition, every offset of
  the log was accepted, rejected, or archived after a delivery at the delivery-count limit;
* no delivery count is above the limit;
* an acquired record has one holder at a time;
* an acknowledgement succeeds exactly when its member holds every offset of it at or past the SPSO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.share.harness import Host

from kgroup.share import (
    AcknowledgementBatch,
    AcquiredRecords,
    FetchedBatch,
    SharePartitionConfig,
    ShareStateStore,
)

MEMBERS = ("a", "b", "c")
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
LOCK = 15000


@dataclass
class Model:
    max_deliveries: int
    #: offset -> (holder, lock deadline)
    holder: dict[int, tuple[str, int]] = field(default_factory=dict)
    accepted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    at_limit: set[int] = field(default_factory=set)
    held: dict[str, list[AcquiredRecords]] = field(
        default_factory=lambda: {m: [] for m in (*MEMBERS, "drain")}
    )

    def expire(self, now: int) -> None:
        for o in [o for o, (_, deadline) in self.holder.items() if deadline <= now]:
            del self.holder[o]

    def delivered(self, member: str, now: int, acquired: list[AcquiredRecords]) -> None:
        for r in acquired:
            assert 1 <= r.delivery_count <= self.max_deliveries
            for o in range(r.first_offset, r.last_offset + 1):
                assert o not in self.holder, (
                    f"offset {o} acquired by {member} while {self.holder[o]} holds it"
                )
                assert o not in self.accepted and o not in self.rejected, f"offset {o} delivered again"
                self.holder[o] = (member, now + LOCK)
                if r.delivery_count == self.max_deliveries:
                    self.at_limit.add(o)
        self.held[member].extend(acquired)


def log_for(log: list[FetchedBatch], offset: int, n: int) -> list[FetchedBatch]:
    return [b for b in log if b.last_offset >= offset][:n]


def check_cache(h: Host, limit: int) -> None:
    for _first, _last, per_offset in h.sp.cached_batches():
        for _o, _state, count, _member in per_offset or []:
            assert 0 <= count <= limit
    for k in h.sp.cached_batches():
        whole = h.sp.batch_state(k[0])
        if whole is not None:
            assert 0 <= whole[1] <= limit


@settings(max_examples=120)
@given(st.data())
def test_share_partition_invariants(data: st.DataObject) -> None:
    limit = data.draw(st.integers(2, 6), label="delivery limit")
    cfg = SharePartitionConfig(
        max_in_flight_records=data.draw(st.integers(5, 40), label="max locks"),
        max_delivery_count=limit,
        record_lock_duration_ms=LOCK,
    )
    sizes = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=12), label="log batches")
    log: list[FetchedBatch] = []
    for size in sizes:
        base = log[-1].last_offset + 1 if log else 0
        log.append(FetchedBatch(base, base + size - 1))
    end = log[-1].last_offset + 1
    h = Host(cfg, store=ShareStateStore(updates_per_snapshot=3))
    model = Model(limit)

    for _ in range(data.draw(st.integers(1, 40), label="steps")):
        op = data.draw(st.sampled_from(["acquire", "acquire", "ack", "ack", "advance", "leave", "restart"]))
        member = data.draw(st.sampled_from(MEMBERS))
        if op == "acquire":
            offset = h.sp.next_fetch_offset()
            fetched = log_for(log, offset, data.draw(st.integers(1, 4)))
            if not fetched:
                continue
            r = h.acquire(
                member,
                fetched,
                max_fetch=data.draw(st.integers(1, 12)),
                fetch_offset=offset,
                record_limit=data.draw(st.booleans()),
            )
            model.delivered(member, h.now, r.acquired)
        elif op == "ack":
            if not model.held[member]:
                continue
            got = data.draw(st.sampled_from(model.held[member]))
            first = data.draw(st.integers(got.first_offset, got.last_offset))
            last = data.draw(st.integers(first, got.last_offset))
            if data.draw(st.booleans()):
                types = (data.draw(st.sampled_from([ACCEPT, RELEASE, REJECT, RENEW])),)
            else:
                types = tuple(
                    data.draw(st.sampled_from([ACCEPT, RELEASE, REJECT, RENEW]))
                    for _ in range(last - first + 1)
                )
            spso = h.sp.start_offset
            live = [o for o in range(first, last + 1) if o >= spso]
            expect_ok = all(model.holder.get(o, ("", 0))[0] == member for o in live)
            res = h.acknowledge(member, AcknowledgementBatch(first, last, types))
            assert (res.error is None) == expect_ok, (res.error, first, last, spso, model.holder)
            if res.error is None:
                for o in live:
                    t = types[o - first] if len(types) > 1 else types[0]
                    if t == RENEW:
                        model.holder[o] = (member, h.now + LOCK)
                        continue
                    del model.holder[o]
                    if t == ACCEPT:
                        assert o not in model.accepted, f"offset {o} acknowledged twice"
                        model.accepted.add(o)
                    elif t == REJECT:
                        model.rejected.add(o)
        elif op == "advance":
            h.advance(data.draw(st.integers(0, 2 * LOCK)))
            model.expire(h.now)
        elif op == "leave":
            res = h.release(member)
            released = sorted(
                o
                for b in (res.write.batches if res.write else ())
                for o in range(b.first_offset, b.last_offset + 1)
            )
            assert released == sorted(o for o, (m, _) in model.holder.items() if m == member)
            for o in released:
                del model.holder[o]
        else:
            h.restart()
            model.holder.clear()
        check_cache(h, limit)

    # Drain: every lock ends, then one consumer takes and accepts everything, until every offset of the
    # log is terminal. (The SPSO itself may stay behind a terminal batch while a gap window restored
    # from the persister is open and no new record arrives: Kafka's findLastOffsetAcknowledged stops
    # there too.)
    h.advance(2 * LOCK)
    model.expire(h.now)
    for _ in range(end * (limit + 2) + 10):
        if all_terminal(h, end):
            break
        offset = h.sp.next_fetch_offset()
        fetched = log_for(log, offset, 4)
        r = h.acquire("drain", fetched, fetch_offset=offset) if fetched else None
        if r is not None and r.acquired:
            model.delivered("drain", h.now, r.acquired)
            for got in r.acquired:
                res = h.acknowledge(
                    "drain", AcknowledgementBatch(got.first_offset, got.last_offset, (ACCEPT,))
                )
                assert res.error is None
                for o in range(got.first_offset, got.last_offset + 1):
                    assert o not in model.accepted, f"offset {o} acknowledged twice"
                    model.accepted.add(o)
                    del model.holder[o]
        else:
            h.advance(2 * LOCK)
            model.expire(h.now)
        check_cache(h, limit)
    assert all_terminal(h, end), "the partition never drained"
    lost = set(range(end)) - model.accepted - model.rejected - model.at_limit
    assert not lost, f"records lost: {sorted(lost)}"
    assert not model.accepted & model.rejected


def all_terminal(h: Host, end: int) -> bool:
    """Every offset from the SPSO to the log's end is cached and acknowledged or archived."""
    for o in range(h.sp.start_offset, end):
        st = h.sp.record_state(o)
        if st is None or not st[0].terminal:
            return False
    return True
