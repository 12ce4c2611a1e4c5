"""The evaluation harness: batched play, determinism, the illegal-play check and the statistics."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents import Agent, make_random_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.plots import report_figures, save_figure
from yahtzee_jax.evaluation.records import GameRecords, IncompleteGameError, _play_batch, play_games
from yahtzee_jax.evaluation.reports import (
    evaluate,
    format_markdown,
    format_terminal,
    reference_path,
    report_tables,
)
from yahtzee_jax.evaluation.statistics import SCORE_THRESHOLDS, summarize
from yahtzee_jax.game import KEEP_ALL, NUM_KEEP_ACTIONS, OFFICIAL, State, legal_action_mask
from yahtzee_jax.game.rules import RULE_VARIANTS, Category

PLAIN = RULE_VARIANTS["plain"]


def _preferred_box_policy(params: jax.Array, own: State, others: State, keys: jax.Array):
    """Keep all dice; then score the legal box with the highest preference in `params`."""

    def one(state: State) -> jax.Array:
        legal_boxes = legal_action_mask(state, PLAIN)[NUM_KEEP_ACTIONS:]
        box = jnp.argmax(jnp.where(legal_boxes, params, -jnp.inf))
        return jnp.where(state.roll_index < 2, KEEP_ALL, NUM_KEEP_ACTIONS + box).astype(jnp.int32)

    return jax.vmap(one)(own)


def _keep_forever_policy(params: None, own: State, others: State, keys: jax.Array) -> jax.Array:
    """Always 'keep all dice': illegal at every scoring decision, so no game ever ends."""
    return jnp.full(own.roll_index.shape, KEEP_ALL, jnp.int32)


def preferred_box_agent(preference: np.ndarray) -> Agent:
    """An agent that never re-rolls and fills the boxes in the order given by `preference`."""
    preference = jnp.asarray(preference, jnp.float32)
    return Agent("preferred-box", _preferred_box_policy, preference, PLAIN)


@pytest.fixture(scope="module")
def random_records() -> GameRecords:
    """1,000 games of the random agent under plain rules (one compile, batch 500)."""
    return play_games(make_random_agent(PLAIN), 1000, seed=11, batch_size=500)


def test_random_agent_plain_mean_matches_kang_schroeder(random_records: GameRecords) -> None:
    """Random legal play under plain rules averages about 45.6 (seed 001, Table IV)."""
    mean = random_records.total.mean()
    stderr = random_records.total.std(ddof=1) / math.sqrt(random_records.num_games)
    assert abs(mean - 45.635) < 4 * stderr
    assert not random_records.upper_bonus.any()  # 63 in the upper boxes at random: never
    assert (random_records.yahtzee_bonus_count == 0).all()  # plain rules pay no +100


def test_records_are_consistent_per_game(random_records: GameRecords) -> None:
    """Each game fills every box once, and the per-turn points add up to the box scores."""
    assert (np.sort(random_records.turn_categories, axis=1) == np.arange(OFFICIAL.num_boxes)).all()
    in_turn_order = np.take_along_axis(
        random_records.box_scores, random_records.turn_categories, axis=1
    )
    np.testing.assert_array_equal(in_turn_order, random_records.turn_points)
    np.testing.assert_array_equal(random_records.total, random_records.box_scores.sum(axis=1))


def test_same_seed_same_games_whatever_the_batch_size(random_records: GameRecords) -> None:
    """Game i depends only on (seed, i): 1,000 games in batches of 500 or 250 agree, a prefix
    of 300 games (a padded last batch) equals the first 300, another seed differs."""
    agent = make_random_agent(PLAIN)
    again = play_games(agent, 1000, seed=11, batch_size=250)
    for name in ("box_scores", "total", "turn_categories", "turn_points"):
        np.testing.assert_array_equal(getattr(again, name), getattr(random_records, name))
    prefix = play_games(agent, 300, seed=11, batch_size=250)
    np.testing.assert_array_equal(prefix.total, random_records.total[:300])
    other_seed = play_games(agent, 300, seed=12, batch_size=250)
    assert not np.array_equal(other_seed.total, prefix.total)


@pytest.mark.parametrize(
    ("seed", "message"),
    [(2**32, "must be in 0..4294967295"), (-1, "must be in 0.."), (1.5, "must be an integer")],
)
def test_a_seed_outside_the_keys_range_is_refused_not_wrapped(seed, message) -> None:
    """JAX's key takes 2**32 as seed 0 and -1 as 2**32 - 1: such a seed would play another
    seed's games and record itself; `play_games` and `match_totals` refuse it in one line."""
    from yahtzee_jax.evaluation.matches import match_totals

    agent = make_random_agent(PLAIN)
    with pytest.raises(UserError, match=message):
        play_games(agent, 8, seed)
    with pytest.raises(UserError, match=message):
        match_totals(agent, (agent,), agent.rules, 8, seed)


def test_batches_on_several_host_threads_give_the_same_records(
    random_records: GameRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches after the first run on the host's threads at once and may finish in any
    order: on one thread and on four, 1,000 games in 8 batches are the same records, in order."""
    from yahtzee_jax.evaluation import records

    agent = make_random_agent(PLAIN)
    played = []
    for threads in (1, 4):
        monkeypatch.setattr(records, "host_threads", lambda threads=threads: threads)
        played.append(play_games(agent, 1000, seed=11, batch_size=125))
    for name in ("box_scores", "total", "turn_categories", "upper_bonus"):
        np.testing.assert_array_equal(getattr(played[1], name), getattr(played[0], name))
        np.testing.assert_array_equal(getattr(played[1], name), getattr(random_records, name))


def test_new_params_reuse_the_compiled_program() -> None:
    """The params are traced: two preference orders play differently without a recompile."""
    in_order = play_games(preferred_box_agent(-np.arange(13.0)), 64, seed=0, batch_size=64)
    compiled = _play_batch._cache_size()
    reversed_order = play_games(preferred_box_agent(np.arange(13.0)), 64, seed=0, batch_size=64)
    assert _play_batch._cache_size() == compiled
    np.testing.assert_array_equal(in_order.turn_categories, np.tile(np.arange(13), (64, 1)))
    np.testing.assert_array_equal(
        reversed_order.turn_categories, np.tile(np.arange(13)[::-1], (64, 1))
    )
    # Same seed, same first roll: the first box gets that roll's ones vs its chance points.
    assert (in_order.turn_points[:, 0] <= 5).all()
    assert (reversed_order.turn_points[:, 0] >= 5).all()


def test_an_agent_playing_illegal_actions_is_caught() -> None:
    """'Keep all' at a scoring decision is a no-op in the engine: the game never ends."""
    agent = Agent("keep-forever", _keep_forever_policy, None, PLAIN)
    with pytest.raises(IncompleteGameError, match="8 of 8 games unfinished"):
        play_games(agent, 8, seed=0)


def _hand_made_records(
    name: str,
    totals: list[int],
    first_categories: list[int],
    first_points: list[int],
    ones: list[int],
) -> GameRecords:
    """Four games; only the fields a test reads carry chosen values, the rest is zeros."""
    games = len(totals)
    turn_categories = np.zeros((games, OFFICIAL.num_boxes), np.int32)
    for game, first in enumerate(first_categories):
        turn_categories[game] = [first] + [c for c in range(OFFICIAL.num_boxes) if c != first]
    turn_points = np.zeros((games, OFFICIAL.num_boxes), np.int32)
    turn_points[:, 0] = first_points
    box_scores = np.zeros((games, OFFICIAL.num_boxes), np.int32)
    box_scores[:, Category.ONES] = ones
    box_scores[:, Category.YAHTZEE] = [0, 0, 50, 50]
    return GameRecords(
        agent=name,
        rules="official",
        seed=3,
        box_scores=box_scores,
        total=np.array(totals, np.int32),
        upper_bonus=np.array([False, True, True, False]),
        yahtzee_bonus_count=np.array([0, 0, 0, 2], np.int32),
        turn_categories=turn_categories,
        turn_points=turn_points,
    )


@pytest.fixture
def hand_made_summary() -> dict:
    """Agent: totals 40, 150, 250, 520; first boxes chance (20 and 24 points), yahtzee (50) and
    small straight (30); ones scored 1, 1, 2, 0. Optimal: ones always 4."""
    chance, straight, yahtzee = Category.CHANCE, Category.SMALL_STRAIGHT, Category.YAHTZEE
    agent = _hand_made_records(
        "hand",
        [40, 150, 250, 520],
        [chance, chance, yahtzee, straight],
        [20, 24, 50, 30],
        ones=[1, 1, 2, 0],
    )
    optimal = _hand_made_records(
        "optimal", [250, 250, 250, 250], [chance] * 4, [20] * 4, ones=[4, 4, 4, 4]
    )
    return summarize(agent, optimal)


def test_summary_score_statistics(hand_made_summary: dict) -> None:
    """Mean 240, median (150+250)/2, sample std sqrt(126600/3), stderr std/2, rates by hand."""
    score = hand_made_summary["score"]
    std = math.sqrt((200**2 + 90**2 + 10**2 + 280**2) / 3)
    assert score == pytest.approx(
        {"mean": 240.0, "stderr": std / 2, "std": std, "median": 200.0, "min": 40, "max": 520}
    )
    assert hand_made_summary["upper_bonus_rate"] == 0.5
    assert hand_made_summary["yahtzee_rate"] == 0.5
    assert hand_made_summary["mean_yahtzee_bonuses"] == 0.5
    assert hand_made_summary["share_at_least_250"] == 0.5
    expected = [0.75, 0.75, 0.75, 0.5, 0.5, 0.25, 0.25, 0.25, 0.0, 0.0]
    assert hand_made_summary["p_score_at_least"] == dict(
        zip(map(str, SCORE_THRESHOLDS), expected, strict=True)
    )


def test_summary_category_means_against_optimal(hand_made_summary: dict) -> None:
    """Ones: 1.0 vs 4.0 = 25 %; bonuses: 35 * 0.5 and 100 * 0.5; an optimum of 0 gives None."""
    means = hand_made_summary["category_means"]
    assert means["ones"] == 1.0
    assert means["yahtzee"] == 25.0
    assert means["upper_bonus"] == 17.5
    assert means["yahtzee_bonus"] == 50.0
    percent = hand_made_summary["optimal"]["percent_of_optimal"]
    assert percent["ones"] == 25.0
    assert percent["yahtzee"] == 100.0
    assert percent["chance"] is None  # the optimum scored 0 there: no ratio


def test_summary_top_categories_by_turn(hand_made_summary: dict) -> None:
    """Turn 1: chance in 2 of 4 games (median of 20 and 24 = 22), then the tie small straight /
    yahtzee (1 game each) in box order; the first-category shares say the same."""
    first_turn = hand_made_summary["turns"][0]
    assert first_turn["turn"] == 1
    assert first_turn["top_categories"] == [
        {"category": "chance", "usage": 0.5, "median_score": 22.0},
        {"category": "small_straight", "usage": 0.25, "median_score": 30.0},
        {"category": "yahtzee", "usage": 0.25, "median_score": 50.0},
    ]
    shares = hand_made_summary["first_category"]
    assert {name: share for name, share in shares.items() if share} == {
        "chance": 0.5,
        "small_straight": 0.25,
        "yahtzee": 0.25,
    }
    assert len(hand_made_summary["turns"]) == 13


def test_report_tables_render(hand_made_summary: dict) -> None:
    """Both renderings carry the same figures: the mean, P(score >= 300) and ones' 25 %."""
    tables = report_tables(hand_made_summary, OFFICIAL)
    for text in (format_terminal(tables), format_markdown(tables, ["score_histogram.png"])):
        assert "240.00" in text
        assert "0.250000" in text
        assert "25.0" in text
    assert "![score_histogram](score_histogram.png)" in format_markdown(
        tables, ["score_histogram.png"]
    )


def test_records_round_trip(tmp_path) -> None:
    """Records saved to .npz load back equal (the optimal reference games are cached so)."""
    records = _hand_made_records("hand", [1, 2, 3, 4], [0, 1, 2, 3], [1, 2, 3, 4], [1, 0, 0, 0])
    records.save(tmp_path / "games.npz")
    loaded = GameRecords.load(tmp_path / "games.npz")
    assert (loaded.agent, loaded.rules, loaded.seed) == ("hand", "official", 3)
    for name in ("box_scores", "total", "upper_bonus", "turn_categories", "turn_points"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(records, name))


def test_report_figures_are_returned_unregistered_and_saved(tmp_path) -> None:
    """The report's three figures come back as Figures outside pyplot (a notebook shows them,
    nothing leaks); the histogram's bars are shares of games, the category bars are the means;
    `save_figure` writes PNG files under the report's names."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    chance = Category.CHANCE
    agent = _hand_made_records("hand", [40, 150, 250, 520], [chance] * 4, [20] * 4, [1, 1, 2, 0])
    optimal = _hand_made_records("optimal", [250] * 4, [chance] * 4, [20] * 4, ones=[4] * 4)
    figures = report_figures(summarize(agent, optimal), agent, optimal)
    assert list(figures) == ["score_histogram.png", "category_scores.png", "first_category.png"]
    assert all(isinstance(figure, Figure) for figure in figures.values())
    assert plt.get_fignums() == []
    histogram = figures["score_histogram.png"].axes[0]
    assert sum(bar.get_height() for bar in histogram.containers[0]) == pytest.approx(1.0)
    upper_section = figures["category_scores.png"].axes[0]
    agent_bars, optimal_bars = upper_section.containers
    assert (agent_bars[0].get_height(), optimal_bars[0].get_height()) == (1.0, 4.0)  # ones
    for name, figure in figures.items():
        assert save_figure(figure, tmp_path / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_saved_figures_are_256_colour_pngs_that_look_like_matplotlibs(tmp_path) -> None:
    """`save_figure` writes a palette PNG (at most 256 colours) of the figure at its DPI, the
    same size as matplotlib's own PNG and nearly the same pixels: 99.9 % of them within 32 of
    8-bit levels of matplotlib's render, and fewer bytes."""
    import io

    from matplotlib.figure import Figure
    from PIL import Image

    from yahtzee_jax.evaluation.plots import DPI

    figure = Figure(figsize=(4, 3))
    axes = figure.subplots()
    for shift in range(6):  # several coloured, anti-aliased lines and a legend
        axes.plot(np.sin(np.linspace(0, 6, 200) + shift), label=f"line {shift}")
    axes.legend()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=DPI, format="png")
    reference = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    saved = Image.open(save_figure(figure, tmp_path / "lines.png"))
    assert saved.mode == "P" and saved.size == reference.size
    difference = np.abs(np.asarray(saved.convert("RGB"), int) - np.asarray(reference, int))
    assert np.percentile(difference.max(axis=2), 99.9) <= 32
    assert (tmp_path / "lines.png").stat().st_size < len(buffer.getvalue())


def test_an_agent_named_optimal_is_not_taken_for_the_optimum(tmp_path) -> None:
    """The optimal agent's games are the reference others are compared with, and its
    evaluation stores them: an agent is that reference by what it plays (`Agent.optimal`), not
    by its name, so a random agent named "optimal" (a run saved under that name) stores none."""
    impostor = dataclasses.replace(make_random_agent("official"), name="optimal")
    assert not impostor.optimal
    evaluate(impostor, 8, seed=0, compare_optimal=False, progress=False, cache_dir=tmp_path)
    assert not reference_path(impostor.rules, 8, 0, tmp_path).exists()


def test_reference_games_are_keyed_by_their_table_and_the_code_that_played_them(
    tmp_path, monkeypatch
) -> None:
    """The optimal agent's cached games are named by their value table's file and checksum and
    the playing code's digest: games kept under (rules, games, seed) alone outlived a repaired
    table (found by a review session). A table re-made with other bytes, or other code, names
    other games; storing them removes the games of the old key and of the name before keys,
    not those of seed 12 beside seed 1, nor those of a rule set of the same name."""
    import dataclasses

    from yahtzee_jax import files
    from yahtzee_jax.evaluation import reports
    from yahtzee_jax.solver.value_table import cache_file, solve

    plain = RULE_VARIANTS["plain"]
    unsolved = reference_path(plain, 8, 1, tmp_path)
    solve(plain, cache_dir=tmp_path)
    first = reference_path(plain, 8, 1, tmp_path)
    assert first != unsolved
    assert first.name.startswith(f"optimal_{cache_file(plain).stem}_8g_seed1-")
    games = play_games(make_random_agent(plain), 8, seed=1)
    legacy = first.parent / "optimal_plain_8g_seed1.npz"  # the name before keys
    reports._save_reference(games, first, legacy.name)
    legacy.write_bytes(b"old games")
    other_seed = reference_path(plain, 8, 12, tmp_path)
    reports._save_reference(games, other_seed, "optimal_plain_8g_seed12.npz")
    namesake = dataclasses.replace(plain, yahtzee_bonus=True)  # same name, another table
    assert namesake.name == plain.name and cache_file(namesake) != cache_file(plain)
    other_rules = reference_path(namesake, 8, 1, tmp_path)
    reports._save_reference(games, other_rules, "unused.npz")
    sidecar = files.checksum_path(cache_file(plain, tmp_path))
    sidecar.write_text("crc32 1 2 00000000 of another table\n")  # a table of other bytes
    second = reference_path(plain, 8, 1, tmp_path)
    assert second != first
    reports._save_reference(games, second, legacy.name)
    assert not first.exists() and not legacy.exists() and second.exists()
    assert other_seed.exists() and other_rules.exists()
    monkeypatch.setattr(reports, "PLAYING_DIGEST", "other code")
    assert reference_path(plain, 8, 1, tmp_path) != second
