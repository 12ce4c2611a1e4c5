"""A process that needs Yacht's target table, for the cache fault tests (`test_cache_faults`):

    python tests/cache_faults.py MODE CACHE_DIR KERNEL_DIR [READY_COUNT]

MODE "load" calls `target_tables("yacht", cache_dir=CACHE_DIR)` and prints `from_cache=BOOL`;
"kill" does the same but is killed by SIGKILL halfway through writing the table's file (the
signal sent to itself from inside the writer, after half the bytes are on the disk: where a
user's Ctrl-\\ or the OOM killer would land in a 1.6 GiB write). The table is the smallest a
cache holds (`stand_in`), solved by the C kernel kept in KERNEL_DIR (built there once for the
tests, not in each process). With READY_COUNT, the process waits (up to 60 s) until that many
processes have started before it asks for the table, so that they ask at the same moment.
The test hooks are this script's own: production code reads no fault from anywhere.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import time

import numpy as np

from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import target_table
from yahtzee_jax.solver.target_layout import target_layout

SOLVE_SECONDS = 1.0  # the stand-in solve lasts this long at least: the others reach the lock
SOLVE = target_table.solve_target_table  # the solver the stand-in calls
KERNELS: str | None = None  # the folder of the C kernel the stand-in solves with


def stand_in(rules, policy="target", value_table=None, workers=None, cache_dir=None, **_):
    """`solve_target_table` with the last layer solved (Yacht's 11 boxes filled), the rest 0:
    a table of the full size that a test solves in a second. It says "solving" on stderr."""
    print("solving the stand-in target table", file=sys.stderr, flush=True)
    start = time.perf_counter()
    flat = SOLVE(rules, policy, value_table, down_to_filled=11, workers=1, cache_dir=KERNELS)
    time.sleep(max(0.0, SOLVE_SECONDS - (time.perf_counter() - start)))
    return np.nan_to_num(flat)


def killed_halfway(file, array) -> None:
    """`np.save` that writes half the array's bytes, then dies by SIGKILL."""
    with open(file, "wb") as handle:
        np.lib.format.write_array_header_1_0(
            handle, np.lib.format.header_data_from_array_1_0(array)
        )
        handle.write(array[: len(array) // 2].tobytes())
        handle.flush()
        os.fsync(handle.fileno())
    os.kill(os.getpid(), signal.SIGKILL)


def wait_for_others(folder: pathlib.Path, count: int) -> None:
    """Mark this process started in `folder` and wait until `count` processes have."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    """Run MODE on CACHE_DIR (see the module's docstring)."""
    global KERNELS
    mode, cache_dir, KERNELS, *ready = argv
    target_table.solve_target_table = stand_in  # `target_tables` calls it through its module
    if mode == "kill":
        target_table.np.save = killed_halfway
    if ready:  # the layout (3 s) first, on each process's own core, not one after the other
        target_layout(get_rules("yacht"))
        wait_for_others(pathlib.Path(cache_dir).parent / "ready", int(ready[0]))
    result = target_table.target_tables("yacht", cache_dir=cache_dir)
    print(f"from_cache={result.from_cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
