"""Round-robin tournaments: every pair of agents, a win-rate matrix with 95 % intervals.

`yahtzee-jax tournament A B [C ...] --games N --seed S --rules R` plays every pair of distinct
agents N two-player games and reports, for each ordered pair, the share of games the row agent
wins with its Wilson 95 % interval, the draws, each agent's mean score and the mean margin.

How a game is played. An agent that sees only its own card (all but the match players below)
does not interact with the other player: a game between A and B is one solitaire game of each,
compared at the end (`tests/test_multiplayer.py` plays such games through the two-player
engine, in both seat orders, and gets the solitaire totals). So each agent plays its solitaire
games once, with the keys of `play_games` (game j of seed S: ``fold_in(key(S), j)``, the
games of `yahtzee-jax evaluate --seed S`), and every pair is scored from them.

What is shared (``--dice``):

- ``independent`` (default, the real game: each player rolls their own dice): in game i of
  every pair the player in seat s plays the dice of game ``2i + s``. The two players' dice are
  independent, and the same per seat across pairs: every pair's game i deals seat 0 the same
  dice stream, and seat 1 another. Each agent plays 2N solitaire games.
- ``common`` (duplicate Yahtzee): both seats of game i play the dice of game i. They open every
  turn with the same roll and draw the same fresh faces at each re-roll (the die at sorted
  position j, if re-rolled, shows the same face for both), so equal keeps give equal dice;
  once their keeps differ their dice differ. Each agent plays N games. The mean margin
  estimates the same thing as with independent dice with much less variance, but the win rate
  is that of another game: it depends on how the two players' scores are coupled, not only on
  each one's score distribution (`docs/tournament/README.md` shows both).

Seats: in a pair (A, B), A sits first in the even-numbered games and second in the odd ones.
Results are computed by seat and mapped back to the agents, and wins are also reported by seat.
For agents that see only their own card the seat changes nothing but which dice stream they
get.

Agents that read the opponent's card (an `Agent` whose `reads_others`: the solver's
`win-seeker`, a two-player checkpoint trained with opponent features) cannot be scored from
solitaire games: every pair with one of them is played as N real matches on the two-player
engine (`two_player.match_totals`, the match keys of `two_player.game_keys` for the seed; the
two seats' dice are independent, so `--dice common` is refused), A first in the even games.
Their mean score is over their matches.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from yahtzee_jax.agents import Agent
from yahtzee_jax.evaluation.match_keep import MatchKeep
from yahtzee_jax.evaluation.plots import save_figure
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.evaluation.reports import optimal_reference
from yahtzee_jax.evaluation.statistics import mean_stderr, wilson_interval
from yahtzee_jax.files import write_json, write_whole

FIRST_SEAT, SECOND_SEAT = 0, 1
NUM_SEATS = 2
DICE_MODES = ("independent", "common")


def seat_game_indices(num_games: int, dice: str) -> np.ndarray:
    """int[N, 2]: the solitaire game whose dice seat s plays in pair game i (see `--dice`)."""
    if dice not in DICE_MODES:
        raise ValueError(f"dice must be one of {DICE_MODES}, got {dice!r}")
    games = np.arange(num_games)[:, None]
    if dice == "common":
        return np.repeat(games, NUM_SEATS, axis=1)
    return NUM_SEATS * games + np.arange(NUM_SEATS)


def first_agent_seats(num_games: int) -> np.ndarray:
    """int[N]: the seat of the pair's first agent in each game (first in even games)."""
    return np.arange(num_games) % NUM_SEATS


def seat_totals(a_by_seat: np.ndarray, b_by_seat: np.ndarray) -> np.ndarray:
    """int[N, 2]: each game's totals by seat, A and B seated as `first_agent_seats` says.

    `a_by_seat[i, s]` is A's total if A sits in seat s in game i (the dice of that seat).
    """
    a_first = first_agent_seats(len(a_by_seat)) == FIRST_SEAT
    first = np.where(a_first, a_by_seat[:, FIRST_SEAT], b_by_seat[:, FIRST_SEAT])
    second = np.where(a_first, b_by_seat[:, SECOND_SEAT], a_by_seat[:, SECOND_SEAT])
    return np.stack([first, second], axis=1)


@dataclasses.dataclass(frozen=True)
class PairResult:
    """N games between agents `a` and `b` (counts from a's side) and its statistics."""

    a: str
    b: str
    games: int
    a_wins: int
    b_wins: int
    draws: int
    a_wins_by_seat: tuple[int, int]  # a's wins when a sat first, when a sat second
    b_wins_by_seat: tuple[int, int]
    mean_margin: float  # mean of a's total minus b's
    margin_stderr: float

    def win_rate(self, agent: str) -> float:
        """Share of the games `agent` (a or b) won."""
        return self._wins(agent) / self.games

    def win_interval(self, agent: str) -> tuple[float, float]:
        """Wilson 95 % interval of `agent`'s win rate."""
        return wilson_interval(self._wins(agent), self.games)

    @property
    def draw_rate(self) -> float:
        """Share of drawn games."""
        return self.draws / self.games

    def _wins(self, agent: str) -> int:
        if agent not in (self.a, self.b):
            raise KeyError(f"{agent!r} did not play in {self.a} vs {self.b}")
        return self.a_wins if agent == self.a else self.b_wins


def play_pair(a: str, a_by_seat: np.ndarray, b: str, b_by_seat: np.ndarray) -> PairResult:
    """Score a pair's games from each agent's totals by seat (int[N, 2], see `seat_totals`).

    With fewer games for one agent (`--games-for`) the pair plays the first min(N_a, N_b).
    """
    games = min(len(a_by_seat), len(b_by_seat))
    by_seat = seat_totals(np.asarray(a_by_seat[:games]), np.asarray(b_by_seat[:games]))
    first_seat_result = np.sign(by_seat[:, FIRST_SEAT] - by_seat[:, SECOND_SEAT])
    a_seat = first_agent_seats(games)
    a_first = a_seat == FIRST_SEAT
    a_result = np.where(a_first, first_seat_result, -first_seat_result)
    a_total = np.where(a_first, by_seat[:, FIRST_SEAT], by_seat[:, SECOND_SEAT])
    b_total = np.where(a_first, by_seat[:, SECOND_SEAT], by_seat[:, FIRST_SEAT])
    margin = (a_total - b_total).astype(np.float64)
    return PairResult(
        a=a,
        b=b,
        games=games,
        a_wins=int(np.sum(a_result > 0)),
        b_wins=int(np.sum(a_result < 0)),
        draws=int(np.sum(a_result == 0)),
        a_wins_by_seat=tuple(int(np.sum((a_result > 0) & (a_seat == s))) for s in (0, 1)),
        b_wins_by_seat=tuple(int(np.sum((a_result < 0) & (a_seat != s))) for s in (0, 1)),
        mean_margin=float(margin.mean()),
        margin_stderr=mean_stderr(margin),
    )


@dataclasses.dataclass(frozen=True)
class Tournament:
    """Every pair of `agents` (names in command-line order) and each agent's solitaire totals."""

    rules: str
    seed: int
    dice: str  # one of DICE_MODES
    agents: tuple[str, ...]
    totals: dict[str, np.ndarray]  # int[M]: the agent's totals in games 0..M-1 of the seed
    pairs: dict[tuple[str, str], PairResult]  # keyed by (a, b) with a before b in `agents`
    matched: tuple[tuple[str, str], ...] = ()  # the pairs played as real matches (`match_pair`)

    def pair(self, row: str, column: str) -> PairResult:
        """The games between two agents, in either order."""
        return self.pairs.get((row, column)) or self.pairs[(column, row)]

    def win_matrix(self) -> np.ndarray:
        """float[K, K]: share of games the row agent wins against the column agent (NaN diag)."""
        return self._matrix(lambda row, column: self.pair(row, column).win_rate(row))

    def draw_matrix(self) -> np.ndarray:
        """float[K, K]: share of drawn games of each pair (NaN diagonal)."""
        return self._matrix(lambda row, column: self.pair(row, column).draw_rate)

    def _matrix(self, cell) -> np.ndarray:
        size = len(self.agents)
        matrix = np.full((size, size), np.nan)
        for i, row in enumerate(self.agents):
            for j, column in enumerate(self.agents):
                if i != j:
                    matrix[i, j] = cell(row, column)
        return matrix


def games_needed(num_games: int, dice: str) -> int:
    """Solitaire games an agent plays for `num_games` games per pair."""
    return int(seat_game_indices(num_games, dice).max()) + 1


def round_robin(
    totals: dict[str, np.ndarray],
    rules: str,
    seed: int,
    dice: str,
    matches: dict[tuple[str, str], PairResult] | None = None,
) -> Tournament:
    """Score every pair of agents from their solitaire totals (games 0..M-1 of the seed);
    the pairs in `matches` were played as real matches (`match_pair`) and are taken as they are.
    """
    matches = matches or {}

    @functools.cache
    def by_seat(agent: str) -> np.ndarray:  # only for agents in pairs scored from solitaire games
        agent_totals = totals[agent]
        # The most pair games these solitaire games can deal, given what each seat needs.
        pair_games = len(agent_totals) // NUM_SEATS if dice == "independent" else len(agent_totals)
        return np.asarray(agent_totals)[seat_game_indices(pair_games, dice)]

    agents = tuple(totals)
    pairs = {
        (a, b): matches.get((a, b)) or play_pair(a, by_seat(a), b, by_seat(b))
        for index, a in enumerate(agents)
        for b in agents[index + 1 :]
    }
    return Tournament(rules, seed, dice, agents, totals, pairs, matched=tuple(matches))


def match_pair(
    a: Agent,
    b: Agent,
    num_games: int,
    seed: int,
    batch_size: int | None,
    progress: bool = False,
    keep: MatchKeep | None = None,
) -> tuple[PairResult, np.ndarray, np.ndarray]:
    """N real two-player matches of `a` against `b`, for agents that read the opponent's card:
    a sits first in the even games, the dice of `two_player.game_keys` (independent per seat);
    `keep` keeps the finished matches while they play (`match_keep`).

    Returns the pair's result and each agent's totals in these games.
    """
    from yahtzee_jax.evaluation import matches as two_player

    a_totals, b_totals = two_player.match_totals(
        a, (b,), a.rules, num_games, seed, batch_size or two_player.MATCH_BATCH, progress, keep
    )
    b_totals = b_totals[:, 0]
    # By seat as `play_pair` reads them: a's total in the seat a sat in, b's in the other.
    games, a_seat = np.arange(num_games), first_agent_seats(num_games)
    a_by_seat, b_by_seat = (np.zeros((num_games, NUM_SEATS), np.int64) for _ in range(2))
    a_by_seat[games, a_seat], b_by_seat[games, 1 - a_seat] = a_totals, b_totals
    return play_pair(a.name, a_by_seat, b.name, b_by_seat), a_totals, b_totals


def agent_games(
    agent: Agent,
    num_games: int,
    seed: int,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> np.ndarray:
    """int[M]: the agent's totals in solitaire games 0..M-1 of the seed (optimal's cached)."""
    if agent.optimal:  # the same games `evaluate` keeps as its optimal reference
        records = optimal_reference(agent.rules, num_games, seed, cache_dir, batch_size, progress)
    else:
        records = play_games(agent, num_games, seed, batch_size=batch_size, progress=progress)
    return records.total


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

Table = tuple[str, list[str], list[list[str]]]  # title, header, rows


def _percent_cell(rate: float, interval: tuple[float, float]) -> str:
    return f"{100 * rate:.2f}% [{100 * interval[0]:.2f}, {100 * interval[1]:.2f}]"


def tables(tournament: Tournament) -> list[Table]:
    """Win rates with intervals, draws, mean scores and mean margins, as (title, header, rows)."""
    agents = list(tournament.agents)
    win_rows, draw_rows, margin_rows = [], [], []
    for row in agents:
        wins, draws, margins = [row], [row], [row]
        for column in agents:
            if row == column:
                wins.append("-")
                draws.append("-")
                margins.append("-")
                continue
            pair = tournament.pair(row, column)
            wins.append(_percent_cell(pair.win_rate(row), pair.win_interval(row)))
            draws.append(f"{100 * pair.draw_rate:.2f}%")
            sign = 1 if pair.a == row else -1
            margins.append(f"{sign * pair.mean_margin:+.2f} ± {pair.margin_stderr:.2f}")
        win_rows.append(wins)
        draw_rows.append(draws)
        margin_rows.append(margins)
    games = {tournament.pair(r, c).games for i, r in enumerate(agents) for c in agents[i + 1 :]}
    games_text = "/".join(f"{n:,}" for n in sorted(games))
    score_rows = []
    for agent in agents:
        total = tournament.totals[agent]
        stderr = mean_stderr(total)
        score_rows.append([agent, f"{total.mean():.2f}", f"{stderr:.2f}", f"{total.size:,}"])
    header = ["row vs column", *agents]
    return [
        (
            f"Win rate of the row agent against the column agent, 95 % Wilson interval "
            f"({games_text} games per pair, {tournament.dice} dice, {tournament.rules} rules, "
            f"seed {tournament.seed})",
            header,
            win_rows,
        ),
        ("Draws", header, draw_rows),
        ("Mean margin, row minus column (± standard error)", header, margin_rows),
        (
            "Mean score (solitaire games played: with independent dice one stream per seat, "
            "2N games; an agent that reads its opponent's card: its matches)",
            ["agent", "mean", "s.e.", "games"],
            score_rows,
        ),
    ]


def format_markdown(tables: list[Table]) -> str:
    """The tables as markdown under a title, with the heat map linked."""
    parts = ["# Tournament"]
    for title, header, rows in tables:
        lines = [f"## {title}", "", "| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        parts.append("\n".join(lines))
    parts.append(f"![win rates]({HEATMAP_FILE})")
    return "\n\n".join(parts) + "\n"


def to_json(tournament: Tournament) -> dict:
    """JSON-ready results: every pair's counts, rates, intervals and margins."""
    pairs = []
    for pair in tournament.pairs.values():
        entry = dataclasses.asdict(pair)
        for agent, side in ((pair.a, "a"), (pair.b, "b")):
            entry[f"{side}_win_rate"] = pair.win_rate(agent)
            entry[f"{side}_win_interval"] = list(pair.win_interval(agent))
        entry["draw_rate"] = pair.draw_rate
        pairs.append(entry)
    return {
        "rules": tournament.rules,
        "seed": tournament.seed,
        "dice": tournament.dice,
        "agents": list(tournament.agents),
        "mean_scores": {
            agent: {
                "mean": float(total.mean()),
                "std": float(total.std(ddof=1)) if total.size > 1 else 0.0,
                "games": int(total.size),
            }
            for agent, total in tournament.totals.items()
        },
        "win_matrix": _nan_to_none(tournament.win_matrix()),
        "draw_matrix": _nan_to_none(tournament.draw_matrix()),
        "pairs": pairs,
        "dice_streams": (
            "solitaire game j of an agent is played from fold_in(key(seed), j); in pair game i "
            + (
                "both seats play game i"
                if tournament.dice == "common"
                else "the player in seat s plays game 2i + s"
            )
        ),
        "seats": "the pair's first agent sits first (seat 0) in even-numbered games",
        "real_matches": [list(pair) for pair in tournament.matched],
        "real_match_dice": "a pair in real_matches is played as matches 0..N-1 of "
        "two_player.game_keys(seed), each seat with its own dice",
    }


def _nan_to_none(matrix: np.ndarray) -> list[list[float | None]]:
    return [[None if math.isnan(value) else float(value) for value in row] for row in matrix]


HEATMAP_FILE = "win_rates.png"


def heatmap_figure(tournament: Tournament) -> Figure:
    """Win rate of each row agent against each column agent, with its interval in each cell."""
    matrix = tournament.win_matrix()
    size = len(tournament.agents)
    figure = Figure(figsize=(2.0 + 1.7 * size, 1.2 + 1.2 * size))
    axes = figure.subplots()
    image = axes.imshow(np.ma.masked_invalid(matrix), cmap="RdBu", vmin=0.0, vmax=1.0)
    for i, row in enumerate(tournament.agents):
        for j, column in enumerate(tournament.agents):
            if i == j:
                axes.text(j, i, "-", ha="center", va="center", color="gray")
                continue
            pair = tournament.pair(row, column)
            low, high = pair.win_interval(row)
            rate = matrix[i, j]
            color = "white" if abs(rate - 0.5) > 0.3 else "black"
            label = f"{100 * rate:.2f}%\n[{100 * low:.2f}, {100 * high:.2f}]"
            axes.text(j, i, label, ha="center", va="center", color=color, fontsize=8)
    axes.set_xticks(range(size), tournament.agents, rotation=30, ha="right")
    axes.set_yticks(range(size), tournament.agents)
    axes.set_xlabel("column agent")
    axes.set_ylabel("row agent")
    axes.set_title(
        f"P(row beats column), {tournament.rules} rules, {tournament.dice} dice; "
        "95 % Wilson intervals"
    )
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    figure.tight_layout()
    return figure


def write_results(tournament: Tournament, out_dir: Path) -> list[Path]:
    """Write tournament.json, tournament.md and the heat map into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "tournament.json"
    write_json(json_path, to_json(tournament))
    markdown_path = out_dir / "tournament.md"
    write_whole(markdown_path, format_markdown(tables(tournament)))
    return [
        json_path,
        markdown_path,
        save_figure(heatmap_figure(tournament), out_dir / HEATMAP_FILE),
    ]


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------
