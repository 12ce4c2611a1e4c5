"""Files written whole or not at all, on every floor that keeps one: caches, and the results
a command was asked to write, whose paths are tried before the work. A cache file also carries a
checksum beside it and is made under a lock (`cached`), so that a damaged one is made again and
two processes that need the same missing one make it once."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import glob
import hashlib
import json
import mmap
import os
import pathlib
import shutil
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
CHECKSUM_SUFFIX = ".crc32"  # the sidecar beside a cache file (`checksum`)
_BLOCK = 1 << 26  # bytes of each block of a checksum: 24 blocks in official's target table
# What reading a missing, truncated or foreign `.npz` archive raises: no file, a broken zip or
# compressed stream, an entry missing, or one numpy refuses (a pickled object)
ARCHIVE_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)


PACKAGE = pathlib.Path(__file__).resolve().parent  # the package's sources, for `sources_digest`


@functools.cache
def sources_digest(*patterns: str) -> str:
    """A SHA-256 of the package's source files matching the glob `patterns` (relative to the
    package), each framed by its path and size: a cache's key part for the code that made it
    (read once a process, at the first key asked for)."""
    digest = hashlib.sha256()
    for path in sorted({path for pattern in patterns for path in PACKAGE.glob(pattern)}):
        source = path.read_bytes()
        digest.update(f"{path.relative_to(PACKAGE).as_posix()}\0{len(source)}\0".encode())
        digest.update(source)
    return digest.hexdigest()


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> pathlib.Path:
    """The solver's cache folder: `$YAHTZEE_JAX_CACHE`, else `~/.cache/yahtzee_jax`."""
    return pathlib.Path(environ.get("YAHTZEE_JAX_CACHE") or "~/.cache/yahtzee_jax").expanduser()


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


def check_folders(path: pathlib.Path) -> None:
    """Raise NotADirectoryError naming the file when one stands where a folder of `path` must
    be (what making its folders would meet first)."""
    existing = next(folder for folder in path.parents if folder.exists())  # "/" at the latest
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "a file where a folder must be", str(existing))


def check_writable(path: str | os.PathLike | None) -> None:
    """Raise now the OSError that writing `path` would raise when the work is done (a file
    where a folder must be, a directory named as the file, a folder not writable): its folders
    are made, a file is tried beside it, and both are removed again (the writers make the
    folders when they write: input refused after this check leaves no empty folder behind).
    Nothing to check for None."""
    if path is None:
        return
    path = pathlib.Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            errno.EISDIR, "a directory where a file is to be written", str(path)
        )
    check_folders(path)
    made = [folder for folder in path.parents if not folder.exists()]  # deepest first
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.open("x").close()
        probe.unlink()
    except OSError as error:  # the user's path in the message, not the probe's
        raise type(error)(error.errno, error.strerror, str(path)) from None
    finally:
        for folder in made:
            with contextlib.suppress(OSError):  # another writer's file in it: it stays
                folder.rmdir()


def remove_abandoned(path: pathlib.Path) -> None:
    """Remove the temporary files beside `path` that writers no longer running left
    (`.NAME.PID...`, `replaced_whole`'s and `check_writable`'s): a killed solve of a 1.6 GiB
    table leaves one that size. A running writer's file (its PID alive) is left alone."""
    prefix = f".{path.name}."
    for entry in path.parent.glob(glob.escape(prefix) + "*"):
        pid = entry.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                entry.unlink()


def _alive(pid: int) -> bool:
    """Whether a process `pid` runs (one of another user's counts: it may be writing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: there, and not ours
        return True
    return True


def read_arrays(path: str | os.PathLike, names: tuple[str, ...]) -> tuple[Any, ...] | None:
    """The arrays `names` of an `.npz` archive, read whole, or None where the file is missing
    or damaged (`ARCHIVE_ERRORS`): a cache's loader then checks their shapes and values."""
    import numpy as np  # here: the floors that only write files do not import numpy

    try:
        with np.load(path, allow_pickle=False) as data:
            return tuple(data[name] for name in names)
    except ARCHIVE_ERRORS:
        return None


def checksum(path: pathlib.Path) -> str:
    """`crc32 SIZE BLOCK HEX...`: zlib's CRC-32 of each block of the file's bytes, the blocks
    summed on one thread per CPU (zlib lets go of the GIL). A damaged block is missed with odds
    of 2^-32, which is what a cache needs. Official's target table (1.6 GiB, in the page cache)
    took 1.1-1.2 s on the shared 2-core AMD EPYC (docs/run-integrity.md)."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return f"crc32 0 {_BLOCK}"
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)  # read in place: no copy of the bytes
            blocks = [view[start : start + _BLOCK] for start in range(0, size, _BLOCK)]
            try:
                with ThreadPoolExecutor(min(len(blocks), os.cpu_count() or 1)) as pool:
                    crcs = list(pool.map(zlib.crc32, blocks))
            finally:  # the map closes only once no view of it is left
                for block in blocks:
                    block.release()
                view.release()
    return f"crc32 {size} {_BLOCK} " + " ".join(f"{crc:08x}" for crc in crcs)


def named_checksum(path: pathlib.Path, name: str) -> str:
    """The sidecar's line: `checksum(path)` and the name of the cache file it vouches for, so a
    table copied with its sidecar under another table's name (another rule set's) is not
    taken for that table."""
    return f"{checksum(path)} of {name}"


def checksum_path(path: pathlib.Path) -> pathlib.Path:
    """The sidecar that holds the checksum of the cache file at `path`."""
    return path.with_name(path.name + CHECKSUM_SUFFIX)


@contextlib.contextmanager
def written_checked(path: pathlib.Path, suffix: str = ".tmp") -> Iterator[pathlib.Path]:
    """`replaced_whole` for a cache file: the temporary file the block writes is synced to the
    disk and its checksum written beside `path` (`checksum_path`), before it replaces `path`. A
    crash between the two renames leaves an old table under a new checksum: made again."""
    with replaced_whole(path, suffix) as partial:
        yield partial
        descriptor = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        write_whole(checksum_path(path), named_checksum(partial, path.name) + "\n")


def remove_checked(path: pathlib.Path) -> None:
    """Remove a file written through `written_checked` and its checksum (either may be gone)."""
    for file in (path, checksum_path(path)):
        with contextlib.suppress(OSError):
            file.unlink()


def check_state(path: pathlib.Path) -> str:
    """The state of the cache file at `path`: "missing", "whole" (its checksum and name match),
    "unnamed" (its bytes match a checksum that names no file: written before sidecars named
    their file), "foreign" (its bytes match a checksum of another file: copied or renamed),
    "damaged" (its bytes do not match), or "unchecked" (no checksum beside it)."""
    # Under a file where its folder must be (NotADirectoryError) it cannot be there: missing,
    # not damaged (the write that follows says why it cannot be made).
    try:
        stored = checksum_path(path).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return "unchecked" if path.exists() else "missing"
    except (OSError, UnicodeError):
        stored = None
    try:
        actual = checksum(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "damaged"
    if stored == f"{actual} of {path.name}":
        return "whole"
    if stored == actual:
        return "unnamed"
    return "foreign" if stored is not None and stored.startswith(f"{actual} of ") else "damaged"


# What a folder that cannot take a file says: a consumer of a table it has just made goes on
# with it (a read-only cache folder refused the command after the work), and says so.
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def kept_or_said(write: Callable[[], None], what: str, path: pathlib.Path) -> None:
    """Run `write` (a cache file's); when the folder cannot take files (read-only, no
    permission) say in one line on stderr that the table is used without being kept, and how
    to keep it. Other failures (a full disk) go on."""
    try:
        write()
    except Exception as error:  # an OSError, or the one-line error a writer made of one
        cause = error if isinstance(error, OSError) else error.__cause__
        if not isinstance(cause, OSError) or cause.errno not in _READ_ONLY:
            raise
        reason = cause.strerror or str(cause)
        print(
            f"cannot keep the {what} in {path} ({reason}): using it unkept, and the next "
            "command makes it again (YAHTZEE_JAX_CACHE names a folder that keeps it)",
            file=sys.stderr,
        )


def check_room(path: pathlib.Path, what: str, size: int | None = None) -> None:
    """An OSError in one line, before any work, when the cache file at `path` cannot be
    written: something that is not a file in its place (it failed only after the solve, named
    "damaged"), or less free space beside it than its `size` in bytes (where known)."""
    if path.exists() and not path.is_file():
        raise IsADirectoryError(
            errno.EISDIR, f"{path} is in the way of the {what}: it is not a file (move it away)"
        )
    if size is None:
        return
    try:
        # The new file is written beside the old one before it replaces it: both at once.
        read_only = os.statvfs(path.parent).f_flag & os.ST_RDONLY
        free = shutil.disk_usage(path.parent).free
    except OSError:  # no folder yet, or none to be had: the write says why
        return
    if read_only or not os.access(path.parent, os.W_OK):  # used unkept (`kept_or_said`)
        return
    if free < size:
        raise OSError(
            errno.ENOSPC,
            f"the {what} needs {size / 2**20:,.0f} MiB in {path.parent}, which has "
            f"{free / 2**20:,.0f} MiB free: free some space or choose another --cache-dir",
        )


def lock_path(path: pathlib.Path) -> pathlib.Path:
    """The hidden lock file `cache_lock` holds beside `path`."""
    return path.with_name(f".{path.name}.lock")


def remove_stale(path: pathlib.Path, pattern: str) -> None:
    """Remove the cache files beside `path` matching the glob `pattern` other than `path` (the
    same table of other code, which nothing reads again), each with its checksum and its lock
    file (one would be left for every code change otherwise). A file whose lock another process
    holds (another version of the code making it now) is left alone."""
    for old in path.parent.glob(pattern):
        if old != path and not _locked_elsewhere(old):
            for file in (old, checksum_path(old), lock_path(old)):
                with contextlib.suppress(OSError):
                    file.unlink()


def _locked_elsewhere(path: pathlib.Path) -> bool:
    """Whether another process holds `cache_lock` on `path` now (a lock file missing, or one
    that cannot be opened or locked for other reasons, holds nothing)."""
    try:
        with open(lock_path(path), "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when closed
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


@contextlib.contextmanager
def cache_lock(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `.NAME.lock` beside `path` (waiting for another holder, and
    saying so in one line). A folder that cannot take the lock file is not locked: the write that
    follows says why. The OS drops the lock of a killed process: none goes stale."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path(path), "a+")  # noqa: SIM115 (held open for the lock's lifetime)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            print(f"waiting for process {holder}, which is making {path}", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):  # the pid is only for the line above
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        yield
    finally:
        handle.close()  # drops the lock


def cached(
    path: pathlib.Path,
    load: Callable[[pathlib.Path], T | None],
    make: Callable[[], T],
    what: str,
    force: bool = False,
    size: int | None = None,
) -> T:
    """The cache file at `path` read by `load` (None: unusable) where its checksum matches, else
    `make()` (which writes it, through `written_checked`) under `cache_lock`: a second process
    waits, then loads what the first made. A damaged file is made again with one line on
    stderr naming it, as is one with no checksum beside it (nothing says what made it); one
    whose checksum names no file (written before checksums did) is checked by `load` and its
    checksum given the name. `force` makes it whatever is there. What is in the way of the file,
    or too little free space for its `size` in bytes, is said before `make()` runs
    (`check_room`). Temporary files of killed writers are removed."""
    remove_abandoned(path)
    remove_abandoned(checksum_path(path))
    check_room(path, what)
    if not force and check_state(path) == "whole" and (value := load(path)) is not None:
        return value
    with cache_lock(path):
        state = "missing" if force else check_state(path)
        if state in ("whole", "unnamed") and (value := load(path)) is not None:
            if state == "unnamed":
                with contextlib.suppress(OSError):
                    write_whole(checksum_path(path), named_checksum(path, path.name) + "\n")
            return value
        if state == "unchecked":
            print(f"the {what} {path} has no checksum beside it; making it again", file=sys.stderr)
        elif state != "missing":
            reason = {
                "damaged": "its checksum differs",
                "foreign": "its checksum is another file's: copied or renamed",
            }.get(state, "unreadable or out of range")
            print(f"the {what} {path} is damaged ({reason}); making it again", file=sys.stderr)
        check_room(path, what, size)
        return make()
