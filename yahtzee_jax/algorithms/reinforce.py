"""REINFORCE with the value head as baseline, the paper's equation 15.

    G_t = sum_k gamma^k r_{t+k} (Monte-Carlo return),   A_t = G_t - V(s_t)

The discount is scheduled as in the paper's code: linear from `gamma_start` (Table 7's gamma
min) to `gamma` (gamma max) over the first `gamma_anneal` fraction of training, then held.
The loss and the gradient step are A2C's (`a2c.py`) on these targets.
"""

from __future__ import annotations

import dataclasses

import jax
import optax

from yahtzee_jax.algorithms import a2c, acting, actor_critic
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.config import dynamic, require

MONTE_CARLO = 1.0  # lambda = 1: the lambda-return is the Monte-Carlo return


@dataclasses.dataclass(frozen=True)
class ReinforceConfig(actor_critic.ActorCriticConfig):
    """REINFORCE: Table 7's REINFORCE column."""

    name: str = "reinforce"
    gamma: float = dynamic(1.0)  # gamma max
    gamma_start: float = dynamic(0.95)  # gamma min
    gamma_anneal: float = 1.0  # fraction of training over which gamma moves to its max
    gae_lambda: float = dynamic(MONTE_CARLO)
    value_coef: float = dynamic(0.025)
    entropy_roll_start: float = dynamic(0.1)
    entropy_roll_end: float = dynamic(0.01)
    entropy_score_start: float = dynamic(0.02)
    entropy_score_end: float = dynamic(0.003)
    entropy_hold: float = dynamic(0.1)
    entropy_anneal: float = dynamic(0.55)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            0.0 <= self.gamma_start <= 1.0, f"algo.gamma_start={self.gamma_start} must be in [0, 1]"
        )
        require(
            0.0 < self.gamma_anneal <= 1.0,
            f"algo.gamma_anneal={self.gamma_anneal} must be in (0, 1]",
        )
        require(
            self.gae_lambda == MONTE_CARLO,
            "algo.gae_lambda must be 1 for REINFORCE (Monte-Carlo returns)",
        )


def gamma_at(context: Context, step: jax.Array) -> jax.Array:
    """The discount at update `step`."""
    algo = context.config.algo
    anneal_updates = max(round(context.config.train.total_updates * algo.gamma_anneal), 1)
    return optax.linear_schedule(algo.gamma_start, algo.gamma, anneal_updates)(step)


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One REINFORCE update: play B games, one gradient step on Monte-Carlo returns."""
    gamma = gamma_at(context, state.step)
    return a2c.single_step_update(context, state, gamma, MONTE_CARLO)


ALGORITHM = Algorithm(
    name="reinforce",
    config_class=ReinforceConfig,
    update=update,
    make_agent=acting.GreedyAgents(actor_critic.greedy),
)
