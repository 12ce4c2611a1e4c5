"""Steps per second of each adapter beside the internal JAX path (issue 44), as JSON.

    python experiments/bench_adapters.py --json docs/adapters/bench.json

Every path plays random legal actions (drawn in JAX on the JAX paths, in NumPy on the others)
and counts decisions: the package's training env (`envs.Game`, the protocol as the learners
drive it), the pure protocol (`envs.core`, vmapped), the gymnax env (vmapped, auto-reset),
Gymnasium's vector env (`make_vec`, one jitted call per batch) and single env, and
PettingZoo's AEC and parallel matches. Compile time is excluded (a warm-up call first). The
machine is named in the JSON; pass --note to say whether it was shared.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.commands.bench.machine import cpu_model
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs import core
from yahtzee_jax.envs.solitaire import Game
from yahtzee_jax.files import write_whole
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.suite import make


def _random_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf), axis=-1)


def _timed(run: Callable[[], Any], decisions: int, repeats: int) -> float:
    """Decisions per second of `run` (called once to compile, then `repeats` times)."""
    jax.block_until_ready(run())
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(run())
    return decisions * repeats / (time.perf_counter() - start)


def bench_training_env(batch: int, steps: int, repeats: int) -> float:
    """The package's own solitaire env (`envs.Game`), as its rollout drives it."""
    env = Game(get_rules("official"), FeatureConfig())
    state, play_keys = env.init(jax.random.split(jax.random.key(0), batch), {})

    @jax.jit
    def run(state: Any, key: jax.Array) -> Any:
        def one(state: Any, decision: jax.Array) -> tuple[Any, None]:
            keys = jax.vmap(lambda k: jax.random.fold_in(k, decision))(play_keys)
            mask = env.legal_action_mask(env.observation(state))
            state, _ = env.step(state, _random_legal(keys[0], mask), keys, decision)
            return state, None

        return jax.lax.scan(one, state, jnp.arange(steps))[0]

    return _timed(lambda: run(state, jax.random.key(1)), batch * steps, repeats)


def bench_core(env_id: str, batch: int, steps: int, repeats: int) -> float:
    """`envs.core` init and step, vmapped over a batch (no auto-reset: episodes are `steps`)."""
    params = make(env_id).default_params
    keys = jax.random.split(jax.random.key(0), batch)
    state = jax.vmap(core.init, in_axes=(0, None))(keys, params)

    @jax.jit
    def run(state: core.EnvState, key: jax.Array) -> core.EnvState:
        def one(state: core.EnvState, key: jax.Array) -> tuple[core.EnvState, None]:
            act_key, step_key = jax.random.split(key)
            action = _random_legal(act_key, state.legal_action_mask)
            step_keys = jax.random.split(step_key, batch)
            step = jax.vmap(core.step, in_axes=(0, 0, 0, None))
            return step(state, action, step_keys, params), None

        return jax.lax.scan(one, state, jax.random.split(key, steps))[0]

    return _timed(lambda: run(state, jax.random.key(1)), batch * steps, repeats)


def bench_gymnax(env_id: str, batch: int, steps: int, repeats: int) -> float:
    """The gymnax env's auto-resetting `step`, vmapped, observations included."""
    from yahtzee_jax.suite.gymnax_env import YahtzeeGymnax

    env = YahtzeeGymnax(env_id)
    params = env.default_params
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), batch), params
    )

    @jax.jit
    def run(state: Any, key: jax.Array) -> Any:
        def one(carry: tuple, key: jax.Array) -> tuple[tuple, None]:
            state, mask = carry
            act_key, step_key = jax.random.split(key)
            step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
            _, state, _, _, _, info = step(
                jax.random.split(step_key, batch), state, _random_legal(act_key, mask), params
            )
            return (state, info["action_mask"]), None

        mask = jax.vmap(env.action_mask)(state)
        return jax.lax.scan(one, (state, mask), jax.random.split(key, steps))[0]

    return _timed(lambda: run(state, jax.random.key(1)), batch * steps, repeats)


def _numpy_choice(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A random legal action per row, vectorised (argmax of noise over the legal actions)."""
    return np.argmax(np.where(masks > 0, rng.random(masks.shape), -1.0), axis=-1)


def bench_gymnasium_vector(env_id: str, batch: int, steps: int) -> float:
    """`gymnasium.make_vec`: one jitted, vmapped call per batch step, NumPy in and out."""
    import gymnasium

    import yahtzee_jax.suite.gymnasium_env  # noqa: F401 (registers the ids)

    env = gymnasium.make_vec(f"yahtzee_jax/{env_id}", num_envs=batch)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    env.step(_numpy_choice(rng, info["action_mask"]))  # compile
    start = time.perf_counter()
    for _ in range(steps):
        _, _, _, _, info = env.step(_numpy_choice(rng, info["action_mask"]))
    return batch * steps / (time.perf_counter() - start)


def bench_gymnasium_single(env_id: str, steps: int) -> float:
    """`gymnasium.make`: one episode at a time (with Gymnasium's wrappers), reset included."""
    import gymnasium

    import yahtzee_jax.suite.gymnasium_env  # noqa: F401

    env = gymnasium.make(f"yahtzee_jax/{env_id}")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    env.step(_numpy_choice(rng, info["action_mask"][None])[0])  # compile
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, _, info = env.step(_numpy_choice(rng, info["action_mask"][None])[0])
        if terminated:
            _, info = env.reset()
    return steps / (time.perf_counter() - start)


def bench_pettingzoo(players: int, steps: int, parallel: bool) -> float:
    """PettingZoo's AEC match (one decision a call) or parallel match (every seat's a call)."""
    from yahtzee_jax.suite.pettingzoo_env import YahtzeeAEC, YahtzeeParallel

    rng = np.random.default_rng(0)
    if parallel:
        env = YahtzeeParallel(players=players)
        obs, _ = env.reset(seed=0)
        calls, start = 0, time.perf_counter()
        while calls * players < steps:
            if not env.agents:
                obs, _ = env.reset()
            masks = np.stack([obs[agent]["action_mask"] for agent in env.agents])
            actions = dict(zip(env.agents, _numpy_choice(rng, masks), strict=True))
            obs, *_ = env.step(actions)
            calls += 1
        return calls * players / (time.perf_counter() - start)
    env = YahtzeeAEC(players=players)
    env.reset(seed=0)
    decisions, start = 0, time.perf_counter()
    while decisions < steps:
        obs, _, terminated, _, _ = env.last()
        if terminated:
            env.reset()
            continue
        env.step(int(_numpy_choice(rng, obs["action_mask"][None])[0]))
        decisions += 1
    return decisions / (time.perf_counter() - start)


def main() -> None:
    """Run every path and print (and write) decisions per second."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024, help="vmapped episodes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python-steps", type=int, default=2000, help="steps of Python loops")
    parser.add_argument("--note", default="", help="e.g. whether the machine was shared")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    batch, steps, repeats = args.batch, 39, args.repeats
    rows: dict[str, dict[str, Any]] = {}

    def row(name: str, env_id: str, batch: int, rate: float) -> None:
        rows[name] = {"env": env_id, "batch": batch, "steps_per_s": round(rate)}
        print(f"{name:34s} {env_id:16s} batch {batch:5d}  {rate:12,.0f} steps/s", flush=True)

    row("internal: envs.Game (learners)", "game", batch, bench_training_env(batch, steps, repeats))
    for env_id in ("Yahtzee-v0", "YahtzeeMatch-v0"):
        rate = bench_core(env_id, batch, steps, repeats)
        row(f"internal: envs.core {env_id}", env_id, batch, rate)
        row(f"gymnax {env_id}", env_id, batch, bench_gymnax(env_id, batch, steps, repeats))
        vector_steps = max(args.python_steps // 20, 10)
        rate = bench_gymnasium_vector(env_id, batch, vector_steps)
        row(f"gymnasium make_vec {env_id}", env_id, batch, rate)
        rate = bench_gymnasium_single(env_id, args.python_steps)
        row(f"gymnasium make {env_id}", env_id, 1, rate)
    match = "YahtzeeMatch-v0 (2 outside seats)"
    row("pettingzoo AEC", match, 1, bench_pettingzoo(2, args.python_steps, parallel=False))
    row("pettingzoo parallel", match, 1, bench_pettingzoo(2, args.python_steps, parallel=True))
    if args.json:
        cpu = cpu_model()
        result = {
            "what": "decisions per second of random legal play (compile excluded)",
            "machine": {
                "cpu": cpu,
                "cores": os.cpu_count(),
                "backend": jax.default_backend(),
                "jax": jax.__version__,
            },
            "note": args.note,
            "rows": rows,
        }
        write_whole(args.json, json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
