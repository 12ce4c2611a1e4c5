"""The win planner (`agents.win_value_planner`) and the td-win learner (`algorithms.td_win`).

The planner's grouped leaves must equal W at every (roll, box) afterstate that the engine's own
step reaches; where the write ends the match the leaf is the exact outcome; the targets are
checked by hand; and the learner must reach no solver table while it trains by self-play and
acts (every loader raises).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card
from test_td_planner import forbid_solver_tables, keep_action

from yahtzee_jax.agents.planner import plan_actions
from yahtzee_jax.agents.win_value_planner import (
    Standing,
    box_leaves,
    last_keep_values,
    leaf_slots,
    leaf_values,
    outcome,
    plan_win_actions,
    standings,
    turn_leaves,
)
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.td_win import planning_policy, win_features, win_targets
from yahtzee_jax.envs.match_env import MatchView
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.engine import LAST_ROLL, batch_of_one, legal_action_mask, step
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, OFFICIAL, Category
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.solver.widget import keep_action_values
from yahtzee_jax.solver.widget_tables import ROLL_OF_CODE, ROLLS, YAHTZEE_ROLLS, dice_code

TINY = [
    "network.hidden_size=16",
    "train.games_per_update=6",
    "train.total_games=600",
]
FULL = {box: 0 for box in Category}


def stack(*cards):
    """A batch (or an opponents' axis) of hand-made cards."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *cards)


def made_up_win(params: None, own: Standing, others: Standing) -> jax.Array:
    """A hand-made win value that reads every field of every card (not a network: elementwise,
    so any batching gives the same bits)."""
    lead = own.total[..., None] - others.total
    theirs = jnp.sum(jax.lax.population_count(others.mask) * 3 + others.upper, axis=-1)
    mine = jax.lax.population_count(own.mask) * 5 + own.upper * 2 + 17 * own.flag
    return jax.nn.sigmoid((jnp.min(lead, axis=-1) + mine - theirs).astype(jnp.float32) / 40)


def naive_turn_leaves(win, params, one_card, others_cards) -> np.ndarray:
    """The leaf of every (roll, box) of one card by the engine's own step, float32[252, boxes]."""
    others = standings(others_cards, OFFICIAL)

    def one(dice, box):
        before = one_card.replace(dice=dice, roll_index=jnp.int32(LAST_ROLL))
        legal = legal_action_mask(before, OFFICIAL)[NUM_KEEP_ACTIONS + box]
        after = step(before, NUM_KEEP_ACTIONS + box, jax.random.key(0), OFFICIAL)
        mine = standings(batch_of_one(after), OFFICIAL)
        value = leaf_values(win, params, mine, batch_of_one(others), OFFICIAL)[0]
        return jnp.where(legal, value, -jnp.inf)

    rolls, boxes = np.meshgrid(np.arange(len(ROLLS)), np.arange(OFFICIAL.num_boxes), indexing="ij")
    values = jax.jit(jax.vmap(one))(jnp.asarray(ROLLS)[rolls.ravel()], jnp.asarray(boxes.ravel()))
    return np.asarray(values).reshape(rolls.shape)


def test_leaf_slots_group_a_turn_into_187_leaves():
    """A plain roll's leaf depends on (box, its base points): 109 such slots over the 13
    boxes (an upper box: 5 counts, its five of a kind apart), and the six five-of-a-kinds keep
    one slot per box each (78): 187 leaves instead of 252 x 13 = 3,276."""
    slots = leaf_slots(OFFICIAL)
    assert len(slots.box) == 109 and int(slots.slot_of.max()) + 1 == 187
    plain = np.setdiff1d(np.arange(len(ROLLS)), YAHTZEE_ROLLS)
    assert np.all(slots.box[slots.slot_of[plain]] == np.arange(OFFICIAL.num_boxes))
    assert np.all(np.bincount(slots.box)[: OFFICIAL.num_upper] == 5)


@pytest.mark.parametrize("case", ["early", "jokers", "last-turn-sitting-last"])
def test_grouped_leaves_equal_the_naive_evaluation(case):
    """On a hand-made card against two opponents, the grouped leaves equal, bit for bit, the
    win value (or the exact outcome) at the afterstate the engine's step reaches from every
    (roll, box): an early card; a card with 50 in the Yahtzee box and Threes written (the
    five-of-a-kinds' Joker points and +100); the last turn with every other card full."""
    if case == "early":
        own = card(scores={Category.ONES: 2, Category.SIXES: 24, Category.FULL_HOUSE: 25})
        others = stack(card(scores={Category.TWOS: 8}), card(scores={Category.CHANCE: 22}))
    elif case == "jokers":
        own = card(scores={Category.YAHTZEE: 50, Category.THREES: 9, Category.FOURS: 16})
        others = stack(card(scores={Category.FIVES: 20}), card(scores={Category.ONES: 4}))
    else:
        own = card(
            scores={box: 0 for box in Category if box != Category.CHANCE} | {Category.SIXES: 24}
        )
        others = stack(card(scores={**FULL, Category.CHANCE: 30}), card(scores=FULL))
    table = batch_of_one(standings(others, OFFICIAL))
    grouped = turn_leaves(made_up_win, None, batch_of_one(own), table, OFFICIAL)[0][..., 0]
    np.testing.assert_array_equal(
        np.asarray(grouped), naive_turn_leaves(made_up_win, None, own, others)
    )
    if case == "last-turn-sitting-last":  # exact outcomes only: the chance total against 54
        assert set(np.unique(np.asarray(grouped))) <= {-np.inf, 0.0, 0.5, 1.0}


def test_outcome_counts_a_tie_for_the_best_as_half():
    """Beating every other total is 1, tying the best 1/2, below it 0 (three players)."""
    others = jnp.array([[100, 120], [120, 120], [90, 130]])
    np.testing.assert_array_equal(outcome(jnp.array([121, 120, 129]), others), [1.0, 0.5, 0.0])


def sitting_last(dice, deficit, roll_index, open_box=Category.FOURS):
    """The learner's last turn, sitting last: only `open_box` open, the opponent done
    `deficit` points ahead (its card full; the learner's other boxes 0 but one 40)."""
    written = {box: 0 for box in Category if box != open_box}
    holder = Category.CHANCE if open_box != Category.CHANCE else Category.LARGE_STRAIGHT
    own = card(dice, {**written, holder: 40}, roll_index)
    opponent = card(scores={**FULL, Category.CHANCE: 40 + deficit})
    return batch_of_one(own), batch_of_one(batch_of_one(opponent))


@pytest.mark.parametrize(("deficit", "value"), [(13, 0.0), (12, 0.5), (11, 1.0)])
def test_the_last_write_of_the_last_seat_is_the_exact_outcome(deficit, value):
    """Sitting last, one box (Fours) left, 4-4-4-1-2 to score: its 12 points lose to a 13-point
    deficit, draw (1/2) against 12, win against 11; the leaf is that outcome, not W (which says
    0.3 everywhere)."""
    own, others = sitting_last((4, 4, 4, 1, 2), deficit, LAST_ROLL)

    def constant(params, mine, theirs):
        return jnp.full(mine.mask.shape, 0.3)

    leaves = box_leaves(constant, None, own, standings(others, OFFICIAL), OFFICIAL)[0][0]
    assert float(leaves[Category.FOURS]) == value
    assert np.all(np.isneginf(np.delete(np.asarray(leaves), Category.FOURS)))


def test_it_keeps_what_wins_not_what_scores_most():
    """Sitting last with one re-roll left. Fours left, 4-4-4-1-2, 13 behind: only a fourth 4
    wins (11/36 with two dice), and the planner keeps the three 4s at that value. Chance left,
    3-3-3-3-4 (16), 15 behind: keeping everything wins for sure, so it keeps everything, where
    the points-maximising planner (zero future) re-rolls the four 3s (18 expected)."""
    own, others = sitting_last((4, 4, 4, 1, 2), 13, 1)
    keep = last_keep_values(made_up_win, None, own, others, OFFICIAL)
    roll = ROLL_OF_CODE[int(dice_code(np.asarray(own.dice[0])))]
    values = np.asarray(keep_action_values(keep[:, 0, 0], roll, jnp))
    assert values[keep_action(2, 3, 4)] == pytest.approx(11 / 36, abs=1e-6)
    assert int(np.argmax(values)) == keep_action(2, 3, 4)
    own, others = sitting_last((3, 3, 3, 3, 4), 15, 1, Category.CHANCE)
    action = plan_win_actions(made_up_win, None, own, others, OFFICIAL)
    assert int(action[0]) == keep_action(0, 1, 2, 3, 4)

    def no_future(params, mask, upper, flag):
        return jnp.zeros(mask.shape)

    assert int(plan_actions(no_future, None, own, OFFICIAL)[0]) == keep_action(4)


def test_a_decided_match_is_played_for_points():
    """Where every choice wins for sure (W saturated at 1 for every afterstate: the match is
    decided), the planner takes the choice worth the most points, not the first of equal
    chances. Fours, Yahtzee and Chance open: 6-6-6-6-6 goes in the Yahtzee box (50; Chance 30,
    Fours 0). 6-6-6-6-1 with one re-roll: re-rolling the 1 makes 50 with a 6 and 24 + d in
    Chance otherwise, (50 + 25 + 26 + 27 + 28 + 29) / 6 = 30.83 expected, more than any other
    keep (keeping all five: 25), so it keeps the four 6s; so it does with two re-rolls too."""

    def decided(params, mine, theirs):
        return jnp.ones(mine.mask.shape)

    open_boxes = (Category.FOURS, Category.YAHTZEE, Category.CHANCE)
    scores = {box: 0 for box in Category if box not in open_boxes}
    opponent = batch_of_one(card(scores={**FULL}))
    own = stack(
        card((6, 6, 6, 6, 6), scores, LAST_ROLL),
        card((6, 6, 6, 6, 1), scores, 0),
        card((6, 6, 6, 6, 1), scores, 1),
    )
    action = plan_win_actions(decided, None, own, stack(opponent, opponent, opponent), OFFICIAL)
    four_sixes = keep_action(1, 2, 3, 4)  # the dice sorted: 1-6-6-6-6
    np.testing.assert_array_equal(
        action, [NUM_KEEP_ACTIONS + Category.YAHTZEE, four_sixes, four_sixes]
    )
    own = batch_of_one(card((6, 6, 6, 6, 1), scores, 1))
    keep = last_keep_values(decided, None, own, batch_of_one(opponent), OFFICIAL)
    roll = ROLL_OF_CODE[int(dice_code(np.asarray(own.dice[0])))]
    points = np.asarray(keep_action_values(keep[:, 0, 1], roll, jnp))
    assert points[four_sixes] == pytest.approx(185 / 6, abs=1e-5)
    assert points[keep_action(0, 1, 2, 3, 4)] == pytest.approx(25.0)


def test_win_targets_of_a_three_turn_sequence():
    """Three afterstates with W = 0.6, 0.3, 0.8 and the match won (1): Monte Carlo is 1
    everywhere; TD(0) is W of the next afterstate (the last one: the outcome); TD(0.5) by hand
    y_2 = 1, y_1 = 0.5 x 0.8 + 0.5 x 1 = 0.9, y_0 = 0.5 x 0.3 + 0.5 x 0.9 = 0.6. A last
    afterstate that ends the match holds the outcome as its value, which TD(0) passes back."""
    value = jnp.array([[0.6], [0.3], [0.8]])
    result = jnp.array([1.0])
    np.testing.assert_allclose(win_targets("mc", 0.5, value, result)[:, 0], [1, 1, 1])
    np.testing.assert_allclose(win_targets("td", 0.0, value, result)[:, 0], [0.3, 0.8, 1.0])
    np.testing.assert_allclose(win_targets("td", 0.5, value, result)[:, 0], [0.6, 0.9, 1.0])
    np.testing.assert_allclose(win_targets("td", 1.0, value, result)[:, 0], [1, 1, 1])
    ended = jnp.array([[0.6], [0.3], [0.5]])  # sat last and drew: W(a_2) is the exact 1/2
    np.testing.assert_allclose(
        win_targets("td", 0.0, ended, jnp.array([0.5]))[:, 0], [0.3, 0.5, 0.5]
    )


def test_win_features_of_a_hand_made_table():
    """Own card 5 boxes filled and 120 points against opponents at 100 and 150: the leads
    (+0.2, -0.3) and the lead over the best (-0.3) close the input, 20 + 2 x 20 + 3 wide."""
    own = Standing(*map(jnp.int32, (31, 10, 0, 120)))
    others = Standing(*(jnp.int32(x) for x in ([1, 3], [1, 3], [0, 1], [100, 150])))
    x = win_features(own, others, OFFICIAL)
    assert x.shape == (63,)
    np.testing.assert_allclose(x[-3:], [0.2, -0.3, -0.3], rtol=1e-6)


def self_play_config(players: int = 2, *extra: str):
    """A tiny td-win in self-play (no solver table needed by the environment either)."""
    overrides = [*TINY, "env.opponent=self", f"env.players={players}", *extra]
    return resolve("td-planner-win", overrides=overrides)


# Three players in the slow suite: its planners compile for 18 s where two players' take 9.
@pytest.mark.parametrize("players", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_self_play_training_and_play_read_no_solver_table(monkeypatch, players):
    """With every solver table loader raising (`test_td_planner.forbid_solver_tables`), one
    td-win update of self-play runs (the learner plans every decision, its frozen copies plan
    theirs reading the whole table), the same again to the bit (another key: other games), and
    the acting agent plays a legal move at each kind of decision against the other cards and
    refuses a table of one player more in one line."""
    config = self_play_config(players)
    forbid_solver_tables(monkeypatch)
    context = make_context(config)
    state = init_train_state(context)
    update = jax.jit(lambda s: context.algorithm.update(context, s))
    new_state, metrics = update(state)
    assert int(new_state.step) == 1 and np.isfinite(float(metrics["loss/win"]))
    again, metrics_again = update(state)  # deterministic per key; another key, other games
    assert jax.tree.all(jax.tree.map(np.array_equal, new_state.params, again.params))
    assert all(float(metrics[name]) == float(metrics_again[name]) for name in metrics)
    _, other = update(state.replace(key=jax.random.key_data(jax.random.key(7))))
    assert float(other["train/mean_score"]) != float(metrics["train/mean_score"])
    agent = context.algorithm.make_agent(config, new_state.params, "td-win")
    own = stack(card(roll_index=0), card(roll_index=1), card(roll_index=2))

    def others(count: int):
        return jax.tree.map(lambda leaf: jnp.stack([leaf] * count, axis=1), own)

    keys = jax.random.split(jax.random.key(0), 3)
    actions = jax.jit(agent.policy)(agent.params, own, others(players - 1), keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(own, agent.rules)
    assert bool(jnp.all(legal[jnp.arange(3), actions]))
    with pytest.raises(ConfigError, match=f"trained for {players}-player matches"):
        agent.policy(agent.params, own, others(players), keys)


@pytest.mark.slow
def test_the_training_policy_plays_the_agents_moves():
    """The training policy (the turn's keep values shared by its two keeps, exploration 0)
    and the acting agent's policy (each decision on its own) play the same matches."""
    context = make_context(self_play_config(2))
    state = init_train_state(context)
    agent = context.algorithm.make_agent(context.config, state.params, "td-win")
    keys = episode_keys(jax.random.key(3), 0, 4)

    def agent_policy(view: MatchView, keys: jax.Array):
        return agent.policy(agent.params, view.card, view.others, keys), None

    def play(policy, by_turn):
        final, _, _ = rollout(context.env, policy, keys, state.task, by_turn=by_turn)
        return final.card.scores

    trained = jax.jit(lambda: play(planning_policy(context, state.params, 0.0), True))()
    acted = jax.jit(lambda: play(agent_policy, False))()
    np.testing.assert_array_equal(np.asarray(trained), np.asarray(acted))


def test_a_seat_that_sees_the_table_reads_the_players_after_it():
    """Three players: opponent 0 (the player after the learner) sees [opponent 1, learner],
    opponent 1 sees [learner, opponent 0], each tagged by its Chance box."""
    context = make_context(self_play_config(3))
    tagged = [card(scores={Category.CHANCE: value}) for value in (10, 20, 30)]
    learner = batch_of_one(tagged[0])
    others = batch_of_one(stack(tagged[1], tagged[2]))
    seen = [
        context.env._table(others, learner, 0, 1, k).scores[0, :, Category.CHANCE] for k in (0, 1)
    ]
    np.testing.assert_array_equal(np.asarray(seen), [[30, 10], [10, 20]])


# (override, what the one-line refusal says)
REFUSALS = {
    "train.task=game": "td-win learns matches (env.id=YahtzeeMatch-v0",  # the old form
    "env.reward=score": "td-win learns the win (env.reward=win)",
    "network.dropout=0.1": "network.dropout must be 0 for td-win",
    "algo.target=expected": "algo.target='expected' is not one of: mc, td",
    "algo.td_lambda=2": "algo.td_lambda=2.0 not in [0, 1]",
    "algo.epsilon=-0.1": "algo.epsilon=-0.1 not in [0, 1]",
}


@pytest.mark.parametrize("override", REFUSALS)
def test_bad_td_win_values_are_rejected_in_one_line(override):
    """Each bad value fails config resolution with one line."""
    refusal = refused([*TINY, override])
    assert REFUSALS[override] in refusal and "\n" not in refusal


def refused(overrides: list[str]) -> str:
    """The `ConfigError` message of resolving the preset with `overrides`."""
    with pytest.raises(ConfigError) as error:
        resolve("td-planner-win", overrides=overrides)
    return str(error.value)
