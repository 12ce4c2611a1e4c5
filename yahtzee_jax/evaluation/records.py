"""Per-game records of an evaluation and the batched on-device play that produces them.

`play_games` runs whole games as one compiled program (the agent's policy through the one
rollout, a `lax.scan` over a game's decisions, its memory carried where it keeps one:
`agents.agent.Remembering`) and returns
`GameRecords`: per-game numpy arrays that `evaluation.statistics`, `evaluation.plots` and
`evaluation.reports` read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.agent import Agent, Policy, at_roll, initial_memory, policy_step
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.envs.rollout import learning_rollout
from yahtzee_jax.envs.solitaire_play import SOLITAIRE, episode_keys
from yahtzee_jax.evaluation import stored_traces
from yahtzee_jax.evaluation.game_records import (  # noqa: F401 (re-exported)
    ACCELERATOR_BATCH_SIZE,
    CPU_BATCH_SIZE,
    MAX_GAMES,
    GameRecords,
    check_batch_size,
    check_game_seed,
    check_num_games,
)
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, Rules
from yahtzee_jax.parallel import host_threads, ordered_map


class IncompleteGameError(RuntimeError):
    """Some games were not over after all their decisions: the agent played an illegal action."""


def _record_scoring(state: engine.State, action: jax.Array, next_state: engine.State, extras):
    """Per decision: the box it filled (-1 for a keep) and the points written there."""
    newly_filled = next_state.filled & ~state.filled
    category = jnp.argmax(newly_filled, axis=-1)
    points = jnp.take_along_axis(next_state.scores, category[:, None], axis=-1)[:, 0]
    return jnp.where(jnp.any(newly_filled, axis=-1), category, -1), points


def _play(policy: Policy, params: Any, keys: jax.Array, rules: Rules) -> tuple[engine.State, Any]:
    """The games' final states and `_record_scoring` records: the policy plays every decision
    of its cards in lockstep, carrying its memory from each to the next where it keeps one
    (`agents.agent.Remembering`: the widget agents' turn keep values).

    A policy that asks for it (`plays_by_roll`) is played a turn at a time and shown each card's
    roll index as the constant it is: the games go in lockstep from their first roll, so at the
    turn's k-th decision every card is at roll k. The call is the same; XLA then keeps only that
    roll's work of a policy that selects on the roll (the decision-table agent: 21 % of its time,
    `results/turn-path-bench/idle`). Others keep the loop a decision at a time: unrolling a turn
    made the optimal agent's program 2.4x slower there."""
    env = SOLITAIRE["game"](rules, FeatureConfig())

    def act(cards: engine.State, keys: jax.Array, carry: Any, roll_index: int | None = None):
        cards = cards if roll_index is None else at_roll(cards, roll_index)
        return policy_step(policy, params, cards, no_others(cards), keys, carry)

    def learn(carry: Any, card: engine.State, action: jax.Array, following: engine.State,
              memory: Any, decision: jax.Array, roll_index: int | None = None):  # fmt: skip
        return memory, _record_scoring(card, action, following, None)

    memory = initial_memory(policy, keys.shape[0])
    by_roll = getattr(policy, "plays_by_roll", False)
    _, final, records, _ = learning_rollout(env, act, learn, memory, keys, by_turn=by_roll)
    return final, records


_STATIC = ("policy", "rules", "batch_size")


@functools.partial(jax.jit, static_argnames=_STATIC)
def _play_batch(
    policy: Policy,
    rules: Rules,
    params: Any,
    base_key: jax.Array,
    first_game: jax.Array,
    batch_size: int,
) -> dict[str, jax.Array]:
    """Games first_game .. first_game+batch_size-1; game i's dice depend only on (seed, i)."""
    keys = episode_keys(base_key, first_game, batch_size)
    final, (categories, points) = _play(policy, params, keys, rules)
    # Each turn is keep, keep, score: the scoring decisions are every third one.
    return {
        "box_scores": final.scores,
        "total": engine.total_score(final, rules),
        "upper_bonus": engine.upper_bonus(final, rules) > 0,
        "yahtzee_bonus_count": final.yahtzee_bonus_count,
        "turn_categories": categories[LAST_ROLL::DECISIONS_PER_TURN].T,
        "turn_points": points[LAST_ROLL::DECISIONS_PER_TURN].T,
        "terminated": final.terminated,
    }


def default_batch_size(policy: Any = None) -> int:
    """Games per device batch: large on an accelerator, small on the CPU (see CPU_BATCH_SIZE)
    unless the policy asks for its own there (`cpu_batch_size`: the widget agents' turn plans
    share their work across a batch's games)."""
    if jax.default_backend() != "cpu":
        return ACCELERATOR_BATCH_SIZE
    return getattr(policy, "cpu_batch_size", CPU_BATCH_SIZE)


def play_games(
    agent: Agent,
    num_games: int,
    seed: int,
    batch_size: int | None = None,
    progress: bool = False,
    batch_params: Callable[[int, int], Any] | None = None,
    first_game: int = 0,
    program_dir: str | os.PathLike | None = None,
) -> GameRecords:
    """Play `num_games` games of `agent` under `agent.rules`, batched on device.

    Deterministic per seed and independent of `batch_size` (default: `default_batch_size`):
    game i uses a key derived from (seed, i) only. The agent's policy plays, shown no other
    cards. The compiled program is cached per policy object (and batch size), so a new set of
    `agent.params` does not recompile.
    `first_game` plays games first_game .. first_game + num_games - 1 of the seed (dice apart
    from games 0 .. first_game - 1). `batch_params(first, count)`, when given, are the params of
    the call's games first .. first + count - 1 (0 is its first game) in place of
    `agent.params`: per-game parameters, the target agent's goals. With a `program_dir`, the
    traced program is kept there between processes (`stored_traces`: a later process does not
    trace it again) where the policy can be stated exactly.
    """
    check_num_games(num_games)
    check_num_games(first_game + num_games)  # the last game's index is an int32 too
    check_game_seed(seed)
    check_batch_size(batch_size)
    batch_size = default_batch_size(agent.policy) if batch_size is None else batch_size
    from tqdm.auto import tqdm

    batch_size = min(batch_size, num_games)
    base_key = jax.random.key(seed)
    firsts = range(0, num_games, batch_size)

    def play_batch(first: int) -> dict[str, np.ndarray]:
        arguments = {
            "policy": agent.policy,
            "rules": agent.rules,
            "params": agent.params if batch_params is None else batch_params(first, batch_size),
            "base_key": base_key,
            "first_game": jnp.int32(first_game + first),
            "batch_size": batch_size,
        }
        out = stored_traces.call(program_dir, _play_batch, _STATIC, arguments)
        kept = min(batch_size, num_games - first)  # the last batch is padded
        return {name: np.asarray(value)[:kept] for name, value in out.items()}

    batches = []
    with tqdm(total=num_games, unit="game", disable=not progress, desc=agent.name) as bar:
        # The batches go on the host's threads at once (`parallel.host_threads`: one per CPU on
        # a CPU), each game's dice its own: the same games on any number of threads.
        for batch in ordered_map(play_batch, firsts, host_threads()):
            batches.append(batch)
            bar.update(len(batch["total"]))
    arrays = {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}
    unfinished = int(np.sum(~arrays.pop("terminated")))
    if unfinished:
        raise IncompleteGameError(
            f"agent {agent.name!r} left {unfinished} of {num_games} games unfinished after "
            f"{agent.rules.decisions_per_game} decisions: it played illegal actions (a no-op in "
            "the engine)"
        )
    return GameRecords(agent=agent.name, rules=agent.rules.name, seed=seed, **arrays)
