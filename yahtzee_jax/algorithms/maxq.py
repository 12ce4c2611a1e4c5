"""Tabular two-level MAXQ-Q (Kang & Schroeder's HRL, seed 001 section V-D, VI-C), on device.

The state is the seed's (free boxes, dice as one of the 252 multisets, rerolls left). Its root
task chooses Re-roll or Category by Q(s, alpha) = V(s, alpha) + C(root, s, alpha), where
V(s, Re-roll) = max over the reroll actions of V(s, a) and V(s, Category) = max over the free
boxes; the chosen subtask then takes its primitive action of highest V. A reroll action is a
nonempty multiset of dice to roll again ("re-roll two 3s"; 461 of them over all dice): for our
sorted dice it is the one keep pattern per kept multiset whose kept dice of each face are the
leftmost of that face (`canonical_keeps`). Category may be chosen at any roll: the round then
ends at once (the engine plays "keep all" until its scoring decision, not recorded).

After each round, in reverse order over its actions a_1..a_n (n = 1..3), t = n - i steps to
the round's end, r the round's points, l the learning rate, d the decay:

    V(s_i, a_i)        <- (1 - l) V(s_i, a_i) + l r d^t
    C(root, s_i, st_i) <- (1 - l) C(root, s_i, st_i)
                          + l max_{alpha in s_{i+1}} [V(s_{i+1}, alpha) + C(root, s_{i+1}, alpha)]

(st_i: Re-roll or Category, the subtask of a_i; s_{n+1} the next round's first state, worth 0
after the game's last round). The seed's "initial alpha 1e6, discounted over time" is read as
l_k = alpha / (alpha + k) after k rounds learned (1 at the start, 1/3 at the end of both of its
runs); d is not given (0.9 here). Exploration (the update never reads the tables while playing):
`maxq`: uniformly random legal primitive actions (a reroll or a free box); `maxq-g1` (HRL-G1,
section VI-C, `G1_ALGORITHM` below): two random rerolls, then the box scoring most.

Tables: one float32[S, 47] in the train state's params, on device: V's 45 columns (31, "keep
all", unused), then C(root, s, Re-roll) and C(root, s, Category). `table_bits=0` (default):
the exact index ((free-box bits x 252 + dice) x 3 + rerolls left), S = 2^13 x 252 x 3 =
6,193,152 rows, 1.16 GB, no collisions; `table_bits=k`: a hashed table of 2^k rows (Fibonacci
hashing of the exact index; colliding states share a row), for tests and small machines.

A batch of B games is played in lockstep. `combine=sequential` (default): after each round the
B lanes' updates are applied one lane after another (lane order), each exactly the seed's
sequential rule. As exploration does not depend on the tables, a batch is exactly the
sequential learner on the B games' rounds taken in the order (round 1 of games 1..B, round 2 of
games 1..B, ...). That is one small table write at a time (the update alone about 97,000
rounds/s on 2 CPU cores). `combine=parallel`: the round's slots are still taken in the seed's
reverse order, but each slot of all B lanes at once: every lane reads the table as it was
before the slot, and the k updates x <- (1 - l_j) x + l_j y_j that fall on one cell are
combined as if applied one after another with their mean target, x prod_j (1 - l_j) +
(1 - prod_j (1 - l_j)) mean_j y_j (exact when the targets agree). With B = 1 it is the
sequential rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax import envs
from yahtzee_jax.algorithms import acting
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState, no_optimizer
from yahtzee_jax.algorithms.table_updates import combine_set
from yahtzee_jax.config import AlgoConfig, Config, check_choice, require
from yahtzee_jax.envs.atomic_features import atomic_groups
from yahtzee_jax.envs.rollout import episode_keys, learning_rollout
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import (
    DECISIONS_PER_TURN,
    NUM_DICE,
    NUM_FACES,
    NUM_KEEP_ACTIONS,
    get_rules,
)
from yahtzee_jax.networks.maxq_tables import (
    DICE_INDEX,
    NUM_MULTISETS,
    Tables,
    dice_code,
    multisets,
)

KEEP_ALL = NUM_KEEP_ACTIONS - 1  # 31: no die rolled again (not a reroll action of the seed)
REROLL, CATEGORY = 0, 1  # the root task's two subtasks (columns of C)
COMBINES = ("sequential", "parallel")  # how a batch's rounds update the table (module doc)


def canonical_keeps() -> np.ndarray:
    """bool[252, 32]: keep patterns that are reroll actions of each multiset: the kept dice of
    each face are the leftmost of that face's run (one pattern per kept multiset) and at least
    one die is rolled again."""
    table = np.zeros((NUM_MULTISETS, NUM_KEEP_ACTIONS), bool)
    for index, dice in enumerate(multisets()):
        for mask in range(KEEP_ALL):
            kept = [(mask >> i) & 1 for i in range(NUM_DICE)]
            # within a run of equal faces, a kept die may not follow a rerolled one
            table[index, mask] = all(
                not (dice[i] == dice[i - 1] and kept[i] and not kept[i - 1])
                for i in range(1, NUM_DICE)
            )
    return table


CANONICAL = canonical_keeps()


@dataclasses.dataclass(frozen=True)
class MaxQConfig(AlgoConfig):
    """MAXQ-Q: learning-rate schedule, decay of a round's reward, table layout."""

    name: str = "maxq"
    alpha: float = 1e6  # l_k = alpha / (alpha + k) after k rounds (seed: "initial alpha 1e6")
    decay: float = 0.9  # d: a reroll t steps before the round's end is credited r d^t
    table_bits: int = 0  # 0: exact index (6,193,152 states); k: hashed table of 2^k slots
    combine: str = "sequential"  # a batch's updates: lane after lane, or all lanes at once
    # running averages of finite targets: the table stays finite, and is too big to copy
    guard_params: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_choice("algo.combine", self.combine, COMBINES)
        require(self.alpha > 0, f"algo.alpha={self.alpha} must be > 0")
        require(0 < self.decay <= 1, f"algo.decay={self.decay} must be in (0, 1]")
        require(0 <= self.table_bits <= 26, f"algo.table_bits={self.table_bits} not in 0..26")

    def check(self, config: Config) -> None:
        """The acting policy reads the state from Kang's atomic features."""
        require(
            config.features.kind == "kang",
            f"algo.name={self.name} needs features.kind=kang (the state is read from them)",
        )


def make_network(config: Config) -> Tables:
    """The table layout of a config."""
    return Tables(envs.rules_of(config).num_boxes, config.algo.table_bits)


def init_params(context: Context, key: jax.Array) -> dict[str, jax.Array]:
    """The table at zero (the seed's dictionaries start empty: 0): {"table": [S, A + 2]}, V's A
    columns then C(root, s, Re-roll), C(root, s, Category), one row per state."""
    rows = context.network.num_slots
    return {"table": jnp.zeros((rows, context.rules.num_actions + 2), jnp.float32)}


def subtask_values(v_row: jax.Array, reroll_ok: jax.Array, box_ok: jax.Array) -> jax.Array:
    """[..., 2]: V(s, Re-roll) and V(s, Category), -inf where the subtask has no action."""
    reroll = jnp.max(jnp.where(reroll_ok, v_row[..., :NUM_KEEP_ACTIONS], -jnp.inf), axis=-1)
    boxes = jnp.max(jnp.where(box_ok, v_row[..., NUM_KEEP_ACTIONS:], -jnp.inf), axis=-1)
    return jnp.stack([reroll, boxes], axis=-1)


def reroll_actions(dice: jax.Array, rerolls: jax.Array) -> jax.Array:
    """bool[..., 32]: the reroll actions of sorted dice (none without a reroll left)."""
    canonical = jnp.asarray(CANONICAL)[jnp.asarray(DICE_INDEX)[dice_code(dice)]]
    return canonical & (rerolls > 0)[..., None]


def root_choice(
    v_row: jax.Array, c_row: jax.Array, reroll_ok: jax.Array, box_ok: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(subtask, its primitive action, root value max_alpha [V + C]) of one state (batched);
    a tie goes to Re-roll, the seed's first root action."""
    q = subtask_values(v_row, reroll_ok, box_ok) + c_row
    subtask = jnp.where(q[..., REROLL] >= q[..., CATEGORY], REROLL, CATEGORY)
    keep = jnp.argmax(jnp.where(reroll_ok, v_row[..., :NUM_KEEP_ACTIONS], -jnp.inf), axis=-1)
    box = jnp.argmax(jnp.where(box_ok, v_row[..., NUM_KEEP_ACTIONS:], -jnp.inf), axis=-1)
    primitive = jnp.where(subtask == REROLL, keep, NUM_KEEP_ACTIONS + box)
    return subtask, primitive.astype(jnp.int32), jnp.max(q, axis=-1)


def decode_atomic(x: jax.Array, num_boxes: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(free boxes bool[B, boxes], sorted dice int32[B, 5], rerolls left int32[B]) from Kang's
    atomic features (`envs.atomic_features` layout)."""
    sizes = dict(atomic_groups(get_rules("plain")))  # every group's size but the boxes'
    die_start = num_boxes
    rerolls_start = num_boxes + sum(
        sizes[name] for name in ("die_value", "face_count", "distinct_values", "dice_sum")
    )
    free = x[:, :num_boxes] > 0.5
    die = x[:, die_start : die_start + NUM_DICE * NUM_FACES].reshape(-1, NUM_DICE, NUM_FACES)
    dice = jnp.argmax(die, axis=-1).astype(jnp.int32) + 1
    rerolls = jnp.argmax(x[:, rerolls_start : rerolls_start + DECISIONS_PER_TURN], axis=-1)
    return free, dice, rerolls.astype(jnp.int32)


def greedy(
    network: Tables, params: Any, x: jax.Array, legal: jax.Array, roll_index: jax.Array
) -> jax.Array:
    """The acting policy: root choice, then the subtask's best action. Category before the last
    roll is played as "keep all", and the next decision chooses again from its own state."""
    free, dice, rerolls = decode_atomic(x, network.num_boxes)
    rows = network.slot(free, dice, rerolls)
    last = rerolls == 0
    box_ok = jnp.where(last[:, None], legal[:, NUM_KEEP_ACTIONS:], free)
    table = jnp.asarray(params["table"])[rows]  # a loaded checkpoint holds numpy arrays
    width = table.shape[-1] - 2
    _, action, _ = root_choice(
        table[:, :width], table[:, width:], reroll_actions(dice, rerolls), box_ok
    )
    return jnp.where(~last & (action >= NUM_KEEP_ACTIONS), KEEP_ALL, action)


def card_slot(network: Tables, card: State) -> jax.Array:
    """Rows of a batch of cards."""
    return network.slot(~card.filled, card.dice, LAST_ROLL - card.roll_index)


def uniform_primitive(reroll_ok: jax.Array, box_ok: jax.Array, bits: jax.Array) -> jax.Array:
    """A uniformly random legal primitive action (a reroll pattern or 32 + box) per lane."""
    legal = jnp.concatenate([reroll_ok, box_ok], axis=-1)
    return jax.vmap(_nth_legal)(legal, bits)


def _nth_legal(legal: jax.Array, bits: jax.Array) -> jax.Array:
    cumulative = jnp.cumsum(legal, dtype=jnp.uint32)
    return jnp.argmax(cumulative > bits % jnp.maximum(cumulative[-1], 1)).astype(jnp.int32)


def explore_uniform(card: State, context: Context, bits: jax.Array) -> jax.Array:
    """HRL's exploration: any legal reroll or free box, uniformly."""
    _, box_ok, _ = jax.vmap(lambda c: current_score_options(c, context.rules))(card)
    rerolls = LAST_ROLL - card.roll_index
    return uniform_primitive(reroll_actions(card.dice, rerolls), box_ok, bits)


def slot_targets(
    after: jax.Array,
    after_reroll: jax.Array,
    after_box: jax.Array,
    after_terminal: jax.Array,
    action: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """(C's column, C's target) of one slot (batched): C(root, s_i, subtask of a_i) moves
    towards s_{i+1}'s root value max [V + C] (`after` its row), 0 once the game is over."""
    width = after.shape[-1] - 2
    _, _, value = root_choice(after[..., :width], after[..., width:], after_reroll, after_box)
    # no action left (the game is over) is worth 0
    value = jnp.where(after_terminal | ~jnp.isfinite(value), 0.0, value)
    c_column = width + jnp.where(action >= NUM_KEEP_ACTIONS, CATEGORY, REROLL)
    return c_column, value


class Round(NamedTuple):
    """One lane's round for the update ([3, ...] per field; a batch adds a leading lane axis).

    rows / actions / valid: the round's states and actions (the valid slots are a prefix,
    a_1..a_n); after_*: the state each action led to (s_{i+1}: the round's next state, or the
    next round's first one after a_n), its legal rerolls [3, 32] and boxes, and whether the
    game was over; reward: the round's points (a scalar per lane).
    """

    rows: jax.Array
    actions: jax.Array
    valid: jax.Array
    after_rows: jax.Array
    after_reroll: jax.Array
    after_box: jax.Array
    after_terminal: jax.Array
    reward: jax.Array


def round_update(params: jax.Array, lane: Round, rate: jax.Array, decay: float) -> jax.Array:
    """The seed's update after one lane's round, in reverse order over its actions: the table
    [S, A + 2] (V's A columns, then C(root, s, Re-roll) and C(root, s, Category)) after it;
    `rate` l, `decay` d."""
    rows, actions, valid, after_rows, after_reroll, after_box, after_terminal, reward = lane
    count = jnp.sum(valid)

    # One slot per loop iteration: every read first, then one write of the slot's whole row.
    # XLA updates the 1.1 GB table in place only so (two writes per iteration made it copy).
    def one(table: jax.Array, slot: jax.Array) -> tuple[jax.Array, None]:
        after = jax.lax.dynamic_slice_in_dim(table, after_rows[slot], 1)[0]
        row_index, action, ok = rows[slot], actions[slot], valid[slot]
        row = jax.lax.dynamic_slice_in_dim(table, row_index, 1)[0]
        c_column, value = slot_targets(
            after, after_reroll[slot], after_box[slot], after_terminal[slot], action
        )
        target_v = reward * decay ** (count - 1 - slot).astype(jnp.float32)
        new_v = (1 - rate) * row[action] + rate * target_v
        new_c = (1 - rate) * row[c_column] + rate * value
        updated = row.at[action].set(new_v).at[c_column].set(new_c)
        row = jnp.where(ok, updated, row)
        return jax.lax.dynamic_update_slice_in_dim(table, row[None], row_index, 0), None

    reverse = jnp.arange(DECISIONS_PER_TURN - 1, -1, -1)
    table, _ = jax.lax.scan(one, params, reverse)
    return table


def batch_round_update(table: jax.Array, lanes: Round, rate: jax.Array, decay: float) -> jax.Array:
    """`round_update` for B lanes at once (`combine=parallel`): `lanes` and `rate` gain a
    leading lane axis; slots in the seed's reverse order, each slot's 2B updates applied
    together by `combine_set`."""
    rows, actions, valid, after_rows, after_reroll, after_box, after_terminal, reward = lanes
    count = jnp.sum(valid, axis=1)
    for slot in range(DECISIONS_PER_TURN - 1, -1, -1):
        c_column, value = slot_targets(
            table[after_rows[:, slot]],
            after_reroll[:, slot],
            after_box[:, slot],
            after_terminal[:, slot],
            actions[:, slot],
        )
        target_v = reward * decay ** (count - 1 - slot).astype(jnp.float32)
        table = combine_set(
            table,
            jnp.tile(rows[:, slot], 2),
            jnp.concatenate([actions[:, slot], c_column]),
            jnp.concatenate([target_v, value]),
            jnp.tile(rate, 2),
            jnp.tile(valid[:, slot], 2),
        )
    return table


def explore_greedy_guide(card: State, context: Context, bits: jax.Array) -> jax.Array:
    """HRL-G1's guide: a uniformly random reroll while rerolls are left, then the box that
    scores most with the final dice (the lowest such box on a tie)."""
    points, box_ok, _ = jax.vmap(lambda c: current_score_options(c, context.rules))(card)
    rerolls = LAST_ROLL - card.roll_index
    reroll = uniform_primitive(reroll_actions(card.dice, rerolls), jnp.zeros_like(box_ok), bits)
    best = NUM_KEEP_ACTIONS + jnp.argmax(jnp.where(box_ok, points, -1), axis=-1)
    return jnp.where(rerolls > 0, reroll, best).astype(jnp.int32)


def _legal(network: Tables, card: State, rules: Any) -> tuple[jax.Array, ...]:
    """(rows [B], legal rerolls [B, 32], legal boxes [B, boxes]) of a batch of cards."""
    _, box_ok, _ = jax.vmap(lambda c: current_score_options(c, rules))(card)
    return card_slot(network, card), reroll_actions(card.dice, LAST_ROLL - card.roll_index), box_ok


class Turn(NamedTuple):
    """What MAXQ-Q carries through a turn's decisions: the table [S, A + 2], the box chosen
    before the last roll (-1: none yet) and the score before the turn [B], and the decisions
    seen: rows, legal rerolls and boxes, choices and whether each was fresh ([B, 3, ...])."""

    table: jax.Array
    committed: jax.Array
    before: jax.Array
    seen: tuple


def _see(seen: tuple, roll: int, parts: tuple) -> tuple:
    """The decisions seen with decision `roll` of the turn written in."""
    return tuple(whole.at[:, roll].set(part) for whole, part in zip(seen, parts, strict=True))


def make_update(explore: Any) -> Any:
    """The update of a MAXQ-Q learner exploring with `explore(cards, context, bits)`."""

    def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
        """Play B games in lockstep; after every round update the tables lane by lane."""
        config, env, network = context.config, context.env, context.network
        algo, lanes = config.algo, envs.episodes_per_update(config)
        key, play_key = jax.random.split(state.key)
        turns = env.episode_length // DECISIONS_PER_TURN
        rounds_before = state.step * turns * lanes

        def policy(observation: Any, keys: jax.Array, carry: Turn, roll_index: int) -> Any:
            card = env.card(observation)
            bits = jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32))(keys)
            choice = explore(card, context, bits)
            committed = jnp.full(lanes, -1, jnp.int32) if roll_index == 0 else carry.committed
            fresh = committed < 0
            if roll_index < LAST_ROLL:
                scores_now = fresh & (choice >= NUM_KEEP_ACTIONS)
                committed = jnp.where(scores_now, choice - NUM_KEEP_ACTIONS, committed)
                action = jnp.where(fresh & ~scores_now, choice, KEEP_ALL)
            else:
                action = jnp.where(fresh, choice, NUM_KEEP_ACTIONS + committed)
            return action, (choice, fresh, committed)

        def learn(carry: Turn, observation: Any, action: jax.Array, *rest: Any, **turn: int) -> Any:
            following, (choice, fresh, committed), decision = rest
            roll = turn["roll_index"]
            card = env.card(observation)
            before = total_score(card, context.rules) if roll == 0 else carry.before
            seen = _see(carry.seen, roll, (*_legal(network, card, context.rules), choice, fresh))
            carry = Turn(carry.table, committed, before, seen)
            if roll < LAST_ROLL:
                return carry, (jnp.zeros(lanes, jnp.int32), jnp.zeros(lanes, jnp.float32))
            after_card = env.card(following)
            points = (total_score(after_card, context.rules) - before).astype(jnp.float32)
            rows, reroll_ok, box_ok, actions, valid = seen  # [B, 3, ...]
            next_row, next_reroll, next_box = _legal(network, after_card, context.rules)
            # s_{i+1}: the round's next state while it has one, else the next round's first
            follows = jnp.concatenate([valid[:, 1:], jnp.zeros((lanes, 1), bool)], axis=1)

            def after(within: jax.Array, following: jax.Array) -> jax.Array:
                shifted = jnp.concatenate([within[:, 1:], within[:, -1:]], axis=1)
                mask = follows.reshape(follows.shape + (1,) * (within.ndim - 2))
                return jnp.where(mask, shifted, following[:, None])

            after_rows = after(rows, next_row)
            after_reroll = after(reroll_ok, next_reroll)
            after_box = after(box_ok, next_box)
            after_terminal = ~follows & after_card.terminated[:, None]
            first = rounds_before + decision // DECISIONS_PER_TURN * lanes

            rates = algo.alpha / (algo.alpha + (first + jnp.arange(lanes)).astype(jnp.float32))
            lanes_round = Round(
                rows, actions, valid, after_rows, after_reroll, after_box, after_terminal, points
            )
            table = carry.table
            if algo.combine == "parallel":
                table = batch_round_update(table, lanes_round, rates, algo.decay)
            else:

                def lane(table: jax.Array, inputs: tuple) -> tuple[jax.Array, None]:
                    return round_update(table, *inputs, algo.decay), None

                table, _ = jax.lax.scan(lane, table, (lanes_round, rates))
            return carry._replace(table=table), (jnp.sum(valid, axis=1), points)

        boxes = context.rules.num_boxes
        seen = tuple(
            jnp.zeros((lanes, DECISIONS_PER_TURN, *shape), dtype)
            for shape, dtype in (
                ((), jnp.int32),
                ((NUM_KEEP_ACTIONS,), bool),
                ((boxes,), bool),
                ((), jnp.int32),
                ((), bool),
            )
        )
        no_box = jnp.full(lanes, -1, jnp.int32)
        start = Turn(state.params["table"], no_box, jnp.zeros(lanes, jnp.int32), seen)
        keys = episode_keys(play_key, 0, lanes)
        carry, final, (per_round, points), rewards = learning_rollout(
            env, policy, learn, start, keys, state.task, by_turn=True
        )
        last_rate = algo.alpha / (algo.alpha + (rounds_before + turns * lanes).astype(jnp.float32))
        actions_per_round, points = (
            leaf.reshape(turns, DECISIONS_PER_TURN, lanes)[:, LAST_ROLL]
            for leaf in (per_round, points)
        )
        metrics = {
            **env.episode_metrics(final, rewards),
            "schedule/learning_rate": last_rate,
            "explore/actions_per_round": jnp.mean(actions_per_round.astype(jnp.float32)),
            "explore/zero_point_rounds": jnp.mean((points == 0).astype(jnp.float32)),
        }
        return state.replace(
            params={"table": carry.table},
            key=key,
            step=state.step + 1,
            task=env.end_task_batch(state.task, final),
        ), metrics

    return update


def make_algorithm(name: str, config_class: type, explore: Any) -> Algorithm:
    """A MAXQ-Q learner in the registry's terms."""
    return Algorithm(
        name=name,
        config_class=config_class,
        update=make_update(explore),
        make_agent=acting.GreedyAgents(greedy),
        make_network=make_network,
        init_params=init_params,
        make_optimizer=no_optimizer,
    )


ALGORITHM = make_algorithm("maxq", MaxQConfig, explore_uniform)


@dataclasses.dataclass(frozen=True)
class MaxQG1Config(MaxQConfig):
    """HRL-G1: MAXQ-Q with the greedy guide, whose tables learn from its rounds exactly as
    `maxq`'s do. The seed trained it for 10^6 rounds with "initial alpha 5e5": l_k =
    5e5 / (5e5 + k), 1/3 after 10^6 rounds."""

    name: str = "maxq-g1"
    alpha: float = 5e5


G1_ALGORITHM = make_algorithm("maxq-g1", MaxQG1Config, explore_greedy_guide)
