"""The match planner (`agents.distribution_planner`): the win chance it gives each roll and box, its
choices in hand-made positions, and the td-planner's distribution head that feeds it."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card
from test_td_planner import forbid_solver_tables

from yahtzee_jax.agents.distribution_planner import (
    MatchPlannerAct,
    box_action,
    keep_action,
    normal_box_action,
    normal_keep_action,
    normal_score_chances,
    normal_turn_end_chances,
    score_chances,
    turn_end_chances,
)
from yahtzee_jax.agents.planner import LookaheadLeaf, plan_actions, plan_scores
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.game.engine import legal_action_mask, step, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, OFFICIAL, Category
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.widget_tables import ROLLS
from yahtzee_jax.solver.win_policy import below_or_half

BINS = 64


def spread_leaf(params: None, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """A hand-made distribution of the score to come, different for every position: a third of
    the mass at each of a, a + 5 and a + 17, a = (open boxes x 3 + upper + 7 flag) mod 40."""
    open_boxes = OFFICIAL.num_boxes - jax.lax.population_count(mask)
    base = (3 * open_boxes + upper + 7 * flag) % 40
    bins = jnp.arange(BINS)
    hits = [(bins == (base + shift)[..., None]) for shift in (0, 5, 17)]
    return sum(hit.astype(jnp.float32) for hit in hits) / 3.0


def test_below_or_half_counts_half_of_a_tie():
    """Mass 0.2, 0.3, 0.5 on futures 0, 1, 2: P(< lead) + P(= lead) / 2 at leads -1..3."""
    mass = jnp.array([0.2, 0.3, 0.5])
    got = below_or_half(mass, jnp.array([-1, 0, 1, 2, 3]))
    np.testing.assert_allclose(got, [0.0, 0.1, 0.35, 0.75, 1.0], atol=1e-7)


def engine_outcomes(own, leaf) -> tuple:
    """Every (roll, box) of `own` written by the engine's own step: the rolls and boxes
    (flattened [252 x boxes]), the total after the write and `leaf` at the card it leaves."""

    def outcome(dice: jax.Array, box: jax.Array) -> tuple:
        before = own.replace(dice=dice, roll_index=jnp.int32(2))
        after = step(before, NUM_KEEP_ACTIONS + box, jax.random.key(0), OFFICIAL)
        context = card_context(after.filled, after.scores, jnp, OFFICIAL)
        return total_score(after, OFFICIAL), leaf(None, *context)

    rolls, boxes = jnp.meshgrid(jnp.arange(len(ROLLS)), jnp.arange(OFFICIAL.num_boxes))
    # one compiled program (op by op it compiled each of its hundreds of operations)
    totals, leaves = jax.device_get(
        jax.jit(jax.vmap(outcome))(jnp.asarray(ROLLS)[rolls.ravel()], boxes.ravel())
    )
    return rolls.ravel(), boxes.ravel(), totals, leaves


def check_roll_in_hand(in_hand, leaf, own, others, chances: np.ndarray) -> None:
    """The score decision's chances (`in_hand`) for four rolls in hand equal the rows of the
    turn-end chances `chances` [252, boxes] at those rolls."""
    shortcut_of = jax.jit(lambda hand, others: in_hand(leaf, None, hand, others, OFFICIAL))
    for dice in [(1, 1, 1, 1, 1), (2, 3, 4, 5, 6), (3, 3, 5, 5, 5), (1, 2, 2, 4, 6)]:
        hand = own.replace(dice=jnp.int32(dice), roll_index=jnp.int32(2))
        roll = [tuple(r) for r in ROLLS.tolist()].index(dice)
        shortcut = np.asarray(shortcut_of(hand, others))
        np.testing.assert_allclose(shortcut, chances[roll], atol=1e-6)


def test_turn_end_chances_equal_a_sum_over_the_engines_outcomes():
    """Against two opponents, every roll and legal box of a mid-game card: the chance equals a
    direct sum over the engine's own step (points, bonuses, next card) and the leaf's
    distributions, P(win) = sum_t p(t) prod_i P(Y_i < mine + t) (+ half a tie each)."""
    own = card((1, 1, 1, 1, 1), {Category.ONES: 3, Category.SIXES: 24, Category.FULL_HOUSE: 25})
    others = jax.tree.map(
        lambda *leaves: jnp.stack(leaves),
        card((1, 1, 1, 1, 1), {Category.TWOS: 8, Category.CHANCE: 22}),
        card((1, 1, 1, 1, 1), {Category.FIVES: 20, Category.LARGE_STRAIGHT: 40}),
    )
    chances = np.asarray(
        jax.jit(lambda own, others: turn_end_chances(spread_leaf, None, own, others, OFFICIAL))(
            own, others
        )
    )

    rolls, boxes, totals, mine = engine_outcomes(own, spread_leaf)
    theirs = [
        np.asarray(spread_leaf(None, *card_context(o.filled, o.scores, jnp, OFFICIAL)))
        for o in (jax.tree.map(lambda leaf, i=i: leaf[i], others) for i in range(2))
    ]
    their_totals = np.asarray(jax.vmap(total_score, in_axes=(0, None))(others, OFFICIAL))
    for index, (roll, box) in enumerate(zip(rolls, boxes, strict=True)):
        if bool(own.filled[box]):
            assert chances[roll, box] == -np.inf
            continue
        expected = 0.0
        for future in np.flatnonzero(mine[index]):
            chance = float(mine[index][future])
            for mass, their_total in zip(theirs, their_totals, strict=True):
                lead = int(totals[index]) + future - their_total
                below = mass[: max(lead, 0)].sum() if lead > 0 else 0.0
                chance *= below + (0.5 * mass[lead] if 0 <= lead < BINS else 0.0)
            expected += chance
        assert chances[roll, box] == pytest.approx(expected, abs=1e-5), (roll, box)
    # The score decision's shortcut reads the same chances for the roll in hand.
    check_roll_in_hand(score_chances, spread_leaf, own, others, chances)


def linear_value(params: None, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """A hand-made V, unrelated to `spread_leaf`'s means: 11 per open box + upper / 2 + 3 flag."""
    open_boxes = OFFICIAL.num_boxes - jax.lax.population_count(mask)
    return (11 * open_boxes + upper / 2 + 3 * flag).astype(jnp.float32)


def test_normal_chances_equal_a_product_of_normals_over_the_engines_outcomes():
    """`early="normal"`: against two opponents, every roll and legal box of a mid-game card is
    worth prod_i Phi((my total after the engine's step + V(my next card) - their total - V(their
    card)) / sqrt(var(mine) + var(theirs))), V the value leaf, each variance the distribution
    leaf's own (a third of the mass at a, a + 5, a + 17: 1374 / 27 by hand); the score decision's
    shortcut reads the same numbers for the roll in hand."""
    own = card((1, 1, 1, 1, 1), {Category.ONES: 3, Category.SIXES: 24, Category.FULL_HOUSE: 25})
    others = jax.tree.map(
        lambda *leaves: jnp.stack(leaves),
        card((1, 1, 1, 1, 1), {Category.TWOS: 8, Category.CHANCE: 22}),
        card((1, 1, 1, 1, 1), {Category.FIVES: 20}),
    )
    leaves = (spread_leaf, linear_value)
    chances = np.asarray(
        jax.jit(lambda own, others: normal_turn_end_chances(leaves, None, own, others, OFFICIAL))(
            own, others
        )
    )
    variance = np.var([0.0, 5.0, 17.0])  # every position's spread: only its base moves
    assert variance == pytest.approx(1374 / 27)  # ((22/3)^2 + (7/3)^2 + (29/3)^2) / 3

    rolls, boxes, totals, values = engine_outcomes(own, linear_value)
    theirs = [
        (
            int(total_score(other, OFFICIAL)),
            float(linear_value(None, *card_context(other.filled, other.scores, jnp, OFFICIAL))),
        )
        for other in (jax.tree.map(lambda leaf, i=i: leaf[i], others) for i in range(2))
    ]
    for index, (roll, box) in enumerate(zip(rolls, boxes, strict=True)):
        if bool(own.filled[box]):
            assert chances[roll, box] == -np.inf
            continue
        expected = 1.0
        for their_total, their_value in theirs:
            margin = totals[index] + values[index] - their_total - their_value
            expected *= 0.5 * (1 + math.erf(margin / math.sqrt(2 * variance) / math.sqrt(2)))
        assert chances[roll, box] == pytest.approx(expected, abs=1e-5), (roll, box)
    check_roll_in_hand(normal_score_chances, leaves, own, others, chances)


@pytest.mark.slow  # the normal's chances stay fast: test_normal_chances_equal_a_product_...
def test_the_match_policy_plays_early_turns_by_the_normal_and_late_ones_by_the_exact_sum():
    """`MatchPlannerAct(early="normal")` at score decisions, the opponent's card 42 points with
    11 boxes open: 4-4-4-1-2 on a card with 12 boxes open is early and plays
    `normal_box_action` (Fours; the exact sum would write Three of a kind); 4-4-1-1-3 with
    Fours, Yahtzee and Chance open, 56 points written, is late and plays `box_action` (Fours,
    win chance 2/3 against 1/3 for Chance; the normal rule would write Chance). The normal rule
    without a value leaf, or an unknown rule, is refused."""
    written = {box: 0 for box in Category if box not in (Category.FOURS, Category.YAHTZEE)}
    del written[Category.CHANCE]
    written |= {Category.THREE_OF_A_KIND: 16, Category.LARGE_STRAIGHT: 40}
    cards = [
        card((4, 4, 4, 1, 2), {Category.CHANCE: 20}, roll_index=2),
        card((4, 4, 1, 1, 3), written, roll_index=2),
    ]
    other = card(scores={Category.ONES: 2, Category.LARGE_STRAIGHT: 40})
    leaves, one = (spread_leaf, linear_value), jax.tree.map(lambda x: x[None], other)
    rules = [(normal_box_action, leaves), (box_action, spread_leaf)]
    chosen = [[int(act(leaf, None, own, one, OFFICIAL)) for act, leaf in rules] for own in cards]
    boxes = [[action - NUM_KEEP_ACTIONS for action in pair] for pair in chosen]
    assert boxes == [
        [Category.FOURS, Category.THREE_OF_A_KIND],
        [Category.CHANCE, Category.FOURS],
    ]

    def unused(params, own, others, keys):
        raise AssertionError("no card here is played as alone")

    act = MatchPlannerAct(spread_leaf, OFFICIAL, unused, 3, "normal", linear_value)
    own = jax.tree.map(lambda *x: jnp.stack(x), *cards)
    others = jax.tree.map(lambda x: jnp.stack([x, x])[:, None], other)  # one opponent: [B, 1]
    actions = act(None, own, others, jax.random.split(jax.random.key(0), 2))
    assert np.asarray(actions).tolist() == [chosen[0][0], chosen[1][1]]
    with pytest.raises(ValueError, match="needs the value leaf"):
        MatchPlannerAct(spread_leaf, OFFICIAL, unused, 3, "normal")
    with pytest.raises(ValueError, match="choose one of solitaire, normal"):
        MatchPlannerAct(spread_leaf, OFFICIAL, unused, 3, "bold", linear_value)


def two_box_leaf(params: None, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """The last open box's future: the Yahtzee box 50 with 5 %, else 0; Fours 16 / 12 / 8 with
    30 / 40 / 30 %. Broadcast over all three inputs, as the planner's leaves must be."""
    shape = jnp.broadcast_shapes(jnp.shape(mask), jnp.shape(upper), jnp.shape(flag))
    yahtzee_open = jnp.broadcast_to((mask >> Category.YAHTZEE) & 1 == 0, shape)
    yahtzee = jnp.zeros(BINS).at[0].set(0.95).at[50].set(0.05)
    fours = jnp.zeros(BINS).at[16].set(0.3).at[12].set(0.4).at[8].set(0.3)
    return jnp.where(yahtzee_open[..., None], yahtzee, fours)


def mean_leaf(params: None, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """The expectation of `two_box_leaf`: what a solitaire planner plays by."""
    return jnp.sum(two_box_leaf(params, mask, upper, flag) * jnp.arange(BINS), axis=-1)


def test_behind_it_scratches_the_yahtzee_box_that_points_would_keep():
    """Fours and Yahtzee open, 4-4-4-1-2 to score, the opponent done 13 points ahead: Fours now
    (12) then the Yahtzee box wins only with a Yahtzee (5 %); 0 in the Yahtzee box now then
    Fours wins with 16 (30 %). The match planner scratches; the solitaire planner on the same
    distributions' means (12 + 2.5 against 0 + 12) writes Fours."""
    written = {box: 0 for box in Category if box not in (Category.FOURS, Category.YAHTZEE)}
    own = card((4, 4, 4, 1, 2), {**written, Category.CHANCE: 20}, roll_index=2)
    opponent = card(scores={box: 0 for box in Category} | {Category.CHANCE: 33})
    assert int(total_score(opponent, OFFICIAL)) - int(total_score(own, OFFICIAL)) == 13
    # each compiled whole (op by op they compiled each of their operations)
    action = jax.jit(lambda own, others: box_action(two_box_leaf, None, own, others, OFFICIAL))(
        own, jax.tree.map(lambda x: x[None], opponent)
    )
    assert int(action) == NUM_KEEP_ACTIONS + Category.YAHTZEE
    solitaire = jax.jit(lambda cards: plan_scores(mean_leaf, None, cards, OFFICIAL))(
        jax.tree.map(lambda x: x[None], own)
    )
    assert int(solitaire[0]) == NUM_KEEP_ACTIONS + Category.FOURS


@pytest.mark.slow  # fast in test_win_seeker.py: test_a_decided_last_turn_is_played_for_points
def test_a_decided_match_is_played_for_points():
    """The opponent's card full at 50 and mine at 200 with Fours and Yahtzee open (I win
    whatever I write), or the opponent's at 400 (I lose whatever I write): every box has the
    same win chance, and the planner writes 6-6-6-6-6 in the Yahtzee box (50 + Fours' mean
    12 to come, against 0 + 2.5 in Fours), by both rules. At the first keep of 4-4-4-4-2, where
    every keep has the same chance too, it keeps what the solitaire planner on the same means
    keeps (points then, as a tie-break of equal chances)."""
    written = {box: 0 for box in Category if box not in (Category.FOURS, Category.YAHTZEE)}
    leaves = (two_box_leaf, mean_leaf)
    for opponent_total in (50, 400):
        own = card((6, 6, 6, 6, 6), written | {Category.CHANCE: 200}, roll_index=2)
        full = {box: 0 for box in Category} | {Category.CHANCE: opponent_total}
        other = jax.tree.map(lambda x: x[None], card(scores=full))
        chances = np.asarray(score_chances(two_box_leaf, None, own, other, OFFICIAL))
        legal = chances[[Category.FOURS, Category.YAHTZEE]]
        assert legal[0] == legal[1] == (1.0 if opponent_total == 50 else 0.0)
        for act, leaf in ((box_action, two_box_leaf), (normal_box_action, leaves)):
            assert int(act(leaf, None, own, other, OFFICIAL)) == NUM_KEEP_ACTIONS + Category.YAHTZEE
        first = own.replace(dice=jnp.array([4, 4, 4, 4, 2]), roll_index=jnp.int32(0))
        solitaire = plan_actions(mean_leaf, None, jax.tree.map(lambda x: x[None], first), OFFICIAL)
        for act, leaf in ((keep_action, two_box_leaf), (normal_keep_action, leaves)):
            assert int(act(leaf, None, first, other, OFFICIAL)) == int(solitaire[0])


def distribution_config(*extra: str):
    """A tiny td-planner with a score distribution network (and the `extra` overrides)."""
    overrides = ["network.hidden_size=16", "network.trunk_layers=1", "train.games_per_update=4"]
    return resolve(
        "quick",
        overrides=[
            *overrides,
            "train.total_games=400",
            "algo.name=td-planner",
            f"algo.score_bins={BINS}",
            *extra,
        ],
    )


def test_distribution_network_trains_with_the_solver_tables_forbidden(monkeypatch):
    """Every solver table loader raising, one update fits both networks: a finite value loss and
    a cross-entropy of the score to come near ln(bins) (untrained) and above 0."""
    config = distribution_config()
    forbid_solver_tables(monkeypatch)
    context = make_context(config)
    _, metrics = jax.jit(lambda s: context.algorithm.update(context, s))(init_train_state(context))
    assert np.isfinite(float(metrics["loss/value"]))
    assert 0 < float(metrics["loss/distribution"]) <= np.log(BINS) + 1


@pytest.mark.parametrize(
    "opponents", [pytest.param(1, marks=pytest.mark.slow), 2], ids=["one", "two"]
)
def test_match_agent_plays_early_turns_alone_and_late_ones_for_the_win(monkeypatch, opponents):
    """The agent's match act with the solver's tables forbidden, against one opponent ([B]
    cards) or two ([B, 2]): legal actions; with every box open (before the last
    `algo.match_open` = 3 turns) the solitaire planner's own actions."""
    config = distribution_config()
    forbid_solver_tables(monkeypatch)
    context = make_context(config)
    params = init_train_state(context).params
    agent = context.algorithm.make_agent(config, params, "td-planner")
    assert isinstance(agent.policy, MatchPlannerAct) and agent.policy.open_limit == 3
    late = {box: 0 for box in Category if box not in (Category.FOURS, Category.YAHTZEE)}
    own = jax.tree.map(
        lambda *x: jnp.stack(x),
        *(card(roll_index=r) for r in (0, 1, 2)),
        *(card((4, 4, 4, 1, 2), late, roll_index=r) for r in (0, 1, 2)),
    )
    keys = jax.random.split(jax.random.key(1), 6)
    others = jax.tree.map(lambda x: jnp.stack([x] * opponents, 1), own)
    actions = jax.jit(agent.policy)(agent.params, own, others, keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(own, agent.rules)
    assert bool(jnp.all(legal[jnp.arange(6), actions]))
    alone = jax.jit(agent.policy)(agent.params, own, no_others(own), keys)
    np.testing.assert_array_equal(actions[:3], alone[:3])
    config = distribution_config("algo.match_early=normal")
    normal = context.algorithm.make_agent(config, params, "td-planner").policy
    assert (normal.early, normal.value) == ("normal", agent.policy.value)


def test_the_distribution_needs_monte_carlo_targets():
    """A distribution head on a bootstrapped target, or an unknown rule for the turns before
    the last ones, is refused in one line."""
    from yahtzee_jax.errors import ConfigError

    with pytest.raises(ConfigError, match=r"needs algo\.target=mc"):
        resolve("quick", overrides=["algo.name=td-planner", "algo.score_bins=8", "algo.target=td"])
    with pytest.raises(ConfigError, match=r"algo\.match_early='bold' is not one of"):
        resolve("quick", overrides=["algo.name=td-planner", "algo.match_early=bold"])


def test_match_plays_a_run_otherwise_with_set_and_refuses_other_keys(tmp_path):
    """`match RUN --set algo.match_early=normal --set algo.match_open=2` loads the run's planner
    with those play settings (its parameters unchanged); a key outside `algo.match_...`, `--set`
    on a built-in player or on a run without match play, and the win-seeker's
    `--before-endgame` on another player are one-line errors."""
    from yahtzee_jax.commands.match import main
    from yahtzee_jax.errors import ConfigError, UserError
    from yahtzee_jax.runner.checkpointing import RunCheckpoints, load_agent_and_step

    config = distribution_config()
    state = init_train_state(make_context(config))
    RunCheckpoints(tmp_path, 1).save(5, state.replace(step=jnp.int32(5)), config, None)
    sets = ("algo.match_early=normal", "algo.match_open=2")
    agent, step = load_agent_and_step(str(tmp_path), sets)
    assert step == 5 and (agent.policy.early, agent.policy.open_limit) == ("normal", 2)
    deeper, _ = load_agent_and_step(str(tmp_path), ("algo.lookahead=2",))
    assert isinstance(deeper.policy.solitaire.leaf, LookaheadLeaf)  # its turns as alone, two deep
    assert isinstance(deeper.policy.value, LookaheadLeaf)  # the normal rule's means too
    plain, _ = load_agent_and_step(str(tmp_path))
    assert not isinstance(plain.policy.solitaire.leaf, LookaheadLeaf)
    assert (plain.policy.early, plain.policy.open_limit) == ("solitaire", 3)
    same = jax.tree.map(np.array_equal, agent.params, plain.params)
    assert all(jax.tree.leaves(same))
    with pytest.raises(
        UserError, match=r"takes only its play settings \(algo\.match_\.\.\., algo\.lookahead\)"
    ):
        main([str(tmp_path), "--set", "train.seed=1"])
    with pytest.raises(ConfigError, match="'win-seeker' is built in"):
        main(["win-seeker", "--set", "algo.match_open=2"])
    with pytest.raises(ConfigError, match="--before-endgame is a built-in player's; a run takes"):
        main([str(tmp_path), "--before-endgame", "solitaire"])
    with pytest.raises(UserError, match="--before-endgame is the win-seeker's, not optimal's"):
        main(["optimal", "--before-endgame", "solitaire"])
    solitaire = tmp_path / "solitaire"
    config = resolve("quick", overrides=["algo.name=td-planner", "network.hidden_size=16"])
    state = init_train_state(make_context(config))
    RunCheckpoints(solitaire, 1).save(5, state.replace(step=jnp.int32(5)), config, None)
    with pytest.raises(ConfigError, match="plays its own card only; nothing to change"):
        main([str(solitaire), "--set", "algo.match_open=2"])
