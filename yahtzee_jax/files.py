"""Files written whole or not at all, on every floor that keeps one: caches, and the results
a command was asked to write, whose paths are tried before the work."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def replaced_whole(path: pathlib.Path, suffix: str = ".tmp") -> Iterator[pathlib.Path]:
    """A temporary path beside `path` (hidden, this process's, ending in `suffix`) for the block
    to write; when the block ends, it replaces `path` in one step, so a concurrent reader sees
    the old file or the new one, never half of one. If the block raises (a full disk, a failed
    writer), the temporary file is removed, `path` is left as it was, and the error goes on. One
    left by a killed process never matches the pattern its file is found by (its name begins
    with a dot: `events.out.tfevents.*` finds no `.events.out.tfevents....tmp`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}{suffix}")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def write_whole(path: str | os.PathLike, content: str | bytes) -> None:
    """`content` at `path` (its folders made), written whole or not at all (`replaced_whole`,
    synced to the disk before it replaces the old file): a full disk leaves the file that was
    there before."""
    mode = "wb" if isinstance(content, bytes) else "w"
    with replaced_whole(pathlib.Path(path)) as partial, open(partial, mode) as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def write_json(path: str | os.PathLike, data: Any) -> None:
    """`data` as indented JSON at `path`, written whole (`write_whole`)."""
    write_whole(path, json.dumps(data, indent=2) + "\n")


def check_writable(path: str | os.PathLike | None) -> None:
    """Raise now the OSError that writing `path` would raise when the work is done (a file
    where a folder must be, a directory named as the file, a folder not writable): its folders
    are made and a file is tried beside it and removed. Nothing to check for None."""
    if path is None:
        return
    path = pathlib.Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            errno.EISDIR, "a directory where a file is to be written", str(path)
        )
    existing = next(folder for folder in path.parents if folder.exists())  # "/" at the latest
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "a file where a folder must be", str(existing))
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.open("x").close()
        probe.unlink()
    except OSError as error:  # the user's path in the message, not the probe's
        raise type(error)(error.errno, error.strerror, str(path)) from None
