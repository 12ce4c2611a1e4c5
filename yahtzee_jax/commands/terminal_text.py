"""What `yahtzee-jax play` reads and writes: the person's lines parsed, and the game as text.

Pure functions of the rule set and the cards (no console, no game loop: `commands.terminal`):
a box is named by its table name ("full_house"), its label ("Full house"), a short name ("fh")
or its number on the card, and the score card is drawn with the rule set's own boxes.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter

import numpy as np

from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import LAST_ROLL, State
from yahtzee_jax.game.rules import KEEP_ALL, NUM_DICE, NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.solver.advisor import action_text

# The printed labels of Yahtzee's boxes; any other box is labelled from its table name.
_LABELS = {
    "three_of_a_kind": "3 of a kind",
    "four_of_a_kind": "4 of a kind",
}
_SHORT_NAMES = {
    "3k": "three_of_a_kind",
    "4k": "four_of_a_kind",
    "fh": "full_house",
    "ss": "small_straight",
    "sm": "small_straight",
    "ls": "large_straight",
    "lg": "large_straight",
}
KEEP_NOTHING = 0


def help_text(rules: Rules) -> str:
    """The commands, for `help`."""
    return f"""\
At a roll with re-rolls left:
  keep 6 6 5  or  665     keep those dice, re-roll the others
  all                     keep all five (no re-roll)
  none  or  0             re-roll all five
  a box (fours, 3k, ...)  stop rolling and score it now; "score 4" scores box 4
At the last roll: a box by name, short name (3k 4k fh ss ls) or number 1-{rules.num_boxes}.
Any time: card (the score card), hint (the advisor's view), help, quit. Ctrl-D leaves."""


class InputError(ValueError):
    """A line the game could not use; its message is shown and the prompt repeated."""


class LeaveGame(Exception):
    """The person typed quit."""


# --------------------------------------------------------------------------------------------
# Reading the person's lines
# --------------------------------------------------------------------------------------------


def _normalized(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def box_labels(rules: Rules) -> tuple[str, ...]:
    """The boxes' printed labels ("Ones", "3 of a kind", "Full house", ...), in card order."""
    return tuple(_LABELS.get(name, name.replace("_", " ").capitalize()) for name in rules.box_names)


@functools.cache
def _boxes_by_name(rules: Rules) -> dict[str, int]:
    names = rules.box_names
    return {
        **{_normalized(name): box for box, name in enumerate(names)},
        **{_normalized(label): box for box, label in enumerate(box_labels(rules))},
        **{short: names.index(name) for short, name in _SHORT_NAMES.items() if name in names},
    }


def parse_box(text: str, numbers: bool, rules: Rules) -> int | None:
    """The box named by `text` (name, label, short name, or its number 1..boxes when `numbers`)."""
    key = _normalized(text)
    if numbers and key.isdigit() and 1 <= int(key) <= rules.num_boxes:
        return int(key) - 1
    return _boxes_by_name(rules).get(key)


def keep_action(kept_faces: list[int], dice: tuple[int, ...]) -> int:
    """The keep action (bit i keeps sorted die i) keeping `kept_faces` out of `dice`."""
    wanted = Counter(kept_faces)
    missing = wanted - Counter(dice)
    if missing:
        faces = " ".join(map(str, sorted(kept_faces)))
        raise InputError(f"cannot keep {faces}: the dice are {dice_text(dice)}")
    action = 0
    for position, face in enumerate(dice):
        if wanted[face] > 0:
            wanted[face] -= 1
            action |= 1 << position
    return action


@dataclasses.dataclass(frozen=True)
class Command:
    """What a line asks for: actions to play, or something to show."""

    actions: tuple[int, ...] = ()
    show: str | None = None  # "help", "card" or "hint"


def parse_line(line: str, card: State, rules: Rules) -> Command:
    """Turn one typed line into a `Command` for the card's current decision; InputError if not."""
    text = line.strip().lower()
    if not text:
        raise InputError("type the dice to keep, a box, or help")
    if text in ("help", "h", "?"):
        return Command(show="help")
    if text in ("card", "hint"):
        return Command(show=text)
    if text in ("quit", "q", "exit"):
        raise LeaveGame
    dice = tuple(int(die) for die in np.asarray(card.dice))
    rolls_left = LAST_ROLL - int(card.roll_index)
    score_words = re.fullmatch(r"(?:score|s)\s+(.+)", text)
    if score_words:
        return _score_command(score_words.group(1), card, rules, rolls_left)
    if rolls_left == 0:
        box = parse_box(text, True, rules)
        if box is None:
            raise InputError(
                f"no re-rolls left: choose a box (name or 1-{rules.num_boxes}), "
                f"not {line.strip()!r}"
            )
        return _score_command(text, card, rules, rolls_left)
    if text in ("all", "keep all", "a"):
        return Command(actions=(KEEP_ALL,))
    if text in ("none", "0", "keep none", "reroll", "re-roll", "r"):
        return Command(actions=(KEEP_NOTHING,))
    kept = re.fullmatch(r"(?:keep|k)?\s*([1-6][\s,]*)+", text)
    if kept:
        faces = [int(char) for char in re.sub(r"^(keep|k)", "", text) if char.isdigit()]
        if len(faces) > NUM_DICE:
            raise InputError(f"there are only {NUM_DICE} dice: {dice_text(dice)}")
        return Command(actions=(keep_action(faces, dice),))
    if parse_box(text, False, rules) is not None:
        return _score_command(text, card, rules, rolls_left)
    if re.fullmatch(r"(?:keep|k)?[\s\d,]+", text):
        raise InputError(f"dice show 1 to 6; the dice are {dice_text(dice)}")
    raise InputError(f"not understood: {line.strip()!r} (type help)")


def _score_command(text: str, card: State, rules: Rules, rolls_left: int) -> Command:
    box = parse_box(text, True, rules)
    labels = box_labels(rules)
    if box is None:
        raise InputError(
            f"no box called {text.strip()!r} (boxes: 1-{rules.num_boxes} or names; type help)"
        )
    _, legal, _ = engine.current_score_options(card, rules)
    legal = np.asarray(legal)
    if not legal[box]:
        if bool(card.filled[box]):
            raise InputError(f"{labels[box]} is already used")
        allowed = ", ".join(labels[b] for b in np.flatnonzero(legal))
        raise InputError(f"the Joker rule does not allow {labels[box]} now; allowed: {allowed}")
    # Stopping early is keeping all five at each re-roll left (the dice do not change).
    return Command(actions=(KEEP_ALL,) * rolls_left + (NUM_KEEP_ACTIONS + box,))


# --------------------------------------------------------------------------------------------
# Text of the game
# --------------------------------------------------------------------------------------------


def dice_text(dice) -> str:
    """'1 3 3 5 6'."""
    return " ".join(str(int(die)) for die in dice)


def choice_text(action: int, dice: tuple[int, ...], rules: Rules) -> str:
    """A decision in words with the card's box labels: 'keep 4 4', 're-roll all', 'score Fours'."""
    return action_text(action, dice, box_labels(rules))


def card_text(cards: list[State], names: list[str], rules: Rules) -> str:
    """The score cards side by side: boxes, upper total and bonus, Yahtzee bonus, total."""
    width = max(8, *(len(name) for name in names))
    labels = box_labels(rules)
    lines = [f"{'':20}" + "".join(f"{name:>{width + 2}}" for name in names)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"{label:20}" + "".join(f"{cell:>{width + 2}}" for cell in cells))

    def box_cells(box: int) -> list[str]:
        return [str(int(c.scores[box])) if bool(c.filled[box]) else "." for c in cards]

    for box in range(rules.num_upper):
        row(f"{box + 1:>2} {labels[box]}", box_cells(box))
    uppers = [int(engine.upper_total(c, rules)) for c in cards]
    row("   upper total", [f"{u}/{rules.upper_bonus_threshold}" for u in uppers])
    bonuses = [str(int(engine.upper_bonus(c, rules))) for c in cards]
    row(f"   upper bonus (+{rules.upper_bonus_points})", bonuses)
    for box in range(rules.num_upper, rules.num_boxes):
        row(f"{box + 1:>2} {labels[box]}", box_cells(box))
    if rules.yahtzee_bonus:  # Yacht, Yatzy and plain Yahtzee have none: no row of zeros
        yahtzee_bonuses = [rules.yahtzee_bonus_points * int(c.yahtzee_bonus_count) for c in cards]
        row(f"   {labels[rules.yahtzee_box]} bonus", [str(bonus) for bonus in yahtzee_bonuses])
    row("   total", [str(int(engine.total_score(c, rules))) for c in cards])
    return "\n".join(lines)


def options_text(card: State, rules: Rules) -> str:
    """What the dice would score in each legal box now (the Yahtzee bonus noted)."""
    points, legal, bonus = engine.current_score_options(card, rules)
    labels = box_labels(rules)
    legal_boxes = [box for box in range(rules.num_boxes) if bool(legal[box])]
    cells = [f"{labels[box]} {int(points[box])}" for box in legal_boxes if points[box] > 0]
    zeros = [labels[box] for box in legal_boxes if points[box] == 0]
    text = "  boxes now: " + (" | ".join(cells) or "nothing scores")
    if zeros:
        text += f"; 0 in {', '.join(zeros)}"
    if bool(bonus):
        name = labels[rules.yahtzee_box]
        text += f" (+{rules.yahtzee_bonus_points} {name} bonus in any box)"
    return text


def cost_text(cost: float, best: str, unit: str = "expected points") -> str:
    """'cost 0.00 (best)' or 'cost 3.21 expected points; best: keep 4 4' (or another unit)."""
    if cost < 5e-7:
        return f"cost 0.00 {unit} (the best choice)"
    return f"cost {cost:.2f} {unit}; best: {best}"
