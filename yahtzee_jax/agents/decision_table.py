"""The optimal agent with every keep decision in a table: `optimal-table` (issue 46).

The optimal agent (`agents.widget_agents`) computes a turn's keep values when the turn starts, once
per distinct turn-start state of a batch: three quarters of a game's time on a CPU. This agent
computes them once per solved state before play, with the same float32 functions, and keeps
for each (state, roll) the two keeps they choose: the best keep action with two re-rolls left and
with one (an index among the roll's 32 keep actions, 5 bits each of a uint16). A keep decision
in play is then one gather; the score decision is the optimal agent's own (`score_actions`).

Rows are the solver's states (`solver.states.solved_states`): a card reads the row of its mask,
its upper total's representative (`representative_totals`: the totals whose values the solver
copies from it) and its Yahtzee flag where the rules give that flag a state of its own. Its
decisions are the optimal agent's: `tests/test_decision_table.py` plays both agents' games.
Yatzy's table is 483 MB (958,976 states x 252 rolls x 2 bytes), official's 181 MB, built in
seconds and kept in the solver's cache folder for the next process (`cached_decision_table`);
an agent of its own (`evaluate`, `bench evaluate --agents optimal-table`) so that nothing else
builds it.

The table assumes whole games (a card's turns left are its open boxes): the agent plays whole
games only (`whole_games_only`, which the single-turn evaluation reads to refuse it in one line;
`optimal` plays single turns). Its one call branches on nothing: it selects between the keep and
the box (`table_actions`), so that `play_games`, which shows it each roll as the constant it is
(`plays_by_roll`), compiles only the roll's own work: the speed of its former turn path
(results/turn-path-bench/idle).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.widget_agents import (
    PLAN_CHUNK,
    WIDGET_CPU_BATCH_SIZE,
    first_best_action,
    first_keep_values,
    last_keep_values,
    make_optimal_agent,
    score_actions,
)
from yahtzee_jax.files import cached, remove_stale, sources_digest, written_checked
from yahtzee_jax.game.engine import LAST_ROLL, State
from yahtzee_jax.game.rules import NUM_DICE, Rules, get_rules
from yahtzee_jax.parallel import host_threads, ordered_map
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.programs import build_identity, source_digest
from yahtzee_jax.solver.states import (
    all_masks,
    num_upper_totals,
    representative_totals,
    solved_states,
)
from yahtzee_jax.solver.value_table import cache_file
from yahtzee_jax.solver.widget_tables import (
    KEEP_OF_ACTION,
    NUM_FLAGS,
    NUM_ROLLS,
    ROLL_OF_CODE,
    dice_code,
)

KEEP_BITS = 5  # a keep action is one of 32 (which dice to keep)
KEY_LENGTH = 16  # hex digits of a cached table's code digest, the end of its name
# Rows built by one call: 8 chunks of `PLAN_CHUNK`, the optimal agent's own chunk of states
ROWS_PER_CALL = 8 * PLAN_CHUNK


@struct.dataclass
class DecisionTable:
    """The optimal agent's params and its keeps: `value_table` float32[masks, totals, flags]
    (the optimal agent's), `row_of_state` int32[masks * totals * flags] (-1: not reachable) and
    `keeps` uint16[rows, 252] (first keep | last keep << 5)."""

    value_table: jax.Array
    row_of_state: jax.Array
    keeps: jax.Array


def _rows(rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """(mask, upper total, flag) of each row, int[rows, 3], and the row of every state key."""
    solved = solved_states(rules)  # [masks, totals, flags]
    rows = np.argwhere(solved)
    row_of_solved = np.full(solved.shape, -1, np.int32)
    row_of_solved[tuple(rows.T)] = np.arange(len(rows), dtype=np.int32)
    masks = all_masks(rules)
    upper_masks = masks & ((1 << rules.num_upper) - 1)
    representative = representative_totals(rules)[upper_masks]  # [masks, totals], -1 unreachable
    reachable = representative >= 0
    rep = np.where(reachable, representative, 0)
    row_of_state = np.full(solved.shape, -1, np.int32)
    for flag in range(NUM_FLAGS):
        # A flag without a state of its own (no Yahtzee bonus, or the box open) reads flag 0's.
        own = solved[masks[:, None], rep, flag]
        row = np.where(
            own, row_of_solved[masks[:, None], rep, flag], row_of_solved[masks[:, None], rep, 0]
        )
        row_of_state[:, :, flag] = np.where(reachable, row, -1)
    return rows, row_of_state.reshape(-1)


def _cards(rows: np.ndarray, rules: Rules) -> State:
    """A turn-start card of each (mask, upper total, flag) row, whole-game turns left."""
    mask, upper, flag = rows.T
    boxes = np.arange(rules.num_boxes)
    filled = (mask[:, None] >> boxes) & 1 == 1
    scores = np.zeros(filled.shape, np.int32)
    # The upper total in the first filled upper box (card_context reads only the sum).
    upper_filled = filled[:, : rules.num_upper]
    first_upper = np.argmax(upper_filled, axis=1)
    has_upper = upper_filled.any(axis=1)
    scores[np.arange(len(rows))[has_upper], first_upper[has_upper]] = upper[has_upper]
    scores[:, rules.yahtzee_box] = np.where(flag == 1, rules.yahtzee_score, 0)
    count = len(rows)
    return State(
        dice=np.ones((count, NUM_DICE), np.int32),
        roll_index=np.zeros(count, np.int32),
        scores=scores,
        filled=filled,
        yahtzee_bonus_count=np.zeros(count, np.int32),
        turns_left=(rules.num_boxes - filled.sum(axis=1)).astype(np.int32),
        reward=np.zeros(count, np.int32),
        terminated=np.zeros(count, bool),
    )


def _first_best(keep_values: jax.Array) -> jax.Array:
    """The best keep action of every roll, int32[252, columns], from keep values [462, columns]
    (`best_keeps` of every roll at once)."""
    return first_best_action(lambda action: keep_values[KEEP_OF_ACTION[:, action]])


@functools.partial(jax.jit, static_argnames="rules")
def _chunk_keeps(value_table: jax.Array, cards: State, rules: Rules) -> jax.Array:
    """uint16[cards, 252]: each card's best first and last keep of every roll, a `PLAN_CHUNK`
    of cards at a time by the optimal agent's functions."""

    def chunk(cards: State) -> jax.Array:
        last = last_keep_values(value_table, cards, rules)  # [462, chunk]
        first = first_keep_values(last)
        # `best_keeps` of every roll at once
        first_keep, last_keep = _first_best(first), _first_best(last)  # [252, chunk] each
        return (first_keep | (last_keep << KEEP_BITS)).astype(jnp.uint16).T

    chunks = jax.tree.map(lambda field: field.reshape(-1, PLAN_CHUNK, *field.shape[1:]), cards)
    return jax.lax.map(chunk, chunks).reshape(-1, NUM_ROLLS)


def _keeps(value_table: jax.Array, rows: np.ndarray, rules: Rules) -> np.ndarray:
    """uint16[rows, 252]: the keeps of each (mask, upper total, flag) row."""
    starts = range(0, len(rows), ROWS_PER_CALL)

    def build(start: int) -> np.ndarray:
        block = rows[start : start + ROWS_PER_CALL]
        padded = np.concatenate([block, np.repeat(block[:1], ROWS_PER_CALL - len(block), 0)])
        return np.asarray(_chunk_keeps(value_table, _cards(padded, rules), rules))[: len(block)]

    return np.concatenate(list(ordered_map(build, starts, host_threads())))


def cached_decision_table(
    value_table: jax.Array, rules: Rules, cache_dir: str | os.PathLike | None = None
) -> DecisionTable:
    """The table of every solved state's keeps by the optimal agent's float32 functions
    (`value_table` is its params): loaded from the solver's cache folder (None: the default
    one) when built there before by the same code on the same machine, else built, on one host
    thread per CPU, and stored (a folder that cannot take it, a full disk, only makes the next
    build slower). The file carries a checksum, and one process builds it while others wait
    (`files.cached`)."""
    rows, row_of_state = _rows(rules)
    path = cache_path(rules, cache_dir)

    def make() -> np.ndarray:
        keeps = _keeps(value_table, rows, rules)
        _store_keeps(path, keeps, f"{path.stem[:-KEY_LENGTH]}{'?' * KEY_LENGTH}.npy")
        return keeps

    shape = (len(rows), NUM_ROLLS)
    keeps = cached(path, lambda file: _load_keeps(file, shape), make, "decision table")
    return DecisionTable(value_table, jnp.asarray(row_of_state), jnp.asarray(keeps))


def _agent_digest() -> str:
    """A digest of the agents' code the keeps are computed by (this module and `widget_agents`)."""
    return sources_digest("agents/widget_agents.py", "agents/decision_table.py")


def cache_path(rules: Rules, cache_dir: str | os.PathLike | None = None) -> pathlib.Path:
    """Where the keeps of `rules` are cached: named by the rule set (as its value table is),
    a digest of the code that computes them (the agents', the game's and the solver's) and of
    what XLA builds it for (`solver.programs.build_identity`: float32 rounding is XLA's)."""
    base = cache_file(rules, cache_dir, table="decision-table")
    what = (source_digest(), _agent_digest(), build_identity())
    key = hashlib.sha256(repr(what).encode()).hexdigest()[:KEY_LENGTH]
    return base.with_name(f"{base.stem}-{key}.npy")


def _load_keeps(path: pathlib.Path, shape: tuple[int, int]) -> np.ndarray | None:
    """The cached keeps, or None if missing or not whole (another shape or type)."""
    try:
        keeps = np.load(path)
    except (OSError, ValueError, EOFError):
        return None
    return keeps if keeps.shape == shape and keeps.dtype == np.uint16 else None


def _store_keeps(path: pathlib.Path, keeps: np.ndarray, stale: str) -> None:
    """Write the keeps whole or not at all (a partial file goes; a reader never sees one), then
    remove the files matching `stale` (the same rules' tables of other code: hundreds of MB
    each that nothing reads again)."""
    try:
        with written_checked(path) as partial, open(partial, "wb") as file:
            np.save(file, keeps)
    except OSError:
        return
    remove_stale(path, stale)


def _card_rows(table: DecisionTable, cards: State, rules: Rules) -> jax.Array:
    """Each card's row of the table, int32[B]."""
    mask, upper, flag = jax.vmap(card_context, in_axes=(0, 0, None, None))(
        cards.filled, cards.scores, jnp, rules
    )
    key = (mask * num_upper_totals(rules) + upper) * NUM_FLAGS + flag
    return table.row_of_state[key]


def table_actions(table: DecisionTable, cards: State, rules: Rules) -> jax.Array:
    """Each card's action from the table: at a keep the keep stored for its row, roll and
    re-rolls left (one gather; its row found again at each keep, cheaper than carrying it), at
    the score decision the optimal agent's box (`score_actions`). Both are computed and one is
    selected, with no conditional: where the roll index is a constant (`play_games`), XLA drops
    the other's work; a `lax.cond` here would keep it all (21 % of the agent's time)."""
    rows = _card_rows(table, cards, rules)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(cards.dice, jnp)]
    shift = jnp.where(cards.roll_index == 0, 0, KEEP_BITS)
    kept = (table.keeps[rows, roll].astype(jnp.int32) >> shift) & ((1 << KEEP_BITS) - 1)
    scored = score_actions(table.value_table, cards, rules).astype(jnp.int32)
    return jnp.where(cards.roll_index == LAST_ROLL, scored, kept)


@dataclasses.dataclass(frozen=True)
class DecisionTablePolicy:
    """The optimal agent's policy with its keeps read from its table, for cards of whole games
    (`whole_games_only`: a card whose episode ends before its card is full, one turn of the
    single-turn task, has no row)."""

    rules: Rules
    cpu_batch_size = WIDGET_CPU_BATCH_SIZE  # read by `play_games`; not a field
    plays_by_roll = True  # `play_games` shows it each roll as a constant; not a field
    whole_games_only = True  # the single-turn evaluation refuses it; not a field

    def __call__(
        self, params: DecisionTable, own: State, others: State, keys: jax.Array
    ) -> jax.Array:
        """The optimal agent's actions for a batch of cards of whole games."""
        return table_actions(params, own, self.rules)


def make_decision_table_agent(
    rules: str | Rules, cache_dir: str | os.PathLike | None = None
) -> Agent:
    """`optimal-table`: the optimal agent's decisions, its keeps read from a table built first
    (or loaded: `cached_decision_table`) in the solver's `cache_dir`."""
    rules = get_rules(rules)
    optimal = make_optimal_agent(rules, cache_dir=cache_dir)
    table = cached_decision_table(optimal.params, rules, cache_dir)
    return Agent(name="optimal-table", policy=DecisionTablePolicy(rules), params=table, rules=rules)
