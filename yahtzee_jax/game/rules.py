"""The rules of solitaire Yahtzee: category table, rule variants and the scoring of a roll.

Every rule of the game lives in this module; the engine, the solver, the features and the
baseline agents all score dice through :func:`score_options`.
"""

from __future__ import annotations

import dataclasses
import enum

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.errors import UserError

NUM_DICE = 5
NUM_FACES = 6
NUM_CATEGORIES = 13
NUM_UPPER = 6
NUM_TURNS = 13
DECISIONS_PER_TURN = 3  # keep, keep, score
DECISIONS_PER_GAME = NUM_TURNS * DECISIONS_PER_TURN  # 39
NUM_KEEP_ACTIONS = 32  # bit i of a keep action keeps sorted die i
KEEP_ALL = NUM_KEEP_ACTIONS - 1
NUM_ACTIONS = NUM_KEEP_ACTIONS + NUM_CATEGORIES  # keep actions first, then one per category

UPPER_BONUS_THRESHOLD = 63
UPPER_BONUS = 35
FULL_HOUSE_SCORE = 25
SMALL_STRAIGHT_SCORE = 30
LARGE_STRAIGHT_SCORE = 40
YAHTZEE_SCORE = 50
YAHTZEE_BONUS = 100


class Category(enum.IntEnum):
    """The 13 boxes of the score card, in the paper's order."""

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


CATEGORY_NAMES: tuple[str, ...] = tuple(category.name.lower() for category in Category)

# Highest score each box can hold; the paper's scale for the potential-score features.
CATEGORY_MAX_SCORES: tuple[int, ...] = (5, 10, 15, 20, 25, 30, 30, 30, 25, 30, 40, 50, 30)


class Joker(str, enum.Enum):
    """How a Yahtzee rolled after the Yahtzee box is filled may be placed."""

    NONE = "none"  # no Joker: a five of a kind scores like any other roll
    FORCED = "forced"  # official (older Hasbro) rule: matching upper box, else lower, else upper
    FREE = "free"  # Verhoeff: any box; full value in FH/straights once the matching upper is used


@dataclasses.dataclass(frozen=True)
class Rules:
    """A rule variant; static (hashable) configuration of the engine."""

    name: str
    yahtzee_bonus: bool  # +100 for each further Yahtzee while the Yahtzee box holds 50
    joker: Joker


RULE_VARIANTS: dict[str, Rules] = {
    "official": Rules("official", yahtzee_bonus=True, joker=Joker.FORCED),
    "free-joker": Rules("free-joker", yahtzee_bonus=True, joker=Joker.FREE),
    "no-joker": Rules("no-joker", yahtzee_bonus=True, joker=Joker.NONE),
    "plain": Rules("plain", yahtzee_bonus=False, joker=Joker.NONE),
}
OFFICIAL = RULE_VARIANTS["official"]


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
_IS_LOWER = np.arange(NUM_CATEGORIES) >= NUM_UPPER


def face_counts(dice: jax.Array) -> jax.Array:
    """Count each face 1..6 in `dice` (int32[..., 5]) -> int32[..., 6]."""
    return jnp.sum(dice[..., :, None] == _FACES, axis=-2, dtype=jnp.int32)


def base_scores(counts: jax.Array) -> jax.Array:
    """Score of a roll (given by its face counts, int32[6]) in each box, without any Joker."""
    total = jnp.sum(counts * _FACES)
    most = jnp.max(counts)
    present = counts > 0
    small = present[0:4].all() | present[1:5].all() | present[2:6].all()
    large = present[0:5].all() | present[1:6].all()
    full_house = jnp.any(counts == 3) & jnp.any(counts == 2)
    lower = jnp.stack(
        [
            jnp.where(most >= 3, total, 0),
            jnp.where(most >= 4, total, 0),
            jnp.where(full_house, FULL_HOUSE_SCORE, 0),
            jnp.where(small, SMALL_STRAIGHT_SCORE, 0),
            jnp.where(large, LARGE_STRAIGHT_SCORE, 0),
            jnp.where(most == 5, YAHTZEE_SCORE, 0),
            total,
        ]
    )
    return jnp.concatenate([counts * _FACES, lower]).astype(jnp.int32)


# What a Joker five of a kind scores in Full House and the straights (0 = box not affected).
_JOKER_VALUES = np.zeros(NUM_CATEGORIES, np.int32)
_JOKER_VALUES[Category.FULL_HOUSE] = FULL_HOUSE_SCORE
_JOKER_VALUES[Category.SMALL_STRAIGHT] = SMALL_STRAIGHT_SCORE
_JOKER_VALUES[Category.LARGE_STRAIGHT] = LARGE_STRAIGHT_SCORE


def _with_joker_values(scores: jax.Array) -> jax.Array:
    """Full House and both straights at full value (a Joker five of a kind)."""
    return jnp.where(_JOKER_VALUES > 0, _JOKER_VALUES, scores)


def yahtzee_bonus_live(yahtzee_box: jax.Array, rules: Rules) -> jax.Array:
    """Would a further Yahtzee pay the +100 bonus? The variant has it and the box holds 50."""
    return jnp.asarray(rules.yahtzee_bonus) & (yahtzee_box == YAHTZEE_SCORE)


def score_options(
    counts: jax.Array, filled: jax.Array, yahtzee_box: jax.Array, rules: Rules
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Score a roll against a score card.

    Args:
      counts: face counts of the dice, int32[6].
      filled: which boxes are used, bool[13].
      yahtzee_box: the points in the Yahtzee box (50 or 0 once filled), int32 scalar.
      rules: the rule variant (static).

    Returns:
      points: int32[13], what each box would receive (bonuses excluded).
      legal: bool[13], which boxes may be chosen now.
      yahtzee_bonus: bool, whether choosing any box also pays the +100 Yahtzee bonus.
    """
    scores = base_scores(counts)
    open_boxes = ~filled
    is_yahtzee = jnp.max(counts) == 5
    joker_roll = is_yahtzee & filled[Category.YAHTZEE]
    # One-hot masks instead of gathers: vmapped gathers are slow on CPU.
    matching_upper = jnp.concatenate([counts == 5, jnp.zeros(NUM_CATEGORIES - NUM_UPPER, bool)])
    matching_upper_filled = jnp.any(matching_upper & filled)
    if rules.joker is Joker.NONE:
        points, legal = scores, open_boxes
    elif rules.joker is Joker.FREE:
        points = jnp.where(joker_roll & matching_upper_filled, _with_joker_values(scores), scores)
        legal = open_boxes
    else:  # FORCED: matching upper box if open, else any open lower box, else any open box
        points = jnp.where(joker_roll, _with_joker_values(scores), scores)
        any_lower_open = jnp.any(open_boxes & _IS_LOWER)
        joker_legal = jnp.where(
            ~matching_upper_filled,
            matching_upper,
            jnp.where(any_lower_open, open_boxes & _IS_LOWER, open_boxes),
        )
        legal = jnp.where(joker_roll, joker_legal, open_boxes)
    bonus = joker_roll & yahtzee_bonus_live(yahtzee_box, rules)
    return points.astype(jnp.int32), legal, bonus
