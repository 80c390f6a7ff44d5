"""Consumer partition assignors, exact to Kafka, by name.

Built-in names: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, ``legacy-range``,
``legacy-roundrobin``; plug-ins come from the ``kgroup.assignors`` entry-point group.
"""

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.registry import available_assignors, create_assignor, register_assignor

__all__ = [
    "AssignmentRequest",
    "Assignor",
    "available_assignors",
    "create_assignor",
    "register_assignor",
]
