"""The solver's target-seeker as an agent: it plays for the win against every other card at
the table (`solver.seeker_policy`); alone (a solitaire `evaluate`) against an empty card."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.game.engine import State, empty_cards
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.seeker_policy import make_target_seeker


def target_seeker_agent(
    rules: Rules, cache_dir: str | os.PathLike | None, weight: Any, joint: bool
) -> Agent:
    """The target-seeker as an agent, its rows' mix of the target table (`weight` 1,
    hindsight) and the expected-score table (0), one weight or a schedule [boxes, 2] by turn
    and seat, the two-player joint endgame solved exactly where `joint`; its tables loaded,
    or solved on first use."""
    seek, tables = make_target_seeker(rules, cache_dir, weight, joint)
    return Agent("target-seeker", SeekerPolicy(seek, rules), tables, rules, reads_others=True)


@dataclasses.dataclass(frozen=True)
class SeekerPolicy:
    """The seeker's policy in the one signature; its tables are the agent's parameters."""

    seek: Any
    rules: Rules

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The seeker's actions; alone it plays against an empty card, all its game to come."""
        if others.dice.shape[1] == 0:
            others = empty_cards((keys.shape[0], 1), self.rules)
        return self.seek(params, own, others, keys)
