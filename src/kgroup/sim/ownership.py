"""Who owns which partition, second by second: the stop-the-world, double-ownership and zombie clocks.

A consumer *claims* the partitions its member believes it holds (``ClassicConsumerMember.assignment()``).
A claim is *current* when the member's generation is the group's generation and the coordinator
still counts the member in the group; any other claim by a running process is a *zombie* claim (a
member of a stale generation that has not noticed yet). For every partition the tracker keeps the
claimants and integrates over virtual time:

* ``unowned_ms``  – partitions subscribed by the group with no current claimant (from the first
  Stable on: before the group ever formed, nobody is expected to own anything);
* ``double_ms``   – partitions with two or more current claimants (must stay 0);
* ``zombie_ms``   – partitions with at least one zombie claimant;
* ``zombie_overlap_ms`` – partitions with a zombie claimant *and* a current one: two processes
  working on one partition at once. Kafka's classic protocol has this window (``docs/member.md``):
  it is reported on its own, never inside ``double_ms``. A zombie claim stays one when its member
  rejoins past the generations it missed, for the partitions another member was given meanwhile,
  until its SyncGroup answer revokes them (the ``stale`` partitions of :meth:`update_claims`;
  ``docs/simulator.md``, "A zombie that rejoins");
* ``outside_subscription_ms`` – partitions that the assignment of the current Stable generation
  gives a member outside its subscription (Kafka's eager ``sticky`` returns a stale claim to a
  member that left the topic; the member refuses the assignment and rejoins, so nobody consumes
  them): reported on its own, not as an invariant violation (``docs/member.md``).

All of them are partition-milliseconds (a 2-partition gap of 1 s counts 2000). The tracker also keeps
each partition's owner intervals for the timeline chart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["OwnershipTracker", "given_away_while_missing"]

_NONE: frozenset[int] = frozenset()

NO_OWNER = ""
#: owner intervals kept for the timeline chart (bounded memory on long runs)
MAX_INTERVALS = 500_000


class OwnershipTracker:
    __slots__ = (
        "_claimants",
        "_current_count",
        "_last_ms",
        "_overlap",
        "_owner",
        "_owner_since",
        "_subscribed",
        "_subscribed_list",
        "_zombie",
        "counting_unowned",
        "double_ms",
        "intervals",
        "intervals_dropped",
        "n_double",
        "n_outside",
        "n_overlap",
        "n_unowned",
        "n_zombie",
        "outside_subscription_ms",
        "unowned_ms",
        "zombie_ms",
        "zombie_overlap_ms",
    )

    def __init__(self) -> None:
        self._claimants: list[dict[str, bool]] = []  # partition -> consumer -> current?
        self._current_count: list[int] = []
        self._zombie: list[bool] = []
        self._overlap: list[bool] = []
        self._subscribed: list[bool] = []
        self._subscribed_list: list[int] | None = []  # subscribed(), kept until the set changes
        self._owner: list[str] = []
        self._owner_since: list[int] = []
        self.intervals: list[tuple[int, str, int, int]] = []  # (partition, consumer, start, end)
        self.intervals_dropped = 0
        self.n_unowned = 0  # subscribed partitions without a current claimant
        self.n_double = 0
        self.n_zombie = 0
        self.n_overlap = 0
        self.unowned_ms = 0
        self.double_ms = 0
        self.zombie_ms = 0
        self.zombie_overlap_ms = 0
        self.n_outside = 0  # partitions the Stable assignment gives members outside their subscription
        self.outside_subscription_ms = 0
        self.counting_unowned = False
        self._last_ms = 0

    def add_partitions(self, count: int, now_ms: int) -> None:
        for _ in range(count):
            self._claimants.append({})
            self._current_count.append(0)
            self._zombie.append(False)
            self._overlap.append(False)
            self._subscribed.append(False)
            self._owner.append(NO_OWNER)
            self._owner_since.append(now_ms)

    # --- time ----------------------------------------------------------------------------------------

    def account(self, now_ms: int) -> None:
        """Integrate the counters up to ``now_ms`` (call before anything changes at ``now_ms``)."""
        dt = now_ms - self._last_ms
        if dt <= 0:
            return
        self._last_ms = now_ms
        if self.counting_unowned:
            self.unowned_ms += dt * self.n_unowned
        self.double_ms += dt * self.n_double
        self.zombie_ms += dt * self.n_zombie
        self.zombie_overlap_ms += dt * self.n_overlap
        self.outside_subscription_ms += dt * self.n_outside

    # --- subscription --------------------------------------------------------------------------------

    def set_subscribed(self, subscribed: Iterable[int]) -> None:
        self._subscribed_list = None
        wanted = set(subscribed)
        for p in range(len(self._subscribed)):
            now_sub = p in wanted
            if now_sub != self._subscribed[p]:
                if self._current_count[p] == 0:
                    self.n_unowned += 1 if now_sub else -1
                self._subscribed[p] = now_sub

    def subscribed(self) -> list[int]:
        """The subscribed partitions, in order (the same list until the subscribed set changes:
        read it, do not change it)."""
        if self._subscribed_list is None:
            self._subscribed_list = [p for p, s in enumerate(self._subscribed) if s]
        return self._subscribed_list

    # --- claims --------------------------------------------------------------------------------------

    def update_claims(
        self,
        consumer: str,
        old: frozenset[int],
        new: frozenset[int],
        current: bool,
        was_current: bool,
        now_ms: int,
        stale: frozenset[int] = _NONE,
        was_stale: frozenset[int] = _NONE,
    ) -> None:
        """``consumer`` claimed ``old`` (current = ``was_current``) and now claims ``new`` (``current``).

        ``stale`` (a subset of ``new``) are partitions of a current claim that are still zombie
        claims (``was_stale``: the same of ``old``)."""
        if stale or was_stale:
            self._update_standings(consumer, old, new, current, stale, now_ms)
            return
        touched: Iterable[int]
        touched = old ^ new if current == was_current else old | new
        claimants = self._claimants
        refresh = self._refresh
        if current != was_current and (old is new or old == new):
            # The same partitions change standing (a new generation, a member rejoining): where the
            # consumer is the only claimant, the outcome is known without a full refresh.
            self._flip(consumer, touched, current, now_ms)
            return
        for p in touched:
            claims = claimants[p]
            if p in new:
                claims[consumer] = current
            else:
                claims.pop(consumer, None)
            refresh(p, now_ms)

    def _update_standings(
        self,
        consumer: str,
        old: frozenset[int],
        new: frozenset[int],
        current: bool,
        stale: frozenset[int],
        now_ms: int,
    ) -> None:
        """The general case, partition by partition (rare: a claim with stale partitions)."""
        claimants = self._claimants
        for p in old | new:
            claims = claimants[p]
            if p in new:
                standing = current and p not in stale
                if claims.get(consumer) is standing:
                    continue
                claims[consumer] = standing
            elif claims.pop(consumer, None) is None:
                continue
            self._refresh(p, now_ms)

    def _flip(self, consumer: str, partitions: Iterable[int], current: bool, now_ms: int) -> None:
        """``consumer``'s claim on ``partitions`` becomes current (or stops being): what
        :meth:`_refresh` would conclude, done directly where it is the partition's only claimant
        (a thousand-member group flips ten thousand claims at each rebalance)."""
        claimants, counts, subscribed = self._claimants, self._current_count, self._subscribed
        zombies, owners, since = self._zombie, self._owner, self._owner_since
        intervals = self.intervals
        unowned = zombie = 0  # changes of n_unowned and n_zombie, added at the end
        for p in partitions:
            claims = claimants[p]
            sole = len(claims) == 1 and consumer in claims
            claims[consumer] = current
            if not sole:
                self._refresh(p, now_ms)
            elif current:  # zombie -> owner
                counts[p] = 1
                if subscribed[p]:
                    unowned -= 1
                zombies[p] = False
                zombie -= 1
                owners[p] = consumer
                since[p] = now_ms
            else:  # owner -> zombie
                counts[p] = 0
                if subscribed[p]:
                    unowned += 1
                zombies[p] = True
                zombie += 1
                start = since[p]
                if now_ms > start:  # (_interval, inlined)
                    if len(intervals) < MAX_INTERVALS:
                        intervals.append((p, consumer, start, now_ms))
                    else:
                        self.intervals_dropped += 1
                owners[p] = NO_OWNER
                since[p] = now_ms
        self.n_unowned += unowned
        self.n_zombie += zombie

    def _refresh(self, p: int, now_ms: int) -> None:
        claims = self._claimants[p]
        n = len(claims)
        # the usual partition has one claimant (or none): no need to count or search
        if n == 1:
            [(only, is_current)] = claims.items()
            if is_current:
                current, zombie, owner = 1, False, only
            else:
                current, zombie, owner = 0, True, NO_OWNER
        elif n == 0:
            current, zombie, owner = 0, False, NO_OWNER
        else:
            current = sum(1 for c in claims.values() if c)
            zombie = n > current
            owner = min(c for c, is_current in claims.items() if is_current) if current else NO_OWNER
        counts = self._current_count
        old_current = counts[p]
        if old_current != current:
            if (old_current == 0 or current == 0) and self._subscribed[p]:
                self.n_unowned += 1 if current == 0 else -1
            if (old_current >= 2) != (current >= 2):
                self.n_double += 1 if current >= 2 else -1
            counts[p] = current
        zombies = self._zombie
        if zombie is not zombies[p]:
            self.n_zombie += 1 if zombie else -1
            zombies[p] = zombie
        overlap = zombie and current > 0
        overlaps = self._overlap
        if overlap is not overlaps[p]:
            self.n_overlap += 1 if overlap else -1
            overlaps[p] = overlap
        owners = self._owner
        previous = owners[p]
        if owner != previous:
            if previous != NO_OWNER and now_ms > self._owner_since[p]:
                self._interval(p, previous, self._owner_since[p], now_ms)
            owners[p] = owner
            self._owner_since[p] = now_ms

    def _interval(self, p: int, owner: str, start: int, end: int) -> None:
        if len(self.intervals) >= MAX_INTERVALS:
            self.intervals_dropped += 1  # bounded memory: the chart keeps the first intervals
            return
        self.intervals.append((p, owner, start, end))

    def double_owned(self) -> list[tuple[int, list[str]]]:
        """Partitions with two or more current claimants, with them (for invariant messages)."""
        return [
            (p, sorted(c for c, cur in claims.items() if cur))
            for p, claims in enumerate(self._claimants)
            if self._current_count[p] >= 2
        ]

    def close(self, now_ms: int) -> None:
        """End every open owner interval at ``now_ms`` (the end of the simulation)."""
        for p, owner in enumerate(self._owner):
            if owner != NO_OWNER and now_ms > self._owner_since[p]:
                self._interval(p, owner, self._owner_since[p], now_ms)
            self._owner_since[p] = now_ms


def given_away_while_missing(
    carried: frozenset[int],
    others: Iterable[tuple[frozenset[int], Mapping[int, int]]],
    last: int,
    generation: int,
) -> frozenset[int]:
    """The partitions of ``carried`` — what a classic member held in generation ``last`` and still
    holds on entering ``generation`` (its JoinGroup answer) — that another process has held without
    a break since a generation strictly between the two, one the member missed: that generation's
    leader never saw the member's claim (at most the metadata of an older JoinGroup), so it could
    hand the partition over. ``others``: each other process's claim and, per partition, the
    generation its hold began.

    Kafka's own rule settles it: of two claims the newer generation wins
    (``AbstractStickyAssignor.allSubscriptionsEqual``), and the member revokes the partition when
    its SyncGroup answer comes (``ConsumerCoordinator.onJoinComplete``); until then its claim is a
    zombie claim (docs/simulator.md, "A zombie that rejoins"). A hold that began in ``last`` or in
    ``generation`` itself is no such case: two claims on one partition from then are double
    ownership."""
    out: set[int] = set()
    for claim, since in others:
        for p in carried & claim:
            if last < since.get(p, last) < generation:
                out.add(p)
    return frozenset(out)
