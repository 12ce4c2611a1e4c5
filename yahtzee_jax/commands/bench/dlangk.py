"""dlangk/yatzy (Rust, Scandinavian Yatzy, f32) run beside ours, when its binaries are given.

`bench solve --dlangk DIR` runs its full solve (`yatzy-precompute --force`) and `bench evaluate
--dlangk DIR` its lockstep optimal play (`yatzy-simulate --lockstep`), each on one thread and on
one per CPU (`RAYON_NUM_THREADS`), in the same run as ours: a loaded or slower machine slows both
alike, where its published figures come from another machine. DIR is the folder of its built
binaries (its `solver/target/release`); `experiments/build_dlangk_yatzy.sh` builds them offline.
It plays Yatzy only.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from yahtzee_jax.errors import UserError

ENGINE = "dlangk/yatzy (Rust, f32)"
SOLVE, SIMULATE = "yatzy-precompute", "yatzy-simulate"
# Where its solve writes its table under its base folder, and where the optimum is in it: the
# f32 value of state 0 (no box filled, upper total 0) after its 16-byte header.
TABLE = Path("data/strategy_tables/all_states.bin")
TABLE_HEADER_BYTES = 16


def binary(folder: str | os.PathLike, name: str) -> Path:
    """The executable `name` in `folder`, or a one-line error saying how to build it."""
    path = Path(folder) / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise UserError(
            f"--dlangk: no executable {name} in {folder} "
            "(build it with experiments/build_dlangk_yatzy.sh)"
        )
    return path


def thread_counts() -> list[int]:
    """One thread and one per CPU: its figures beside ours."""
    return sorted({1, os.cpu_count() or 1})


def _run(argv: list[str], threads: int, base: Path) -> tuple[str, float, float, float]:
    """Run one of its binaries in `base` on `threads` threads: (stdout, wall seconds, CPU
    seconds, peak RSS MiB), the last two of that process alone.

    Its CPU time is its own (`os.wait4`); its peak RSS is sampled from /proc every 10 ms (VmHWM,
    a high-water mark, so only its last 10 ms can be missed): the rusage of a child forked from
    this process would start from this process's own peak, which Linux keeps across exec.
    """
    environment = {**os.environ, "RAYON_NUM_THREADS": str(threads), "YATZY_BASE_PATH": str(base)}
    peak, done = [0.0], threading.Event()

    def sample(status: Path) -> None:
        while not done.wait(0.01):
            try:
                lines = status.read_text().splitlines()
                kib = next(int(line.split()[1]) for line in lines if line.startswith("VmHWM:"))
            except (OSError, StopIteration, ValueError):
                continue  # not started, exiting, or no /proc
            peak[0] = max(peak[0], kib / 1024)

    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            argv, cwd=base, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except OSError as error:  # not a program this machine runs
        raise UserError(f"{Path(argv[0]).name} does not run here: {error.strerror}") from None
    with process:
        sampler = threading.Thread(target=sample, args=(Path(f"/proc/{process.pid}/status"),))
        sampler.start()
        output = process.stdout.read().decode(errors="replace") if process.stdout else ""
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        sampler.join()
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        last = output.strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"{Path(argv[0]).name} failed ({process.returncode}): {last[0]}")
    return output, seconds, usage.ru_utime + usage.ru_stime, peak[0]


def _number(pattern: str, output: str, name: str) -> float:
    """The number after `pattern` in a binary's output (its own report), or a one-line error."""
    found = re.search(pattern + r"\s*([0-9][0-9,]*\.?[0-9]*)", output)
    if found is None:
        raise UserError(f"{name}: no '{pattern}' in its output (another version?)")
    return float(found.group(1).replace(",", ""))


def solve(folder: str | os.PathLike, threads: int, base: Path) -> dict[str, float]:
    """Its full solve from scratch into `base`: its own reported seconds (the induction and the
    table's save), the whole process's, CPU seconds, peak MiB, the optimum and the table's size."""
    output, process_seconds, cpu, peak = _run(
        [str(binary(folder, SOLVE)), "--force"], threads, base
    )
    seconds = _number("Total computation time:", output, SOLVE)
    table = base / TABLE
    if not table.is_file():
        raise UserError(f"{SOLVE}: no table at {TABLE} after its solve (another version?)")
    optimum = np.fromfile(table, "<f4", count=1, offset=TABLE_HEADER_BYTES)
    return {
        "threads": threads,
        "seconds": seconds,
        "process_seconds": process_seconds,
        "cpu_seconds": cpu,
        "peak_mib": peak,
        "optimum": float(optimum[0]),
        "table_bytes": table.stat().st_size,
    }


def simulate(
    folder: str | os.PathLike, threads: int, base: Path, games: int, seed: int
) -> dict[str, float]:
    """Its lockstep optimal play of `games` games, its table solved into `base` beforehand: its
    own reported games/s and seconds, the whole process's seconds, CPU seconds and mean score."""
    argv = [str(binary(folder, SIMULATE)), "--games", str(games), "--seed", str(seed), "--lockstep"]
    output, process_seconds, cpu, _ = _run(argv, threads, base)
    return {
        "threads": threads,
        "games_per_second": _number("Throughput:", output, SIMULATE),
        "seconds": _number("Elapsed:", output, SIMULATE) / 1000,
        "process_seconds": process_seconds,
        "cpu_seconds": cpu,
        "mean": _number("Mean score:", output, SIMULATE),
    }


def fastest_plays(
    folder: str | os.PathLike, games: int, seed: int, repeats: int
) -> dict[str, dict[str, float]]:
    """Its fastest of `repeats` lockstep plays on each thread count, keyed by threads (its table
    solved once first, untimed)."""
    with tempfile.TemporaryDirectory() as base:
        solve(folder, max(thread_counts()), Path(base))
        return {
            str(threads): max(
                (simulate(folder, threads, Path(base), games, seed) for _ in range(repeats)),
                key=lambda run: run["games_per_second"],
            )
            for threads in thread_counts()
        }
