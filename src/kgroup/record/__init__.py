"""``kgroup record``: a group's history read from any Kafka cluster's ``__consumer_offsets``.

:mod:`kgroup.record.history` (pure) turns the topic's records into the recording ``kgroup report``
draws; :mod:`kgroup.record.reader` reads them from a cluster. See ``docs/record.md``.
"""

from kgroup.record.history import GroupHistory, OffsetsEntry

__all__ = ["GroupHistory", "OffsetsEntry"]
