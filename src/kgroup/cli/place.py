"""``kgroup place``: replica placement at topic creation — Kafka 4.4.0's (the KRaft controller's
``StripedReplicaPlacer``, the default), the ZooKeeper era's ``AdminUtils`` or the seeds' rule — and
``kgroup place --check PATH`` against Kafka's own answers."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import typer

from kgroup.cli.output import SUMMARY_ROWS
from kgroup.model import KgroupError

#: --rule: Kafka 4.4.0's placement (the default), the ZooKeeper era's AdminUtils, the seeds' rule
RULES = ("kafka", "adminutils", "seed")
RULE_TITLES = {
    "kafka": "Kafka 4.4.0 StripedReplicaPlacer",
    "adminutils": "ZooKeeper-era AdminUtils",
    "seed": "seeds' rule",
}
MAX_MISMATCHES_SHOWN = 10
JAVA_INT_MAX = 2**31 - 1
#: the most partitions ``kgroup place`` computes at once: the answer is held in memory (and
#: printed), ~300 bytes a partition; a million is more than a whole Kafka cluster usually holds
MAX_PLACE_PARTITIONS = 1_000_000


def _broker_ids(option: str, text: str, example: str) -> list[int]:
    """The comma-separated broker ids of ``option``; a one-line error naming the item that is no id."""
    ids: list[int] = []
    for item in text.split(","):
        try:
            ids.append(int(item.strip()))
        except ValueError:
            raise KgroupError(f"{option}: {item.strip()!r} is not a broker id; {example}") from None
    return ids


def parse_fenced(fenced: str | None, brokers: list[Any]) -> list[int]:
    if fenced is None or not fenced.strip():
        return []
    listed = {b.id for b in brokers}
    ids = _broker_ids("--fenced", fenced, "give ids from --brokers, e.g. --fenced 3")
    for broker_id in ids:
        if broker_id not in listed:
            raise KgroupError(f"--fenced: broker {broker_id} is not in --brokers; fence only listed brokers")
    return ids


def parse_brokers(brokers: str | None, racks: str | None) -> list[Any]:
    from kgroup.partitioning.placement import Broker

    if brokers is None or not brokers.strip():
        raise KgroupError("--brokers: missing; give broker ids, e.g. --brokers 1,2,3")
    ids = _broker_ids("--brokers", brokers, "give integers like 1,2,3")
    for broker_id in ids:
        if not 0 <= broker_id <= JAVA_INT_MAX:
            raise KgroupError(
                f"--brokers: {broker_id} is not a broker id (Kafka's node.id is 0..{JAVA_INT_MAX:,}); fix it"
            )
    if racks is None:
        return [Broker(i) for i in ids]
    rack_list = [r.strip() for r in racks.split(",")]
    if len(rack_list) != len(ids):
        raise KgroupError(
            f"--racks: {len(rack_list)} racks for {len(ids)} brokers; give one rack per broker, in order"
        )
    # An empty item means "this broker has no rack" (Kafka then refuses the mix).
    return [Broker(i, r or None) for i, r in zip(ids, rack_list, strict=True)]


def _load_vector(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KgroupError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); fix the file") from None
    if not isinstance(data, dict):
        raise KgroupError(f"{path}: not a replica vector (a JSON object with 'input' and 'expected')")
    return data


def _is_replica_vector(data: dict[str, Any]) -> bool:
    return data.get("assignor") == "replicas" or (
        isinstance(data.get("input"), dict) and "replicationFactor" in data["input"]
    )


def _run_vector(path: Path, data: dict[str, Any]) -> tuple[Any, Any]:
    """kgroup's answer and the vector's: placements (partition -> replicas), or Kafka's error text."""
    from kgroup.partitioning.placement import Broker, assign_replicas, assign_replicas_striped
    from kgroup.partitioning.striped import InvalidReplicationFactor

    try:
        spec = data["input"]
        brokers = [Broker(int(b["id"]), b.get("rack")) for b in spec["brokers"]]
        expected_raw = data["expected"]
        expected: Any = (
            str(expected_raw["error"])
            if "error" in expected_raw
            else {int(k): list(v) for k, v in expected_raw["assignment"].items()}
        )
        got: Any
        if data.get("placer") == "striped":
            try:
                got = assign_replicas_striped(
                    brokers,
                    int(spec["partitions"]),
                    int(spec["replicationFactor"]),
                    fenced=[int(b["id"]) for b in spec["brokers"] if b.get("fenced")],
                    seed=int(spec["seed"]),
                )
            except InvalidReplicationFactor as exc:
                got = f"InvalidReplicationFactorException: {exc.message}"
        else:
            got = assign_replicas(
                brokers,
                int(spec["partitions"]),
                int(spec["replicationFactor"]),
                fixed_start_index=int(spec.get("fixedStartIndex", -1)),
                start_partition_id=int(spec.get("startPartitionId", -1)),
                rng=random.Random(0),
            )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, KgroupError):
            raise KgroupError(f"{path}: {exc.message}") from None
        raise KgroupError(
            f"{path}: malformed replica vector ({type(exc).__name__}: {exc}); see FORMAT.md"
        ) from None
    return got, expected


def run_check(path: Path, json_output: bool) -> int:
    if not path.exists():
        raise KgroupError(f"--check: {path} does not exist; give a replica vector file or a folder of them")
    if path.is_dir():
        files = sorted(path.rglob("*.json"))
        vectors = [(f, d) for f in files if _is_replica_vector(d := _load_vector(f))]
    else:
        data = _load_vector(path)
        if not _is_replica_vector(data):
            raise KgroupError(f"{path}: not a replica vector (no 'input.replicationFactor'); see FORMAT.md")
        vectors = [(path, data)]
    if not vectors:
        raise KgroupError(f"--check: no replica vectors under {path}; point it at tests/vectors/replicas")
    mismatches: list[dict[str, Any]] = []
    for file, data in vectors:
        got, expected = _run_vector(file, data)
        if got == expected:
            continue
        if isinstance(got, dict) and isinstance(expected, dict):
            first = next(p for p in sorted(set(got) | set(expected)) if got.get(p) != expected.get(p))
            mismatch = {"partition": first, "expected": expected.get(first), "got": got.get(first)}
        else:  # an error on one side
            mismatch = {"partition": None, "expected": expected, "got": got}
        mismatches.append({"file": str(file), **mismatch})
    exact = len(vectors) - len(mismatches)
    if json_output:
        from kgroup.cli.output import emit_json

        emit_json({"exact": exact, "total": len(vectors), "mismatches": mismatches})
    else:
        for m in mismatches[:MAX_MISMATCHES_SHOWN]:
            where = "" if m["partition"] is None else f" partition {m['partition']}"
            typer.echo(f"MISMATCH {m['file']}:{where} expected {m['expected']} got {m['got']}")
        if len(mismatches) > MAX_MISMATCHES_SHOWN:
            typer.echo(f"... and {len(mismatches) - MAX_MISMATCHES_SHOWN} more mismatches")
        typer.echo(f"{exact}/{len(vectors)} exact")
    return 0 if not mismatches else 1


def run_place(
    brokers: list[Any],
    partitions: int,
    replication_factor: int,
    rule: str,
    start_index: int,
    start_partition_id: int,
    seed: int,
    json_output: bool,
    full: bool = False,
    fenced: list[int] | None = None,
) -> int:
    from kgroup.partitioning.placement import (
        assign_replicas,
        assign_replicas_seed_rule,
        assign_replicas_striped,
    )

    if partitions > MAX_PLACE_PARTITIONS:
        raise KgroupError(
            f"--partitions: {partitions:,} is more than kgroup places in one run ({MAX_PLACE_PARTITIONS:,}, "
            "already beyond the partitions a Kafka cluster holds); give fewer"
        )
    for name, value in (("--start-index", start_index), ("--start-partition-id", start_partition_id)):
        if not -(2**31) <= value <= JAVA_INT_MAX:
            raise KgroupError(f"{name}: {value} does not fit Java's int; give -1 or 0..{JAVA_INT_MAX:,}")
    if start_partition_id >= 0 and start_partition_id + partitions - 1 > JAVA_INT_MAX:
        raise KgroupError(
            f"--start-partition-id: {start_partition_id} + {partitions:,} partitions runs past Java's int; "
            "give a smaller start"
        )

    fenced = fenced or []
    if rule != "adminutils" and (start_index >= 0 or start_partition_id >= 0):
        raise KgroupError(
            "--start-index/--start-partition-id apply to --rule adminutils only (AdminUtils' start index); "
            "drop them"
        )
    if fenced and rule != "kafka":
        raise KgroupError(
            f"--fenced: the {RULE_TITLES[rule]} has no fenced brokers; drop --fenced or use --rule kafka"
        )
    if rule == "seed":
        placement = assign_replicas_seed_rule(brokers, partitions, replication_factor)
    elif rule == "kafka":
        from kgroup.partitioning.striped import InvalidReplicationFactor

        try:
            placement = assign_replicas_striped(
                brokers, partitions, replication_factor, fenced=fenced, seed=seed
            )
        except InvalidReplicationFactor as exc:  # Kafka's own words, then kgroup's fix
            raise KgroupError(
                f"--replication-factor: {exc.message.rstrip('.')} (Kafka 4.4.0's words); lower the "
                "replication factor, add brokers or unfence some"
            ) from None
    else:
        placement = assign_replicas(
            brokers,
            partitions,
            replication_factor,
            fixed_start_index=start_index,
            start_partition_id=start_partition_id,
            rng=random.Random(seed),
        )
    racks = {b.id: b.rack for b in brokers}
    load: dict[int, dict[str, Any]] = {
        b.id: {"rack": b.rack, "fenced": b.id in fenced, "replicas": 0, "leaders": 0} for b in brokers
    }
    for replicas in placement.values():
        load[replicas[0]]["leaders"] += 1
        for broker in replicas:
            load[broker]["replicas"] += 1
    if json_output:
        from kgroup.cli.output import emit_json

        emit_json(
            {
                "rule": rule,
                "brokers": [{"id": b.id, "rack": b.rack, "fenced": b.id in fenced} for b in brokers],
                "partitions": partitions,
                "replicationFactor": replication_factor,
                "assignment": {str(p): r for p, r in sorted(placement.items())},
                "brokerLoad": {str(b): v for b, v in load.items()},
            }
        )
        return 0
    from kgroup.cli.output import Column, print_table

    title = RULE_TITLES[rule]
    show_racks = any(r is not None for r in racks.values())
    columns = [Column("partition", right=True), Column("replicas"), Column("leader", right=True)]
    if show_racks:
        columns.append(Column("racks"))
    rows: list[list[str]] = []
    for p, replicas in sorted(placement.items()):
        row = [str(p), ",".join(str(b) for b in replicas), str(replicas[0])]
        if show_racks:
            row.append(",".join(str(racks[b]) for b in replicas))
        rows.append(row)
    print_table(
        f"Replica placement ({title}): {partitions:,} partitions × {replication_factor} replicas",
        columns,
        rows,
        full=full,
        what="partitions",
    )
    per_broker = [Column("broker", right=True)] + ([Column("rack")] if show_racks else [])
    per_broker += [Column("fenced")] if fenced else []
    per_broker += [Column("replicas", right=True), Column("leaders", right=True)]
    broker_rows = [
        [
            str(broker_id),
            *([str(v["rack"])] if show_racks else []),
            *(["yes" if v["fenced"] else ""] if fenced else []),
            f"{v['replicas']:,}",
            f"{v['leaders']:,}",
        ]
        for broker_id, v in load.items()
    ]
    print_table("Per broker", per_broker, broker_rows, full=full, what="brokers")
    return 0


def register(app: typer.Typer) -> None:
    @app.command("place")
    def place_command(
        brokers: str | None = typer.Option(None, "--brokers", "-b", help="Broker ids, e.g. 1,2,3."),
        racks: str | None = typer.Option(
            None, "--racks", help="One rack per broker, in the order of --brokers, e.g. a,a,b."
        ),
        partitions: int | None = typer.Option(None, "--partitions", "-p", help="Number of partitions."),
        replication_factor: int | None = typer.Option(
            None, "--replication-factor", "-r", help="Replicas per partition."
        ),
        rule: str = typer.Option(
            "kafka",
            "--rule",
            help="kafka (Kafka 4.4.0's StripedReplicaPlacer), adminutils (the ZooKeeper era's AdminUtils) "
            "or seed (i mod n).",
        ),
        fenced: str | None = typer.Option(
            None, "--fenced", help="Fenced brokers (--rule kafka): replicas only when needed, never a leader."
        ),
        start_index: int = typer.Option(
            -1, "--start-index", help="AdminUtils' fixedStartIndex (--rule adminutils); negative = random."
        ),
        start_partition_id: int = typer.Option(
            -1, "--start-partition-id", help="First partition id (AdminUtils' startPartitionId)."
        ),
        seed: int = typer.Option(
            0, "--seed", help="--rule kafka: the java.util.Random seed; adminutils: of the random start."
        ),
        check: Path | None = typer.Option(  # noqa: B008
            None, "--check", help="Check replica vectors (a file or a folder) against Kafka's answers."
        ),
        json_output: bool = typer.Option(False, "--json", help="Print JSON for machines."),
        full: bool = typer.Option(
            False, "--full", help=f"Print every partition (tables stop at {SUMMARY_ROWS} rows otherwise)."
        ),
    ) -> int:
        """Place the replicas of a new topic's partitions on brokers, as Kafka 4.4.0's controller does
        (or the ZooKeeper era's AdminUtils, or the seeds' rule)."""
        if check is not None:
            if brokers is not None or partitions is not None or replication_factor is not None:
                raise KgroupError("--check takes no --brokers/--partitions/--replication-factor; drop them")
            return run_check(check, json_output)
        if rule not in RULES:
            raise KgroupError(f"--rule: {rule!r} is not one of {', '.join(RULES)}")
        if rule == "seed" and racks is not None:
            raise KgroupError("--racks: the seeds' rule ignores racks; drop --racks or use --rule kafka")
        if not -(2**63) <= seed < 2**63:
            raise KgroupError(f"--seed: {seed} does not fit Java's long; give a smaller seed")
        broker_list = parse_brokers(brokers, racks)
        fenced_ids = parse_fenced(fenced, broker_list)
        if partitions is None:
            raise KgroupError("--partitions: missing; give the number of partitions, e.g. --partitions 6")
        if replication_factor is None:
            raise KgroupError("--replication-factor: missing; give the replicas per partition, e.g. -r 3")
        return run_place(
            broker_list,
            partitions,
            replication_factor,
            rule,
            start_index,
            start_partition_id,
            seed,
            json_output,
            full,
            fenced_ids,
        )
