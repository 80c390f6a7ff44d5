"""The feature levels ``kgroup serve`` advertises in ApiVersions (v3+: ``supported_features``,
``finalized_features``), as Apache Kafka 4.4.0 advertises them — only for what kgroup implements.

Kafka's clients read a broker's finalized features to choose between protocol generations:

* ``transaction.version``: supported 0–2, finalized at the transaction coordinator's level
  (``TxnCoordinatorConfig.transaction_version``, 2 as on a new 4.4.0 cluster). At level 2 a Java
  producer uses transactions v2 (KIP-890 part 2): EndTxn v5, its partitions added by the partition
  leader (Produce v12) and TxnOffsetCommit v5 adding the group's offsets partition — all served.
* ``share.version``: supported 0–2, finalized at 2, as a 4.4.0 cluster with share groups enabled
  answers: ShareGroupHeartbeat/Describe v1 and ShareFetch/ShareAcknowledge v1–v2 are served.

Kafka's other features (``metadata.version``, ``group.version``, …) describe what kgroup does not have
(KRaft's metadata log) or what no client of kgroup's chooses by, and are not advertised
(``tests/apache_kafka/test_diff_wire.py`` compares each advertised entry with Apache Kafka's).

As Kafka's ``ApiVersionsResponse``: the supported range of a feature whose minimum is 0 is left out of
a v3 answer (a v3 client cannot read a 0 minimum, KIP-1118); the finalized levels and their epoch are
in every v3+ answer.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FINALIZED_FEATURES_EPOCH", "SHARE_VERSION", "TRANSACTION_VERSION", "features"]

TRANSACTION_VERSION = "transaction.version"
SHARE_VERSION = "share.version"
#: kgroup's finalized features never change while it runs: one epoch
FINALIZED_FEATURES_EPOCH = 1
#: the first ApiVersions version answering features with a 0 minimum
_ZERO_MINIMUM_VERSION = 4


def features(version: int, transaction_version: int) -> dict[str, Any]:
    """The feature fields of an ApiVersions answer at ``version`` (none before v3)."""
    if version < 3:
        return {}
    # name -> (supported min, supported max, finalized level)
    advertised = {TRANSACTION_VERSION: (0, 2, transaction_version), SHARE_VERSION: (0, 2, 2)}
    return {
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high, _) in advertised.items()
            if version >= _ZERO_MINIMUM_VERSION or low > 0
        ],
        "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, (_, _, level) in advertised.items()
        ],
    }
