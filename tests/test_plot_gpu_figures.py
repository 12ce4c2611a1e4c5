"""`experiments/plot_gpu_figures.py`: the GPU script's JSON drawn as a learning-curve and a
throughput picture, from files made by hand here and from the H200's committed ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from scripts import load_experiment_script

H200 = Path(__file__).resolve().parents[1] / "results" / "gpu-h200"


def test_the_252_steps_polish_follows_its_first_run_in_time(tmp_path) -> None:
    """A `ppo-252` step's file holds the polish's evaluations and the first run's under "base":
    one curve, the polish's times shifted by the first run's 10 s (4, 8, then 14, 18); a train
    file without evaluations (a step stopped early) is left out."""

    def evals(first: float, second: float) -> list[dict[str, float]]:
        both = {"num_games": 1000, "std": 50.0}  # as every `evals.jsonl` row has them
        return [
            both | {"games": 1, "mean": first, "wall_s": 4.0},
            both | {"games": 2, "mean": second, "wall_s": 8.0},
        ]

    base = {"wall_s": 10.0, "evals": evals(249.0, 250.5)}
    polish = {"wall_s": 20.0, "base": base, "evals": evals(251.0, 252.0)}
    (tmp_path / "train_ppo-252_seed9.json").write_text(json.dumps(polish))
    (tmp_path / "train_gpu-ppo_seed2.json").write_text(json.dumps({"status": 124, "evals": []}))
    plot = load_experiment_script("plot_gpu_figures")
    curves = plot.training_curves(tmp_path)
    assert list(curves) == ["ppo-252_seed9"]
    assert [row["wall_s"] for row in curves["ppo-252_seed9"]] == [4.0, 8.0, 14.0, 18.0]
    assert [row["mean"] for row in curves["ppo-252_seed9"]] == [249.0, 250.5, 251.0, 252.0]
    assert plot.main([str(tmp_path)]) == 0
    assert (tmp_path / "learning_curves_wall.png").exists()
    assert not (tmp_path / "throughput.png").exists()  # no bench file: no throughput picture


def test_the_h200s_figures_are_drawn_with_its_device_named(tmp_path) -> None:
    """The H200 loan's folder (its manifest a bare list of steps, the machine in machine.json):
    both pictures; its throughput rows are the three bench files' 9 measured cells, the fastest
    width 64 at B = 65,536 (the README's 1,405,944 games/s)."""
    for path in H200.glob("*.json"):
        shutil.copy(path, tmp_path)
    plot = load_experiment_script("plot_gpu_figures")
    assert plot.device_name(tmp_path) == "NVIDIA H200"
    rows = plot.bench_rows(tmp_path)
    assert len(rows) == 9 and all(row["games_per_second"] > 0 for row in rows)
    fastest = max(rows, key=lambda row: row["games_per_second"])
    assert (fastest["width"], fastest["games_per_update"]) == (64, 65536)
    assert round(fastest["games_per_second"]) == 1405944
    written = plot.draw(tmp_path)
    assert [path.name for path in written] == ["learning_curves_wall.png", "throughput.png"]


def test_a_folder_with_nothing_to_draw_is_one_line(tmp_path, capsys) -> None:
    """No folder, or one with neither train evaluations nor bench rows: exit 2, one line."""
    plot = load_experiment_script("plot_gpu_figures")
    assert plot.main([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'missing'} is not a folder"
    assert plot.main([str(tmp_path)]) == 2
    assert "holds no train_*.json evaluations" in capsys.readouterr().err
