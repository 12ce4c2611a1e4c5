"""`match ... --out F` keeps its finished matches beside F while they play
(`evaluation.match_keep`): stopped, the same command goes on from them and ends with the
result an uninterrupted command gives, match for match; a keep of other matches is not used;
the keep goes once F is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from yahtzee_jax.agents.resolve import builtin_agent
from yahtzee_jax.commands import match as match_command
from yahtzee_jax.commands.cli import main
from yahtzee_jax.evaluation import match_keep, matches
from yahtzee_jax.evaluation.match_keep import MatchKeep, keep_path
from yahtzee_jax.evaluation.matches import evaluate_agent_matches

# The optimal agent against greedy1: 12 matches in 3 batches of 4, every batch kept.
ORDERED_MAP = matches.ordered_map
GAME_KEYS = matches.game_keys
IDENTITY = {"player": "greedy1", "seed": 5}
COMMAND = ["match", "optimal", "--opponent", "greedy1", "--games", "12", "--batch-size", "4"]


def _stopped_after(monkeypatch, batches: int | None, stop=KeyboardInterrupt) -> list[int]:
    """`stop` raised after `batches` batches are played (None: never): KeyboardInterrupt for
    Ctrl-C, SystemExit for a kill (nothing handles it: only what was kept before stays).
    Returns the first match of each batch played."""
    played = []

    def stopping(function, items, threads, salvage=None):
        for result in ORDERED_MAP(function, items, 1):
            if len(played) == batches:
                raise stop
            played.append(result[0])
            yield result

    monkeypatch.setattr(matches, "ordered_map", stopping)
    return played


def _result(path) -> dict:
    """A result file without what differs between sittings (wall time, machine, the matches
    kept at its start)."""
    result = json.loads(path.read_text())
    return {k: v for k, v in result.items() if k not in ("wall_s", "machine", "kept_at_start")}


def test_stopped_matches_go_on_from_those_kept_to_the_same_results(tmp_path, monkeypatch, capsys):
    """greedy1 against random in 60 plain matches, batches of 20 (test_paired.py's program),
    kept after every batch: killed after two batches, 40 are kept; the same call says so,
    plays the third batch alone and gives every match's totals the call run whole gives."""
    monkeypatch.setattr(match_keep, "KEEP_EVERY_S", 0.0)
    agent = builtin_agent("greedy1", "plain")
    play = dict(num_games=60, seed=5, batch_size=20)
    whole = evaluate_agent_matches(agent, "random", **play)
    path = tmp_path / "out.json.partial.npz"
    _stopped_after(monkeypatch, 2, stop=SystemExit)
    with pytest.raises(SystemExit):
        evaluate_agent_matches(agent, "random", keep=MatchKeep(path, IDENTITY), **play)
    assert "interrupted" not in capsys.readouterr().err  # a kill: kept as the batches ended
    played = _stopped_after(monkeypatch, None)
    again = evaluate_agent_matches(agent, "random", keep=MatchKeep(path, IDENTITY), **play)
    assert f"going on from {path}: 40 of 60 matches kept" in capsys.readouterr().err
    assert played == [40]
    assert again.pop("kept_at_start") == 40  # its wall_s is the last 20 matches'
    assert again["per_match"] == whole["per_match"]
    assert {k: v for k, v in again.items() if k != "wall_s"} == {
        k: v for k, v in whole.items() if k != "wall_s"
    }


def _matches_stood_in_for(monkeypatch) -> list:
    """`evaluate_agent_matches` stood in for (only what the command hands it is tested): each
    call's keep, in the list returned, keeps two matches. The player's loader too: the
    win-seeker's tables are minutes of solving on a fresh machine, and the stand-in plays
    nothing; the player named and its rules are recorded in the list, before each keep."""
    handed = []

    def loaded(name, rules, cache_dir, **options):
        handed.append((name, rules.name, options))
        return object()

    monkeypatch.setattr(match_command, "builtin_agent", loaded)
    figures = ("win_rate", "draws", "mean_score", "score_stderr", "opponent_mean_score")
    result = {"opponent": "random", "games": 6, "win_interval_95": [0.0, 1.0]}
    result |= dict.fromkeys((*figures, "mean_margin"), 0.0)

    def played(agent, opponent, keep=None, **_):
        handed.append(keep)
        if keep is not None:
            keep.keep(np.zeros(2, np.int64), np.zeros((2, 1), np.int64), np.ones(2, bool))
        return result

    monkeypatch.setattr(matches, "evaluate_agent_matches", played)
    return handed


def test_the_match_command_keeps_beside_its_out_file_what_it_plays(tmp_path, monkeypatch):
    """`match PLAYER --out F` hands its matches a keep at F.partial.npz naming the player, its
    options and the matches (another seed is another keep), and removes it once F is written;
    without --out nothing is kept."""
    handed = _matches_stood_in_for(monkeypatch)
    out = tmp_path / "out.json"
    argv = ["match", "win-seeker", "--opponent", "random", "--games", "6", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    loaded, keep = handed
    assert loaded == ("win-seeker", "official", {})
    assert keep.path == keep_path(out) and not keep.path.exists() and out.exists()
    identity = json.loads(keep.identity)
    assert identity["player"] == "win-seeker" and identity["seed"] == 2
    assert identity["options"] == {"before_endgame": "normal"} and identity["games"] == 6
    assert main(["match", "win-seeker", "--opponent", "random", "--games", "6"]) == 0
    assert handed[-1] is None


def test_a_keep_of_other_matches_or_damaged_is_not_used(tmp_path, monkeypatch, capsys):
    """A keep made for another seed, or one whose bytes differ from its checksum, is said in
    one line and every match is played."""
    monkeypatch.setattr(match_keep, "KEEP_EVERY_S", 0.0)
    path = tmp_path / "out.json.partial.npz"
    identity = {"player": "optimal", "seed": 2}
    kept = MatchKeep(path, identity)
    own, other, done = kept.resume(4, 1)
    assert not done.any()
    done[:2], own[:2] = True, [250, 260]
    kept.keep(own, other, done)
    again = MatchKeep(path, identity).resume(4, 1)
    np.testing.assert_array_equal(again[0], own)
    np.testing.assert_array_equal(again[2], done)
    assert "2 of 4 matches kept" in capsys.readouterr().err
    for other_keep in (MatchKeep(path, {**identity, "seed": 3}),):
        assert not other_keep.resume(4, 1)[2].any()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    assert not MatchKeep(path, identity).resume(4, 1)[2].any()
    said = capsys.readouterr().err.splitlines()
    assert said == [f"{path} holds other matches or is damaged: not used"] * 2


def test_an_interruption_keeps_what_is_done_and_says_where(tmp_path, capsys):
    """Ctrl-C between keeps (the next one not due): what is done is written and the line says
    how many and where, for the same command to go on from."""
    path = tmp_path / "out.json.partial.npz"
    kept = MatchKeep(path, {"seed": 2}, every_s=1e9)
    own, other, done = kept.resume(4, 1)
    done[:3] = True
    kept.played(own, other, done)
    assert not path.exists()
    kept.interrupted(own, other, done)
    assert capsys.readouterr().err == (
        f"interrupted: 3 of 4 matches are kept in {path}; the same command goes on from there\n"
    )
    assert MatchKeep(path, {"seed": 2}).resume(4, 1)[2].sum() == 3


def test_a_keep_that_cannot_be_written_is_said_once(tmp_path, capsys):
    """A folder that cannot take the keep: one line, and the matches go on unkept."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    kept = MatchKeep(blocked / "out.json.partial.npz", {"seed": 2})
    arrays = (np.zeros(2, np.int64), np.zeros((2, 1), np.int64), np.zeros(2, bool))
    kept.keep(*arrays)
    kept.keep(*arrays)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("cannot keep the matches in")
    assert said[0].endswith("playing on without")


@pytest.mark.slow  # three commands; the matches alone and the wiring stay fast, below
def test_a_stopped_match_command_goes_on_from_its_kept_matches(tmp_path, monkeypatch, capsys):
    """Ctrl-C after two of three batches: exit 130, 8 of 12 matches kept beside --out and
    said; the same command plays the third batch alone and writes what the command run whole
    writes (every match's result), and the keep is gone."""
    monkeypatch.setattr(match_keep, "KEEP_EVERY_S", 0.0)
    whole, out = tmp_path / "whole.json", tmp_path / "out.json"
    assert main([*COMMAND, "--out", str(whole), "--no-progress"]) == 0
    assert not keep_path(whole).exists()
    _stopped_after(monkeypatch, 2)
    assert main([*COMMAND, "--out", str(out), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted: 8 of 12 matches are kept in {keep_path(out)}" in err
    assert not out.exists() and keep_path(out).exists()
    played = _stopped_after(monkeypatch, None)
    assert main([*COMMAND, "--out", str(out), "--no-progress"]) == 0
    assert f"going on from {keep_path(out)}: 8 of 12 matches kept" in capsys.readouterr().err
    assert played == [8]
    assert _result(out) == _result(whole)
    kept = [json.loads(path.read_text())["kept_at_start"] for path in (whole, out)]
    assert kept == [0, 8]  # the second sitting's wall_s played the last 4
    assert not keep_path(out).exists()


def test_a_schedules_keep_names_its_bytes_and_a_runs_rules_are_its_own(
    tmp_path, monkeypatch, capsys
):
    """Found in review: a keep named the hindsight schedule by its path, so matches kept under
    a schedule edited since (or the same name in another folder) were mixed with the new
    one's, and the result recorded the default weight 1 beside the schedule it did not play;
    `match RUN --rules X` played the run's own rules without a word. The player and the
    matches are stood in for: only what the command hands them is tested."""
    from yahtzee_jax.runner import checkpointing

    handed = _matches_stood_in_for(monkeypatch)
    schedule, out = tmp_path / "schedule.json", tmp_path / "out.json"
    argv = ["match", "target-seeker", "--hindsight-schedule", str(schedule), "--games", "6"]
    digests = []
    for weights in ([[1.0, 1.0]] * 13, [[0.5, 0.5]] * 13):
        schedule.write_text(json.dumps({"weights": weights}))
        assert main([*argv, "--out", str(out), "--no-progress"]) == 0
        digests.append(json.loads(handed[-1].identity)["schedule_sha256"])
    assert digests[0] != digests[1]
    written = json.loads(out.read_text())
    assert written["hindsight_schedule"] == str(schedule) and "hindsight_weight" not in written

    run = tmp_path / "run"
    run.mkdir()
    plain = builtin_agent("greedy1", "plain")
    monkeypatch.setattr(checkpointing, "load_agent_and_step", lambda *args: (plain, 10))
    capsys.readouterr()
    assert main(["match", str(run), "--rules", "official", "--games", "6"]) == 2
    error = capsys.readouterr().err.strip()
    assert "plays 'plain' rules, not 'official'" in error and "\n" not in error
    assert main(["match", str(run), "--rules", "plain", "--games", "6", "--no-progress"]) == 0
    # --solitaire for a run that reads no other card played the same matches without a word.
    assert main(["match", str(run), "--solitaire", "--games", "6"]) == 2
    assert "plays its own card only already" in capsys.readouterr().err


def test_the_last_batch_is_padded_to_the_others_size(monkeypatch):
    """Found in review: 40 matches in batches of 36 were played as 36 and 4, two programs
    compiled (7 s more for the target-seeker); now as two batches of 20, the matches batches
    of 20 play (test_stopped_matches_go_on...'s program), match for match."""
    counts = []

    def recording(seed, first, count, players=2):
        counts.append(count)
        return GAME_KEYS(seed, first, count, players)

    monkeypatch.setattr(matches, "game_keys", recording)
    agent = builtin_agent("greedy1", "plain")
    asked = evaluate_agent_matches(agent, "random", num_games=40, seed=5, batch_size=36)
    assert counts == [20, 20]
    twenties = evaluate_agent_matches(agent, "random", num_games=40, seed=5, batch_size=20)
    assert asked["per_match"] == twenties["per_match"]


def test_ordered_map_hands_a_stopped_callers_running_items_to_salvage():
    """Found in review: a Ctrl-C waited for the batches running on the other threads and then
    dropped them. Five items on two threads, the caller stopped after the second result:
    items 2 and 3 were running (they wait for the stop), 4 queued. The queued one is never
    run, the running ones are waited for and handed to `salvage`, in order, after the one the
    caller stopped on (it may not have taken it: taking one twice must do no harm)."""
    import threading
    import time

    from yahtzee_jax.parallel import ordered_map

    stopped, ran, salvaged = threading.Event(), [], []

    def square(item: int) -> int:
        ran.append(item)
        if item >= 2:
            assert stopped.wait(5)
            time.sleep(0.2)  # the caller's shutdown cancels item 4 before a thread is free
        return item * item

    results = []
    with pytest.raises(KeyboardInterrupt):
        for result in ordered_map(square, [0, 1, 2, 3, 4], 2, salvage=salvaged.append):
            results.append(result)
            if len(results) == 2:
                stopped.set()
                raise KeyboardInterrupt
    assert results == [0, 1] and salvaged == [1, 4, 9] and 4 not in ran


def test_an_interrupt_keeps_the_batches_running_then(tmp_path, monkeypatch, capsys):
    """greedy1 against random, 60 plain matches in batches of 20 on two threads (the first
    test's program): Ctrl-C as the second batch ends (the first plays alone, compiling),
    while the third plays, keeps all 60, and the next sitting plays none."""
    monkeypatch.setattr(matches, "host_threads", lambda: 2)
    path = tmp_path / "out.json.partial.npz"
    agent = builtin_agent("greedy1", "plain")
    play = dict(num_games=60, seed=5, batch_size=20)

    class Stopping(MatchKeep):
        def played(self, own, other, done):
            if done.sum() == 40:
                raise KeyboardInterrupt  # Ctrl-C between the batches

    with pytest.raises(KeyboardInterrupt):
        evaluate_agent_matches(agent, "random", keep=Stopping(path, IDENTITY), **play)
    assert "interrupted: 60 of 60 matches are kept" in capsys.readouterr().err
    played = _stopped_after(monkeypatch, None)
    evaluate_agent_matches(agent, "random", keep=MatchKeep(path, IDENTITY), **play)
    assert played == []
