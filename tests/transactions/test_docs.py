"""docs/transactions.md's example runs as written (its asserts are the page's claims)."""

from __future__ import annotations

import re
from pathlib import Path

from kgroup.transactions.records import decode_record

PAGE = Path(__file__).parents[2] / "docs" / "transactions.md"


def test_the_example_runs_and_its_bytes_read_back() -> None:
    [code] = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    namespace: dict[str, object] = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    key, value = namespace["key"], namespace["value"]
    assert isinstance(key, bytes) and isinstance(value, bytes)
    read = decode_record(key, value)
    assert read is not None and read.value is not None
    assert (read.transactional_id, read.value.state.state_name) == ("payments", "CompleteCommit")
