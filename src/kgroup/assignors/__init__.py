"""Consumer partition assignors, exact to Kafka, by name.

Built-in names: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, ``legacy-range``,
``legacy-roundrobin``; plug-ins come from the ``kgroup.assignors`` entry-point group.
"""

from kgroup.assignors.api import (
    AssignmentRequest,
    Assignor,
    available_assignors,
    create_assignor,
    register_assignor,
)
from kgroup.assignors.builtin import register_builtins

register_builtins()

__all__ = [
    "AssignmentRequest",
    "Assignor",
    "available_assignors",
    "create_assignor",
    "register_assignor",
]
