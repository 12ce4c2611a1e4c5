"""The solver's win-seeker as an agent (seed 003's question: play to win a two-player match).

It reads its opponent's card: in a match it plays through `match_act`; alone (a solitaire
`evaluate`) it plays against an empty card.
"""

from __future__ import annotations

import os
from typing import Any

import jax

from yahtzee_jax.agents.base import Agent
from yahtzee_jax.game.engine import empty_cards
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver import endgame as endgame_tables
from yahtzee_jax.solver.win_policy import make_win_seeker


def win_seeker_agent(
    rules: Rules,
    cache_dir: str | os.PathLike | None = None,
    endgame_open: int | None = None,
    before_endgame: str = "normal",
) -> Agent:
    """The win-seeker as an agent: `match_act` plays against the opponent's card, `act` alone
    against an empty one (its tables are computed on first use, then cached on disk)."""
    # Read at the call, not bound at import: the default is the endgame module's setting.
    endgame = endgame_tables.ENDGAME_OPEN if endgame_open is None else endgame_open
    policy = make_win_seeker(rules, cache_dir, endgame, before_endgame)

    def match_act(params: Any, own: Any, other: Any, keys: jax.Array) -> jax.Array:
        return policy(own, other, keys)[0]

    def batch_alone(params: Any, states: Any, keys: jax.Array) -> jax.Array:
        return match_act(params, states, empty_cards(keys.shape, rules), keys)

    # act: batch_alone on a batch of one (`agents.base.OneOfBatch`)
    return Agent("win-seeker", None, None, rules, batch_act=batch_alone, match_act=match_act)
