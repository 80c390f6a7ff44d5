"""The ownership tracker's incremental bookkeeping (single-claimant refreshes, whole-claim flips,
claims with stale partitions) equals a from-scratch recomputation after any sequence of claim
changes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.sim.ownership import OwnershipTracker

PARTITIONS = 6
CONSUMERS = ("a", "b", "c")


class Reference:
    """The definitions of ``kgroup.sim.ownership``, recomputed over every partition at every change."""

    def __init__(self, subscribed: set[int]) -> None:
        self.claims: dict[str, tuple[frozenset[int], bool, frozenset[int]]] = {}
        self.subscribed = subscribed
        self.owner = ["" for _ in range(PARTITIONS)]
        self.since = [0] * PARTITIONS
        self.intervals: list[tuple[int, str, int, int]] = []
        self.totals = {"unowned": 0, "double": 0, "zombie": 0, "overlap": 0}
        self.last = 0

    def counts(self) -> dict[str, int]:
        out = {"unowned": 0, "double": 0, "zombie": 0, "overlap": 0}
        for p in range(PARTITIONS):
            # a stale partition of a current claim is a zombie claim
            standings = [cur and p not in stale for parts, cur, stale in self.claims.values() if p in parts]
            current = sum(standings)
            zombie = not all(standings)
            out["unowned"] += p in self.subscribed and current == 0
            out["double"] += current >= 2
            out["zombie"] += zombie
            out["overlap"] += zombie and current > 0
        return out

    def account(self, now: int) -> None:
        for name, n in self.counts().items():
            self.totals[name] += (now - self.last) * n
        self.last = now

    def claim(
        self, consumer: str, parts: frozenset[int], current: bool, stale: frozenset[int], now: int
    ) -> None:
        self.claims[consumer] = (parts, current, stale)
        for p in range(PARTITIONS):
            holders = [c for c, (ps, cur, st) in self.claims.items() if p in ps and cur and p not in st]
            owner = min(holders) if holders else ""
            if owner != self.owner[p]:
                if self.owner[p] and now > self.since[p]:
                    self.intervals.append((p, self.owner[p], self.since[p], now))
                self.owner[p] = owner
                self.since[p] = now

    def close(self, now: int) -> None:
        for p, owner in enumerate(self.owner):
            if owner and now > self.since[p]:
                self.intervals.append((p, owner, self.since[p], now))


step = st.tuples(
    st.sampled_from(CONSUMERS),
    st.frozensets(st.integers(0, PARTITIONS - 1)) | st.none(),  # None: the same partitions (a flip)
    st.booleans(),
    st.integers(0, 50),
    st.frozensets(st.integers(0, PARTITIONS - 1)),  # stale partitions (those of the claim)
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(step, max_size=40), subscribed=st.frozensets(st.integers(0, PARTITIONS - 1)))
def test_tracker_matches_a_from_scratch_recomputation(
    steps: list[tuple[str, frozenset[int] | None, bool, int, frozenset[int]]], subscribed: frozenset[int]
) -> None:
    own = OwnershipTracker()
    own.add_partitions(PARTITIONS, 0)
    own.set_subscribed(subscribed)
    own.counting_unowned = True
    ref = Reference(set(subscribed))
    held: dict[str, tuple[frozenset[int], bool, frozenset[int]]] = {
        c: (frozenset(), False, frozenset()) for c in CONSUMERS
    }
    now = 0
    for consumer, parts, current, dt, stale_drawn in steps:
        now += dt
        own.account(now)
        ref.account(now)
        old, was_current, was_stale = held[consumer]
        new = old if parts is None else parts  # the very same object: the tracker's flip path
        stale = stale_drawn & new if len(stale_drawn) % 2 else frozenset()  # half the steps: none
        own.update_claims(consumer, old, new, current, was_current, now, stale, was_stale)
        ref.claim(consumer, new, current, stale, now)
        held[consumer] = (new, current, stale)
        expected = ref.counts()
        assert (own.n_unowned, own.n_double, own.n_zombie, own.n_overlap) == (
            expected["unowned"],
            expected["double"],
            expected["zombie"],
            expected["overlap"],
        )
    now += 10
    own.account(now)
    ref.account(now)
    own.close(now)
    ref.close(now)
    assert (own.unowned_ms, own.double_ms, own.zombie_ms, own.zombie_overlap_ms) == (
        ref.totals["unowned"],
        ref.totals["double"],
        ref.totals["zombie"],
        ref.totals["overlap"],
    )
    assert sorted(own.intervals) == sorted(ref.intervals)
