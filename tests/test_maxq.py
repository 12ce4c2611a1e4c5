"""MAXQ-Q (seed 001's HRL and HRL-G1): the state index, the reroll actions, the V/C updates
by hand, the root choice and the greedy guide."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.algorithms.maxq import (
    CANONICAL,
    KEEP_ALL,
    Round,
    batch_round_update,
    explore_greedy_guide,
    explore_uniform,
    greedy,
    round_update,
)
from yahtzee_jax.algorithms.table_updates import combine_set
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.features import batch_features
from yahtzee_jax.game import Category, get_rules
from yahtzee_jax.networks.maxq_tables import DICE_INDEX, NUM_MULTISETS, Tables, dice_code, multisets

PLAIN = get_rules("plain")
KANG = FeatureConfig(kind="kang")
WIDTH = 45  # V's columns; C(root, s, Re-roll) is column 45, C(root, s, Category) column 46


def stack(states):
    """A batch of hand-made cards."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def test_exact_index_is_a_bijection_onto_6193152_rows():
    """Every (free boxes, multiset, rerolls left) has its own row, and every row is used: the
    exact table has no collision (8192 x 252 x 3 = 6,193,152 rows)."""
    tables = Tables(13, 0)
    assert tables.num_slots == 6_193_152
    free = (np.arange(2**13)[:, None] >> np.arange(13)) & 1 == 1
    dice = multisets()
    rows = tables.slot(
        jnp.asarray(free)[:, None, None, :],
        jnp.asarray(dice)[None, :, None, :],
        jnp.arange(3)[None, None, :],
    )
    rows = np.sort(np.asarray(rows).ravel())
    np.testing.assert_array_equal(rows, np.arange(6_193_152))


def test_dice_multisets_and_reroll_actions():
    """252 sorted rolls; the reroll actions of a roll are its nonempty sub-multisets to roll
    again: 31 for five distinct faces, 5 for five of a kind, (3+1)(1+1)(1+1) - 1 = 15 for
    3 3 3 5 6, and 461 over all rolls (the seed's count)."""
    assert sorted(DICE_INDEX[DICE_INDEX >= 0]) == list(range(NUM_MULTISETS))
    count = {
        dice: int(CANONICAL[DICE_INDEX[dice_code(np.array(dice))]].sum())
        for dice in [(1, 2, 3, 4, 5), (6, 6, 6, 6, 6), (3, 3, 3, 5, 6)]
    }
    assert count == {(1, 2, 3, 4, 5): 31, (6, 6, 6, 6, 6): 5, (3, 3, 3, 5, 6): 15}
    assert not CANONICAL[:, KEEP_ALL].any()  # "keep all" rolls nothing: not a reroll
    kept = set()
    for index, dice in enumerate(multisets()):
        for mask in np.flatnonzero(CANONICAL[index]):
            kept.add(tuple(d for i, d in enumerate(dice) if (mask >> i) & 1 == 0))
    assert len(kept) == 461  # distinct multisets rolled again, over all rolls


def table_with(values: dict[tuple[int, int], float], rows: int = 6) -> jnp.ndarray:
    """A [rows, 47] table, zero but for the given (row, column) entries."""
    table = np.zeros((rows, WIDTH + 2), np.float32)
    for (row, column), value in values.items():
        table[row, column] = value
    return jnp.asarray(table)


def reroll_mask(*patterns: int) -> np.ndarray:
    """bool[32] with the given keep patterns legal."""
    mask = np.zeros(32, bool)
    mask[list(patterns)] = True
    return mask


def box_mask(*boxes: int) -> np.ndarray:
    """bool[13] with the given boxes legal."""
    mask = np.zeros(13, bool)
    mask[list(boxes)] = True
    return mask


def hand_round():
    """The table and round of `test_three_action_round_by_hand` (its docstring)."""
    table = table_with({(3, 5): 4.0, (3, 32): 6.0, (3, 45): 1.0, (3, 46): 0.5, (2, 34): 2.0})
    after = [(reroll_mask(7, 12), box_mask(2)), (reroll_mask(), box_mask(2))]
    after.append((reroll_mask(5), box_mask(0)))
    lane = Round(
        jnp.int32([0, 1, 2]),
        jnp.int32([3, 7, 32 + 2]),
        jnp.bool_([True, True, True]),
        jnp.int32([1, 2, 3]),
        jnp.asarray(np.stack([a[0] for a in after])),
        jnp.asarray(np.stack([a[1] for a in after])),
        jnp.bool_([False, False, False]),
        jnp.float32(10.0),
    )
    return table, lane


def test_three_action_round_by_hand():
    """A round s1 -reroll 3-> s2 -reroll 7-> s3 -box 2-> s4 worth r = 10, l = 0.5, d = 0.5;
    rows 0..3 are s1..s4. s4 (the next round's start) has V(keep 5) = 4, V(box 0) = 6,
    C(Re-roll) = 1, C(Category) = 0.5: its root value is max(4 + 1, 6 + 0.5) = 6.5.
    V(s3, box 2) starts at 2. Reverse order:
    a3 (t=0): V(s3, 34) = 0.5*2 + 0.5*10 = 6;     C(s3, Cat) = 0.5*0 + 0.5*6.5 = 3.25
    a2 (t=1): V(s2, 7) = 0.5*10*0.5 = 2.5;        s3's root value = V 6 + C 3.25 = 9.25
              (no reroll at s3): C(s2, Re-roll) = 0.5*9.25 = 4.625
    a1 (t=2): V(s1, 3) = 0.5*10*0.25 = 1.25;      s2's root value = max(2.5 + 4.625, 0 + 0)
              = 7.125: C(s1, Re-roll) = 3.5625
    """
    table, lane = hand_round()
    out = round_update(table, lane, jnp.float32(0.5), 0.5)
    want = np.asarray(table).copy()
    want[2, 34], want[2, 46] = 6.0, 3.25
    want[1, 7], want[1, 45] = 2.5, 4.625
    want[0, 3], want[0, 45] = 1.25, 3.5625
    np.testing.assert_allclose(np.asarray(out), want, atol=1e-6)


def test_one_action_round_and_the_games_end():
    """Category at the first roll ends the round at once (n = 1, t = 0): V(s1, box) moves to
    r, and C(s1, Category) towards the next state's value, 0 when the game is over."""
    table = table_with({(3, 32): 8.0, (3, 45): 2.0})
    lane = Round(
        jnp.int32([0, 0, 0]),
        jnp.int32([32 + 4, 0, 0]),
        jnp.bool_([True, False, False]),
        jnp.int32([3, 3, 3]),
        jnp.asarray(np.stack([reroll_mask(1)] * 3)),
        jnp.asarray(np.stack([box_mask(0)] * 3)),
        jnp.bool_([False] * 3),
        jnp.float32(20.0),
    )
    going_on = round_update(table, lane, 1.0, 0.9)
    assert float(going_on[0, 36]) == 20.0 and float(going_on[0, 46]) == 8.0  # max(0+2, 8+0)
    assert int(np.count_nonzero(np.asarray(going_on)[0])) == 2  # the invalid slots wrote nothing
    over = round_update(table, lane._replace(after_terminal=jnp.bool_([True] * 3)), 1.0, 0.9)
    assert float(over[0, 46]) == 0.0


def test_greedy_root_choice_and_category_before_the_last_roll():
    """Root: Q(Re-roll) = max V(reroll) + C(Re-roll) against Q(Category). With V(keep 7) = 3,
    C(Re-roll) = 1 and V(Chance) = 5, C(Category) = 0, Category wins (5 > 4): before the last
    roll it is played as "keep all"; with C(Re-roll) = 3 the reroll wins (6 > 5). The table is
    a numpy array closed over by `jit`, as a loaded checkpoint's is in `match`."""
    tables = Tables(13, 4)
    state = card(dice=(1, 2, 3, 4, 6), rules=PLAIN)
    x = batch_features(stack([state]), KANG, PLAIN)
    row = int(tables.slot(~state.filled, state.dice, jnp.int32(2)))
    legal = jnp.zeros((1, 45), bool).at[0, :32].set(True)
    # numpy, as a checkpoint loads it (`match`, `tournament`)
    table = np.asarray(table_with({(row, 7): 3.0, (row, 45): 1.0, (row, 32 + 12): 5.0}, 16))
    act = jax.jit(lambda x: greedy(tables, {"table": table}, x, legal, jnp.int32([0])))
    assert int(act(x)[0]) == KEEP_ALL
    table = table.copy()
    table[row, 45] = 3.0
    act = jax.jit(lambda x: greedy(tables, {"table": table}, x, legal, jnp.int32([0])))
    assert int(act(x)[0]) == 7


def test_greedy_guide_scores_the_best_box_after_random_rerolls():
    """HRL-G1's guide: at the last roll, dice 2 2 3 3 3 with Threes (9), Full House (25) and
    Chance (13) open score Full House; before it, bits 0..14 on 3 3 3 5 6 give each of its 15
    reroll actions once (a uniform draw), never "keep all" nor a box."""
    used = {c: 0 for c in Category if c not in (2, 8, 12)}
    last = card(dice=(2, 2, 3, 3, 3), scores=used, roll_index=2, rules=PLAIN)
    context = type("C", (), {"rules": PLAIN})
    guide = jax.jit(lambda cards, bits: explore_greedy_guide(cards, context, bits))
    action = guide(stack([last]), jnp.uint32([0]))
    assert int(action[0]) == 32 + Category.FULL_HOUSE
    first = card(dice=(3, 3, 3, 5, 6), rules=PLAIN)
    lanes = stack([first] * 15)
    actions = np.asarray(guide(lanes, jnp.arange(15, dtype=jnp.uint32)))
    assert sorted(actions) == sorted(
        np.flatnonzero(CANONICAL[DICE_INDEX[dice_code(np.array((3, 3, 3, 5, 6)))]])
    )


def test_uniform_exploration_covers_rerolls_and_boxes():
    """HRL explores any legal primitive action: on 3 3 3 5 6 at the first roll with 13 open
    boxes, bits 0..27 give the 15 reroll actions and the 13 boxes once each."""
    first = card(dice=(3, 3, 3, 5, 6), rules=PLAIN)
    context = type("C", (), {"rules": PLAIN})
    explore = jax.jit(lambda cards, bits: explore_uniform(cards, context, bits))
    actions = np.asarray(explore(stack([first] * 28), jnp.arange(28, dtype=jnp.uint32)))
    assert len(set(actions.tolist())) == 28
    assert (actions >= 32).sum() == 13


@pytest.mark.slow
@pytest.mark.parametrize(("name", "per_round"), [("maxq", (1.0, 3.0)), ("maxq-g1", (3.0, 3.0))])
def test_rounds_of_each_exploration(name, per_round):
    """Through one update: HRL's random Category before the last roll ends rounds early
    (between 1 and 3 actions a round on average), the guide always takes 3; the tables move."""
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.runner.configs import resolve

    overrides = ["train.games_per_update=8", "algo.table_bits=12", f"algo.name={name}"]
    context = make_context(resolve("kang-hrl", overrides=overrides))
    state = init_train_state(context)
    state, metrics = jax.jit(lambda s: context.algorithm.update(context, s))(state)
    low, high = per_round
    mean = float(metrics["explore/actions_per_round"])
    assert low < mean < high if low < high else mean == high
    assert np.count_nonzero(np.asarray(state.params["table"])) > 0


def test_combined_updates_of_one_cell():
    """Two updates of one cell with l = 0.5 each from x = 2: with equal targets 10 the
    combination is the sequential rule twice (2 -> 6 -> 8); with targets 10 and 6 it is
    2 x 0.25 + 0.75 x mean 8 = 6.5, between the two orders' 6 and 7. A not-ok update
    writes nothing, and updates of other cells (row 1) do not mix in."""
    table = table_with({(0, 3): 2.0}, rows=2)
    rows, columns = jnp.int32([0, 0, 1, 0]), jnp.int32([3, 3, 3, 5])
    rates = jnp.float32([0.5, 0.5, 0.5, 0.5])
    ok = jnp.bool_([True, True, True, False])
    same = combine_set(table, rows, columns, jnp.float32([10, 10, 4, 9]), rates, ok)
    assert float(same[0, 3]) == 8.0 and float(same[1, 3]) == 2.0 and float(same[0, 5]) == 0.0
    mixed = combine_set(table, rows, columns, jnp.float32([10, 6, 4, 9]), rates, ok)
    assert float(mixed[0, 3]) == 6.5
    assert int(np.count_nonzero(np.asarray(mixed))) == 2


def test_parallel_round_of_one_lane_is_the_sequential_rule_and_two_lanes_combine():
    """`combine=parallel` on the hand-made three-action round above: one lane gives the
    sequential table exactly; two lanes playing that round (l = 0.5 each) move V(s3, box 2)
    from 2 as two sequential updates towards 10 would: 2 x 0.25 + 0.75 x 10 = 8, and
    V(s1, keep 3) to 0.75 x 2.5 = 1.875."""
    table, lane = hand_round()
    sequential = round_update(table, lane, jnp.float32(0.5), 0.5)
    one = batch_round_update(table, jax.tree.map(lambda x: x[None], lane), jnp.float32([0.5]), 0.5)
    np.testing.assert_allclose(np.asarray(one), np.asarray(sequential), atol=1e-6)
    two = jax.tree.map(lambda x: jnp.stack([x, x]), lane)
    both = batch_round_update(table, two, jnp.float32([0.5, 0.5]), 0.5)
    assert float(both[2, 34]) == 8.0 and float(both[0, 3]) == 1.875


def test_parallel_combine_of_a_single_game_is_the_sequential_learner():
    """Through the learner's whole update (one game of 13 rounds, a hashed table): with one
    lane `combine=parallel` writes the very table `combine=sequential` writes."""
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.runner.configs import resolve

    tables = []
    for combine in ("sequential", "parallel"):
        overrides = ["train.games_per_update=1", "algo.table_bits=10", f"algo.combine={combine}"]
        context = make_context(resolve("kang-hrl", overrides=overrides))
        state = init_train_state(context)
        state, _ = jax.jit(lambda s, c=context: c.algorithm.update(c, s))(state)
        tables.append(np.asarray(state.params["table"]))
    assert np.count_nonzero(tables[0]) > 13
    np.testing.assert_allclose(tables[1], tables[0], rtol=1e-6, atol=1e-7)


def test_an_unknown_combine_is_refused_in_one_line():
    """`algo.combine` takes only the two rules the learner has."""
    from yahtzee_jax.errors import ConfigError
    from yahtzee_jax.runner.configs import resolve

    with pytest.raises(ConfigError, match=r"algo\.combine='both' is not one of: sequential"):
        resolve("kang-hrl", overrides=["algo.combine=both"])
