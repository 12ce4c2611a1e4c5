"""Where optimal play's time goes: each piece of a turn compiled alone and timed on one thread.

    python experiments/profile_optimal_play.py [--rules yatzy] [--batch 2048] [--games 3]

Plays `--games` batches of optimal games a decision at a time, as `play_games` does with the
widget's memory (`agents.widget_agents.widget_decisions`), and prints microseconds a game for each
piece: the first keep (the turn's plan, once per distinct turn-start state), the last keep (the
plan's lookups), the score decision, the engine's steps; then, per turn of the first batch, the
distinct states, the plan's chunks and the first keep's time. Run it pinned (`taskset -c 1`) on an
idle machine: the figures in docs/speed/solver.md came from it.
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

from yahtzee_jax.agents import widget_agents
from yahtzee_jax.game import engine
from yahtzee_jax.solver.widget_tables import ROLL_OF_CODE, dice_code


def main() -> None:
    """Time the pieces of optimal play and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="yatzy")
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--games", type=int, default=3, help="timed batches (one more warms up)")
    args = parser.parse_args()
    agent = widget_agents.make_optimal_agent(args.rules)
    rules, table, size = agent.rules, agent.params, args.batch

    init = jax.jit(jax.vmap(lambda key: engine.init(key, rules)))
    step = jax.jit(jax.vmap(lambda card, action, key: engine.step(card, action, key, rules)))
    roll_of = jax.jit(lambda cards: jnp.asarray(ROLL_OF_CODE)[dice_code(cards.dice, jnp)])
    first = jax.jit(
        lambda cards, roll: widget_agents._shared_first_keeps(
            table, cards, rules, roll, True, widget_agents._state_keys(cards, rules)
        )
    )
    last = jax.jit(lambda plan, roll: widget_agents.best_keeps(plan[0], roll, plan[1]))
    score = jax.jit(lambda cards: widget_agents.score_actions(table, cards, rules))
    distinct = jax.jit(
        lambda cards: widget_agents._distinct_states(widget_agents._state_keys(cards, rules))[2]
    )

    def play(seed: int, seconds: collections.Counter, per_turn: list | None) -> None:
        def timed(name: str, function: Callable, *arguments):
            start = time.perf_counter()
            out = jax.block_until_ready(function(*arguments))
            seconds[name] += time.perf_counter() - start
            if per_turn is not None and name == "first keep (the plan)":
                per_turn[-1].append(time.perf_counter() - start)
            return out

        key = jax.random.key(seed)
        cards = init(jax.random.split(key, size))
        for _ in range(rules.num_boxes):
            key, *keys = jax.random.split(key, 4)
            if per_turn is not None:
                per_turn.append([int(distinct(cards))])
            action, plan = timed("first keep (the plan)", first, cards, roll_of(cards))
            cards = timed("engine steps", step, cards, action, jax.random.split(keys[0], size))
            action = timed("last keep (lookups)", last, plan, roll_of(cards))
            cards = timed("engine steps", step, cards, action, jax.random.split(keys[1], size))
            action = timed("score decision", score, cards)
            cards = timed("engine steps", step, cards, action, jax.random.split(keys[2], size))

    play(0, collections.Counter(), None)  # compiles every piece
    seconds, per_turn = collections.Counter(), []
    for seed in range(1, args.games + 1):
        play(seed, seconds, per_turn if seed == 1 else None)
    games = args.games * size
    print(f"{args.rules}, {args.games} x {size} optimal games, one piece at a time")
    for name, total in seconds.most_common():
        print(f"  {name:24s} {1e6 * total / games:7.2f} us a game")
    print(f"  {'all':24s} {1e6 * sum(seconds.values()) / games:7.2f} us a game")
    chunk = widget_agents.plan_chunk(size)
    print(f"turn  distinct states  chunks of {chunk}  first keep ms")
    for turn, (count, spent) in enumerate(per_turn):
        print(f"{turn:4d}  {count:15d}  {-(-count // chunk):12d}  {1e3 * spent:13.2f}")


if __name__ == "__main__":
    main()
