"""The hand-written byte paths per version: the Produce request reader and the Fetch answer writer.

Times :func:`kgroup.wire.produce_request.read_produce_request` and
:func:`kgroup.wire.fetch_response.fetch_response` at the newest version that names topics (Produce
v12, Fetch v12) and at the newest (Produce v13, Fetch v18: topics by id, the leaders' endpoints),
and, with ``--base SRC_TREE``, the same two modules of another source tree (``git archive <commit> src
| tar -x -C DIR``; the modules are loaded from ``DIR/src/kgroup/wire``) in the same process, run for
run interleaved: before and after, side by side. Two shapes: a few large partitions (4 × 256 KiB of
records) and many small ones (1,000 × 1 KiB). Prints medians (µs per call) and the machine's load.

    .venv/bin/python benchmarks/bench_wire_versions.py [--runs 7] [--base /tmp/base]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kgroup.wire import fetch_response as fetch_now
from kgroup.wire import produce_request as produce_now
from kgroup.wire.codec import build, decode_request_header, encode_request, request_class

SHAPES = {"4 x 256 KiB": (4, 256 * 1024), "1000 x 1 KiB": (1000, 1024)}
TOPIC_ID = uuid.UUID(int=0x1234)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _produce_frame(version: int, partitions: int, size: int) -> bytes:
    data = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 30_000,
        "topic_data": [
            {
                "name": "orders",
                "topic_id": TOPIC_ID,
                "partition_data": [{"index": p, "records": bytes(size)} for p in range(partitions)],
            }
        ],
    }
    return encode_request(build(request_class(0, version), data), 1)


def _fetch_answer(partitions: int, size: int) -> dict[str, Any]:
    entry = {
        "error_code": 0,
        "high_watermark": 1000,
        "last_stable_offset": 1000,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
    }
    return {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "orders",
                "topic_id": TOPIC_ID,
                "partitions": [
                    {**entry, "partition_index": p, "records": bytes(size)} for p in range(partitions)
                ],
            }
        ],
        "node_endpoints": [],
    }


def _median_us(call: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        call()
    return (time.perf_counter() - start) / loops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--base", type=Path, default=None, help="a source tree to compare with")
    args = parser.parse_args()
    modules: dict[str, tuple[Any, Any]] = {"this": (produce_now, fetch_now)}
    if args.base is not None:
        wire = args.base / "src" / "kgroup" / "wire"
        modules["base"] = (
            _load(wire / "produce_request.py", "base_produce_request"),
            _load(wire / "fetch_response.py", "base_fetch_response"),
        )
    print(f"load before: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    cases: list[tuple[str, str, int, Callable[[], object]]] = []
    for shape, (partitions, size) in SHAPES.items():
        loops = 200 if partitions < 100 else 20
        answer = _fetch_answer(partitions, size)
        for variant, (produce, fetch) in modules.items():
            for version in (12, 13):
                if version not in produce.VERSIONS:
                    continue
                frame = _produce_frame(version, partitions, size)
                offset = decode_request_header(frame).size
                read = produce.read_produce_request

                def call_read(
                    frame: bytes = frame, offset: int = offset, v: int = version, read: Any = read
                ) -> object:
                    return read(frame, offset, v)

                cases.append((f"{shape}  Produce v{version} read", variant, loops, call_read))
            for version in (12, 18):
                if version not in fetch.VERSIONS:
                    continue
                write = fetch.fetch_response

                def call_write(v: int = version, a: dict[str, Any] = answer, write: Any = write) -> object:
                    return write(7, v, a)

                cases.append((f"{shape}  Fetch v{version} write", variant, loops, call_write))
    times: dict[tuple[str, str], list[float]] = {}
    for _run in range(args.runs):  # interleaved: every case once per run
        for name, variant, loops, call in cases:
            times.setdefault((name, variant), []).append(_median_us(call, loops))
    print(f"load after:  {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'case':42} " + "  ".join(f"{v:>10}" for v in modules) + "   (median µs per call)")
    for name in dict.fromkeys(n for n, _v, _l, _c in cases):
        cells = [
            f"{statistics.median(times[(name, v)]):10.1f}" if (name, v) in times else f"{'-':>10}"
            for v in modules
        ]
        print(f"{name:42} " + "  ".join(cells))


if __name__ == "__main__":
    main()
