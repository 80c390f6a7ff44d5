"""What the coordinator answers across every group kind: a group DescribeGroups cannot describe.

FindCoordinator is not the coordinator's to answer: which node coordinates a group is the cluster's
knowledge, so each host answers it (the broker's ``find_coordinator`` handler, the simulator's
runner)."""

from __future__ import annotations

from kgroup.group.states import GroupState
from kgroup.messages import DescribedGroup
from kgroup.model import ErrorCode

__all__ = ["DESCRIBE_GROUP_NOT_FOUND_VERSION", "not_described"]

#: the first DescribeGroups version that answers a group it cannot describe with GROUP_ID_NOT_FOUND
DESCRIBE_GROUP_NOT_FOUND_VERSION = 6


def not_described(group_id: str, api_version: int, message: str) -> DescribedGroup:
    """A group DescribeGroups cannot describe (none, or not a classic one): Dead with no error before
    v6, and from v6 GROUP_ID_NOT_FOUND with ``message`` (``GroupMetadataManager.describeGroups``)."""
    dead = GroupState.DEAD.kafka_name
    if api_version < DESCRIBE_GROUP_NOT_FOUND_VERSION:
        return DescribedGroup(ErrorCode.NONE, group_id, dead, "", "")
    return DescribedGroup(ErrorCode.GROUP_ID_NOT_FOUND, group_id, dead, "", "", error_message=message)
