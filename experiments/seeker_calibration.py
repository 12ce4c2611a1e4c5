"""How optimistic is hindsight, turn by turn? The target-seeker's turn ends against the results.

Usage: python experiments/seeker_calibration.py --games 20000 --seed 10 --out DIR
           [--rules official] [--players 2] [--hindsight-weight 1 | --hindsight-schedule FILE]

The target-seeker plays matches against the optimal agent (seats alternated, as `yahtzee-jax
match`); at each of its score decisions the turn end it chose is valued both ways: W_T by the
target table (hindsight, the oracle's chance: an upper bound of what the following play wins)
and W_E by the expected table (optimal expected-score play after the turn: a lower bound).
Whatever the player does next, the mean of its true chance to win at a turn end equals its win
rate; so where the mean of W_T lies above the win rate, hindsight is optimistic by that much.

The weight a of turn t and seat that best predicts the result y (1 a win, else 0) from
a W_T + (1 - a) W_E, by least squares, is

    a = sum (y - W_E)(W_T - W_E) / sum (W_T - W_E)^2,

clipped to [0, 1]: the schedule (`weights` [turns][2], seat 1: the card played this round
after another) that `yahtzee-jax match target-seeker --hindsight-schedule DIR/calibration.json`
plays: one step of policy improvement on the calibrated values. Writes DIR/calibration.json
(each turn and seat: matches, mean W_T, mean W_E, win rate, a and its standard error; the
weights; the machine) and DIR/calibration.png.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.match_env import Match, Seat
from yahtzee_jax.envs.rollout import agent_policy, rollout
from yahtzee_jax.evaluation.matches import game_keys
from yahtzee_jax.files import write_json
from yahtzee_jax.game import engine
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.seeker_policy import chosen_turn_end, turn_and_seat


def played_turn_ends(
    agent: Any, rules: Rules, games: int, seed: int, players: int, batch: int
) -> dict[str, np.ndarray]:
    """Every score decision of the seeker in matches 0 .. games - 1 of a seed: its turn (my
    filled boxes), seat (1: another card has played this round), W_T and W_E of the chosen turn
    end [games, turns], and whether the match was won [games]."""
    optimal = builtin_agent("optimal", rules)
    seats = (Seat(optimal.name, optimal.policy, optimal.params),) * (players - 1)
    env = Match(rules, FeatureConfig(), seats, players=players, reward="score")

    def play(keys: jax.Array, params: Any) -> tuple[jax.Array, ...]:
        # The tables are the program's argument, read by the recorder too: folded in as
        # constants they would take minutes to compile.
        def record(observation: Any, action: jax.Array, following: Any, extras: Any) -> Any:
            own, others = observation.card, observation.others
            values = jax.vmap(chosen_turn_end, in_axes=(None, 0, 0, 0, None))(
                params, own, others, action, rules
            )
            return (*values, *jax.vmap(turn_and_seat)(own, others))

        final, (by_target, by_expected, filled, after), _ = rollout(
            env, agent_policy(agent.policy, params), keys, record=record
        )
        scoring = ~jnp.isnan(by_target)  # [decisions, B]: the score decisions

        def total(card: Any) -> jax.Array:
            return engine.total_score(card, rules)

        own, best_other = total(final.card), jnp.max(jax.vmap(jax.vmap(total))(final.others), -1)
        return by_target, by_expected, filled, after, scoring, own > best_other

    run = jax.jit(play)
    parts: list[tuple[np.ndarray, ...]] = []
    started = time.perf_counter()
    batch -= batch % players  # whole seat groups: a batch of 1,001 skipped every 1,001st match
    for first in range(0, games, batch):
        count = min(batch, games - first)
        count -= count % players
        if count == 0:
            break
        out = jax.device_get(run(game_keys(seed, first, count, players), agent.params))
        by_target, by_expected, filled, after, scoring, won = out
        # One score decision a turn, in turn order: [decisions, B] -> [B, turns].
        fields = (filled, after, by_target, by_expected)
        parts.append((*(field.T[scoring.T].reshape(count, -1) for field in fields), won))
        done = first + count
        rate = done / (time.perf_counter() - started)
        print(
            f"{done}/{games} matches, {rate:.0f}/s, ETA {(games - done) / rate:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    turn, seat, by_target, by_expected, won = (np.concatenate(x) for x in zip(*parts, strict=True))
    return {
        "turn": turn,
        "seat": seat.astype(np.int64),
        "by_target": by_target,
        "by_expected": by_expected,
        "won": won.astype(np.float64),
    }


def calibrate(ends: dict[str, np.ndarray], turns: int) -> dict[str, Any]:
    """Each (turn, seat)'s means and least-squares weight a with its standard error, and the
    schedule of clipped weights (1 where a turn and seat has no matches or no spread)."""
    rows, weights = [], np.ones((turns, 2))
    for t in range(turns):
        for seat in (0, 1):
            where = (ends["turn"] == t) & (ends["seat"] == seat)
            y = np.broadcast_to(ends["won"][:, None], where.shape)[where]
            high, low = ends["by_target"][where], ends["by_expected"][where]
            spread = high - low
            row = {"turn": t, "seat": seat, "matches": int(where.sum())}
            if row["matches"] and np.sum(spread**2) > 1e-9:
                a = float(np.sum((y - low) * spread) / np.sum(spread**2))
                residual = y - low - a * spread
                se = float(np.sqrt(np.mean(residual**2) / np.sum(spread**2)))
                weights[t, seat] = min(max(a, 0.0), 1.0)
                row |= {
                    "win_rate": float(y.mean()),
                    "mean_by_target": float(high.mean()),
                    "mean_by_expected": float(low.mean()),
                    "a": a,
                    "a_stderr": se,
                }
            rows.append(row)
    return {"turns": rows, "weights": weights.tolist()}


def plot(result: dict[str, Any], out: Path) -> None:
    """Mean W_T, mean W_E and the win rate by turn, one panel per seat."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for seat, ax in enumerate(axes):
        rows = [r for r in result["turns"] if r["seat"] == seat and "a" in r]
        turns = [r["turn"] for r in rows]
        for key, label in (
            ("mean_by_target", "hindsight W_T (upper bound)"),
            ("win_rate", "win rate (what was won)"),
            ("mean_by_expected", "exact W_E (lower bound)"),
        ):
            ax.plot(turns, [100 * r[key] for r in rows], marker="o", label=label)
        ax.set_title(f"seat {'second' if seat else 'first'} of the round")
        ax.set_xlabel("my filled boxes at the score decision")
    axes[0].set_ylabel("chance to win, %")
    axes[0].legend()
    fig.suptitle(f"target-seeker's turn ends, {result['games']:,} matches, seed {result['seed']}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str] | None = None) -> int:
    """Play, calibrate, write the JSON and the picture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--rules", default="official")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2_000)
    parser.add_argument("--hindsight-weight", type=float)
    parser.add_argument("--hindsight-schedule")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.games < args.players or args.batch_size < args.players:
        parser.error("--games and --batch-size must be at least --players")
    arguments = sys.argv[1:] if argv is None else argv
    record = run_record(arguments) | {
        "command": shlex.join(["python", "experiments/seeker_calibration.py", *arguments])
    }
    options = {
        k: v
        for k, v in (
            ("hindsight_weight", args.hindsight_weight),
            ("hindsight_schedule", args.hindsight_schedule),
        )
        if v is not None
    }
    # As the committed calibration played: the joint endgame by hindsight (solved exactly since
    # the thirty-first session, after it).
    agent = builtin_agent("target-seeker", args.rules, joint_endgame="hindsight", **options)
    ends = played_turn_ends(
        agent, agent.rules, args.games, args.seed, args.players, args.batch_size
    )
    result = {
        "rules": agent.rules.name,
        "players": args.players,
        "seed": args.seed,
        "games": len(ends["won"]),
        "win_rate": float(ends["won"].mean()),
        **options,
        **calibrate(ends, agent.rules.num_boxes),
        "machine": record,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "calibration.json", result)
    plot(result, out / "calibration.png")
    for row in result["turns"]:
        if "a" in row:
            print(
                f"turn {row['turn']:2d} seat {row['seat']}: W_T {100 * row['mean_by_target']:.2f}"
                f" won {100 * row['win_rate']:.2f} W_E {100 * row['mean_by_expected']:.2f}"
                f"  a = {row['a']:.3f} +- {row['a_stderr']:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
