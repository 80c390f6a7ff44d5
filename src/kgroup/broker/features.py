"""The feature levels ``kgroup serve`` advertises in ApiVersions (v3+), as Apache Kafka 4.4.0 does for
the features kgroup implements.

Kafka's clients read a broker's finalized features to choose between protocol generations. kgroup
advertises only ``transaction.version``: supported 0–2, finalized at the transaction coordinator's
level (``TxnCoordinatorConfig.transaction_version``, 2 as on a new 4.4.0 cluster). At level 2 a Java
producer uses transactions v2 (KIP-890 part 2): EndTxn v5, its partitions added by the partition
leader (Produce v12) and TxnOffsetCommit v5 adding the group's offsets partition — all served.
Kafka's other features (``metadata.version``, ``group.version``, …) describe what kgroup does not
have (KRaft's metadata log) or what no client of kgroup's chooses by, and are not advertised.

As Kafka's ``ApiVersionsResponse``: the supported range of a feature whose minimum is 0 is left out
of a v3 answer (older clients cannot read a 0 minimum, KIP-1118); the finalized levels and their epoch
are in every v3+ answer.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TRANSACTION_VERSION", "features"]

TRANSACTION_VERSION = "transaction.version"
#: kgroup's finalized features never change while it runs: one epoch
_EPOCH = 1
#: the first ApiVersions version answering features with a 0 minimum
_ZERO_MINIMUM_VERSION = 4


def features(version: int, transaction_version: int) -> dict[str, Any]:
    """The feature fields of an ApiVersions answer at ``version`` (none before v3)."""
    if version < 3:
        return {}
    supported: list[tuple[str, int, int]] = [(TRANSACTION_VERSION, 0, 2)]
    level = transaction_version
    return {
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, low, high in supported
            if version >= _ZERO_MINIMUM_VERSION or low > 0
        ],
        "finalized_features_epoch": _EPOCH,
        "finalized_features": [
            {"name": TRANSACTION_VERSION, "max_version_level": level, "min_version_level": level}
        ],
    }
