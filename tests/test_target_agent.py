"""The target agent (`agents.target`): its games reach X as often as the tables say.

Games are played by the engine from hand-made cards with two boxes open, each game with its
own goal; the tables are the last layers' (partial solves, `test_targets.partial`), whose
chances `test_targets` checks against plain enumeration. What is independent here is the play:
sampled dice through `engine.step`, the agent's keeps and boxes, the final totals counted.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card_state, card_without
from test_targets import _free_the_tables, partial, partial_best  # noqa: F401 (autouse: frees its tables)

from yahtzee_jax.agents.target import device_tables, target_agent
from yahtzee_jax.game import engine
from yahtzee_jax.game.reference import final_score
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.target_layout import state_chances, target_layout


def start_cards(card: dict[str, int], games: int, key: jax.Array, rules) -> engine.State:
    """`games` copies of a Yahtzee card {box: points} at the first roll of its next turn."""
    names = rules.box_names
    filled = np.array([name in card for name in names])
    scores = np.array([card.get(name, 0) for name in names], np.int32)
    dice = jax.vmap(engine.roll_dice)(jax.random.split(key, games))
    return engine.State(
        dice=dice,
        roll_index=jnp.zeros(games, jnp.int32),
        scores=jnp.broadcast_to(jnp.asarray(scores), (games, len(names))),
        filled=jnp.broadcast_to(jnp.asarray(filled), (games, len(names))),
        yahtzee_bonus_count=jnp.zeros(games, jnp.int32),
        turns_left=jnp.full(games, int((~filled).sum()), jnp.int32),
        reward=jnp.zeros(games, jnp.int32),
        terminated=jnp.zeros(games, bool),
    )


def play_out(agent, cards: engine.State, key: jax.Array) -> np.ndarray:
    """Final totals of the cards played to the end by the agent (its params' goals)."""
    rules = agent.rules
    decisions = 3 * int(cards.turns_left[0])

    def run(params, cards, key):
        def decide(cards, key):
            actions = agent.policy(params, cards, None, None)
            keys = jax.random.split(key, len(actions))
            moved = jax.vmap(lambda c, a, k: engine.step(c, a, k, rules))(cards, actions, keys)
            return moved, None

        final, _ = jax.lax.scan(decide, cards, jax.random.split(key, decisions))
        return engine.total_score(final, rules), final.terminated

    # Playing the games is most of this module's time: its one program is compiled with LLVM's
    # optimisations, which the session turns off for its many compile-bound tests
    # (tests/conftest.py): 2.1 s of play instead of 7.2, for 0.8 s more compiling.
    lowered = jax.jit(run).lower(agent.params, cards, key)
    compiled = lowered.compile(compiler_options={"xla_backend_optimization_level": 2})
    totals, done = compiled(agent.params, cards, key)
    assert bool(np.all(done))
    return np.asarray(totals)


STRAIGHTS = card_without("small_straight", "large_straight")  # the goal-seeking case
FOURS = card_without("fours", "full_house", ones=3, sixes=24)  # played with its goal reached
MORE = np.array([20, 35, 60, 0, 71])  # straights' goals; 0: surely reached; 71: out of reach
GAMES = 2_000  # per goal whose share is measured (20, 35, 60)
# 0 and 71: every game reaches the goal, or none does, whatever it plays (what is checked is that
# the agent plays such goals through): 200 games each, as playing the games is most of the time
SURE_GAMES = 200
COUNTS = np.array([GAMES, GAMES, GAMES, SURE_GAMES, SURE_GAMES])


@pytest.fixture(scope="module")
def played() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(straights' games reaching each goal in `MORE`, `COUNTS` of them, the fours card's totals
    with its goal reached [GAMES], the plain rules' partial value table): one batch, one compile."""
    rules = get_rules("plain")
    values, best = partial_best("plain", 11)
    straights = int(COUNTS.sum())
    goals = np.concatenate([np.repeat(final_score(STRAIGHTS, 0) + MORE, COUNTS), np.zeros(GAMES)])
    agent = target_agent(rules, device_tables(best, target_layout(rules), values), goals)
    keys = jax.random.split(jax.random.key(7), 2)
    cards = jax.tree.map(
        lambda *parts: jnp.concatenate(parts),
        start_cards(STRAIGHTS, straights, keys[0], rules),
        start_cards(FOURS, GAMES, keys[1], rules),
    )
    totals = play_out(agent, cards, jax.random.key(8))
    reached = np.split((totals >= goals)[:straights], np.cumsum(COUNTS)[:-1])
    return reached, totals[straights:], values


def test_agent_reaches_each_goal_as_often_as_the_table_says(played):
    """Straights open (plain): for targets d of 20, 35 and 60 more points, the share of 2,000
    games per d that reach them is T_s(d) within 4 standard errors; at d = 35 (a large
    straight needed, or both) the target player's 0.454 is far above the value-maximiser's
    0.336 (its table's chance), so the agent plays for the goal, not for points."""
    rules = get_rules("plain")
    _, best, follow = partial("plain", 11)
    layout, state = target_layout(rules), card_state(STRAIGHTS)
    row, theirs = state_chances(best, layout, state), state_chances(follow, layout, state)
    assert len(row) == MORE[-1]  # 71 is one past the most (40 + 30)
    reached = [games.mean() for games in played[0]]
    for d, share in zip(MORE[:3], reached[:3], strict=True):
        stderr = math.sqrt(row[d] * (1 - row[d]) / GAMES)
        assert abs(share - row[d]) < 4 * stderr, (d, share, row[d])
    assert reached[3] == 1.0 and reached[4] == 0.0
    stderr = math.sqrt(theirs[35] * (1 - theirs[35]) / GAMES)
    assert row[35] - theirs[35] > 0.1 and reached[1] > theirs[35] + 8 * stderr


def test_reached_goals_play_for_points(played):
    """A goal already reached leaves every chance equal: the agent then plays the
    value-maximiser's keeps and boxes (the tie-break), so its mean over 2,000 games is the
    value table's V(s) within 4 standard errors."""
    totals, values = played[1], played[2]
    start = final_score(FOURS, 0)
    stderr = totals.std(ddof=1) / math.sqrt(GAMES)
    assert totals.mean() - start == pytest.approx(values[card_state(FOURS)], abs=4 * stderr)
    assert totals.min() >= start
