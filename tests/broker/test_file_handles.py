"""10,000 partitions under 256 file descriptors (issue 17: each partition held three open files, so a
10,000-partition topic failed near 6,600 partitions with a 20,000-descriptor limit, left a half-made
topic, and the broker could not even load a request schema afterwards).

A subprocess lowers its own RLIMIT_NOFILE to 256 and runs a broker whose segment files share a cache
of 64: it creates a 10,000-partition topic, writes to 2,000 of its partitions in one request, reads
them back, deletes the topic, makes another (1,000 partitions, 200 written: 600 segment files
uncached, over twice the limit), and reopens the data directory (recovery opens every segment
through the same cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os, resource, sys
from pathlib import Path

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

from tests.broker.rawclient import RawClient
from tests.broker.rawdata import fetch_request
from tests.log.batches import kio_batch
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class

data_dir = Path(sys.argv[1])
out = {}


def create(client, name, partitions):
    request = build(request_class(19, 7), {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout": 60_000, "validate_only": False})
    return int(client.request(request).topics[0].error_code)


def produce(client, name, partitions):
    request = build(request_class(0, 9), {
        "transactional_id": None, "acks": 1, "timeout": 30_000,
        "topic_data": [{"name": name, "partition_data": [
            {"index": p, "records": kio_batch([b"p%d" % p])} for p in partitions]}]})
    answer = client.request(request)
    return sorted({int(p.error_code) for t in answer.responses for p in t.partition_responses})


def fetched(client, name, partitions):
    answer = client.request(fetch_request([(name, p, 0) for p in partitions], max_wait_ms=0))
    return sum(1 for t in answer.responses for p in t.partitions if len(p.records) > 0 and p.error_code == 0)


def descriptors():
    return len(os.listdir("/proc/self/fd"))


with KafkaBroker(data_dir=data_dir, max_open_files=64) as kafka:
    with RawClient(kafka.bootstrap_servers, timeout_s=120) as client:
        out["create"] = create(client, "wide", 10_000)
        out["produce"] = produce(client, "wide", range(0, 10_000, 5))
        out["fetched"] = fetched(client, "wide", range(0, 10_000, 5))
        out["descriptors"] = descriptors()
        delete = build(request_class(20, 6),
                       {"topics": [{"name": "wide", "topic_id": None}], "timeout": 30_000})
        out["delete"] = int(client.request(delete).responses[0].error_code)
        # the second topic only has to hold more segment files than the limit: 200 written
        # partitions, three files each uncached (600 > 256), of 1,000
        out["create again"] = create(client, "wide2", 1_000)
        out["produce again"] = produce(client, "wide2", range(0, 1_000, 5))
with KafkaBroker(data_dir=data_dir, max_open_files=64) as kafka:  # recovery, through the cache
    with RawClient(kafka.bootstrap_servers, timeout_s=120) as client:
        out["fetched after reopening"] = fetched(client, "wide2", range(0, 1_000, 5))
        out["descriptors after reopening"] = descriptors()
print(json.dumps(out))
"""


def test_ten_thousand_partitions_under_256_descriptors(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["create"] == 0
    assert out["produce"] == [0]
    assert out["fetched"] == 2_000
    assert out["descriptors"] < 256
    assert out["delete"] == 0
    assert out["create again"] == 0
    assert out["produce again"] == [0]
    assert out["fetched after reopening"] == 200
    assert out["descriptors after reopening"] < 256


def test_a_topic_is_made_all_or_nothing(tmp_path: Path) -> None:
    """A failure part of the way through (here partition 7's directory cannot be made: a dangling
    symlink holds its name) leaves no half-made topic, on disk or in memory, and frees the name."""
    from kgroup.log import LogConfig, LogManager
    from kgroup.log.errors import LogStorageError

    with LogManager(tmp_path, LogConfig()) as manager:
        obstacle = tmp_path / "t-7"
        obstacle.symlink_to(tmp_path / "missing" / "nowhere")
        creation = manager.begin_topic("t", 20)
        try:
            creation.step(20)
        except LogStorageError as error:
            assert "cannot create the partitions of topic 't'" in error.message
        else:
            raise AssertionError("the creation went through a partition it could not make")
        assert "t" not in manager.topics()
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t-")) == ["t-7"]
        obstacle.unlink()
        manager.create_topic("t", 20)  # the name is free again
        assert manager.topics()["t"] == 20
    with LogManager(tmp_path, LogConfig()) as manager:
        assert manager.topics() == {"t": 20}
