"""The network's input: a flat float32 vector computed from one engine `State` (paper section 4.1).

Layout, in this order, each group present only when switched on in `FeatureConfig`; the sizes
are Yahtzee's, the card's groups follow the rule set's box table (`feature_size(config, rules)`;
all on, ``dice="combined"``: 30 + 6 + 13 + 1 + 3 + 1 + 1 + 1 + 6 + 13 = 75 inputs):

====================  =====  =============================================================
group                 size   value
====================  =====  =============================================================
dice one-hot          30     die i (sorted ascending) one-hot over faces 1..6, die-major
dice counts           6      number of dice showing face 1..6, divided by 5
category open         13     1 while the box is open
upper progress        1      min(upper total / 63, 1) (the rules' bonus threshold)
roll index            3      one-hot of the decision in the turn: keep, keep, score
game progress         1      boxes used / 12 (the paper's t / 12; turns - 1 in general)
joker                 1      1 if the dice are a Joker (five of a kind, Yahtzee box used,
                             Joker rules on)
yahtzee bonus live    1      1 if the Yahtzee box holds 50 (and the variant pays the +100
                             bonus): a further Yahtzee is worth 100 more (the paper's code's
                             "has earned Yahtzee"; without it a 50 and a scratched 0 look alike)
lock-in               6      1 if upper box k is open and scoring it now reaches 63
potential scores      13     points the dice would get in each legal box / box maximum
                             (`Rules.box_max_scores`), 0 for used or Joker-forbidden boxes
====================  =====  =============================================================

Scores come from `rules.score_options`, so Joker values and Joker legality follow the variant.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.atomic_features import atomic_features, atomic_groups
from yahtzee_jax.game.engine import State, current_score_options, turn_index, upper_total
from yahtzee_jax.game.rules import (
    DECISIONS_PER_TURN,
    NUM_DICE,
    NUM_FACES,
    Joker,
    Rules,
    face_counts,
    yahtzee_bonus_live,
)


def feature_groups(config: FeatureConfig, rules: Rules) -> list[tuple[str, int]]:
    """The (name, size) of each group in the vector, in order."""
    if config.kind == "kang":
        return atomic_groups(rules)
    groups = []
    if config.dice in ("onehot", "combined"):
        groups.append(("dice_onehot", NUM_DICE * NUM_FACES))
    if config.dice in ("counts", "combined"):
        groups.append(("dice_counts", NUM_FACES))
    optional = [
        ("category_open", config.category_open, rules.num_boxes),
        ("upper_progress", config.upper_progress, 1),
        ("roll_index", config.roll_index, DECISIONS_PER_TURN),
        ("game_progress", config.game_progress, 1),
        ("joker", config.joker, 1),
        ("yahtzee_bonus_live", config.yahtzee_bonus_live, 1),
        ("lock_in", config.lock_in, rules.num_upper),
        ("potential_scores", config.potential_scores, rules.num_boxes),
    ]
    groups.extend((name, size) for name, enabled, size in optional if enabled)
    return groups


def feature_size(config: FeatureConfig, rules: Rules) -> int:
    """Length of the feature vector for a card of `rules`."""
    return sum(size for _, size in feature_groups(config, rules))


def features(state: State, config: FeatureConfig, rules: Rules) -> jax.Array:
    """Feature vector (float32[feature_size]) of one unbatched state; `vmap` it for batches."""
    if config.kind == "kang":
        return atomic_features(state, rules)
    counts = face_counts(state.dice)
    points, legal, _ = current_score_options(state, rules)
    upper = upper_total(state, rules)
    yahtzee = rules.yahtzee_box
    joker = (jnp.max(counts) == NUM_DICE) & state.filled[yahtzee] & (rules.joker != Joker.NONE)
    bonus_live = yahtzee_bonus_live(state.scores[yahtzee], rules)
    num_upper, threshold = rules.num_upper, rules.upper_bonus_threshold
    upper_open = ~state.filled[:num_upper]
    max_scores = np.asarray(rules.box_max_scores, np.float32)  # numpy: a constant of the trace
    values = {
        "dice_onehot": jax.nn.one_hot(state.dice - 1, NUM_FACES).reshape(-1),
        "dice_counts": counts / NUM_DICE,
        "category_open": ~state.filled,
        "upper_progress": jnp.minimum(upper / max(threshold, 1), 1.0)[None],  # 1: no bonus
        "roll_index": jax.nn.one_hot(state.roll_index, DECISIONS_PER_TURN),
        "game_progress": (turn_index(state) / (rules.num_turns - 1))[None],
        "joker": joker[None],
        "yahtzee_bonus_live": bonus_live[None],
        "lock_in": upper_open & (upper + points[:num_upper] >= threshold),
        "potential_scores": jnp.where(legal, points / max_scores, 0.0),
    }
    parts = [values[name].astype(jnp.float32) for name, _ in feature_groups(config, rules)]
    return jnp.concatenate(parts)


def batch_features(state: State, config: FeatureConfig, rules: Rules) -> jax.Array:
    """Features of a batch of states (leading axis) -> float32[batch, feature_size]."""
    return jax.vmap(lambda one: features(one, config, rules))(state)
