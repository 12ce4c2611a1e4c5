"""Built-in agents by name: the baselines, the exact optimum (also with its keeps in a table)
and the win-seeker.

A trained run's checkpoint is an agent too, but loading one is the runner's
(`runner.checkpointing.resolve_agent` takes either a name or a path). The solver's agents are
imported inside the function: solving a table is only paid for by who asks for it.
"""

from __future__ import annotations

import os
import re

from yahtzee_jax.agents.agent import Agent, make_random_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules, get_rules

BUILTIN_AGENTS = ("optimal", "greedy1", "greedy2", "greedy3", "random")
# The solver's match player: it reads the opponent's card (`two_player.win_seeker_agent`).
WIN_SEEKER = "win-seeker"
# The solver's stronger match player: every turn's end for its exact chance to win, from both
# target tables (`agents.target_seeker`).
TARGET_SEEKER = "target-seeker"
# The optimal agent with its keeps read from a table built first (`agents.decision_table`): for
# long evaluations only, so neither an opponent nor a match seat.
OPTIMAL_TABLE = "optimal-table"
AGENT_NAMES = (*BUILTIN_AGENTS, TARGET_SEEKER, WIN_SEEKER, OPTIMAL_TABLE)
# The target agent plays for a final score X it is given (`agents.target`): not built by name.
TARGET = "target"


def builtin_agent(
    spec: str, rules: str | Rules, cache_dir: str | os.PathLike | None = None
) -> Agent:
    """The built-in agent named by `spec` (optimal, greedy1-3, random, target-seeker,
    win-seeker, optimal-table), playing `rules`; `cache_dir` is the solver's."""
    rules = get_rules(rules)
    if spec == "random":
        return make_random_agent(rules)
    if spec == "optimal":
        from yahtzee_jax.agents.widget_agents import make_optimal_agent

        return make_optimal_agent(rules, cache_dir=cache_dir)
    if spec == OPTIMAL_TABLE:
        from yahtzee_jax.agents.decision_table import make_decision_table_agent

        return make_decision_table_agent(rules, cache_dir=cache_dir)
    if spec == WIN_SEEKER:
        from yahtzee_jax.agents.win_seeker import win_seeker_agent

        return win_seeker_agent(rules, cache_dir)
    if spec == TARGET_SEEKER:
        from yahtzee_jax.agents.target_seeker import target_seeker_agent

        return target_seeker_agent(rules, cache_dir)
    if spec == TARGET:
        raise UserError("the target agent plays for a score X: evaluate target --target X")
    if re.fullmatch(r"greedy[123]", spec):
        from yahtzee_jax.agents.widget_agents import make_greedy_agent

        return make_greedy_agent(int(spec[-1]), rules)
    raise UserError(
        f"unknown agent {spec!r}; choose one of: {', '.join(AGENT_NAMES)}, or a checkpoint path"
    )
