"""Whole games of optimal solitaire play on the solver's C kernel (`native_play.c`), no JAX.

A turn of every game at a time: the games are grouped by their turn-start state, and the
kernel computes each distinct state's widget once (the solver's own functions, float64) and
plays the turn of every game in that state from it (`play_run`). Each game rolls its own dice
(splitmix64 seeded by the seed and the game's number): the same games on any number of threads.
It plays the optimal agent's policy (the first of equal values, as `agents.widget_agents`),
valued in float64 where the agent is float32, with dice of its own: a game of it is not the JAX
agent's game of the same seed, but its scores are draws of the same distribution.
"""

from __future__ import annotations

import ctypes
import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import default_cache_dir
from yahtzee_jax.game.rules import NUM_DICE, Rules
from yahtzee_jax.host import usable_cpus
from yahtzee_jax.solver.native import TILE, NativeError, NativeSolve, load_kernel
from yahtzee_jax.solver.value_table import solve, table_shape
from yahtzee_jax.solver.widget_tables import (
    KEEP_OF_ACTION,
    KEEP_OFFSETS,
    ROLL_COUNTS,
    ROLL_OF_CODE,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
    base_points,
    solver_score_tables,
)

_POINTER = ctypes.c_void_p


class _Games(ctypes.Structure):
    """The kernel's `games_t`: the cards (`GAME`), the turns played and the optional trace."""

    _fields_ = [(name, _POINTER) for name in ("game", "turns_played", "dice", "keeps")] + [
        ("turns", ctypes.c_int32)
    ]


# The kernel's `game_t`: a game's dice stream and card, 32 bytes.
GAME = np.dtype(
    {
        "names": ["random", "mask", "upper", "flag", "total", "yahtzee_bonuses", "upper_bonus"],
        "formats": [np.uint64, np.int32, np.int32, np.int32, np.int32, np.int32, np.uint8],
        "offsets": [0, 8, 12, 16, 20, 24, 28],
        "itemsize": 32,
    }
)


class _Tables(ctypes.Structure):
    """The kernel's `play_tables_t`: what a decision reads besides the widget."""

    _fields_ = [
        (name, _POINTER)
        for name in (
            "values",
            "yz_points",
            "yz_legal",
            "yz_bonus",
            "base_points",
            "action_rows",
            "roll_of_code",
            "five_face",
            "roll_counts",
        )
    ]


class PlayedGames(NamedTuple):
    """Per-game results (numpy arrays over N games), the fields of `evaluation`'s GameRecords."""

    box_scores: np.ndarray  # int32[N, boxes]
    total: np.ndarray  # int32[N], bonuses included
    upper_bonus: np.ndarray  # bool[N]
    yahtzee_bonus_count: np.ndarray  # int32[N]
    turn_categories: np.ndarray  # int32[N, turns]: the box scored at each turn
    turn_points: np.ndarray  # int32[N, turns]: the points written there
    dice: np.ndarray | None = None  # with `trace`: int8[N, turns, 3, 5], each roll's dice
    keeps: np.ndarray | None = None  # with `trace`: int8[N, turns, 2], each keep action


def action_rows() -> np.ndarray:
    """int32[252, 32]: the kernel's widget row of each roll's keep action (a keep of size s at
    `KEEP_OFFSETS[s]` plus its `WIDGET_POSITION`, the order the kernel holds a size in)."""
    sizes = np.searchsorted(KEEP_OFFSETS, KEEP_OF_ACTION, side="right") - 1
    rows = np.empty_like(KEEP_OF_ACTION)
    for size in range(NUM_DICE + 1):
        here = sizes == size
        rows[here] = (
            KEEP_OFFSETS[size] + WIDGET_POSITION[size][KEEP_OF_ACTION[here] - KEEP_OFFSETS[size]]
        )
    return rows


def _five_faces() -> np.ndarray:
    """int32[252]: the face (0-5) of each five of a kind, -1 for the other rolls."""
    faces = np.full(len(ROLL_COUNTS), -1, np.int32)
    faces[YAHTZEE_ROLLS] = np.argmax(ROLL_COUNTS[YAHTZEE_ROLLS], axis=1)
    return faces


def _address(array: np.ndarray) -> int:
    return array.ctypes.data


def play_optimal(
    rules: Rules,
    num_games: int,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    trace: bool = False,
    progress: bool = False,
    value_table: np.ndarray | None = None,
) -> PlayedGames:
    """`num_games` whole games of optimal play under `rules` (the value table solved first if
    it is not cached), on `threads` host threads (default: one per usable CPU); with `trace`,
    every roll's dice and keep action too; with `progress`, a bar of the turns played. With
    `value_table`, the same rule (a box's points plus the table's value after it, the keeps by
    the widget on those) plays that table instead (`solver.discounted.policy_table`)."""
    if value_table is None:
        value_table = solve(rules, cache_dir=cache_dir).value_table
    elif value_table.shape != table_shape(rules):
        raise UserError(f"value_table has shape {value_table.shape}, not {table_shape(rules)}")
    value_table = np.ascontiguousarray(value_table, np.float64)
    cache = str(cache_dir) if cache_dir is not None else str(default_cache_dir())
    kernel = load_kernel(cache)
    kernel.play_run.argtypes = [
        _POINTER,
        ctypes.c_int64,
        *[_POINTER] * 5,
        ctypes.c_int32,
        ctypes.POINTER(_Tables),
        ctypes.POINTER(_Games),
    ]
    score_tables = solver_score_tables(rules)
    solver = NativeSolve(rules, score_tables[1:], kernel, threads=1)
    constants = [
        value_table,
        *solver.options,
        np.ascontiguousarray(base_points(rules), np.int32),
        np.ascontiguousarray(action_rows(), np.int32),
        np.ascontiguousarray(ROLL_OF_CODE, np.int32),
        _five_faces(),
        np.ascontiguousarray(ROLL_COUNTS, np.int32),
    ]
    tables = _Tables(*map(_address, constants))
    turns = rules.num_boxes
    game = np.zeros(num_games, GAME)
    # Each game's stream: the seed in the high half, the game's number in the low.
    game["random"] = (np.uint64(seed % 2**32) << np.uint64(32)) | np.arange(
        num_games, dtype=np.uint64
    )
    turns_played = np.zeros((num_games, turns, 2), np.int16)
    dice = np.zeros((num_games, turns, 3, NUM_DICE), np.int8) if trace else None
    keeps = np.zeros((num_games, turns, 2), np.int8) if trace else None
    traced = [None if part is None else _address(part) for part in (dice, keeps)]
    games = _Games(_address(game), _address(turns_played), *traced, turns)
    threads = threads or usable_cpus()
    turns_to_play = range(turns)
    if progress:
        from tqdm import tqdm

        turns_to_play = tqdm(turns_to_play, desc=f"{num_games} games", unit="turn")
    with ThreadPoolExecutor(max(1, threads - 1)) as pool:
        for turn in turns_to_play:
            groups = _turn_groups(game, value_table.shape[1], -(-num_games // (16 * threads)))
            _play_turn(kernel, solver.plan, groups, turn, (tables, games), pool, threads)
    boxes, points = (turns_played[..., part].astype(np.int32) for part in (0, 1))
    box_scores = np.zeros((num_games, rules.num_boxes), np.int32)
    np.put_along_axis(box_scores, boxes, points, axis=1)  # each box filled once
    return PlayedGames(
        box_scores,
        game["total"].copy(),
        game["upper_bonus"].astype(bool),
        game["yahtzee_bonuses"].copy(),
        boxes,
        points,
        dice,
        keeps,
    )


class _Groups(NamedTuple):
    """A turn's games grouped by their turn-start state, padded to whole tiles."""

    states: list[np.ndarray]  # int32 [states] x 3: mask, upper total, flag
    starts: np.ndarray  # int64[states + 1]: state s's games are games[starts[s]:starts[s + 1]]
    games: np.ndarray  # int64[N]: the games, a state's together


def _turn_groups(game: np.ndarray, totals: int, most: int) -> _Groups:
    """The games (`GAME` records) grouped by (mask, upper total, flag), at most `most` games a
    group (a state with more has several groups: its widget computed again for each, so that
    the threads share the first turns' few states); the last group repeated with no games up
    to a whole tile."""
    mask, upper, flag = (game[field] for field in ("mask", "upper", "flag"))
    key = (mask.astype(np.int64) * totals + upper) * 2 + flag
    games = np.argsort(key)  # any order within a state: each game has its own dice
    ordered = key[games]
    firsts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    pieces = -(-np.diff(np.r_[firsts, len(key)]) // most)
    state_of_group = np.repeat(np.arange(len(firsts)), pieces)
    within = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    group_starts = firsts[state_of_group] + within * most
    padding = -len(group_starts) % TILE
    states = [
        np.ascontiguousarray(np.pad(column[games[group_starts]], (0, padding), mode="edge"))
        for column in (mask, upper, flag)
    ]
    starts = np.pad(np.r_[group_starts, len(key)].astype(np.int64), (0, padding), mode="edge")
    return _Groups(states, starts, games.astype(np.int64))


# A tile's widget costs about as much as this many games' turns (8 states' widget in about 8 us,
# a game's turn 0.2 us, 2-core AMD EPYC): how the threads' shares of a turn are weighed.
TILE_COST_IN_GAMES = 40


def _play_turn(
    kernel: ctypes.CDLL,
    plan: ctypes.Structure,
    groups: _Groups,
    turn: int,
    arguments: tuple[_Tables, _Games],
    pool: ThreadPoolExecutor,
    threads: int,
) -> None:
    """Turn `turn` of every game: each thread a contiguous part of the tiles (a group's games
    are its own, so no two threads move the same game)."""

    def run(first: int, last: int) -> None:
        status = kernel.play_run(
            ctypes.byref(plan),
            last - first,
            *(column[first:].ctypes.data for column in groups.states),
            groups.starts[first:].ctypes.data,
            groups.games.ctypes.data,
            turn,
            *map(ctypes.byref, arguments),
        )
        if status:
            raise NativeError(f"the solver kernel refused the play (status {status})")

    # Contiguous parts of the tiles of about equal work: games plus each tile's widget.
    work = np.cumsum(np.diff(groups.starts[::TILE]) + TILE_COST_IN_GAMES)
    cuts = np.searchsorted(work, work[-1] * np.arange(1, threads) / threads) + 1
    bounds = [0, *(TILE * cuts).tolist(), len(groups.states[0])]
    parts = [(low, high) for low, high in itertools.pairwise(bounds) if high > low]
    others = [pool.submit(run, *part) for part in parts[1:]]
    run(*parts[0])
    for other in others:
        other.result()
