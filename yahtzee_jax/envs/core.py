"""The one environment protocol: pure `init`, `step`, `observe` over a params pytree.

In pgx's and gymnax's spirit: `init(key, params)`, `step(state, action, key, params)`,
`observe(state, params, player)`, a legal-action mask and per-player rewards in the state,
`current_player` and `terminated`. Every task is a match (`game.multiplayer`): solitaire is a
match of one seat, the single turn a one-seat match on a random card (`EnvParams.whole_games`
off), and an N-player match either has every seat played from outside (PettingZoo) or one seat
from outside and the others by the environment (`opponent`), whose turns `step` plays before
it returns. The package's solitaire tasks (`envs.solitaire`, which every learner, evaluation and
play of a solitaire game runs) are these functions vmapped; so are the outside adapters
(`suite`). The learners' match (`envs.match_env`) drives the same pieces over a batch seated by lane
group: `deal`, the outside seat's `move`, each opponent's turn (`seat_turn`, `seat_decision`)
and the end-of-match reward (`terminal_rewards`), so how a seat is played, when a match ends
and who won exist once (see docs/architecture.md).

Keys: the outside seat's are arguments (a planner cannot see future dice). Without an opponent
a key is used as it is: `init`'s deals the card (one seat: exactly `engine.init(key)`), `step`'s
rolls the dice (exactly `engine.step`'s), so a game here is the learners' game dice for dice.
With an opponent `init`'s key splits into (init key, play key), and each seat deals and plays
from its own fold of them; the seats the environment plays draw from their play keys, kept in
the state with their decision counters (`EnvState.play_keys`, `decisions`), which `observe`
never shows: the learners' match's streams. A terminated state steps to itself with zero
rewards, and its mask is all true (pgx's convention: a policy never divides by zero).

An illegal action (one the mask refuses, out of range, or a float that is not a whole number)
does what `EnvParams.illegal_action` says. "noop" (the engine's convention, which the learners
run: they never send one) leaves the state unchanged with zero rewards. "terminate" (the outside
envs' default, `suite.make`) forfeits the game: the episode ends at once, and a forfeited game is
worth nothing, so the seat that acted gets minus its points so far under the "score" reward (its
return is 0; in a single turn, where points come only with the last decision, 0) and -1, a loss
as in pgx, under "win"; every other seat gets 0, as PettingZoo's `TerminateIllegalWrapper` does.
A policy that ignores the mask then ends every game within its legal length and learns that an
illegal action costs what the whole game is worth. `EnvParams.max_steps` truncates an episode
after that many steps (`EnvState.truncated`), so that a mask-blind policy under "noop" cannot
loop forever; a legal game never needs more than `decisions_per_episode` steps.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.caller_input import check_actions, check_key, whole_action
from yahtzee_jax.envs.environment import Policy, no_others
from yahtzee_jax.envs.opponent_features import match_feature_size, match_features
from yahtzee_jax.envs.rewards import FIXED_GOAL, terminal_reward
from yahtzee_jax.game import engine, multiplayer
from yahtzee_jax.game.engine import State, batch_of_one
from yahtzee_jax.game.multiplayer import MatchState
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, Rules

REWARDS = ("score", "win")
ILLEGAL_ACTIONS = ("terminate", "noop")
# Every feature lies in [-1, 1] except the game progress, which reaches 13/12 once the card is
# full (`envs.features`): the observation space's bounds.
OBSERVATION_LOW, OBSERVATION_HIGH = -1.0, 2.0


@struct.dataclass
class EnvParams:
    """What an environment is: its rules, episodes, seats, opponent and reward (static but
    `seat` and the opponent's parameters).

    rules: the rule set (`game.rules.RULE_VARIANTS`).
    whole_games: an episode is a whole game from empty cards; off, one turn on a random card
      (the single turn).
    players: seats at the table (1 for the solitaire tasks).
    reward: "score" (each step's change in the player's total) or "win" (+1, 0 or -1 when the
      match ends, for the sole top score, a share of it, or less); the learners' match also
      ends on Yuan's terminal rewards (`envs.rewards`, `terminal_rewards`).
    opponent: who plays every seat but `seat` (a built-in agent's name, or the learners'
      match's seats), or None: every seat is played from outside.
    opponent_policy, opponent_params: the built-in agent's policy (the one signature,
      `envs.environment.Policy`, shown no other card) and its parameters, which `step` plays.
    features: the observation's layout (`envs.features`).
    seat: the seat played from outside when `opponent` is set.
    common_dice: with an opponent, every seat deals and plays from the match's own keys.
    illegal_action: what an illegal action does, "noop" or "terminate" (see the module's doc).
    max_steps: steps after which an episode is truncated, or None (no limit).
    """

    rules: Rules = struct.field(pytree_node=False)
    whole_games: bool = struct.field(pytree_node=False, default=True)
    players: int = struct.field(pytree_node=False, default=1)
    reward: str = struct.field(pytree_node=False, default="score")
    opponent: str | None = struct.field(pytree_node=False, default=None)
    opponent_policy: Policy | None = struct.field(pytree_node=False, default=None)
    opponent_params: Any = None
    features: FeatureConfig = struct.field(pytree_node=False, default=FeatureConfig())
    seat: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    common_dice: bool = struct.field(pytree_node=False, default=False)
    illegal_action: str = struct.field(pytree_node=False, default="noop")
    max_steps: int | None = struct.field(pytree_node=False, default=None)


@struct.dataclass
class EnvState:
    """A position: the match (every seat's card), who moves, the last step's rewards, and
    each seat's dice stream.

    current_player: int32, the seat whose decision it is (the outside seat when `opponent`).
    rewards: float32[P], each seat's reward from the step that produced this state.
    terminated: bool, the episode is over.
    legal_action_mask: bool[num_actions] of `current_player` (all true once terminated).
    play_keys: key[P], each seat's play key: a seat the environment plays takes its decision
      d with ``split(fold_in(play key, d))`` = (policy key, dice key). The outside seats'
      dice come from the keys given to `step`; `observe` never shows a key.
    decisions: int32[P], the decisions each seat has taken (its next one's d).
    steps: int32, the calls of `step` (or `step_all`) since `init`, refused actions included.
    truncated: bool, the episode reached `EnvParams.max_steps` unfinished.
    """

    match: MatchState
    current_player: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    legal_action_mask: jax.Array
    play_keys: jax.Array
    decisions: jax.Array
    steps: jax.Array
    truncated: jax.Array


def num_actions(params: EnvParams) -> int:
    """Actions: 32 keeps, then one per box (45 in Yahtzee)."""
    return params.rules.num_actions


def decisions_per_episode(params: EnvParams) -> int:
    """Decisions of the outside seat(s) in one legal episode (every seat's when all are
    outside): 3 per box of a game, 3 in a single turn."""
    if not params.whole_games:
        return DECISIONS_PER_TURN
    seats = 1 if params.opponent else params.players
    return params.rules.decisions_per_game * seats


def observation_size(params: EnvParams) -> int:
    """Length of `observe`'s vector: the own card's features, then 15 per other seat."""
    return match_feature_size(params.features, params.players, params.players > 1, params.rules)


def from_match(
    match: MatchState,
    params: EnvParams,
    rewards: jax.Array | None = None,
    play_keys: jax.Array | None = None,
    decisions: jax.Array | None = None,
    steps: jax.Array | None = None,
) -> EnvState:
    """The state of a match position (a test builds one by hand), `rewards` zero by default,
    play keys those of ``key(0)`` and no decisions or steps taken unless given."""
    if rewards is None:
        rewards = jnp.zeros(params.players)
    if play_keys is None:
        play_keys = jax.random.split(jax.random.key(0), params.players)
    if decisions is None:
        decisions = jnp.zeros(params.players, jnp.int32)
    return EnvState(
        match=match,
        current_player=match.current_player,
        rewards=rewards.astype(jnp.float32),
        terminated=match.terminated,
        legal_action_mask=multiplayer.legal_action_mask(match, params.rules),
        play_keys=play_keys,
        decisions=decisions,
        steps=jnp.int32(0) if steps is None else steps,
        truncated=jnp.bool_(False),
    )


def _moved(state: EnvState, match: MatchState, rewards: jax.Array, params: EnvParams) -> EnvState:
    """`state` moved on to `match` with `rewards`, its dice streams and counters kept."""
    return from_match(match, params, rewards, state.play_keys, state.decisions, state.steps)


def from_card(card: State, params: EnvParams) -> EnvState:
    """The state of a lone seat without an opponent: its card is all of it (who moves, the
    last reward and the end are the card's), so a batched driver may carry the card alone."""
    match = MatchState(
        cards=multiplayer.stack_cards([card]),
        current_player=jnp.int32(0),
        rewards=card.reward[None],
        terminated=card.terminated,
    )
    return from_match(match, params, match.rewards)


def _first_match(key: jax.Array, params: EnvParams) -> MatchState:
    """The dealt cards without an opponent: a lone seat's from the key itself (the engine's
    deal), else seat p's from ``fold_in(key, p)``."""
    if params.whole_games:
        return multiplayer.init(key, params.players, params.players == 1, params.rules)
    return multiplayer.opening(
        multiplayer.stack_cards([engine.init_single_turn(key, True, params.rules)])
    )


def deal(key: jax.Array, params: EnvParams, seat: jax.Array | int | None = None) -> EnvState:
    """A fresh episode before anyone has moved (seat 0 on turn), the outside seat `seat`
    (default `params.seat`).

    Without an opponent the key deals as `_first_match` says. With one it splits into (init
    key, play key); the seat r places after the outside one (r = 0 for it) deals from
    ``fold_in(init key, r)`` and plays from ``fold_in(play key, r)``, or from the two keys
    themselves with `common_dice`: the learners' match's streams, which the golden
    regression records.
    """
    players = params.players
    if params.opponent is None:
        keys = jax.vmap(lambda p: jax.random.fold_in(key, p))(jnp.arange(players))
        return from_match(_first_match(key, params), params, play_keys=keys)
    if not params.whole_games:
        raise ValueError("an opponent plays whole games")
    seat = params.seat if seat is None else seat
    init_key, play_key = jax.random.split(key)

    def seat_key(base: jax.Array, player: int) -> jax.Array:
        return base if params.common_dice else jax.random.fold_in(base, (player - seat) % players)

    seats = range(players)
    cards = [engine.init(seat_key(init_key, p), params.rules) for p in seats]
    match = multiplayer.opening(multiplayer.stack_cards(cards))
    play_keys = jnp.stack([seat_key(play_key, p) for p in seats])
    return from_match(match, params, play_keys=play_keys)


def move(state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams) -> EnvState:
    """The player on turn takes `action` with the dice of `key`, and nothing else: no other
    seat moves and no end-of-match reward (`step` adds those). Its counter counts the
    decision when it was legal and the match was on."""
    action = whole_action(action)
    match = multiplayer.step(state.match, action, key, params.rules)
    taken = ~state.terminated & is_legal(state.legal_action_mask, action)
    # A select, not a scatter: vmapped over a batch a scatter is the slower program on the CPU
    on_turn = jnp.arange(params.players) == state.current_player
    decisions = state.decisions + (on_turn & taken).astype(jnp.int32)
    return from_match(match, params, match.rewards, state.play_keys, decisions, state.steps)


def seat_decision(
    states: EnvState,
    policy: Policy,
    policy_params: Any,
    params: EnvParams,
    shown: State | None = None,
    seat: int | None = None,
) -> EnvState:
    """One decision of the seat on turn in a batch of matches [b], played by `policy` from that
    seat's dice stream: decision d of its play key k takes ``split(fold_in(k, d))`` = (policy
    key, dice key). `shown` [b, K] are the other cards the policy is shown (none by default);
    `seat`, when the caller knows it, is the seat on turn in every lane (static slices).

    The one way an environment plays a seat: the built-in opponent of `step`, and each seat of
    the learners' match (`envs.match_env`) on its lane group.
    """
    if seat is None:
        lanes = jnp.arange(states.current_player.shape[0])
        play_keys = states.play_keys[lanes, states.current_player]
        counts = states.decisions[lanes, states.current_player]
        own = jax.vmap(multiplayer.current_card)(states.match)
    else:
        play_keys, counts = states.play_keys[:, seat], states.decisions[:, seat]
        own = jax.tree.map(lambda leaf: leaf[:, seat], states.match.cards)
    split = jax.vmap(lambda key, d: jax.random.split(jax.random.fold_in(key, d)))(play_keys, counts)
    shown = no_others(own) if shown is None else shown
    actions = policy(policy_params, own, shown, split[:, 0])
    return jax.vmap(move, in_axes=(0, 0, 0, None))(states, actions, split[:, 1], params)


def seat_turn(
    states: EnvState,
    policy: Policy,
    policy_params: Any,
    params: EnvParams,
    shown: State | None = None,
    seat: int | None = None,
) -> EnvState:
    """The whole turn of the seat on turn in a batch of matches [b] at a turn's first roll
    (its three decisions, `seat_decision`), the others `shown` it unchanged meanwhile."""

    # A scan over the rolls, not an unrolled loop: the policy's (large) program is compiled
    # once per call instead of three times.
    def decide(states: EnvState, _: jax.Array) -> tuple[EnvState, None]:
        return seat_decision(states, policy, policy_params, params, shown, seat), None

    return jax.lax.scan(decide, states, jnp.arange(DECISIONS_PER_TURN))[0]


def _opponents_move(state: EnvState, rewards: jax.Array, params: EnvParams) -> EnvState:
    """The built-in opponent plays every seat's decisions until the outside seat is on turn;
    the state's rewards are `rewards` plus every seat's points meanwhile.

    A while loop, not a fixed scan: vmapped episodes of equal length move in lockstep, so the
    opponent's program runs only on the steps where a turn passes (its score decisions).
    """

    def waiting(carry: tuple[EnvState, jax.Array]) -> jax.Array:
        state = carry[0]
        return (state.current_player != params.seat) & ~state.terminated

    def decide(carry: tuple[EnvState, jax.Array]) -> tuple[EnvState, jax.Array]:
        state, total = carry
        moved = seat_decision(
            batch_of_one(state), params.opponent_policy, params.opponent_params, params
        )
        state = jax.tree.map(lambda leaf: leaf[0], moved)
        return state, total + state.rewards

    state, rewards = jax.lax.while_loop(waiting, decide, (state, rewards.astype(jnp.float32)))
    return state.replace(rewards=rewards)


def terminal_rewards(
    match: MatchState, params: EnvParams, goal: jax.Array | float = FIXED_GOAL
) -> jax.Array:
    """float32[P]: each seat's end-of-match reward under `params.reward` against the best
    other total (`envs.rewards.terminal_reward`: "win" is +1, 0, -1 for the sole top score, a
    share of it, or less); `goal` is the moving goal's total."""
    totals = multiplayer.total_scores(match, params.rules)
    best_other = totals - multiplayer.outcome(match, params.rules).margins
    return terminal_reward(params.reward, totals, best_other, goal)


def _final_rewards(
    before: jax.Array, match: MatchState, rewards: jax.Array, params: EnvParams
) -> jax.Array:
    """`rewards`, or under the "win" reward the result on the step that ends the match."""
    if params.reward == "score":
        return rewards
    ended = match.terminated & ~before
    return jnp.where(ended, terminal_rewards(match, params), 0.0)


def check_call(params: EnvParams, key: jax.Array, state: EnvState | None = None) -> None:
    """One-line errors for what a caller can get wrong before JAX's own, deep inside, would say
    it: params that are not, a key that is not one key (a batch wants `jax.vmap`), a state of
    another game. Shapes only: they are known under `jit` and `vmap` too."""
    if not isinstance(params, EnvParams):
        raise TypeError(f"params must be the env's EnvParams (env.default_params), got {params!r}")
    check_key(key)
    if state is not None and state.match.cards.scores.shape[-1] != params.rules.num_boxes:
        raise ValueError(
            f"a state of {state.match.cards.scores.shape[-1]} boxes given params of "
            f"{params.rules.name} ({params.rules.num_boxes}): not this env's state"
        )


def init(key: jax.Array, params: EnvParams) -> EnvState:
    """A fresh episode; seats before the outside one have already played their first turn."""
    check_call(params, key)
    state = deal(key, params)
    if params.opponent is None:
        return state
    # The opening turns' points are not a reward: no action of the outside seat earned them.
    opening = jnp.zeros(params.players)
    return _opponents_move(state, opening, params).replace(rewards=opening)


def step(state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams) -> EnvState:
    """The player on turn takes `action` (the key rolls its dice, as the engine's step takes
    it); then any built-in opponents take theirs, from their own dice streams. An illegal
    action and the step limit do what `params` says (the module's doc)."""
    check_call(params, key, state)
    check_actions(action, ())
    action = whole_action(action)
    moved = move(state, action, key, params)
    if params.opponent is not None:
        moved = _opponents_move(moved, moved.rewards, params)
    rewards = _final_rewards(state.terminated, moved.match, moved.rewards, params)
    moved = moved.replace(rewards=rewards.astype(jnp.float32))
    on_turn = jnp.arange(params.players) == state.current_player
    illegal = on_turn & ~is_legal(state.legal_action_mask, action)
    return _limited(state, illegal, moved, params)


def step_all(state: EnvState, actions: jax.Array, key: jax.Array, params: EnvParams) -> EnvState:
    """Every seat takes one decision on its own card at once (simultaneous turns, `actions[P]`).

    Yahtzee's cards do not interact, so this is the match with each round played at once: a
    seat sees the others' cards as they stood after the last round. Each seat's dice come from
    ``fold_in(key, seat)``.
    """
    check_call(params, key, state)
    check_actions(actions, (params.players,))
    rules, cards = params.rules, state.match.cards
    actions = whole_action(actions)
    keys = jax.vmap(lambda seat: jax.random.fold_in(key, seat))(jnp.arange(params.players))
    moved = jax.vmap(lambda card, a, k: engine.step(card, a, k, rules))(cards, actions, keys)
    match = state.match.replace(
        cards=moved, rewards=moved.reward, terminated=jnp.all(moved.terminated)
    )
    rewards = _final_rewards(state.terminated, match, moved.reward, params)
    masks = jax.vmap(lambda card: engine.legal_action_mask(card, rules))(cards)
    illegal = ~is_legal(masks, actions)
    return _limited(state, illegal, _moved(state, match, rewards, params), params)


def is_legal(mask: jax.Array, action: jax.Array) -> jax.Array:
    """Whether `action` is allowed by `mask` (bool[..., A]); an out-of-range one never is (a
    one-hot match, where a gather would clamp 100 to the last action)."""
    hits = jnp.arange(mask.shape[-1]) == jnp.asarray(action)[..., None]
    return jnp.any(hits & mask, axis=-1)


def _select(flag: jax.Array, chosen: EnvState, other: EnvState) -> EnvState:
    return jax.tree.map(lambda a, b: jax.lax.select(flag, a, b), chosen, other)


def _limited(before: EnvState, illegal: jax.Array, after: EnvState, params: EnvParams) -> EnvState:
    """`after`, the step from `before` in which the seats `illegal` (bool[P]) acted illegally,
    with one more step counted and the params' outcome of an illegal action and step limit."""
    after = after.replace(steps=before.steps + 1)
    if params.illegal_action == "terminate":
        if params.reward == "win":
            worth = jnp.ones(params.players)
        elif params.whole_games:
            worth = multiplayer.total_scores(before.match, params.rules).astype(jnp.float32)
        else:
            worth = jnp.zeros(params.players)
        match = before.match.replace(terminated=jnp.bool_(True))
        rewards = jnp.where(illegal, 0.0 - worth, 0.0)  # not -worth: -0.0 where nothing is lost
        forfeit = from_match(match, params, rewards, before.play_keys, before.decisions)
        after = _select(jnp.any(illegal), forfeit.replace(steps=after.steps), after)
    if params.max_steps is not None:
        after = after.replace(truncated=~after.terminated & (after.steps >= params.max_steps))
    if params.illegal_action == "terminate" or params.max_steps is not None:
        # An episode ended by either stays as it is: a further step changes nothing, earns 0.
        idle = before.replace(rewards=jnp.zeros_like(before.rewards))
        after = _select(before.terminated | before.truncated, idle, after)
    return after


def observe(state: EnvState, params: EnvParams, player: jax.Array | int | None = None) -> jax.Array:
    """float32[observation_size]: `player`'s view (default: the player on turn).

    Its own card's features, then for each other seat (in seat order after it) its open boxes,
    upper total and the score difference; never another seat's dice.
    """
    seat = state.current_player if player is None else player
    if (
        player is not None
        and not isinstance(player, jax.core.Tracer)
        and not _is_seat(player, params)
    ):
        # A traced seat cannot be checked; a concrete one out of range was clamped or wrapped
        # to another seat's view without a word, a bool or a float taken as a seat.
        raise ValueError(f"player {player!r} is not a seat of this {params.players}-player env")
    opponents = params.players > 1
    return match_features(state.match, seat, params.features, params.rules, opponents)


def _is_seat(player: object, params: EnvParams) -> bool:
    """Whether a concrete `player` is one integer in 0 .. players - 1 (a JAX or NumPy scalar
    of an integer type too; not a bool)."""
    value = np.asarray(player)
    integer = np.issubdtype(value.dtype, np.integer)
    return value.ndim == 0 and integer and 0 <= int(value) < params.players


def seat_card(state: EnvState, player: jax.Array | int) -> State:
    """`player`'s own card (the engine's state: what the learners observe alone)."""
    return multiplayer.card(state.match, player)


def seat_legal_action_mask(
    state: EnvState, params: EnvParams, player: jax.Array | int
) -> jax.Array:
    """bool[num_actions]: `player`'s legal actions on its own card (all true once it is full)."""
    return engine.legal_action_mask(seat_card(state, player), params.rules)


def total_scores(state: EnvState, params: EnvParams) -> jax.Array:
    """Each seat's total score so far, bonuses included (int32[P])."""
    return multiplayer.total_scores(state.match, params.rules)
