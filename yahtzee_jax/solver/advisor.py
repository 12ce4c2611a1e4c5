"""The optimal advisor: expected final score of any position and the value of each action.

A position is an engine `State` (mid-turn too). Values are optimal expected final scores (score
so far, bonuses included), computed in NumPy float64 from the solved value table of the rules.
`advise_beat` values the actions instead by the best chance of a final score above X (a tie is
not a win, as matches count it), from the exact target tables: what the target agent plays by.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import LAST_ROLL, State, total_score
from yahtzee_jax.game.rules import (
    NUM_DICE,
    NUM_FACES,
    NUM_KEEP_ACTIONS,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.beat import TargetTables, host_tables, turn_end_chances
from yahtzee_jax.solver.position import card_context, turn_values
from yahtzee_jax.solver.value_table import SolveResult, solve
from yahtzee_jax.solver.widget import keep_action_values, turn_keep_values
from yahtzee_jax.solver.widget_tables import base_points, roll_index_of, score_all_rolls
from yahtzee_jax.solver.win_policy import TIE


@dataclasses.dataclass(frozen=True)
class ActionValues:
    """What the optimal advisor says about one position.

    `action_values[a]` is the optimal expected final score after action `a` (engine numbering:
    keep masks 0..31, then 32 + box), NaN where `a` is not legal here.
    """

    rules: Rules
    dice: tuple[int, ...]
    roll_index: int
    score_so_far: int
    value: float  # optimal expected final score from this position
    action_values: np.ndarray  # float64[num_actions]
    best_action: int
    beat: int | None = None  # values are the best chances of a final score above `beat`
    tie_values: np.ndarray | None = None  # expected points, the order of equal chances

    def legal_actions(self) -> np.ndarray:
        """Indices of the legal actions, best first."""
        legal = np.flatnonzero(~np.isnan(self.action_values))
        if self.tie_values is None:
            return legal[np.argsort(-self.action_values[legal], kind="stable")]
        return legal[np.lexsort((-self.tie_values[legal], -self.action_values[legal]))]

    def describe(self, top: int | None = None) -> str:
        """A readable table: the position's value and its best actions (same keeps merged)."""
        lines = [
            f"rules {self.rules.name}; dice {' '.join(map(str, self.dice))}; "
            f"roll index {self.roll_index} ({LAST_ROLL - self.roll_index} re-rolls left); "
            f"score so far {self.score_so_far}",
        ]
        if self.beat is None:
            lines.append(f"optimal expected final score: {self.value:.6f}")
            lines.append("expected final score after each action, best first:")
        else:
            lines.append(f"best chance of a final score above {self.beat}: {self.value:.6f}")
            if self.value in (0.0, 1.0):  # the best actions all tie: say what orders them
                sure = "no play can end" if self.value == 0.0 else "the best plays are sure to end"
                lines.append(f"{sure} above {self.beat}: equal chances, most points first")
            lines.append(
                f"chance of a final score above {self.beat} after each action, best first:"
            )
        shown: set[str] = set()
        for action in self.legal_actions():
            label = action_text(int(action), self.dice, self.rules.box_names)
            if label in shown:  # another mask keeping the same dice
                continue
            shown.add(label)
            marker = "  <- best" if action == self.best_action else ""
            lines.append(f"  {label:<26} {self.action_values[action]:.6f}{marker}")
            if top is not None and len(shown) >= top:
                break
        return "\n".join(lines)


def action_text(action: int, dice: tuple[int, ...], box_names: tuple[str, ...]) -> str:
    """A decision in words: 'keep 4 4', 'keep all', 're-roll all' or 'score <box name>'."""
    if action >= NUM_KEEP_ACTIONS:
        return f"score {box_names[action - NUM_KEEP_ACTIONS]}"
    kept = [str(dice[i]) for i in range(NUM_DICE) if action >> i & 1]
    if len(kept) == NUM_DICE:
        return "keep all"
    return f"keep {' '.join(kept)}" if kept else "re-roll all"


@functools.cache
def possible_box_points(rules: Rules) -> tuple[frozenset[int], ...]:
    """Points each box can hold: what some roll scores there, or 0 (scratched)."""
    table = base_points(rules)
    return tuple(frozenset({0, *table[:, box].tolist()}) for box in range(rules.num_boxes))


def check_position(state: State, rules: Rules) -> None:
    """Raise `UserError` unless `state` is a position of a game (or last turn) that can go on."""
    dice = np.asarray(state.dice)
    filled = np.asarray(state.filled)
    scores = np.asarray(state.scores)
    if filled.shape != (rules.num_boxes,):
        raise UserError(f"a {rules.name} card has {rules.num_boxes} boxes, got {filled.shape}")
    if bool(state.terminated) or filled.all():
        raise UserError("the game is over: every box is filled")
    if dice.shape != (NUM_DICE,) or not ((dice >= 1) & (dice <= NUM_FACES)).all():
        raise UserError(f"need five dice with faces 1..{NUM_FACES}, got {dice.tolist()}")
    if (np.diff(dice) < 0).any():
        raise UserError(f"the dice of a state are sorted ascending, got {dice.tolist()}")
    if int(state.roll_index) not in range(LAST_ROLL + 1):
        raise UserError(f"roll index must be 0, 1 or 2, got {int(state.roll_index)}")
    for box, name in enumerate(rules.box_names):
        points = int(scores[box])
        if not filled[box] and points != 0:
            raise UserError(f"box {name} is open but holds {points} points")
        if filled[box] and points not in possible_box_points(rules)[box]:
            raise UserError(f"box {name} cannot hold {points} points")
    bonus_count = int(state.yahtzee_bonus_count)
    if bonus_count < 0:
        raise UserError(f"the Yahtzee bonus count cannot be negative, got {bonus_count}")
    if bonus_count and not (
        rules.yahtzee_bonus and scores[rules.yahtzee_box] == rules.yahtzee_score
    ):
        raise UserError("Yahtzee bonuses need the bonus rule and 50 in the Yahtzee box")
    open_boxes = int((~filled).sum())
    if int(state.turns_left) not in (open_boxes, 1):
        raise UserError(
            f"turns left must be the number of open boxes ({open_boxes}) or 1 (last turn), "
            f"got {int(state.turns_left)}"
        )


@functools.cache
def possible_points(rules: Rules) -> tuple[frozenset[int], ...]:
    """The points each box of `rules` can hold: what some roll scores in it, or 0."""
    rolls = [
        tuple(faces.count(face) for face in range(1, NUM_FACES + 1))
        for faces in itertools.combinations_with_replacement(range(1, NUM_FACES + 1), NUM_DICE)
    ]
    return tuple(frozenset({0, *(box.points(counts) for counts in rolls)}) for box in rules.boxes)


def make_position(
    dice: list[int] | tuple[int, ...],
    roll_index: int = 0,
    card: dict[str, int] | None = None,
    yahtzee_bonus_count: int = 0,
    *,
    rules: str | Rules,
) -> State:
    """A full-game `State` of `rules` from readable parts; `card` maps box names to the points
    written."""
    rules = get_rules(rules)
    card = card or {}
    filled = np.zeros(rules.num_boxes, bool)
    scores = np.zeros(rules.num_boxes, np.int32)
    names = rules.box_names
    for name, points in card.items():
        key = name.strip().lower().replace("-", "_")
        if key not in names:
            raise UserError(f"unknown box {name!r}; boxes: {', '.join(names)}")
        box = names.index(key)
        if filled[box]:  # "full-house" and "full_house" name one box
            raise UserError(f"box {key!r} is named twice in the card")
        if points not in possible_points(rules)[box]:
            raise UserError(f"box {key!r} cannot hold {points} points under {rules.name} rules")
        filled[box], scores[box] = True, points
    if len(dice) != NUM_DICE:
        raise UserError(f"need exactly {NUM_DICE} dice, got {len(dice)}")
    # each bonus came with a Yahtzee scored in some box: at most one per filled box
    if not 0 <= yahtzee_bonus_count <= int(filled.sum()):
        raise UserError(
            f"{yahtzee_bonus_count} Yahtzee bonuses with {int(filled.sum())} boxes filled: "
            "at most one bonus per filled box"
        )
    return State(
        dice=jnp.asarray(sorted(dice), jnp.int32),
        roll_index=jnp.int32(roll_index),
        scores=jnp.asarray(scores),
        filled=jnp.asarray(filled),
        yahtzee_bonus_count=jnp.int32(yahtzee_bonus_count),
        turns_left=jnp.int32(int((~filled).sum())),
    )


def advise(
    state: State,
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    solution: SolveResult | None = None,
) -> ActionValues:
    """Optimal expected final score of `state` and of each legal action (float64, exact).

    `solution` (a `SolveResult` of the same rules) avoids reloading the value table. On an
    episode's last turn (`turns_left == 1`) only this turn's points count.
    """
    rules = get_rules(rules)
    check_position(state, rules)
    if solution is None or solution.rules != rules:
        solution = solve(rules, cache_dir=cache_dir)
    filled = np.asarray(state.filled)
    scores = np.asarray(state.scores)
    options = score_all_rolls(filled, scores[rules.yahtzee_box], rules)
    last_turn = int(state.turns_left) == 1
    value_table = None if last_turn else solution.value_table
    values, last_keep, first_keep = turn_values(
        options, filled, scores, value_table, 1.0, np, rules
    )
    dice = tuple(int(die) for die in np.asarray(state.dice))
    roll = roll_index_of(dice)
    roll_index = int(state.roll_index)
    future = np.full(rules.num_actions, np.nan)
    if roll_index == LAST_ROLL:
        future[NUM_KEEP_ACTIONS:] = np.where(np.isfinite(values[roll]), values[roll], np.nan)
    else:
        keep_value = first_keep if roll_index == 0 else last_keep
        future[:NUM_KEEP_ACTIONS] = keep_action_values(keep_value, roll)
    score_so_far = int(total_score(state, rules))
    action_values = score_so_far + future
    best_action = int(np.nanargmax(action_values))
    return ActionValues(
        rules=rules,
        dice=dice,
        roll_index=roll_index,
        score_so_far=score_so_far,
        value=float(action_values[best_action]),
        action_values=action_values,
        best_action=best_action,
    )


def beat_tables(rules: str | Rules, cache_dir: str | os.PathLike | None = None) -> TargetTables:
    """The host `TargetTables` of `rules` from the caches (the target table solved if missing)."""
    from yahtzee_jax.solver.target_table import target_tables

    rules = get_rules(rules)
    result = target_tables(rules, cache_dir=cache_dir)
    return host_tables(result.flat, result.layout, solve(rules, cache_dir=cache_dir).value_table)


def advise_beat(state: State, rules: str | Rules, beat: int, tables: TargetTables) -> ActionValues:
    """The best chance of a final score above `beat` from `state`, and after each legal action
    (float64), by the exact target tables in `tables` (`beat.host_tables`); equal chances are
    ordered by expected points, as the target agent breaks them."""
    rules = get_rules(rules)
    check_position(state, rules)
    filled, scores = np.asarray(state.filled), np.asarray(state.scores)
    if int(state.turns_left) != int((~filled).sum()):
        raise UserError("--beat plays for the final score of a whole game, not a single turn")
    options = score_all_rolls(filled, scores[rules.yahtzee_box], rules)
    score_so_far = int(total_score(state, rules))
    context = card_context(filled, scores, np, rules)
    need = beat + 1 - score_so_far
    chances, worth = turn_end_chances(tables, context, need, options, np, rules)
    dice = tuple(int(die) for die in np.asarray(state.dice))
    roll, roll_index = roll_index_of(dice), int(state.roll_index)
    values = np.full((rules.num_actions, 2), np.nan)
    if roll_index == LAST_ROLL:
        both = np.stack([chances[roll], worth[roll]], axis=-1)
        values[NUM_KEEP_ACTIONS:] = np.where(np.isfinite(chances[roll])[:, None], both, np.nan)
    else:
        # Each final roll: its best chance, and the most points among the boxes within `TIE` of
        # it (`win_seeker.chance_and_points`, in float64); keeps carry both through the widget.
        best = chances.max(axis=1)
        near = chances >= best[:, None] - TIE
        final = np.stack([best, np.where(near, worth, -np.inf).max(axis=1)], axis=-1)
        last_keep, first_keep = turn_keep_values(final, np)
        values[:NUM_KEEP_ACTIONS] = keep_action_values(
            first_keep if roll_index == 0 else last_keep, roll
        )
    chance, points = values[:, 0], values[:, 1]
    top = np.nanmax(chance)
    best_action = int(np.nanargmax(np.where(chance >= top - TIE, points, -np.inf)))
    return ActionValues(
        rules=rules,
        dice=dice,
        roll_index=roll_index,
        score_so_far=score_so_far,
        value=float(top),
        action_values=chance,
        best_action=best_action,
        beat=beat,
        tie_values=points,
    )
