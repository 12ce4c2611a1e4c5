"""Cache files written whole or not at all, on every floor that keeps one."""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator


@contextlib.contextmanager
def replaced_whole(path: pathlib.Path, suffix: str = ".tmp") -> Iterator[pathlib.Path]:
    """A temporary path beside `path` (this process's, ending in `suffix`) for the block to
    write; when the block ends, it replaces `path` in one step, so a concurrent reader sees the
    old file or the new one, never half of one. If the block raises (a full disk, a failed
    writer), the temporary file is removed, `path` is left as it was, and the error goes on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}{suffix}")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
