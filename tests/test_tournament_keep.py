"""`tournament ... --out DIR` keeps what it finished in DIR/keep/ while it plays
(`evaluation.tournament_games`): stopped, the same command goes on from it, plays only what is
left and writes the results one sitting writes; the keeps go once the results are written."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.commands.cli import main
from yahtzee_jax.evaluation import match_keep, matches, tournament_games
from yahtzee_jax.evaluation.tournament_games import TournamentKeeps
from yahtzee_jax.game.rules import OFFICIAL

AGENT_GAMES = tournament_games.agent_games
GAME_KEYS = matches.game_keys
KEPT_PLAYED = match_keep.MatchKeep.played
COMMAND = ["tournament", "random", "greedy1", "--games", "60", "--seed", "3", "--no-progress"]


def _tournament(out) -> dict:
    """The results file without its timing."""
    return json.loads((out / "tournament.json").read_text())


def test_a_stopped_tournament_goes_on_from_its_finished_agents(tmp_path, monkeypatch, capsys):
    """random and greedy1, 60 games a pair (test_tournament.py's command): Ctrl-C while greedy1
    plays keeps random's 120 solitaire games; the same command plays greedy1's alone, writes
    the results the command run whole writes, and removes its keep folder."""
    whole = tmp_path / "whole"
    assert main([*COMMAND, "--out", str(whole)]) == 0
    assert not (whole / "keep").exists()  # removed once the results are written
    played = []

    def stopped_at_greedy1(agent, *args, **kwargs):
        if agent.name == "greedy1":
            raise KeyboardInterrupt
        played.append(agent.name)
        return AGENT_GAMES(agent, *args, **kwargs)

    out = tmp_path / "stopped"
    monkeypatch.setattr(tournament_games, "agent_games", stopped_at_greedy1)
    assert main([*COMMAND, "--out", str(out)]) == 130
    assert f"the games finished are kept in {out / 'keep'}" in capsys.readouterr().err
    assert played == ["random"] and len(list((out / "keep").glob("*.partial.npz"))) == 1

    def recorded(agent, *args, **kwargs):
        played.append(agent.name)
        return AGENT_GAMES(agent, *args, **kwargs)

    monkeypatch.setattr(tournament_games, "agent_games", recorded)
    assert main([*COMMAND, "--out", str(out)]) == 0
    assert "120 of 120 games kept" in capsys.readouterr().err
    assert played == ["random", "greedy1"]  # random's games were not played again
    assert _tournament(out) == _tournament(whole)
    assert not (out / "keep").exists()


def test_a_pair_of_real_matches_goes_on_from_the_matches_kept(tmp_path, monkeypatch, capsys):
    """The random agent marked as reading the other's card (test_tournament.py's reader)
    against the random agent, 12 matches in batches of 4: stopped after two batches, 8 are
    kept beside the random agent's solitaire games; the next sitting plays the last batch
    alone, and both give what one uninterrupted sitting gives; the keeps go with their folder.
    (A damaged keep: test_match_keep.py.)"""
    monkeypatch.setattr(match_keep, "KEEP_EVERY_S", 0.0)
    random = builtin_agent("random", OFFICIAL)
    reader = dataclasses.replace(random, name="reader", reads_others=True)
    agents = {"reader": reader, "random": random}
    identities = {name: {"agent": name} for name in agents}
    play = dict(games=12, games_for={}, seed=4, dice="independent", batch_size=4)
    whole_totals, whole_pairs = tournament_games.tournament_games(
        agents, identities, keeps=TournamentKeeps(None, "official", 4), **play
    )
    folder = tmp_path / "keep"
    monkeypatch.setattr(matches, "host_threads", lambda: 1)  # no batch plays beside the stop
    played = []

    def recorded(seed, first, count, players=2):
        played.append(first)
        return GAME_KEYS(seed, first, count, players)

    def stopping(self, own, other, done):
        KEPT_PLAYED(self, own, other, done)
        if done.sum() == 8:
            raise KeyboardInterrupt  # Ctrl-C after two batches

    monkeypatch.setattr(matches, "game_keys", recorded)
    monkeypatch.setattr(match_keep.MatchKeep, "played", stopping)
    with pytest.raises(KeyboardInterrupt):
        tournament_games.tournament_games(
            agents, identities, keeps=TournamentKeeps(folder, "official", 4), **play
        )
    assert "interrupted: 8 of 12 matches are kept" in capsys.readouterr().err
    played.clear()
    monkeypatch.setattr(match_keep.MatchKeep, "played", KEPT_PLAYED)
    keeps = TournamentKeeps(folder, "official", 4)
    totals, pairs = tournament_games.tournament_games(agents, identities, keeps=keeps, **play)
    err = capsys.readouterr().err
    assert "8 of 12 matches kept" in err and "24 of 24 games kept" in err
    assert played == [8]
    assert pairs == whole_pairs
    assert all(np.array_equal(totals[name], whole_totals[name]) for name in whole_totals)

    keeps.remove()
    assert not folder.exists()


def test_a_checkpoints_keeps_name_its_parameters(tmp_path) -> None:
    """A built-in agent is kept by its name; a checkpoint by its resolved path and its
    parameters' digest, so a run trained further does not go on from games of its old self."""
    from yahtzee_jax.commands.tournament import _identity

    random = builtin_agent("random", OFFICIAL)
    assert _identity("random", random) == {"agent": "random"}
    run = tmp_path / "run"
    run.mkdir()
    trained = dataclasses.replace(random, params={"w": np.zeros(3, np.float32)})
    further = dataclasses.replace(random, params={"w": np.ones(3, np.float32)})
    identity = _identity(str(run), trained)
    assert identity["checkpoint"] == str(run.resolve())
    assert identity["params"] != _identity(str(run), further)["params"]


def test_keeps_of_other_settings_are_left_and_said(tmp_path, capsys) -> None:
    """Once the results are written a tournament removes its own keeps; a keep of other
    settings in the same folder (a stopped tournament of other agents) is none of its work: it
    stays, and one line says so, where the folder was left without a word before."""
    folder = tmp_path / "keep"
    folder.mkdir()
    stale = folder / "0123456789abcdef.partial.npz"
    stale.write_bytes(b"another tournament's matches")
    keeps = TournamentKeeps(folder, "official", 4)
    own = keeps.keep({"games_of": {"agent": "random"}, "games": 8}, "games")
    own.path.write_bytes(b"this tournament's games")
    keeps.remove()
    assert not own.path.exists() and stale.exists()
    err = capsys.readouterr().err
    assert f"{folder} still holds 1 keep(s) of other settings" in err
    stale.unlink()
    keeps.remove()  # the folder empty: removed, nothing said
    assert not folder.exists() and capsys.readouterr().err == ""
