"""``kgroup partition``: which partition each key lands on, exactly as Kafka's producer computes it.

Two modes: keys on the command line (this module), or ``--input PATH`` — a dataset partitioned on
Spark, implemented in :mod:`kgroup.cli.partition_input` and imported only when asked for.
"""

from __future__ import annotations

import binascii
from pathlib import Path
from typing import Any

import typer

from kgroup.model import KgroupError

INPUT_FORMATS = ("auto", "parquet", "csv", "json")
#: the most partitions a Spark job (``--input``, the demo) counts records for: the per-partition
#: counts are collected to the driver and shown; a Kafka topic rarely has more than a few thousand
MAX_SPARK_PARTITIONS = 1_000_000


def parse_partition_counts(text: str | None) -> list[int]:
    """``"6"`` or ``"6,12"`` → ``[6, 12]``; every count a whole number >= 1, none repeated."""
    if text is None or not text.strip():
        raise KgroupError("--partitions: missing; give the partition count, e.g. --partitions 12 (or 6,12)")
    counts: list[int] = []
    for item in text.split(","):
        item = item.strip()
        try:
            count = int(item)
        except ValueError:
            raise KgroupError(
                f"--partitions: {item!r} is not a whole number; give counts like 12 or 6,12"
            ) from None
        if count < 1:
            raise KgroupError(f"--partitions: {count}; a topic has at least 1 partition")
        if count > 0x7FFFFFFF:
            raise KgroupError(f"--partitions: {count} does not fit Java's int; give at most 2147483647")
        if count in counts:
            raise KgroupError(f"--partitions: {count} is listed twice; give each count once")
        counts.append(count)
    return counts


def _key_bytes(key: str, hex_keys: bool) -> bytes:
    if not hex_keys:
        # Kafka keys are bytes. Python decodes argv with surrogateescape, so bytes that are not
        # UTF-8 come back as the very bytes the shell passed (docs/partitioning.md).
        return key.encode("utf-8", "surrogateescape")
    text = key[2:] if key.lower().startswith("0x") else key
    try:
        return binascii.unhexlify(text)
    except (binascii.Error, ValueError):
        raise KgroupError(
            f"KEY {key!r}: not valid hex bytes (need an even number of 0-9a-f digits); fix it or drop --hex"
        ) from None


def _shown_key(key: str) -> str:
    """The key as text: itself, or — when its bytes are not UTF-8 — with each such byte as ``\\xNN``."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return key


def run_keys_mode(keys: list[str], counts: list[int], hex_keys: bool, json_output: bool) -> int:
    from kgroup.partitioning.murmur2 import murmur2

    rows: list[dict[str, Any]] = []
    for key in keys:
        raw = _key_bytes(key, hex_keys)
        h = murmur2(raw)
        positive = h & 0x7FFFFFFF
        parts = {n: positive % n for n in counts}
        rows.append({"key": _shown_key(key), "murmur2": h, "parts": parts, "hex": raw.hex()})
    if json_output:
        from kgroup.cli.output import emit_json

        single = len(counts) == 1
        emit_json(
            {
                "partitions": counts[0] if single else counts,
                "keys": [
                    {
                        "key": r["key"],
                        **({"keyHex": r["hex"]} if r["key"] != keys[i] else {}),
                        "partition": r["parts"][counts[0]]
                        if single
                        else {str(n): p for n, p in r["parts"].items()},
                        "murmur2": r["murmur2"],
                    }
                    for i, r in enumerate(rows)
                ],
            }
        )
        return 0
    from rich.table import Table

    from kgroup.cli.output import console

    table = Table(title="toPositive(murmur2(key)) % partitions", title_justify="left")
    table.add_column("key" + (" (hex)" if hex_keys else ""), overflow="fold")
    table.add_column("murmur2", justify="right")
    for n in counts:
        table.add_column(f"partition of {n}", justify="right")
    for r in rows:
        table.add_row(r["key"], str(r["murmur2"]), *(str(r["parts"][n]) for n in counts))
    console.print(table)
    return 0


def register(app: typer.Typer) -> None:
    @app.command("partition")
    def partition_command(
        keys: list[str] | None = typer.Argument(  # noqa: B008
            None,
            metavar="KEY",
            help="Keys (UTF-8 text, or hex bytes with --hex); put -- before keys starting with -.",
        ),
        partitions: str | None = typer.Option(
            None, "--partitions", "-p", help="Partition count, or several: 6,12."
        ),
        hex_keys: bool = typer.Option(False, "--hex", help="Keys are hex bytes, e.g. 00ff10."),
        json_output: bool = typer.Option(False, "--json", help="Print JSON for machines."),
        input_path: Path | None = typer.Option(  # noqa: B008
            None, "--input", help="Dataset to partition on Spark (Parquet/CSV/JSON file or folder)."
        ),
        key_column: str | None = typer.Option(
            None, "--key-column", help="Key column of --input (default key)."
        ),
        key_serializer: str | None = typer.Option(
            None,
            "--key-serializer",
            help="How the key column's producer writes the key: long, integer, short (Kafka's "
            "LongSerializer …, big-endian; integer columns), string (its decimal text) or bytes "
            "(ByteArraySerializer; a binary column, as without this option).",
        ),
        output_dir: Path | None = typer.Option(  # noqa: B008
            None,
            "--output",
            help="Write --input's records with their partition column(s), one folder per partition.",
        ),
        null_key_strategy: str | None = typer.Option(
            None,
            "--null-key-strategy",
            help="How keyless records of --input are spread: adaptive (default), uniform-sticky, "
            "round-robin, legacy-round-robin.",
        ),
        seed: int | None = typer.Option(None, "--seed", help="Seed of the null-key strategy (default 0)."),
        master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
        input_format: str | None = typer.Option(
            None, "--format", help="Format of --input: auto (default), parquet, csv or json."
        ),
    ) -> int:
        """Print the partition of each KEY as Kafka's producer computes it (murmur2), or partition a
        dataset on Spark with --input."""
        counts = parse_partition_counts(partitions)
        if keys and input_path is not None:
            raise KgroupError(
                "KEY and --input both given; give keys on the command line or --input, not both"
            )
        if not keys and input_path is None:
            raise KgroupError("no keys; give KEY arguments, or --input PATH to partition a dataset on Spark")
        if input_path is None:
            assert keys is not None
            input_only = (
                ("--key-column", key_column),
                ("--key-serializer", key_serializer),
                ("--output", output_dir),
                ("--null-key-strategy", null_key_strategy),
                ("--seed", seed),
                ("--master", master),
                ("--format", input_format),
            )
            for name, value in input_only:
                if value is not None:
                    raise KgroupError(f"{name}: only applies with --input PATH; drop it or add --input")
            return run_keys_mode(list(keys), counts, hex_keys, json_output)
        if hex_keys:
            raise KgroupError("--hex applies to KEY arguments only; drop it with --input")
        input_format = input_format or "auto"
        if input_format not in INPUT_FORMATS:
            raise KgroupError(f"--format: {input_format!r} is not one of {', '.join(INPUT_FORMATS)}")
        from kgroup.partitioning.partitioners.api import check_null_key_strategy
        from kgroup.spark.partitioning.partition_column import check_key_serializer
        from kgroup.spark.session import check_master

        check_key_serializer(key_serializer, "--key-serializer")
        null_key_strategy = null_key_strategy or "adaptive"
        check_null_key_strategy(null_key_strategy, "--null-key-strategy")
        master = master or "local[*]"
        check_master(master)
        for n in counts:
            if n > MAX_SPARK_PARTITIONS:
                raise KgroupError(
                    f"--partitions: {n:,} is more than a --input job counts ({MAX_SPARK_PARTITIONS:,}: one "
                    "row of counts per partition); give fewer"
                )
        from kgroup.cli.partition_input import (  # type: ignore[import-not-found,unused-ignore]
            run_input_mode,
        )

        code: int = run_input_mode(
            input_path=input_path,
            key_column="key" if key_column is None else key_column,
            partition_counts=counts,
            output_dir=output_dir,
            null_key_strategy=null_key_strategy,
            seed=0 if seed is None else seed,
            master=master,
            input_format=input_format,
            json_output=json_output,
            key_serializer=key_serializer,
        )
        return code
