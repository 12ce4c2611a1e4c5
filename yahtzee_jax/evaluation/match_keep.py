"""A match evaluation's finished matches, kept on disk while it plays: `match ... --out F`
stopped after 14 of its 15 minutes goes on from them when the same command runs again.

Match i's dice depend on the seed and i alone (`matches.game_keys`), so matches kept by one
sitting and played by the next are the matches one sitting would have played: the result is the
same to the last match. The file (`F.partial.npz`, written whole with its checksum through
`files.written_checked`) holds each match's totals, which matches are done, and what was
played (the player and its options, the opponents, rules, seed, matches and the code's digest):
a keep of anything else is said and not used.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from yahtzee_jax.evaluation.stored_traces import package_digest
from yahtzee_jax.files import (
    check_state,
    read_arrays,
    remove_abandoned,
    remove_checked,
    written_checked,
)

KEEP_EVERY_S = 10.0  # seconds between keeps while matches play (and one when interrupted)
NAMES = ("own", "other", "done", "identity")


def keep_path(out: str | Path) -> Path:
    """Where the matches of a result file `out` are kept while they play."""
    return Path(f"{out}.partial.npz")


class MatchKeep:
    """The finished matches of one evaluation (`identity`: what is played, a JSON-able dict),
    kept in `path` at most every `every_s` seconds (default `KEEP_EVERY_S`) and when
    interrupted; `noun` names them in its lines (a tournament's solitaire agents keep games)."""

    def __init__(
        self,
        path: Path,
        identity: dict[str, Any],
        every_s: float | None = None,
        noun: str = "matches",
    ):
        code = package_digest()  # changed code (its C kernel too) may play other matches
        self.path, self.noun = path, noun
        self.every_s = KEEP_EVERY_S if every_s is None else every_s  # read when made
        self.identity = json.dumps({**identity, "code": code}, sort_keys=True)
        self.since = time.monotonic()
        self.unkept = False  # a write failed: the matches go on without keeping
        self.kept_at_start = 0  # matches taken from the keep, not played in this sitting

    def resume(self, num_games: int, others: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(own totals [N], the others' [N, others], done [N]): the kept ones where this keep
        holds the same matches, else nothing done (a keep of other matches is said and left
        to be replaced)."""
        own, other = np.zeros(num_games, np.int64), np.zeros((num_games, others), np.int64)
        done = np.zeros(num_games, bool)
        remove_abandoned(self.path)  # a killed writer's temporary copy
        state = check_state(self.path)
        if state == "missing":
            return own, other, done
        kept = read_arrays(self.path, NAMES) if state == "whole" else None
        usable = kept is not None and str(kept[3]) == self.identity
        if not (usable and kept[0].shape == own.shape and kept[1].shape == other.shape):
            print(f"{self.path} holds other {self.noun} or is damaged: not used", file=sys.stderr)
            return own, other, done
        kept_own, kept_other, kept_done = kept[:3]
        self.kept_at_start = int(kept_done.sum())
        print(
            f"going on from {self.path}: {self.kept_at_start:,} of {num_games:,} {self.noun} kept",
            file=sys.stderr,
        )
        return kept_own.astype(np.int64), kept_other.astype(np.int64), kept_done.astype(bool)

    def played(self, own: np.ndarray, other: np.ndarray, done: np.ndarray) -> None:
        """A batch is finished: keep the matches if `every_s` has passed since the last keep."""
        if time.monotonic() - self.since >= self.every_s:
            self.keep(own, other, done)

    def keep(self, own: np.ndarray, other: np.ndarray, done: np.ndarray) -> None:
        """Write the matches whole; a failed write is said once, and play goes on unkept."""
        if self.unkept:
            return
        arrays = {"own": own, "other": other, "done": done, "identity": np.array(self.identity)}
        try:
            with written_checked(self.path, ".tmp.npz") as partial:
                np.savez(partial, **arrays)
        except OSError as error:
            self.unkept = True
            print(
                f"cannot keep the {self.noun} in {self.path} ({error.strerror or error}): "
                "playing on without",
                file=sys.stderr,
            )
            return
        self.since = time.monotonic()

    def interrupted(self, own: np.ndarray, other: np.ndarray, done: np.ndarray) -> None:
        """Keep what is done and say where, for the same command to go on from (nothing done:
        nothing to keep or say)."""
        if not done.any():
            return
        self.keep(own, other, done)
        if not self.unkept:
            print(
                f"interrupted: {int(done.sum()):,} of {len(done):,} {self.noun} are kept in "
                f"{self.path}; the same command goes on from there",
                file=sys.stderr,
            )

    def remove(self) -> None:
        """The result is written: the keep and its checksum go."""
        remove_checked(self.path)
