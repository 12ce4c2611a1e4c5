"""The single-turn task's evaluation (paper sections 3.3, 5.1): an agent's mean score over single
turns on random cards, against the exact single-turn optimum of the same turns.

A turn starts from `init_single_turn` (a random number of random boxes already used, the first
roll dealt) and ends with its scoring decision; its score is the reward of that decision, upper
and Yahtzee bonuses included. The optimum of a turn is exact: the solver's turn widget with no
future (what greedy level 3 plays), valued at the dealt roll with two re-rolls to come. Turns
are played by the one play loop, so turn i depends only on (seed, i).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.agent import Agent, Policy
from yahtzee_jax.envs.solitaire_play import agent_policy, episode_keys, play, record_transition
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.statistics import mean_stderr
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import Rules

TASK = "single-turn"


def turn_optimum(state: State, rules: Rules) -> jax.Array:
    """Exact expected score of the best play of this turn from its first decision (one state)."""
    from yahtzee_jax.agents.widget_agents import state_turn_values
    from yahtzee_jax.solver.widget import best_keep_values

    # No value table: the turn is valued by its own reward only (the episode ends with it).
    _, _, first_keep, roll = state_turn_values(None, state, rules)
    return best_keep_values(first_keep, jnp)[roll]


@functools.partial(jax.jit, static_argnames=("policy", "rules", "batch_size"))
def _play_turns(
    policy: Policy,
    rules: Rules,
    params: Any,
    base_key: jax.Array,
    first: jax.Array,
    batch_size: int,
) -> tuple[jax.Array, jax.Array]:
    """(scores, optimal expected scores) of turns first .. first + batch_size - 1."""
    keys = episode_keys(base_key, first, batch_size)
    _, records = play(agent_policy(policy, params), keys, rules, TASK, record_transition)
    start = jax.tree.map(lambda leaf: leaf[0], records.state)
    optimum = jax.vmap(lambda state: turn_optimum(state, rules))(start)
    return jnp.sum(records.reward, axis=0), optimum


def evaluate_single_turn(
    agent: Agent, num_turns: int, seed: int, batch_size: int = 1024
) -> dict[str, float]:
    """Mean single-turn score of `agent` and the exact optimum of the same turns."""
    if getattr(agent.policy, "whole_games_only", False):
        raise UserError(
            f"agent {agent.name!r} plays whole games only (its table has no row for a turn with "
            "no future); the single-turn task is played by the optimal agent: optimal"
        )
    base_key = jax.random.key(seed)
    scores, optimum = [], []
    for first in range(0, num_turns, batch_size):
        kept = min(batch_size, num_turns - first)
        batch_scores, batch_optimum = _play_turns(
            agent.policy, agent.rules, agent.params, base_key, jnp.int32(first), batch_size
        )
        scores.append(np.asarray(batch_scores)[:kept])
        optimum.append(np.asarray(batch_optimum)[:kept])
    scores, optimum = np.concatenate(scores).astype(np.float64), np.concatenate(optimum)
    mean, optimum_mean = float(scores.mean()), float(optimum.mean())
    return {
        "turns": num_turns,
        "seed": seed,
        "mean": mean,
        "stderr": mean_stderr(scores),
        "optimum_mean": optimum_mean,
        "percent_of_optimum": 100.0 * mean / optimum_mean,
    }
