"""`yahtzee-jax bench train`: fused training throughput against the network's bare fwd+bwd.

For each preset (its algorithm, network and task) and batch size B (games per update) it times a
compiled chunk of K full updates (rollout with the vmapped engine, loss, optimizer steps, KL and
diagnostics; PPO's epochs x minibatches included) and, in the same run, K bare forward+backward
passes of the same network on the same transitions (the actor-critic loss on a fixed
trajectory with every head on every decision, `a2c.reference_loss`, and a tiny SGD
step so the passes cannot be hoisted out of the loop). The ratio
pipeline / bare says how close the whole pipeline gets to the network's own cost.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from yahtzee_jax.commands.arguments import add_override_argument
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.config import Config
from yahtzee_jax.files import check_writable, write_json

# B = 2,048 took most of 11 minutes and 10 GB of memory on a 2-core CPU: ask for it explicitly
# (`--batches 20,256,2048`) so that the default run stays at a few minutes.
DEFAULT_BATCHES = "20,256"
# K (updates per timed call) is chosen so each call does about this much work: enough to time,
# little enough that the default run (B = 20: K = 20; B = 256: K = 4) stays short.
TRANSITIONS_PER_CHUNK = 39 * 1024  # 1,024 official games of 39 decisions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench train`."""
    parser.add_argument(
        "--preset",
        default="paper-a2c",
        help="config preset(s), comma-separated: algorithm, network and task of each row",
    )
    parser.add_argument(
        "--batches",
        default=DEFAULT_BATCHES,
        help=f"comma-separated games per update (default {DEFAULT_BATCHES}; larger ones, e.g. "
        "2048, take minutes and gigabytes each on a CPU)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per measurement")
    parser.add_argument(
        "--population",
        type=int,
        default=None,
        metavar="N",
        help="instead: time N members (seeds 0..N-1, learning rates 1x..1.7x) trained together "
        "as one vmapped population against N sequential single runs (same total work)",
    )
    parser.add_argument(
        "--widths",
        default=None,
        help="comma-separated network.hidden_size values to measure (default: the preset's)",
    )
    parser.add_argument(
        "--dtypes",
        default=None,
        help="comma-separated network.compute_dtype values to measure, e.g. float32,bfloat16 "
        "(default: the preset's)",
    )
    parser.add_argument(
        "--minibatches",
        type=int,
        default=None,
        metavar="N",
        help="PPO: cut each cell's batch into N minibatches (algo.games_per_minibatch = B / N), "
        "so every B runs the same optimizer steps an update (default: the preset's minibatch)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the update's parts alone: the env with a random policy, the learner's "
        "rollout, and the rest (the learning); with each network's parameter count",
    )
    add_override_argument(parser)
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


def _best_time(function, argument, repeats: int) -> float:
    import jax

    jax.block_until_ready(function(argument))  # warm-up (also checks it runs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(argument))
        times.append(time.perf_counter() - start)
    return min(times)


def transitions_per_update(config: Config) -> int:
    """Decisions one update learns from: its episodes x the task's decisions per episode."""
    from yahtzee_jax.envs import episode_length, episodes_per_update

    return episodes_per_update(config) * episode_length(config)


def updates_per_call(config: Config) -> int:
    """K, the updates one timed call runs: about `TRANSITIONS_PER_CHUNK` transitions, 1 to 20."""
    return max(1, min(20, TRANSITIONS_PER_CHUNK // transitions_per_update(config)))


def time_chunk(config: Config, repeats: int, devices: int = 1) -> dict:
    """Compile and time the fused training chunk (K updates), its batch over `devices`.

    The row: algorithm, task, games per update, K, compile seconds, ms per update, games and
    transitions per second. More devices than are present, or a batch that does not divide
    over them, is a one-line `ConfigError` (`parallel.data_mesh`).
    """
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.envs import episodes_per_update
    from yahtzee_jax.parallel import data_mesh, in_mesh, replicate
    from yahtzee_jax.runner.checkpointing import load_run
    from yahtzee_jax.runner.chunk import make_chunk

    updates = updates_per_call(config)
    context = make_context(config, load_run)  # as `train` builds it (distill reads its teacher)
    mesh = data_mesh(devices, episodes_per_update(config))
    state = replicate(init_train_state(context), mesh)
    with in_mesh(mesh):  # as `train` runs it: compiled and called under the mesh
        start = time.perf_counter()
        chunk = make_chunk(context, updates).lower(state).compile()
        compile_seconds = time.perf_counter() - start
        seconds = _best_time(lambda s: chunk(s)[0].params, state, repeats) / updates
    return {
        "algorithm": config.algo.name,
        "env": config.env.id,
        "games_per_update": config.train.games_per_update,
        "updates_per_call": updates,
        "compile_seconds": compile_seconds,
        "ms_per_update": 1000 * seconds,
        "games_per_second": config.train.games_per_update / seconds,
        "transitions_per_second": transitions_per_update(config) / seconds,
    }


def measure(config, repeats: int, breakdown: bool = False) -> dict:
    """Time one batch size: seconds per update of the pipeline and of the bare fwd+bwd (and,
    with `breakdown`, of its parts: `bench.breakdown`)."""
    import jax

    from yahtzee_jax.algorithms import a2c, actor_critic
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.algorithms.common import lambda_returns
    from yahtzee_jax.algorithms.training_rollout import sample_batch
    from yahtzee_jax.errors import UserError

    if not isinstance(config.algo, actor_critic.ActorCriticConfig):
        # The baseline below is the actor-critic loss's forward+backward; DQN has no such twin.
        raise UserError(
            f"bench train measures the actor-critic learners; algo.name={config.algo.name!r} "
            "has no bare forward+backward baseline yet"
        )
    row = time_chunk(config, repeats)
    pipeline = row["ms_per_update"] / 1000
    transitions = transitions_per_update(config)
    updates = row["updates_per_call"]
    # The baseline is A2C's loss, which reads one value a state: the action-value head's twin
    # is the state-value head (the same network less the offsets D(s, a): one Dense layer)
    network_config = dataclasses.replace(config.network, value_head="state")
    context = make_context(dataclasses.replace(config, network=network_config))
    state = init_train_state(context)

    trajectory, _ = jax.jit(lambda params, key: sample_batch(context, params, key))(
        state.params, state.key
    )
    target = lambda_returns(trajectory.reward, trajectory.value, 0.99, 0.0)

    def bare(params):
        def one(params, _):
            # every head on every decision: the full network's cost, whatever the pipeline skips
            grads, _ = jax.grad(a2c.reference_loss, has_aux=True)(
                params, context, trajectory, target, state.step
            )
            return jax.tree.map(lambda p, g: p - 1e-9 * g, params, grads), None

        return jax.lax.scan(one, params, length=updates)[0]

    bare_compiled = jax.jit(bare).lower(state.params).compile()
    network = _best_time(bare_compiled, state.params, repeats) / updates
    row |= {
        "fwd_bwd_ms": 1000 * network,
        "fwd_bwd_transitions_per_second": transitions / network,
        "pipeline_over_fwd_bwd": pipeline / network,
    }
    if breakdown:
        from yahtzee_jax.commands.bench.breakdown import time_parts

        parts = time_parts(context, state, repeats, _best_time)
        row |= parts | {"learn_ms": row["ms_per_update"] - parts["rollout_ms"]}
    return row


def measure_population(config, size: int, repeats: int) -> dict:
    """Seconds per update of `size` members trained together against one member alone x size."""
    import dataclasses

    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.runner.chunk import make_chunk
    from yahtzee_jax.runner.population import (
        make_population_chunk,
        member_values,
        stack,
        varying_fields,
    )

    updates = updates_per_call(config)
    # Members as a learning-rate sweep over seeds: the learning rate is a traced value.
    members = [
        dataclasses.replace(
            config,
            train=dataclasses.replace(config.train, seed=member),
            optim=dataclasses.replace(config.optim, lr=config.optim.lr * (1 + 0.1 * member)),
        )
        for member in range(size)
    ]
    context = make_context(members[0])
    single = make_chunk(context, updates).lower(init_train_state(context)).compile()
    alone = _best_time(lambda s: single(s)[0].params, init_train_state(context), repeats)
    states = stack([init_train_state(make_context(member)) for member in members])
    values = member_values(members, varying_fields(members))
    start = time.perf_counter()
    chunk = make_population_chunk(members, updates).lower(states, values).compile()
    compile_seconds = time.perf_counter() - start
    together = _best_time(lambda s: chunk(s, values)[0].params, states, repeats)
    return {
        "algorithm": config.algo.name,
        "games_per_update": config.train.games_per_update,
        "population": size,
        "updates_per_call": updates,
        "together_ms_per_update": 1000 * together / updates,
        "sequential_ms_per_update": 1000 * size * alone / updates,
        "speedup": size * alone / together,
        "compile_seconds": compile_seconds,
    }


def _run_population(args: argparse.Namespace, configs: list, record: dict[str, Any]) -> list[dict]:
    """`bench train --population N`: one row per preset, width and batch size, each with the
    run's `record`."""
    print(
        f"{'preset':<20} {'algo':<9} {'width':>5} {'B':>6} {'N':>3} {'together ms':>11} "
        f"{'sequential ms':>13} {'speed-up':>8} {'compile s':>9}"
    )
    results = []
    for preset, config in configs:
        row = {"preset": preset, "width": config.network.hidden_size} | measure_population(
            config, args.population, args.repeats
        )
        row["machine"] = record  # the rows are the file: each says its run
        results.append(row)
        print(
            f"{preset:<20} {row['algorithm']:<9} {row['width']:>5} {row['games_per_update']:>6} "
            f"{row['population']:>3} {row['together_ms_per_update']:>11.1f} "
            f"{row['sequential_ms_per_update']:>13.1f} {row['speedup']:>8.2f} "
            f"{row['compile_seconds']:>9.1f}",
            flush=True,
        )
    print(
        "ms per update of all N members: together = one vmapped population, sequential = N x "
        "one member alone; speed-up = sequential / together"
    )
    return results


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print a table."""
    import jax

    from yahtzee_jax.errors import UserError
    from yahtzee_jax.runner.configs import resolve

    try:
        batches = [int(text) for text in args.batches.split(",")]
    except ValueError:
        raise UserError(f"--batches {args.batches!r} must be comma-separated integers") from None
    if args.repeats < 1:  # none timed: no best time
        raise UserError(f"--repeats must be at least 1 (got {args.repeats})")
    presets = [name.strip() for name in args.preset.split(",") if name.strip()]
    try:
        widths = [int(text) for text in args.widths.split(",")] if args.widths else [None]
    except ValueError:
        raise UserError(f"--widths {args.widths!r} must be comma-separated integers") from None
    dtypes = [text.strip() for text in args.dtypes.split(",")] if args.dtypes else [None]
    # Not given is None: 0 was the hidden default once, and was then taken as not given.
    if args.population is not None and args.population < 1:
        raise UserError(f"--population {args.population} must be >= 1")
    if args.minibatches is not None and (
        args.minibatches < 1 or any(games % args.minibatches for games in batches)
    ):
        raise UserError(
            f"--minibatches {args.minibatches} must be a positive divisor of every batch"
        )
    check_writable(args.json or None)
    configs = [  # all validated before any compile
        (
            preset,
            resolve(
                preset,
                overrides=[
                    *args.overrides,
                    f"train.games_per_update={games}",
                    *([f"network.hidden_size={width}"] if width else []),
                    *([f"network.compute_dtype={dtype}"] if dtype else []),
                    *(
                        [f"algo.games_per_minibatch={games // args.minibatches}"]
                        if args.minibatches
                        else []
                    ),
                ],
            ),
        )
        for preset in presets
        for width in widths
        for dtype in dtypes
        for games in batches
    ]
    print(f"bench train: device {jax.devices()[0].device_kind}")
    record = run_record(args.argv)  # command, commit, CPU and load at the start: once
    if args.population:
        results = _run_population(args, configs, record)
        if args.json:
            write_json(args.json, results)
        return 0
    header = (
        f"{'preset':<20} {'algo':<9} {'width':>5} {'dtype':>8} {'B':>6} {'ms/update':>10} "
        f"{'games/s':>9} "
        f"{'trans/s':>10} {'fwd+bwd ms':>11} {'ratio':>6} {'compile s':>9}"
    )
    print(header)
    results = []
    for preset, config in configs:
        row = {
            "preset": preset,
            "width": config.network.hidden_size,
            "compute_dtype": config.network.compute_dtype,
        } | measure(config, args.repeats, args.breakdown)
        row["machine"] = record  # the rows are the file: each says its run
        results.append(row)
        parts = (
            f" | env {row['env_ms']:.1f} rollout {row['rollout_ms']:.1f} learn "
            f"{row['learn_ms']:.1f} ms, {row['parameters']:,} parameters"
            if args.breakdown
            else ""
        )
        print(
            f"{preset:<20} {row['algorithm']:<9} {row['width']:>5} {row['compute_dtype']:>8} "
            f"{row['games_per_update']:>6} {row['ms_per_update']:>10.1f} "
            f"{row['games_per_second']:>9.1f} {row['transitions_per_second']:>10.0f} "
            f"{row['fwd_bwd_ms']:>11.1f} {row['pipeline_over_fwd_bwd']:>6.2f} "
            f"{row['compile_seconds']:>9.1f}{parts}",
            flush=True,
        )
        if args.json:  # after every row: a run cut short keeps the rows it measured
            write_json(args.json, results)
    print("ratio = full update time / bare forward+backward time on the same transitions")
    if args.breakdown:
        print(
            "env = the game with a random legal policy (features computed, no network); "
            "rollout = the learner's acting; learn = update - rollout"
        )
    return 0
