"""DQN by hand: the replay buffer samples only written entries (as (s, s') pairs of one game),
the double-DQN target, the epsilon schedule, the target-network update, the greedy agent's
masking, the config checks, and a short run that beats the random agent."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents import make_random_agent
from yahtzee_jax.algorithms import dqn, get_algorithm
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game import OFFICIAL, State
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.single_run import train

T = OFFICIAL.decisions_per_game  # the quick preset plays official Yahtzee


def small_config(*more: str):
    """DQN on a 16-wide network, 2 games per update, a buffer of 3 updates (234 transitions)."""
    return resolve(
        "quick",
        overrides=[
            "algo.name=dqn",
            "network.hidden_size=16",
            "network.trunk_layers=1",
            "train.games_per_update=2",
            "train.total_games=200",
            f"algo.buffer_size={3 * 2 * T}",
            "algo.batch_size=64",
            *more,
        ],
    )


def numbered_records(update: int, lanes: int = 2) -> dqn.Record:
    """One update's records, time-major [T, lanes]; entry (t, lane) of update u carries the id
    1000 u + 100 lane + t in its action and reward, and `done` on the game's last decision."""
    t = jnp.arange(T)[:, None]
    lane = jnp.arange(lanes)[None, :]
    ids = (1000 * update + 100 * lane + t).astype(jnp.int32)
    states = jax.tree.map(
        lambda leaf: jnp.broadcast_to(leaf, (T, lanes, *leaf.shape)), State.empty(OFFICIAL)
    )
    done = jnp.broadcast_to(t == T - 1, (T, lanes))
    return dqn.Record(states, ids, ids.astype(jnp.float32), done, jnp.zeros((T, lanes)))


def sampled_ids(config, buffer, draws: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the first and second entries of `draws` minibatches of pairs."""
    sample = jax.jit(lambda key: dqn.buffer_sample(config, buffer, key))
    firsts, seconds = [], []
    for key in jax.random.split(jax.random.PRNGKey(0), draws):
        first, second = sample(key)
        firsts.append(np.asarray(first.action))
        seconds.append(np.asarray(second.action))
    return np.concatenate(firsts), np.concatenate(seconds)


def test_buffer_samples_only_written_entries_as_consecutive_pairs():
    """Capacity 3 updates of 2 games. After one add: every sampled s is a written entry with
    its successor in the same game (second id = first id + 1), the last decision of each lane
    (no successor written yet) is never an s, and all 2 x 38 others are drawn. After 5 adds the
    two oldest updates are gone: only ids of updates 2, 3, 4 appear, never an overwritten one."""
    config = small_config()
    add = jax.jit(lambda buffer, records: dqn.buffer_add(config, buffer, records))
    buffer = add(dqn.buffer_init(config, make_context(config).env), numbered_records(0))
    first, second = sampled_ids(config, buffer)
    written = {100 * lane + t for lane in range(2) for t in range(T - 1)}
    assert set(first.tolist()) == written
    np.testing.assert_array_equal(second, first + 1)

    for update in range(1, 5):
        buffer = add(buffer, numbered_records(update))
    first, second = sampled_ids(config, buffer)
    assert set((first // 1000).tolist()) == {2, 3, 4}
    assert set((second // 1000).tolist()) <= {2, 3, 4}
    # A pair crosses a game boundary only from a game's last decision (done), never backwards.
    same_game = second // 100 == first // 100
    np.testing.assert_array_equal(same_game, first % 100 != T - 1)
    np.testing.assert_array_equal(second[same_game], first[same_game] + 1)


def test_double_dqn_target_by_hand():
    """Three transitions, 4 actions, gamma 0.5.

    1. online Q(s') = [1, 5, 3, 0], all legal: online picks a1; target Q(s') = [9, 2, 4, 4]
       -> y = 1 + 0.5 * 2 = 2 (plain DQN would bootstrap from max target 9: y = 5.5).
    2. same s', a1 illegal: online picks a2 -> y = 1 + 0.5 * 4 = 3.
    3. done: y = r = 7 whatever s' holds (here no action is legal at all).
    """
    online = jnp.array([[1.0, 5.0, 3.0, 0.0]] * 3)
    target = jnp.array([[9.0, 2.0, 4.0, 4.0]] * 3)
    legal = jnp.array([[True] * 4, [True, False, True, True], [False] * 4])
    reward = jnp.array([1.0, 1.0, 7.0])
    done = jnp.array([False, False, True])
    y = dqn.double_q_target(reward, done, online, target, legal, 0.5)
    np.testing.assert_array_equal(y, [2.0, 3.0, 7.0])


def test_returns_to_go_and_the_monte_carlo_mix_by_hand():
    """Two lanes of three rewards, [1, 2, 3] and [0, 5, 1]: gamma 1 gives G = [6, 5, 3] and
    [6, 6, 1]; gamma 0.5 gives [2.75, 3.5, 3] and [2.75, 5.5, 1]. With algo.mc_mix = 1 the
    loss's target is G_t x reward_scale whatever the network says; with 0.25 it is a quarter
    of the way from the double-DQN target to it."""
    rewards = jnp.array([[1.0, 0.0], [2.0, 5.0], [3.0, 1.0]])
    np.testing.assert_array_equal(dqn.returns_to_go(rewards, 1.0), [[6, 6], [5, 6], [3, 1]])
    half = dqn.returns_to_go(rewards, 0.5)
    np.testing.assert_array_equal(half, [[2.75, 2.75], [3.5, 5.5], [3, 1]])

    records = numbered_records(0)._replace(return_to_go=jnp.full((T, 2), 150.0))
    first = jax.tree.map(lambda leaf: leaf[0], records)  # s: the two lanes' first decisions
    second = jax.tree.map(lambda leaf: leaf[1], records)
    targets = {}
    for mix in (0.0, 0.25, 1.0):
        context = make_context(small_config(f"algo.mc_mix={mix}"))
        params = init_train_state(context).params
        _, metrics = dqn.td_loss(params, context, params, first, second)
        targets[mix] = float(metrics["q/mean_target"])
    assert targets[1.0] == pytest.approx(150.0, rel=1e-6)
    assert targets[0.25] == pytest.approx(0.75 * targets[0.0] + 0.25 * 150.0, rel=1e-5)


def test_epsilon_schedule_holds_anneals_and_holds():
    """100 updates, 1.0 held for 10, linear to 0.1 over 50, then held: 1, 1, 0.55, 0.1, 0.1."""
    config = small_config(
        "algo.epsilon_start=1.0",
        "algo.epsilon_end=0.1",
        "algo.epsilon_hold=0.1",
        "algo.epsilon_anneal=0.5",
    )
    context = make_context(config)
    assert config.train.total_updates == 100
    values = [float(dqn.epsilon_at(context, jnp.int32(step))) for step in (0, 10, 35, 60, 100)]
    np.testing.assert_allclose(values, [1.0, 1.0, 0.55, 0.1, 0.1], rtol=1e-6)


def test_soft_update_is_polyak_and_tau_one_copies():
    """tau 0.25 moves a quarter of the way; tau 1 gives the online parameters exactly."""
    target, online = {"w": jnp.array([0.0, 4.0])}, {"w": jnp.array([8.0, 0.0])}
    np.testing.assert_allclose(dqn.soft_update(target, online, 0.25)["w"], [2.0, 3.0])
    np.testing.assert_array_equal(dqn.soft_update(target, online, 1.0)["w"], online["w"])


def test_hard_target_update_every_interval_optimizer_steps():
    """2 optimizer steps per update, tau 1, an interval of 4: after the first update (2 steps)
    the target is still the initial network, after the second (4 steps) it is the online
    network of that update. One compiled update for both cases (an interval of 2 and one of
    4 after one update each compiled one program apiece)."""
    config = small_config(
        "algo.gradient_steps=2", "algo.target_tau=1.0", "algo.target_update_interval=4"
    )
    context = make_context(config)
    state = init_train_state(context)
    update = jax.jit(lambda s: dqn.update(context, s))
    first, _ = update(state)
    second, _ = update(first)
    for after, expected in ((first, state.params), (second, second.params)):
        for a, b in zip(
            jax.tree.leaves(after.extra.target_params), jax.tree.leaves(expected), strict=True
        ):
            np.testing.assert_array_equal(a, b)
    for before, after in ((state, first), (first, second)):
        assert not np.array_equal(
            jax.tree.leaves(after.params)[0], jax.tree.leaves(before.params)[0]
        )


def test_greedy_agent_never_takes_an_illegal_action_of_highest_q():
    """The head's bias for scoring Chance is raised by 1e6: the agent scores Chance at the
    first scoring decision of every game, and never picks it where it is illegal (at a keep
    decision or once used): an illegal action would leave the state unchanged and the game
    would end its 39 decisions with a box still open."""
    config = small_config()
    params = init_train_state(make_context(config)).params
    head = max(name for name in params if name.startswith("Dense"))
    chance = NUM_KEEP_ACTIONS + 12
    bias = params[head]["bias"].at[chance].add(1e6)
    params = {**params, head: {**params[head], "bias": bias}}
    agent = get_algorithm(config.algo.name).make_agent(config, params, "dqn")
    records = play_games(agent, 8, seed=0)
    assert (records.turn_categories[:, 0] == 12).all()
    for categories in records.turn_categories:
        assert sorted(categories.tolist()) == list(range(13))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.target_tau=0"], "algo.target_tau=0.0 must be in (0, 1]"),
        (["algo.epsilon_end=1.5"], "algo.epsilon_end=1.5 must be in [0, 1]"),
        (["algo.gamma=1.01"], "algo.gamma=1.01 must be in [0, 1]"),
        (["algo.gradient_steps=0"], "algo.gradient_steps=0 must be >= 1"),
        (["algo.reward_scale=0"], "algo.reward_scale=0.0 must be > 0"),
        (["algo.huber_delta=-1"], "algo.huber_delta=-1.0 must be > 0"),
        (["algo.mc_mix=1.5"], "algo.mc_mix=1.5 must be in [0, 1]"),
        (["algo.epsilon_hold=0.8", "algo.epsilon_anneal=0.5"], "must be <= 1"),
        (["algo.buffer_size=1000"], "algo.buffer_size=1000 must hold one update's transitions"),
        (["algo.batch_size=300000"], "algo.batch_size=300000 must be <= algo.buffer_size"),
        (["network.dropout=0.1"], "network.dropout=0.1 must be 0 for dqn"),
        (["network.roll_head=bernoulli"], "has no meaning for dqn"),
        (["network.upper_head=true"], "network.upper_head=true has no meaning for dqn"),
        (["algo.entropy_roll_start=0.1"], "unknown config key algo.entropy_roll_start"),
    ],
)
def test_bad_dqn_values_are_rejected_in_one_line(overrides, message):
    """Each bad value fails config resolution (before anything compiles) with one line."""
    with pytest.raises(ConfigError) as error:
        resolve("quick", overrides=["algo.name=dqn", *overrides])
    text = str(error.value)
    assert message in text and "\n" not in text


@pytest.mark.slow  # DQN's update is checked fast by the golden dqn case and the registry contract
def test_short_dqn_run_beats_random(tmp_path):
    """6,400 games (100 updates of 64, 16 optimizer steps each) on the quick preset's 128-wide
    network: the greedy policy's mean over 500 games is well above the random agent's (about
    46)."""
    config = resolve(
        "quick",
        overrides=[
            "algo.name=dqn",
            "algo.gradient_steps=16",
            "algo.epsilon_anneal=0.1",
            "train.total_games=6400",
            "train.eval_fraction=1.0",
            "train.final_eval_games=0",
        ],
    )
    summary = train(config, tmp_path, progress=False)
    random_mean = float(np.mean(play_games(make_random_agent("official"), 500, seed=1).total))
    assert summary["last_eval"]["mean"] > 1.5 * random_mean, (summary["last_eval"], random_mean)
