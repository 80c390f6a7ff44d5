"""Random group lives: members join, close, crash, stall and restart at random times.

Whatever happens, no partition is ever held by two members of the group's current generation, and
once the survivors settle every partition belongs to exactly one of them.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.group import ClassicGroups
from kgroup.member import MemberConfig
from kgroup.model import TopicPartition

from .harness import World
from .test_member_coordinator import exclusive, run_checked

TOPICS = {"t": 5, "u": 3}
ALL = sorted([TopicPartition("t", p) for p in range(5)] + [TopicPartition("u", p) for p in range(3)])


@settings(max_examples=30, deadline=None)
@given(
    assignor=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]),
    static=st.booleans(),
    first=st.integers(1, 3),
    events=st.lists(
        st.tuples(st.sampled_from(["start", "close", "crash", "stall", "restart"]), st.integers(0, 20_000)),
        max_size=5,
    ),
)
def test_random_group_life(assignor: str, static: bool, first: int, events: list[tuple[str, int]]) -> None:
    world = World(TOPICS)
    counter = 0
    alive: list[str] = []

    def config(name: str) -> MemberConfig:
        return MemberConfig(
            "g",
            group_instance_id=f"id-{name}" if static else None,
            assignors=(assignor,),
            session_timeout_ms=10_000,
            max_poll_interval_ms=15_000,
        )

    def start(name: str | None = None) -> None:
        nonlocal counter
        if name is None:
            name = f"m{counter}"
            counter += 1
            alive.append(name)
        world.start(name, config(name), ["t", "u"])

    for _ in range(first):
        start()
    for kind, wait_ms in events:
        for _ in range(wait_ms // 10):
            world.run_for(10)
            exclusive(world, current_only=True)
        if kind == "start" or not alive:
            start()
        elif kind == "close":
            world.close(alive.pop(0))
        elif kind == "crash":
            world.crash(alive.pop(0))
        elif kind == "stall":
            world.stall(alive[0], world.now + 20_000)
        else:  # restart: close, then the same process name (and instance id) comes back
            name = alive[0]
            world.close(name)
            world.run_for(1000)
            start(name)
    if not alive:
        start()
    for name in alive:
        world.stall(name, world.now)  # everyone polls again
    # settle: crashed and closed static members leave only by session timeout, and a rebalance may
    # wait for them up to the rebalance timeout first
    deadline = world.now + 200_000
    while not (
        world.is_stable(alive)
        and len(world.coordinator.kind(ClassicGroups).group("g").member_ids) == len(alive)
    ):
        assert world.now < deadline, f"no settled group by {deadline} ms"
        world.run_for(10)
        exclusive(world, current_only=True)
    run_checked(world, alive, current_only=True)
    held = sorted(tp for name in alive for tp in world.nodes[name].member.assignment())
    assert held == ALL
