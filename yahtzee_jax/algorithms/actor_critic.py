"""What the actor-critic learners (REINFORCE, A2C, PPO) share beside their rollout
(`training_rollout`): their config section, the rewards they learn from (the upper-bonus
curriculum and learned-potential shaping), the terms every one of their losses adds (entropy
bonus and upper-head regression) and their greedy acting policy. Each learner's own loss and
update is in its own module: `a2c.py` (and `reinforce.py` on it), `ppo.py`.

Every loss adds, beside its policy and value terms,

    - beta_roll H_roll - beta_score H_score + beta_regression mean((U(s_t) - u_final)^2)

Reward shaping (section 4.4.1, eqs. 11-12) follows the paper's code: the upper head U predicts
the normalised final upper total u_final = U_final / 63 - 1, the potential is
Phi(s) = 35 * clamp(63 (U(s) + 1), 0, 63) / 63 (eq. 11 as printed lacks the / 63 and would
scale to 35 x 63), and the shaped reward is r_t + beta_shape (Phi(s_{t+1}) - Phi(s_t)) with the
rollout's predictions (no gradient) and Phi = 0 after the last decision. Eq. 12 multiplies
Phi(s_{t+1}) by gamma; `shaping_discount` switches that on.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.algorithms.algorithm import Context, Metrics
from yahtzee_jax.algorithms.schedules import hold_anneal_schedule
from yahtzee_jax.algorithms.training_rollout import HeadOutputs, Trajectory
from yahtzee_jax.config import AlgoConfig, Config, dynamic, require, takes_default
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.networks import entropy, policy_log_probs


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig(AlgoConfig):
    """Loss settings of the actor-critic learners; defaults are Table 7's A2C column."""

    trains_value_head: ClassVar[bool] = True  # V(s) is their critic or baseline

    name: str = "a2c"
    gamma: float = dynamic(0.99)
    gae_lambda: float = dynamic(0.0)  # 0: TD(0) targets (eq. 16); 1: Monte-Carlo returns
    value_coef: float = dynamic(0.005)  # lambda_V
    normalize_advantage: bool = True
    # Entropy bonus (eq. 13): hold the start value, anneal linearly, then hold the end value.
    entropy_roll_start: float = dynamic(0.06)
    entropy_roll_end: float = dynamic(0.02)
    entropy_score_start: float = dynamic(0.03)
    entropy_score_end: float = dynamic(0.008)
    entropy_hold: float = dynamic(0.3)
    entropy_anneal: float = dynamic(0.6)
    # Learned-potential shaping (section 4.4.1); both need network.upper_head = true.
    upper_regression_weight: float = dynamic(0.0)  # beta_regression: U regresses U_final / 63 - 1
    shaping_weight: float = dynamic(0.0, branches=True)  # beta_shape; 0 skips the shaping
    shaping_discount: bool = False  # gamma Phi(s') as eq. 12 prints it; the paper's code has none
    # Upper-bonus curriculum (issue 28): the bonus counts `bonus_scale_start` times in the
    # training reward for the first `bonus_scale_hold` of the updates, then linearly back to its
    # own value over `bonus_scale_anneal`, so the last policy learns the game's own score. A
    # bonus the policy rarely reaches early is too weak a signal to be worth chasing.
    bonus_scale_start: float = dynamic(1.0, branches=True)  # 1: no curriculum, skipped
    bonus_scale_hold: float = dynamic(0.3)
    bonus_scale_anneal: float = dynamic(0.4)
    # policy/kl (how far an update moved the policy) costs a forward pass over the batch: it is
    # measured on the whole batch at the updates that end at an evaluation point, and on the
    # first `kl_sample_games` games (an unbiased sample of the same mean) at the others;
    # a value >= train.games_per_update measures the whole batch at every update. (A2C and
    # REINFORCE; PPO logs its own approx_kl.)
    kl_sample_games: int = 2
    # A trained run (or checkpoint) to start from: its weights, widened with zero weights on
    # inputs it lacks (a match's opponent groups) and a zeroed value output (a new reward's
    # scale). Needs the same network and features sections.
    init_from: str = ""
    # Fraction of the updates, at the start, in which only the value head learns: the policy
    # stays the warm start's while the critic learns the new reward's scale (A2C, REINFORCE).
    critic_warmup: float = 0.0

    def __post_init__(self) -> None:
        prefix = "algo."
        require(0.0 <= self.gamma <= 1.0, f"{prefix}gamma={self.gamma} must be in [0, 1]")
        require(
            0.0 <= self.gae_lambda <= 1.0, f"{prefix}gae_lambda={self.gae_lambda} must be in [0, 1]"
        )
        for field in (
            "value_coef",
            "entropy_roll_start",
            "entropy_roll_end",
            "entropy_score_start",
            "entropy_score_end",
            "upper_regression_weight",
            "shaping_weight",
        ):
            value = getattr(self, field)
            require(value >= 0, f"{prefix}{field}={value} must be >= 0")
        require(self.kl_sample_games >= 1, f"{prefix}kl_sample_games must be >= 1")
        for field in ("entropy_hold", "entropy_anneal", "bonus_scale_hold", "bonus_scale_anneal"):
            value = getattr(self, field)
            require(0.0 <= value <= 1.0, f"{prefix}{field}={value} must be in [0, 1]")
        for phase in ("entropy", "bonus_scale"):
            require(
                getattr(self, f"{phase}_hold") + getattr(self, f"{phase}_anneal") <= 1.0,
                f"algo.{phase}_hold + algo.{phase}_anneal must be <= 1",
            )
        require(
            self.bonus_scale_start >= 0,
            f"algo.bonus_scale_start={self.bonus_scale_start} must be >= 0",
        )
        require(
            0.0 <= self.critic_warmup < 1.0,
            f"algo.critic_warmup={self.critic_warmup} must be in [0, 1)",
        )
        # The paper's code refuses shaping without the regression that trains the potential.
        require(
            self.shaping_weight == 0 or self.upper_regression_weight > 0,
            "algo.shaping_weight > 0 needs algo.upper_regression_weight > 0 "
            "(the upper head is the potential and must be trained)",
        )

    def check(self, config: Config) -> None:
        """The upper head must exist when it is trained or used as a potential; the bonus
        curriculum scales the score reward, so it needs the solitaire game."""
        require(
            self.upper_regression_weight == 0 or config.network.upper_head,
            "algo.upper_regression_weight > 0 needs network.upper_head=true",
        )
        require(
            self.bonus_scale_start == 1.0 or envs.plays_solitaire_games(config),
            f"algo.bonus_scale_start={self.bonus_scale_start} needs solitaire games, as "
            f"env.id=Yahtzee-v0 (it scales the score reward's upper bonus), not {config.env.id}",
        )


def entropy_coefficients(context: Context, step: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(beta_roll, beta_score) at update `step`, each on its hold-anneal schedule."""
    algo, total = context.config.algo, context.config.train.total_updates
    roll = hold_anneal_schedule(
        algo.entropy_roll_start,
        algo.entropy_roll_end,
        algo.entropy_hold,
        algo.entropy_anneal,
        total,
    )
    score = hold_anneal_schedule(
        algo.entropy_score_start,
        algo.entropy_score_end,
        algo.entropy_hold,
        algo.entropy_anneal,
        total,
    )
    return roll(step), score(step)


def potential(upper_prediction: jax.Array, rules: Rules) -> jax.Array:
    """Phi = 35 * clamp(63 (U + 1), 0, 63) / 63: the bonus share the predicted upper total earns
    (the game's own bonus and threshold: +50 at 63 in Yatzy)."""
    threshold = rules.upper_bonus_threshold
    upper = jnp.clip(threshold * (upper_prediction + 1.0), 0.0, threshold)
    return rules.upper_bonus_points * upper / threshold


def shaping_rewards(
    potentials: jax.Array, weight: float, gamma: float | jax.Array, discount: bool
) -> jax.Array:
    """beta (g Phi(s_{t+1}) - Phi(s_t)) along time axis 0, Phi = 0 after the last decision;
    g = gamma with `discount`, else 1 (the paper's code)."""
    potentials = jax.lax.stop_gradient(potentials)
    next_potentials = jnp.concatenate([potentials[1:], jnp.zeros_like(potentials[:1])], axis=0)
    factor = gamma if discount else 1.0
    return weight * (factor * next_potentials - potentials)


def bonus_scale(context: Context, step: jax.Array) -> jax.Array:
    """How many times the upper bonus counts in the training reward at update `step`."""
    algo = context.config.algo
    # 1 -> 0 on the hold-anneal schedule, so the start (a population's per-member tracer)
    # enters only by arithmetic
    remaining = hold_anneal_schedule(
        1.0, 0.0, algo.bonus_scale_hold, algo.bonus_scale_anneal, context.config.train.total_updates
    )(step)
    return jnp.asarray(1.0 + (algo.bonus_scale_start - 1.0) * remaining, jnp.float32)


def bonus_crossings(upper_totals: jax.Array, threshold: int) -> jax.Array:
    """1.0 at the decision whose write lifts the upper total to the bonus threshold, else 0
    (`upper_totals` [T, B] after each decision of whole games, time axis 0)."""
    before = jnp.concatenate([jnp.zeros_like(upper_totals[:1]), upper_totals[:-1]], axis=0)
    return ((upper_totals >= threshold) & (before < threshold)).astype(jnp.float32)


def training_rewards(
    context: Context,
    trajectory: Trajectory,
    gamma: float | jax.Array,
    step: jax.Array,
    upper: jax.Array | None = None,
) -> jax.Array:
    """The rewards the learner optimises: the game's, with the upper bonus scaled by the
    curriculum, plus the shaping term when it is on (potentials from `upper`, the upper head's
    predictions, default the rollout's)."""
    algo, rules = context.config.algo, context.rules
    rewards = trajectory.reward
    if not takes_default(algo, "bonus_scale_start"):
        extra = (bonus_scale(context, step) - 1.0) * rules.upper_bonus_points
        crossed = bonus_crossings(trajectory.upper_total, rules.upper_bonus_threshold)
        rewards = rewards + extra * crossed
    if takes_default(algo, "shaping_weight"):
        return rewards
    upper = trajectory.upper if upper is None else upper
    potentials = potential(upper, context.rules)
    shaping = shaping_rewards(potentials, algo.shaping_weight, gamma, algo.shaping_discount)
    return rewards + shaping


def upper_targets(trajectory: Trajectory, rules: Rules) -> jax.Array:
    """The upper head's regression target U_final / 63 - 1 at every decision of each episode."""
    final = trajectory.upper_total[-1].astype(jnp.float32)
    target = final / rules.upper_bonus_threshold - 1.0
    return jnp.broadcast_to(target, trajectory.upper_total.shape)


def head_entropies(outputs: HeadOutputs) -> tuple[jax.Array, jax.Array]:
    """Mean policy entropy at the keep decisions and at the scoring decisions."""
    return jnp.mean(entropy(outputs.roll_log_probs)), jnp.mean(entropy(outputs.score_log_probs))


def auxiliary_terms(
    context: Context,
    step: jax.Array,
    entropies: tuple[jax.Array, jax.Array],
    upper: jax.Array,
    trajectory: Trajectory,
) -> tuple[jax.Array, Metrics]:
    """Entropy bonus (eq. 13) from the (roll, score) entropies and upper-head regression
    (eq. 14) of the predictions `upper` [T, B], with their metrics."""
    roll_entropy, score_entropy = entropies
    beta_roll, beta_score = entropy_coefficients(context, step)
    entropy_loss = -(beta_roll * roll_entropy + beta_score * score_entropy)
    regression_loss = jnp.mean(jnp.square(upper - upper_targets(trajectory, context.rules)))
    weight = context.config.algo.upper_regression_weight
    metrics = {
        "loss/entropy": entropy_loss,
        "loss/upper_regression": regression_loss,
        "policy/roll_entropy": roll_entropy,
        "policy/score_entropy": score_entropy,
        "schedule/entropy_roll": jnp.asarray(beta_roll),
        "schedule/entropy_score": jnp.asarray(beta_score),
    }
    if not takes_default(context.config.algo, "bonus_scale_start"):
        metrics["schedule/bonus_scale"] = bonus_scale(context, step)
    return entropy_loss + weight * regression_loss, metrics


def greedy(
    network: Any, params: Any, x: jax.Array, legal: jax.Array, roll_index: jax.Array
) -> jax.Array:
    """The acting policy: the most likely legal action (dropout off)."""
    output = network.apply({"params": params}, x)
    return jnp.argmax(policy_log_probs(output, legal, roll_index), axis=-1)
