"""The target-seeker (`solver.seeker_policy`) against enumeration on hand-made end games.

Plain rules, the target tables solved for the last two layers only (`test_targets.partial`).
Every expectation is enumerated in plain Python (`game.reference`): the optimal agent's exact
score distribution (`test_ceiling.optimal_distribution`), the best chance of each target
(`test_targets.brute_force_chances`) and the best keep for the win, sharing nothing with the
module's rows, windows and widget.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card, card_state, card_without
from test_ceiling import optimal_distribution
from test_targets import brute_force_chances, partial

from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, get_rules
from yahtzee_jax.solver.seeker_policy import (
    best_rival_distribution,
    check_weight,
    hindsight_share,
    seeker_tables,
    target_seeker_policy,
    win_chances,
)

RULES = get_rules("plain")


@functools.cache
def jitted_seeker(mixed: bool) -> callable:
    """The target-seeker's policy of plain rules, jitted once (op by op a call took seconds)."""
    return jax.jit(target_seeker_policy(RULES, mixed=mixed))


@functools.cache
def tables(weight: float):
    """The seeker's tables of plain rules' last two layers."""
    values, best, follow = partial("plain", 11)
    return seeker_tables(RULES, best, follow, values, weight)


def state_of(boxes: dict[str, int], dice=(1, 1, 1, 1, 1), roll_index=0):
    """The engine's card of a reference card {box: points}."""
    names = RULES.box_names
    scores = {names.index(box): points for box, points in boxes.items()}
    return card(dice, scores, roll_index, rules=RULES)


def stacked(*states):
    """States stacked on a new leading axis."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def rival_mass(cards: list[dict[str, int]]) -> np.ndarray:
    """P(the best of the cards' final scores = y), y = 0 .. 999, every tuple of scores."""
    singles = []
    for boxes in cards:
        start = reference.final_score(boxes, 0)
        mass = optimal_distribution(boxes, "plain", 100)
        singles.append({start + points: p for points, p in enumerate(mass) if p > 0})
    best = np.zeros(1000)
    for combo in itertools.product(*(single.items() for single in singles)):
        best[max(score for score, _ in combo)] += np.prod([p for _, p in combo])
    return best


# Me: chance open (total 199); the opponents: chance or a straight open, their totals about mine.
ME = card_without("chance")
RIVALS = [card_without("chance", sixes=24), card_without("small_straight", fours=16)]


@pytest.mark.parametrize("opponents", [1, 2])
def test_last_turn_chances_are_the_rivals_exact_distribution(opponents):
    """My last turn, every opponent still to play its last: writing my roll in chance for s
    points wins with P(best opponent's final < my total + s), the opponents' distributions
    enumerated under expected-score play, to float32's precision; whatever the weight."""
    rivals = RIVALS[:opponents]
    mass = rival_mass(rivals)
    full = (card_state({**ME, "chance": 0}),) * 26
    totals = reference.final_score(ME, 0) + np.arange(5, 31)
    expected = [mass[:total].sum() for total in totals]
    others = stacked(*(state_of(boxes) for boxes in rivals))
    for weight in (0.0, 1.0):
        rival = best_rival_distribution(tables(weight), others, RULES)
        states = tuple(jnp.asarray(part) for part in zip(*full, strict=True))
        got = win_chances(tables(weight), states, jnp.asarray(totals), rival, weight, weight != 1)
        np.testing.assert_allclose(got, expected, atol=2e-6)


def test_hindsight_is_exact_when_the_opponent_has_finished():
    """Second seat, two turns left (the straights open), the opponent done at 230: after writing
    a straight the chance is T of the box left at 230 + 1 - my total, the best chance by
    enumeration; read from T even at weight 0 (the turn is exact), E's smaller chances not."""
    finished = card_without(sixes=24)
    others = stacked(state_of(finished))
    rival_score = reference.final_score(finished, 0)
    for written, left in (
        ("small_straight", "large_straight"),
        ("large_straight", "small_straight"),
    ):
        after = card_without(left, **{written: 0})
        best = brute_force_chances(after, "plain", 41)
        start = reference.final_score(after, 0)
        totals = np.arange(start, start + 60)
        need = np.clip(rival_score + 1 - totals, 0, 41)
        states = tuple(jnp.asarray([part] * len(totals)) for part in card_state(after))
        own = state_of(card_without("small_straight", "large_straight"))
        for weight in (0.0, 1.0):
            rival = best_rival_distribution(tables(weight), others, RULES)
            share = hindsight_share(tables(weight), own, others, RULES)
            assert float(share) == 1.0  # the opponent done: T, whatever the weight
            got = win_chances(
                tables(weight), states, jnp.asarray(totals), rival, share, weight != 1
            )
            np.testing.assert_allclose(got, best[need], atol=2e-6)


def best_keeps_for_the_win(dice, rerolls, box, start, mass):
    """{held dice: P(win)} of each keep, my last turn with `box` open, enumerated."""

    @functools.cache
    def roll(dice, rerolls):
        if rerolls == 0:
            points = reference.choices(list(dice), {b: 0 for b in ME if b != box}, "plain")
            return mass[: start + points[box][0]].sum()
        return max(keep(held, rerolls) for held in held_options(dice))

    @functools.cache
    def keep(held, rerolls):
        rolled = itertools.product(range(1, 7), repeat=5 - len(held))
        return np.mean([roll(tuple(sorted(held + more)), rerolls - 1) for more in rolled])

    return {held: keep(held, rerolls) for held in held_options(dice)}


@functools.cache  # the enumerations ask again and again for the same 252 rolls' keeps
def held_options(dice: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every distinct sub-multiset of the dice."""
    return tuple(sorted({tuple(dice[i] for i in range(5) if bits >> i & 1) for bits in range(32)}))


@pytest.mark.parametrize(
    ("box", "dice", "roll_index"),
    [("large_straight", (1, 2, 3, 4, 6), 1), ("full_house", (2, 2, 3, 5, 6), 0)],
)
def test_keep_is_the_enumerated_best_for_the_win(box, dice, roll_index):
    """My last turn (one box open), the opponent's last to come: the policy's keep wins as
    often as the best keep by enumeration (ties allowed), over the same exact distribution."""
    mine = {b: p for b, p in ME.items() if b != box} | {"chance": 22}
    rival = card_without("chance")  # 177 and its chance to come: beaten only by my box
    mass = rival_mass([rival])
    start = reference.final_score(mine, 0)
    by_keep = best_keeps_for_the_win(tuple(sorted(dice)), 2 - roll_index, box, start, mass)
    own = stacked(state_of(mine, dice, roll_index))
    others = jax.tree.map(lambda leaf: leaf[:, None], stacked(state_of(rival)))
    action = int(jitted_seeker(False)(tables(1.0), own, others, jnp.zeros((1, 2)))[0])
    assert action < NUM_KEEP_ACTIONS
    held = tuple(sorted(d for i, d in enumerate(sorted(dice)) if action >> i & 1))
    assert by_keep[held] == pytest.approx(max(by_keep.values()), abs=2e-6)
    assert max(by_keep.values()) > min(by_keep.values()) + 0.01  # the keep matters here


def test_score_decision_takes_the_box_that_wins():
    """Two boxes open (chance, fours), my roll 4-4-4-4-6 at its score decision, the opponent's
    last turn to come (so it is done by my next turn: hindsight is exact): the policy writes
    the box whose enumerated chance to win, sum_y P(Y = y) T_after(y + 1 - my total), is the
    higher of the two, and the two differ."""
    mine = card_without("chance", "fours")
    rival = card_without("chance")
    mass = rival_mass([rival])
    exact = {}
    for box, points in (("fours", 16), ("chance", 22)):
        after = {**mine, box: points}
        best = brute_force_chances(after, "plain", 100)
        total = reference.final_score(after, 0)
        need = np.clip(np.arange(1000) + 1 - total, 0, 100)
        exact[box] = float(mass @ best[need])
    own = stacked(state_of(mine, (4, 4, 4, 4, 6), 2))
    others = jax.tree.map(lambda leaf: leaf[:, None], stacked(state_of(rival)))
    for weight in (0.0, 1.0):
        policy = jitted_seeker(weight != 1)
        action = int(policy(tables(weight), own, others, jnp.zeros((1, 2)))[0])
        assert RULES.box_names[action - NUM_KEEP_ACTIONS] == max(exact, key=exact.get)
    assert abs(exact["fours"] - exact["chance"]) > 0.01


def test_weight_outside_zero_one_is_refused_in_one_line():
    """A hindsight weight of 1.5, -0.1 or NaN, or a schedule of another shape, is a one-line
    error; 0 and 1 become a weight for every turn and seat, a schedule is kept as it is."""
    for weight in (1.5, -0.1, float("nan"), np.full((RULES.num_boxes, 2), 1.01)):
        with pytest.raises(UserError, match="weight"):
            check_weight(weight, RULES)
    with pytest.raises(UserError, match=r"shape \[13, 2\]; got shape \[12, 2\]"):
        check_weight(np.ones((12, 2)), RULES)
    assert np.all(check_weight(0, RULES) == 0.0) and np.all(check_weight(1, RULES) == 1.0)
    schedule = np.linspace(0, 1, 2 * RULES.num_boxes).reshape(-1, 2)
    np.testing.assert_array_equal(check_weight(schedule, RULES), schedule.astype(np.float32))


def test_a_keeps_chances_are_each_roll_and_boxs_own_window():
    """A keep reads W of each distinct turn end once, spread to the 252 rolls x boxes
    (`roll_chances`); each legal entry equals W of its own turn end, the state and total that
    writing its roll in its box leads to (`score_transition` entry by entry), to float32."""
    from yahtzee_jax.solver.final_rolls import score_transition
    from yahtzee_jax.solver.seeker_policy import roll_chances
    from yahtzee_jax.solver.widget_tables import score_all_rolls

    mine = card_without("chance", "fives")
    own = state_of(mine)
    others = stacked(state_of(RIVALS[1]))
    mask, upper, flag = card_state(mine)
    points, legal, _ = score_all_rolls(np.asarray(own.filled), 0, RULES)
    boxes = np.arange(RULES.num_boxes)
    reward, uppers, flags = score_transition(boxes[None], points, upper, flag, np, RULES)
    states = tuple(
        jnp.asarray(part[legal])
        for part in np.broadcast_arrays(mask | (1 << boxes)[None], uppers, flags)
    )
    totals = jnp.asarray(reference.final_score(mine, 0) + reward[legal])
    for weight, exact in ((1.0, False), (0.0, False), (0.0, True)):
        rival = best_rival_distribution(tables(weight), others, RULES)
        share = 1.0 if exact else weight
        spread, *_ = roll_chances(tables(weight), own, rival, share, weight != 1, RULES)
        one = win_chances(tables(weight), states, totals, rival, share, weight != 1)
        np.testing.assert_allclose(np.asarray(spread)[legal], one, atol=2e-6)
        assert float(jnp.max(one)) > 0.1  # the rows read are solved ones


def test_match_command_plays_the_target_seeker_and_records_its_run(tmp_path, monkeypatch, capsys):
    """`match target-seeker` on plain rules (its tables those of the last two layers, the
    rest 0, so the play is no guide) writes the counts that add up, the weight and joint
    endgame played and the run's record: the command, the CPU and the load; a weight outside
    [0, 1] and a weight or joint endgame given to another player are refused in one line before
    any table is read. `--cache-dir` reaches the player's tables and the opponents' value table
    (match had only $YAHTZEE_JAX_CACHE, found by a review session)."""
    import json

    from yahtzee_jax.commands.cli import main
    from yahtzee_jax.solver import seeker_policy

    joints, caches = [], []

    class Built(Exception):
        """Raised when the tables are asked for a second time: no second match is played."""

    def built(rules, cache, weight, joint):
        joints.append(joint)
        caches.append(cache)
        if len(joints) > 1:
            raise Built
        return tables(float(weight[0, 0]))

    monkeypatch.setattr(seeker_policy, "target_seeker_tables", built)
    out = tmp_path / "seeker.json"
    argv = ["match", "target-seeker", "--rules", "plain", "--games", "6", "--seed", "5"]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main([*argv, *cache, "--hindsight-weight", "0", "--no-progress", "--out", str(out)]) == 0
    assert caches == [str(tmp_path / "cache")]
    assert list((tmp_path / "cache").glob("values-v2-plain-*.npz"))  # the opponents' table
    result = json.loads(out.read_text())
    assert result["wins"] + result["draws"] + result["losses"] == 6
    assert result["hindsight_weight"] == 0.0 and result["run"] == "target-seeker"
    assert result["joint_endgame"] == "exact" and joints == [True]
    # The joint endgame left out is another program (8 s of compiling): the flag's way to the
    # tables is what is checked
    with pytest.raises(Built):
        main([*argv, "--joint-endgame", "hindsight", "--no-progress", "--out", str(out)])
    assert joints[-1] is False
    assert result["machine"]["command"].startswith("yahtzee-jax match target-seeker")
    assert result["machine"]["cpu_count"] >= 1 and len(result["machine"]["load_average_at_start"])
    for bad in (["--hindsight-weight", "1.5"], ["--hindsight-weight", "nan"]):
        assert main([*argv, *bad]) == 2
        assert "--hindsight-weight" in capsys.readouterr().err
    for given in (["--hindsight-weight", "0.5"], ["--joint-endgame", "hindsight"]):
        assert main(["match", "win-seeker", *given]) == 2
        assert "target-seeker's" in capsys.readouterr().err
