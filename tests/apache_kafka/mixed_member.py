"""The Java member of the live tests' mixed groups: Apache Kafka's own ``KafkaConsumer``.

``java/MixedMember.java`` is a minimal program around the pinned kafka-clients jar (classic group
protocol, any assignor class), driven over stdin/stdout by ``JavaMember`` in
``tests/integrations/live.py``. It is compiled once with the JDK (:func:`kgroup.javatools.compile_jar`,
cached under kgroup's cache) and run with the resolved Apache Kafka's jars on its class path.
"""

from __future__ import annotations

import os
from pathlib import Path

from kgroup.javatools import cache_root, compile_jar
from kgroup.testing.apache_kafka import require_apache_kafka

SOURCE = Path(__file__).parent / "java" / "MixedMember.java"
MAIN_CLASS = "MixedMember"
#: each member's JVM heap: a consumer of a few hundred records needs little
HEAP = "128m"


def java_member_command() -> list[str]:
    """``java … MixedMember`` without its arguments; skips (fails in CI) without Apache Kafka's jars."""
    libs = require_apache_kafka()
    jar = compile_jar([SOURCE], [libs.jar("kafka-clients")], cache_root() / "jvm", "kgroup-mixed-member")
    return [
        libs.java,
        f"-Xmx{HEAP}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-cp",
        os.pathsep.join([str(jar), libs.classpath]),
        MAIN_CLASS,
    ]
