"""The GPU figures script (`make gpu-figures`), end to end on the CPU at tiny budgets: every
step it runs on a GPU runs here, and each artifact has the fields the closing notes read."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
from pathlib import Path

import pytest
from scripts import load_experiment_script

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "gpu_figures.py"
YACHT_OPTIMUM = 180.4161173148  # docs/games.md, checked there against an independent solve


def _load_script():
    spec = importlib.util.spec_from_file_location("gpu_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_this_process(gpu_figures, monkeypatch) -> list[list[str]]:
    """Have the script run its `yahtzee-jax` commands in this process (the CLI's `main` on the
    same arguments, its output's last lines kept as `run_command` keeps them), except the
    solve, which stays a real subprocess through `run_command`: a fresh process costs each
    command about 3 s of imports and JAX's start, and repeats the eager work a process before
    it did (the train step 10.7 s as a subprocess, 5.3 in this process). Returns the list the
    commands run in this process go to."""
    from yahtzee_jax.commands.cli import main

    subprocess_run, in_process = gpu_figures.run_command, []

    def run_command(argv: list[str], timeout_s: float | None = None) -> tuple[int, float, str]:
        if argv[3:5] == ["bench", "solve"]:
            return subprocess_run(argv, timeout_s)
        assert argv[:3] == gpu_figures.yahtzee_jax_command() and timeout_s is None
        in_process.append(argv[3:])
        start, output = time.perf_counter(), io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            status = main(argv[3:])
        return status, time.perf_counter() - start, "\n".join(output.getvalue().splitlines()[-5:])

    monkeypatch.setattr(gpu_figures, "run_command", run_command)
    return in_process


def test_tiny_gpu_figures_write_every_artifact(tmp_path, monkeypatch) -> None:
    """--tiny runs the scaling study's one cpu-scale run on one tiny seed, trains
    the GPU preset once, solves Yacht and runs its throughput grid with the breakdown: the
    manifest lists the four with exit 0 beside the machine; the study's report has its run's
    seed with its curve; the train artifact has its final evaluation and the threshold
    crossings (none at 64 games), the bench rows split the update into its parts, the solve's
    row is one process's and reports Yacht's published optimum (a wrong table, or another rule
    set's, would not). The solve runs as the script runs every step, a `yahtzee-jax`
    subprocess; the other three run their same command lines in this process."""
    gpu_figures = _load_script()
    in_process = _in_this_process(gpu_figures, monkeypatch)
    assert gpu_figures.main([str(tmp_path), "--tiny"]) == 0
    assert [argv[:2] for argv in in_process] == [
        ["experiment", "scaling-gpu"],
        ["train", "--preset"],
        ["bench", "train"],
    ]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [(step["step"], step["status"]) for step in manifest["steps"]] == [
        ("scaling study", 0),
        ("train seed 1", 0),
        ("bench solve", 0),
        ("bench train", 0),
    ]
    scaling = json.loads((tmp_path / "scaling_study.json").read_text())
    assert scaling["command"].startswith("-m yahtzee_jax.commands.cli experiment scaling-gpu")
    (run,) = scaling["study"]["runs"]
    assert run["label"] == "B=1024, w128" and run["seeds"] == 1 and run["games"] == 64
    assert [seed["seed"] for seed in run["per_seed"]] == [0]
    assert len(run["per_seed"][0]["evals"]) == 2  # every 32 games
    assert set(run["first_reached"]) == {"230", "241.78", "248"}
    train = json.loads((tmp_path / "train_gpu-ppo_seed1.json").read_text())
    assert train["games"] == 64 and train["final_eval"]["games"] == 64
    assert 0 <= train["final_eval_summary"]["upper_bonus_rate"] <= 1
    assert train["first_reached"] == {"230": None, "241.78": None, "248": None, "250": None}
    rows = json.loads((tmp_path / "bench_train.json").read_text())
    assert [(row["width"], row["games_per_update"]) for row in rows] == [(8, 4)]
    for row in rows:
        assert row["env_ms"] > 0 and row["rollout_ms"] > 0 and row["parameters"] > 0
        assert row["learn_ms"] == pytest.approx(row["ms_per_update"] - row["rollout_ms"])
    (solve,) = json.loads((tmp_path / "bench_solve.json").read_text())["ours"]
    assert solve["workers"] == 1 and solve["optimum"] == pytest.approx(YACHT_OPTIMUM, abs=1e-6)
    machine = manifest["machine"]
    assert machine["platform"] == "cpu" and len(machine["load_average"]) == 3
    # tests/conftest.py sets JAX's cache for the session's subprocesses: recorded as such
    assert machine["jax_compilation_cache_dir"] == os.environ["JAX_COMPILATION_CACHE_DIR"]
    # what came back is drawn afterwards (a loan brings back eight files): both pictures
    plot = load_experiment_script("plot_gpu_figures")
    assert plot.main([str(tmp_path)]) == 0
    assert plot.device_name(tmp_path) == machine["devices"][0]
    for name in ("learning_curves_wall.png", "throughput.png", "scaling_study.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
    assert "| B=1024, w128 |" in (tmp_path / "scaling_study.md").read_text()


def test_first_reached_takes_the_first_evaluation_at_or_above_each_score() -> None:
    """Evaluations 200, 241.78 (exactly the paper's score), 240, 249: 230 and 241.78 are first
    reached at the second, 248 at the fourth; 250, never reached, is None."""
    gpu_figures = _load_script()
    evals = [
        {"games": 1000 * (k + 1), "mean": mean, "wall_s": 10.0 * (k + 1)}
        for k, mean in enumerate([200.0, 241.78, 240.0, 249.0])
    ]
    assert gpu_figures.first_reached(evals) == {
        "230": {"games": 2000, "wall_s": 20.0},
        "241.78": {"games": 2000, "wall_s": 20.0},
        "248": {"games": 4000, "wall_s": 40.0},
        "250": None,
    }
    assert gpu_figures.first_reached(evals[:1])["230"] is None


def test_a_step_past_the_budget_is_stopped_with_what_it_printed() -> None:
    """A command still running at its timeout is stopped: exit 124 (as `timeout` gives), its
    output so far and the reason kept, in about the timeout rather than the command's 30 s."""
    gpu_figures = _load_script()
    slow = "import time; print('first evaluation', flush=True); time.sleep(30)"
    status, seconds, tail = gpu_figures.run_command([sys.executable, "-c", slow], timeout_s=2.0)
    assert status == gpu_figures.TIMED_OUT == 124
    assert seconds < 20
    assert tail.splitlines() == ["first evaluation", "stopped after 2 s (the budget's end)"]


def test_budget_must_be_positive(capsys) -> None:
    """A budget of 0 seconds is a one-line usage error (exit 2), before anything runs."""
    gpu_figures = _load_script()
    with pytest.raises(SystemExit) as exit_info:
        gpu_figures.main(["/nonexistent/out", "--budget-s", "0"])
    assert exit_info.value.code == 2
    assert "--budget-s 0 must be > 0" in capsys.readouterr().err


def test_the_252_step_polishes_the_run_it_trained_and_reports_both(tmp_path, monkeypatch) -> None:
    """The 252 step runs `ppo-252`, then `ppo-252-polish` warm-started from that run's folder,
    on the same seed (commands stubbed: each writes a summary and two evaluations, 10 s each):
    one file holds the polish's figures, the first run's under "base", 20 s in all. When the
    first run fails, nothing is polished and its status is the step's."""
    gpu_figures = _load_script()
    commands = []

    def fake_run(argv, timeout_s=None):
        commands.append(argv)
        preset = argv[argv.index("--preset") + 1]
        run_dir = Path(argv[argv.index("--out") + 1])
        run_dir.mkdir(parents=True)
        final = {"games": 100000, "mean": 252.5 if "polish" in preset else 251.5, "stderr": 0.2}
        summary = {"final_eval": final, "games": 7}
        (run_dir / "summary.json").write_text(json.dumps(summary))
        evals = [
            {"update": 1, "games": 1, "mean": 249.0, "wall_s": 4.0},
            {"update": 2, "games": 2, "mean": 250.5, "wall_s": 8.0},
        ]
        (run_dir / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
        return (1 if "fail" in str(run_dir.parent) else 0), 10.0, ""

    monkeypatch.setattr(gpu_figures, "run_command", fake_run)
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    result = gpu_figures.train_252_step(out, work, 9, tiny=False, timeout_s=100.0)
    assert [argv[argv.index("--preset") + 1] for argv in commands] == ["ppo-252", "ppo-252-polish"]
    polish = commands[1]
    assert f"algo.init_from={work / 'ppo-252-seed9'}" in polish and "train.seed=9" in polish
    written = json.loads((out / "train_ppo-252_seed9.json").read_text())
    assert written == result
    assert result["status"] == 0 and result["wall_s"] == 20.0
    assert result["final_eval"]["mean"] == 252.5 and result["base"]["final_eval"]["mean"] == 251.5
    assert result["first_reached"]["250"] == {"games": 2, "wall_s": 8.0}

    commands.clear()
    failed = gpu_figures.train_252_step(out, tmp_path / "fail", 9, tiny=False)
    assert len(commands) == 1 and failed["status"] == 1 and failed["base"]["status"] == 1
