"""A bounded cache of open files, shared by every segment of a data directory.

Each segment has three files (log, offset index, time index). Holding them open, as the log used to,
made a 10,000-partition topic take 30,000 file descriptors: creating it failed near 6,600 partitions
with a 20,000-descriptor limit (near 330 with the common 1,024), left a half-made topic and starved the
rest of the process. Segments now ask this cache for a descriptor right before each system call; at
most ``max_open`` are open, the least recently used closed first. A closed file's written bytes are
in the OS already (``write(2)`` returned); an fsync reopens the file and syncs it (fsync is per
file, not per descriptor).

Callers never keep a descriptor across another call to :meth:`FileHandles.fd`: the cache may close
it, and the number may then name another file.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from pathlib import Path

from kgroup.model import KgroupError

__all__ = ["DEFAULT_MAX_OPEN_FILES", "FileHandles"]

#: a few hundred: enough that a busy partition's files stay open, few enough for any ulimit
DEFAULT_MAX_OPEN_FILES = 256
_MIN_OPEN_FILES = 8


class FileHandles:
    """Open descriptors by path, at most ``max_open`` at a time (least recently used closed first)."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open < _MIN_OPEN_FILES:
            raise KgroupError(f"max_open_files: {max_open}; use at least {_MIN_OPEN_FILES}")
        self.max_open = max_open
        self._open: OrderedDict[str, int] = OrderedDict()
        self.opened = 0  # how many times a file was opened (a measure of the cache's churn)

    def fd(self, path: Path) -> int:
        """An open read-write descriptor of ``path`` (created if missing); valid until the next call."""
        key = str(path)
        fd = self._open.get(key)
        if fd is not None:
            self._open.move_to_end(key)
            return fd
        fd = self._open_new(key)
        self._open[key] = fd
        self.opened += 1
        while len(self._open) > self.max_open:
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)
        return fd

    def _open_new(self, key: str) -> int:
        try:
            return os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            if error.errno not in (errno.EMFILE, errno.ENFILE) or not self._open:
                raise
        # the process ran out of descriptors elsewhere (sockets): give back half of ours, once
        for _ in range(max(1, len(self._open) // 2)):
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)
        return os.open(key, os.O_RDWR | os.O_CREAT, 0o644)

    def close(self, path: Path) -> None:
        """Close ``path``'s descriptor if it is open (before the file is deleted or renamed)."""
        fd = self._open.pop(str(path), None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        while self._open:
            _, fd = self._open.popitem()
            os.close(fd)

    def __len__(self) -> int:
        return len(self._open)
