"""What an evaluation records of its games, and the number of games it may play: no JAX here,
so a command that plays without it (`evaluate optimal --engine native`) never imports it.
`evaluation.records` plays the games on the device."""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from yahtzee_jax.config import check_seed, is_integer
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules, get_rules

ACCELERATOR_BATCH_SIZE = 4096
# On a 2-core CPU the agents play in batches of 128 unless their policy asks otherwise
# (`records.default_batch_size`): the widget agents (optimal, greedy) compute their turn plans a
# chunk of 128 distinct states at a time and ask for 2,048 games
# (`agents.batching.WIDGET_CPU_BATCH_SIZE`).
# Before that (their [462, batch] keep values computed per game, issue 46): fastest at 128-256.
CPU_BATCH_SIZE = 128


@dataclasses.dataclass(frozen=True)
class GameRecords:
    """Per-game results of an evaluation (numpy arrays over N games; never per-step data).

    box_scores: int32[N, boxes], final points in each box (13 boxes in Yahtzee).
    total: int32[N], final score, bonuses included.
    upper_bonus: bool[N], whether the upper bonus was earned.
    yahtzee_bonus_count: int32[N], number of Yahtzee bonuses.
    turn_categories: int32[N, turns], the box scored at each turn.
    turn_points: int32[N, turns], the points written in that box at each turn.
    """

    agent: str
    rules: str
    seed: int
    box_scores: np.ndarray
    total: np.ndarray
    upper_bonus: np.ndarray
    yahtzee_bonus_count: np.ndarray
    turn_categories: np.ndarray
    turn_points: np.ndarray

    @property
    def num_games(self) -> int:
        """Number of games recorded."""
        return int(self.total.shape[0])

    @property
    def rule_set(self) -> Rules:
        """The `Rules` the games were played under (`rules` is its name)."""
        return get_rules(self.rules)

    @property
    def yahtzee_scored(self) -> np.ndarray:
        """bool[N]: the Yahtzee box holds 50."""
        rules = self.rule_set
        return self.box_scores[:, rules.yahtzee_box] == rules.yahtzee_score

    def save(self, path: str | os.PathLike) -> None:
        """Write the records to an `.npz` file."""
        arrays = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GameRecords:
        """Read records written by `save`."""
        with np.load(path) as data:
            values = {name: data[name] for name in data.files}
        for name in ("agent", "rules"):
            values[name] = str(values[name])
        values["seed"] = int(values["seed"])
        return cls(**values)


MAX_GAMES = 2**31 - 1  # games are numbered by int32 indices on the device


def check_game_seed(seed: int) -> None:
    """Reject a seed that is not an integer in 0..2**32 - 1: JAX's key would take 2**32 as 0
    and -1 as 2**32 - 1, so the games played would not be the seed recorded."""
    if not is_integer(seed):
        raise UserError(f"the seed must be an integer, got {seed!r}")
    check_seed("seed", seed)


# What a game's records hold in memory (`GameRecords`: 13 boxes' and 13 turns' int32 scores and
# boxes, the total, bonus flag and count: 165 bytes), rounded up for what is computed from them.
RECORD_BYTES = 200


def check_num_games(num_games: int, bytes_per_game: int = RECORD_BYTES) -> None:
    """Reject a non-positive (or int32-overflowing) number of games with a clear message, and
    one whose records (`bytes_per_game` each) would not fit in this machine's memory: it grew
    until the system killed it (2^31 - 1 games keep about 400 GiB of records)."""
    if num_games < 1:
        raise UserError(f"the number of games must be at least 1 (got {num_games})")
    if num_games > MAX_GAMES:
        raise UserError(f"the number of games must be at most {MAX_GAMES} (got {num_games})")
    needed, memory = num_games * bytes_per_game, physical_memory()
    if memory is not None and needed > memory:
        raise UserError(
            f"{num_games:,} games keep about {needed / 2**30:,.0f} GiB of records; this machine "
            f"has {memory / 2**30:,.0f} GiB: play fewer (a run of them at a time, other seeds)"
        )


def physical_memory() -> int | None:
    """This machine's memory in bytes, None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_batch_size(batch_size: int | None) -> None:
    """Reject a batch size below 1 with a clear message (None: the default's)."""
    if batch_size is not None and batch_size < 1:
        raise UserError(f"the batch size must be at least 1 (got {batch_size})")
