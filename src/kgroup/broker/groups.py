"""The group adapter: group APIs driving :class:`kgroup.group.GroupCoordinator` ."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroup.broker.broker import Broker

__all__ = ["GroupAdapter"]


class GroupAdapter:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def start(self) -> None:
        return None

    def on_brokers_changed(self) -> None:
        return None

    def close(self) -> None:
        return None
