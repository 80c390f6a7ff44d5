"""A fast ``TopicPartition`` constructor for the assignors' hot loops."""

from __future__ import annotations

from functools import partial

from kgroup.model import TopicPartition

__all__ = ["new_partition"]

#: ``TopicPartition(topic, partition)`` without the NamedTuple's Python-level ``__new__`` (runs in C)
new_partition = partial(tuple.__new__, TopicPartition)
