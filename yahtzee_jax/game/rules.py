"""The rules of a game of the Yahtzee family: its box table, variants and the scoring of a roll.

Every rule of the game lives in this module; the engine, the solver, the features and the
baseline agents all score dice through :func:`score_options`. A rule set is data: a `Rules`
holds the score card as a table of `Box` rows (name, scoring kind and its parameters), the upper
bonus, the Yahtzee bonus and the Joker rule, and every array shape of the package (the card, the
actions, the features, the network's score head, the solver's tables) follows from it. Only the
dice are the same in every game of the family: five six-sided dice, three rolls a turn.

The seven rule sets of `RULE_VARIANTS`: the four Yahtzee variants (`YAHTZEE_BOXES`, the
Yahtzee bonus and Joker rules as switches), Yacht as Chang's table gives it (`YACHT_BOXES`), Yacht
as Nintendo's Clubhouse Games plays it (`CLUBHOUSE_BOXES`) and Scandinavian Yatzy as yatzy-solver
states it (`YATZY_BOXES`, +50 at 63). None of the last three has a Yahtzee bonus or a Joker.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError

Array = Any  # numpy.ndarray or jax.Array: the scoring below serves both

NUM_DICE = 5
NUM_FACES = 6
DECISIONS_PER_TURN = 3  # keep, keep, score
NUM_KEEP_ACTIONS = 32  # bit i of a keep action keeps sorted die i
KEEP_ALL = NUM_KEEP_ACTIONS - 1


class Kind(str, enum.Enum):
    """How a box scores; `Box.n` is the kind's parameter."""

    UPPER = "upper"  # n x the dice showing face n; counts toward the upper bonus
    OF_A_KIND = "of-a-kind"  # at least n dice alike (n = 5: the Yahtzee / Yacht / Yatzy box)
    TWO_PAIRS = "two-pairs"  # two pairs of different faces
    FULL_HOUSE = "full-house"  # three of one face and two of another
    STRAIGHT = "straight"  # n faces in a row, starting at `Box.lowest` (0: anywhere)
    CHANCE = "chance"  # any roll


ALL_DICE = "all"  # a box worth the sum of all five dice when the roll qualifies
MATCHED_DICE = "matched"  # worth the sum of the dice that make the pattern (Yatzy, Yacht)


@dataclasses.dataclass(frozen=True)
class Box:
    """One box of the score card: what qualifies a roll (`kind`, `n`, `lowest`) and its worth.

    `score` is a fixed number of points (a full house's 25) or `ALL_DICE` / `MATCHED_DICE`;
    a roll that does not qualify scores 0. An `UPPER` box always scores its face's dice.
    `five_alike` lets a `FULL_HOUSE` box take five of a kind too (Clubhouse Games' Yacht).
    """

    name: str
    kind: Kind
    n: int = 0
    score: int | str = ALL_DICE
    lowest: int = 0
    five_alike: bool = False

    def points(self, counts: tuple[int, ...]) -> int:
        """Points of a roll given by its face counts (plain Python: tables and tests)."""
        faces = range(1, NUM_FACES + 1)
        total = sum(face * count for face, count in zip(faces, counts, strict=True))
        if self.kind is Kind.UPPER:
            return self.n * counts[self.n - 1]
        if self.kind is Kind.OF_A_KIND:
            alike = [face for face, count in zip(faces, counts, strict=True) if count >= self.n]
            return self._worth(bool(alike), total, self.n * max(alike, default=0))
        if self.kind is Kind.TWO_PAIRS:
            pairs = [face for face, count in zip(faces, counts, strict=True) if count >= 2]
            return self._worth(len(pairs) >= 2, total, 2 * sum(pairs))
        if self.kind is Kind.FULL_HOUSE:
            shape = sorted(c for c in counts if c)
            return self._worth(shape == [2, 3] or (self.five_alike and shape == [5]), total, total)
        if self.kind is Kind.STRAIGHT:
            starts = [self.lowest] if self.lowest else range(1, NUM_FACES - self.n + 2)
            made = any(all(counts[s - 1 : s - 1 + self.n]) for s in starts)
            return self._worth(made, total, total)
        return self._worth(True, total, total)  # CHANCE

    def _worth(self, qualifies: bool, total: int, matched: int) -> int:
        if not qualifies:
            return 0
        if isinstance(self.score, int):
            return self.score
        return matched if self.score == MATCHED_DICE else total

    @property
    def is_fixed(self) -> bool:
        """Worth a fixed number of points (not a sum of dice)."""
        return isinstance(self.score, int)


UPPER_NAMES = ("ones", "twos", "threes", "fours", "fives", "sixes")
UPPER_BOXES = tuple(Box(name, Kind.UPPER, face) for face, name in enumerate(UPPER_NAMES, 1))
YAHTZEE_BOXES: tuple[Box, ...] = (
    *UPPER_BOXES,
    Box("three_of_a_kind", Kind.OF_A_KIND, 3),
    Box("four_of_a_kind", Kind.OF_A_KIND, 4),
    Box("full_house", Kind.FULL_HOUSE, score=25),
    Box("small_straight", Kind.STRAIGHT, 4, 30),
    Box("large_straight", Kind.STRAIGHT, 5, 40),
    Box("yahtzee", Kind.OF_A_KIND, 5, 50),
    Box("chance", Kind.CHANCE),
)
# Yacht as Chang's Figure 2 scores it, in his Figure 1 card order (his actions 32..43 follow it):
# Four-of-a-Kind is the four matching dice, each straight one fixed run worth 30.
YACHT_BOXES: tuple[Box, ...] = (
    *UPPER_BOXES,
    Box("choice", Kind.CHANCE),
    Box("four_of_a_kind", Kind.OF_A_KIND, 4, MATCHED_DICE),
    Box("full_house", Kind.FULL_HOUSE),
    Box("little_straight", Kind.STRAIGHT, 5, 30, lowest=1),
    Box("big_straight", Kind.STRAIGHT, 5, 30, lowest=2),
    Box("yacht", Kind.OF_A_KIND, 5, 50),
)
# Yacht as Clubhouse Games (51 Worldwide Classics) plays it: Four of a Kind and Full House are the
# sum of all five dice, a full house may be five alike, a small straight is any four in a row (15).
CLUBHOUSE_BOXES: tuple[Box, ...] = (
    *(
        Box(name, Kind.UPPER, face)
        for face, name in enumerate(("aces", "deuces", "threes", "fours", "fives", "sixes"), 1)
    ),
    Box("choice", Kind.CHANCE),
    Box("four_of_a_kind", Kind.OF_A_KIND, 4),
    Box("full_house", Kind.FULL_HOUSE, five_alike=True),
    Box("small_straight", Kind.STRAIGHT, 4, 15),
    Box("large_straight", Kind.STRAIGHT, 5, 30),
    Box("yacht", Kind.OF_A_KIND, 5, 50),
)
# Scandinavian Yatzy as yatzy-solver's docs/rules.md states it (its category ids and order): the
# n-alike boxes score the n matching dice, a five of a kind is neither two pairs nor a full house.
YATZY_BOXES: tuple[Box, ...] = (
    *UPPER_BOXES,
    Box("one_pair", Kind.OF_A_KIND, 2, MATCHED_DICE),
    Box("two_pairs", Kind.TWO_PAIRS, score=MATCHED_DICE),
    Box("three_of_a_kind", Kind.OF_A_KIND, 3, MATCHED_DICE),
    Box("four_of_a_kind", Kind.OF_A_KIND, 4, MATCHED_DICE),
    Box("small_straight", Kind.STRAIGHT, 5, 15, lowest=1),
    Box("large_straight", Kind.STRAIGHT, 5, 20, lowest=2),
    Box("full_house", Kind.FULL_HOUSE),
    Box("chance", Kind.CHANCE),
    Box("yatzy", Kind.OF_A_KIND, 5, 50),
)


class Category(enum.IntEnum):
    """Indices of the boxes of Yahtzee's card (`YAHTZEE_BOXES`), in the paper's order.

    Names for the four Yahtzee variants and their tests; code for any rule set asks the
    `Rules` instead (`rules.yahtzee_box`, `rules.box_index(name)`).
    """

    ONES = 0
    TWOS = 1
    THREES = 2
    FOURS = 3
    FIVES = 4
    SIXES = 5
    THREE_OF_A_KIND = 6
    FOUR_OF_A_KIND = 7
    FULL_HOUSE = 8
    SMALL_STRAIGHT = 9
    LARGE_STRAIGHT = 10
    YAHTZEE = 11
    CHANCE = 12


class Joker(str, enum.Enum):
    """How a Yahtzee rolled after the Yahtzee box is filled may be placed."""

    NONE = "none"  # no Joker: a five of a kind scores like any other roll
    FORCED = "forced"  # official (older Hasbro) rule: matching upper box, else lower, else upper
    FREE = "free"  # Verhoeff: any box; full value in FH/straights once the matching upper is used


# Every distinct roll as face counts: the table's maxima are found by scoring each.
_ALL_COUNTS = tuple(
    tuple(roll.count(face) for face in range(1, NUM_FACES + 1))
    for roll in itertools.combinations_with_replacement(range(1, NUM_FACES + 1), NUM_DICE)
)


@dataclasses.dataclass(frozen=True)
class Rules:
    """A rule set: the box table and the bonus and Joker rules; static (hashable) under `jit`.

    The six upper boxes (kind `UPPER`, faces 1..6 in order) come first, as in every game of the
    family, and the table has one five-of-a-kind box with a fixed score (the Yahtzee box: its 50
    drives the Yahtzee bonus and the Joker); the other boxes are any mix of the kinds. A game has
    one turn per box.
    """

    name: str
    yahtzee_bonus: bool  # +yahtzee_bonus_points for each further Yahtzee while the box holds 50
    joker: Joker
    boxes: tuple[Box, ...] = YAHTZEE_BOXES
    upper_bonus_threshold: int = 63
    upper_bonus_points: int = 35
    yahtzee_bonus_points: int = 100

    def __post_init__(self) -> None:
        """Reject a table the engine cannot play (clear message instead of wrong numbers)."""
        if len(set(self.box_names)) != len(self.box_names) or not self.box_names:
            raise UserError(f"rules {self.name!r}: box names must be unique and non-empty")
        upper = [box.n for box in self.boxes if box.kind is Kind.UPPER]
        first = [box.n if box.kind is Kind.UPPER else 0 for box in self.boxes[:NUM_FACES]]
        if upper != list(range(1, NUM_FACES + 1)) or first != upper:
            raise UserError(f"rules {self.name!r}: the six upper boxes come first, faces 1..6")
        if self.upper_bonus_points and self.upper_bonus_threshold < 1:  # a card starts there
            raise UserError(f"rules {self.name!r}: an upper bonus needs a threshold of 1 or more")
        fives = [i for i, box in enumerate(self.boxes) if _is_five_alike(box)]
        if len(fives) != 1:
            raise UserError(f"rules {self.name!r}: need one five-of-a-kind box with fixed points")
        for box in self.boxes:
            if box.kind is Kind.STRAIGHT and not (
                2 <= box.n <= NUM_DICE and 0 <= box.lowest <= NUM_FACES + 1 - box.n
            ):
                raise UserError(f"rules {self.name!r}: box {box.name!r} is no possible straight")
            if box.kind is Kind.OF_A_KIND and not 2 <= box.n <= NUM_DICE:
                raise UserError(f"rules {self.name!r}: box {box.name!r} needs 2..5 alike")
            if box.five_alike and box.kind is not Kind.FULL_HOUSE:
                raise UserError(f"rules {self.name!r}: only a full house takes five_alike")
            if not (box.is_fixed or box.score in (ALL_DICE, MATCHED_DICE)):
                raise UserError(f"rules {self.name!r}: box {box.name!r} has score {box.score!r}")

    @property
    def box_names(self) -> tuple[str, ...]:
        """The boxes' names, in card order."""
        return tuple(box.name for box in self.boxes)

    @property
    def num_boxes(self) -> int:
        """Boxes on the card."""
        return len(self.boxes)

    @property
    def num_upper(self) -> int:
        """Upper boxes (the first ones on the card: six)."""
        return sum(box.kind is Kind.UPPER for box in self.boxes)

    @property
    def num_turns(self) -> int:
        """Turns of a game: one box is filled per turn."""
        return self.num_boxes

    @property
    def decisions_per_game(self) -> int:
        """Decisions of a game: keep, keep, score each turn."""
        return self.num_turns * DECISIONS_PER_TURN

    @property
    def num_actions(self) -> int:
        """Actions: the 32 keeps, then one per box."""
        return NUM_KEEP_ACTIONS + self.num_boxes

    @property
    def yahtzee_box(self) -> int:
        """Index of the five-of-a-kind box (Yahtzee, Yacht, Yatzy)."""
        return next(i for i, box in enumerate(self.boxes) if _is_five_alike(box))

    @property
    def yahtzee_score(self) -> int:
        """Points of a five of a kind in its box (50)."""
        score = self.boxes[self.yahtzee_box].score
        assert isinstance(score, int)
        return score

    @functools.cached_property
    def box_max_scores(self) -> tuple[int, ...]:
        """Highest score each box can hold (the scale of the potential-score features)."""
        return tuple(max(box.points(counts) for counts in _ALL_COUNTS) for box in self.boxes)

    @property
    def max_total_without_bonuses(self) -> int:
        """Highest total without Yahtzee bonuses: every box's maximum and the upper bonus."""
        return sum(self.box_max_scores) + self.upper_bonus_points

    @functools.cached_property
    def is_upper(self) -> np.ndarray:
        """bool[num_boxes]: which boxes count toward the upper bonus."""
        return np.arange(self.num_boxes) < self.num_upper

    def box_index(self, name: str) -> int:
        """Index of the box called `name` (clear error if there is none)."""
        if name not in self.box_names:
            raise UserError(f"no box {name!r} in {self.name}; boxes: {', '.join(self.box_names)}")
        return self.box_names.index(name)


def _is_five_alike(box: Box) -> bool:
    return box.kind is Kind.OF_A_KIND and box.n == NUM_DICE and box.is_fixed


RULE_VARIANTS: dict[str, Rules] = {
    "official": Rules("official", yahtzee_bonus=True, joker=Joker.FORCED),
    "free-joker": Rules("free-joker", yahtzee_bonus=True, joker=Joker.FREE),
    "no-joker": Rules("no-joker", yahtzee_bonus=True, joker=Joker.NONE),
    "plain": Rules("plain", yahtzee_bonus=False, joker=Joker.NONE),
    "yacht": Rules("yacht", yahtzee_bonus=False, joker=Joker.NONE, boxes=YACHT_BOXES),
    "yacht-clubhouse": Rules(
        "yacht-clubhouse", yahtzee_bonus=False, joker=Joker.NONE, boxes=CLUBHOUSE_BOXES
    ),
    "yatzy": Rules(
        "yatzy", yahtzee_bonus=False, joker=Joker.NONE, boxes=YATZY_BOXES, upper_bonus_points=50
    ),
}
OFFICIAL = RULE_VARIANTS["official"]
# The variants of Yahtzee's own card (what the plain-Python reference game plays).
YAHTZEE_VARIANTS = tuple(
    name for name, rules in RULE_VARIANTS.items() if rules.boxes == YAHTZEE_BOXES
)


def get_rules(rules: str | Rules) -> Rules:
    """Return the `Rules` for a variant name (or pass a `Rules` through); clear error if unknown."""
    if isinstance(rules, Rules):
        return rules
    try:
        return RULE_VARIANTS[rules]
    except KeyError:
        known = ", ".join(RULE_VARIANTS)
        raise UserError(f"unknown rules {rules!r}; choose one of: {known}") from None


# numpy constants: importing the package must not start a device (jax.distributed needs that)
_FACES = np.arange(1, NUM_FACES + 1, dtype=np.int32)


def array_module(*arrays: Any) -> ModuleType:
    """`numpy` for NumPy arrays and Python numbers (the solver's tables, no JAX imported), else
    the first other array's module (`jax.numpy` for JAX arrays and tracers: the engine)."""
    for array in arrays:
        if not isinstance(array, (np.ndarray, np.generic, int, bool)):
            return array.__array_namespace__()
    return np


def face_counts(dice: Array) -> Array:
    """Count each face 1..6 in `dice` (int32[..., 5]) -> int32[..., 6]."""
    return array_module(dice).sum(dice[..., :, None] == _FACES, axis=-2, dtype=np.int32)


class _Roll:
    """What the boxes of a table read from rolls' face counts ([..., 6]), each computed once."""

    def __init__(self, counts: Array) -> None:
        self.counts = counts
        self.xp = array_module(counts)

    @functools.cached_property
    def total(self) -> Array:
        """The sum of the five dice."""
        return self.xp.sum(self.counts * _FACES, axis=-1)

    @functools.cached_property
    def most(self) -> Array:
        """How many dice show the most common face."""
        return self.xp.max(self.counts, axis=-1)

    @functools.cached_property
    def present(self) -> Array:
        """bool[..., 6]: which faces show."""
        return self.counts > 0

    def qualifies(self, box: Box) -> Array:
        """Whether the roll makes the box's pattern."""
        xp = self.xp
        if box.kind is Kind.OF_A_KIND:  # == for five alike: the program Yahtzee always compiled
            return self.most == box.n if box.n == NUM_DICE else self.most >= box.n
        if box.kind is Kind.TWO_PAIRS:
            return xp.sum(self.counts >= 2, axis=-1) >= 2
        if box.kind is Kind.FULL_HOUSE:
            house = xp.any(self.counts == 3, axis=-1) & xp.any(self.counts == 2, axis=-1)
            return house | (self.most == NUM_DICE) if box.five_alike else house
        if box.kind is Kind.STRAIGHT:
            starts = [box.lowest] if box.lowest else range(1, NUM_FACES - box.n + 2)
            runs = [
                xp.all(self.present[..., start - 1 : start - 1 + box.n], axis=-1)
                for start in starts
            ]
            return functools.reduce(xp.logical_or, runs)
        return xp.ones(self.counts.shape[:-1], bool)  # CHANCE

    def worth(self, box: Box) -> Array:
        """The box's points if the roll qualifies."""
        xp = self.xp
        if box.is_fixed:
            return xp.full(self.counts.shape[:-1], box.score, xp.int32)
        if box.score == ALL_DICE or box.kind in (Kind.FULL_HOUSE, Kind.STRAIGHT, Kind.CHANCE):
            return self.total
        pairs = box.n if box.kind is Kind.OF_A_KIND else 2
        matched = xp.where(self.counts >= pairs, _FACES, 0)
        if box.kind is Kind.TWO_PAIRS:  # at most two faces show a pair among five dice
            return 2 * xp.sum(matched, axis=-1)
        return box.n * xp.max(matched, axis=-1)

    def score(self, box: Box) -> Array:
        """The box's points for this roll."""
        if box.kind is Kind.CHANCE:
            return self.worth(box)
        return self.xp.where(self.qualifies(box), self.worth(box), 0)


def base_scores(counts: Array, rules: Rules) -> Array:
    """Score of rolls (given by their face counts, int32[..., 6]) in each box, without any Joker:
    int32[..., boxes]."""
    xp = array_module(counts)
    roll = _Roll(counts)
    # The upper boxes are faces 1..k in order: one vector product, no gather.
    upper = (counts * _FACES)[..., : rules.num_upper]
    lower = [roll.score(box) for box in rules.boxes[rules.num_upper :]]
    if not lower:
        return upper.astype(xp.int32)
    return xp.concatenate([upper, xp.stack(lower, axis=-1)], axis=-1).astype(xp.int32)


def _joker_boxes(rules: Rules) -> np.ndarray:
    """bool[num_boxes]: the boxes a Joker five of a kind scores at full value (FH, straights)."""
    return np.array([box.kind in (Kind.FULL_HOUSE, Kind.STRAIGHT) for box in rules.boxes])


def _with_joker_values(scores: Array, counts: Array, rules: Rules) -> Array:
    """Full House and the straights at full value (a Joker five of a kind)."""
    xp = array_module(scores, counts)
    joker = _joker_boxes(rules)
    boxes = [box if affected else None for box, affected in zip(rules.boxes, joker, strict=True)]
    if all(box.is_fixed for box in boxes if box):  # a constant (Yahtzee's 25, 30, 40): no work
        full = np.array([box.score if box else 0 for box in boxes], np.int32)
    else:
        roll = _Roll(counts)
        none = xp.zeros(counts.shape[:-1], xp.int32)
        full = xp.stack([roll.worth(box) if box else none for box in boxes], axis=-1)
    return xp.where(joker, full, scores)


def yahtzee_bonus_live(yahtzee_box: Array, rules: Rules) -> Array:
    """Would a further Yahtzee pay the Yahtzee bonus? The variant has it and the box holds 50."""
    return rules.yahtzee_bonus & (yahtzee_box == rules.yahtzee_score)  # False & x: all False


def score_options(
    counts: Array, filled: Array, yahtzee_box: Array, rules: Rules
) -> tuple[Array, Array, Array]:
    """Score rolls against score cards (NumPy or JAX arrays; leading axes broadcast, and the
    results have them all).

    Args:
      counts: face counts of the dice, int32[..., 6].
      filled: which boxes are used, bool[..., num_boxes].
      yahtzee_box: the points in the Yahtzee box (50 or 0 once filled), int32[...].
      rules: the rule set (static).

    Returns:
      points: int32[..., num_boxes], what each box would receive (bonuses excluded).
      legal: bool[..., num_boxes], which boxes may be chosen now.
      yahtzee_bonus: bool[...], whether choosing any box also pays the Yahtzee bonus.
    """
    xp = array_module(counts, filled, yahtzee_box)
    scores = base_scores(counts, rules)
    open_boxes = ~filled
    is_yahtzee = xp.max(counts, axis=-1) == NUM_DICE
    joker_roll = is_yahtzee & filled[..., rules.yahtzee_box]
    # One-hot masks instead of gathers: vmapped gathers are slow on CPU.
    others = xp.zeros((*counts.shape[:-1], rules.num_boxes - rules.num_upper), bool)
    matching_upper = xp.concatenate([counts[..., : rules.num_upper] == NUM_DICE, others], axis=-1)
    matching_upper_filled = xp.any(matching_upper & filled, axis=-1)
    is_lower = ~rules.is_upper
    if rules.joker is Joker.NONE:
        points, legal = scores, open_boxes
    elif rules.joker is Joker.FREE:
        full_value = _with_joker_values(scores, counts, rules)
        upgraded = joker_roll & matching_upper_filled
        points = xp.where(upgraded[..., None], full_value, scores)
        legal = open_boxes
    else:  # FORCED: matching upper box if open, else any open lower box, else any open box
        points = xp.where(joker_roll[..., None], _with_joker_values(scores, counts, rules), scores)
        any_lower_open = xp.any(open_boxes & is_lower, axis=-1)
        joker_legal = xp.where(
            ~matching_upper_filled[..., None],
            matching_upper,
            xp.where(any_lower_open[..., None], open_boxes & is_lower, open_boxes),
        )
        legal = xp.where(joker_roll[..., None], joker_legal, open_boxes)
    bonus = joker_roll & yahtzee_bonus_live(yahtzee_box, rules)
    # Every result over all leading axes: a card's legal boxes are those of each roll scored on it.
    cases = np.broadcast_shapes(counts.shape[:-1], filled.shape[:-1], np.shape(yahtzee_box))
    boxes = (*cases, rules.num_boxes)
    points, legal = (xp.broadcast_to(part, boxes) for part in (points.astype(xp.int32), legal))
    return points, legal, xp.broadcast_to(bonus, cases)
