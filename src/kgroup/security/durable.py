"""Small JSON state files in the broker's data directory, replaced atomically and fsynced.

ACLs and SCRAM credentials change rarely and are small; each change writes the whole file to a
temporary name, fsyncs it, renames it over the old one and fsyncs the directory, so a crash leaves
either the old or the new state, never a torn one (Kafka keeps both as metadata-log records).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["read_json", "write_json"]


def read_json(path: Path) -> Any:
    """The file's JSON value, or None if the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return json.loads(text)


def write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    data = json.dumps(value, indent=1, sort_keys=True).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
