"""The solver's win-seeker as an agent (seed 003's question: play to win a two-player match).

It reads its opponent's card (the one other card its policy is shown); alone (a solitaire
`evaluate`) it plays against an empty card.
"""

from __future__ import annotations

import os
from typing import Any

import jax

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import State, empty_cards
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver import endgame as endgame_tables
from yahtzee_jax.solver.win_policy import make_win_seeker


def win_seeker_agent(
    rules: Rules,
    cache_dir: str | os.PathLike | None = None,
    endgame_open: int | None = None,
    before_endgame: str = "normal",
) -> Agent:
    """The win-seeker as an agent: it plays against its opponent's card, alone against an
    empty one (its tables are computed on first use, then cached on disk)."""
    # Read at the call, not bound at import: the default is the endgame module's setting.
    endgame = endgame_tables.ENDGAME_OPEN if endgame_open is None else endgame_open
    seek = make_win_seeker(rules, cache_dir, endgame, before_endgame)

    def policy(params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        if others.dice.shape[1] == 0:  # alone: an empty card
            other = empty_cards(keys.shape, rules)
        elif others.dice.shape[1] == 1:  # one opponent: its card
            other = jax.tree.map(lambda leaf: leaf[:, 0], others)
        else:  # its normal and endgame tables are of one opponent's score
            raise UserError(
                f"the win-seeker plays against one opponent, not {others.dice.shape[1]}; "
                "the target-seeker plays against several"
            )
        return seek(own, other, keys)[0]

    return Agent("win-seeker", policy, None, rules, reads_others=True)
