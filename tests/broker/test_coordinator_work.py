"""A commit's cost does not grow with the rest of the coordinator's state (issue 17: new groups got
slower as groups accumulated — 9.7 ms each over 5,000, 26-28 ms near 5,400 — after a 1M-offset group
existed).

The cause: every append to the coordinator log summed the sizes of all live keys (a million after such
a group), and a commit that made the log twice its live size rewrote the whole log, on the event loop,
before it was answered. Appends now cost their own frame; the log is compacted by checkpoints made in
the codec thread, and the event loop only copies the frames appended while one was being made.

Measured here by counting the bytes the event loop writes to the coordinator log per commit, not by
timing: 25,000 committed offsets (written four times over) first, then 300 new groups, with
checkpoints forced along the way. The size only has to make the log dwarf a commit: 100,000 offset
records are a ~5 MiB log, 300 times the 16 KiB a commit may cost; a commit that rewrote or summed the
log would cost MiBs whether it held 25,000 live offsets or 100,000 (issue 17's 1M).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.broker.rawclient import RawClient

from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class

#: the topic's partitions: each of the 10 big groups commits an offset for every one
_PARTITIONS = 2_500


def _commit(group_id: str, partitions: range, offset: int) -> Any:
    return build(
        request_class(8, 8),
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "wide",
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p in partitions
                    ],
                }
            ],
        },
    )


def _loop_bytes(kafka: KafkaBroker) -> tuple[int, int, int]:
    """(bytes appended, bytes copied at checkpoint swaps, checkpoints made) so far."""

    def read(groups: Any) -> tuple[int, int, int]:
        return groups.coordinator_log.appended_bytes, groups.coordinator_log.copied_bytes, groups.checkpoints

    result: tuple[int, int, int] = kafka.run_in_loop(kafka.broker.coordinators.inspect(read))
    return result


@pytest.mark.slow
def test_a_commits_work_on_the_event_loop_is_its_own_records(tmp_path: Path) -> None:
    with KafkaBroker(topics={"wide": _PARTITIONS}, data_dir=tmp_path) as kafka:

        def small_checkpoints(host: Any) -> None:
            host.checkpoint_min_bytes = 256 * 1024

        kafka.run_in_loop(kafka.broker.coordinators.inspect(small_checkpoints))
        with RawClient(kafka.bootstrap_servers, timeout_s=60) as client:
            for n in range(10):  # 10 groups of 2,500 offsets: the state every later commit sits on
                answer = client.request(_commit(f"big-{n}", range(_PARTITIONS), n))
                assert {int(p.error_code) for t in answer.topics for p in t.partitions} == {0}
            for round_ in (1, 2, 3):  # each group's offsets overwritten thrice: 3/4 of the log is dead
                for n in range(10):
                    client.request(_commit(f"big-{n}", range(_PARTITIONS), 100 * round_ + n))
            work: list[int] = []
            for n in range(300):
                before = _loop_bytes(kafka)
                answer = client.request(_commit(f"new-{n}", range(n % 7, n % 7 + 1), n))
                assert int(answer.topics[0].partitions[0].error_code) == 0
                after = _loop_bytes(kafka)
                work.append(after[0] - before[0] + after[1] - before[1])
        appended, _, checkpoints = _loop_bytes(kafka)
        assert checkpoints >= 2  # the log was compacted along the way (not a vacuous test)
        # a new group's commit is one frame of two records (the group, its offset): a few hundred
        # bytes, plus at most the frames appended while a checkpoint was made; never the log (MiBs)
        assert max(work) < 16 * 1024, sorted(work)[-5:]
        # the log every commit sat on: over a MiB (the 25,000 live offsets alone), 64 times the bound
        size = kafka.run_in_loop(kafka.broker.coordinators.inspect(lambda host: host.coordinator_log.size))
        assert size > 1024 * 1024
        assert sum(work[-100:]) <= 2 * sum(work[:100])  # the last hundred cost what the first did
    # 100,000 offsets written, 25,000 live: a log at most twice its last checkpoint holds at most half
    assert size < 0.6 * appended, (size, appended)
    with KafkaBroker(data_dir=tmp_path) as kafka:  # everything is there after a restart
        assert len(kafka.group("big-3").offsets) == _PARTITIONS
        assert {o.offset for _, o in kafka.group("big-3").offsets} == {303}
        assert [o.offset for _, o in kafka.group("new-299").offsets] == [299]
