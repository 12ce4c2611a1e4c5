"""Rules are data: a hand-made box table that is not Yahtzee's plays through the whole stack.

The table is Chang's 12-box Yacht (seed 004) without its upper bonus: six upper boxes, full house
(sum of all dice), four of a kind (sum of the four), little straight 1-5 and big straight 2-6
(30 each), choice and yacht (50). What this shows, with no new code path for the game:
- each box scores hand-made rolls as its rule text says, and the jitted scorer agrees with the
  table's plain-Python scorer on all 252 rolls for every scoring kind (a second table holds each
  kind and score mode: one pair, two pairs, n of a kind, full house, straights, chance);
- the card, the actions, the features, the network's score head and the solver's tables are all
  sized from the table (12 boxes, 44 actions, 36 decisions);
- a random game runs to its end in exactly 36 decisions, filling every box once, its rewards
  summing to its total; the exact solver values its positions (hand-checked at the last box) and
  its optimal agent plays a whole game.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.agents.agent import make_random_agent
from yahtzee_jax.agents.widget_agents import make_greedy_agent, make_optimal_agent
from yahtzee_jax.config import FeatureConfig, NetworkConfig
from yahtzee_jax.envs.features import feature_size, features
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import (
    OFFICIAL,
    State,
    base_scores,
    face_counts,
    init,
    legal_action_mask,
    step,
    total_score,
)
from yahtzee_jax.game.rules import (
    ALL_DICE,
    MATCHED_DICE,
    UPPER_BOXES,
    Box,
    Joker,
    Kind,
    Rules,
)
from yahtzee_jax.networks import YahtzeeNet, init_params
from yahtzee_jax.solver import advise, make_position, solve
from yahtzee_jax.solver.value_table import cache_file

YACHT = Rules(
    "yacht-without-bonus",
    yahtzee_bonus=False,
    joker=Joker.NONE,
    boxes=(
        *UPPER_BOXES,
        Box("full_house", Kind.FULL_HOUSE, score=ALL_DICE),
        Box("four_of_a_kind", Kind.OF_A_KIND, 4, MATCHED_DICE),
        Box("little_straight", Kind.STRAIGHT, 5, 30, lowest=1),
        Box("big_straight", Kind.STRAIGHT, 5, 30, lowest=2),
        Box("choice", Kind.CHANCE),
        Box("yacht", Kind.OF_A_KIND, 5, 50),
    ),
    upper_bonus_points=0,
)
# Every scoring kind and score mode once (17 boxes): Yatzy's boxes and Yahtzee's, side by side.
EVERY_KIND = Rules(
    "every-kind",
    yahtzee_bonus=False,
    joker=Joker.NONE,
    boxes=(
        *UPPER_BOXES,
        Box("one_pair", Kind.OF_A_KIND, 2, MATCHED_DICE),
        Box("two_pairs", Kind.TWO_PAIRS, score=MATCHED_DICE),
        Box("three_alike", Kind.OF_A_KIND, 3, MATCHED_DICE),
        Box("four_alike_all", Kind.OF_A_KIND, 4),
        Box("full_house_sum", Kind.FULL_HOUSE),
        Box("full_house_25", Kind.FULL_HOUSE, score=25),
        Box("four_run", Kind.STRAIGHT, 4, 15),
        Box("low_run", Kind.STRAIGHT, 5, 15, lowest=1),
        Box("high_run", Kind.STRAIGHT, 5, 20, lowest=2),
        Box("chance", Kind.CHANCE),
        Box("yatzy", Kind.OF_A_KIND, 5, 50),
    ),
    upper_bonus_threshold=63,
    upper_bonus_points=50,
)


def test_derived_sizes_follow_the_table() -> None:
    """12 boxes: 12 turns, 36 decisions, 44 actions; maxima by scoring every roll."""
    assert (YACHT.num_boxes, YACHT.num_upper, YACHT.num_turns) == (12, 6, 12)
    assert (YACHT.decisions_per_game, YACHT.num_actions, YACHT.yahtzee_box) == (36, 44, 11)
    assert YACHT.box_max_scores == (5, 10, 15, 20, 25, 30, 28, 24, 30, 30, 30, 50)
    assert OFFICIAL.box_max_scores == (5, 10, 15, 20, 25, 30, 30, 30, 25, 30, 40, 50, 30)
    assert OFFICIAL.max_total_without_bonuses == 375  # Yuan's score-difference scale
    assert cache_file(YACHT).name != cache_file(OFFICIAL).name
    assert cache_file(OFFICIAL).name == "values-v2-official-bonus1-joker_forced.npz"


@pytest.mark.parametrize(
    ("dice", "lower"),
    [
        # full house, four of a kind, little straight, big straight, choice, yacht
        ((2, 2, 3, 3, 3), (13, 0, 0, 0, 13, 0)),
        ((5, 5, 5, 5, 2), (0, 20, 0, 0, 22, 0)),
        ((1, 2, 3, 4, 5), (0, 0, 30, 0, 15, 0)),
        ((2, 3, 4, 5, 6), (0, 0, 0, 30, 20, 0)),
        ((6, 6, 6, 6, 6), (0, 24, 0, 0, 30, 50)),  # five alike is no full house here
        ((1, 2, 3, 4, 6), (0, 0, 0, 0, 16, 0)),  # a four-run is no little straight in Yacht
    ],
)
def test_yacht_scores_hand_made_rolls(dice: tuple[int, ...], lower: tuple[int, ...]) -> None:
    """Each box of the 12-box table scores a hand-made roll as Chang's rule table says."""
    scores = np.asarray(base_scores(face_counts(jnp.asarray(dice, jnp.int32)), YACHT))
    upper = [face * dice.count(face) for face in range(1, 7)]
    assert scores.tolist() == upper + list(lower)


@pytest.mark.parametrize("rules", [YACHT, EVERY_KIND, OFFICIAL], ids=lambda rules: rules.name)
def test_jitted_scorer_agrees_with_the_table_on_every_roll(rules: Rules) -> None:
    """`base_scores` (vectorised, jitted) equals `Box.points` (plain Python) on all 252 rolls."""
    rolls = list(itertools.combinations_with_replacement(range(1, 7), 5))
    got = jax.jit(jax.vmap(lambda dice: base_scores(face_counts(dice), rules)))(
        jnp.asarray(rolls, jnp.int32)
    )
    counts = [tuple(roll.count(face) for face in range(1, 7)) for roll in rolls]
    expected = [[box.points(c) for box in rules.boxes] for c in counts]
    np.testing.assert_array_equal(np.asarray(got), np.array(expected))


def test_every_kind_scores_yatzy_rolls() -> None:
    """One pair is the highest pair, two pairs need two faces, n alike counts only those dice."""

    def scores(dice: list[int]) -> dict[str, int]:
        points = base_scores(face_counts(jnp.int32(dice)), EVERY_KIND).tolist()
        return dict(zip(EVERY_KIND.box_names, points, strict=True))

    house = scores([3, 3, 5, 5, 5])
    assert (house["one_pair"], house["two_pairs"], house["three_alike"]) == (10, 16, 15)
    assert (house["full_house_sum"], house["full_house_25"], house["four_alike_all"]) == (21, 25, 0)
    four = scores([4, 4, 4, 4, 1])
    assert (four["two_pairs"], four["four_alike_all"], four["one_pair"]) == (0, 17, 8)


def test_a_game_of_the_table_runs_to_its_end_in_36_decisions() -> None:
    """Random legal play: the game ends at exactly decision 36 with every box filled once."""
    act = make_random_agent(YACHT).act
    keys = jax.random.split(jax.random.key(7), YACHT.decisions_per_game + 1)

    def decide(state: State, key: jax.Array) -> tuple[State, tuple]:
        action_key, dice_key = jax.random.split(key)
        action = act(None, state, action_key)
        legal = legal_action_mask(state, YACHT)[action]
        after = step(state, action, dice_key, YACHT)
        return after, (after.terminated, after.reward, legal)

    start = init(keys[0], YACHT)
    assert start.scores.shape == (12,) and int(start.turns_left) == 12
    final, (done, rewards, legal) = jax.jit(lambda s: jax.lax.scan(decide, s, keys[1:]))(start)
    done, legal = np.asarray(done), np.asarray(legal)
    assert legal.all() and done[-1] and not done[:-1].any()
    assert np.asarray(final.filled).all() and int(final.turns_left) == 0
    total = int(total_score(final, YACHT))
    assert total == int(np.asarray(final.scores).sum()) == int(np.asarray(rewards).sum())


def test_features_and_network_are_sized_by_the_table() -> None:
    """Open boxes and potential scores have 12 entries; the score head has 12 logits."""
    config = FeatureConfig()
    assert feature_size(config, OFFICIAL) == 75 and feature_size(config, YACHT) == 73
    state = card((6, 6, 6, 6, 6), roll_index=2, rules=YACHT)
    x = features(state, config, YACHT)
    assert x.shape == (73,) and float(x[-1]) == 1.0  # the yacht box: 50 of 50
    network = NetworkConfig(hidden_size=8, trunk_layers=1)
    params = init_params(network, config, jax.random.key(0), YACHT)
    output = YahtzeeNet(network, YACHT.num_boxes).apply({"params": params}, x[None])
    assert output.score_logits.shape == (1, 12) and output.roll_log_probs.shape == (1, 32)


def test_the_solver_values_the_table_and_its_agents_play_it(tmp_path) -> None:
    """Last box open, one re-roll left: keep the four sixes, P(yacht) = 1/6 -> 50/6 expected."""
    solution = solve(YACHT, cache_dir=tmp_path)
    assert solution.value_table.shape == (1 << 12, 1, 2)  # no bonus: the upper total is moot
    assert 0 < solution.expected_score < sum(YACHT.box_max_scores)
    card_so_far = {name: 0 for name in YACHT.box_names[:-1]}
    position = make_position((1, 6, 6, 6, 6), 1, card_so_far, rules=YACHT)
    values = advise(position, YACHT, solution=solution)
    assert values.action_values.shape == (44,)
    assert values.value == pytest.approx(50 / 6, abs=1e-12)
    assert values.best_action == 0b11110  # keep the sorted dice 2-5: the sixes
    play = jax.jit(step, static_argnums=3)
    for agent in (make_optimal_agent(YACHT, cache_dir=tmp_path), make_greedy_agent(3, YACHT)):
        act = jax.jit(agent.act)
        state = init(jax.random.key(3), YACHT)
        for decision in range(YACHT.decisions_per_game):
            key = jax.random.fold_in(jax.random.key(4), decision)
            action = int(act(agent.params, state, key))
            assert bool(legal_action_mask(state, YACHT)[action]), (agent.name, decision)
            state = play(state, action, key, YACHT)
        assert bool(state.terminated) and int(total_score(state, YACHT)) > 0


def test_bad_tables_are_refused_with_a_clear_message() -> None:
    """Upper boxes missing or out of order, no five-of-a-kind box, a straight off the dice, an
    upper bonus at 0 points (the card starts at its threshold: the engine would pay it always,
    the solver, which pays it when a box brings the total there, never)."""
    lower = (Box("chance", Kind.CHANCE), Box("yacht", Kind.OF_A_KIND, 5, 50))
    for upper in (UPPER_BOXES[::-1], UPPER_BOXES[:5], (lower[0], *UPPER_BOXES)):
        with pytest.raises(UserError, match="six upper boxes come first"):
            Rules("bad", False, Joker.NONE, boxes=(*upper, *lower[-1:]))
    with pytest.raises(UserError, match="five-of-a-kind"):
        Rules("bad", False, Joker.NONE, boxes=(*UPPER_BOXES, lower[0]))
    with pytest.raises(UserError, match="threshold of 1 or more"):
        Rules("bad", False, Joker.NONE, upper_bonus_threshold=0)
    Rules("no bonus", False, Joker.NONE, upper_bonus_threshold=0, upper_bonus_points=0)
    with pytest.raises(UserError, match="no possible straight"):
        run = Box("run", Kind.STRAIGHT, 5, 30, lowest=3)
        Rules("bad", False, Joker.NONE, boxes=(*UPPER_BOXES, run, *lower))
