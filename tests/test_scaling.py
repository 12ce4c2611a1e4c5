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


# The forced host devices start a process of their own (about 7 s): make test runs the grid on
# one device, make test-slow on both.
@pytest.mark.skipif(len(jax.devices()) > 1, reason="needs a single-device process")
@pytest.mark.parametrize("devices", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_grid_measures_skips_and_forces_host_devices(tmp_path, capsys, devices) -> None:
    """Width 8, B = 4 and 5, on 1 device (and on 2), at most 160 transitions per update: B = 4
    runs here (and on 2 forced host devices); B = 5 (195 transitions) is over the guard on 1
    device (and indivisible on 2). JSON rows in grid order, a PNG, the forced-device note."""
    json_path, plot_path = tmp_path / "scaling.json", tmp_path / "scaling.png"
    counts = ",".join(str(count) for count in range(1, devices + 1))
    argv = ["bench", "scaling", "--batches", "4,5", "--widths", "8", "--devices", counts]
    argv += ["--repeats", "1", "--max-transitions-per-update", "160"]
    assert main([*argv, "--json", str(json_path), "--plot", str(plot_path)]) == 0
    out = capsys.readouterr().out
    result = json.loads(json_path.read_text())
    rows = result["rows"]
    grid = [(1, 4, "ok"), (1, 5, "skipped"), (2, 4, "ok"), (2, 5, "skipped")]
    assert [(row["devices"], row["games_per_update"], row["status"]) for row in rows] == grid[
        : 2 * devices
    ]
    assert result["max_transitions_per_update"] == {"8": 160}
    assert rows[1]["reason"].startswith(MEMORY_SKIP) and "195 transitions" in rows[1]["reason"]
    assert [row["forced_host_devices"] for row in rows] == [False, False, True, True][: 2 * devices]
    for row in rows[::2]:
        assert row["transitions_per_update"] == 4 * 39 and row["width"] == 8
        assert row["games_per_second"] > 0 and row["compile_seconds"] > 0
        assert row["transitions_per_second"] == pytest.approx(39 * row["games_per_second"])
        assert row["ms_per_update"] == pytest.approx(4000 / row["games_per_second"])
    assert f"skipped ({MEMORY_SKIP}" in out
    if devices == 2:
        assert rows[3]["reason"] == "5 episodes per update do not divide over 2 devices"
        assert "do not divide over 2 devices" in out
        assert "forced host CPU devices" in out and "not a speed-up" in out
    else:
        assert "forced host CPU devices" not in out
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


def test_scaling_study_scales_the_learning_rate_with_the_square_root_of_the_minibatch() -> None:
    """B = 20, 256, 1,024 and 4,096 at widths 128, 256 and 600 on a GPU, width 128 only on the
    CPU; every run's rate 8e-4 x sqrt(minibatch / 128) to two digits, minibatches of 128
    games (the whole batch at B = 20), the same games per run, each run alone by default."""
    study = load_study("scaling")
    assert study.population == 1 and study.plot == "curves"
    assert study.thresholds == (230.0, 241.78, 248.0)
    for scale, widths in (("paper", [128, 256, 600]), ("cpu", [128])):
        configs = [config for _, _, config in check_study(study, scale, 1, ())]
        assert [(c.network.hidden_size, c.train.games_per_update) for c in configs] == [
            (width, batch) for width in widths for batch in (20, 256, 1024, 4096)
        ]
        for config in configs:
            minibatch = config.algo.games_per_minibatch
            assert minibatch == min(config.train.games_per_update, 128)
            assert config.optim.lr == pytest.approx(8e-4 * math.sqrt(minibatch / 128), rel=0.02)
            assert config.train.total_updates * config.train.games_per_update == 819_200


def test_study_scale_keeps_only_the_runs_it_names(tmp_path, monkeypatch) -> None:
    """A scale given as {set, only} trains the runs carrying every `only` override; a scale
    that keeps no run is a one-line spec error."""
    spec = {
        "title": "t",
        "base": "quick",
        "plot": "curves",
        "scales": {"paper": [], "cpu": {"set": ["train.total_games=640"], "only": ["optim.lr=1"]}},
        "runs": {"a": ["optim.lr=1"], "b": ["optim.lr=2"]},
    }
    monkeypatch.setattr(studies, "STUDIES", tmp_path)
    (tmp_path / "t.yaml").write_text(json.dumps(spec))
    study = load_study("t")
    assert [run.label for run in study.runs_at("paper")] == ["a", "b"]
    assert [run.label for run in study.runs_at("cpu")] == ["a"]
    assert [c.train.total_games for _, _, c in check_study(study, "cpu", 1, ())] == [640]
    spec["scales"]["cpu"]["only"] = ["optim.lr=3"]
    (tmp_path / "t.yaml").write_text(json.dumps(spec))
    with pytest.raises(studies.UserError, match="no run is kept at scale cpu"):
        load_study("t")


def test_report_tabulates_the_games_to_each_threshold(tmp_path) -> None:
    """Two seeds whose evaluations average 225, 235, 245 at 1,000, 2,000, 3,000 games: 230 is
    first reached at 2,000 games, 241.78 at 3,000, 248 never; the table and results.json say so,
    each with the mean of the seeds' wall times."""
    run = StudyRun("only", "quick", ())
    study = Study(
        "s", "S", "Fig. 0", (run,), {"paper": (), "cpu": ()}, 2, "curves",
        thresholds=(230.0, 241.78, 248.0),
    )  # fmt: skip
    for seed, shift in ((0, -5.0), (1, 5.0)):
        _fake_run(tmp_path, run, seed, 240.0, 0.1)
        rows = [
            {"update": k + 1, "games": 1000 * (k + 1), "mean": mean + shift, "std": 30.0}
            | {"num_games": 20, "wall_s": 60.0 * (k + 1) + seed}
            for k, mean in enumerate([225.0, 235.0, 245.0])
        ]
        evals = tmp_path / "only" / f"seed{seed}" / "evals.jsonl"
        evals.write_text("".join(json.dumps(row) + "\n" for row in rows))
    results = write_study_report(study, "cpu", 2, tmp_path)
    assert results["runs"][0]["first_reached"] == {
        "230": {"games": 2000, "wall_s": 120.5},
        "241.78": {"games": 3000, "wall_s": 180.5},
        "248": None,
    }
    markdown = (tmp_path / "s.md").read_text()
    assert "| run | games to 230 | games to 241.78 | games to 248 |" in markdown
    assert "| only | 2,000 (2.0 min) | 3,000 (3.0 min) | - |" in markdown


def test_a_cpu_scale_that_keeps_the_games_says_it_cuts_the_runs() -> None:
    """The scaling study trains the paper scale's 819,200 games on the CPU, on width 128 only:
    its note says so (4 of the 12 runs) instead of calling the budget reduced."""
    note = study_report.scale_note(load_study("scaling"), "cpu")
    assert note == "CPU scale: 819,200 games per run as at paper scale, 4 of its 12 runs"


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
