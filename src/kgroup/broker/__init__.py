"""The live broker (``kgroup serve``): an asyncio server speaking Kafka's wire protocol.

connections (:mod:`.connection`) → dispatch (:mod:`.dispatch`) → per-API handlers
(:mod:`.handlers_admin`, :mod:`.handlers_metadata`, :mod:`.handlers_data`, :mod:`.handlers_group`,
:mod:`.handlers_share_group`, each registered with the versions it answers) → cluster state
(:mod:`.cluster`), logs and the group coordinators (:mod:`.coordinator_host`, on a thread of their
own: :mod:`.coordinator_runtime`).
:class:`kgroup.broker.broker.Broker` wires them together and is imported by no module here;
:func:`kgroup.broker.broker.serve` runs one. An adapter like ``kgroup.sim``: it feeds the same pure
core.

Importing the package registers the handlers (so the dispatch, and its ApiVersions answer, are
complete whichever module of the package is imported first).
"""

from kgroup.broker import (  # noqa: F401  (register the handlers)
    handlers_acls,
    handlers_admin,
    handlers_alter_share_offsets,
    handlers_create_partitions,
    handlers_data,
    handlers_delete_share_offsets,
    handlers_describe_configs,
    handlers_describe_share_offsets,
    handlers_group,
    handlers_incremental_alter_configs,
    handlers_metadata,
    handlers_scram,
    handlers_security,
    handlers_share,
    handlers_share_group,
    handlers_txn,
    handlers_txn_offsets,
)
