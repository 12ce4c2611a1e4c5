"""The one environment protocol (`envs.core`) under the learners' tasks: hand-made positions,
and the batched drivers (`envs.solitaire`, `envs.match_env`) as the protocol's own functions, dice
for dice."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents.resolve import builtin_agent
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs import core
from yahtzee_jax.envs.match_env import Match, Seat
from yahtzee_jax.envs.solitaire import Game, SingleTurn
from yahtzee_jax.game import engine, multiplayer
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import OFFICIAL
from yahtzee_jax.suite import make_params

YAHTZEE_BOX = 32 + 11  # the score action of Yahtzee's yahtzee box
KEEP_ALL = 31
GAME = core.EnvParams(rules=OFFICIAL)
SINGLE_TURN = core.EnvParams(rules=OFFICIAL, whole_games=False)


def equal(a: object, b: object) -> bool:
    """Every leaf of two pytrees equal."""
    return jax.tree.all(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b))


def five_sixes_to_score() -> State:
    """Opening turn of a fresh card at its score decision, dice 6-6-6-6-6:

    card: empty, 13 turns left     dice: 6 6 6 6 6     roll: the third (score) decision
    """
    return State.empty(OFFICIAL, dice=jnp.int32([6, 6, 6, 6, 6]), roll_index=jnp.int32(2))


def test_a_lone_seat_is_dealt_and_rolled_by_the_engine_itself():
    """Without an opponent no key is split or folded: `init(key)` deals `engine.init(key)`'s
    card and `step(state, keep all, key)` rolls `engine.step`'s dice, so the protocol's game is
    the engine's (and the learners') game dice for dice."""
    key = jax.random.key(11)
    state = core.init(key, GAME)
    assert equal(core.seat_card(state, 0), engine.init(key, OFFICIAL))
    after = core.step(state, jnp.int32(0), jax.random.key(12), GAME)  # re-roll all five
    expected = engine.step(engine.init(key, OFFICIAL), jnp.int32(0), jax.random.key(12), OFFICIAL)
    assert equal(core.seat_card(after, 0), expected)


def test_scoring_five_sixes_as_a_yahtzee_earns_50_and_keeps_the_seat_on_turn():
    """Hand-made: a fresh card at its score decision with five sixes, action: score yahtzee.

    The reward is 50, the box is filled with 50, 12 turns are left, the lone seat is on turn
    again with its next opening roll (first decision), and the game goes on."""
    state = core.from_card(five_sixes_to_score(), GAME)
    assert bool(state.legal_action_mask[YAHTZEE_BOX])
    after = core.step(state, jnp.int32(YAHTZEE_BOX), jax.random.key(0), GAME)
    card = core.seat_card(after, 0)
    assert after.rewards.tolist() == [50.0] and not bool(after.terminated)
    assert int(after.current_player) == 0 and int(card.roll_index) == 0
    assert int(card.scores[11]) == 50 and bool(card.filled[11]) and int(card.turns_left) == 12


def test_one_seat_steps_as_seat_0_of_a_two_seat_match():
    """The one-seat shortcut of `multiplayer.step` (the engine's step on the card) moves the
    card exactly as the general seat-writing step moves seat 0's card of a two-seat match, on
    the five-sixes position with the same key; only the turn differs (it passes to seat 1)."""
    card = five_sixes_to_score()
    alone = multiplayer.MatchState(
        cards=multiplayer.stack_cards([card]), rewards=jnp.zeros(1, jnp.int32)
    )
    pair = multiplayer.MatchState(cards=multiplayer.stack_cards([card, card]))
    key = jax.random.key(5)
    # a legal score passes the pair's turn; an illegal keep (a no-op) passes none
    for action, next_seat in ((YAHTZEE_BOX, 1), (KEEP_ALL, 0)):
        one = multiplayer.step(alone, jnp.int32(action), key, OFFICIAL)
        two = multiplayer.step(pair, jnp.int32(action), key, OFFICIAL)
        assert equal(multiplayer.card(one, 0), multiplayer.card(two, 0))
        assert int(one.rewards[0]) == int(two.rewards[0])
        assert int(one.current_player) == 0 and int(two.current_player) == next_seat


def test_a_lone_seats_card_is_its_whole_state():
    """`from_card` and `seat_card` round trip on the five-sixes position, and the rebuilt state
    is the one `from_match` gives: seat 0 on turn, the card's reward and end, the engine's mask."""
    card = five_sixes_to_score().replace(reward=jnp.int32(7))
    state = core.from_card(card, GAME)
    assert equal(core.seat_card(state, 0), card)
    assert int(state.current_player) == 0 and state.rewards.tolist() == [7.0]
    assert not bool(state.terminated)
    assert equal(state.legal_action_mask, engine.legal_action_mask(card, OFFICIAL))


def test_the_single_turn_deals_one_turn_on_a_random_card():
    """`whole_games` off: `init(key)` deals `engine.init_single_turn(key, True)`, one turn left,
    and the turn's score decision ends the episode."""
    key = jax.random.key(3)
    state = core.init(key, SINGLE_TURN)
    card = core.seat_card(state, 0)
    assert equal(card, engine.init_single_turn(key, True, OFFICIAL))
    assert int(card.turns_left) == 1
    for _ in range(2):
        state = core.step(state, jnp.int32(KEEP_ALL), jax.random.key(4), SINGLE_TURN)
    open_box = int(jnp.argmin(core.seat_card(state, 0).filled))
    state = core.step(state, jnp.int32(32 + open_box), jax.random.key(4), SINGLE_TURN)
    assert bool(state.terminated)


def _seat_and_move(env, cards, state, play_keys, decision):
    """The protocol's card of seat 0, and a random legal move of the learners' `env` with its
    step keys."""
    step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(play_keys, decision)
    mask = env.legal_action_mask(env.observation(cards))
    actions = jnp.argmax(mask * jax.random.uniform(step_keys[0], mask.shape), axis=-1)
    return jax.vmap(core.seat_card, in_axes=(0, None))(state, 0), actions, step_keys


def test_the_learners_tasks_are_the_outside_ids_games():
    """`envs.Game` and `envs.SingleTurn` (the batched driver the one rollout runs) give the
    cards and rewards of `core.init` and `core.step` vmapped by hand with the params of the
    outside ids `Yahtzee-v0` and `YahtzeeSingleTurn-v0`, over the same keys, at every decision
    of random legal play: the learners and outside code play the same games."""
    for env_class, env_id in ((Game, "Yahtzee-v0"), (SingleTurn, "YahtzeeSingleTurn-v0")):
        params = make_params(env_id)
        env = env_class(OFFICIAL, FeatureConfig())
        keys = jax.random.split(jax.random.key(7), 4)
        cards, play_keys = env.init(keys, env.init_task(None))
        init_keys = jax.vmap(jax.random.split)(keys)[:, 0]
        state = jax.vmap(core.init, in_axes=(0, None))(init_keys, params)
        env_step = jax.jit(env.step)
        protocol_step = jax.jit(jax.vmap(core.step, in_axes=(0, 0, 0, None)))
        # op by op, a decision's checks and random move compiled each operation
        seat_and_move = jax.jit(functools.partial(_seat_and_move, env))
        for decision in range(env.episode_length):
            seat, actions, step_keys = seat_and_move(cards, state, play_keys, decision)
            assert equal(cards, seat)
            cards, rewards = env_step(cards, actions, step_keys, jnp.int32(decision))
            state = protocol_step(state, actions, step_keys, params)
            np.testing.assert_array_equal(rewards, state.rewards[:, 0])
        assert bool(jnp.all(state.terminated)) and bool(jnp.all(cards.terminated))


@pytest.mark.slow  # the match parity; fast: the game's below, test_suite_env.py, test_match_env.py
def test_the_learners_match_is_the_protocols_match():
    """Lane group g of `envs.Match` (the learner in seat g, its opponent a seat policy on its
    group's lanes) is the protocol's `init`/`step` with the outside seat g and the suite's
    built-in opponent, over the same keys and random legal play: every card, counter and the
    end reward, at the start of each of the learner's turns and at the end."""
    agent = builtin_agent("greedy1", OFFICIAL)
    seats = (Seat(agent.name, agent.policy, agent.params),)
    env = Match(OFFICIAL, FeatureConfig(), seats, players=2, reward="win")
    keys = jax.random.split(jax.random.key(5), 4)
    state, play_keys = jax.jit(env.init)(keys, env.init_task(None))
    params = make_params("YahtzeeMatch-v0", opponent="greedy1")
    seats = jnp.int32([0, 0, 1, 1])  # the lane groups of a batch of 4: halves
    protocol = jax.jit(jax.vmap(lambda key, seat: core.init(key, params.replace(seat=seat))))
    protocol_step = jax.jit(
        jax.vmap(lambda s, a, k, seat: core.step(s, a, k, params.replace(seat=seat)))
    )
    mirror = protocol(keys, seats)
    start_turn, end_turn = jax.jit(env.start_turn), jax.jit(env.end_turn)

    @jax.jit
    def decide(state, mirror, decision):
        """One decision of random legal play in both (jitted whole: eager ops cost seconds)."""
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(play_keys, decision)
        split = jax.vmap(jax.random.split)(step_keys)
        mask = env.legal_action_mask(env.observation(state))
        actions = jnp.argmax(mask * jax.random.uniform(split[0, 0], mask.shape), axis=-1)
        state, _ = env.step(state, actions, split[:, 1], decision)
        return state, protocol_step(mirror, actions, split[:, 1], seats)

    for turn in range(OFFICIAL.num_turns):
        state = start_turn(state, jnp.int32(turn))
        assert equal((state.env.match, state.env.decisions), (mirror.match, mirror.decisions))
        for roll in range(3):
            state, mirror = decide(state, mirror, jnp.int32(turn * 3 + roll))
        state = end_turn(state, jnp.int32(turn))
    assert equal(state.env.match, mirror.match) and bool(jnp.all(mirror.terminated))
    final = env.finish(state, jnp.zeros((env.episode_length, 4)))[-1]
    np.testing.assert_array_equal(final, mirror.rewards[jnp.arange(4), seats])
