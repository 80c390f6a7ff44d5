"""What the side-by-side broker benchmarks share (a helper module, not a benchmark).

``bench_share_consume.py``, ``bench_kgroup_share_consumer.py``, ``bench_share_vs_consumer.py``,
``bench_txn_produce.py`` and ``bench_eos_chain.py`` each start ``kgroup serve`` and Apache Kafka 4.4.0
once, let them take turns over ``--runs`` runs, and report medians with the load average before and
after: :func:`run_peers` starts and stops the brokers, :func:`load` and :func:`progress` are the
figures and the terminal's progress lines, :func:`too_small` checks the counts, :func:`print_json` is
``--json``'s one object. :func:`produce` writes a backlog and :func:`set_share_earliest` makes a share
group read from the earliest offset on Apache Kafka (``kgroup serve`` takes
:func:`share_earliest_settings` at start).

The scripts import it as a sibling (a script's folder is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Callable, Iterable
from typing import Any

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer, start_peer
from kgroup.wire.codec import build, decode_response, encode_request, request_class, response_class
from kgroup.wire.framing import framed, read_frame_blocking

__all__ = [
    "load",
    "print_json",
    "produce",
    "progress",
    "run_peers",
    "set_share_earliest",
    "share_earliest_settings",
    "too_small",
]

_GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP


def load() -> tuple[float, float, float]:
    """The machine's load average (1, 5 and 15 minutes), rounded to hundredths."""
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)


def progress(message: str) -> None:
    """A progress line on stderr (stdout holds the result, or ``--json``'s object alone)."""
    print(message, file=sys.stderr, flush=True)


def too_small(args: argparse.Namespace, names: Iterable[str]) -> int | None:
    """Exit status 2 with a one-line error for the first count in ``names`` below 1 (``None``: all fine)."""
    for name in names:
        if getattr(args, name) < 1:
            flag = f"--{name.replace('_', '-')}"
            print(f"{flag}: must be at least 1, not {getattr(args, name)}", file=sys.stderr)
            return 2
    return None


def share_earliest_settings(name: str) -> dict[str, str] | None:
    """``kgroup serve``'s setting that makes every share group read from the earliest offset (Apache
    Kafka takes it per group: :func:`set_share_earliest`)."""
    return {"share.auto.offset.reset": "earliest"} if name == "kgroup" else None


def run_peers(
    names: list[str],
    runs: Callable[[dict[str, RunningPeer]], None],
    *,
    settings: Callable[[str], dict[str, str] | None] = lambda name: None,
    failures: tuple[type[Exception], ...] = (PeerUnavailable,),
) -> int:
    """Start the brokers ``names`` (each with its ``settings``), give them to ``runs``, and stop them.

    Exit status 0, or 1 after printing ``benchmark failed: ...`` when a broker cannot start or a run
    fails with one of ``failures``."""
    peers: dict[str, RunningPeer] = {}
    try:
        for name in names:
            progress(f"starting {name} ...")
            peers[name] = start_peer(name, settings(name))
        runs(peers)
    except failures as exc:
        print(f"benchmark failed: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    finally:
        for peer in peers.values():
            peer.close()
    return 0


def print_json(
    results: Any, medians: Any, load_before: tuple[float, ...], load_after: tuple[float, ...], **more: Any
) -> None:
    """``--json``: the runs, the medians and the load average before and after (and ``more``)."""
    out: dict[str, Any] = {
        "runs": results,
        "medians": medians,
        "load_before": load_before,
        "load_after": load_after,
        **more,
    }
    print(json.dumps(out))


def produce(peer: RunningPeer, topic: str, args: argparse.Namespace) -> None:
    """Create ``topic`` with ``args.partitions`` partitions and write ``args.records`` records of
    ``args.record_bytes`` bytes to it, round robin over the partitions (librdkafka's producer)."""
    from confluent_kafka import Producer

    peer.create_topics({topic: args.partitions}, timeout_s=60)
    producer = Producer({"bootstrap.servers": peer.bootstrap_servers, "linger.ms": 5})
    value = b"x" * args.record_bytes
    for index in range(args.records):
        while True:
            try:
                producer.produce(topic, value, partition=index % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise PeerUnavailable("the records were not all produced")


def set_share_earliest(bootstrap: str, group: str) -> None:
    """IncrementalAlterConfigs v1: the group's ``share.auto.offset.reset=earliest``."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    cls = request_class(44, 1)
    assert cls is not None
    request = build(
        cls,
        {
            "resources": [
                {
                    "resource_type": _GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(framed(encode_request(request, 1)))
        _, body = decode_response(read_frame_blocking(sock.recv), response_class(44, 1))
    codes = [int(r.error_code) for r in body.responses]
    if codes != [0]:
        raise PeerUnavailable(f"IncrementalAlterConfigs on group {group} answered {codes}")
