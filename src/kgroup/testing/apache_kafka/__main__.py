"""``python -m kgroup.testing.apache_kafka fetch``: resolve the pinned Apache Kafka's jars (``make kafka``).
"""

from __future__ import annotations

import sys

from kgroup.model import KgroupError
from kgroup.testing.apache_kafka.cluster import build_node_class_data_archive
from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaUnavailable, kafka_libs


def main(argv: list[str]) -> int:
    if argv[:1] != ["fetch"] or len(argv) > 1:
        print("usage: python -m kgroup.testing.apache_kafka fetch", file=sys.stderr)
        return 2
    if sys.stderr.isatty():
        print(
            f"resolving Apache Kafka {KAFKA_VERSION} with mvn (the first time fetches 43 MiB of jars)…",
            file=sys.stderr,
        )
    try:
        libs = kafka_libs()
    except KafkaUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {libs.version}: {len(libs.jars())} jars in {libs.libs}")
    # one node started and stopped, writing the class-data archive every later node start maps
    # (about half a node's JVM start); a node that cannot make it only costs that saving
    try:
        archive = build_node_class_data_archive()
    except KgroupError as exc:
        print(f"no class-data archive for the nodes: {exc}", file=sys.stderr)
    else:
        print(f"the nodes' class-data archive: {archive or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
