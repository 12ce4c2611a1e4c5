"""Advantage actor-critic with TD(0) targets, the paper's equations 16-17 (its best learner).

    delta_t = r_t + gamma V(s_{t+1}) - V(s_t),   V = 0 after the last decision

As in the paper's code the bootstrap V(s_{t+1}) is the value seen during the rollout (no
gradient) and one gradient step is taken per batch of games. `gae_lambda` > 0 replaces the TD(0)
target by the lambda-return (the paper's GAE sweep, Fig. 17); 0 is the TD(0) target exactly.
"""

from __future__ import annotations

import dataclasses

from yahtzee_jax.algorithms import acting, actor_critic
from yahtzee_jax.algorithms.base import Algorithm, Context, Metrics, TrainState


@dataclasses.dataclass(frozen=True)
class A2CConfig(actor_critic.ActorCriticConfig):
    """A2C: Table 7's A2C column (the actor-critic defaults)."""

    name: str = "a2c"


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One A2C update: play B games with the current policy, then one gradient step."""
    algo = context.config.algo
    return actor_critic.single_step_update(context, state, algo.gamma, algo.gae_lambda)


ALGORITHM = Algorithm(
    name="a2c",
    config_class=A2CConfig,
    update=update,
    make_agent=acting.GreedyAgents(actor_critic.greedy),
)
