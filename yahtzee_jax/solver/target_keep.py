"""A target solve's finished layers, kept on disk while it runs: a solve that is interrupted or
killed goes on from its last kept layer instead of from the start (official's took minutes).

Layers are solved from the full card down, so the finished ones are every layer with at least
some number of boxes filled. The file holds the flat table (`solver.target_table`) with that
number after it, one float64 more; it is written whole or not at all, with its checksum
(`files.written_checked`), and read only where the checksum and the layout match.
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import threading
import time

import numpy as np

from yahtzee_jax.files import check_state, remove_abandoned, remove_checked, written_checked

_PROBABILITY_SLACK = 1e-9  # a mean of ones may round a hair above 1


def keep_path(table_path: pathlib.Path) -> pathlib.Path:
    """Where the solve of the cached table at `table_path` keeps its finished layers."""
    return table_path.with_name(table_path.stem + ".partial.npy")


def resume(path: pathlib.Path, flat: np.ndarray, num_boxes: int) -> int:
    """Copy the layers kept at `path` into `flat` and return the fewest boxes filled of them
    (`num_boxes` where nothing usable is kept: a damaged or foreign file is said and removed)."""
    remove_abandoned(path)  # a killed writer's temporary copy
    state = check_state(path)
    if state == "missing":
        return num_boxes
    kept = _read(path, flat.size, num_boxes) if state == "whole" else None
    if kept is None:
        print(f"the kept layers {path} are damaged; the solve starts again", file=sys.stderr)
        remove_checked(path)
        return num_boxes
    down_to = int(kept[-1])
    flat[...] = kept[:-1]
    print(
        f"going on with the target solve from {path}: its layers of {down_to} or more boxes "
        "filled are kept",
        file=sys.stderr,
    )
    return down_to


def _read(path: pathlib.Path, size: int, num_boxes: int) -> np.ndarray | None:
    """The kept array, mapped read-only, or None unless it is chances of this layout (each in
    [0, 1] or not yet solved) followed by a layer count below `num_boxes`."""
    try:
        kept = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, EOFError, ValueError):
        return None
    if kept.shape != (size + 1,) or kept.dtype != np.float64:
        return None
    down_to = float(kept[-1])
    if not (down_to.is_integer() and 0 <= down_to < num_boxes):
        return None
    chances = kept[:-1]
    if np.nanmin(chances) < 0 or np.nanmax(chances) > 1 + _PROBABILITY_SLACK:
        return None
    return kept


class Keeper:
    """Keeps the finished layers of one solve in `path` (None: keeps nothing) at a layer's end
    once `every_s` seconds have passed since it last kept them, and when interrupted.

    A keep is written on a thread of its own while the solve goes on with the next layer: it
    reads only the finished layers' rows, which nothing writes again (the next layer's rows it
    copies half-solved are counted as unfinished). Written in line, official's keep of 6 s
    cost the solve about 10 s; on its thread, nothing two runs could tell
    (`results/target-keep/official-inline.json` and `official.json`)."""

    thread = threading.Thread  # what writes a keep beside the solve

    def __init__(
        self, path: pathlib.Path | None, flat: np.ndarray, solved_down_to: int, every_s: float
    ) -> None:
        self.path, self.flat, self.every_s = path, flat, every_s
        self.done = self.kept = solved_down_to  # fewest boxes filled: finished, and kept
        self.since = time.monotonic()
        self.unkept = False  # a write failed: the solve goes on without keeping
        self.writer: threading.Thread | None = None

    def layer_done(self, filled: int, last: bool) -> None:
        """The layer of `filled` boxes is finished (the `last` one is written as the table)."""
        self.done = filled
        if self.path is None or self.unkept:
            return
        if last:  # the table is written next: no keep may be writing beside it
            self.wait()
        elif not self.writing() and time.monotonic() - self.since >= self.every_s:
            self.writer = self.thread(target=self._keep, args=(filled,), daemon=True)
            self.writer.start()

    def writing(self) -> bool:
        """Whether a keep is being written now."""
        return self.writer is not None and self.writer.is_alive()

    def wait(self) -> None:
        """Until the keep being written (if any) is written."""
        if self.writer is not None:
            self.writer.join()

    def interrupted(self) -> None:
        """Keep what is finished and say where it is, for the same command to go on from."""
        if self.path is None:
            return
        self.wait()
        if self.done < self.kept:
            self._keep(self.done)
        if self.path.exists():  # kept now, or by a solve before
            print(
                f"interrupted: the target solve's layers of {self.kept} or more boxes "
                f"filled are kept in {self.path}; the same command goes on from there",
                file=sys.stderr,
            )

    def _keep(self, done: int) -> None:
        """Write the flat table and `done`, the fewest boxes filled of the finished layers,
        whole or not at all. Where the folder has not room for it and the table still to be
        written, or the write fails, say so in one line and go on without keeping: the table
        matters more than its progress."""
        if self.unkept:
            return
        assert self.path is not None
        try:
            if shutil.disk_usage(self.path.parent).free < 2 * self.flat.nbytes:
                raise OSError(28, "not room for it and the table beside it")
            with written_checked(self.path, ".tmp.npy") as partial, open(partial, "wb") as file:
                header = {"descr": "<f8", "fortran_order": False, "shape": (self.flat.size + 1,)}
                np.lib.format.write_array_header_1_0(file, header)
                file.write(memoryview(self.flat))
                file.write(np.float64(done).tobytes())
        except OSError as error:
            self.unkept = True
            print(
                f"cannot keep the target solve's finished layers in {self.path} "
                f"({error.strerror or error}): the solve goes on without",
                file=sys.stderr,
            )
            return
        self.kept, self.since = done, time.monotonic()
