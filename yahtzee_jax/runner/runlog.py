"""What a run directory logs besides checkpoints, written so that no interruption can tear it.

- `RunLock`: one writer per run directory, an OS file lock (`flock`) that the kernel releases
  when the holder dies, so a killed run never leaves a stale lock behind.
- `evals.jsonl`: the periodic evaluations, replaced atomically (write a temporary file, then
  `os.replace`), so a reader sees the old rows or the new ones, never half a file.
- TensorBoard scalars: written synchronously (tensorboardX's writer queues events in a thread and
  loses them on SIGKILL), one events file per session, flushed before each checkpoint.

On resume, `reconcile` cuts both logs back to the restored update: rows and scalars after it are
dropped (they will be written again, identically, when training replays those updates), those
before it are kept, so every point is present exactly once.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import socket
import struct
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.record_writer import masked_crc32c

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import write_whole

LOCK_FILE = ".lock"
EVALS_FILE = "evals.jsonl"
EVENTS_MARKER = "tfevents"
_SESSION_PATTERN = re.compile(r"\.session(\d+)$")


class RunInUseError(UserError):
    """Another process is writing the run directory."""


class RunLock:
    """Exclusive lock on a run directory for the lifetime of one training process."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._file = None

    def acquire(self) -> RunLock:
        """Take the lock or raise `RunInUseError` naming the holder's pid."""
        handle = open(self.path, "a+")  # noqa: SIM115 (held open for the lock's lifetime)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise RunInUseError(
                f"{self.path.parent} is in use by another training process (pid {holder}); "
                "wait for it to finish or stop it first"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        """Drop the lock (the file stays; an unlocked file means nobody holds it)."""
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _eval_row(line: bytes) -> dict[str, Any] | None:
    """One `evals.jsonl` line as a row, None when it is not one (torn, edited, garbage)."""
    try:
        row = json.loads(line.decode())
    except ValueError:  # not UTF-8, not JSON
        return None
    if not isinstance(row, dict):
        return None
    # the loop reads `update` and `mean`; the plots `games` and `std` as well
    numbers = [row.get(key, 0) for key in ("update", "mean", "games", "std")]
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in numbers):
        return None
    if "update" not in row or "mean" not in row or not isinstance(row["update"], int):
        return None
    return row if all(map(math.isfinite, numbers)) else None


def read_evals(path: Path, report: Callable[[str], None] = _to_stderr) -> list[dict[str, Any]]:
    """The periodic evaluation rows of a run (`evals.jsonl`), oldest first. Lines that are not
    rows (a torn last line, one damaged by an editor or a sync tool) are skipped and reported
    in one line through `report`."""
    if not path.exists():
        return []
    rows, damaged = [], []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        row = _eval_row(line)
        if row is None:
            damaged.append(number)
        else:
            rows.append(row)
    if damaged:
        listed = ", ".join(map(str, damaged[:5])) + (", ..." if len(damaged) > 5 else "")
        report(f"skipped {len(damaged)} damaged line(s) of {path} (line {listed})")
    return rows


def training_wall(evals: list[dict[str, Any]]) -> list[float] | None:
    """Each evaluation's seconds since the run began (None if any row lacks them). A row's
    `wall_s` counts from the start of its session: at each new session (its `session` number
    changes; in rows written before rows carried one, the clock goes back) the earlier
    sessions' last readings are added, so the work a kill lost is not counted."""
    if not all("wall_s" in row for row in evals):
        return None
    walls, offset, previous, sitting = [], 0.0, 0.0, None
    for row in evals:  # at the first row `previous` is 0: nothing is added
        if row.get("session") != sitting or row["wall_s"] < previous:
            offset += previous
        previous, sitting = row["wall_s"], row.get("session")
        walls.append(offset + previous)
    return walls


def write_evals(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write all evaluation rows atomically."""
    write_whole(path, "".join(json.dumps(row) + "\n" for row in rows))


# TensorBoard events ----------------------------------------------------------------------------


def _record(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC-32C, the data, its masked CRC-32C."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def _read_records(path: Path) -> tuple[list[Event], int, bool]:
    """The intact events of an events file, the byte offset where they end, and whether a
    damaged record (wrong checksum) ended them there rather than the end of the file or a torn
    last record (a killed writer)."""
    content = path.read_bytes()
    events, offset = [], 0
    while offset + 12 <= len(content):
        header = content[offset : offset + 8]
        if struct.unpack_from("<I", content, offset + 8)[0] != masked_crc32c(header):
            return events, offset, True
        end = offset + 12 + struct.unpack("<Q", header)[0] + 4
        if end > len(content):
            break
        data = content[offset + 12 : end - 4]
        if struct.unpack_from("<I", content, end - 4)[0] != masked_crc32c(data):
            return events, offset, True
        try:
            events.append(Event.FromString(data))
        except DecodeError:
            return events, offset, True
        offset = end
    return events, offset, False


def _session(path: Path) -> int:
    """The session number of an events file (0: written before sessions were numbered)."""
    match = _SESSION_PATTERN.search(path.name)
    return int(match.group(1)) if match else 0


def events_files(run_dir: Path) -> list[Path]:
    """The run's events files in the order they were written (by session number)."""
    files = run_dir.glob(f"events.out.{EVENTS_MARKER}.*")
    return sorted(files, key=lambda path: (_session(path), path.name))


class ScalarLog:
    """A synchronous TensorBoard events writer: a scalar is on disk once `flush` returns."""

    def __init__(self, run_dir: str | Path, enabled: bool = True) -> None:
        self.enabled = enabled  # off on the processes of a multi-host run other than process 0
        self.session = 0  # this sitting's number, 1 for a new run (0 where nothing is written)
        if not enabled:
            return
        run_dir = Path(run_dir)
        existing = events_files(run_dir)
        self.session = (_session(existing[-1]) if existing else 0) + 1
        name = (
            f"events.out.{EVENTS_MARKER}.{int(time.time()):010d}.{socket.gethostname()}"
            f".session{self.session:04d}"
        )
        self.path = run_dir / name
        self._file = open(self.path, "ab")  # noqa: SIM115 (append: never truncate a log)
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event: Event) -> None:
        if self.enabled:
            self._file.write(_record(event.SerializeToString()))

    def add(self, tag: str, value: float, step: int) -> None:
        """Write one scalar at global step `step` (games played)."""
        if not self.enabled:
            return
        summary = Summary(value=[Summary.Value(tag=tag, simple_value=float(value))])
        self._write(Event(wall_time=time.time(), step=int(step), summary=summary))

    def add_chunk(
        self, metrics: Mapping[str, np.ndarray], first_step: int, step_size: int, count: int
    ) -> None:
        """Every metric of the first `count` updates of a chunk; update i is logged at global
        step `first_step + i * step_size`."""
        for index in range(count):
            for tag, values in metrics.items():
                self.add(tag, values[index], first_step + index * step_size)

    def flush(self) -> None:
        """Hand everything written so far to the OS (it survives the process being killed)."""
        if self.enabled:
            self._file.flush()

    def close(self) -> None:
        """Flush and close."""
        if self.enabled and not self._file.closed:
            self._file.flush()
            self._file.close()


def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a run's events files: tag -> [(step, value)] in the order written."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in events_files(Path(run_dir)):
        for event in _read_records(path)[0]:
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def truncate_scalars(
    run_dir: str | Path, max_step: int, report: Callable[[str], None] = _to_stderr
) -> None:
    """Drop every event after global step `max_step` (and a torn or damaged tail) from the
    run's events files; each file is rewritten atomically, and only when it changes. A damaged
    record (not a torn last one) is reported in one line: the events after it are lost."""
    for path in events_files(Path(run_dir)):
        events, end, damaged = _read_records(path)
        size = path.stat().st_size
        kept = [event for event in events if event.step <= max_step]
        if len(kept) == len(events) and end == size:
            continue
        if damaged:
            report(f"dropped the damaged end of {path} (bytes {end} to {size}) and its scalars")
        write_whole(path, b"".join(_record(event.SerializeToString()) for event in kept))


def reconcile(run_dir: str | Path, evals_path: Path, step: int, games_per_update: int) -> list:
    """Cut `evals.jsonl` and the TensorBoard events back to update `step` (dropping damaged
    lines and records, each file's repair reported in one line); returns the rows."""
    rows = [row for row in read_evals(evals_path) if row["update"] <= step]
    write_evals(evals_path, rows)
    truncate_scalars(run_dir, step * games_per_update)
    return rows


def training_curve(run_dir: str | Path, window: int = 20) -> dict[str, list[float]]:
    """A run's training matches as curves: games, win rate and mean score, moving means over
    `window` updates, or over all of them when fewer were logged (the sampling / epsilon-greedy
    policy against the training opponent). A run that logged no `train/win_rate` raises KeyError."""
    scalars = read_scalars(run_dir)
    games = np.array([step for step, _ in scalars["train/win_rate"]], np.float64)
    window = max(1, min(window, len(games)))
    curves = {"games": games[window - 1 :].tolist()}
    for tag, name in (("train/win_rate", "win_rate"), ("train/mean_score", "mean_score")):
        values = np.array([value for _, value in scalars[tag]], np.float64)
        curves[name] = np.convolve(values, np.ones(window) / window, mode="valid").tolist()
    return curves
