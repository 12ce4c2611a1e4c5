"""Match evaluation: an agent in the learner's seat of the match environment against built-in
opponents, with win rates and their Wilson intervals, and the plots of the two-player study.

Game i of a seed sits the evaluated agent in seat i % P: the match environment seats the
learner by lane group, so a batch of games is laid out seat group by seat group
(`game_keys`), and each game's dice depend only on (seed, i).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.config import Config, FeatureConfig
from yahtzee_jax.envs.match_env import Match, Seat
from yahtzee_jax.envs.rollout import agent_policy, rollout
from yahtzee_jax.evaluation.game_records import check_game_seed
from yahtzee_jax.evaluation.match_keep import MatchKeep
from yahtzee_jax.evaluation.statistics import mean_stderr, wilson_interval
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.parallel import host_threads, ordered_map

MATCH_BATCH = 2_000  # matches per compiled batch when evaluating


def game_order(first: int, count: int, players: int = 2) -> np.ndarray:
    """Games first .. first + count - 1 laid out seat group by seat group (game i in seat
    i % players)."""
    games = np.arange(first, first + count)
    return np.concatenate([games[games % players == seat] for seat in range(players)])


def game_keys(seed: int, first: int, count: int, players: int = 2) -> jax.Array:
    """Match keys of games first .. first + count - 1 of a seed, in `game_order`."""
    order = game_order(first, count, players)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(seed), order)


def match_totals(
    learner: Agent,
    opponents: tuple[Agent, ...],
    rules: Rules,
    num_games: int,
    seed: int,
    batch_size: int = MATCH_BATCH,
    progress: bool = False,
    keep: MatchKeep | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The learner's totals [N] and its opponents' [N, P-1] (k-th player after the learner at
    index k) in matches 0..N-1 of a seed, in game order; the learner sits in seat i % P.
    `keep` keeps the finished matches while they play, and plays only those it does not hold."""
    check_game_seed(seed)
    players = len(opponents) + 1

    # Every player's parameters are the program's arguments, not constants folded into it (a
    # solver table of a GiB took minutes to compile): four matches with the target-seeker in
    # an opponent's seat took 80 s as constants, 34 s as arguments (25 and 22 s as the learner;
    # 2-core AMD EPYC, 2026-12-02, tables loaded before).
    def totals_of(keys: jax.Array, params: Any, seat_params: tuple) -> tuple[jax.Array, ...]:
        seats = tuple(
            Seat(agent.name, agent.policy, theirs)
            for agent, theirs in zip(opponents, seat_params, strict=True)
        )
        env = Match(rules, FeatureConfig(), seats, players=players, reward="score")
        final, _, _ = rollout(env, agent_policy(learner.policy, params), keys)

        # Each card totalled under the match's rules (its own upper bonus, e.g. Yatzy's +50).
        def total(card: State) -> jax.Array:
            return engine.total_score(card, rules)

        others = jax.vmap(jax.vmap(total))(final.others)
        return total(final.card), others

    run = jax.jit(totals_of)
    if keep is None:
        own, other = np.zeros(num_games, np.int64), np.zeros((num_games, players - 1), np.int64)
        done = np.zeros(num_games, bool)
    else:
        own, other, done = keep.resume(num_games, players - 1)
    batch_size = max(players, batch_size - batch_size % players)  # whole seat groups
    # Batches of one size, the last padded with games past N that are dropped: one program is
    # compiled, not a second for a shorter last batch (7 s for the target-seeker).
    batches = max(1, math.ceil(num_games / batch_size))
    batch_size = math.ceil(num_games / batches / players) * players
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=num_games, initial=int(done.sum()), unit="match", desc="matches")

    opponent_params = tuple(agent.params for agent in opponents)

    def play_batch(first: int) -> tuple[int, int, np.ndarray, np.ndarray]:
        count = batch_size  # the last batch's games past N are dropped below
        keys = game_keys(seed, first, count, players)
        return first, count, *jax.device_get(run(keys, learner.params, opponent_params))

    def record(batch: tuple[int, int, np.ndarray, np.ndarray]) -> int:
        """A batch's matches into the totals; how many of them were not done before."""
        first, count, mine, theirs = batch
        order = game_order(first, count, players)
        real = order < num_games
        games = order[real]
        own[games], other[games] = mine[real], theirs[real]
        new = int(np.sum(~done[games]))  # a batch partly kept (another batch size) counts these
        done[games] = True
        return new

    # The batches go on the host's threads at once (`parallel.host_threads`); those kept are
    # not played again. Stopped, the batches running then are waited for and kept too.
    firsts = [f for f in range(0, num_games, batch_size) if not done[f : f + batch_size].all()]
    try:
        for batch in ordered_map(play_batch, firsts, host_threads(), salvage=record):
            new = record(batch)
            if bar is not None:
                bar.update(new)
            if keep is not None:
                keep.played(own, other, done)
    except KeyboardInterrupt:
        if keep is not None:
            keep.interrupted(own, other, done)
        raise
    finally:
        if bar is not None:
            bar.close()
    return own, other


def tally(own_total: np.ndarray, others: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """Each match's result against the best other total [N, P-1] (1 win: beating every
    opponent, 0 draw, -1 loss) and their counts, rates and the wins' Wilson 95 % interval."""

    result = np.sign(own_total - others.max(axis=1))
    games = len(result)
    wins, draws, losses = (int(np.sum(result == value)) for value in (1, 0, -1))
    return result, {
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "win_rate": wins / games,
        "draw_rate": draws / games,
        "win_interval_95": list(wilson_interval(wins, games)),
    }


def evaluate_matches(
    config: Config,
    params: Any,
    opponent: str = "optimal",
    num_games: int = 100_000,
    seed: int = 2,
    batch_size: int = MATCH_BATCH,
) -> dict[str, Any]:
    """A trained learner's greedy agent against a built-in opponent (`evaluate_agent_matches`)."""
    from yahtzee_jax.algorithms import get_algorithm

    agent = get_algorithm(config.algo.name).make_agent(config, params, config.algo.name)
    return evaluate_agent_matches(agent, opponent, num_games, seed, batch_size)


def evaluate_agent_matches(
    agent: Agent,
    opponent: str = "optimal",
    num_games: int = 100_000,
    seed: int = 2,
    batch_size: int = MATCH_BATCH,
    players: int = 2,
    progress: bool = False,
    cache_dir: str | os.PathLike | None = None,
    keep: MatchKeep | None = None,
) -> dict[str, Any]:
    """Any agent against `players - 1` copies of a built-in opponent: win/draw/loss (a win is
    beating every opponent), Wilson 95 % CI, mean scores and margins (against the best);
    `progress`: a bar with the ETA; `cache_dir`: the opponents' solver cache; `keep`: where the
    finished matches are kept while they play (`match_keep`)."""
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.evaluation.paired import per_match_record

    rules = agent.rules
    rivals = (builtin_agent(opponent, rules, cache_dir),) * (players - 1)
    started = time.perf_counter()
    own_total, others = match_totals(
        agent, rivals, rules, num_games, seed, batch_size, progress, keep
    )
    other_total = others.max(axis=1)
    seat = np.arange(num_games) % players
    result, counts = tally(own_total, others)
    margin = (own_total - other_total).astype(np.float64)
    return {
        "opponent": opponent,
        "rules": rules.name,
        "players": players,
        "seed": seed,
        "games": num_games,
        **{key: counts[key] for key in ("wins", "draws", "losses", "win_rate", "win_interval_95")},
        "wins_by_seat": [int(np.sum((result == 1) & (seat == s))) for s in range(players)],
        "games_by_seat": [int(np.sum(seat == s)) for s in range(players)],
        "mean_score": float(own_total.mean()),
        "score_stderr": mean_stderr(own_total),
        "opponent_mean_score": float(other_total.mean()),
        "mean_margin": float(margin.mean()),
        "margin_stderr": mean_stderr(margin),
        "by_opponent_score": by_opponent_score(result, other_total),
        "per_match": per_match_record(result, other_total),  # what `compare` pairs
        "wall_s": time.perf_counter() - started,
        # A sitting that went on from kept matches played only the rest in its wall_s.
        **({"kept_at_start": keep.kept_at_start} if keep is not None else {}),
    }


SCORE_BIN = 10  # points per bin of `by_opponent_score`


def by_opponent_score(result: np.ndarray, other_total: np.ndarray) -> dict[str, Any]:
    """Matches, wins and draws by the best opponent's final score, in bins of `SCORE_BIN`
    points (bin k: scores 10k .. 10k + 9): the picture of win rate against that score."""
    bins = other_total // SCORE_BIN
    size = int(bins.max()) + 1 if len(bins) else 0

    def count(where: np.ndarray) -> list[int]:
        return np.bincount(bins[where], minlength=size).astype(int).tolist()

    return {
        "bin_points": SCORE_BIN,
        "games": count(np.ones(len(result), bool)),
        "wins": count(result == 1),
        "draws": count(result == 0),
    }


def format_result(name: str, result: dict[str, Any]) -> str:
    """One line: wins [95 % CI], draws, mean score (and the best opponent's), mean margin, games."""
    low, high = result["win_interval_95"]
    # With several opponents the score and margin are the best of theirs, which was unsaid.
    rival = "opponent" if result.get("players", 2) == 2 else "best opponent"
    return (
        f"{name} vs {result['opponent']}: wins {100 * result['win_rate']:.2f} % "
        f"[{100 * low:.2f}, {100 * high:.2f}], "
        f"draws {100 * result['draws'] / result['games']:.2f} %, "
        f"mean {result['mean_score']:.2f} +- {result['score_stderr']:.2f} "
        f"({rival} {result['opponent_mean_score']:.2f}), margin {result['mean_margin']:.2f}, "
        f"{result['games']:,} games"
    )


def plot_curves(
    curves: dict[str, dict[str, list[float]]],
    finals: dict[str, dict[str, Any]],
    out: str | Path,
    window: int = 20,
) -> Path:
    """PNG: each run's training win rate and mean score (`training_curve`) against games, with
    its final greedy win rate (95 % interval) and mean score against the optimal agent as a point
    at the end."""
    from matplotlib.figure import Figure

    from yahtzee_jax.evaluation.plots import save_figure

    figure = Figure(figsize=(11, 4.2))
    win_axes, score_axes = figure.subplots(1, 2)
    for label, curve in curves.items():
        (line,) = win_axes.plot(curve["games"], 100 * np.asarray(curve["win_rate"]), label=label)
        score_axes.plot(curve["games"], curve["mean_score"], color=line.get_color(), label=label)
        final = finals.get(label)
        if final is not None:
            low, high = final["win_interval_95"]
            rate = 100 * final["win_rate"]
            error = [[rate - 100 * low], [100 * high - rate]]
            x = curve["games"][-1]
            win_axes.errorbar([x], [rate], yerr=error, fmt="o", color=line.get_color())
            score_axes.plot([x], [final["mean_score"]], "o", color=line.get_color())
    win_axes.axhline(50, color="grey", lw=0.8, ls="--")
    win_axes.set(xlabel="training games", ylabel="wins vs optimal-solitaire (%)")
    score_axes.set(xlabel="training games", ylabel="learner's mean score")
    win_axes.set_title(
        f"training matches (moving mean of {window} updates); dot: greedy, final evaluation",
        fontsize=9,
    )
    win_axes.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, out)


def plot_win_rates(results: dict[str, dict[str, Any]], out: str | Path) -> Path:
    """PNG: each player's win rate against the optimal agent with its 95 % interval (the JSON of
    `yahtzee-jax match ... --out`; `experiments/plot_win_rates.py` draws them), a bar per
    player, and the 50 % line."""
    from matplotlib.figure import Figure

    from yahtzee_jax.evaluation.plots import save_figure

    labels = list(results)
    rates = np.array([100 * results[label]["win_rate"] for label in labels])
    intervals = np.array([results[label]["win_interval_95"] for label in labels]) * 100
    figure = Figure(figsize=(8, 0.55 * len(labels) + 1.4))
    axes = figure.subplots()
    positions = np.arange(len(labels))[::-1]
    errors = [rates - intervals[:, 0], intervals[:, 1] - rates]
    axes.barh(positions, rates, xerr=errors, color="tab:blue", alpha=0.7, capsize=3)
    for position, label, rate in zip(positions, labels, rates, strict=True):
        games = results[label]["games"]
        axes.text(
            rate + 0.6, position, f"{rate:.2f} %  ({games:,} matches)", va="center", fontsize=8
        )
    axes.axvline(50, color="grey", lw=0.8, ls="--")
    axes.set_yticks(positions, labels, fontsize=8)
    low = max(0.0, float(intervals.min()) - 5)
    axes.set_xlim(low, max(55.0, float(intervals.max()) + 8))
    axes.set(xlabel="wins against the optimal-solitaire agent (%, 95 % Wilson interval)")
    figure.tight_layout()
    return save_figure(figure, out)
