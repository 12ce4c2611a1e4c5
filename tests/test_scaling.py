"""`bench scaling` on a tiny grid (one measured cell in this process, one on two forced host
devices in a subprocess, the rest skipped with their reasons), its one-line errors, and the
scaling study: its spec, its `--population` default and the report's wall-time figure.

Nothing here is timed: the benchmark's numbers are only checked to be there and consistent.
"""

from __future__ import annotations

import json
import math

import jax
import pytest
from test_experiment import _fake_run

from yahtzee_jax.commands import experiment, studies, study_report
from yahtzee_jax.commands.bench.scaling import MEMORY_SKIP, default_max_transitions
from yahtzee_jax.commands.cli import main
from yahtzee_jax.commands.studies import Study, StudyRun, check_study, load_study
from yahtzee_jax.commands.study_report import write_study_report


@pytest.mark.skipif(len(jax.devices()) > 1, reason="needs a single-device process")
def test_grid_measures_skips_and_forces_host_devices(tmp_path, capsys) -> None:
    """Width 8, B = 4 and 5, 1 and 2 devices, at most 160 transitions per update: B = 4 runs
    here and on 2 forced host devices; B = 5 (195 transitions) is over the guard on 1 device
    and indivisible on 2. JSON rows in grid order, a PNG, the forced-device note."""
    json_path, plot_path = tmp_path / "scaling.json", tmp_path / "scaling.png"
    argv = ["bench", "scaling", "--batches", "4,5", "--widths", "8", "--devices", "1,2"]
    argv += ["--repeats", "1", "--max-transitions-per-update", "160"]
    assert main([*argv, "--json", str(json_path), "--plot", str(plot_path)]) == 0
    out = capsys.readouterr().out
    result = json.loads(json_path.read_text())
    rows = result["rows"]
    assert [(row["devices"], row["games_per_update"], row["status"]) for row in rows] == [
        (1, 4, "ok"),
        (1, 5, "skipped"),
        (2, 4, "ok"),
        (2, 5, "skipped"),
    ]
    assert result["max_transitions_per_update"] == {"8": 160}
    assert rows[1]["reason"].startswith(MEMORY_SKIP) and "195 transitions" in rows[1]["reason"]
    assert rows[3]["reason"] == "5 episodes per update do not divide over 2 devices"
    assert [row["forced_host_devices"] for row in rows] == [False, False, True, True]
    for row in (rows[0], rows[2]):
        assert row["transitions_per_update"] == 4 * 39 and row["width"] == 8
        assert row["games_per_second"] > 0 and row["compile_seconds"] > 0
        assert row["transitions_per_second"] == pytest.approx(39 * row["games_per_second"])
        assert row["ms_per_update"] == pytest.approx(4000 / row["games_per_second"])
    assert f"skipped ({MEMORY_SKIP}" in out and "do not divide over 2 devices" in out
    assert "forced host CPU devices" in out and "not a speed-up" in out
    assert plot_path.read_bytes().startswith(b"\x89PNG")


def test_default_guard_shrinks_with_the_width() -> None:
    """The default cap is a memory budget over width: half the width, twice the transitions;
    B = 1,024 fits at width 1,024 and B = 16,384 does not at width 128."""
    assert default_max_transitions(300) == pytest.approx(2 * default_max_transitions(600), abs=1)
    assert default_max_transitions(1024) >= 1024 * 39
    assert default_max_transitions(128) < 16384 * 39


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batches", "20,x"], "--batches '20,x' must be comma-separated positive integers"),
        (["--widths", ""], "--widths '' must be comma-separated positive integers"),
        (["--batches", "0,20"], "--batches '0,20' must be"),
        (["--devices", "1,"], "--devices '1,' must be"),
        (["--repeats", "0"], "--repeats 0 must be >= 1"),
        (["--max-transitions-per-update", "0"], "--max-transitions-per-update 0 must be >= 1"),
        (["--preset", "nonsense"], "nonsense"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, message, capsys) -> None:
    """Checked before anything compiles: one line on stderr, exit status 2."""
    assert main(["bench", "scaling", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_scaling_study_scales_the_learning_rate_with_the_square_root_of_the_batch() -> None:
    """Three batch sizes, each run's rate 1e-4 x sqrt(B / 20), the same games per run (to
    within one update) at both scales, each run alone by default."""
    study = load_study("scaling")
    assert study.population == 1 and study.plot == "curves"
    for scale in studies.SCALES:
        configs = [config for _, _, config in check_study(study, scale, study.seeds, ())]
        assert len(configs) == 3 * study.seeds
        assert [c.train.games_per_update for c in configs[:: study.seeds]] == [20, 80, 320]
        for config in configs:
            batch = config.train.games_per_update
            assert config.optim.lr == pytest.approx(1e-4 * math.sqrt(batch / 20))
            played = config.train.total_updates * batch
            assert 0 <= played - config.train.total_games < batch


def test_study_population_is_the_default_of_the_option(tmp_path, monkeypatch) -> None:
    """`experiment scaling` trains each run alone (the spec's population: 1) unless
    --population says otherwise."""
    seen = []

    def fake_run_study(*args, population: int, **kwargs) -> dict:
        seen.append(population)
        return {"runs": [], "note": "nothing trained"}

    monkeypatch.setattr(experiment, "run_study", fake_run_study)
    argv = ["experiment", "scaling", "--out", str(tmp_path)]
    assert main(argv) == 0 and main([*argv, "--population", "0"]) == 0
    assert seen == [1, 0]


def test_report_draws_the_score_against_wall_time(tmp_path) -> None:
    """Two runs with logged wall times get NAME-wall.png and a link to it; a resumed seed's
    clock continues from its earlier session; without wall times there is no such figure."""
    first, second = StudyRun("first", "quick", ()), StudyRun("second", "quick", ("optim.lr=1",))
    study = Study("s", "S", "Fig. 0", (first, second), {"paper": (), "cpu": ()}, 1, "curves")
    _fake_run(tmp_path / "old", first, 0, 200.0, 0.1)  # evaluations without wall times
    write_study_report(study, "cpu", 1, tmp_path / "old")
    assert not (tmp_path / "old" / "s-wall.png").exists()

    for run, walls in ((first, [60.0, 120.0, 30.0]), (second, [50.0, 100.0, 150.0])):
        _fake_run(tmp_path / "new", run, 0, 200.0, 0.1)
        rows = [
            {"update": 10 * (k + 1), "games": 1000 * (k + 1), "mean": 100.0 + k, "std": 30.0}
            | {"num_games": 20, "wall_s": wall}
            for k, wall in enumerate(walls)
        ]
        evals = tmp_path / "new" / run.label / "seed0" / "evals.jsonl"
        evals.write_text("".join(json.dumps(row) + "\n" for row in rows))
    write_study_report(study, "cpu", 1, tmp_path / "new")
    assert (tmp_path / "new" / "s-wall.png").read_bytes().startswith(b"\x89PNG")
    assert "(s-wall.png)" in (tmp_path / "new" / "s.md").read_text()
    per_seed = study_report.collect_results(study, "cpu", 1, tmp_path / "new")[0]["per_seed"]
    curve = study_report._seed_mean_curve(per_seed)
    assert [row["wall_s"] for row in curve] == [60.0, 120.0, 150.0]  # 30 s into session two
