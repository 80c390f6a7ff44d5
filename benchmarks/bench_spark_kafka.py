"""Benchmark (not a test): the ``kgroup`` Spark data source beside Spark's own Kafka connector, in one run.

On each broker — ``kgroup serve`` (its own process) and Apache Kafka
(:class:`kgroup.testing.apache_kafka.ApacheKafka`, the pinned release) — with Spark ``local[2]``:

1. the sink: ``--records`` records with ~100-byte values and string keys in two Spark partitions
   (two tasks) written by ``df.write.format("kgroup")`` and by ``df.write.format("kafka")`` (Spark's
   ``spark-sql-kafka-0-10``), each into a fresh topic of ``--partitions`` partitions (with
   ``--librdkafka-sink``, also by ``format("kgroup")``'s librdkafka path);
2. a batch read of those records by ``spark.read.format("kgroup")`` and by ``spark.read.format("kafka")``;

and once: 3. the same records read from Parquet by Spark — the ceiling of a Spark scan on this machine;
4. a Python data source that yields ready-made Arrow batches of the same shape (no Kafka, no decoding)
— the ceiling of any source on PySpark's Python Data Source API, ``format("kgroup")`` included.

Every figure is the median of ``--repeats`` runs, the peers' runs interleaved; every read forces the
values through (``sum(length(value))``) and checks the record count. Spark's connector comes from
Maven Central (``python -m kgroup.testing.spark_kafka_connector fetch``) for ``--connector-version``
(default: the installed PySpark's; Maven Central may publish it later than PySpark).

    .venv/bin/python benchmarks/bench_spark_kafka.py --records 1000000
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

VALUE_BYTES = 100
#: the sink's librdkafka path (one produce() per record), taken for a librdkafka property the bulk
#: path does not honour; this one sets librdkafka's own default
LIBRDKAFKA = "kgroup-librdkafka"
LIBRDKAFKA_OPTION = ("kafka.socket.keepalive.enable", "false")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_kgroup_serve(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    kgroup = Path(sys.executable).with_name("kgroup")
    process = subprocess.Popen(
        [str(kgroup), "serve", "--port", str(port), "--fsync", "never", "--data-dir", str(workdir / "broker"),
         "-q"],
        stdout=subprocess.DEVNULL,  # its "listening" line would mix into --json's output
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, f"127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None:
                raise SystemExit("kgroup serve exited at start") from None
            time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    raise SystemExit("kgroup serve did not listen within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(60)


def _spark(jars: list[Path], arrow_batch_rows: int | None = None) -> Any:
    """A ``local[2]`` session with Spark's Kafka connector on its class path (``spark.jars``);
    ``arrow_batch_rows`` sets ``spark.sql.execution.arrow.maxRecordsPerBatch`` (None: Spark's 10,000)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    if arrow_batch_rows is not None:
        builder = builder.config("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch_rows))
    spark = (
        builder.master("local[2]")
        .appName("kgroup-bench-spark-kafka")
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _arrow_ceiling_source(records: int, partitions: int) -> Any:
    """A data source whose tasks yield one ready-made Arrow batch of Kafka's schema again and again."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    per_task = records // partitions
    schema = (
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
        "timestampType int"
    )

    class CeilingReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(partitions)]

        def read(self, partition: InputPartition) -> Any:
            import numpy as np
            import pyarrow as pa

            rows = 10_000
            values = pa.array([b"%08d" % i + b"x" * (VALUE_BYTES - 8) for i in range(rows)], pa.binary())
            keys = pa.array([b"user-%d" % i for i in range(rows)], pa.binary())
            batch = pa.RecordBatch.from_arrays(
                [keys, values, pa.array(["bench"] * rows), pa.array(np.zeros(rows, np.int32)),
                 pa.array(np.arange(rows, dtype=np.int64)),
                 pa.array(np.zeros(rows, np.int64)).cast(pa.timestamp("us", tz="UTC")),
                 pa.array(np.zeros(rows, np.int32))],
                names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"],
            )  # fmt: skip
            for _ in range(per_task // rows):
                yield batch

    class CeilingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow_ceiling"

        def schema(self) -> str:
            return schema

        def reader(self, schema: Any) -> DataSourceReader:
            return CeilingReader()

    return CeilingSource


def _timed(label: str, fn: Callable[[], Any]) -> float:
    print(f"  {label} …", file=sys.stderr, flush=True)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _broker_runs(
    spark: Any, data: Any, bootstrap: str, args: argparse.Namespace, tag: str
) -> tuple[dict[str, list[float]], str]:
    """Sink and batch-read times of both formats on one broker; the topic the reads read."""
    from pyspark.sql import functions as F

    n = args.records
    times: dict[str, list[float]] = {"sink kgroup": [], "sink kafka": [], "read kgroup": [], "read kafka": []}
    sinks = ["kgroup", "kafka"]
    if args.librdkafka_sink:
        sinks.insert(1, LIBRDKAFKA)
        times[f"sink {LIBRDKAFKA}"] = []
    read_topic = ""
    for repeat in range(args.repeats):
        for sink in sinks:
            topic = f"{tag}-{sink}-{repeat}"
            _create_topic(bootstrap, topic, args.partitions)

            def write(sink: str = sink, topic: str = topic) -> None:
                writer = data.write.format("kafka" if sink == "kafka" else "kgroup")
                if sink == LIBRDKAFKA:  # a librdkafka property the bulk path leaves to librdkafka
                    writer = writer.option(*LIBRDKAFKA_OPTION)
                (writer.option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", topic).mode("append").save())  # fmt: skip

            times[f"sink {sink}"].append(_timed(f"{tag}: sink {sink} #{repeat}", write))
            if not read_topic:
                read_topic = topic
    for repeat in range(args.repeats):
        for fmt in ("kgroup", "kafka"):

            def read(fmt: str = fmt) -> None:
                df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                      .option("subscribe", read_topic).load())  # fmt: skip
                row = df.select(F.count("*").alias("n"), F.sum(F.length("value")).alias("b")).collect()[0]
                if row["n"] != n or row["b"] != n * VALUE_BYTES:
                    raise SystemExit(f"{tag}: format({fmt!r}) read {row['n']} records / {row['b']} bytes")

            times[f"read {fmt}"].append(_timed(f"{tag}: read {fmt} #{repeat}", read))
    return times, read_topic


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brokers", default="kgroup,apache", help="kgroup, apache or both (default)")
    parser.add_argument("--connector-version", help="spark-sql-kafka-0-10 release (default: PySpark's)")
    parser.add_argument(
        "--arrow-batch-rows",
        type=int,
        help="spark.sql.execution.arrow.maxRecordsPerBatch: rows per Arrow batch to a Python writer "
        "(default: Spark's, 10,000)",
    )
    parser.add_argument(
        "--librdkafka-sink",
        action="store_true",
        help="also time format('kgroup')'s librdkafka path (one produce() per record) beside its bulk path",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not brokers or set(brokers) - {"kgroup", "apache"}:
        raise SystemExit("--brokers: give kgroup, apache or kgroup,apache")

    from pyspark.sql import functions as F

    from kgroup.model import KgroupError
    from kgroup.spark import register
    from kgroup.testing.spark_kafka_connector import connector_jars, spark_version

    connector_version = args.connector_version or spark_version()
    try:
        jars = connector_jars(connector_version)
    except KgroupError as exc:
        raise SystemExit(f"error: {exc} (--connector-version names another release)") from None
    spark = _spark(jars, args.arrow_batch_rows)
    register(spark)
    workdir = Path(tempfile.mkdtemp(prefix="kgroup-bench-spark-"))
    n = args.records
    pad = "x" * (VALUE_BYTES - 8)

    def records(count: int) -> Any:
        """``count`` records in two Spark partitions: a write is two tasks, one per core."""
        return spark.range(0, count, 1, 2).select(
            F.concat(F.lit("user-"), (F.col("id") % 100_000).cast("string")).alias("key"),
            F.concat(F.lpad(F.col("id").cast("string"), 8, "0"), F.lit(pad)).alias("value"),
        )

    data = records(n)
    started = datetime.datetime.now(datetime.UTC)
    loads = [os.getloadavg()[0]]
    results: dict[str, Any] = {
        "records": n,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "master": "local[2]",
        "arrow_batch_rows": args.arrow_batch_rows or 10_000,
        "repeats": args.repeats,
        "spark": spark_version(),
        "connector": connector_version,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "brokers": {},
    }
    parquet_source = None
    kgroup_process = None
    apache = None
    try:
        for broker in brokers:
            if broker == "kgroup":
                kgroup_process, bootstrap = _start_kgroup_serve(workdir)
                label = "kgroup serve"
            else:
                from kgroup.testing.apache_kafka import ApacheKafka

                apache = ApacheKafka(heap="1g").start()
                bootstrap = apache.bootstrap_servers
                label = f"Apache Kafka {apache.version}"
            # warm-up, not timed: the first jobs pay for the Python workers, numba's cache, class loading;
            # two tasks, so that both Python workers (one per core) are warm, as both producers are
            for fmt in ("kgroup", "kafka"):
                topic = f"warm-{broker}-{fmt}"
                _create_topic(bootstrap, topic, 1)
                (records(2_000).write.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", topic).mode("append").save())  # fmt: skip
                spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option(
                    "subscribe", topic
                ).load().select(F.sum(F.length("value"))).collect()
            times, read_topic = _broker_runs(spark, data, bootstrap, args, broker)
            loads.append(os.getloadavg()[0])
            results["brokers"][label] = {k: statistics.median(v) for k, v in times.items()}
            results["brokers"][label]["all"] = times
            if parquet_source is None:
                parquet_path = str(workdir / "records.parquet")
                (spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", read_topic).load().write.parquet(parquet_path))  # fmt: skip
                parquet_source = parquet_path
            if kgroup_process is not None:
                _stop(kgroup_process)
                kgroup_process = None
            if apache is not None:
                apache.stop()
                apache = None
        assert parquet_source is not None

        def parquet_read() -> None:
            row = spark.read.parquet(parquet_source).select(F.sum(F.length("value")).alias("b")).collect()[0]
            if row["b"] != n * VALUE_BYTES:
                raise SystemExit(f"the Parquet scan read {row['b']} bytes")

        spark.dataSource.register(_arrow_ceiling_source(n, args.partitions))

        def ceiling_read() -> None:
            row = (
                spark.read.format("arrow_ceiling")
                .load()
                .select(F.sum(F.length("value")).alias("b"))
                .collect()[0]
            )
            if row["b"] != n * VALUE_BYTES:
                raise SystemExit(f"the Arrow ceiling source read {row['b']} bytes")

        ceiling_read()  # warm its Python workers once
        ceiling = [_timed(f"Arrow ceiling #{i}", ceiling_read) for i in range(args.repeats)]
        results["python_source_ceiling_s"] = statistics.median(ceiling)
        results["python_source_ceiling_all"] = ceiling
        parquet_read()  # warm the scan code once
        parquet = [_timed(f"Parquet read #{i}", parquet_read) for i in range(args.repeats)]
        results["parquet_read_s"] = statistics.median(parquet)
        results["parquet_all"] = parquet
        loads.append(os.getloadavg()[0])
        results["load_average_1min"] = loads
    finally:
        if kgroup_process is not None:
            _stop(kgroup_process)
        if apache is not None:
            apache.stop()
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    _print_table(results)


def _print_table(results: dict[str, Any]) -> None:
    n = results["records"]
    mb = n * VALUE_BYTES / 1e6
    loads = ", ".join(f"{x:.1f}" for x in results["load_average_1min"])
    print(
        f"{n:,} records of {VALUE_BYTES}-byte values in {results['partitions']} partitions, Spark "
        f"{results['spark']} {results['master']} ({results['arrow_batch_rows']:,} rows per Arrow batch), "
        f"spark-sql-kafka-0-10 {results['connector']}; "
        f"{results['date']}; medians of {results['repeats']}; 1-min load average {loads} on "
        f"{results['cpus']} CPUs"
    )
    print()
    print("| broker | what | seconds | records/s | MB/s (values) |")
    print("| --- | --- | ---: | ---: | ---: |")
    rows: list[tuple[str, str, float]] = []
    for broker, figures in results["brokers"].items():
        rows += [
            (broker, 'read, `spark.read.format("kgroup")`', figures["read kgroup"]),
            (broker, 'read, `spark.read.format("kafka")` (Spark\'s connector)', figures["read kafka"]),
            (broker, 'sink, `df.write.format("kgroup")`', figures["sink kgroup"]),
        ]
        if f"sink {LIBRDKAFKA}" in figures:
            rows.append(
                (broker, 'sink, `df.write.format("kgroup")`, librdkafka path', figures[f"sink {LIBRDKAFKA}"])
            )
        rows.append((broker, 'sink, `df.write.format("kafka")` (Spark\'s connector)', figures["sink kafka"]))
    rows.append(("—", "Spark reading the same records from Parquet", results["parquet_read_s"]))
    rows.append(
        ("—", "a Python data source yielding ready Arrow batches", results["python_source_ceiling_s"])
    )
    for broker, label, seconds in rows:
        print(f"| {broker} | {label} | {seconds:.2f} | {n / seconds:,.0f} | {mb / seconds:.1f} |")
    print()
    for broker, figures in results["brokers"].items():
        ratios = [
            f"read {figures['read kafka'] / figures['read kgroup']:.2f}x",
            f"sink {figures['sink kafka'] / figures['sink kgroup']:.2f}x",
        ]
        if f"sink {LIBRDKAFKA}" in figures:
            librdkafka = figures[f"sink {LIBRDKAFKA}"]
            ratios.append(f"sink's librdkafka path {figures['sink kafka'] / librdkafka:.2f}x")
        print(f"{broker}: format('kgroup') against Spark's connector (same run): {', '.join(ratios)}")


if __name__ == "__main__":
    main()
