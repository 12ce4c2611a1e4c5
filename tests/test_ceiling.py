"""The exact ceiling (`solver.ceiling`) against brute force on reduced games.

A reduced game: both players start from the same hand-made card with two boxes open. The
brute force enumerates every roll in plain Python: the optimal (expected-score) player's exact
score distribution here, the best chance of each target in `test_targets.brute_force_chances`;
the ceiling is then summed over every pair of scores, match by match, sharing nothing with the
module's closed forms (its differences of chances and powers of distributions).
"""

from __future__ import annotations

import functools
import itertools
import re

import numpy as np
import pytest
from positions import card_state, card_without
from test_targets import brute_force_chances, last_layer_only, partial

from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.ceiling import exact_ceiling
from yahtzee_jax.solver.target_layout import state_chances, target_layout


def optimal_distribution(card: dict[str, int], variant: str, most: int) -> np.ndarray:
    """P(exactly d more points), d = 0 .. most, when every choice maximises the mean: the
    distribution of the best option (by its mean) carried through, by enumeration."""
    start = reference.final_score(card, 0)

    def point_mass(points: int) -> np.ndarray:
        mass = np.zeros(most + 1)
        mass[points] = 1.0
        return mass

    def mean(mass: np.ndarray) -> float:
        return float(mass @ np.arange(most + 1))

    def best(options: list[np.ndarray]) -> np.ndarray:
        means = [mean(option) for option in options]
        top = max(means)
        chosen = [option for option, m in zip(options, means, strict=True) if m > top - 1e-9]
        # Choices equal in mean must not differ in spread, or the distribution is ambiguous.
        assert all(np.allclose(option, chosen[0], atol=1e-12) for option in chosen)
        return chosen[0]

    @functools.cache
    def game(card_items: frozenset, bonuses: int) -> np.ndarray:
        card = dict(card_items)
        if len(card) == len(reference.BOXES):
            return point_mass(reference.final_score(card, bonuses) - start)

        @functools.cache
        def roll(dice: tuple[int, ...], rerolls_left: int) -> np.ndarray:
            if rerolls_left == 0:
                options = reference.choices(list(dice), card, variant).items()
                return best(
                    [game(card_items | {(box, p)}, bonuses + (b > 0)) for box, (p, b) in options]
                )
            kept = {tuple(dice[i] for i in range(5) if bits >> i & 1) for bits in range(32)}
            return best([keep(held, rerolls_left) for held in sorted(kept)])

        @functools.cache
        def keep(held: tuple[int, ...], rerolls_left: int) -> np.ndarray:
            rolled = itertools.product(range(1, 7), repeat=5 - len(held))
            masses = [roll(tuple(sorted(held + dice)), rerolls_left - 1) for dice in rolled]
            return np.mean(masses, axis=0)

        return keep((), 3)

    return game(frozenset(card.items()), 0)


CARDS = {
    "straights": card_without("small_straight", "large_straight"),
    "fours+full-house": card_without("fours", "full_house", ones=3, sixes=24),
}


@pytest.mark.parametrize("name", list(CARDS))
def test_ceiling_matches_brute_force(name):
    """From two open boxes (plain rules), against one and two optimal opponents: the oracle's
    win rate, the optimal agent's wins and draws and the opponents' mean, to 1e-9."""
    card = CARDS[name]
    rules = get_rules("plain")
    values, best, follow = partial("plain", 11)
    layout, state = target_layout(rules), card_state(card)
    row, theirs = state_chances(best, layout, state), state_chances(follow, layout, state)
    most = len(row) - 1
    mass = optimal_distribution(card, "plain", most)
    chances = brute_force_chances(card, "plain", most + 1)  # T(most + 1) = 0
    assert mass.sum() == pytest.approx(1.0, abs=1e-12)
    assert mass @ np.arange(most + 1) == pytest.approx(values[state], abs=1e-9)
    scores = np.arange(most + 1)
    for opponents in (1, 2):
        rivals = np.zeros(most + 1)  # P(the best opponent scores s), every tuple of scores
        for tuple_ in itertools.product(scores, repeat=opponents):
            rivals[max(tuple_)] += np.prod(mass[list(tuple_)])
        oracle = sum(rivals[s] * chances[s + 1] for s in scores)
        wins = sum(rivals[s] * mass[own] for s in scores for own in scores if own > s)
        draws = sum(rivals[s] * mass[s] for s in scores)
        exact = exact_ceiling(row, theirs, opponents)
        assert exact["win_rate"] == pytest.approx(oracle, abs=1e-9)
        assert exact["optimal_win_rate"] == pytest.approx(wins, abs=1e-9)
        assert exact["optimal_draw_rate"] == pytest.approx(draws, abs=1e-9)
        assert exact["opponent_mean"] == pytest.approx(rivals @ scores, abs=1e-9)
        assert exact["win_rate"] > exact["optimal_win_rate"]


def test_ceiling_refuses_bad_rows():
    """No opponent, or rows of different lengths, is a one-line error."""
    with pytest.raises(UserError, match="at least one opponent"):
        exact_ceiling(np.ones(3), np.ones(3), 0)
    with pytest.raises(UserError, match="do not match"):
        exact_ceiling(np.ones(3), np.ones(4), 1)


def test_the_match_command_finds_the_ceiling_once_both_tables_are_cached(tmp_path, monkeypatch):
    """`cached_ceiling` (what `match ceiling` prints beside its matches) never solves: None until
    both policies' tables are in the cache, where `target_tables` writes them, then the ceiling
    of those tables."""
    from yahtzee_jax.solver import ceiling, target_table

    monkeypatch.setattr(target_table, "solve_target_table", last_layer_only)
    monkeypatch.setattr(ceiling, "rules_ceiling", lambda rules, players, cache: (players, cache))
    assert ceiling.cached_ceiling("yacht", 2, tmp_path) is None
    target_table.target_tables("yacht", cache_dir=tmp_path)
    assert ceiling.cached_ceiling("yacht", 2, tmp_path) is None  # the expected policy's missing
    target_table.target_tables("yacht", cache_dir=tmp_path, policy="expected")
    assert ceiling.cached_ceiling("yacht", 2, tmp_path) == (2, tmp_path)


def test_the_ceiling_command_says_what_it_reads_and_how_long_it_took(tmp_path, monkeypatch, capsys):
    """`solve --ceiling` reads both whole tables and checks them (official's 3.4 GB took about a
    minute from disk without a word): with both cached it says their size first and the time
    after, on stderr; its figure stays stdout's one line."""
    from yahtzee_jax.solver import target_table

    monkeypatch.setattr(target_table, "solve_target_table", last_layer_only)
    for policy in ("target", "expected"):
        target_table.target_tables("yacht", cache_dir=tmp_path, policy=policy)
    capsys.readouterr()
    assert main(["solve", "--ceiling", "--rules", "yacht", "--cache-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    mib = sum(path.stat().st_size for path in tmp_path.glob("*.npy")) / 2**20
    reading, took = err.splitlines()
    assert reading == f"reading and checking the target tables ({mib:,.0f} MiB)"
    assert re.fullmatch(r"the tables read \(or solved\) in \d+\.\d s", took)
    assert out.startswith("ceiling (yacht, 2 players): the oracle wins") and out.count("\n") == 1
