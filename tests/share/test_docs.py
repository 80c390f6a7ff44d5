"""docs/share-groups.md's example runs as written and shows what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kgroup.share import AcquiredRecords, PersisterStateBatch, ScheduleLockTimer

PAGE = Path(__file__).parents[2] / "docs" / "share-groups.md"


def test_share_partitions_example_runs_as_written() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Share partitions") :]
    (block,) = re.findall(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL)[:1]
    namespace: dict[str, Any] = {}
    exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["got"].acquired == [AcquiredRecords(0, 9, 1)]
    (effect,) = namespace["got"].effects
    assert isinstance(effect, ScheduleLockTimer) and effect.deadline_ms == 30000
    res = namespace["res"]
    assert res.error is None and res.write.batches == (PersisterStateBatch(0, 9, 2, 1),)
    assert namespace["sp"].start_offset == 10
