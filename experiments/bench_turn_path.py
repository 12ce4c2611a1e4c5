"""What a turn at a time buys the planning agents in `play_games` (issue 66), as JSON.

    YAHTZEE_JAX_CACHE=/tmp/cache python experiments/bench_turn_path.py \
        --json results/turn-path-bench/before.json --note "shared, 4 others"

Plays the optimal agent (widget) and the decision-table agent (`optimal-table`) under official
rules, each two ways in the same process: `play_games` as it plays the agent (its `play_games`
path), and through the one policy signature only, a decision at a time (the policy wrapped so
that nothing but `__call__` is seen). Both at the agent's own CPU batch (2,048 games), warm (a
first call compiles each), the two ways alternated so that a shared machine's load falls on
both; the games of both ways are checked equal. Wall and CPU seconds (this process's, all its
threads: less moved by other work on a shared machine) and games per second per run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from typing import Any

import jax
import numpy as np

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.decision_table import make_decision_table_agent
from yahtzee_jax.agents.widget_agents import WIDGET_CPU_BATCH_SIZE, make_optimal_agent
from yahtzee_jax.commands.bench.machine import cpu_name, script_record
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.files import write_whole
from yahtzee_jax.game.engine import State


@dataclasses.dataclass(frozen=True)
class OneCallOnly:
    """A policy seen through its `__call__` only (no other attribute reaches `play_games`)."""

    policy: Any

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The wrapped policy's actions."""
        return self.policy(params, own, others, keys)


def _timed(agent: Agent, games: int, seed: int) -> tuple[float, float, np.ndarray]:
    """(wall seconds, this process's CPU seconds, the games' totals)."""
    start, cpu = time.perf_counter(), time.process_time()
    records = play_games(agent, games, seed, batch_size=WIDGET_CPU_BATCH_SIZE)
    return time.perf_counter() - start, time.process_time() - cpu, records.total


def main() -> None:
    """Time both ways for each agent and size; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--games", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    cache = os.environ.get("YAHTZEE_JAX_CACHE")
    agents = [make_optimal_agent("official", cache), make_decision_table_agent("official", cache)]
    rows = []
    for agent in agents:
        ways = {
            "play_games": agent,
            "one_call": dataclasses.replace(agent, policy=OneCallOnly(agent.policy)),
        }
        for played in ways.values():  # compile at this batch size
            _timed(played, WIDGET_CPU_BATCH_SIZE, 1)
        for games in args.games:
            seconds, cpu, totals = {}, {}, {}
            for way, played in ways.items():
                seconds[way], cpu[way], totals[way] = _timed(played, games, 0)
            assert np.array_equal(totals["play_games"], totals["one_call"]), agent.name
            row = {
                "agent": agent.name,
                "games": games,
                "mean_score": float(np.mean(totals["play_games"])),
                **{f"{way}_s": round(value, 3) for way, value in seconds.items()},
                **{f"{way}_cpu_s": round(value, 3) for way, value in cpu.items()},
                **{f"{way}_games_per_s": round(games / value) for way, value in seconds.items()},
                "one_call_over_play_games": round(seconds["one_call"] / seconds["play_games"], 3),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    out = {
        "what": __doc__.splitlines()[0],
        "machine": cpu_name(),
        "note": args.note,
        "batch_size": WIDGET_CPU_BATCH_SIZE,
        "rules": "official",
        "record": script_record(),
        "rows": rows,
    }
    write_whole(args.json, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
