"""The live broker (``kgroup serve``): an asyncio server speaking Kafka's wire protocol.

connections (:mod:`.connection`) → dispatch (:mod:`.dispatch`) → per-API handlers
(:mod:`.handlers_admin`, :mod:`.handlers_data`, :mod:`.groups`) → cluster state (:mod:`.cluster`),
logs and the group coordinator. An adapter like ``kgroup.sim``: it feeds the same pure core.
"""

from kgroup.broker import (  # noqa: F401  (register the handlers)
    handlers_acls,
    handlers_admin,
    handlers_data,
    handlers_group,
    handlers_scram,
    handlers_security,
)
from kgroup.broker.broker import Broker
from kgroup.broker.config import BrokerConfig, parse_topic_spec
from kgroup.broker.server import run_broker, serve

__all__ = ["Broker", "BrokerConfig", "parse_topic_spec", "run_broker", "serve"]
