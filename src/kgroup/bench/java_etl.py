"""One stage of the group ETL benchmark with Kafka's own Java clients (``EtlStage.java``).

``benchmarks/bench_etl_chain.py`` runs its stages with librdkafka members in threads; a ``java-…``
stage runs the same stage in one JVM against the pinned ``kafka-clients`` (compiled on first use into
kgroup's cache): the JVM starts and reports ready before the clock starts, so the figure is the
stage's own time (first member started to every record committed), measured inside the JVM.
"""

from __future__ import annotations

import os
import select
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kgroup.bench.java_harness import harness_jar
from kgroup.model import KgroupError

__all__ = ["JAVA_KINDS", "JavaStageResult", "run_java_stage"]

#: the stage kinds EtlStage.java runs (the librdkafka stages' names)
JAVA_KINDS = ("range", "cooperative-sticky", "static", "consumer-range", "consumer-uniform")
_START_TIMEOUT_S = 120.0
#: the loggers ``client_log`` keeps at DEBUG: every request and response, the group's steps
_DEBUG_LOGGERS = "".join(
    f"logger.{name}.name = {logger}\nlogger.{name}.level = DEBUG\n"
    for name, logger in (
        ("network", "org.apache.kafka.clients.NetworkClient"),
        ("group", "org.apache.kafka.clients.consumer.internals"),
    )
)


@dataclass(frozen=True)
class JavaStageResult:
    elapsed_s: float
    members: int
    refused_commits: int


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def run_java_stage(
    kind: str,
    bootstrap: str,
    group: str,
    source: str,
    sink: str,
    records: int,
    members: int,
    timeout_s: float,
    client_log: Path | None = None,
) -> JavaStageResult:
    """Run one stage to its end in its own JVM; :class:`KgroupError` (one line) when it cannot.

    ``client_log``: keep the clients' log there, with every request and response the members send
    and receive and the group's steps (``NetworkClient`` and the consumer's internals at DEBUG,
    timestamped to the millisecond) — to see where a stage's time goes; by default only WARN and up
    is kept, in a temporary file."""
    from kgroup.testing.apache_kafka.distribution import log4j2_file_config

    if kind not in JAVA_KINDS:
        raise KgroupError(f"java stage: unknown kind {kind!r}; choose from {', '.join(JAVA_KINDS)}")
    jar, libs = harness_jar(
        "EtlStage.java", "kgroup-etl-stage", "java stage: Kafka's Java clients cannot run here"
    )
    with tempfile.TemporaryDirectory(prefix="kgroup-etl-java-") as work:
        log = Path(work) / "stderr.log"
        # the clients' log (WARN and up) to a file: stdout carries only the stage's own lines
        log4j = Path(work) / "log4j2.properties"
        if client_log is None:
            client_log = Path(work) / "clients.log"
            log4j.write_text(log4j2_file_config(client_log, "WARN"))
        else:
            log4j.write_text(log4j2_file_config(client_log, "WARN") + _DEBUG_LOGGERS)
        with log.open("wb") as errors:
            process = subprocess.Popen(
                [
                    libs.java,
                    "-Xmx1g",
                    f"-Dlog4j2.configurationFile={log4j}",
                    "-cp",
                    os.pathsep.join([str(jar), libs.classpath]),
                    "EtlStage",
                    bootstrap,
                    group,
                    kind,
                    source,
                    sink,
                    str(records),
                    str(members),
                    str(timeout_s),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                start_new_session=True,
            )
            try:
                if _read_line(process, _START_TIMEOUT_S) != "ready":
                    raise KgroupError(f"java stage: the JVM did not start ({_last_line(log)})")
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
                answer = _read_line(process, timeout_s + 120.0)
            finally:
                if process.poll() is None:
                    process.kill()
                process.wait(30)
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        stream.close()
            if answer.startswith("error "):
                raise KgroupError(f"java stage {kind}: {answer.removeprefix('error ')}")
            if not answer.startswith("done "):
                last = _last_line(client_log) if client_log.exists() else _last_line(log)
                raise KgroupError(f"java stage {kind}: no result ({answer or last})")
    elapsed, started, refused = answer.split()[1:4]
    return JavaStageResult(float(elapsed), int(started), int(refused))


def _read_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    if not ready:
        return ""
    return process.stdout.readline().strip()
