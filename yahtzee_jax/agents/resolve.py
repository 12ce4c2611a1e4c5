"""Agents by name: the built-in baselines, the exact optimum, or a checkpoint path.

The solver and checkpointing are imported inside the functions: both import
`yahtzee_jax.agents.base`, so importing them here would close an import circle through
`yahtzee_jax.agents`.
"""

from __future__ import annotations

import os
import re

from yahtzee_jax.agents.base import Agent, make_random_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import OFFICIAL, Rules, get_rules

BUILTIN_AGENTS = ("optimal", "greedy1", "greedy2", "greedy3", "random")
# The solver's match player: it reads the opponent's card (`two_player.win_seeker_agent`).
WIN_SEEKER = "win-seeker"
AGENT_NAMES = (*BUILTIN_AGENTS, WIN_SEEKER)


def resolve_agent(
    spec: str, rules: str | Rules | None = None, cache_dir: str | os.PathLike | None = None
) -> Agent:
    """The agent named by `spec`: optimal, greedy1-3, random, win-seeker, or a checkpoint path.

    Built-in agents play `rules` (official when None); a checkpoint plays the rules it was
    trained for, and an explicit different `rules` is an error. `cache_dir` is the solver's.
    """
    chosen = get_rules(rules) if rules is not None else None
    if spec == "random":
        return make_random_agent(chosen or OFFICIAL)
    if spec == "optimal":
        from yahtzee_jax.solver import make_optimal_agent

        return make_optimal_agent(chosen or OFFICIAL, cache_dir=cache_dir)
    if spec == WIN_SEEKER:
        from yahtzee_jax.two_player import win_seeker_agent

        return win_seeker_agent(chosen or OFFICIAL, cache_dir)
    if re.fullmatch(r"greedy[123]", spec):
        from yahtzee_jax.solver import make_greedy_agent

        return make_greedy_agent(int(spec[-1]), chosen or OFFICIAL)
    if os.sep in spec or "/" in spec or os.path.exists(spec):
        from yahtzee_jax.checkpointing import load_agent

        agent = load_agent(spec)
        if chosen is not None and chosen != agent.rules:
            raise UserError(
                f"checkpoint {spec!r} plays {agent.rules.name!r} rules, not {chosen.name!r}; "
                "omit --rules to evaluate it under its own rules"
            )
        return agent
    raise UserError(
        f"unknown agent {spec!r}; choose one of: {', '.join(AGENT_NAMES)}, or a checkpoint path"
    )
