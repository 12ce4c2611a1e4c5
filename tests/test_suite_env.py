"""`yahtzee_jax.make` and the pure protocol (`envs.core`): hand-made positions, determinism per
key, the legal mask under random legal play, and one-line errors for a bad id or params."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yahtzee_jax
from yahtzee_jax.envs import core
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import engine, multiplayer
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.multiplayer import MatchState
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.suite import ENV_IDS, GAMES

CHANCE = 32 + 12  # the score action of Yahtzee's chance box
KEEP_ALL = 31


@functools.cache
def jitted(env_id: str, **params: object) -> tuple:
    """(params, jitted init, jitted step) of an id, compiled once per test session."""
    return yahtzee_jax.make(env_id, **params).default_params, jax.jit(core.init), jax.jit(core.step)


def full_card_but(box: int, rules_name: str = "official", **fields: jax.Array) -> State:
    """A card with every box used (2 points each, no bonus) except `box`, at its score decision."""
    rules = yahtzee_jax.suite.make_params(_id_of(rules_name)).rules
    filled = jnp.arange(rules.num_boxes) != box
    return State.empty(
        rules,
        scores=jnp.where(filled, 2, 0).astype(jnp.int32),
        filled=filled,
        turns_left=jnp.int32(1),
        roll_index=jnp.int32(2),
        **fields,
    )


@jax.jit
def _cards_equal(a: core.EnvState, b: core.EnvState) -> jax.Array:
    cards = (state.match.cards.replace(reward=jnp.int32(0)) for state in (a, b))
    return jnp.all(jnp.stack(jax.tree.leaves(jax.tree.map(jnp.array_equal, *cards))))


def same_cards(a: core.EnvState, b: core.EnvState) -> bool:
    """Every card field equal but `reward` (the last step's, which a refused step zeroes);
    jitted: `play` asks at every step, where op by op it took longer than the step."""
    return bool(_cards_equal(a, b))


def _id_of(rules_name: str) -> str:
    return next(env_id for env_id, (rules, task) in ENV_IDS.items() if rules == rules_name)


def test_every_game_has_a_game_a_single_turn_and_a_match():
    """21 ids: each of the seven games as a whole game, a single turn and a match."""
    assert len(GAMES) == 7 and len(ENV_IDS) == 21
    for game in GAMES:
        assert {f"{game}-v0", f"{game}SingleTurn-v0", f"{game}Match-v0"} <= set(ENV_IDS)


def test_the_last_box_ends_the_game_with_its_points():
    """Solitaire, one box left (chance), dice 6-6-6-6-5 at the score decision:

        card: 12 boxes hold 2 each, chance open      dice: 5 6 6 6 6     action: score chance

    The step earns 29, terminates the game, and the terminal mask is all true; stepping the
    terminated state again changes nothing and earns nothing."""
    params, _, step = jitted("Yahtzee-v0")
    card = full_card_but(12, dice=jnp.int32([5, 6, 6, 6, 6]))
    state = core.from_match(multiplayer.init(jax.random.key(0), 1, False, params.rules), params)
    state = core.from_match(state.match.replace(cards=multiplayer.stack_cards([card])), params)
    assert state.legal_action_mask.tolist() == [False] * 44 + [True]
    after = step(state, jnp.int32(CHANCE), jax.random.key(1), params)
    assert after.rewards.tolist() == [29.0] and bool(after.terminated)
    assert bool(jnp.all(after.legal_action_mask))
    again = step(after, jnp.int32(CHANCE), jax.random.key(2), params)
    assert again.rewards.tolist() == [0.0]
    assert same_cards(again, after) and bool(again.terminated)


def at_last_box(params: core.EnvParams) -> core.EnvState:
    """Solitaire at the score decision of `full_card_but(12)`: 12 boxes of 2 points (24, no
    bonus), chance open."""
    match = multiplayer.MatchState(
        cards=multiplayer.stack_cards([full_card_but(12)]), rewards=jnp.zeros(1, jnp.int32)
    )
    return core.from_match(match, params)


ILLEGAL = (KEEP_ALL, 32, 45, 99, -1)  # a keep at a score decision, the used ones box, out of range


def test_under_noop_an_illegal_action_changes_nothing():
    """``illegal_action="noop"``: a keep action at a score decision, a used box, an out-of-range
    action or a float that is not whole (44.9, which int32 would make the legal 44) is refused
    with reward 0, the card unchanged, and only the step counter moves."""
    params, _, step = jitted("Yahtzee-v0", illegal_action="noop")
    state = at_last_box(params)
    for action in (*(jnp.int32(a) for a in ILLEGAL), jnp.float32(44.9)):
        after = step(state, action, jax.random.key(0), params)
        assert after.rewards.tolist() == [0.0] and not bool(after.terminated)
        assert same_cards(after, state) and int(after.steps) == 1


def test_an_integer_beyond_int32_is_out_of_range_not_its_low_bits():
    """Called as it is, not under jit: 2**32 + 44 (a Python int, NumPy's int64 and uint64) is out
    of range and forfeits at `at_last_box`, where JAX's narrowing to int32 made it 44, the
    legal chance box, and played it; uint32's 2**32 - 1 too. NumPy's int64 44 is still 44."""
    params = yahtzee_jax.make("Yahtzee-v0").default_params
    state = at_last_box(params)
    wide = 2**32 + CHANCE
    for action in (wide, np.int64(wide), np.uint64(wide), np.uint32(2**32 - 1)):
        after = core.step(state, action, jax.random.key(0), params)
        assert after.rewards.tolist() == [-24.0] and same_cards(after, state), repr(action)
    played = core.step(state, np.int64(CHANCE), jax.random.key(0), params)
    assert bool(played.match.cards.filled[0, 12])


def test_by_default_an_illegal_action_forfeits_the_game():
    """`make`'s default ``illegal_action="terminate"``: at `at_last_box` (24 points so far) every
    illegal action, 44.9 included, ends the game with reward -24 (a return of 0: a forfeited
    game is worth nothing), the card unchanged and the mask all true; a further step, legal or
    not, changes nothing and earns 0. The legal 44 (chance, 44.0 as a float too) is played."""
    params, _, step = jitted("Yahtzee-v0")
    state = at_last_box(params)
    for action in (*(jnp.int32(a) for a in ILLEGAL), jnp.float32(44.9)):
        after = step(state, action, jax.random.key(0), params)
        assert after.rewards.tolist() == [-24.0] and bool(after.terminated)
        assert same_cards(after, state) and bool(jnp.all(after.legal_action_mask))
        again = step(after, jnp.int32(CHANCE), jax.random.key(1), params)
        assert again.rewards.tolist() == [0.0] and same_cards(again, after)
    for action in (jnp.int32(CHANCE), jnp.float32(CHANCE)):
        played = step(state, action, jax.random.key(0), params)
        assert bool(played.terminated) and bool(played.match.cards.filled[0, 12])


def test_a_forfeit_costs_the_seat_that_acted_a_loss_and_no_one_else_anything():
    """Two outside seats, "win" reward, seat 0 on turn at its first roll: its score action 44 at
    a keep decision ends the match with rewards [-1, 0] (PettingZoo's TerminateIllegalWrapper's
    outcome); under "score" [0, 0], no points taken yet: +0.0, not -0.0, which a client's log
    would print as "-0.0"."""
    for reward, expected in (("win", [-1.0, 0.0]), ("score", [0.0, 0.0])):
        params, init, step = jitted("YahtzeeMatch-v0", opponent=None, reward=reward)
        after = step(init(jax.random.key(0), params), jnp.int32(CHANCE), jax.random.key(1), params)
        assert bool(after.terminated) and after.rewards.tolist() == expected
        assert not np.signbit(np.asarray(after.rewards[0])) or reward == "win"


def mask_blind(env_id: str, action: int, **params: object) -> tuple[core.EnvState, float, int]:
    """A policy that always sends `action`, stepped until the episode ends or is truncated
    (a `while not done` loop as a client writes it): (last state, return, steps)."""
    params_, init, step = jitted(env_id, **params)
    state, total, steps = init(jax.random.key(0), params_), 0.0, 0
    while not (bool(state.terminated) or bool(state.truncated)):
        state = step(state, jnp.int32(action), jax.random.key(steps), params_)
        total, steps = total + float(state.rewards[0]), steps + 1
        assert steps <= 1000, "the episode never ended"
    return state, total, steps


def test_a_mask_blind_policy_ends_every_episode_within_its_limit():
    """Always action 0 (reroll every die) is legal at the two keep decisions and illegal at the
    score one: under "terminate" the game ends on step 3, worth 0. Always 44 (score chance)
    never becomes legal at a first roll: under "noop" the game is truncated (not terminated)
    after the default 78 steps (twice a game's 39 decisions), or after `max_steps`."""
    state, total, steps = mask_blind("Yahtzee-v0", 0)
    assert (steps, total, bool(state.terminated)) == (3, 0.0, True)
    for params, limit in (({}, 78), ({"max_steps": 50}, 50)):
        state, total, steps = mask_blind("Yahtzee-v0", CHANCE, illegal_action="noop", **params)
        assert (steps, total, bool(state.truncated), bool(state.terminated)) == (
            limit,
            0.0,
            True,
            False,
        )


def test_the_match_result_is_the_reward_of_the_step_that_ends_it():
    """Two outside seats (opponent=None), seat 1 on turn with its chance box left, dice 1-1-2-2-3:

        seat 0: full, 13 x 2 = 26     seat 1: 12 x 2 = 24 + chance 9 = 33

    Seat 1 wins: rewards [-1, +1] on that step (the "win" reward), none before it."""
    params, _, step = jitted("YahtzeeMatch-v0", opponent=None)
    rules = params.rules
    full = State.empty(
        rules,
        scores=jnp.full(rules.num_boxes, 2, jnp.int32),
        filled=jnp.ones(rules.num_boxes, bool),
        turns_left=jnp.int32(0),
        terminated=jnp.bool_(True),
    )
    last = full_card_but(12, dice=jnp.int32([1, 1, 2, 2, 3]))
    match = MatchState(cards=multiplayer.stack_cards([full, last]), current_player=jnp.int32(1))
    state = core.from_match(match, params)
    assert int(state.current_player) == 1
    after = step(state, jnp.int32(CHANCE), jax.random.key(0), params)
    assert bool(after.terminated) and after.rewards.tolist() == [-1.0, 1.0]


def test_the_opponent_plays_its_turn_inside_the_step():
    """Against greedy1, seat 0 scores its first box: in the same step greedy1 takes its whole
    turn (keep all, score) on seat 1's card, and seat 0 is on turn again with a fresh roll."""
    params, init, step = jitted("YahtzeeMatch-v0", opponent="greedy1", reward="score")
    state = init(jax.random.key(3), params)
    assert int(state.current_player) == 0
    for action in (KEEP_ALL, KEEP_ALL):
        state = step(state, jnp.int32(action), jax.random.key(4), params)
        assert int(jnp.sum(state.match.cards.filled)) == 0
    points, legal, _ = engine.current_score_options(multiplayer.card(state.match, 0), params.rules)
    box = int(jnp.argmax(jnp.where(legal, points, -1)))
    state = step(state, jnp.int32(32 + box), jax.random.key(5), params)
    assert jnp.sum(state.match.cards.filled, axis=1).tolist() == [1, 1]
    assert int(state.current_player) == 0 and int(state.match.cards.roll_index[0]) == 0
    assert float(state.rewards[0]) == float(points[box])


def test_a_later_seat_finds_the_earlier_seats_turns_played():
    """Seat 1 against greedy1: `init` returns with greedy1's first turn on seat 0's card played
    (one box used) and seat 1 on turn; the opening points are no one's reward."""
    params, init, _ = jitted("YahtzeeMatch-v0", seat=1)
    state = init(jax.random.key(0), params)
    assert int(state.current_player) == 1
    assert jnp.sum(state.match.cards.filled, axis=1).tolist() == [1, 0]
    assert state.rewards.tolist() == [0.0, 0.0]


def test_no_seat_sees_another_seats_dice():
    """Two observations of seat 0 that differ only in seat 1's dice are equal."""
    params, init, _ = jitted("YahtzeeMatch-v0", opponent=None)
    state = init(jax.random.key(0), params)
    dice = state.match.cards.dice.at[1].set(jnp.int32([6, 6, 6, 6, 6]))
    other = core.from_match(state.match.replace(cards=state.match.cards.replace(dice=dice)), params)
    assert jnp.array_equal(core.observe(state, params, 0), core.observe(other, params, 0))
    assert not jnp.array_equal(core.observe(state, params, 1), core.observe(other, params, 1))


def test_a_seat_that_is_not_one_is_refused_when_it_can_be_seen():
    """`observe(state, params, player)` with a concrete seat outside 0..players-1 (2, -1, 5, a
    JAX 3), or not an integer (True, 1.0, a pair of seats): a ValueError naming it, where 2 was
    clamped, -1 wrapped to seat 1's view and a bool or a JAX scalar taken in silence. Seats 0
    and 1 as Python, NumPy and JAX integers are each one seat's view."""
    params, init, _ = jitted("YahtzeeMatch-v0", opponent=None)
    state = init(jax.random.key(0), params)
    for player in (2, -1, np.int64(5), jnp.int32(3), True, 1.0, np.array([0, 1])):
        with pytest.raises(ValueError, match=r"player .* is not a seat of this 2-player env"):
            core.observe(state, params, player)
    for seat in (0, 1):
        views = [core.observe(state, params, player) for player in (seat, np.int8(seat))]
        views.append(core.observe(state, params, jnp.int32(seat)))
        assert all(jnp.array_equal(view, views[0]) for view in views)


@functools.partial(jax.jit, static_argnums=1)
def engine_mask(state: core.EnvState, rules: Rules) -> jax.Array:
    """The engine's legal actions on the card of the seat on turn (jitted: op by op, the checks
    of `play` took longer than its steps)."""
    return engine.legal_action_mask(multiplayer.card(state.match, state.current_player), rules)


observe = jax.jit(core.observe)


def play(env_id: str, seed: int, **params: object) -> tuple[list, int]:
    """Random legal play of one episode from `seed`: (its states, decisions), checking the mask
    and the observation's bounds at every step."""
    env = yahtzee_jax.make(env_id, **params)
    params_, init, step = jitted(env_id, illegal_action="noop", **params)
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    key, init_key = jax.random.split(key)
    state = init(init_key, params_)
    states, decisions = [state], 0
    while not bool(state.terminated):
        mask = np.asarray(state.legal_action_mask)
        assert mask.tolist() == engine_mask(state, params_.rules).tolist()
        obs = np.asarray(observe(state, params_))
        assert obs.shape == (env.observation_size,) and obs.dtype == np.float32
        assert obs.min() >= core.OBSERVATION_LOW and obs.max() <= core.OBSERVATION_HIGH
        illegal = np.flatnonzero(~mask)
        key, step_key = jax.random.split(key)
        if illegal.size:  # an illegal action is refused: nothing moves
            refused = step(state, jnp.int32(rng.choice(illegal)), step_key, params_)
            assert same_cards(refused, state)
        state = step(state, jnp.int32(rng.choice(np.flatnonzero(mask))), step_key, params_)
        states.append(state)
        decisions += 1
    assert bool(jnp.all(state.match.cards.turns_left == 0))  # every card played out
    return states, decisions


@settings(max_examples=6, deadline=None)
@given(
    game=st.sampled_from(sorted(GAMES)),
    task=st.sampled_from(["-v0", "SingleTurn-v0", "Match-v0"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_legal_play_keeps_the_mask_and_the_episode_length(game, task, seed):
    """Random legal play on any game and task: the mask is the engine's for the seat on turn,
    illegal actions are refused, observations stay in their bounds, and an episode lasts its
    decisions (a game's 3 per box, a single turn's 3) before every card is played out."""
    env_id = f"{game}{task}"
    _, decisions = play(env_id, seed, **({"opponent": "random"} if "Match" in task else {}))
    assert decisions == yahtzee_jax.make(env_id).decisions_per_episode


def test_a_key_fixes_the_episode():
    """The same key gives the same episode bit for bit, the opponent's moves included; another
    key other dice."""
    # The random opponent, whose moves come from the step's key: greedy1's turn inside the step
    # compiled 6 s longer (its own determinism: test_golden.py's recorded games).
    first, _ = play("YahtzeeMatch-v0", 7, opponent="random")
    second, _ = play("YahtzeeMatch-v0", 7, opponent="random")
    other, _ = play("YahtzeeMatch-v0", 8, opponent="random")
    for a, b in zip(first, second, strict=True):
        assert jax.tree.all(jax.tree.map(jnp.array_equal, a, b))
    assert not jnp.array_equal(first[0].match.cards.dice, other[0].match.cards.dice)


def test_vmapped_episodes_match_single_ones():
    """`vmap` of init and step over keys gives each episode exactly as played alone, the
    opponent's turn inside the step included (the random opponent, whose moves come from the
    step's key: greedy1 compiled 8 s longer under vmap, and a built-in policy's batched play
    is the match environment's, tests/test_match_env.py)."""
    params, init, step = jitted("YachtMatch-v0", opponent="random")
    keys = jax.random.split(jax.random.key(0), 4)
    batch = jax.vmap(init, in_axes=(0, None))(keys, params)
    actions = jnp.int32([3, 31, 0, 17])
    moved = jax.vmap(step, in_axes=(0, 0, 0, None))(batch, actions, keys, params)
    for i in range(4):
        alone = step(init(keys[i], params), actions[i], keys[i], params)
        one = jax.tree.map(lambda leaf, i=i: leaf[i], moved)
        assert jax.tree.all(jax.tree.map(jnp.array_equal, one, alone))


@pytest.mark.parametrize(
    ("env_id", "params", "words"),
    [
        ("Yahtzee-v1", {}, "unknown env id 'Yahtzee-v1'; choose one of: Yahtzee-v0"),
        ("Yahtzee-v0", {"players": 2}, "players=2 for Yahtzee-v0: must be 1"),
        ("Yahtzee-v0", {"reward": "win"}, "reward='win' needs a match"),
        ("YahtzeeMatch-v0", {"opponent": "win-seeker"}, "opponent='win-seeker' is not one of"),
        ("YahtzeeMatch-v0", {"reward": "points"}, "reward='points' is not one of: score, win"),
        ("YahtzeeMatch-v0", {"seat": 2}, "seat=2 must be an integer in 0..1"),
        ("YahtzeeMatch-v0", {"rules": "yatzy"}, "unknown env params rules; known: players"),
        ("Yahtzee-v0", {"illegal_action": "raise"}, "not one of: terminate, noop"),
        ("Yahtzee-v0", {"max_steps": 0}, "max_steps=0 must be a positive integer"),
        # found by a review session: taken as 1, a silent default or an error from deep inside
        ("YahtzeeMatch-v0", {"players": True}, "players=True must be an integer"),
        ("Yahtzee-v0", {"max_steps": True}, "max_steps=True must be an integer"),
        ("YahtzeeMatch-v0", {"reward": ""}, "reward='' is not one of: score, win"),
        ("YahtzeeMatch-v0", {"features": {"kind": "kang"}}, "must be a FeatureConfig"),
        ("YahtzeeMatch-v0", {"cache_dir": 3}, "cache_dir=3 must be a path"),
    ],
)
def test_a_bad_id_or_param_is_one_line(env_id, params, words):
    """A bad id or parameter raises a `UserError` of one line that says what is allowed."""
    with pytest.raises(UserError) as error:
        yahtzee_jax.make(env_id, **params)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_numpy_integers_are_integers_to_make():
    """`players=np.int64(2)`, `seat=np.int64(1)` and `max_steps=np.int64(50)` (values read
    from an array) are taken as the integers they are; "players=np.int64(2) must be an integer
    >= 1" said so once. `max_steps`, a static field, is kept as Python's int."""
    env = yahtzee_jax.make(
        "YahtzeeMatch-v0", players=np.int64(2), seat=np.int64(1), max_steps=np.int64(50)
    )
    assert (env.default_params.players, env.default_params.seat) == (2, 1)
    assert type(env.default_params.max_steps) is int and env.default_params.max_steps == 50


def test_calls_with_wrong_shapes_or_arguments_say_which_argument():
    """What an outsider gets wrong, each a one-line error naming the argument, where JAX said
    "select cases must have the same shapes", "invalid PRNG key data" or an AttributeError
    from deep inside (found by a review session): a batch of actions or keys to an unbatched
    call (the message says to vmap), an int for a key, None for params, a Yahtzee state
    stepped with Yatzy's params, `step_all` with an action too few. Shapes only, so the
    checks hold under jit and vmap (`test_vmapped_episodes_match_single_ones` plays vmapped)."""
    env = yahtzee_jax.make("Yahtzee-v0")
    params, key = env.default_params, jax.random.key(1)
    state = env.init(jax.random.key(0), params)
    cases = {
        "action must be one action, got shape (1,): for a batch, jax.vmap": lambda: env.step(
            state, jnp.array([31]), key, params
        ),
        "got shape (3,): for a batch, jax.vmap the call": lambda: env.init(
            jax.random.split(key, 3), params
        ),
        "key must be one JAX key (jax.random.key(seed)), got 0": lambda: env.init(0, params),
        "params must be the env's EnvParams": lambda: env.init(key, None),
        "a state of 13 boxes given params of yatzy (15)": lambda: env.step(
            state, 31, key, yahtzee_jax.make("Yatzy-v0").default_params
        ),
    }
    match_params = yahtzee_jax.make("YahtzeeMatch-v0", opponent=None).default_params
    match = core.init(key, match_params)
    cases["one action per seat, shape (2,), got shape (1,)"] = lambda: core.step_all(
        match, jnp.array([31]), key, match_params
    )
    for words, call in cases.items():
        with pytest.raises((ValueError, TypeError), match=re.escape(words)):
            call()
