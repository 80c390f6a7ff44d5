"""Kafka's sticky assignors: ``sticky`` (eager) and ``cooperative-sticky``, exact to Kafka 4.0.

Modules: :mod:`.userdata` (the user-data byte layouts), :mod:`.owned` (validation of previously owned
partitions), :mod:`.racks` (KIP-881 rack awareness), :mod:`.constrained` and :mod:`.general` (the two
assignment builders), :mod:`.movements` (partition movements with Java ``HashSet`` order) and
:mod:`.assignors` (the assignor classes and the cooperative adjustment).
"""

from kgroup.assignors.sticky.assignors import (
    AbstractStickyAssignor,
    CooperativeStickyAssignor,
    StickyAssignor,
)
from kgroup.assignors.sticky.errors import StickyAssignmentError

__all__ = ["AbstractStickyAssignor", "CooperativeStickyAssignor", "StickyAssignmentError", "StickyAssignor"]
