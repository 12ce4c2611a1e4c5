"""Distillation: the paper's policy network learns to imitate a trained agent, a td-planner's
(issue 30), or a built-in one, the optimal agent's (issue 64: the imitation ceiling).

The student is A2C's network (`YahtzeeNet` on the environment's features) and acts as A2C's
does, greedily and without any search, so `evaluate`, `tournament`, `play --against` and an A2C
warm start (`algo.init_from`) take a distill run as they take an A2C run. One update, fused in
the compiled chunk:

1. B games in lockstep; at every decision the teacher's action is computed on the same card and
   played with probability `teacher_share`, else the student's sampled one (DAgger-style
   mixing: 1 plays the teacher's games, lower shares let the student visit its own mistakes,
   still labelled by the teacher);
2. one Adam step on the cross-entropy of the student's legal-masked policy against the
   teacher's actions, at every decision, plus `value_coef` times the squared error of the value
   head against the discounted return of the games played (a critic for a later A2C fine-tune),
   minus `entropy_coef` times the policy's mean entropy.

The teacher is an agent like any other, played through the one policy signature: the teacher
run's own acting agent (`Algorithm.make_agent`), any learner's that plays whole solitaire games
of the same rules, or a built-in agent by name (`TEACHER_AGENTS`: `optimal-table`, the exact
optimum with its keeps in a table, is the fast one). It is frozen: it is read once, when the
run's context is built (`make_frozen`), and the compiled chunk closes over its parameters as
constants; it is no part of the train state, no gradient reaches it and no optimizer holds it,
and a resumed run reads it again from `algo.teacher`. Checkpoints are the runner's, a floor
above the algorithms, so the trainer hands its reader down (`make_context(config, load_run)`);
a context built without one (evaluation, a preset's inspection) has no teacher, and its update
refuses in one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent, at_roll
from yahtzee_jax.agents.resolve import BUILTINS, builtin_agent
from yahtzee_jax.algorithms import acting, actor_critic
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, RunLoader, TrainState
from yahtzee_jax.algorithms.common import (
    explained_variance,
    keep_action_stats,
    lambda_returns,
    learning_rate_at,
    optimizer_step,
)
from yahtzee_jax.algorithms.training_rollout import (
    HeadOutputs,
    Trajectory,
    evaluate_heads,
    sampling_policy,
    taken_log_probs,
    time_layout,
    trajectory_recorder,
)
from yahtzee_jax.config import AlgoConfig, Config, dynamic, require
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.errors import CheckpointError, ConfigError
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS
from yahtzee_jax.networks import entropy

# Built-in agents that can teach: those that play a card for its points (not the match players)
TEACHER_AGENTS = tuple(name for name, entry in BUILTINS.items() if entry.for_points)


@dataclasses.dataclass(frozen=True)
class DistillConfig(AlgoConfig):
    """Distillation: the teacher run, how often it plays, and the student's auxiliary terms."""

    name: str = "distill"
    # a run directory (a td-planner's) or a built-in agent's name (`TEACHER_AGENTS`), required
    # to train (read once per context)
    teacher: str = ""
    teacher_share: float = dynamic(1.0)  # share of decisions that play the teacher's action
    value_coef: float = dynamic(0.005)  # weight of the critic's squared error (A2C's lambda_V)
    gamma: float = dynamic(0.99)  # the critic's discount (A2C's, for a fine-tune's warm start)
    entropy_coef: float = dynamic(0.0)  # weight of the policy's mean entropy (a bonus)

    def __post_init__(self) -> None:
        share, gamma = self.teacher_share, self.gamma
        require(0.0 <= share <= 1.0, f"algo.teacher_share={share} must be in [0, 1]")
        require(0.0 <= gamma <= 1.0, f"algo.gamma={gamma} must be in [0, 1]")
        for field in ("value_coef", "entropy_coef"):
            value = getattr(self, field)
            require(value >= 0, f"algo.{field}={value} must be >= 0")

    def check(self, config: Config) -> None:
        """Solitaire only: the teacher plans the rest of a game."""
        require(
            envs.plays_solitaire_games(config),
            f"env.id={config.env.id!r}: distill imitates an agent of whole solitaire games "
            "(env.id=Yahtzee-v0 or another game's)",
        )


def make_frozen(config: Config, load_run: RunLoader | None) -> Agent | None:
    """The teacher of `algo.teacher`: the built-in agent of that name for the run's rules (its
    tables from the solver's default cache folder), else that run's acting agent (a
    td-planner's: its planner with the trained value network at the leaves), read through the
    trainer's `load_run`; None without one (a context to act or inspect with: only training
    reads the teacher)."""
    if load_run is None:
        return None
    path = config.algo.teacher
    require(
        path != "",
        "algo.teacher is required: a td-planner run (--set algo.teacher=RUN) or "
        f"a built-in agent ({', '.join(TEACHER_AGENTS)})",
    )
    if path in TEACHER_AGENTS:
        return builtin_agent(path, envs.rules_of(config))
    try:
        params, teacher = load_run(path)
    except CheckpointError as error:  # no run there, or none readable: say how to make one
        raise ConfigError(
            f"algo.teacher={path!r}: {error} (a td-planner run: yahtzee-jax train --preset "
            f"td-planner --out {path})"
        ) from None
    require(
        envs.plays_solitaire_games(teacher),
        f"algo.teacher={path!r} learned {teacher.env.id}, not whole solitaire games",
    )
    rules, taught = envs.rules_of(config), envs.rules_of(teacher)
    require(taught == rules, f"algo.teacher={path!r} plays {taught.name} rules, not {rules.name}")
    from yahtzee_jax.algorithms import get_algorithm  # the registry imports this module

    frozen = jax.tree.map(jnp.asarray, params)
    return get_algorithm(teacher.algo.name).make_agent(teacher, frozen, "teacher")


# --------------------------------------------------------------------------------------------
# The mixed rollout and the loss
# --------------------------------------------------------------------------------------------


class Decisions(NamedTuple):
    """One update's decisions, time-major [T, B]: the student's view, the teacher's choice."""

    trajectory: Trajectory  # features, legal mask, dropout seeds, the actions played
    teacher: jax.Array  # int32[T, B], the teacher's action on the same card
    followed: jax.Array  # bool[T, B], whether the teacher's action was played


def mixed_policy(
    context: Context, params: Any, teacher: Agent, share: float | jax.Array
) -> Callable:
    """The by-turn batch policy: the teacher's action with probability `share`, else the
    student's sample (dropout on); extras: the student's inputs and the teacher's action."""
    env = context.env
    student = sampling_policy(context.network, params, env, with_value=False)

    def policy(observation: Any, keys: jax.Array, roll_index: int) -> tuple[jax.Array, dict]:
        pairs = jax.vmap(jax.random.split)(keys)
        sampled, extras = student(observation, pairs[:, 0], roll_index)
        cards = at_roll(env.card(observation), roll_index)  # games in lockstep, by turn
        chosen = teacher.policy(teacher.params, cards, no_others(cards), keys)
        follow = jax.vmap(jax.random.uniform)(pairs[:, 1]) < share
        played = jnp.where(follow, chosen, sampled).astype(jnp.int32)
        return played, {**extras, "teacher": chosen, "followed": follow}

    return policy


def _recorder(context: Context) -> Callable:
    student_row = trajectory_recorder(context.env)

    def record(observation: Any, action: jax.Array, next_observation: Any, extras: dict):
        row = student_row(observation, action, next_observation, extras)
        return Decisions(row, extras["teacher"], extras["followed"])

    return record


def greedy_actions(outputs: HeadOutputs) -> jax.Array:
    """The student's most likely legal action at every decision, int32[T, B] (45 actions)."""
    keep = jnp.argmax(outputs.roll_log_probs, axis=-1)  # [turns, 2, B]
    box = jnp.argmax(outputs.score_log_probs, axis=-1) + NUM_KEEP_ACTIONS  # [turns, B]
    return time_layout(jnp.concatenate([keep, box[:, None]], axis=1)).astype(jnp.int32)


def loss(
    params: Any, context: Context, decisions: Decisions
) -> tuple[jax.Array, tuple[Metrics, jax.Array]]:
    """Cross-entropy against the teacher, plus the critic's and the entropy's terms;
    aux = (metrics, the student's greedy actions before the step)."""
    algo, trajectory = context.config.algo, decisions.trajectory
    outputs = evaluate_heads(context.network, params, trajectory)
    cross_entropy = -jnp.mean(taken_log_probs(outputs, decisions.teacher))
    keep_entropy, score_entropy = entropy(outputs.roll_log_probs), entropy(outputs.score_log_probs)
    mean_entropy = (jnp.sum(keep_entropy) + jnp.sum(score_entropy)) / (
        keep_entropy.size + score_entropy.size
    )
    # lambda = 1: the discounted Monte-Carlo return of the games played (the value is unused)
    target = lambda_returns(trajectory.reward, outputs.value, algo.gamma, 1.0)
    value_error = jnp.mean(jnp.square(target - outputs.value))
    total = cross_entropy + algo.value_coef * value_error - algo.entropy_coef * mean_entropy
    metrics = {
        "loss/total": total,
        "loss/cross_entropy": cross_entropy,
        "loss/value": algo.value_coef * value_error,
        "policy/entropy": mean_entropy,
        "value/mean": jnp.mean(outputs.value),
        "value/explained_variance": explained_variance(outputs.value, target),
    }
    return total, (metrics, greedy_actions(outputs))


def agreement(student: jax.Array, teacher: jax.Array, roll_index: jax.Array) -> Metrics:
    """Share of decisions where the student's greedy action is the teacher's: all, keeps, boxes."""
    same = (student == teacher).astype(jnp.float32)
    keeping = (roll_index < LAST_ROLL).astype(jnp.float32)
    return {
        "policy/agreement": jnp.mean(same),
        "policy/agreement_keep": jnp.sum(same * keeping) / jnp.sum(keeping),
        "policy/agreement_score": jnp.sum(same * (1 - keeping)) / jnp.sum(1 - keeping),
    }


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One update: B games with the teacher's and the student's actions mixed, then one Adam
    step of the student toward the teacher's choices."""
    teacher = context.frozen
    if teacher is None:
        raise ConfigError(
            "distill has no teacher in this context: `yahtzee-jax train` reads algo.teacher "
            "(in code: make_context(config, runner.checkpointing.load_run))"
        )
    config, env, algo = context.config, context.env, context.config.algo
    key, play_key = jax.random.split(state.key)
    policy = mixed_policy(context, state.params, teacher, algo.teacher_share)
    keys = episode_keys(play_key, 0, envs.episodes_per_update(config))
    final, decisions, rewards = rollout(env, policy, keys, state.task, _recorder(context), True)
    trajectory = decisions.trajectory._replace(reward=rewards)
    decisions = decisions._replace(trajectory=trajectory)

    def loss_fn(params: Any) -> tuple[jax.Array, tuple[Metrics, jax.Array]]:
        return loss(params, context, decisions)

    (_, (loss_metrics, student)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    params, opt_state, grad_metrics = optimizer_step(context, state.params, state.opt_state, grads)
    metrics = {
        **env.episode_metrics(final, rewards),
        **keep_action_stats(trajectory.action, trajectory.roll_index),
        **loss_metrics,
        **grad_metrics,
        **agreement(student, decisions.teacher, trajectory.roll_index),  # before this step
        "policy/teacher_played": jnp.mean(decisions.followed.astype(jnp.float32)),
        "schedule/learning_rate": learning_rate_at(context, state.step),
    }
    new_state = state.replace(
        params=params,
        opt_state=opt_state,
        key=key,
        step=state.step + 1,
        task=env.end_task_batch(state.task, final),
    )
    return new_state, metrics


ALGORITHM = Algorithm(
    name="distill",
    config_class=DistillConfig,
    update=update,
    make_agent=acting.GreedyAgents(actor_critic.greedy),
    make_frozen=make_frozen,
)
