"""kafka-python's pure-Python assignors on the benchmark cases, for the side-by-side column.

kafka-python 3.x's assignors (``kafka.coordinator.assignors``) take a cluster object answering
``topics()`` / ``partitions_for_topic(topic)`` and a list of JoinGroup members whose ``metadata`` is a
decoded ``ConsumerProtocolSubscription``. They only read attributes, so plain namespaces stand in for
the protocol classes; the eager sticky assignor's user data is handed over already decoded, as the
assignor accepts. kafka-python has no rack-aware logic, so consumer racks are ignored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from kgroup.assignors.api import AssignmentRequest
from kgroup.model import KgroupError, TopicMetadata, TopicPartition

__all__ = ["KAFKA_PYTHON_ASSIGNORS", "prepare_kafka_python"]

# kgroup name -> (module, class) in kafka-python
KAFKA_PYTHON_ASSIGNORS: dict[str, tuple[str, str]] = {
    "range": ("kafka.coordinator.assignors.range", "RangePartitionAssignor"),
    "roundrobin": ("kafka.coordinator.assignors.roundrobin", "RoundRobinPartitionAssignor"),
    "sticky": ("kafka.coordinator.assignors.sticky.sticky_assignor", "StickyPartitionAssignor"),
    "cooperative-sticky": ("kafka.coordinator.assignors.cooperative_sticky", "CooperativeStickyAssignor"),
}


class _Cluster:
    """The two questions kafka-python's assignors ask of ``ClusterMetadata``."""

    def __init__(self, topics: Mapping[str, TopicMetadata]) -> None:
        self._partitions = {name: set(range(t.partitions)) for name, t in topics.items() if t.partitions}

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)


def _by_topic(owned: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in owned:
        grouped[tp.topic].append(tp.partition)
    return list(grouped.items())


def prepare_kafka_python(assignor: str, request: AssignmentRequest) -> Callable[[], Any]:
    """A zero-argument callable running kafka-python's ``assignor`` on ``request`` (inputs prepared now)."""
    try:
        module_name, class_name = KAFKA_PYTHON_ASSIGNORS[assignor]
    except KeyError:
        raise KgroupError(
            f"assignor: kafka-python has no {assignor!r}; use one of: {', '.join(KAFKA_PYTHON_ASSIGNORS)}"
        ) from None
    try:
        from importlib import import_module

        assignor_class = getattr(import_module(module_name), class_name)
    except ImportError as exc:
        raise KgroupError("kafka-python is not installed; pip install kafka-python>=3") from exc

    user_data_class: Any = None
    if assignor == "sticky":
        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

        user_data_class = StickyAssignorUserData
    members = []
    for m in request.members:
        owned = _by_topic(m.owned)
        user_data: Any = b""
        if user_data_class is not None and (m.owned or m.generation >= 0):
            user_data = user_data_class(owned, m.generation)
        metadata = SimpleNamespace(
            version=1,
            topics=list(m.topics),
            user_data=user_data,
            owned_partitions=[SimpleNamespace(topic=t, partitions=ps) for t, ps in owned],
            generation_id=m.generation,
        )
        members.append(SimpleNamespace(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                       metadata=metadata))
    cluster = _Cluster(request.topics)
    instance = assignor_class() if assignor in ("sticky", "cooperative-sticky") else assignor_class

    def run() -> Any:
        return instance.assign(cluster, members)

    return run
