"""PPO with masked actions on the gymnax Yahtzee env, purejaxrl style: one jitted `train(key)`.

    python examples/ppo_gymnax.py                      # the full budget: beats greedy1 (111)
    python examples/ppo_gymnax.py --timesteps 200000   # a quick look

`make_train(config)` returns `train(key)`: an outer `lax.scan` over updates, each collecting
NUM_STEPS steps of NUM_ENVS vmapped envs (auto-reset by gymnax), a reverse scan for GAE, then
epochs of shuffled minibatches. The legal-action mask comes from the env (`info["action_mask"]`
after each step): illegal logits are set to -1e9, so every sampled action is legal. Needs the
`gym` extra (``pip install -e .[gym]``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState
from gymnax.wrappers.purerl import LogWrapper

from yahtzee_jax.suite.gymnax_env import YahtzeeGymnax

CONFIG = {
    "ENV_ID": "Yahtzee-v0",
    "LR": 3e-4,
    "NUM_ENVS": 256,
    "NUM_STEPS": 39,  # one whole game per env per update: every episode is 39 decisions
    "TOTAL_TIMESTEPS": 2_000_000,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 1.0,  # the score is the undiscounted sum of the rewards
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "REWARD_SCALE": 0.02,  # a box's points are tens: keep the value targets near 1
    "HIDDEN": 256,
}


class ActorCritic(nn.Module):
    """Two-layer MLP trunks: masked action logits and a state value."""

    num_actions: int
    hidden: int = 256

    @nn.compact
    def __call__(self, obs: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(masked logits [.., A], value [..])."""
        actor = nn.relu(nn.Dense(self.hidden)(obs))
        actor = nn.relu(nn.Dense(self.hidden)(actor))
        logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(actor)
        critic = nn.relu(nn.Dense(self.hidden)(obs))
        critic = nn.relu(nn.Dense(self.hidden)(critic))
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(critic)
        return jnp.where(mask, logits, -1e9), value[..., 0]


class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    mask: jax.Array
    info: dict[str, jax.Array]


def make_train(config: dict[str, Any]) -> Any:
    """`train(key)` for `config` (see `CONFIG`): the whole run as one XLA program."""
    num_updates = config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"]
    minibatch = config["NUM_ENVS"] * config["NUM_STEPS"] // config["NUM_MINIBATCHES"]
    base = YahtzeeGymnax(config["ENV_ID"])
    env, env_params = LogWrapper(base), base.default_params
    network = ActorCritic(base.num_actions, config["HIDDEN"])

    def schedule(count: jax.Array) -> jax.Array:
        steps = config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"]
        return config["LR"] * (1.0 - (count // steps) / num_updates)

    def train(key: jax.Array) -> dict[str, Any]:
        key, init_key, reset_key = jax.random.split(key, 3)
        obs_size = base.observation_space(env_params).shape[0]
        blank = (jnp.zeros(obs_size), jnp.ones(base.num_actions, bool))
        optimizer = optax.chain(
            optax.clip_by_global_norm(config["MAX_GRAD_NORM"]), optax.adam(schedule, eps=1e-5)
        )
        state = TrainState.create(
            apply_fn=network.apply, params=network.init(init_key, *blank), tx=optimizer
        )
        reset_keys = jax.random.split(reset_key, config["NUM_ENVS"])
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(reset_keys, env_params)
        mask = jax.vmap(base.action_mask)(env_state.env_state)

        def update(runner: tuple, _: None) -> tuple[tuple, dict[str, jax.Array]]:
            def env_step(runner: tuple, _: None) -> tuple[tuple, Transition]:
                state, env_state, obs, mask, key = runner
                key, act_key, step_key = jax.random.split(key, 3)
                logits, value = network.apply(state.params, obs, mask)
                action = jax.random.categorical(act_key, logits)
                log_prob = jax.nn.log_softmax(logits)[jnp.arange(action.shape[0]), action]
                step_keys = jax.random.split(step_key, config["NUM_ENVS"])
                next_obs, env_state, reward, done, _, info = jax.vmap(
                    env.step, in_axes=(0, 0, 0, None)
                )(step_keys, env_state, action, env_params)
                info["illegal"] = ~mask[jnp.arange(action.shape[0]), action]
                scaled = reward * config["REWARD_SCALE"]
                transition = Transition(done, action, value, scaled, log_prob, obs, mask, info)
                return (state, env_state, next_obs, info["action_mask"], key), transition

            runner, batch = jax.lax.scan(env_step, runner, None, config["NUM_STEPS"])
            state, env_state, obs, mask, key = runner
            _, last_value = network.apply(state.params, obs, mask)

            def gae(carry: tuple, step: Transition) -> tuple[tuple, jax.Array]:
                advantage, next_value = carry
                not_done = 1.0 - step.done
                delta = step.reward + config["GAMMA"] * next_value * not_done - step.value
                advantage = delta + config["GAMMA"] * config["GAE_LAMBDA"] * not_done * advantage
                return (advantage, step.value), advantage

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_value), last_value), batch, reverse=True
            )
            targets = advantages + batch.value

            def loss_fn(params: Any, mb: Transition, adv: jax.Array, target: jax.Array) -> Any:
                logits, value = network.apply(params, mb.obs, mb.mask)
                log_probs = jax.nn.log_softmax(logits)
                log_prob = jnp.take_along_axis(log_probs, mb.action[:, None], 1)[:, 0]
                eps = config["CLIP_EPS"]
                clipped = mb.value + (value - mb.value).clip(-eps, eps)
                value_loss = 0.5 * jnp.maximum((value - target) ** 2, (clipped - target) ** 2)
                value_loss = value_loss.mean()
                ratio = jnp.exp(log_prob - mb.log_prob)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                actor_loss = -jnp.minimum(ratio * adv, ratio.clip(1 - eps, 1 + eps) * adv).mean()
                # Entropy over the legal actions only (masked logits carry no probability).
                probs = jnp.exp(log_probs)
                entropy = -jnp.sum(jnp.where(mb.mask, probs * log_probs, 0.0), axis=-1).mean()
                total = actor_loss + config["VF_COEF"] * value_loss - config["ENT_COEF"] * entropy
                return total, (value_loss, actor_loss, entropy)

            def epoch(carry: tuple, _: None) -> tuple[tuple, Any]:
                state, key = carry
                key, perm_key = jax.random.split(key)
                size = config["NUM_STEPS"] * config["NUM_ENVS"]
                order = jax.random.permutation(perm_key, size)
                flat = jax.tree.map(
                    lambda x: x.reshape((size, *x.shape[2:]))[order],
                    (batch, advantages, targets),
                )
                shards = jax.tree.map(
                    lambda x: x.reshape((config["NUM_MINIBATCHES"], minibatch, *x.shape[1:])), flat
                )

                def minibatch_step(state: TrainState, shard: tuple) -> tuple[TrainState, Any]:
                    grads = jax.grad(loss_fn, has_aux=True)(state.params, *shard)
                    return state.apply_gradients(grads=grads[0]), grads[1]

                state, losses = jax.lax.scan(minibatch_step, state, shards)
                return (state, key), losses

            (state, key), losses = jax.lax.scan(epoch, (state, key), None, config["UPDATE_EPOCHS"])
            info = batch.info
            # Reduce inside the scan (purejaxrl's users ran out of memory returning every step).
            ended = info["returned_episode"]
            metrics = {
                "mean_return": jnp.sum(info["returned_episode_returns"] * ended)
                / jnp.maximum(ended.sum(), 1),
                "episodes": ended.sum(),
                "illegal_actions": info["illegal"].sum(),
                "value_loss": losses[0].mean(),
                "entropy": losses[2].mean(),
            }
            return (state, env_state, obs, mask, key), metrics

        runner = (state, env_state, obs, mask, key)
        runner, metrics = jax.lax.scan(update, runner, None, num_updates)
        return {"runner_state": runner, "metrics": metrics}

    return train


def evaluate(params: Any, config: dict[str, Any], games: int, key: jax.Array) -> jax.Array:
    """Final scores of `games` games played by the greedy (argmax) policy."""
    base = YahtzeeGymnax(config["ENV_ID"])
    env_params = base.default_params
    network = ActorCritic(base.num_actions, config["HIDDEN"])
    reset_key, play_key = jax.random.split(key)
    _, state = jax.vmap(base.reset_env, in_axes=(0, None))(
        jax.random.split(reset_key, games), env_params
    )

    def decide(carry: tuple, key: jax.Array) -> tuple[tuple, jax.Array]:
        state, total = carry
        obs = jax.vmap(base.get_obs, in_axes=(0, None))(state, env_params)
        logits, _ = network.apply(params, obs, state.env.legal_action_mask)
        keys = jax.random.split(key, games)
        _, state, reward, _, _ = jax.vmap(base.step_env, in_axes=(0, 0, 0, None))(
            keys, state, jnp.argmax(logits, -1), env_params
        )
        return (state, total + reward), None

    decisions = base.env.decisions_per_episode
    keys = jax.random.split(play_key, decisions)
    (_, total), _ = jax.lax.scan(decide, (state, jnp.zeros(games)), keys)
    return total


def main() -> None:
    """Train, then evaluate the greedy policy; print (and optionally write) the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=CONFIG["TOTAL_TIMESTEPS"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=10_000, help="evaluation games")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args()
    per_update = CONFIG["NUM_STEPS"] * CONFIG["NUM_ENVS"]
    if args.timesteps < per_update or args.games < 1:
        parser.error(f"--timesteps must be at least one update's {per_update}, --games at least 1")
    config = {**CONFIG, "TOTAL_TIMESTEPS": args.timesteps}
    start = time.time()
    out = jax.block_until_ready(jax.jit(make_train(config))(jax.random.key(args.seed)))
    seconds = time.time() - start
    metrics = jax.tree.map(np.asarray, out["metrics"])
    # Ten updates spread over the run, each once (a short run has fewer than ten).
    for update in np.unique(np.linspace(0, len(metrics["mean_return"]) - 1, 10).astype(int)):
        print(f"update {update + 1:5d}  training mean return {metrics['mean_return'][update]:.1f}")
    params = out["runner_state"][0].params
    scores = np.asarray(evaluate(params, config, args.games, jax.random.key(10_000 + args.seed)))
    mean, stderr = scores.mean(), scores.std() / np.sqrt(len(scores))
    print(f"greedy policy over {args.games} games: mean {mean:.2f} ± {stderr:.2f}")
    print(f"{args.timesteps} steps in {seconds:.0f} s (compile included)")
    if args.json:
        result = {
            "env": config["ENV_ID"],
            "config": config,
            "seed": args.seed,
            "train_seconds_with_compile": round(seconds, 1),
            "eval_games": args.games,
            "eval_mean": round(float(mean), 2),
            "eval_stderr": round(float(stderr), 2),
            "illegal_actions": int(metrics["illegal_actions"].sum()),
        }
        with open(args.json, "w") as file:
            json.dump(result, file, indent=1)


if __name__ == "__main__":
    main()
