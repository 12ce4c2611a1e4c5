"""How many of its last turns a td-planner with a score distribution should play for the win.

Usage: python experiments/match_open_ablation.py runs/td-planner-match2 --limits 12 5 3 2
           --games 20000 --seed 2 [--players 2] [--early solitaire normal]
           --out results/td-planner-match/match_open.json

For each limit K the run's match planner plays the turns that leave at most K boxes open for the
win (`algo.match_open`; 12: every turn) and the earlier ones as `--early` says (`algo.match_early`:
as alone, or for the win by a normal approximation; named "K+normal"); "none" is the solitaire
planner throughout (`yahtzee-jax match --solitaire`). Every variant plays the same matches (the
same seed: the same dice and seats) against the optimal-solitaire agent.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from yahtzee_jax.agents.agent import alone
from yahtzee_jax.agents.distribution_planner import EARLY_PLAY, MatchPlannerAct
from yahtzee_jax.evaluation.matches import evaluate_agent_matches
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.checkpointing import load_agent_and_step


def main() -> None:
    """Play each limit's matches and write one JSON of the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--limits", type=int, nargs="+", default=[12, 5, 3, 2])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--early", nargs="+", choices=EARLY_PLAY, default=["solitaire"])
    parser.add_argument("--no-none", action="store_true", help="skip the solitaire planner")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    agent, _ = load_agent_and_step(args.run)
    if not isinstance(agent.policy, MatchPlannerAct):
        raise SystemExit(f"{args.run}: not a td-planner run with a score distribution")
    variants = {} if args.no_none else {"none": alone(agent)}
    for early in args.early:
        for limit in args.limits:
            policy = dataclasses.replace(agent.policy, open_limit=limit, early=early)
            name = str(limit) if early == "solitaire" else f"{limit}+{early}"
            variants[name] = dataclasses.replace(agent, policy=policy)
    results = {}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for name, variant in variants.items():
        result = evaluate_agent_matches(
            variant, "optimal", args.games, args.seed, players=args.players
        )
        results[name] = result
        low, high = result["win_interval_95"]
        print(
            f"match_open={name}: wins {100 * result['win_rate']:.2f} % [{100 * low:.2f}, "
            f"{100 * high:.2f}], mean {result['mean_score']:.2f}, {result['wall_s']:.0f} s",
            flush=True,
        )
        # Written after each variant: an interrupted ablation keeps the variants it finished.
        write_json(args.out, {"run": args.run, "results": results})


if __name__ == "__main__":
    main()
