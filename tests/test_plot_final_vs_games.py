"""experiments/plot_final_vs_games.py: runs' final scores against their training games."""

from __future__ import annotations

import json

import pytest
from scripts import EXPERIMENTS, load_experiment_script

from yahtzee_jax.evaluation.plots import final_vs_games_figure


def _run(root, name: str, games: int, mean: float, stderr: float, seed: int | None = None):
    """A finished run's folder as results/ keeps it: summary.json and the final report's seed."""
    folder = root / name
    folder.mkdir()
    final = {"games": 100_000, "mean": mean, "std": 59.0, "stderr": stderr, "report": "x"}
    folder.joinpath("summary.json").write_text(json.dumps({"games": games, "final_eval": final}))
    if seed is not None:
        folder.joinpath("final_eval_summary.json").write_text(json.dumps({"seed": seed}))
    return folder


def test_points_are_each_runs_games_and_final_score_joined_in_order_of_games(
    tmp_path, capsys, monkeypatch
):
    """Two series from hand-made summaries: each point is its run's games, final mean and
    standard error (the seed of its final evaluation beside it), a series' line runs in order
    of games whatever order its runs were named in, its error bars are 1.96 standard errors,
    and a horizontal reference is drawn; a folder without a finished run's summary, one whose
    final evaluation's summary is damaged, or a series without '=', is refused in one line with
    exit status 2."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    script = load_experiment_script("plot_final_vs_games")
    long = _run(tmp_path, "long", 8_000_000, 253.3, 0.2, seed=27)
    short = _run(tmp_path, "short", 2_000_000, 252.5, 0.1)
    other = _run(tmp_path, "other", 4_000_000, 253.0, 0.3, seed=5)
    out, record = tmp_path / "budget.png", tmp_path / "budget.json"
    argv = ["--series", f"width 128={long},{short}", "--series", f"width 256={other}"]
    argv += ["--reference", "optimum=254.59", "--out", str(out), "--json", str(record)]
    assert script.main(argv) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.stat().st_size > 0
    series = json.loads(record.read_text())["series"]
    assert [(p["games"], p["mean"], p["final_eval_seed"]) for p in series["width 128"]] == [
        (8_000_000, 253.3, 27),
        (2_000_000, 252.5, None),
    ]
    assert series["width 256"] == [
        {"run": str(other), "games": 4_000_000, "mean": 253.0, "stderr": 0.3, "final_eval_seed": 5}
    ]

    points = {"width 128": [(8_000_000, 253.3, 0.2), (2_000_000, 252.5, 0.1)]}
    axes = final_vs_games_figure(points, "t", {"optimum": 254.59}).axes[0]
    line = axes.get_lines()[0]
    assert list(line.get_xdata()) == [2_000_000, 8_000_000]
    assert list(line.get_ydata()) == [252.5, 253.3]
    bars = axes.containers[0].lines[2][0].get_segments()  # the error bars' vertical segments
    assert [segment[:, 1].tolist() for segment in bars] == [
        pytest.approx([252.5 - 0.196, 252.5 + 0.196]),
        pytest.approx([253.3 - 0.392, 253.3 + 0.392]),
    ]
    assert any(list(h.get_ydata()) == [254.59, 254.59] for h in axes.get_lines()[1:])

    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert script.main(["--series", f"a={empty}", "--out", str(out)]) == 2
    assert "summary.json: not a finished run's summary" in capsys.readouterr().err
    short.joinpath("final_eval_summary.json").write_text('{"seed": 2')  # cut off mid-write
    assert script.main(["--series", f"a={short}", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "final_eval_summary.json: not a final evaluation's summary" in error
    assert "Traceback" not in error and len(error.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as refused:  # argparse's own one-line refusal
        script.main(["--series", str(short), "--out", str(out)])
    assert refused.value.code == 2
    assert "expected LABEL=RUN_DIR" in capsys.readouterr().err
