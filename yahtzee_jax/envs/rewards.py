"""The match's reward variants: the learner's reward at each of its decisions (issue 14).

* `score`: the change in the learner's own total (the solitaire reward; the opponents ignored).
* `win`: 0 at every decision, then +1 / 0 / -1 for a win / draw / loss at the last decision.
* Yuan's four variants (seed 003, section 2.5.2), each the intermediate reward plus a terminal
  reward. Intermediate: 0 at a keep decision; at a scoring decision (the points written in the
  box - the optimal solitaire player's mean points in that box, Yuan's table) / 10 (Yuan's -10
  for a filled box cannot occur: such actions are masked). Terminal, at the last decision:

  - `naive`: +1 win, 0 draw, -1 loss;
  - `gradient`: +1 win, 0 draw, (own total - opponent's total) / 100 on a loss;
  - `fixed`: +1 if own total > 110, 0 if equal, -1 if below (the opponent is ignored);
  - `moving-average`: as `fixed` with the goal max(110, mean own total of the last 100
    training games + 20), the goal fixed for the B games of one update.

With several opponents, "the opponent's total" is the best of theirs: a win is beating them all.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS

REWARDS = ("score", "win", "naive", "gradient", "fixed", "moving-average")
YUAN_REWARDS = ("naive", "gradient", "fixed", "moving-average")
# Yuan's table (section 2.5.2): the optimal solitaire player's mean points per box, 1,000 games.
YUAN_BOX_MEANS = (
    1.861, 5.366, 8.676, 12.116, 15.65, 19.488,  # ones .. sixes
    22.344, 12.897, 23.125, 29.43, 33.12, 17.0, 22.286,  # 3k, 4k, FH, SS, LS, Yahtzee, chance
)  # fmt: skip
INTERMEDIATE_SCALE = 10.0
GRADIENT_SCALE = 100.0
FIXED_GOAL = 110.0
GOAL_MARGIN = 20.0  # the moving goal sits this far above the recent mean
GOAL_WINDOW = 100  # games in the moving mean


class GoalState(NamedTuple):
    """The moving-average goal's memory: the learner's last `GOAL_WINDOW` training totals."""

    totals: jax.Array  # float32[GOAL_WINDOW]
    count: jax.Array  # int32, totals written so far (saturates the window)
    index: jax.Array  # int32, next slot


def goal_init() -> GoalState:
    """No games yet: the goal is the fixed 110."""
    return GoalState(jnp.zeros(GOAL_WINDOW, jnp.float32), jnp.int32(0), jnp.int32(0))


def goal_value(goal: GoalState) -> jax.Array:
    """max(110, mean of the remembered totals + 20); 110 before any game."""
    filled = jnp.arange(GOAL_WINDOW) < goal.count
    mean = jnp.sum(jnp.where(filled, goal.totals, 0.0)) / jnp.maximum(goal.count, 1)
    return jnp.where(goal.count > 0, jnp.maximum(FIXED_GOAL, mean + GOAL_MARGIN), FIXED_GOAL)


def reward_goal(reward: str, goal: GoalState) -> jax.Array:
    """The total the end reward compares against: the moving goal for `moving-average`, else 110."""
    if reward == "moving-average":
        return goal_value(goal)
    return jnp.float32(FIXED_GOAL)


def goal_update(goal: GoalState, totals: jax.Array) -> GoalState:
    """Remember a batch of totals (only the last `GOAL_WINDOW` of them can matter)."""
    totals = totals.astype(jnp.float32)[-GOAL_WINDOW:]
    slots = (goal.index + jnp.arange(totals.shape[0])) % GOAL_WINDOW
    return GoalState(
        totals=goal.totals.at[slots].set(totals),
        count=jnp.minimum(goal.count + totals.shape[0], GOAL_WINDOW),
        index=(goal.index + totals.shape[0]) % GOAL_WINDOW,
    )


def intermediate_rewards(states: State, actions: jax.Array, next_states: State) -> jax.Array:
    """Yuan's per-decision reward: (box points - optimal mean for the box) / 10 at scores
    (Yuan's table is Yahtzee's 13-box card: `envs.make` refuses it for other cards)."""
    scoring = actions >= NUM_KEEP_ACTIONS
    box = jnp.clip(actions - NUM_KEEP_ACTIONS, 0, len(YUAN_BOX_MEANS) - 1)
    points = jnp.take_along_axis(next_states.scores, box[..., None], axis=-1)[..., 0]
    means = jnp.asarray(YUAN_BOX_MEANS, jnp.float32)[box]
    return jnp.where(scoring, (points - means) / INTERMEDIATE_SCALE, 0.0)


def terminal_reward(
    reward: str, own_total: jax.Array, other_total: jax.Array, goal: jax.Array | float
) -> jax.Array:
    """The end-of-game reward of a variant (see the module docstring), float32[B]."""
    own = own_total.astype(jnp.float32)
    other = other_total.astype(jnp.float32)
    if reward in ("naive", "win"):
        return jnp.sign(own - other)
    if reward == "gradient":
        return jnp.where(own > other, 1.0, jnp.where(own == other, 0.0, (own - other) / 100.0))
    if reward == "fixed":  # whatever goal is passed: fixed means 110
        return jnp.sign(own - FIXED_GOAL)
    if reward == "moving-average":
        return jnp.sign(own - jnp.asarray(goal, jnp.float32))
    raise ValueError(f"no terminal reward for {reward!r}")


def step_reward(reward: str, state: State, action: jax.Array, next_state: State) -> jax.Array:
    """The reward of one decision before the match is over, float32[B]."""
    if reward == "score":
        return next_state.reward.astype(jnp.float32)
    if reward in YUAN_REWARDS:
        return intermediate_rewards(state, action, next_state)
    return jnp.zeros(action.shape, jnp.float32)


def match_metrics(
    own_total: jax.Array, other_total: jax.Array, rewards: jax.Array, goal: jax.Array
) -> dict[str, jax.Array]:
    """Training scalars of one update's matches: scores, win and draw rates, return, goal."""
    result = jnp.sign(own_total - other_total)
    return {
        "train/mean_score": jnp.mean(own_total.astype(jnp.float32)),
        "train/opponent_mean_score": jnp.mean(other_total.astype(jnp.float32)),
        "train/win_rate": jnp.mean((result > 0).astype(jnp.float32)),
        "train/draw_rate": jnp.mean((result == 0).astype(jnp.float32)),
        "train/mean_return": jnp.mean(jnp.sum(rewards, axis=0)),
        "train/goal": jnp.asarray(goal, jnp.float32),
    }
