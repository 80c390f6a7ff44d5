"""Output helpers shared by the sub-commands: JSON for machines, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from kgroup.model import jsonable

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON (kgroup values converted, keys in insertion order) on stdout."""
    sys.stdout.write(json.dumps(jsonable(data), indent=2, ensure_ascii=False) + "\n")
