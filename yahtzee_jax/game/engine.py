"""Pure, jittable Yahtzee engine: `init`, `step`, `legal_action_mask`.

A game is exactly ``rules.decisions_per_game`` decisions: each turn (one per box: 13 in Yahtzee,
39 decisions) is keep, keep, score. Actions are one integer in [0, ``rules.num_actions``):
``a < 32`` keeps the sorted dice whose bit is set in ``a`` and re-rolls the rest (31 keeps all
five); ``a >= 32`` scores box ``a - 32``. The reward of a step is the change in the total score,
bonuses included. A `State`'s card arrays are as long as the rule set's box table (`init`).

An illegal action (a score action during a keep decision, a keep action during a score decision,
a used or Joker-forbidden box, or any action once the game is over) leaves the state unchanged
with reward 0: it can never corrupt a game. Use :func:`step_checked` outside `jit` to get a
clear error instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import (
    NUM_DICE,
    NUM_FACES,
    NUM_KEEP_ACTIONS,
    Rules,
    base_scores,
    face_counts,
    get_rules,
    score_options,
)

LAST_ROLL = 2  # roll_index at the scoring decision


def _int(value: int = 0) -> jax.Array:
    return jnp.int32(value)


@struct.dataclass(kw_only=True)
class State:
    """A Yahtzee position. The card's fields (`scores`, `filled`, `turns_left`) are sized by a
    rule set and have no default: `State.empty(rules, **fields)` builds a position of any rule
    set, by hand in tests too; the others default to a fresh first roll.

    dice: int32[5], sorted ascending, faces 1..6.
    roll_index: int32, 0 and 1 are keep decisions, 2 is the scoring decision.
    scores: int32[boxes], points written in each box (0 while open).
    filled: bool[boxes], which boxes are used.
    yahtzee_bonus_count: int32, number of Yahtzee bonuses earned.
    turns_left: int32, scoring decisions left in this episode (one per box for a game, 1 for a
      single turn).
    reward: int32, the reward of the step that produced this state.
    terminated: bool, no decisions left.
    """

    # Keyword-only: the field order (and so the pytree's leaf order) is unchanged while the
    # card's fields lose the defaults that sized them for Yahtzee's 13 boxes.
    dice: jax.Array = struct.field(default_factory=lambda: jnp.ones(NUM_DICE, jnp.int32))
    roll_index: jax.Array = struct.field(default_factory=_int)
    scores: jax.Array
    filled: jax.Array
    yahtzee_bonus_count: jax.Array = struct.field(default_factory=_int)
    turns_left: jax.Array
    reward: jax.Array = struct.field(default_factory=_int)
    terminated: jax.Array = struct.field(default_factory=lambda: jnp.bool_(False))

    @classmethod
    def empty(cls, rules: Rules, **fields: jax.Array) -> State:
        """The empty card of `rules` (every box open, a whole game to play), `fields` replaced."""
        card = {
            "scores": jnp.zeros(rules.num_boxes, jnp.int32),
            "filled": jnp.zeros(rules.num_boxes, jnp.bool_),
            "turns_left": _int(rules.num_turns),
        }
        return cls(**{**card, **fields})


def _random_faces(key: jax.Array) -> jax.Array:
    """Five independent fair faces 1..6, unsorted (int32[5])."""
    # 32 random bits mod 6: the bias (2**32 % 6 = 4 in 2**32) is below 1e-9 per face, and one
    # threefry call is several times cheaper than `randint`'s two.
    bits = jax.random.bits(key, (NUM_DICE,), jnp.uint32)
    return (bits % NUM_FACES).astype(jnp.int32) + 1


def _sorted_dice(counts: jax.Array) -> jax.Array:
    """Sorted dice with the given face counts: die i is 1 + #faces with cumulative count <= i."""
    cumulative = jnp.cumsum(counts)
    return 1 + jnp.sum(cumulative <= jnp.arange(NUM_DICE)[:, None], axis=-1, dtype=jnp.int32)


def roll_dice(key: jax.Array) -> jax.Array:
    """Five fair dice, sorted ascending (int32[5])."""
    return _sorted_dice(face_counts(_random_faces(key)))


def checked_rules(rules: Rules) -> Rules:
    """`rules` itself, or a TypeError in one line when it is not a `Rules` (a name such as
    "official" gave an AttributeError about a field deep in the engine)."""
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a Rules (get_rules({rules!r}) for a name), got {rules!r}")
    return rules


def init(key: jax.Array, rules: Rules) -> State:
    """Start a full game of `rules`: empty score card, first roll of the first turn."""
    return State.empty(checked_rules(rules), dice=roll_dice(key))


def batch_of_one(tree: State | jax.Array) -> State | jax.Array:
    """An unbatched state (or key, or any pytree) as a batch of one: a leading axis of 1."""
    return jax.tree.map(lambda leaf: leaf[None], tree)


def empty_cards(batch_shape: tuple[int, ...], rules: Rules) -> State:
    """Empty cards of a batch shape: a match's blank opponents, an agent that reads them alone."""
    blank = State.empty(rules)
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, batch_shape + leaf.shape), blank)


def upper_total(state: State, rules: Rules) -> jax.Array:
    """Sum of the upper boxes (uncapped)."""
    return jnp.sum(state.scores[..., : rules.num_upper], axis=-1)


def upper_bonus(state: State, rules: Rules) -> jax.Array:
    """The upper bonus (35 in Yahtzee) if the upper boxes reach its threshold (63), else 0."""
    reached = upper_total(state, rules) >= rules.upper_bonus_threshold
    return jnp.where(reached, rules.upper_bonus_points, 0).astype(jnp.int32)


def total_score(state: State, rules: Rules) -> jax.Array:
    """Total score so far: boxes + upper bonus + Yahtzee bonuses."""
    boxes = jnp.sum(state.scores, axis=-1)
    bonuses = rules.yahtzee_bonus_points * state.yahtzee_bonus_count
    return boxes + upper_bonus(state, rules) + bonuses


def turn_index(state: State) -> jax.Array:
    """Number of used boxes, the paper's t (0..13 in Yahtzee)."""
    return jnp.sum(state.filled, axis=-1, dtype=jnp.int32)


def current_score_options(state: State, rules: Rules) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`score_options` for the state's dice and card: (points[boxes], legal[boxes], bonus)."""
    yahtzee_box = state.scores[rules.yahtzee_box]
    return score_options(face_counts(state.dice), state.filled, yahtzee_box, rules)


def legal_action_mask(state: State, rules: Rules) -> jax.Array:
    """Legal actions, bool[num_actions]; all true once terminated (a policy never divides by 0)."""
    _, legal_boxes, _ = current_score_options(state, checked_rules(rules))
    keeping = state.roll_index < LAST_ROLL
    mask = jnp.concatenate([jnp.broadcast_to(keeping, (NUM_KEEP_ACTIONS,)), legal_boxes & ~keeping])
    return mask | state.terminated


def _keep_and_reroll(state: State, action: jax.Array, fresh: jax.Array) -> State:
    keep = ((action >> jnp.arange(NUM_DICE)) & 1) == 1
    counts = face_counts(jnp.where(keep, state.dice, fresh))
    return state.replace(dice=_sorted_dice(counts), roll_index=state.roll_index + 1, reward=_int())


def _score(
    state: State, category_mask: jax.Array, options: tuple, fresh: jax.Array, rules: Rules
) -> State:
    points, _, bonus = options
    turns_left = state.turns_left - 1
    scored = state.replace(
        scores=jnp.where(category_mask, points, state.scores),
        filled=state.filled | category_mask,
        yahtzee_bonus_count=state.yahtzee_bonus_count + bonus.astype(jnp.int32),
        turns_left=turns_left,
        roll_index=_int(),
        dice=jnp.where(turns_left > 0, _sorted_dice(face_counts(fresh)), state.dice),
        terminated=turns_left == 0,
    )
    reward = total_score(scored, rules) - total_score(state, rules)
    return scored.replace(reward=reward.astype(jnp.int32))


def step(state: State, action: jax.Array, key: jax.Array, rules: Rules) -> State:
    """Apply one decision; the key supplies the re-rolled (or next turn's) dice."""
    rules = checked_rules(rules)
    action = jnp.asarray(action, jnp.int32)
    fresh = _random_faces(key)
    options = current_score_options(state, rules)
    keeping = state.roll_index < LAST_ROLL
    # Legality via a one-hot match (no gather); an out-of-range action matches nothing.
    is_keep = (action >= 0) & (action < NUM_KEEP_ACTIONS)
    category_mask = jnp.arange(rules.num_boxes) == action - NUM_KEEP_ACTIONS
    legal_score = jnp.any(category_mask & options[1])
    is_legal = jnp.where(keeping, is_keep, legal_score) & ~state.terminated
    kept = _keep_and_reroll(state, action, fresh)
    scored = _score(state, category_mask, options, fresh, rules)
    moved = jax.tree.map(lambda a, b: jnp.where(keeping, a, b), kept, scored)
    unchanged = state.replace(reward=_int())
    return jax.tree.map(lambda a, b: jnp.where(is_legal, a, b), moved, unchanged)


def init_single_turn(key: jax.Array, random_context: bool, rules: Rules) -> State:
    """The paper's single-turn task (section 3.3): one turn of 3 decisions on the same engine.

    With ``random_context`` a uniformly random number (0..boxes-1) of random boxes is already
    used, each holding the score of an independent random roll in that box; otherwise the card
    is empty.
    """
    dice_key, count_key, order_key, card_key = jax.random.split(key, 4)
    if not random_context:
        return State.empty(rules, dice=roll_dice(dice_key), turns_left=_int(1))
    boxes = rules.num_boxes
    num_filled = jax.random.randint(count_key, (), 0, boxes)
    rank = jnp.argsort(jax.random.uniform(order_key, (boxes,)))
    filled = rank < num_filled
    card_dice = jax.random.randint(card_key, (boxes, NUM_DICE), 1, NUM_FACES + 1)
    card_scores = jax.vmap(lambda dice: base_scores(face_counts(dice), rules))(card_dice)
    scores = jnp.where(filled, jnp.diagonal(card_scores), 0).astype(jnp.int32)
    return State(dice=roll_dice(dice_key), scores=scores, filled=filled, turns_left=_int(1))


class IllegalActionError(UserError):
    """Raised by :func:`step_checked` for an action that is not legal in the state."""


def describe_action(action: int, rules: Rules) -> str:
    """Human-readable action: 'keep [..]' or 'score <box>'."""
    action = int(action)
    if 0 <= action < NUM_KEEP_ACTIONS:
        kept = [i for i in range(NUM_DICE) if action >> i & 1]
        return f"keep dice at positions {kept}"
    if NUM_KEEP_ACTIONS <= action < rules.num_actions:
        return f"score {rules.box_names[action - NUM_KEEP_ACTIONS]}"
    return f"out-of-range action {action} (valid: 0..{rules.num_actions - 1})"


def step_checked(state: State, action: int, key: jax.Array, rules: str | Rules) -> State:
    """`step` for one concrete (unbatched) state; raises `IllegalActionError` on a bad action."""
    rules = get_rules(rules)
    if bool(state.terminated):
        raise IllegalActionError("the game is over: no action is legal in a terminated state")
    legal = np.asarray(legal_action_mask(state, rules))
    action = int(action)
    if not (0 <= action < rules.num_actions) or not legal[action]:
        phase = "keep" if int(state.roll_index) < LAST_ROLL else "score"
        allowed = ", ".join(describe_action(a, rules) for a in np.flatnonzero(legal))
        allowed_text = allowed if phase == "score" else "any keep action 0..31"
        raise IllegalActionError(
            f"illegal action {action} ({describe_action(action, rules)}) at a {phase} decision "
            f"with dice {np.asarray(state.dice).tolist()}; legal: {allowed_text}"
        )
    return step(state, jnp.int32(action), key, rules)
