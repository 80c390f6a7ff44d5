"""``python -m kgroup.testing.apache_kafka fetch`` (``make kafka``): resolve the pinned Apache Kafka's
jars."""

from __future__ import annotations

import sys

from kgroup.model import KgroupError
from kgroup.testing.apache_kafka.cluster import build_node_class_data_archive
from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaLibs, KafkaUnavailable, kafka_libs
from kgroup.testing.fetch_command import fetch_main


def main(argv: list[str]) -> int:
    fetched = fetch_main(
        argv,
        usage="python -m kgroup.testing.apache_kafka fetch",
        fetch=lambda _: _libs_line(kafka_libs()),
        unavailable=KafkaUnavailable,
        progress=f"resolving Apache Kafka {KAFKA_VERSION} with mvn (the first time fetches 43 MiB of jars)…",
    )
    if fetched != 0:
        return fetched
    # one node started and stopped, writing the class-data archive every later node start maps
    # (about half a node's JVM start); a node that cannot make it only costs that saving
    try:
        archive = build_node_class_data_archive()
    except KgroupError as exc:
        print(f"no class-data archive for the nodes: {exc}", file=sys.stderr)
    else:
        print(f"the nodes' class-data archive: {archive or 'none'}")
    return 0


def _libs_line(libs: KafkaLibs) -> str:
    return f"Apache Kafka {libs.version}: {len(libs.jars())} jars in {libs.libs}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
