"""Paired comparisons of two players on the same matches (`evaluation.paired`, `compare`)."""

from __future__ import annotations

import base64
import json
import math
import re
import zlib

import numpy as np
import pytest

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.matches import evaluate_agent_matches
from yahtzee_jax.evaluation.paired import (
    compare_match_files,
    match_results,
    paired_difference,
    per_match_record,
)
from yahtzee_jax.evaluation.statistics import mean_stderr


def test_paired_difference_by_hand() -> None:
    """Five matches worked by hand: the per-match differences of wins are 0, +1, -1, 0, +1
    (a draw is not a win), mean 0.2, sample variance 2.8 / 4 = 0.7, so the standard error is
    sqrt(0.7 / 5)."""
    first = np.array([1, 1, 0, -1, 1])
    second = np.array([1, -1, 1, -1, -1])
    result = paired_difference(first, second)
    assert (result["first_wins"], result["second_wins"]) == (3, 2)
    assert (result["only_first_won"], result["only_second_won"]) == (2, 1)
    assert result["difference"] == pytest.approx(0.2)
    assert result["stderr"] == pytest.approx(math.sqrt(0.14))
    low, high = result["interval_95"]
    assert (low + high) / 2 == pytest.approx(0.2)
    assert high - low == pytest.approx(2 * 1.959964 * math.sqrt(0.14))


def test_identical_players_differ_by_nothing() -> None:
    """The same results on both sides: no discordant match, a difference of 0 with no width."""
    results = np.random.default_rng(0).integers(-1, 2, 1_000)
    result = paired_difference(results, results)
    assert result["difference"] == 0 and result["interval_95"] == [0.0, 0.0]


def test_paired_interval_covers_the_truth_and_beats_unpaired() -> None:
    """Simulated pairs sharing an opponent (each wins when its score beats the shared one,
    true win rates 0.52 and 0.50 by construction): the 95 % interval holds the true 0.02 in
    about 95 % of 400 samples, and is narrower than the unpaired one (the shared opponent
    makes the results agree)."""
    rng = np.random.default_rng(7)
    games, covered, widths = 4_000, 0, []
    # P(first wins) = P(a + 0.05 > o) with a, o ~ N(0, 1): Phi(0.05 / sqrt 2); the second's 0.5.
    truth = 0.5 * (1 + math.erf(0.05 / 2)) - 0.5
    for _ in range(400):
        opponent = rng.normal(size=games)
        first = np.where(rng.normal(size=games) + 0.05 > opponent, 1, -1)
        second = np.where(rng.normal(size=games) > opponent, 1, -1)
        low, high = paired_difference(first, second)["interval_95"]
        covered += low <= truth <= high
        widths.append(high - low)
    assert 0.92 <= covered / 400 <= 0.98
    unpaired = 2 * 1.96 * math.sqrt(2 * 0.25 / games)
    assert np.mean(widths) < 0.9 * unpaired


def test_results_round_trip_through_json() -> None:
    """Wins, draws and losses come back from a JSON as they went in, 100,000 of them in under
    25 KB."""
    results = np.random.default_rng(1).choice([-1, 0, 1], 100_000, p=[0.49, 0.01, 0.5])
    record = per_match_record(results, np.arange(100_000))
    assert len(json.dumps(record)) < 25_000
    back = match_results({"games": 100_000, "per_match": json.loads(json.dumps(record))})
    assert np.array_equal(back, results)


def _record(seed: int, results: np.ndarray, opponents: np.ndarray, run: str) -> dict:
    """A match JSON's fields that a comparison reads."""
    same = {"games": len(results), "rules": "plain", "players": 2, "opponent": "optimal"}
    return {"seed": seed, "run": run, **same, "per_match": per_match_record(results, opponents)}


def test_comparisons_refuse_other_matches() -> None:
    """Files that are not the same matches, or not match files, are refused in one line: other
    seeds, other opponents' totals, another opponent, no per-match results, a field missing or
    of another type (a seed list and a per_match string were tracebacks once), per-match
    results that do not decode, of another encoding, or out of range, each naming its file."""
    results, opponents = np.array([1, -1, 1, 0]), np.array([200, 250, 230, 240])
    first = _record(3, results, opponents, "a")
    cases = {
        "seeds differ": _record(4, results, opponents, "b"),
        "totals differ": _record(3, results, opponents + 1, "b"),
        "opponent 'optimal' against 'random'": {**first, "opponent": "random"},
        "no per-match": {key: value for key, value in first.items() if key != "per_match"},
        "no seed": {key: value for key, value in first.items() if key != "seed"},
        "seed is [3], not an integer": {**first, "seed": [3]},
        "games is '4', not an integer": {**first, "games": "4"},
        "per_match is not a mapping": {**first, "per_match": "abc"},
        "match JSON 2: per_match results damaged": {
            **first,
            "per_match": {**first["per_match"], "results": "x!"},
        },
        # a long hostile value is cut, and the file named (the whole value was printed)
        "match JSON 2: per_match encoding '" + "z" * 36 + "... is not": {
            **first,
            "per_match": {**first["per_match"], "encoding": "z" * 500},
        },
        # four results of which one is 2 (a byte 3): the count is right, the values are not
        "match JSON 2: per_match holds results other than a win, draw or loss": {
            **first,
            "per_match": {
                **first["per_match"],
                "results": base64.b64encode(zlib.compress(bytes([2, 0, 3, 1]))).decode(),
            },
        },
        # a byte of 200 read as -57 and passed (found reviewing the change)
        "holds results other than a win, draw or loss": {
            **first,
            "per_match": {
                **first["per_match"],
                "results": base64.b64encode(zlib.compress(bytes([2, 0, 200, 1]))).decode(),
            },
        },
    }
    for message, second in cases.items():
        with pytest.raises(ConfigError, match=re.escape(message)) as raised:
            compare_match_files([first], [second])
        assert "\n" not in str(raised.value)
    with pytest.raises(ConfigError, match="one match JSON per seed"):
        compare_match_files([first, first], [first])


def test_pooled_seeds_are_one_kind_of_match_and_each_file_says_whose_matches() -> None:
    """Found in review: seeds of other rules, players or opponents were pooled under the first
    seed's (official two-player beside Yatzy three-player), a per_match without its opponents'
    digest paired with any other (None equal to None), and the ceiling's file was told to
    play again for its per-match results, which it never keeps. Each is one line now."""
    results, opponents = np.array([1, -1, 1, 0]), np.array([200, 250, 230, 240])
    seed3, seed4 = _record(3, results, opponents, "a"), _record(4, results, opponents, "a")
    for key, value in (("rules", "yatzy"), ("players", 3), ("opponent", "greedy3")):
        other = {**seed4, key: value}
        with pytest.raises(ConfigError, match=f"the seeds' {key} differ"):
            compare_match_files([seed3, other], [seed3, other])
    undigested = {**seed3, "per_match": {**seed3["per_match"], "opponent_digest": None}}
    with pytest.raises(ConfigError, match="match JSON 1: per_match has no opponent_digest"):
        compare_match_files([undigested], [seed3])
    ceiling = {**seed3, "player": "ceiling"}
    with pytest.raises(ConfigError, match="the ceiling's oracle plays no real matches"):
        compare_match_files([ceiling], [seed3])


def test_two_players_on_the_same_matches(tmp_path, capsys) -> None:
    """Two different learners (greedy1, greedy2) against the random opponent on one seed face
    the same opponent totals match by match (the opponents' dice do not depend on the learner's
    play), so `compare` pairs them; the pooled counts agree with each file's wins."""
    files = {}
    for name in ("greedy1", "greedy2"):
        agent = builtin_agent(name, "plain")
        result = evaluate_agent_matches(agent, "random", num_games=60, seed=5, batch_size=20)
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(result | {"run": name}))
    records = {name: json.loads(path.read_text()) for name, path in files.items()}
    digests = {record["per_match"]["opponent_digest"] for record in records.values()}
    assert len(digests) == 1
    out = tmp_path / "compare.json"
    argv = ["compare", str(files["greedy2"]), "--against", str(files["greedy1"]), "--out", str(out)]
    assert main(argv) == 0
    assert "greedy2" in capsys.readouterr().out
    compared = json.loads(out.read_text())
    assert compared["first_wins"] == records["greedy2"]["wins"]
    assert compared["first_win_rate"] == records["greedy2"]["win_rate"]
    assert compared["second_wins"] == records["greedy1"]["wins"]
    assert compared["seeds"] == [5] and compared["games"] == 60
    assert compared["machine"]["command"].startswith("yahtzee-jax compare")
    assert main(["compare", str(files["greedy2"]), "--against", str(out)]) == 2
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(records["greedy1"] | {"seed": [5]}))
    capsys.readouterr()
    assert main(["compare", str(files["greedy2"]), "--against", str(hostile)]) == 2
    assert f"{hostile}: seed is [5], not an integer" in capsys.readouterr().err


def test_a_single_match_writes_a_result_strict_json_reads(monkeypatch) -> None:
    """Found in review: one match's standard errors were NaN (a sample standard deviation of
    one value), which `match --out` wrote as `NaN` and strict JSON readers refuse; a single
    value has no spread to measure, and its standard error is 0 as in `evaluate`'s summaries.
    The match itself is given (its totals), not played."""
    from yahtzee_jax.evaluation import matches

    def one_match(learner, rivals, rules, num_games, *args):
        return np.array([250]), np.array([[240]])

    monkeypatch.setattr(matches, "match_totals", one_match)
    result = evaluate_agent_matches(builtin_agent("greedy1", "plain"), "random", num_games=1)
    result = json.loads(json.dumps(result, allow_nan=False))
    assert result["score_stderr"] == result["margin_stderr"] == 0.0
    assert (result["wins"], result["mean_margin"]) == (1, 10.0)
    # By hand: 1 and 3 lie 1 from their mean, sample variance 2, so sqrt(2) / sqrt(2).
    assert mean_stderr(np.array([1, 3])) == pytest.approx(1.0)
