"""The features ``kgroup serve`` advertises in ApiVersions (v3+: ``supported_features``,
``finalized_features``), as Apache Kafka 4.4.0 advertises them — only those kgroup implements.

* ``share.version``: supported 0–2, finalized at 2, as a 4.4.0 cluster with share groups enabled
  answers: the share groups (ShareGroupHeartbeat/Describe v1, ShareFetch/ShareAcknowledge v1–v2) are
  served (``tests/apache_kafka/test_diff_wire.py`` compares the entry with Apache Kafka's).

Kafka's other features (``metadata.version``, ``group.version``, ``transaction.version``, …) are not
advertised: a client then assumes what it assumed before (the Java producer, transaction version 0/1).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FINALIZED_FEATURES_EPOCH", "feature_fields"]

#: name -> (supported min, supported max, finalized level)
_FEATURES: dict[str, tuple[int, int, int]] = {"share.version": (0, 2, 2)}
#: the finalized features never change on kgroup serve: one epoch
FINALIZED_FEATURES_EPOCH = 1


def feature_fields(version: int) -> dict[str, Any]:
    """The ApiVersions answer's feature fields (v3+; older versions drop them). As Kafka's
    ``ApiVersionsResponse``, a v3 answer leaves out the supported features whose lowest version is 0
    (a v3 client cannot read them): ``share.version`` is then only among the finalized ones."""
    return {
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high, _) in _FEATURES.items()
            if low > 0 or version >= 4
        ],
        "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, (_, _, level) in _FEATURES.items()
        ],
    }
