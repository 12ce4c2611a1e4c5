"""The match environment (issues 14, 27): its rollout, reward variants, presets and updates."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card as position
from scripts import EXPERIMENTS, load_experiment_script

from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context, train_step
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs import core, rewards
from yahtzee_jax.envs.match_env import Match, MatchEpisode, MatchView, Seat
from yahtzee_jax.envs.rollout import rollout
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation import matches as two_player
from yahtzee_jax.game.engine import State, legal_action_mask, total_score
from yahtzee_jax.game.multiplayer import MatchState, stack_cards
from yahtzee_jax.game.rules import (
    NUM_KEEP_ACTIONS,
    OFFICIAL,
    Category,
)
from yahtzee_jax.networks import value_head_modules
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.runlog import training_curve

BATCH = 6


def _random_actions(cards: State, keys: jax.Array) -> jax.Array:
    legal = jax.vmap(lambda card: legal_action_mask(card, OFFICIAL))(cards)
    bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(keys)
    return jax.vmap(uniform_legal_action)(legal, bits)


def _learner(view: MatchView, keys: jax.Array):
    return _random_actions(view.card, keys), None


def _opponent(params, own: State, others: State, keys: jax.Array) -> jax.Array:
    return _random_actions(own, keys)


def _keep_views(view, action, moved, extras):
    return view.card, jax.tree.map(lambda leaf: leaf[:, 0], view.others), action, moved.card


@pytest.fixture(scope="module")
def match():
    env = Match(OFFICIAL, FeatureConfig(), (Seat("random", _opponent),), players=2, reward="score")
    keys = jax.random.split(jax.random.key(3), BATCH)
    play = jax.jit(lambda k: rollout(env, _learner, k, None, _keep_views)[:2])
    final, records = jax.device_get(play(keys))
    return final.card, jax.tree.map(lambda leaf: leaf[:, 0], final.others), records


def test_learner_takes_39_decisions_and_both_cards_finish(match):
    """The learner's episode is its 39 decisions, keep, keep, score in every turn; both cards
    are full at the end and the learner's last decision ends its game."""
    learner, opponent, (own, _, action, moved) = match
    assert action.shape == (OFFICIAL.decisions_per_game, BATCH)
    assert np.all(learner.terminated) and np.all(opponent.terminated)
    assert np.all(learner.filled) and np.all(opponent.filled)
    np.testing.assert_array_equal(
        own.roll_index, np.tile([0, 1, 2], OFFICIAL.num_turns)[:, None] + 0 * action
    )
    assert np.all(moved.terminated[-1]) and not np.any(moved.terminated[:-1])


def test_opponent_moves_only_on_its_turns_and_never_touches_the_learner(match):
    """The opponent steps only its own card, only between the learner's turns, and has played
    one turn more than the learner where it sits first (the second lane half)."""
    _, _, (own, other, _, moved) = match
    for field in ("dice", "scores", "filled", "turns_left", "roll_index"):
        np.testing.assert_array_equal(getattr(own, field)[1:], getattr(moved, field)[:-1])
    other_dice = other.dice.reshape(OFFICIAL.num_turns, 3, BATCH, -1)
    assert np.all(other_dice[:, 1:] == other_dice[:, :1])
    turns_played = OFFICIAL.num_turns - other.turns_left.reshape(OFFICIAL.num_turns, 3, BATCH)[:, 0]
    seats = (np.arange(BATCH) >= (BATCH + 1) // 2).astype(int)  # learner first, then second
    np.testing.assert_array_equal(
        turns_played, np.arange(OFFICIAL.num_turns)[:, None] + seats[None]
    )
    assert np.all(other.roll_index == 0)  # the learner only ever sees the opponent between turns


def _scored(box: int, points: int) -> tuple[State, jax.Array, State]:
    before = State.empty(OFFICIAL)
    after = State.empty(OFFICIAL, scores=jnp.zeros(13, jnp.int32).at[box].set(points))
    return before, jnp.int32(NUM_KEEP_ACTIONS + box), after


def test_intermediate_reward_by_hand():
    before, action, after = _scored(8, 25)  # a full house: 25 - 23.125
    reward = rewards.intermediate_rewards(before, action, after)
    assert float(reward) == pytest.approx((25 - 23.125) / 10)
    before, _, after = _scored(0, 3)
    assert float(rewards.intermediate_rewards(before, jnp.int32(5), after)) == 0.0  # a keep


@pytest.mark.parametrize(
    ("reward", "own", "other", "goal", "expected"),
    [
        ("naive", 200, 150, 110, 1.0),
        ("naive", 150, 150, 110, 0.0),
        ("naive", 150, 200, 110, -1.0),
        ("win", 201, 200, 110, 1.0),
        ("win", 150, 200, 110, -1.0),
        ("gradient", 250, 100, 110, 1.0),
        ("gradient", 180, 180, 110, 0.0),
        ("gradient", 180, 230, 110, -0.5),
        ("fixed", 111, 300, 110, 1.0),
        ("fixed", 110, 0, 110, 0.0),
        ("fixed", 109, 0, 110, -1.0),
        ("fixed", 150, 0, 165, 1.0),  # fixed is 110, whatever goal is passed
        ("moving-average", 170, 300, 165, 1.0),
        ("moving-average", 160, 0, 165, -1.0),
    ],
)
def test_terminal_rewards_by_hand(reward, own, other, goal, expected):
    value = rewards.terminal_reward(reward, jnp.int32(own), jnp.int32(other), goal)
    assert float(value) == pytest.approx(expected)


def test_match_rewards_put_the_end_on_the_last_decision():
    """`finish` adds the end-of-match reward at the last decision only: gradient on a loss
    (150 against 190) is -0.4 there, after the chance box's intermediate (30 - 22.286) / 10;
    win is -1 (a loss) or +1, nothing before the end; score leaves the rewards as they are."""
    own = State.empty(OFFICIAL, scores=jnp.zeros(13, jnp.int32).at[12].set(150))
    other = State.empty(OFFICIAL, scores=jnp.zeros(13, jnp.int32).at[12].set(190))
    params = core.EnvParams(rules=OFFICIAL, players=2)

    def episode_of(mine: State, theirs: State) -> MatchEpisode:
        # One lane (group 0: the learner in seat 0), its protocol state built by hand
        env = core.from_match(MatchState(cards=stack_cards([mine, theirs])), params)
        env = jax.tree.map(lambda leaf: leaf[None], env)
        return MatchEpisode(env, env.match.cards.reward, jnp.float32(110.0), None)

    episode = episode_of(own, other)
    steps = jnp.array([[0.0], [(30 - 22.286) / 10]])

    def finished(reward: str, episode: MatchEpisode = episode) -> np.ndarray:
        env = Match(OFFICIAL, FeatureConfig(), (), players=2, reward=reward)
        return np.asarray(env.finish(episode, steps))[:, 0]

    np.testing.assert_allclose(finished("gradient"), [0.0, (30 - 22.286) / 10 - 0.4], rtol=1e-6)
    np.testing.assert_allclose(finished("score"), np.asarray(steps)[:, 0])
    swapped = episode_of(other, own)
    np.testing.assert_allclose(finished("win") - np.asarray(steps)[:, 0], [0.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(
        finished("win", swapped) - np.asarray(steps)[:, 0], [0.0, 1.0], atol=1e-6
    )


def test_moving_goal_is_110_then_recent_mean_plus_20():
    goal = rewards.goal_init()
    assert float(rewards.goal_value(goal)) == 110.0
    goal = rewards.goal_update(goal, jnp.full(60, 50))
    assert float(rewards.goal_value(goal)) == 110.0  # mean 50 + 20 < 110
    goal = rewards.goal_update(goal, jnp.full(60, 200))  # window: 40 x 50, 60 x 200
    assert int(goal.count) == 100
    assert float(rewards.goal_value(goal)) == pytest.approx(0.4 * 50 + 0.6 * 200 + 20)
    goal = rewards.goal_update(goal, jnp.arange(150))  # only the last 100 count
    assert float(rewards.goal_value(goal)) == pytest.approx(np.mean(np.arange(50, 150)) + 20)


@pytest.mark.parametrize("reward", [*rewards.YUAN_REWARDS, "win", "score"])
def test_presets_validate(reward):
    config = resolve("dqn-two-player", None, [f"env.reward={reward}"])
    assert config.env.opponent == "optimal" and config.env.reward == reward
    assert config.env.id == "YahtzeeMatch-v0"
    assert resolve("a2c-win", None, []).env.reward == "win"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.opponent=greedy9"], "env.opponent='greedy9'"),
        (["env.reward=margin"], "env.reward='margin'"),
        (["env.players=1"], "env.players=1"),
        (["env.players=3", "env.opponent=random,optimal,greedy1"], "one per opponent"),
        (["env.opponent_refresh=0"], "env.opponent_refresh=0"),
        (["env.id=YahtzeeDuel-v0"], "env.id='YahtzeeDuel-v0'"),
        (["env.seat=1"], "unknown config key env.seat for env.id=YahtzeeMatch-v0"),
    ],
)
def test_config_errors_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as error:
        resolve("dqn-two-player", None, overrides)
    assert "\n" not in str(error.value)


def _tiny(preset: str, *overrides: str):
    return resolve(
        preset,
        None,
        [
            "network.hidden_size=16",
            "train.games_per_update=4",
            "train.total_games=8",
            "env.opponent=random",
            *overrides,
        ],
    )


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            _tiny(
                "dqn-two-player",
                "algo.buffer_size=400",
                "algo.batch_size=16",
                "algo.gradient_steps=2",
            ),
            marks=pytest.mark.slow,  # DQN in the match: test_golden's fast case
        ),
        pytest.param(
            _tiny(
                "a2c-win",
                "algo.init_from=''",
                "env.reward=moving-average",
                "env.opponent=self",
                "env.opponent_refresh=1",
            ),
            # fast elsewhere: A2C in the match (the critic warm-up test), the frozen self
            # opponent (td-win's contract in test_algorithms), the moving goal (the goal test)
            marks=pytest.mark.slow,
        ),
    ],
    ids=["dqn-gradient-random", "a2c-moving-average-self"],
)
def test_training_updates_run_and_are_finite(config):
    context = make_context(config)
    state = init_train_state(context)
    update = jax.jit(lambda s: train_step(context, s))
    for _ in range(2):
        state, metrics = update(state)
    assert int(state.step) == 2
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(state.params))
    assert all(np.isfinite(float(value)) for value in metrics.values())
    assert 0.0 <= float(metrics["train/win_rate"]) <= 1.0
    # The goal remembers the learner's totals (8 games so far).
    assert int(state.task.goal.count) == 2 * config.train.games_per_update
    if config.env.opponent == "self":  # refreshed every update: the frozen copy is the learner
        for new, frozen in zip(
            jax.tree.leaves(state.params), jax.tree.leaves(state.task.opponent_params), strict=True
        ):
            np.testing.assert_array_equal(new, frozen)
    # The greedy agent plays matches (and, alone, solitaire games) with the wider input.
    result = two_player.evaluate_matches(config, state.params, "random", 6, seed=1, batch_size=4)
    assert result["wins"] + result["draws"] + result["losses"] == 6
    assert result["games_by_seat"] == [3, 3]
    agent = context.algorithm.make_agent(config, state.params, "tiny")
    action = agent.act(agent.params, State.empty(OFFICIAL), jax.random.key(0))
    assert 0 <= int(action) < 45
    # In a match (`play --against`, tournaments) it is asked with the opponent's card: the
    # greedy policy's actions on those pairs; alone, its act sees an empty opponent card.
    own = position((6, 6, 6, 5, 2), {Category.SIXES: 18}, roll_index=2)
    other = position(scores={Category.YAHTZEE: 50, Category.CHANCE: 27})
    owns, others = (jax.tree.map(lambda *leaves: jnp.stack(leaves), *pair)
                    for pair in ((own, own), (other, State.empty(OFFICIAL))))  # fmt: skip
    keys = jax.random.split(jax.random.key(0))
    env = context.env
    view = MatchView(owns, jax.tree.map(lambda leaf: leaf[:, None], others))
    x, legal = env.features(view), env.legal_action_mask(view)
    expected = agent.policy.choose(context.network, state.params, x, legal, owns.roll_index)
    actions = agent.policy(agent.params, owns, view.others, keys)
    np.testing.assert_array_equal(actions, expected)
    assert int(agent.act(agent.params, own, keys[1])) == int(expected[1])


@pytest.mark.parametrize(
    "preset", ["dqn-two-player", pytest.param("a2c-win", marks=pytest.mark.slow)]
)
@pytest.mark.slow  # the goals stay fast by hand: test_terminal_rewards_by_hand and the next
def test_fixed_goal_stays_110_where_the_moving_goal_has_moved(preset):
    """With the remembered totals at 200, `moving-average` compares against 220 and `fixed`
    still against 110 (until stop 22 both learners handed `fixed` the moving goal, so the two
    variants trained identically)."""
    extra = ["algo.init_from=''"] if preset == "a2c-win" else ["algo.buffer_size=400"]
    goals = {}
    for reward in ("fixed", "moving-average"):
        context = make_context(_tiny(preset, f"env.reward={reward}", *extra))
        state = init_train_state(context)
        remembered = rewards.goal_update(rewards.goal_init(), jnp.full(100, 200))
        state = state.replace(task=state.task.replace(goal=remembered))
        _, metrics = jax.jit(lambda s, c=context: c.algorithm.update(c, s))(state)
        goals[reward] = float(metrics["train/goal"])
    assert goals == {"fixed": 110.0, "moving-average": 220.0}


@pytest.mark.slow  # an option no preset sets; A2C's update stays fast without it (test_golden.py)
def test_critic_warmup_moves_only_the_value_head_then_everything():
    """algo.critic_warmup=0.5 of 2 updates: the first changes the value head alone (the policy
    is the start's), the second every parameter group."""
    config = _tiny("a2c-win", "algo.init_from=''", "algo.critic_warmup=0.5", "optim.lr=1e-2")
    context = make_context(config)
    update = jax.jit(lambda s: context.algorithm.update(context, s))
    value_head = value_head_modules(config.network)
    start = init_train_state(context)
    first, metrics = update(start)
    assert float(metrics["schedule/critic_warmup"]) == 1.0
    second, metrics = update(first)
    assert float(metrics["schedule/critic_warmup"]) == 0.0

    def moved(before, after) -> dict[str, bool]:
        return {
            module: any(
                not np.array_equal(a, b)
                for a, b in zip(
                    jax.tree.leaves(before[module]), jax.tree.leaves(after[module]), strict=True
                )
            )
            for module in before
        }

    assert moved(start.params, first.params) == {m: m in value_head for m in start.params}
    assert all(moved(first.params, second.params).values())


def test_critic_warmup_out_of_range_is_a_config_error():
    with pytest.raises(ConfigError, match=r"algo\.critic_warmup=1\.0 must be in \[0, 1\)") as error:
        resolve("a2c-win", None, ["algo.critic_warmup=1.0"])
    assert "\n" not in str(error.value)


def test_training_curves_plot_from_runs_and_saved_curves(tmp_path, capsys):
    """experiments/plot_two_player_curves.py reads a run's logged win rate and mean score as
    moving means over --window updates (worked by hand), adds curves saved by an earlier call,
    writes the PNG and every curve, and answers a run without two-player scalars, or a --final
    for an unknown label, with exit status 2."""
    from yahtzee_jax.runner.runlog import ScalarLog

    # named like a population member's directory: LABEL=RUN splits at the first "="
    run, empty = tmp_path / "lr=1e-4", tmp_path / "solitaire"
    run.mkdir()
    empty.mkdir()
    log = ScalarLog(run)
    for update, (win, score) in enumerate([(0.25, 200.0), (0.75, 210.0), (0.5, 230.0)]):
        log.add("train/win_rate", win, step=64 * (update + 1))
        log.add("train/mean_score", score, step=64 * (update + 1))
    log.close()
    assert training_curve(run, window=2) == {
        "games": [128.0, 192.0],
        "win_rate": [0.5, 0.625],
        "mean_score": [205.0, 220.0],
    }
    # a window longer than the run averages everything it logged
    assert training_curve(run, window=50)["mean_score"] == [pytest.approx(640 / 3)]

    script = load_experiment_script("plot_two_player_curves")
    saved = tmp_path / "saved.json"
    saved.write_text(
        json.dumps({"old": {"games": [1, 2], "win_rate": [0.1, 0.2], "mean_score": [1, 2]}})
    )
    final = tmp_path / "final.json"
    final.write_text(
        json.dumps({"win_rate": 0.4, "win_interval_95": [0.39, 0.41], "mean_score": 240.0})
    )
    out, curves = tmp_path / "curves.png", tmp_path / "curves.json"
    argv = [f"new={run}", "--saved", str(saved), "--final", f"new={final}", "--window", "2"]
    assert script.main([*argv, "--out", str(out), "--json", str(curves)]) == 0
    assert out.stat().st_size > 0 and capsys.readouterr().out.strip() == str(out)
    assert json.loads(curves.read_text())["new"]["win_rate"] == [0.5, 0.625]
    assert set(json.loads(curves.read_text())) == {"old", "new"}

    ScalarLog(empty).close()
    assert script.main([f"solo={empty}", "--out", str(out)]) == 2
    assert "not a two-player run" in capsys.readouterr().err
    assert script.main([f"new={run}", "--final", f"other={final}", "--out", str(out)]) == 2
    assert "--final for a label with no curve: ['other']" in capsys.readouterr().err


def test_win_rate_bars_plot_match_results(tmp_path, capsys, monkeypatch):
    """experiments/plot_win_rates.py draws a bar per LABEL=RESULT.json (or RESULT.json#NAME, an
    ablation's variant) with its interval and answers a result file that cannot be read, or a
    variant it lacks, with exit status 2."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # it imports the curves script's helpers
    script = load_experiment_script("plot_win_rates")
    results = []
    for name, rate in (("win-seeker", 0.514), ("optimal", 0.497)):
        path = tmp_path / f"{name}.json"
        interval = [rate - 0.003, rate + 0.003]
        path.write_text(json.dumps({"win_rate": rate, "win_interval_95": interval, "games": 10}))
        results.append(f"{name}={path}")
    out = tmp_path / "bars.png"
    assert script.main([*results, "--out", str(out)]) == 0
    assert out.stat().st_size > 0 and capsys.readouterr().out.strip() == str(out)
    assert script.main([f"gone={tmp_path / 'missing.json'}", "--out", str(out)]) == 2
    assert "cannot read" in capsys.readouterr().err
    # FILE#NAME: one variant of an ablation's results (experiments/match_open_ablation.py)
    ablation = tmp_path / "ablation.json"
    variant = {"win_rate": 0.51, "win_interval_95": [0.5, 0.52], "games": 10}
    ablation.write_text(json.dumps({"run": "r", "results": {"3+normal": variant}}))
    assert script.main([f"normal={ablation}#3+normal", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert script.main([f"normal={ablation}#9", "--out", str(out)]) == 2
    assert "has no variant '9'" in capsys.readouterr().err


# A solitaire learner training in the match stays fast: test_golden.py, dqn/match-greedy3-gradient
@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper-ppo-50k", "paper-reinforce"])
def test_ppo_and_reinforce_train_in_the_match_against_a_built_in_opponent(preset):
    """Learners written for solitaire train in the match environment with no code of their
    own: three updates against the random agent move every parameter group, stay finite,
    remember the learner's totals for the moving goal and log the match's win rate and scores.
    (greedy1 compiled 5 s longer, the same path: a built-in policy's turn inside the step, which
    test_golden.py's DQN case trains against greedy3, bit for bit.)"""
    config = resolve(
        preset,
        None,
        [
            "network.hidden_size=16",
            "network.trunk_layers=1",
            "train.games_per_update=4",
            "train.total_games=12",
            "env.id=YahtzeeMatch-v0",
            "env.opponent=random",
            "env.reward=win",
        ],
    )
    context = make_context(config)
    start = init_train_state(context)
    blank = jax.tree.map(lambda leaf: leaf[None], context.env.blank_observation())
    assert jax.jit(context.env.features)(blank).shape == (1, context.env.feature_size())
    update = jax.jit(lambda s: train_step(context, s))
    state = start
    for _ in range(3):
        state, metrics = update(state)
    assert int(state.step) == 3 and int(state.task.goal.count) == 12
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(state.params))
    for module in start.params:
        assert not all(
            np.array_equal(a, b)
            for a, b in zip(
                jax.tree.leaves(start.params[module]),
                jax.tree.leaves(state.params[module]),
                strict=True,
            )
        ), module
    assert 0.0 <= float(metrics["train/win_rate"]) <= 1.0
    # whole games of random moves were played (12 of them scored 48.75 on average here)
    assert 20 < float(metrics["train/opponent_mean_score"]) < 100


# make test-slow (issue 45: make test within 10 minutes); 25-50 s on the idle 2-core EPYC
@pytest.mark.slow
def test_three_player_match_of_random_greedy1_and_optimal():
    """A 3-player match environment: random in the learner's seat against greedy1 and the
    optimum. Every card finishes; the seat groups sit the learner first, second and third
    (the opponents seated before it have played their first turn when it first decides); the
    scores order as the agents' strength does (about 46, 105 and 245 in solitaire)."""
    from yahtzee_jax.envs.rollout import agent_policy
    from yahtzee_jax.runner.checkpointing import resolve_agent

    names = ("random", "greedy1", "optimal")
    random, greedy1, optimal = (resolve_agent(name, OFFICIAL) for name in names)
    seats = tuple(Seat(agent.name, agent.policy, agent.params) for agent in (greedy1, optimal))
    env = Match(OFFICIAL, FeatureConfig(), seats, players=3, reward="win")

    def first_look(view, action, moved, extras):
        return OFFICIAL.num_turns - view.others.turns_left  # turns each opponent has played

    keys = two_player.game_keys(0, 0, 30, players=3)
    final, played, rewards = jax.jit(
        lambda k: rollout(env, agent_policy(random.policy, random.params), k, None, first_look)
    )(keys)
    assert np.all(final.card.terminated) and np.all(final.others.terminated)
    # lanes [0, 10): learner first; [10, 20): greedy1 (the next player) sits first... in seat
    # order after the learner's: lanes of group g have the opponents k >= 2 - g seated before
    before = np.asarray(played[0])
    np.testing.assert_array_equal(before[:10], 0)
    np.testing.assert_array_equal(before[10:20], [[0, 1]] * 10)
    np.testing.assert_array_equal(before[20:], 1)
    assert set(np.unique(np.asarray(rewards[-1]))) <= {-1.0, 0.0, 1.0}
    own = np.asarray(total_score(final.card, OFFICIAL))
    others = np.asarray(total_score(final.others, OFFICIAL))
    assert own.mean() < others[:, 0].mean() < others[:, 1].mean()
    result = two_player.evaluate_agent_matches(random, "greedy1", 9, seed=0, players=3)
    assert result["games_by_seat"] == [3, 3, 3]
    assert result["wins"] + result["draws"] + result["losses"] == 9
