"""Exact two-player match play against the optimal-solitaire agent, on small games (issue 63).

Against an opponent whose play does not react to ours, the match is a one-player decision
process over (my card, its card, margin = my total - its total, who moves). Backward induction
over it gives the best chance to win of any real player; the oracle ceiling (`solver.ceiling`),
told the opponent's final score, bounds it from above, the optimal agent's own win rate from
below. The joint space is sum_k C(n, k)^2 card pairs times the margins, so it fits for games of
few boxes without a Yahtzee bonus: a card is its filled boxes and, where the game has an upper
bonus, its capped upper total (`match_cards.card_id`), many times the pairs.

Every turn is a turn of the target tables (`solver.target_turn`, the C kernel or the NumPy
widget, the same bits) on rows of chances. At a turn the mover, with the other player's card
fixed, has one row per pair (mover card a, other card b):

    R[j] = P(mover's points to come - other's points to come >= j - most(b)),  j = 0 .. L - 1,

L = 1 + most(a) + most(b) (`most`: the open boxes at their maxima); R is 1 below j = 0 and 0
from L on, as a target row is. Writing r points moves j to j - r, a target's shift. I win with
margin x when my future beats the other's by 1 - x: at my turn my row is read at
j = 1 - x + most(its card), my best chance of each j on its own (the "target" policy). At its
turn the row is its chance not to lose (its future - mine >= x, a tie being no win of mine),
j = x + most(my card), and the optimal agent plays the "expected" policy
(the box and keeps of highest expected score, as the expected target tables follow it), its
chance carried through its choices. A turn reads the rows of the pairs after the move as the
next mover sees them: the other player's row S of length L gives the mover's
Q[j] = 1 - S[L - j] (the complement of the other's chance of the opposite difference).
A player whose card is full no longer moves: the other moves again, reading its own rows.

Beside the chances to win, rows one longer carry the draws of the same play: at my turn my
chance of a difference one point lower (not to lose) under the play that maximises my chance to
win at that margin, its box and keeps the first of the best (`native.target_turn_start` given
each move's chance to win as its value); at its turn its chance of one point more, carried
through its play. Their difference is the draw chance of my best play.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import os
import resource
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver import native
from yahtzee_jax.solver.match_cards import ME, OPPONENT, check_rules, layer, schedule
from yahtzee_jax.solver.states import num_upper_totals
from yahtzee_jax.solver.target_layout import TargetLayout, most_to_come
from yahtzee_jax.solver.target_turn import (
    kernel_chances,
    piece_chances,
    roll_sources,
    stacked_moves,
    turn_start_chances,
)
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget_tables import NUM_FLAGS, num_masks

POLICIES = ("win", "expected")  # my turns: best chance to win, or the optimal agent's play
PIECE_COLUMNS = 1 << 14  # (state, target) columns per NumPy pass: its arrays stay small
REVCOMP_BLOCK = 1 << 22  # row entries per block of `_revcomp`: 32 MB temporaries


@dataclasses.dataclass
class Rows:
    """Chance rows over the pairs (mover card, other card) of a turn, in one flat table."""

    offsets: np.ndarray  # int64[others, movers]: where the pair's row starts in `flat`
    lengths: np.ndarray  # int64[others, movers]
    flat: np.ndarray  # float64: every row, pair after pair

    @classmethod
    def empty(cls, lengths: np.ndarray) -> Rows:
        """Rows of these lengths laid out one after the other, not yet solved."""
        offsets = (np.cumsum(lengths) - lengths.ravel()).reshape(lengths.shape)
        return cls(offsets, lengths, np.empty(int(lengths.sum())))

    def row(self, k: int, i: int) -> np.ndarray:
        """The row of the pair (movers[i], others[k])."""
        start = int(self.offsets[k, i])
        return self.flat[start : start + int(self.lengths[k, i])]


# A valuation of my turns' ends: given a turn's other cards and my cards after my move (card
# ids, ascending) and `most` (by card id), a function of k giving the values over the pairs
# (others[k], each card after), laid out as the rows I read after the move ([1, cards after]),
# or None: play that turn for the win. One other card at a time, because a whole turn's values
# would take as much memory as the turn's rows.
ValuationRows = Callable[[int], Rows]
Valuation = Callable[[np.ndarray, np.ndarray, np.ndarray], ValuationRows | None]


@dataclasses.dataclass
class TurnRows:
    """The rows of one turn over its pairs (mover card, other card): the mover's chances
    (L = 1 + most(mover card) + most(other card) long) and the draw rows (L + 1 long)."""

    mover: int  # ME or OPPONENT
    movers: np.ndarray  # the mover's cards (`card_id`s) at this turn, ascending
    others: np.ndarray  # the other player's cards, ascending
    win: Rows
    draw: Rows | None  # None: solved without the draws

    def pair(self, mover_card: int, other_card: int) -> tuple[int, int]:
        """(k, i): where the pair (mover card, other card) is among the turn's."""
        i = int(np.searchsorted(self.movers, mover_card))
        k = int(np.searchsorted(self.others, other_card))
        if i == len(self.movers) or self.movers[i] != mover_card:
            raise UserError(f"card {mover_card} is not a mover's card of this turn")
        if k == len(self.others) or self.others[k] != other_card:
            raise UserError(f"card {other_card} is not the other card of this turn")
        return k, i


@dataclasses.dataclass
class MatchSolution:
    """The joint solve from one position: my chances at every margin of its first turn."""

    rules: Rules
    policy: str
    start: tuple[int, int]  # (my card, its card) at the first turn
    turns: list[TurnRows]  # turn 0 first; only turn 0 unless the solve kept them all
    most: np.ndarray  # int64[card ids]: the points still reachable from each card
    seconds: float
    cpu_seconds: float  # this process's CPU time (the kernel runs on one thread)
    peak_rss_bytes: int  # the process's peak resident memory when the solve ended
    columns: int  # (pair, target) chances solved, win and draw rows

    def _read_at(
        self, turn: int, my_card: int, its_card: int, margin: int
    ) -> tuple[TurnRows, tuple[int, int], int]:
        """The turn's rows, the pair's place among them and the j at which my chances at
        `margin` are read (the mover's row: mine, or the opponent's of the opposite difference)."""
        rows = self.turns[turn]
        if rows.mover == ME:
            return rows, rows.pair(my_card, its_card), 1 - margin + int(self.most[its_card])
        return rows, rows.pair(its_card, my_card), margin + int(self.most[my_card])

    def outcome(self, turn: int, my_card: int, its_card: int, margin: int) -> tuple[float, float]:
        """(my chance to win, the draw chance of that play) at a turn's start, my total minus
        its total being `margin`."""
        if self.turns[turn].draw is None:
            raise UserError("the match was solved without its draws (draws=False)")
        rows, (k, i), j = self._read_at(turn, my_card, its_card, margin)
        if rows.mover == ME:
            win, not_lose = _read(rows.win.row(k, i), j), _read(rows.draw.row(k, i), j)
        else:
            win = 1.0 - _read(rows.win.row(k, i), j)
            not_lose = 1.0 - _read(rows.draw.row(k, i), j + 1)
        return win, not_lose - win

    def win_chance(self, margin: int = 0) -> float:
        """My chance to win from the solve's position at `margin`."""
        rows, (k, i), j = self._read_at(0, *self.start, margin)
        chance = _read(rows.win.row(k, i), j)
        return chance if rows.mover == ME else 1.0 - chance

    def draw_chance(self, margin: int = 0) -> float:
        """The draw chance of that play from the solve's position at `margin`."""
        return self.outcome(0, *self.start, margin)[1]


def _read(row: np.ndarray, j: int) -> float:
    """A row's chance at j: 1 below its start, 0 past its end."""
    return 1.0 if j < 0 else float(row[j]) if j < len(row) else 0.0


def _read_rows(
    flat: np.ndarray, rows: np.ndarray, lengths: np.ndarray, at: np.ndarray
) -> np.ndarray:
    """Rows' chances at `at` (arrays broadcast), as the kernel reads them: the first entry (1)
    below 0, 0 past the end."""
    index = np.clip(at, 0, np.maximum(lengths - 1, 0))
    return np.where(at < lengths, flat[np.maximum(rows, 0) + index], 0.0)


def _revcomp(rows: Rows, in_place: bool) -> np.ndarray:
    """Every row S as the other player sees it: Q[j] = 1 - S[L - j] (Q[0] = 1), `in_place` over
    S (then lost) or into a new table; a block of rows at a time, so that no temporary is as
    large as the table (the largest turns' rows take gigabytes)."""
    lengths, starts = rows.lengths.ravel(), rows.offsets.ravel()
    out = rows.flat if in_place else np.empty_like(rows.flat)
    ends = np.cumsum(lengths)
    cuts = 1 + np.searchsorted(ends, np.arange(REVCOMP_BLOCK, ends[-1], REVCOMP_BLOCK))
    for first, last in itertools.pairwise(np.unique([0, *cuts, len(lengths)])):
        length, start = lengths[first:last], starts[first:last]
        position = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
        inside = position > 0
        source = np.repeat(start + length, length) - position
        chances = np.where(inside, 1.0 - rows.flat[np.where(inside, source, 0)], 1.0)
        out[np.repeat(start, length) + position] = chances  # read whole before written
    return out


def _next_reader(
    mover: int,
    others: np.ndarray,
    after: np.ndarray,
    later: TurnRows | None,
    table: str,
    consume: bool,
) -> Rows:
    """The `table` rows ("win" or "draw") a turn's mover reads after its move, over the pairs
    (other card, its card after) as the mover sees them; `consume`: the later turn's rows are
    not needed again, and the other player's view is made over them."""
    shape = (len(others), len(after))
    if later is None:  # both cards full: nothing to come
        # I win with a difference >= 1 - x, at j = 1 - x; the draw rows: I tie at j = 1 too,
        # the opponent's j = x + 1 holds (opponent ahead) only at j = 0.
        end = {"win": [1.0], "draw": [1.0, 1.0 if mover == ME else 0.0]}[table]
        return Rows(np.zeros(shape, np.int64), np.full(shape, len(end)), np.array(end))
    rows = getattr(later, table)
    if later.mover == mover:  # the other card is full: the mover moves again, its own rows
        pick = np.ix_(np.searchsorted(later.others, others), np.searchsorted(later.movers, after))
        return Rows(rows.offsets[pick], rows.lengths[pick], rows.flat)
    pick = np.ix_(np.searchsorted(later.others, after), np.searchsorted(later.movers, others))
    return Rows(rows.offsets[pick].T, rows.lengths[pick].T, _revcomp(rows, consume))


def _layout(rules: Rules, after: np.ndarray, rows: Rows, k: int) -> TargetLayout:
    """Where the rows of the cards after a move lie (other card k), indexed as the target
    tables' states are: a card is its mask and upper total, every flag shares the row."""
    shape = (num_masks(rules), num_upper_totals(rules))
    starts, lengths = np.full(shape, -1, np.int64), np.zeros(shape, np.int64)
    where = np.divmod(after, shape[1])
    starts[where], lengths[where] = rows.offsets[k], rows.lengths[k]
    return TargetLayout(
        rows=np.broadcast_to(starts[:, :, None], (*shape, NUM_FLAGS)),
        lengths=np.broadcast_to(lengths[:, :, None], (*shape, NUM_FLAGS)),
        size=len(rows.flat),
    )


def _carried_chances(
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    targets: np.ndarray,
    wanted: np.ndarray,
    choose: tuple[np.ndarray, TargetLayout],
    carry: tuple[np.ndarray, TargetLayout],
    rules: Rules,
    kernel: Any,
) -> np.ndarray:
    """The `carry` rows' chances of my turn's `wanted` columns, carried through the play that
    maximises the `choose` rows' value at each column (the first best box, the keeps of highest
    expected value): each move's `choose` value is its value in `native.target_turn_start`.
    My chance to win chooses the draws' play; a valuation chooses both (`solve_match`)."""
    state, offset = np.nonzero(wanted)
    need = targets[offset]
    (choose_flat, choose_layout), (carry_flat, carry_layout) = choose, carry
    if kernel is not None:  # the kernel reads both tables' rows at each column's target
        columns = (state, need)
        return kernel_chances(states, columns, *carry, rules, kernel, choose=choose)
    after, allowed, _, shifts = stacked_moves(states, rules)
    sources = roll_sources(rules)
    out = np.empty(len(state))
    for first in range(0, len(state), PIECE_COLUMNS):
        part = slice(first, first + PIECE_COLUMNS)
        column_state, j = state[part], need[part]
        moves = tuple(column[:, column_state] for column in after)
        shift = shifts[:, column_state]
        value = _read_rows(
            choose_flat, choose_layout.rows[moves], choose_layout.lengths[moves], j - shift
        )
        worth = np.where(allowed[:, column_state], value, -np.inf)
        rows, lengths = carry_layout.rows[moves], carry_layout.lengths[moves]
        options = worth[sources]  # [252, boxes, columns]: NumPy, the kernel's choices
        pick = np.argmax(options, axis=1)[:, None]  # the first best box
        carried = _read_rows(carry_flat, rows, lengths, j - shift)[sources]
        final = np.take_along_axis(carried, pick, axis=1)[:, 0]
        best = np.take_along_axis(options, pick, axis=1)[:, 0]
        out[part] = turn_start_chances(final[..., None], best)[:, 0]
    return out


def _solve_turn(
    rules: Rules,
    mover: int,
    cards: tuple[np.ndarray, np.ndarray, np.ndarray],
    later: TurnRows | None,
    most: np.ndarray,
    kernel: Any,
    value_table: np.ndarray | None,
    draws: bool,
    choice: ValuationRows | None = None,
    consume: bool = False,
    threads: int = 1,
) -> TurnRows:
    """The rows of one turn (`cards`: the mover's, the other's, the mover's after its move),
    the other card held fixed in each pass over the mover's cards. `value_table` None: the
    mover is me, playing for the win, or, given `choice` (a valuation's values of the turn's
    ends, an other card at a time), playing by those values with my chances carried through.
    `draws`: the draw rows too. `consume`: `later`'s rows may be overwritten. `threads`: other
    cards solved at once (their rows are apart; the kernel lets go of the GIL)."""
    movers, others, after = cards
    names = ("win", "draw") if draws else ("win",)
    reading = {name: _next_reader(mover, others, after, later, name, consume) for name in names}
    lengths = 1 + most[others][:, None] + most[movers][None, :]
    tables = {"win": Rows.empty(lengths)}
    if draws:
        tables["draw"] = Rows.empty(lengths + 1)
    zeros = np.zeros(len(movers), np.int64)
    masks, uppers = np.divmod(movers.astype(np.int64), num_upper_totals(rules))
    step = len(movers) if kernel is not None else max(1, PIECE_COLUMNS // int(lengths.max() + 1))

    def solve_other_card(k: int) -> None:
        readers = {
            name: (rows.flat, _layout(rules, after, rows, k)) for name, rows in reading.items()
        }
        if choice is not None:
            values = choice(k)
            readers["choice"] = (values.flat, _layout(rules, after, values, 0))
        for first in range(0, len(movers), step):
            part = slice(first, first + step)
            states = (masks[part], uppers[part], zeros[part])
            for name, rows in tables.items():
                targets = np.arange(int(rows.lengths[k, part].max()))
                wanted = targets < rows.lengths[k, part][:, None]
                # a valuation chooses every row's play; else my chance to win chooses the draws'
                chooser = "choice" if choice is not None else "win"
                if choice is not None or (name == "draw" and value_table is None):
                    chances = _carried_chances(
                        states, targets, wanted, readers[chooser], readers[name], rules, kernel
                    )
                else:
                    flat, layout = readers[name]
                    chances = piece_chances(
                        states, targets, wanted, flat, layout, rules, kernel, value_table
                    )
                rows.flat[(rows.offsets[k, part][:, None] + targets)[wanted]] = chances

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(solve_other_card, range(len(others))))  # list: raise what a card raised
    return TurnRows(mover, movers, others, tables["win"], tables.get("draw"))


def solve_match(
    rules: Rules,
    first: int = ME,
    start: tuple[int, int] = (0, 0),
    policy: str = "win",
    keep_turns: bool = False,
    cache_dir: str | os.PathLike | None = None,
    kernel: Any = "load",
    draws: bool = True,
    valuation: Valuation | None = None,
    threads: int = 1,
) -> MatchSolution:
    """The joint solve from the position `start` (my card, its card; `card_id`s), `first` to move.

    My turns play `policy`: "win" maximises my chance to win (each margin on its own), "expected"
    is the optimal agent's play (then the solve is that agent's exact match figures). Given a
    `valuation` (with policy "win"), my turns choose by its values of each turn's end instead,
    where it gives them, and the rows are that player's exact chances
    (`solver.match_valuation`). The opponent always plays the optimal agent's (expected-score)
    policy, from the value table of `rules` (solved into `cache_dir` if missing). `keep_turns`
    keeps every turn's rows (for `MatchSolution.outcome`), else only the first turn's. `kernel`
    "load" uses the solver's C kernel where it builds (else the NumPy passes, the same choices),
    None the NumPy passes.
    `draws` False leaves out the draw rows (half the work; `MatchSolution.outcome` then refuses).
    `threads`: host threads, each solving a turn's rows for one of the other player's cards at a
    time (the same bits for any number).
    """
    check_rules(rules)
    if policy not in POLICIES:
        raise UserError(f"unknown match policy {policy!r}; choose one of: {', '.join(POLICIES)}")
    if threads < 1:
        raise UserError(f"threads: 1 or more; got {threads}")
    if valuation is not None and policy != "win":
        raise UserError("a valuation plays my turns: it needs policy 'win', not 'expected'")
    if kernel == "load":
        try:
            kernel = native.load_kernel(None if cache_dir is None else str(cache_dir))
        except native.NativeError:
            kernel = None
    started, cpu_started = time.perf_counter(), time.process_time()
    value_table = solve(rules, cache_dir=cache_dir).value_table
    most = most_to_come(rules)[:, :, 0].reshape(-1)  # by card id
    turns = schedule(rules, start, first)
    if not turns:
        raise UserError("both cards of the position are full: there is no turn to play")
    later: TurnRows | None = None
    kept: list[TurnRows] = []
    columns = 0
    for mover, mine, its in reversed(turns):
        my_cards, its_cards = layer(rules, mine, start[0]), layer(rules, its, start[1])
        movers, others = (my_cards, its_cards) if mover == ME else (its_cards, my_cards)
        after = layer(rules, (mine, its)[mover] + 1, start[mover])
        values = value_table if mover == OPPONENT or policy == "expected" else None
        cards = (movers, others, after)
        choice = None
        if mover == ME and valuation is not None:
            choice = valuation(others, after, most)
        later = _solve_turn(
            rules, mover, cards, later, most, kernel, values, draws, choice, not keep_turns, threads
        )
        columns += sum(len(rows.flat) for rows in (later.win, later.draw) if rows is not None)
        if keep_turns:
            kept.insert(0, later)
    assert later is not None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    return MatchSolution(
        rules=rules,
        policy=policy,
        start=start,
        turns=kept if keep_turns else [later],
        most=most,
        seconds=time.perf_counter() - started,
        cpu_seconds=time.process_time() - cpu_started,
        peak_rss_bytes=int(peak),
        columns=columns,
    )


def match_figures(
    rules: Rules,
    cache_dir: str | os.PathLike | None = None,
    policy: str = "win",
    draws: bool = True,
    valuation: Valuation | None = None,
    seats: tuple[str, ...] = ("first", "second"),
    threads: int = 1,
) -> dict[str, Any]:
    """My exact chances to win and draw (None without `draws`) from the empty cards, in each of
    `seats` ("first", "second") and on average (seats alternated), with each solve's time and
    memory; my turns by `valuation` where given, on `threads` host threads (`solve_match`)."""
    solved = {}
    for name in seats:
        first = {"first": ME, "second": OPPONENT}[name]
        solution = solve_match(
            rules,
            first,
            policy=policy,
            cache_dir=cache_dir,
            draws=draws,
            valuation=valuation,
            threads=threads,
        )
        solved[name] = {
            "win": solution.win_chance(),
            "draw": solution.draw_chance() if draws else None,
            "seconds": solution.seconds,
            "cpu_seconds": solution.cpu_seconds,
            "columns": solution.columns,
            "peak_rss_bytes": solution.peak_rss_bytes,
            "threads": threads,
        }
    return {
        "policy": policy,
        "seats": solved,
        "win": float(np.mean([seat["win"] for seat in solved.values()])),
        "draw": float(np.mean([seat["draw"] for seat in solved.values()])) if draws else None,
    }
