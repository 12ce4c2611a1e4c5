"""An independent plain-Python Yahtzee: the yardstick for the JAX engine.

Written from the rule text, not from `yahtzee_jax.game`, and sharing none of its code: the tests
check the JAX scorer against it on every dice outcome and Joker context, and `bench env` measures
the vmapped engine against it. Nothing here is used by the engine itself.
"""

from __future__ import annotations

import random
from collections import Counter

BOXES = (
    "ones",
    "twos",
    "threes",
    "fours",
    "fives",
    "sixes",
    "three_of_a_kind",
    "four_of_a_kind",
    "full_house",
    "small_straight",
    "large_straight",
    "yahtzee",
    "chance",
)
LOWER_BOXES = BOXES[6:]
VARIANTS = {
    # name: (pays the +100 Yahtzee bonus, joker rule)
    "official": (True, "forced"),
    "free-joker": (True, "free"),
    "no-joker": (True, "none"),
    "plain": (False, "none"),
}


def raw_score(dice: list[int], box: str) -> int:
    """Points of `dice` in `box` by the printed rules, no Joker."""
    counts = Counter(dice)
    faces = set(dice)
    if box in BOXES[:6]:
        face = BOXES.index(box) + 1
        return face * counts[face]
    if box == "three_of_a_kind":
        return sum(dice) if max(counts.values()) >= 3 else 0
    if box == "four_of_a_kind":
        return sum(dice) if max(counts.values()) >= 4 else 0
    if box == "full_house":
        return 25 if sorted(counts.values()) == [2, 3] else 0
    if box == "small_straight":
        runs = ({1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6})
        return 30 if any(run <= faces for run in runs) else 0
    if box == "large_straight":
        return 40 if faces in ({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}) else 0
    if box == "yahtzee":
        return 50 if len(faces) == 1 else 0
    if box == "chance":
        return sum(dice)
    raise ValueError(box)


def choices(dice: list[int], card: dict[str, int], variant: str) -> dict[str, tuple[int, int]]:
    """Legal boxes for `dice` on `card` (box -> points, or absent) -> {box: (points, bonus)}."""
    pays_bonus, joker = VARIANTS[variant]
    is_yahtzee = len(set(dice)) == 1
    open_boxes = [box for box in BOXES if box not in card]
    joker_roll = is_yahtzee and "yahtzee" in card
    bonus = 100 if pays_bonus and joker_roll and card["yahtzee"] == 50 else 0
    matching = BOXES[dice[0] - 1] if is_yahtzee else None
    fixed = {"full_house": 25, "small_straight": 30, "large_straight": 40}

    result = {}
    for box in open_boxes:
        points = raw_score(dice, box)
        full_value = joker == "forced" or (joker == "free" and matching in card)
        if joker_roll and box in fixed and full_value:
            points = fixed[box]
        result[box] = (points, bonus)
    if joker == "forced" and joker_roll:
        if matching not in card:
            allowed = [matching]
        elif any(box in result for box in LOWER_BOXES):
            allowed = [box for box in LOWER_BOXES if box in result]
        else:
            allowed = list(result)
        result = {box: result[box] for box in allowed}
    return result


def final_score(card: dict[str, int], yahtzee_bonuses: int) -> int:
    """Total of a card: boxes, the 35-point upper bonus at 63, and the +100 bonuses."""
    upper = sum(points for box, points in card.items() if box in BOXES[:6])
    return sum(card.values()) + (35 if upper >= 63 else 0) + 100 * yahtzee_bonuses


class ReferenceGame:
    """One game, one decision at a time: the plain-Python counterpart of the JAX engine."""

    def __init__(self, variant: str, seed: int | None = None) -> None:
        self.variant = variant
        self.rng = random.Random(seed)
        self.card: dict[str, int] = {}
        self.yahtzee_bonuses = 0
        self.rolls_done = 1
        self.dice = sorted(self.rng.randint(1, 6) for _ in range(5))

    @property
    def over(self) -> bool:
        """True once all 13 boxes are used."""
        return len(self.card) == len(BOXES)

    def legal_actions(self) -> list[int]:
        """Same action numbering as the engine: 0..31 keep masks, 32+i scores box i."""
        if self.rolls_done < 3:
            return list(range(32))
        legal = choices(self.dice, self.card, self.variant)
        return [32 + BOXES.index(box) for box in legal]

    def step(self, action: int) -> int:
        """Play one legal action and return its reward."""
        if action < 32:
            kept = [die for i, die in enumerate(self.dice) if action >> i & 1]
            rerolled = [self.rng.randint(1, 6) for _ in range(5 - len(kept))]
            self.dice = sorted(kept + rerolled)
            self.rolls_done += 1
            return 0
        before = final_score(self.card, self.yahtzee_bonuses)
        box = BOXES[action - 32]
        points, bonus = choices(self.dice, self.card, self.variant)[box]
        self.card[box] = points
        self.yahtzee_bonuses += bonus // 100
        if not self.over:
            self.dice = sorted(self.rng.randint(1, 6) for _ in range(5))
            self.rolls_done = 1
        return final_score(self.card, self.yahtzee_bonuses) - before


def play_random_game(variant: str, seed: int | None = None) -> tuple[int, int]:
    """Play one game with uniformly random legal actions -> (final score, decisions taken)."""
    game = ReferenceGame(variant, seed)
    decisions = 0
    total = 0
    while not game.over:
        total += game.step(game.rng.choice(game.legal_actions()))
        decisions += 1
    return total, decisions
