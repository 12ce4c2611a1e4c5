"""Opponent-aware network input for one player of a match (Yuan, seed 003, section 2.5.1).

Yuan's observation adds to the player's own card, for the opponent: which boxes are used, the
upper total over 63, and the score difference over 375. Here, for each opponent in seat order
after the player (the next to move first), in this order:

====================  =====  =============================================================
group                 size   value
====================  =====  =============================================================
opponent open         13     1 while the opponent's box is open (one per box of the rules)
opponent upper        1      min(opponent's upper total / 63, 1)
score difference      1      (own total - opponent's total) / 375, clipped to [-1, 1]
====================  =====  =============================================================

375 is the highest total without Yahtzee bonuses (Yuan's scale; each rule set's own,
`Rules.max_total_without_bonuses`); bonuses can exceed it, hence the clip. An opponent's dice
are never shown: a card off turn already holds its next opening roll (see
`yahtzee_jax.game.multiplayer`).

This is its own module, not a `FeatureConfig` switch in `features.py`: the solitaire features
take one card and their layouts (and every trained checkpoint) stay as they are; the match
features are the solitaire vector of the player's own card followed by these groups.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.features import feature_size, features
from yahtzee_jax.game import engine
from yahtzee_jax.game.multiplayer import MatchState, card, total_scores
from yahtzee_jax.game.rules import Rules


def opponent_groups(rules: Rules) -> tuple[tuple[str, int], ...]:
    """The (name, size) of each group of one opponent, in order."""
    return (("opponent_open", rules.num_boxes), ("opponent_upper", 1), ("score_difference", 1))


def features_per_opponent(rules: Rules) -> int:
    """Features of one opponent (15 in Yahtzee)."""
    return sum(size for _, size in opponent_groups(rules))


def opponent_features(state: MatchState, seat: jax.Array | int, rules: Rules) -> jax.Array:
    """float32[(P - 1) * 15]: the groups above for each opponent of `seat` (one unbatched match)."""
    totals = total_scores(state, rules)
    # The highest total without Yahtzee bonuses: 5+10+...+30 + 35 + 30+30+25+30+40+50+30 = 375.
    scale = float(rules.max_total_without_bonuses)
    threshold = max(rules.upper_bonus_threshold, 1)
    parts = []
    for offset in range(1, state.num_players):
        opponent = (seat + offset) % state.num_players
        their_card = card(state, opponent)
        difference = (totals[seat] - totals[opponent]) / scale
        upper = engine.upper_total(their_card, rules) / threshold
        parts += [
            (~their_card.filled).astype(jnp.float32),
            jnp.minimum(upper, 1.0)[None],
            jnp.clip(difference, -1.0, 1.0)[None],
        ]
    return jnp.concatenate(parts).astype(jnp.float32)


def match_feature_size(
    config: FeatureConfig, num_players: int, opponents: bool, rules: Rules
) -> int:
    """Length of `match_features` for a match of `num_players`."""
    extra = (num_players - 1) * features_per_opponent(rules) if opponents else 0
    return feature_size(config, rules) + extra


def match_features(
    state: MatchState,
    seat: jax.Array | int,
    config: FeatureConfig,
    rules: Rules,
    opponents: bool = True,
) -> jax.Array:
    """The solitaire features of `seat`'s own card, then (if `opponents`) the opponent groups."""
    own = features(card(state, seat), config, rules)
    if not opponents:
        return own
    return jnp.concatenate([own, opponent_features(state, seat, rules)])
