"""The contract every registered learner keeps, parametrised over the registry: an update jits
and reports finite scalars, a chunk of K updates equals K single updates, a resumed run equals an
uninterrupted one bit for bit, and its agent plays legal games; plus the config checks."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from yahtzee_jax.algorithms import algorithm_names, get_algorithm
from yahtzee_jax.algorithms.algorithm import TrainState, init_train_state, make_context
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game import engine
from yahtzee_jax.runner import loop
from yahtzee_jax.runner.checkpointing import RunCheckpoints
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.single_run import make_chunk

TINY = [
    "network.hidden_size=16",
    "network.trunk_layers=1",
    "train.games_per_update=4",
    "train.total_games=400",
]
EXTRA = {
    "ppo": ["algo.games_per_minibatch=2", "algo.epochs=2"],
    # the tabular learners read the state from Kang's features; a 2^10-row hashed table
    "maxq": ["features.kind=kang", "algo.table_bits=10"],
    "maxq-g1": ["features.kind=kang", "algo.table_bits=10"],
    "distill": ["algo.teacher=tiny-td-planner"],  # read by `tiny_teacher`, not from disk
    # a match learner; self-play, so that no solver table is solved for the tiny runs
    "td-win": ["env.id=YahtzeeMatch-v0", "env.opponent=self"],
}


# The td-planner's turn planner compiles for tens of seconds: its runs of the generic contract
# (chunks, resume, whole games) are slow tests; its update and acting stay in make test here and
# in test_td_planner.py (td-win's: test_td_win.py).
# distill: its td-planner teacher plans every decision of its update.
# maxq-g1: maxq's update, another exploration; td-win: the win planner of td-planner's cost
SLOW_LEARNERS = {"td-planner", "td-win", "maxq-g1", "distill"}


def slow_marked(slow: set[str]) -> list:
    """Every registered learner's name, those in `slow` marked for make test-slow."""
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in slow else name
        for name in algorithm_names()
    ]


REGISTRY_SLOW_MARKED = slow_marked(SLOW_LEARNERS)


def tiny_config(name: str, *more: str):
    """A seconds-long configuration of algorithm `name`."""
    return resolve("quick", overrides=[*TINY, f"algo.name={name}", *EXTRA.get(name, []), *more])


def tiny_teacher(path: str):
    """distill's teacher (the trainer's `load_run`): a fresh width-16 td-planner's (params,
    config), whatever the path."""
    config = tiny_config("td-planner")
    return init_train_state(make_context(config)).params, config


def assert_trees_equal(left, right) -> None:
    """Every leaf identical, bit for bit."""
    for a, b in zip(jax.tree.leaves(left), jax.tree.leaves(right), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_registry_names_match_the_modules():
    """Every registered algorithm answers to its own name and has its own config class."""
    assert set(algorithm_names()) >= {"a2c", "reinforce", "ppo"}
    for name in algorithm_names():
        algorithm = get_algorithm(name)
        assert algorithm.name == name
        assert algorithm.config_class().name == name
    with pytest.raises(ConfigError, match="unknown algorithm 'sarsa'"):
        get_algorithm("sarsa")


def test_the_runner_reads_what_a_learner_asks_from_its_config_class(monkeypatch):
    """What a learner asks of the runner is said by its config class: MAXQ-Q's tables (both
    explorations, one module) skip the chunk's parameter guard, and on a match environment
    td-win's periodic evaluations are matches where A2C's are solitaire games."""
    unguarded = [n for n in algorithm_names() if not get_algorithm(n).config_class.guard_params]
    assert unguarded == ["maxq", "maxq-g1"]
    played = []
    for kind in ("match", "solitaire"):

        def evaluation(*args, kind=kind):
            played.append(kind)
            return [0.0], {}

        monkeypatch.setattr(loop, f"{kind}_evaluation", evaluation)
    for name in ("td-win", "a2c"):
        config = tiny_config(name, "env.id=YahtzeeMatch-v0", "env.opponent=self")
        loop.evaluation_row(config, None, 1, 0.0)
    assert played == ["match", "solitaire"]


def assert_one_update(before: TrainState, after: TrainState, metrics: dict, failure) -> None:
    """One update: the counter advanced, the parameters moved, every metric is one finite float,
    and the guard saw a finite update."""
    assert int(after.step) == int(before.step) + 1
    assert not np.array_equal(jax.tree.leaves(after.params)[0], jax.tree.leaves(before.params)[0])
    assert metrics, "an update must report something"
    np.testing.assert_array_equal(failure, [-1])
    for key, value in metrics.items():
        assert np.shape(value) == (1,), key
        assert np.isfinite(float(value[0])), key


# The contract tests compile only chunks of 1 and 2 updates, the same programs in each test, so
# the session's compilation cache compiles each learner's pair once for all three tests. The
# chunk test checks its first single update too, so `make test` runs this one only for the
# learners whose chunk test is slow (tracing a chunk again costs seconds a learner), and of those
# only for maxq-g1: the planners' updates run fast in their own files (one update each, with the
# solver's tables forbidden: tests/test_td_planner.py, tests/test_td_win.py), and compiling their
# planners again here took 7 and 10 s of `make test`; distill's is slow (its teacher plans every
# decision); tests/test_distill.py runs its update fast.
FAST_UPDATE_TESTS = {"maxq-g1"}


@pytest.mark.parametrize(
    "name",
    [
        name if name in FAST_UPDATE_TESTS else pytest.param(name, marks=pytest.mark.slow)
        for name in algorithm_names()
    ],
)
def test_update_jits_and_reports_finite_scalars(name):
    """One update in a compiled chunk: the counter advances, the parameters move, every metric
    is one finite float per update, and the guard saw a finite update."""
    context = make_context(tiny_config(name), tiny_teacher)
    state = init_train_state(context)
    assert_one_update(state, *make_chunk(context, 1)(state))


# slow: 12 s of make test, cold; the critic's trunk is fast in test_networks.py (which gradient
# reaches which block) and PPO's update in test_golden.py
@pytest.mark.slow
def test_ppo_update_trains_a_critic_of_its_own():
    """PPO with `network.critic_trunk`: one compiled update is sound, the critic's own blocks
    and the policy's trunk both move (the value rows reach the critic's trunk through the
    loss's per-head rows; test_networks.py: which gradient reaches which)."""
    context = make_context(tiny_config("ppo", "network.critic_trunk=true"))
    state = init_train_state(context)
    after, metrics, failure = make_chunk(context, 1)(state)
    assert_one_update(state, after, metrics, failure)
    for module in ("CriticBlock_0", "Block_0"):
        before_leaves = jax.tree.leaves(state.params[module])
        after_leaves = jax.tree.leaves(after.params[module])
        assert any(
            not np.array_equal(a, b) for a, b in zip(before_leaves, after_leaves, strict=True)
        ), module


# The chunk's scan is the runner's, whatever the learner: the tabular learners' updates keep it
# fast here; PPO's, DQN's and A2C's chunks are fast in test_golden.py (each a recorded chunk of
# updates, to the bit: 26 s of make test here, cold) and REINFORCE's (the actor-critic path
# PPO's update also takes) waits for test-slow, its update fast in
# test_checkpoint_resume_is_bit_identical below.
CHUNK_SLOW_MARKED = slow_marked(SLOW_LEARNERS | {"a2c", "reinforce", "ppo", "dqn"})


@pytest.mark.parametrize("name", CHUNK_SLOW_MARKED)
def test_chunk_of_k_updates_equals_k_single_updates(name):
    """A compiled chunk of 2 updates ends where 2 separately compiled single updates end (the
    first of which is a sound update: `assert_one_update`)."""
    context = make_context(tiny_config(name), tiny_teacher)
    state = init_train_state(context)
    chunked, metrics, failure = make_chunk(context, 2)(state)
    single = make_chunk(context, 1)
    first = single(state)
    assert_one_update(state, *first)
    stepwise = first[0]
    stepwise, _, _ = single(stepwise)
    assert all(np.shape(value) == (2,) for value in metrics.values())
    np.testing.assert_array_equal(failure, [-1, -1])  # the guard saw finite updates
    for a, b in zip(jax.tree.leaves(chunked), jax.tree.leaves(stepwise), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)


# a2c's and reinforce's train state is PPO's (parameters, Adam, key, counter, no extra): their
# resume takes the checkpoint path checked fast here for PPO and by the kill test
# (test_checkpoint.py: an a2c run killed and resumed, bit for bit), so they wait for test-slow
# with the slow learners (13 s of make test)
@pytest.mark.parametrize("name", slow_marked(SLOW_LEARNERS | {"a2c", "reinforce"}))
def test_checkpoint_resume_is_bit_identical(name, tmp_path):
    """4 updates straight equal 2 updates, a checkpoint written and read back into a fresh
    state, and 2 more updates: params, optimizer state, key and counter, bit for bit."""
    config = tiny_config(name)
    context = make_context(config, tiny_teacher)
    chunk = make_chunk(context, 2)
    state = init_train_state(context)
    straight = chunk(chunk(state)[0])[0]
    halfway = chunk(state)[0]
    checkpoints = RunCheckpoints(tmp_path, keep=2)
    checkpoints.save(2, halfway, config, None)
    restored = checkpoints.restore(init_train_state(context))
    checkpoints.close()
    assert isinstance(restored, TrainState)
    resumed = chunk(restored)[0]
    assert_trees_equal(straight, resumed)


@pytest.mark.parametrize("name", REGISTRY_SLOW_MARKED)
def test_agent_of_every_algorithm_plays_legal_games(name):
    """The registry's acting agent finishes every game (no illegal action)."""
    config = tiny_config(name)
    context = make_context(config)
    state = init_train_state(context)
    agent = context.algorithm.make_agent(config, state.params, name)
    records = play_games(agent, 16, seed=0)
    assert records.num_games == 16 and records.total.min() >= 0


def test_an_agent_is_a_pytree_of_its_params_and_jits_once_per_kind():
    """An agent's leaves are its parameters' leaves, the rest is static: mapping over it keeps
    its name and rules, and a jitted function taking the whole agent compiles once for two
    agents of one kind with different weights (a second network's agent reuses the program)."""
    config = tiny_config("a2c")
    context = make_context(config)
    first = init_train_state(context).params
    second = jax.tree.map(lambda leaf: leaf + 1.0, first)
    agents = [context.algorithm.make_agent(config, params, "a2c") for params in (first, second)]
    assert len(jax.tree.leaves(agents[0])) == len(jax.tree.leaves(first))
    doubled = jax.tree.map(lambda leaf: 2 * leaf, agents[0])
    assert (doubled.name, doubled.rules, doubled.act) == ("a2c", agents[0].rules, agents[0].act)

    @jax.jit
    def first_actions(agent, states, keys):
        return agent.policy(agent.params, states, no_others(states), keys)

    states = jax.vmap(lambda key: engine.init(key, agents[0].rules))(
        jax.random.split(jax.random.key(0), 4)
    )
    keys = jax.random.split(jax.random.key(1), 4)
    actions = [first_actions(agent, states, keys) for agent in agents]
    assert first_actions._cache_size() == 1
    assert all(action.shape == (4,) for action in actions)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.name=ppo", "algo.clip_epsilon=0"], "algo.clip_epsilon=0.0 must be > 0"),
        (["algo.name=ppo", "algo.epochs=0"], "algo.epochs=0 must be >= 1"),
        (
            ["algo.name=ppo", "algo.games_per_minibatch=7"],
            "algo.games_per_minibatch=7 does not divide train.games_per_update=64",
        ),
        (["algo.gae_lambda=1.5"], "algo.gae_lambda=1.5 must be in [0, 1]"),
        (["algo.name=ppo", "algo.gae_lambda=-0.1"], "algo.gae_lambda=-0.1 must be in [0, 1]"),
        (["algo.name=reinforce", "algo.gae_lambda=0.5"], "must be 1 for REINFORCE"),
        (["algo.name=reinforce", "algo.gamma_start=2"], "algo.gamma_start=2.0 must be in [0, 1]"),
        (["algo.name=sarsa"], "algo.name='sarsa' is not one of: a2c, reinforce, ppo"),
        (["algo.clip_epsilon=0.2"], "unknown config key algo.clip_epsilon"),
        (["algo.shaping_weight=1"], "needs algo.upper_regression_weight > 0"),
        (["algo.upper_regression_weight=1"], "needs network.upper_head=true"),
        (
            ["network.value_head=action"],
            "network.value_head=action needs a learner that reads action values (ppo); a2c",
        ),
        (["network.value_head=q"], "network.value_head='q' is not one of: state, action"),
        (
            ["algo.name=td-planner", "network.critic_trunk=true"],
            "network.critic_trunk needs an actor-critic learner (a2c, ppo, reinforce); td-planner",
        ),
        (
            ["algo.name=dqn", "network.dropout=0", "network.critic_trunk=true"],
            "network.critic_trunk needs an actor-critic learner (a2c, ppo, reinforce); dqn",
        ),
        (["optim.lr=.inf"], "optim.lr=inf must be a finite number"),
        (["algo.gamma=nan"], "algo.gamma=nan must be a finite number"),
        (["env.id=YahtzeeTwoTurns-v0"], "env.id='YahtzeeTwoTurns-v0' is not one of: Yahtzee-v0"),
    ],
)
def test_bad_algorithm_values_are_rejected_in_one_line(overrides, message):
    """Each bad value fails config resolution (before anything compiles) with one line."""
    with pytest.raises(ConfigError) as error:
        resolve("quick", overrides=overrides)
    text = str(error.value)
    assert message in text and "\n" not in text
