"""The algorithm protocol: what every learner provides, and the state and context it works on.

An `Algorithm` is one module's public face in the registry (`algorithms/__init__.py`): its name,
its config section class, its update, how many optimizer steps an update takes, its acting
(evaluation) agent and, optionally, the network it trains and the `extra` state it starts with.
Config validation, `train.py`, checkpointing and evaluation only ever talk to this interface.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.algorithms.schedules import learning_rate_schedule
from yahtzee_jax.config import AlgoConfig, Config
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.networks import CRITIC_BLOCK, VALUE_OUTPUT, YahtzeeNet


@struct.dataclass
class TrainState:
    """Everything a run needs to continue exactly: weights, optimizer, rng, counter, extras.

    `extra` holds what an algorithm keeps beside the network (a target network, a replay
    buffer, ...); it is an empty dict for the actor-critic learners. `task` is what the
    environment keeps across updates (a match's moving goal and frozen opponent).
    """

    params: Any
    opt_state: optax.OptState
    key: jax.Array  # raw uint32[2] key data (checkpoint friendly)
    step: jax.Array  # updates done, int32
    extra: Any = struct.field(default_factory=dict)
    task: Any = struct.field(default_factory=dict)


class Context(NamedTuple):
    """Static pieces of a run (hashable config, modules and schedules), closed over by `jit`."""

    config: Config
    rules: Rules
    network: nn.Module  # the algorithm's `make_network(config)`; YahtzeeNet for actor-critics
    optimizer: optax.GradientTransformation
    learning_rate: optax.Schedule  # a function of the optimizer step, not of the update
    algorithm: Algorithm
    env: Environment
    # What the update reads but never trains, closed over as constants (distill: its teacher);
    # None for every other learner (`Algorithm.make_frozen`)
    frozen: Any = None


Metrics = dict[str, jax.Array]
# load_run(path) -> (params, config) of a trained run directory's newest checkpoint: the
# runner's reader (`runner.checkpointing.load_run`), handed down to a learner that reads a run
RunLoader = Callable[[str], tuple[Any, Config]]


def actor_critic_network(config: Config) -> nn.Module:
    """The paper's shared-trunk policy/value network (the default `Algorithm.make_network`),
    its score head as wide as the run's card."""
    return YahtzeeNet(config.network, envs.rules_of(config).num_boxes)


def no_extra(context: Context, params: Any) -> dict:
    """Nothing kept beside the network (the default `Algorithm.init_extra`)."""
    return {}


def no_frozen(config: Config, load_run: RunLoader | None) -> None:
    """Nothing read beside the train state (the default `Algorithm.make_frozen`)."""
    return None


def fresh_params(context: Context, key: jax.Array) -> Any:
    """The network's initial parameters on the environment's input (default `init_params`)."""
    dummy = jnp.zeros((1, context.env.feature_size()), jnp.float32)
    return context.network.init(key, dummy)["params"]


def widen_warm_params(context: Context, source: Any, same_task: bool) -> Any:
    """An actor-critic warm start (the default `Algorithm.warm_params`): the source's weights,
    zero weights on the inputs it lacks (a match's opponent groups: the same policy at the
    start) and, unless the source learned this very task (`same_task`: its task, rules and
    reward, and so its critic's scale), a zeroed value output."""
    params = jax.tree.map(np.asarray, source)
    extra_rows = context.env.feature_size() - params["Block_0"]["Dense_0"]["kernel"].shape[0]
    for block in ("Block_0", f"{CRITIC_BLOCK}0"):  # each trunk's first layer reads the features
        if block in params:
            first = params[block]["Dense_0"]["kernel"]
            params[block]["Dense_0"]["kernel"] = np.concatenate(
                [first, np.zeros((extra_rows, first.shape[1]), first.dtype)]
            )
    # A zero critic would make the first TD(0) advantages the bare rewards and undo a trained
    # policy: it is zeroed only where the source's values mean something else.
    if not same_task or extra_rows:
        value = params[VALUE_OUTPUT]
        params[VALUE_OUTPUT] = {name: np.zeros_like(leaf) for name, leaf in value.items()}
    return jax.tree.map(jnp.asarray, params)


def same_warm_params(context: Context, source: Any, same_task: bool) -> Any:
    """A warm start that continues the source's network as it is (td-planner's value and
    distribution networks): every array must have the fresh network's shape."""
    fresh = jax.eval_shape(
        lambda key: context.algorithm.init_params(context, key), jax.random.PRNGKey(0)
    )
    shapes = jax.tree.map(np.shape, source)
    same = jax.tree.structure(source) == jax.tree.structure(fresh) and shapes == jax.tree.map(
        lambda leaf: leaf.shape, fresh
    )
    if not same:
        raise ConfigError(
            f"algo.init_from={context.config.algo.init_from!r}: its network's shapes differ from "
            "this run's (the same network section and algo.score_bins are needed)"
        )
    return jax.tree.map(jnp.asarray, source)


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A learner as the rest of the package sees it (one instance per algorithm module)."""

    name: str
    config_class: type[AlgoConfig]
    # update(context, state) -> (state, scalar metrics): one learning update (rollout included)
    update: Callable[[Context, TrainState], tuple[TrainState, Metrics]]
    # make_agent(config, params, name) -> the acting agent (the one policy signature):
    # evaluation agents and the frozen `self` seat (params None: the task state's). A learner
    # acting on features passes `acting.GreedyAgents(its argmax)`; a planner its own
    make_agent: Callable[[Config, Any, str], Agent]
    # optimizer steps one update takes (PPO: epochs x minibatches); schedules count these
    optimizer_steps_per_update: Callable[[Config], int] = lambda config: 1
    # make_network(config) -> the Flax module whose parameters are `TrainState.params`
    make_network: Callable[[Config], nn.Module] = actor_critic_network
    # init_extra(context, fresh params) -> the initial `TrainState.extra` (replay buffer, target
    # network, ...); it fixes the structure a checkpoint is restored into
    init_extra: Callable[[Context, Any], Any] = no_extra
    # init_params(context, key) -> the initial `TrainState.params` (a wider input, a warm start)
    init_params: Callable[[Context, jax.Array], Any] = fresh_params
    # warm_params(context, the `algo.init_from` run's parameters, whether that run learned the
    # same task, rules and reward) -> the first parameters of a warm-started run (for learners
    # whose config has `init_from`)
    warm_params: Callable[[Context, Any, bool], Any] = widen_warm_params
    # make_optimizer(config, schedule) -> the optimizer of `TrainState.opt_state`; None: Adam
    # (`make_optimizer`). Learners that update their tables or weights by their own rule (the
    # tabular MAXQ-Q, perceptron Q(lambda)) pass one that keeps no state
    make_optimizer: Callable[[Config, optax.Schedule], optax.GradientTransformation] | None = None
    # make_frozen(config, load_run) -> `Context.frozen`, built once per context: what the update
    # reads but never trains (distill: its teacher, read through `load_run` from its run
    # directory; the checkpoints are the runner's, a floor above the algorithms)
    make_frozen: Callable[[Config, RunLoader | None], Any] = no_frozen


def make_optimizer(config: Config, learning_rate: optax.Schedule) -> optax.GradientTransformation:
    """Adam with optional global-norm clipping (section 4.3.3)."""
    clip = config.optim.max_grad_norm
    return optax.chain(
        optax.clip_by_global_norm(clip) if clip > 0 else optax.identity(),
        optax.adam(learning_rate),
    )


def make_context(config: Config, load_run: RunLoader | None = None) -> Context:
    """The static pieces of a run: algorithm, environment, network, optimizer, schedule and
    the algorithm's frozen pieces (`load_run` reads the runs they come from; the trainer's)."""
    from yahtzee_jax.algorithms import get_algorithm
    from yahtzee_jax.algorithms.acting import match_seats

    algorithm = get_algorithm(config.algo.name)
    optimizer_steps = config.train.total_updates * algorithm.optimizer_steps_per_update(config)
    learning_rate = learning_rate_schedule(config.optim, optimizer_steps)
    network = algorithm.make_network(config)
    return Context(
        config=config,
        rules=envs.rules_of(config),
        network=network,
        optimizer=(algorithm.make_optimizer or make_optimizer)(config, learning_rate),
        learning_rate=learning_rate,
        algorithm=algorithm,
        env=envs.make(config, match_seats(config)),
        frozen=algorithm.make_frozen(config, load_run),
    )


def init_train_state(context: Context, params: Any = None) -> TrainState:
    """Fresh parameters (or the given ones: a warm start), optimizer state, rng and the
    algorithm's and the environment's extras, from the config's seed."""
    config = context.config
    params_key, train_key = jax.random.split(jax.random.PRNGKey(config.train.seed))
    if params is None:
        params = context.algorithm.init_params(context, params_key)
    return TrainState(
        params=params,
        opt_state=context.optimizer.init(params),
        key=train_key,
        step=jnp.int32(0),
        extra=context.algorithm.init_extra(context, params),
        task=context.env.init_task(params),
    )


def train_step(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One learning update, then the environment's own bookkeeping (a `self` opponent's
    refresh): what the compiled chunk runs."""
    state, metrics = context.algorithm.update(context, state)
    return state.replace(
        task=context.env.after_update(state.task, state.params, state.step)
    ), metrics


def no_optimizer(config: Config, learning_rate: optax.Schedule) -> optax.GradientTransformation:
    """An optimizer with no state (`Algorithm.make_optimizer` of learners with their own rule)."""
    return optax.set_to_zero()
