"""A tournament's games, kept while they play: `tournament ... --out DIR` stopped in its fifth
minute goes on from what it finished when the same command runs again.

Two kinds of work make a tournament (`round_robin`): each agent that sees only its own card
plays its solitaire games once, and each pair with an agent that reads the other's card plays
real matches. Both are kept in DIR/keep/ through `match_keep.MatchKeep` (written whole with
its checksum): an agent's solitaire games once they are all played (they are fast: seconds to a
minute), a pair's matches every 10 s while they play and when interrupted. Game j and match i
of a seed depend on the seed and their number alone, so what is kept and what is played next
make the games one sitting plays: the tournament's results are the same to the last game. A
keep names what it holds (the agent, or both agents of the pair, with a checkpoint's path and
parameters' digest; the rules, games and seed; the package's code): a keep of anything else is
said and not used. Once the results are written the keeps go.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from yahtzee_jax.agents import Agent
from yahtzee_jax.evaluation.match_keep import MatchKeep
from yahtzee_jax.evaluation.round_robin import PairResult, agent_games, games_needed, match_pair
from yahtzee_jax.files import remove_checked

KEEP_FOLDER = "keep"


class TournamentKeeps:
    """The keeps of one tournament's games in `folder` (None: nothing is kept)."""

    def __init__(self, folder: Path | None, rules: str, seed: int):
        self.folder, self.rules, self.seed = folder, rules, seed
        self.paths: list[Path] = []  # every keep this tournament made or read

    def keep(self, identity: dict[str, Any], noun: str) -> MatchKeep | None:
        """The keep of one piece of work (its file named by what it holds)."""
        if self.folder is None:
            return None
        identity = {**identity, "rules": self.rules, "seed": self.seed}
        name = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
        path = self.folder / f"{name}.partial.npz"
        self.paths.append(path)
        return MatchKeep(path, identity, noun=noun)

    def remove(self) -> None:
        """The results are written: every keep goes, and the folder if nothing else is in it;
        the keeps of other settings (a stopped tournament of other agents, games or seed, or
        of older code) are left, and said."""
        for path in self.paths:
            remove_checked(path)
        if self.folder is None:
            return
        with contextlib.suppress(OSError):
            self.folder.rmdir()
        others = len(list(self.folder.glob("*.partial.npz"))) if self.folder.is_dir() else 0
        if others:  # stale for this command: none of them is its work
            print(
                f"{self.folder} still holds {others} keep(s) of other settings (stopped "
                "tournaments of other agents, games, rules or seed, or of older code); remove "
                "the folder if they are not wanted",
                file=sys.stderr,
            )


def solitaire_totals(
    agent: Agent,
    identity: dict[str, str],
    num_games: int,
    seed: int,
    keeps: TournamentKeeps,
    **play: Any,
) -> np.ndarray:
    """int[M]: the agent's totals in solitaire games 0..M-1 of the seed, from its keep when it
    holds them all, else played and then kept (the optimal agent's are in the solver's cache,
    `evaluate`'s reference games)."""
    keep = (
        None if agent.optimal else keeps.keep({"games_of": identity, "games": num_games}, "games")
    )
    if keep is not None:
        own, _, done = keep.resume(num_games, 0)
        if done.all():
            return own
    totals = agent_games(agent, num_games, seed, **play)
    if keep is not None:
        keep.keep(totals, np.zeros((num_games, 0), np.int64), np.ones(num_games, bool))
    return totals


def pair_matches(
    a: Agent,
    b: Agent,
    identities: tuple[dict[str, str], dict[str, str]],
    num_games: int,
    seed: int,
    keeps: TournamentKeeps,
    batch_size: int | None,
    progress: bool,
) -> tuple[PairResult, np.ndarray, np.ndarray]:
    """`round_robin.match_pair`, its finished matches kept while they play."""
    keep = keeps.keep({"matches_of": list(identities), "games": num_games}, noun="matches")
    return match_pair(a, b, num_games, seed, batch_size, progress, keep=keep)


def tournament_games(
    agents: dict[str, Agent],
    identities: dict[str, dict[str, str]],
    games: int,
    games_for: dict[str, int],
    seed: int,
    dice: str,
    keeps: TournamentKeeps,
    *,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> tuple[dict[str, np.ndarray], dict[tuple[str, str], PairResult]]:
    """Every agent's totals (by name, in the agents' order) and the pairs played as real
    matches, what `round_robin` scores; `agents` by their command-line spec, `identities` what
    each is for its keeps (a built-in's name, a checkpoint's path and parameters' digest)."""
    readers = [spec for spec, agent in agents.items() if agent.reads_others]
    totals, matches = {}, {}
    try:
        for spec, agent in agents.items():
            if spec not in readers:
                count = games_needed(min(games_for.get(spec, games), games), dice)
                play = {"batch_size": batch_size, "cache_dir": cache_dir, "progress": progress}
                totals[agent.name] = solitaire_totals(
                    agent, identities[spec], count, seed, keeps, **play
                )
        match_totals = {agents[spec].name: [] for spec in readers}
        specs = list(agents)
        for index, a in enumerate(specs):
            for b in specs[index + 1 :]:
                if a not in readers and b not in readers:
                    continue
                count = min(games_for.get(a, games), games_for.get(b, games))
                first, second = agents[a], agents[b]
                pair, *pair_totals = pair_matches(
                    first,
                    second,
                    (identities[a], identities[b]),
                    count,
                    seed,
                    keeps,
                    batch_size,
                    progress,
                )
                matches[(first.name, second.name)] = pair
                for agent, agent_totals in zip((first, second), pair_totals, strict=True):
                    if agent.name in match_totals:
                        match_totals[agent.name].append(agent_totals)
    except KeyboardInterrupt:
        if keeps.folder is not None and keeps.folder.is_dir():
            print(
                f"the games finished are kept in {keeps.folder}; the same command goes on "
                "from them",
                file=sys.stderr,
            )
        raise
    for name, parts in match_totals.items():  # an agent that reads: its score over its matches
        totals[name] = np.concatenate(parts)
    totals = {agent.name: totals[agent.name] for agent in agents.values()}  # command-line order
    return totals, matches
