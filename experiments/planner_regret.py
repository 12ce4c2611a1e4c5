"""A td-planner's decisions judged by the exact table: what one- and two-turn search lose.

Usage: python experiments/planner_regret.py runs/tdpm-ft --games 500 --seed 0
           --out results/td-planner-match-large-ft/planner_regret_seed0_500.json

The planner (search depth 1: the turn with the learned V at its end) plays `--games` games; at
each of their 39 decisions the solver's exact action values Q* (the planner with the solved
table at its leaves) judge the action it chose and the one the two-turn planner
(`algo.lookahead=2`, `agents.planner.LookaheadLeaf`) would choose on the same position. A
game's loss is the sum of max Q* - Q*(chosen) over its decisions: for the player whose games
these are, its expected shortfall from the optimum (the performance-difference identity), with
far less noise than comparing mean scores; for the two-turn planner, its loss on the one-turn
player's positions (its own would be similar, not the same). The solver is read here only, to
judge.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.planner import (
    LookaheadLeaf,
    box_values,
    final_values,
)
from yahtzee_jax.algorithms.td_planner import value_leaf
from yahtzee_jax.envs import rules_of
from yahtzee_jax.files import write_json
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import LAST_ROLL, State
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.runner.checkpointing import load_run
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget import keep_action_values, turn_keep_values
from yahtzee_jax.solver.widget_tables import ROLL_OF_CODE, dice_code


def table_leaf(table: jax.Array, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """The solved value of turn-start positions."""
    return table[mask, upper, flag]


def action_values(leaf, params, states: State, rules: Rules) -> jax.Array:
    """The value of each of the 45 actions at each card's decision under `leaf`, [B, 45]
    (-inf where the action is not of this decision's kind or not legal)."""
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(states.dice, jnp)]
    last, first = turn_keep_values(final_values(leaf, params, states, rules), jnp)
    keep_value = jnp.where(states.roll_index[None, :] == 0, first, last)
    keep_q = jax.vmap(keep_action_values, in_axes=(1, 0, None))(keep_value, roll, jnp)
    scoring = (states.roll_index == LAST_ROLL)[:, None]
    box_q = box_values(leaf, params, states, rules)
    return jnp.concatenate(
        [jnp.where(scoring, -jnp.inf, keep_q), jnp.where(scoring, box_q, -jnp.inf)], axis=1
    )


def regrets(run: str, games: int, seed: int) -> dict:
    """Play the run's one-turn planner; every decision's regret for it and the two-turn one."""
    params, config = load_run(run)
    rules = rules_of(config)
    one, two = value_leaf(config), LookaheadLeaf(value_leaf(config), rules)
    table = jnp.asarray(np.nan_to_num(solve(rules).value_table), jnp.float32)

    @jax.jit
    def decide(states: State) -> tuple[jax.Array, jax.Array, jax.Array]:
        exact = action_values(table_leaf, table, states, rules)
        best = jnp.max(exact, axis=1)

        def loss(action: jax.Array) -> jax.Array:
            return best - jnp.take_along_axis(exact, action[:, None], axis=1)[:, 0]

        chosen = jnp.argmax(action_values(one, params, states, rules), axis=1)
        deeper = jnp.argmax(action_values(two, params, states, rules), axis=1)
        return chosen.astype(jnp.int32), loss(chosen), loss(deeper)

    step = jax.jit(jax.vmap(lambda state, action, key: engine.step(state, action, key, rules)))
    keys = jax.random.split(jax.random.PRNGKey(seed), games)
    states = jax.vmap(lambda key: engine.init(key, rules))(keys)
    losses = np.zeros((2, games))
    start = time.perf_counter()
    for _ in range(rules.decisions_per_game):  # the game's own length (boxes x 3)
        action, *lost = decide(states)
        losses += np.asarray(lost)
        keys = jax.vmap(lambda key: jax.random.split(key)[0])(keys)
        states = step(states, action, keys)
    total = np.asarray(jax.vmap(lambda state: engine.total_score(state, rules))(states))

    def mean_and_error(values: np.ndarray) -> list[float]:
        return [float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))]

    return {
        "run": run,
        "games": games,
        "seed": seed,
        "one_turn_mean_score": float(total.mean()),
        "one_turn_loss_per_game": mean_and_error(losses[0]),
        "two_turn_loss_per_game_on_its_positions": mean_and_error(losses[1]),
        "difference": mean_and_error(losses[0] - losses[1]),
        "seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> dict:
    """Print and write the losses (mean and standard error per game)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    result = regrets(args.run, args.games, args.seed)
    print(json.dumps(result))
    if args.out:
        write_json(args.out, result)
    return result


if __name__ == "__main__":
    main()
