"""`yahtzee-jax experiment`: the shipped study specs, the table's statistics, and a tiny study
run end to end, then resumed after one run lost its finish."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from yahtzee_jax.commands import studies as study_specs
from yahtzee_jax.commands.cli import main
from yahtzee_jax.commands.studies import (
    SCALES,
    Study,
    StudyRun,
    available_studies,
    check_study,
    load_study,
    run_dir,
)
from yahtzee_jax.commands.study_report import collect_results, scalar_curves, study_markdown
from yahtzee_jax.runner.runlog import ScalarLog

# Issue 12's list of the paper's studies.
PAPER_STUDIES = {
    "single-turn", "algorithms", "dice-representation", "features", "roll-head", "capacity",
    "layer-norm", "activation", "gae-lambda", "entropy", "shaping", "score-distribution",
}  # fmt: skip

TINY_STUDY = """\
title: Tiny learning rates
paper: nothing (a test)
base: quick
seeds: 1
plot: curves
scalars: [policy/roll_entropy]
scales:
  paper: [train.total_games=25600]
  cpu: [train.total_games=64, train.games_per_update=32, train.eval_fraction=0.5,
        train.eval_games=20, train.final_eval_games=20, train.final_compare_optimal=false,
        network.hidden_size=16]
runs:
  base lr: []
  small lr: [optim.lr=1e-4]
"""


def test_every_paper_study_has_a_spec_that_resolves_at_both_scales() -> None:
    """All configs of every study are valid at both scales, and the cpu scale is smaller: no
    run trains more games than at paper scale, and it trains fewer games or fewer runs."""
    assert set(available_studies()) >= PAPER_STUDIES
    for name in available_studies():
        study = load_study(name)
        planned = {scale: check_study(study, scale, study.seeds, ()) for scale in SCALES}
        assert len(planned["cpu"]) == len(study.runs_at("cpu")) * study.seeds
        paper = {(run.label, seed): config for run, seed, config in planned["paper"]}
        fewer_games = [
            cpu.train.total_games < paper[run.label, seed].train.total_games
            for run, seed, cpu in planned["cpu"]
        ]
        assert all(
            cpu.train.total_games <= paper[run.label, seed].train.total_games
            for run, seed, cpu in planned["cpu"]
        )
        assert all(fewer_games) or len(planned["cpu"]) < len(planned["paper"]), name


def test_grid_gives_every_combination() -> None:
    """The capacity study's grid: 3 depths x 3 widths, each label naming its values."""
    runs = load_study("capacity").runs
    assert len(runs) == 9
    assert runs[0] == StudyRun(
        "trunk_layers=1, hidden_size=300",
        "paper-a2c",
        ("network.trunk_layers=1", "network.hidden_size=300"),
    )


def _fake_run(out_dir: Path, run: StudyRun, seed: int, mean: float, bonus: float) -> None:
    directory = run_dir(out_dir, run, seed)
    (directory / "final_eval").mkdir(parents=True)
    final = {"games": 100, "mean": mean, "std": 30.0, "stderr": 3.0, "report": "x"}
    summary = {"updates": 10, "games": 1000, "final_eval": final}
    (directory / "summary.json").write_text(json.dumps(summary))
    report = {"upper_bonus_rate": bonus, "yahtzee_rate": 0.25}
    (directory / "final_eval" / "summary.json").write_text(json.dumps(report))
    (directory / "evals.jsonl").write_text(
        json.dumps({"update": 10, "games": 1000, "mean": mean, "std": 30.0, "num_games": 20}) + "\n"
    )


def test_table_gives_mean_and_standard_error_across_seeds(tmp_path) -> None:
    """Seeds scoring 200 and 210: 205.00 +- 5.00 (sample std 7.07 / sqrt 2); bonus rates 10 %
    and 20 % average to 15 %; a single finished seed reports its own error over games."""
    first, second = StudyRun("first", "quick", ()), StudyRun("second", "quick", ("optim.lr=1",))
    study = Study("s", "S", "Fig. 0", (first, second), {"paper": (), "cpu": ()}, 2, "curves")
    _fake_run(tmp_path, first, 0, 200.0, 0.1)
    _fake_run(tmp_path, first, 1, 210.0, 0.2)
    _fake_run(tmp_path, second, 0, 190.0, 0.0)  # its seed 1 never finished
    results = collect_results(study, "cpu", 2, tmp_path)
    assert [(r["label"], r["seeds"]) for r in results] == [("first", 2), ("second", 1)]
    assert results[0]["mean"] == 205.0
    assert results[0]["stderr"] == pytest.approx(math.sqrt(50) / math.sqrt(2))
    assert results[0]["upper_bonus_rate"] == pytest.approx(0.15)
    assert results[1]["stderr"] == 3.0
    table = study_markdown(study, results, "S\nCPU scale", "s.png")
    assert "| first | preset `quick` | 2 | 205.00 ± 5.00 | 15.00 % | 25.00 % | 1,000 |" in table
    assert "| second | `optim.lr=1` | 1 | 190.00 ± 3.00 |" in table


def test_scalar_curves_average_seeds_at_common_games_and_skip_runs_without_events(
    tmp_path,
) -> None:
    """A tag logged by two seeds is averaged at the games both logged (seed 1 stops earlier),
    then smoothed over 1 % of the points (250 common points: a 2-point moving mean); a run
    whose directory has no events, and a tag nobody logged, give no curve."""
    logged, bare = StudyRun("logged", "quick", ()), StudyRun("bare", "quick", ("optim.lr=1",))
    for seed, points in ((0, 300), (1, 250)):
        _fake_run(tmp_path, logged, seed, 200.0, 0.1)
        log = ScalarLog(run_dir(tmp_path, logged, seed))
        for index in range(points):
            log.add("policy/roll_entropy", 10 * seed + index, step=20 * (index + 1))
        log.close()
    _fake_run(tmp_path, bare, 0, 190.0, 0.0)
    study = Study("s", "S", "Fig. 0", (logged, bare), {"paper": (), "cpu": ()}, 2, "curves")
    results = collect_results(study, "cpu", 2, tmp_path)
    curves = scalar_curves(tmp_path, results, "policy/roll_entropy")
    assert list(curves) == ["logged"]
    games, values = curves["logged"]
    # Games 20 ... 5,000 in common; the seed mean at point i is 5 + i, its 2-point mean
    # 5.5 + i, drawn at the later point's games.
    assert games.tolist() == [20 * (index + 2) for index in range(249)]
    assert values.tolist() == pytest.approx([5.5 + index for index in range(249)])
    assert scalar_curves(tmp_path, results, "no/such_tag") == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["experiment", "nothing"], "unknown study 'nothing'; choose one of: activation"),
        (["experiment", "layer-norm", "--seeds", "0"], "at least 1 (got 0)"),
        (["experiment", "layer-norm", "--set", "network.dropout=2"], "network.dropout=2"),
        (["experiment"], "name a study, or pass --list"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path) -> None:
    """Checked before anything trains: nothing is written into --out."""
    assert main([*argv, "--out", str(tmp_path / "study")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "study").exists()


def test_list_names_every_study_with_runs_and_times(capsys) -> None:
    """--list: one line per study with runs x seeds and both scales' estimated times."""
    assert main(["experiment", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == available_studies()
    assert any(line.split()[:4] == ["capacity", "9", "x", "3"] for line in lines)


@pytest.mark.slow  # several tiny trainings; the experiments notebook test runs a study in make test
def test_tiny_study_trains_reports_and_resumes_only_the_unfinished_run(
    tmp_path, monkeypatch, capsys
) -> None:
    """Two runs train and the table, figures (the curves, a logged scalar) and results appear;
    a second call trains nothing; after one run loses its summary (killed before the end)
    only that run trains again."""
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "tiny.yaml").write_text(TINY_STUDY)
    monkeypatch.setattr(study_specs, "STUDIES", studies)
    out = tmp_path / "out"
    argv = ["experiment", "tiny", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    table = (out / "tiny.md").read_text()
    assert "CPU scale: 64 games per run, reduced from the paper's 25,600" in table
    assert (
        "| base lr | preset `quick` | 1 |" in table
        and "| small lr | `optim.lr=1e-4` | 1 |" in table
    )
    assert (out / "tiny.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "tiny-policy-roll_entropy.png").read_bytes().startswith(b"\x89PNG")
    assert "![policy/roll_entropy](tiny-policy-roll_entropy.png)" in table
    assert [run["label"] for run in json.loads((out / "results.json").read_text())["runs"]] == [
        "base lr",
        "small lr",
    ]
    timings = json.loads((out / "timings.json").read_text())
    assert set(timings) == {"base_lr/seed0", "small_lr/seed0"}
    capsys.readouterr()

    assert main(argv) == 0
    assert "[1/2]" not in capsys.readouterr().out  # everything finished: nothing trains
    assert json.loads((out / "timings.json").read_text()) == timings

    (out / "small_lr" / "seed0" / "summary.json").unlink()
    assert main(argv) == 0
    assert "[2/2] tiny: small lr, seed 0" in capsys.readouterr().out
    resumed = json.loads((out / "timings.json").read_text())
    assert resumed["base_lr/seed0"] == timings["base_lr/seed0"]
    assert resumed["small_lr/seed0"] > timings["small_lr/seed0"]
    assert (out / "small_lr" / "seed0" / "summary.json").is_file()
