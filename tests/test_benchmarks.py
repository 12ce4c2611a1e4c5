"""The `bench train` and `bench evaluate` commands run end to end on tiny settings.

These check that the benchmarks work and write the numbers they promise; they time nothing
(speed targets live in the benchmarks themselves, never in tests).
"""

from __future__ import annotations

import json

from yahtzee_jax.cli import main


def test_bench_train_compares_the_pipeline_with_bare_forward_backward(tmp_path, capsys) -> None:
    """A 16-wide network at B = 2 and 3: one row per batch size, with the fwd+bwd ratio."""
    out = tmp_path / "train.json"
    argv = ["bench", "train", "--preset", "quick", "--set", "network.hidden_size=16"]
    argv += ["--batches", "2,3", "--repeats", "1", "--json", str(out)]
    assert main(argv) == 0
    assert "ratio = full update time / bare forward+backward" in capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert [row["games_per_update"] for row in rows] == [2, 3]
    for row in rows:
        assert row["games_per_second"] > 0 and row["fwd_bwd_ms"] > 0
        expected_ratio = row["ms_per_update"] / row["fwd_bwd_ms"]
        assert abs(row["pipeline_over_fwd_bwd"] - expected_ratio) < 1e-9


def test_bench_train_rejects_bad_batches(capsys) -> None:
    """A batch list that is not integers is a one-line error with exit status 2."""
    assert main(["bench", "train", "--batches", "20,x"]) == 2
    assert "--batches" in capsys.readouterr().err


def test_bench_evaluate_times_each_agent(tmp_path, capsys) -> None:
    """Random and greedy level-1 on 64 games in batches of 32; an unknown agent is skipped."""
    out = tmp_path / "evaluate.json"
    argv = ["bench", "evaluate", "--agents", "random", "greedy1", "nonsense"]
    argv += ["--games", "64", "--batch-size", "32", "--json", str(out)]
    assert main(argv) == 0
    assert "skipping nonsense" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["batch_size"] == 32
    assert [row["agent"] for row in result["agents"]] == ["random", "greedy1"]
    assert all(row["games_per_second"] > 0 for row in result["agents"])
