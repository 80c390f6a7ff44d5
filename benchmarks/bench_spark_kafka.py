"""Benchmark (not a test): the ``kgroup`` Spark data source against its ceilings, in one run.

1. the sink: ``--records`` records with ~100-byte values and string keys written by
   ``df.write.format("kgroup")`` (records/s);
2. a batch read of them by ``spark.read.format("kgroup")`` (records/s, MB/s of values);
3. the same records read from Parquet by Spark — the ceiling of a Spark scan on this machine;
4. one plain confluent-kafka consumer loop reading the topic — the ceiling of one client.

The broker is ``kgroup serve`` in its own process (or ``--bootstrap`` for any other broker); Spark runs
``local[2]``. Every read forces the values through (``sum(length(value))``), never a bare count.

    .venv/bin/python benchmarks/bench_spark_kafka.py --records 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VALUE_BYTES = 100


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_broker(workdir: Path, topic: str, partitions: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    kgroup = Path(sys.executable).with_name("kgroup")
    process = subprocess.Popen(
        [str(kgroup), "serve", "--port", str(port), "--topic", f"{topic}:{partitions}", "--fsync", "never",
         "--data-dir", str(workdir / "broker"), "-q"],
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


def _timed(label: str, fn: Any) -> tuple[float, Any]:
    print(f"  {label} …", file=sys.stderr, flush=True)
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _consumer_loop(bootstrap: str, topic: str, partitions: int, records: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-plain",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    value_bytes = 0
    deadline = time.monotonic() + 600
    while seen < records and time.monotonic() < deadline:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is None:
                seen += 1
                value_bytes += len(message.value() or b"")
    consumer.close()
    if seen != records:
        raise SystemExit(f"the consumer loop read {seen} of {records} records")
    return value_bytes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--bootstrap", help="an existing broker (default: start kgroup serve)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from kgroup.spark import get_spark, register

    workdir = Path(tempfile.mkdtemp(prefix="kgroup-bench-spark-"))
    topic = "bench"
    broker = None
    try:
        if args.bootstrap:
            bootstrap = args.bootstrap
        else:
            broker, bootstrap = _start_broker(workdir, topic, args.partitions)
        spark = get_spark("local[2]", app_name="kgroup-bench", shuffle_partitions=4)
        register(spark)
        n = args.records
        pad = "x" * (VALUE_BYTES - 8)
        data = spark.range(0, n, 1, 2).select(
            F.concat(F.lit("user-"), (F.col("id") % 100_000).cast("string")).alias("key"),
            F.concat(F.lpad(F.col("id").cast("string"), 8, "0"), F.lit(pad)).alias("value"),
        )
        results: dict[str, Any] = {"records": n, "value_bytes": VALUE_BYTES, "master": "local[2]"}
        # Warm-up, not timed: the session's first jobs pay for the JVM's and the Python workers' start.
        warm = data.limit(1_000)
        warm.write.format("kgroup").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", "warmup"
        ).mode("append").save()
        spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap).option(
            "subscribe", "warmup"
        ).load().select(F.sum(F.length("value"))).collect()

        sink_s, _ = _timed(
            "sink",
            lambda: (
                data.write.format("kgroup")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", topic)
                .mode("append")
                .save()
            ),
        )
        results["sink_s"] = sink_s

        def kafka_read() -> int:
            df = (
                spark.read.format("kgroup")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic)
                .load()
            )
            row = df.select(F.count("*").alias("n"), F.sum(F.length("value")).alias("b")).collect()[0]
            if row["n"] != n:
                raise SystemExit(f"the kgroup source read {row['n']} of {n} records")
            return int(row["b"])

        read_s, read_bytes = _timed("kgroup source, batch read", kafka_read)
        parquet_path = str(workdir / "records.parquet")
        (
            spark.read.format("kgroup")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
            .write.parquet(parquet_path)
        )

        def parquet_read() -> int:
            row = spark.read.parquet(parquet_path).select(F.sum(F.length("value")).alias("b")).collect()[0]
            return int(row["b"])

        parquet_read()  # warm the scan code once: the ceiling should not pay for first-use compilation
        parquet_s, _ = _timed("Parquet read", parquet_read)
        loop_s, loop_bytes = _timed(
            "plain confluent-kafka consumer", lambda: _consumer_loop(bootstrap, topic, args.partitions, n)
        )
        results.update(
            kgroup_read_s=read_s,
            parquet_read_s=parquet_s,
            consumer_loop_s=loop_s,
            value_megabytes=read_bytes / 1e6,
            load_average=os.getloadavg(),
            cpus=os.cpu_count(),
        )
        assert loop_bytes == read_bytes
        if args.json:
            print(json.dumps(results, indent=2))
            return
        mb = read_bytes / 1e6
        print(f"{n:,} records of {VALUE_BYTES}-byte values, Spark local[2], broker: "
              f"{'kgroup serve' if broker else bootstrap}; load average {results['load_average'][0]:.2f} "
              f"on {results['cpus']} CPUs")  # fmt: skip
        print()
        print("| what | seconds | records/s | MB/s (values) |")
        print("| --- | ---: | ---: | ---: |")
        for label, seconds in (
            ('kgroup source, `spark.read.format("kgroup")`', read_s),
            ("Spark reading the same records from Parquet", parquet_s),
            ("one plain confluent-kafka consumer loop", loop_s),
            ('kgroup sink, `df.write.format("kgroup")`', sink_s),
        ):
            print(f"| {label} | {seconds:.1f} | {n / seconds:,.0f} | {mb / seconds:.1f} |")
    finally:
        if broker is not None:
            broker.send_signal(signal.SIGINT)
            try:
                broker.wait(30)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
