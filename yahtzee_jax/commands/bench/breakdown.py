"""What one fused training update spends its time on (`bench train --breakdown`).

The update is timed whole by `bench train`; here its parts are timed alone, each compiled on its
own and called on the same batch:

- env: the game played with a uniformly random legal policy that still computes the network's
  input features (summed into the logits with weight 0 so they cannot be dropped): the engine's
  steps, the dice, the masks, the features, the keys and the sampling, no network;
- rollout: the learner's own sampling rollout (the env plus the network's forward passes that
  act, with the value heads where the learner keeps them);
- learn: what is left of the update, its time minus the rollout's: the loss's forward and
  backward passes over the batch (PPO: every epoch and minibatch), the optimizer steps and the
  metrics.

The network's share is therefore rollout - env (acting) plus learn; everything else in the
update is env.
"""

from __future__ import annotations

from typing import Any


def parameter_count(params: Any) -> int:
    """Number of scalars in a parameter pytree."""
    import jax

    return int(sum(leaf.size for leaf in jax.tree.leaves(params)))


def _random_legal_policy(env: Any) -> Any:
    """A policy that samples a uniformly random legal action and computes the features too."""
    import jax
    import jax.numpy as jnp

    def policy(observation: Any, keys: jax.Array) -> tuple[jax.Array, None]:
        legal = env.legal_action_mask(observation)
        features = env.features(observation)
        # weight 0: the features cost what they cost, the actions stay uniform over the legal ones
        logits = jnp.where(legal, 0.0, -jnp.inf) + 0.0 * jnp.sum(features, -1, keepdims=True)
        actions = jax.vmap(jax.random.categorical)(keys, logits)
        return actions.astype(jnp.int32), None

    return policy


def time_parts(context: Any, state: Any, repeats: int, best_time: Any) -> dict:
    """ms per update of the env alone and of the learner's rollout, and the parameter count, for
    the run `context` (`algorithms.algorithm.Context`) from its train `state`."""
    import jax

    from yahtzee_jax.algorithms import ppo
    from yahtzee_jax.algorithms.training_rollout import sample_batch
    from yahtzee_jax.envs import episodes_per_update
    from yahtzee_jax.envs.rollout import episode_keys
    from yahtzee_jax.envs.rollout import rollout as play

    config = context.config
    episodes = episodes_per_update(config)
    env = context.env
    policy = _random_legal_policy(env)

    @jax.jit
    def env_only(key: jax.Array) -> Any:
        _, _, rewards = play(env, policy, episode_keys(key, 0, episodes))
        return rewards

    # PPO keeps the acting values for its targets; A2C and REINFORCE recompute them in the loss
    with_value = isinstance(config.algo, ppo.PPOConfig)

    @jax.jit
    def acting(key: jax.Array) -> Any:
        trajectory, _ = sample_batch(context, state.params, key, with_value)
        return trajectory.log_prob

    return {
        "parameters": parameter_count(state.params),
        "env_ms": 1000 * best_time(env_only, state.key, repeats),
        "rollout_ms": 1000 * best_time(acting, state.key, repeats),
    }
