"""The optimal agent's turn plan shared across a batch (issue 46) plays the games it played.

The widget agents compute a turn's keep values once per distinct turn-start state of the batch,
a chunk of states at a time (`agents.widget_agents._shared_first_keeps`), and `play_games` carries
them from a turn's first keep to its last (the policy's memory). These tests play the real optimal
agent (the solved official and Yatzy tables) both ways and compare the games to the last die:
the shared values against the one call on each card as a batch of its own, which computes every
card's values alone.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from yahtzee_jax.agents.widget_agents import (
    PLAN_CHUNK,
    _distinct_states,
    make_greedy_agent,
    make_optimal_agent,
    plan_columns,
)
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.evaluation.records import default_batch_size, play_games
from yahtzee_jax.game.engine import batch_of_one

NUM_GAMES = 320
# Two and a half chunks: a turn computes one to three chunks, the last one padded.
BATCH_SIZE = 2 * PLAN_CHUNK + PLAN_CHUNK // 2


@pytest.fixture(scope="module")
def table_cache(tmp_path_factory) -> str:
    """A private value-table cache for this module's solves."""
    return str(tmp_path_factory.mktemp("shared_plan_tables"))


def _each_card_alone(agent):
    """The agent's one call on each card as a batch of its own: no card shares another's
    values, nothing is kept from one decision to the next."""

    def policy(params, own, others, keys):
        def one(card_and_key):
            card, key = card_and_key
            alone = batch_of_one(card)
            return agent.policy(params, alone, no_others(alone), key[None])[0]

        return jax.lax.map(one, (own, keys))

    return dataclasses.replace(agent, policy=policy)


def _assert_same_games(first, second) -> None:
    """The same boxes, points and totals in every game."""
    np.testing.assert_array_equal(first.turn_categories, second.turn_categories)
    np.testing.assert_array_equal(first.turn_points, second.turn_points)
    np.testing.assert_array_equal(first.box_scores, second.box_scores)
    np.testing.assert_array_equal(first.total, second.total)


# Yatzy's case (its solve and a second compiled play, about 40 s of `make test` on 2 cores) is
# slow; official's runs the same code path on every `make test`.
@pytest.mark.parametrize("rules", ["official", pytest.param("yatzy", marks=pytest.mark.slow)])
def test_shared_plan_plays_the_per_card_games(rules, table_cache) -> None:
    """320 optimal games with the plan shared across batches of 320 (turns of one to three
    chunks of distinct states) and each card a batch of its own, its own widget: the same
    games, bit for bit (the same actions at every float32 near-tie)."""
    agent = make_optimal_agent(rules, cache_dir=table_cache)
    shared = play_games(agent, NUM_GAMES, seed=11, batch_size=BATCH_SIZE)
    per_card = play_games(_each_card_alone(agent), NUM_GAMES, seed=11, batch_size=64)
    _assert_same_games(shared, per_card)


@pytest.mark.slow  # the shared plan stays fast for the optimal agent above
def test_greedy_shared_plan_plays_the_per_card_games() -> None:
    """Greedy level 2 (its one keep at roll index 0, shared the same way): the same games."""
    agent = make_greedy_agent(2, "official")
    shared = play_games(agent, 200, seed=3, batch_size=BATCH_SIZE)
    _assert_same_games(shared, play_games(_each_card_alone(agent), 200, seed=3, batch_size=64))


def test_distinct_states_name_each_card_column() -> None:
    """Each card's column holds a card of its own key; the distinct keys come first, counted."""
    keys = np.array([5, 3, 5, 9, 3, 3, 7], np.int32)
    representative, inverse, count = (np.asarray(x) for x in _distinct_states(keys))
    assert count == 4
    np.testing.assert_array_equal(keys[representative[inverse]], keys)
    assert len(set(keys[representative[:count]].tolist())) == count


def test_widget_agents_ask_for_whole_chunks_of_games() -> None:
    """On the CPU the widget agents play larger batches than the default, of whole chunks."""
    agent = make_greedy_agent(3, "official")
    size = default_batch_size(agent.policy)
    assert size > default_batch_size() and plan_columns(size) == size
