"""The `bench train` and `bench evaluate` commands run end to end on tiny settings.

These check that the benchmarks work and write the numbers they promise; they time nothing
(speed targets live in the benchmarks themselves, never in tests).
"""

from __future__ import annotations

import json
import os

import pytest

from yahtzee_jax.commands.cli import main


def run_bench(argv: list[str], json_path) -> dict | list:
    """Run `yahtzee-jax bench ...` with `--json`, check the exit status, return the numbers."""
    assert main([*argv, "--json", str(json_path)]) == 0
    return json.loads(json_path.read_text())


def _check_bench_rows(rows: list[dict], expected: list[tuple[str, int, str]]) -> None:
    """Rows in order (preset, batch size, algorithm), each timed and with its fwd+bwd ratio."""
    assert [(r["preset"], r["games_per_update"], r["algorithm"]) for r in rows] == expected
    for row in rows:
        assert row["games_per_second"] > 0 and row["fwd_bwd_ms"] > 0
        expected_ratio = row["ms_per_update"] / row["fwd_bwd_ms"]
        assert abs(row["pipeline_over_fwd_bwd"] - expected_ratio) < 1e-9


BENCH_TRAIN = ["bench", "train", "--set", "network.hidden_size=16", "--repeats", "1"]


# Slow (13 s idle): make test runs `bench train` whole in the GPU script's tiny run
# (tests/test_gpu_figures.py checks its row, with the update split into its parts).
@pytest.mark.slow
def test_bench_train_compares_the_pipeline_with_bare_forward_backward(tmp_path, capsys) -> None:
    """A 16-wide network, preset quick (A2C) at B = 4: one row with the fwd+bwd ratio."""
    rows = run_bench([*BENCH_TRAIN, "--preset", "quick", "--batches", "4"], tmp_path / "a2c.json")
    assert "ratio = full update time / bare forward+backward" in capsys.readouterr().out
    _check_bench_rows(rows, [("quick", 4, "a2c")])
    # each row says its run: the command as typed, the CPU and the load it met
    assert rows[0]["machine"]["command"].startswith("yahtzee-jax bench train --set ")
    assert len(rows[0]["machine"]["load_average_at_start"]) == 3


@pytest.mark.slow
def test_bench_train_rows_per_preset_and_batch(tmp_path) -> None:
    """Presets quick (A2C) at B = 4 and 8 and paper-ppo-50k (PPO) at B = 4: one row each."""
    rows = run_bench([*BENCH_TRAIN, "--preset", "quick", "--batches", "4,8"], tmp_path / "a.json")
    rows += run_bench(
        [*BENCH_TRAIN, "--preset", "paper-ppo-50k", "--batches", "4"], tmp_path / "p.json"
    )
    _check_bench_rows(rows, [("quick", 4, "a2c"), ("quick", 8, "a2c"), ("paper-ppo-50k", 4, "ppo")])


# Slow, as the rows above: make test runs PPO with the action-value head in
# tests/test_action_values.py
@pytest.mark.slow
def test_bench_train_times_ppo_with_the_action_value_head(tmp_path) -> None:
    """PPO with network.value_head=action: its row, the bare baseline taken on the same network
    with one value a state (A2C's loss reads no action values)."""
    argv = [*BENCH_TRAIN, "--preset", "paper-ppo-50k", "--batches", "4"]
    rows = run_bench([*argv, "--set", "network.value_head=action"], tmp_path / "q.json")
    _check_bench_rows(rows, [("paper-ppo-50k", 4, "ppo")])


# Slow: bfloat16's four programs (chunk, bare forward+backward, env, rollout) compile for 11 s;
# make test keeps the dtype list's refusal (below), the bfloat16 network's parity with float32
# (tests/test_networks.py) and bench train's float32 row (above).
@pytest.mark.slow
def test_bench_train_measures_each_compute_dtype(tmp_path) -> None:
    """--dtypes float32,bfloat16 is an axis of the grid: one row per dtype at the same width
    and batch, each naming the dtype its network computed in."""
    rows = run_bench(
        [*BENCH_TRAIN, "--preset", "quick", "--batches", "4", "--dtypes", "float32,bfloat16"],
        tmp_path / "dtypes.json",
    )
    assert [(row["compute_dtype"], row["width"]) for row in rows] == [
        ("float32", 16),
        ("bfloat16", 16),
    ]
    _check_bench_rows(rows, [("quick", 4, "a2c"), ("quick", 4, "a2c")])


def test_bench_train_rejects_an_unknown_dtype(capsys) -> None:
    """A dtype the network cannot compute in is a one-line error (exit 2) before any compile."""
    assert main(["bench", "train", "--dtypes", "float32,float8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "network.compute_dtype" in err and "float8" in err


def test_bench_train_rejects_bad_batches(capsys) -> None:
    """A batch list that is not integers is a one-line error with exit status 2."""
    assert main(["bench", "train", "--batches", "20,x"]) == 2
    assert "--batches" in capsys.readouterr().err


def test_bench_train_minibatches_must_divide_every_batch(capsys) -> None:
    """--minibatches 3 cannot cut B = 20 or 30 into whole games: one line, exit 2, nothing
    compiled."""
    assert main(["bench", "train", "--batches", "20,30", "--minibatches", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--minibatches 3 must be a positive divisor" in err


def test_bench_solve_rejects_bad_counts(capsys) -> None:
    """A solve needs at least one process and one repeat: said in one line, before any solve."""
    assert main(["bench", "solve", "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
    assert main(["bench", "solve", "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
    assert main(["bench", "solve", "--engines", "native,numba"]) == 2
    assert (
        "--engines: choose from auto, native, xla (got 'native,numba')" in capsys.readouterr().err
    )


# Slow (11 s idle): make test solves through `bench solve` in the GPU script's tiny run
# (tests/test_gpu_figures.py: Yacht's optimum, one process) and keeps the XLA solve's kept
# programs in tests/test_solver_compiled.py.
@pytest.mark.slow
def test_bench_solve_times_each_engine_side_by_side(tmp_path, capsys) -> None:
    """Yacht solved in one process by the C kernel and by the XLA program, twice each in fresh
    processes: two rows named by their engine, the same optimum (180.4161173148), the time of
    the solve that built its programs into its folder and of the one that loaded them. The
    second is there though this test session has JAX's own compilation cache on (our folder is
    only read then), as the GPU script's device command sets it."""
    out = tmp_path / "solve.json"
    argv = ["bench", "solve", "--rules", "yacht", "--workers", "1", "--engines", "native,xla"]
    assert os.environ.get("JAX_COMPILATION_CACHE_DIR")  # tests/conftest.py: for subprocesses
    assert main([*argv, "--repeats", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["machine"]["command"].startswith("yahtzee-jax bench solve --rules yacht")
    rows = result["ours"]
    assert [(row["workers"], row["engine"]) for row in rows] == [(1, "native"), (1, "xla")]
    for row in rows:
        assert row["optimum"] == pytest.approx(180.4161173148, abs=1e-9)
        assert row["seconds"] > 0 and row["compiled_seconds"] > 0 and row["cached_seconds"] > 0
    printed = capsys.readouterr().out
    assert "yahtzee_jax, 1 process, native" in printed
    assert "yahtzee_jax, 1 process, xla" in printed


def test_bench_solve_puts_our_solve_beside_the_published_times(capsys) -> None:
    """Our Yatzy solve over dlangk/yatzy's published one-thread and two-thread times: 1.22 s
    is 0.5x its 2.44 on one thread and 1.0x its 1.22 on two (made-up published figures)."""
    from yahtzee_jax.commands.bench.solve_cost import beside_published

    ours = [
        {
            "workers": 1,
            "engine": "native",
            "seconds": 1.22,
            "cpu_seconds": 2.0,
            "compiled_seconds": 1.9,
            "cached_seconds": 1.22,
        }
    ]
    published = beside_published(("them", {"1": 2.44, "2": 1.22}, "somewhere"), ours)
    (row,) = published["ours"]
    assert row["time"] == {"1": pytest.approx(0.5), "2": pytest.approx(1.0)}
    assert "0.50x its 1, 1.00x its 2" in capsys.readouterr().out


def test_bench_evaluate_times_each_agent(tmp_path, capsys) -> None:
    """Random and greedy level-1 on 64 games in batches of 32; an unknown agent is skipped,
    and with none left the command fails in one line."""
    argv = ["bench", "evaluate", "--agents", "random", "greedy1", "nonsense"]
    result = run_bench([*argv, "--games", "64", "--batch-size", "32"], tmp_path / "eval.json")
    assert "skipping nonsense" in capsys.readouterr().err
    assert result["batch_size"] == 32
    assert [row["agent"] for row in result["agents"]] == ["random", "greedy1"]
    assert all(row["games_per_second"] > 0 for row in result["agents"])
    assert all(row["cpu_seconds"] > 0 for row in result["agents"])
    assert result["published"] is None  # official rules, and no optimal row
    # Only unknown names: one line and exit 2, no file (it exited 0 with an empty table once).
    empty = tmp_path / "empty.json"
    assert main(["bench", "evaluate", "--agents", "nonsense", "--json", str(empty)]) == 2
    assert "no agent to time: nonsense skipped" in capsys.readouterr().err
    assert not empty.exists()
    assert result["machine"]["command"] == "yahtzee-jax " + " ".join(
        [*argv, "--games", "64", "--batch-size", "32", "--json", str(tmp_path / "eval.json")]
    )


def test_bench_evaluate_puts_optimal_play_beside_the_published_figures(capsys) -> None:
    """Under Yatzy rules our optimal games/s over dlangk/yatzy's published lockstep ones, per
    thread count, and the table agent's over those and its table engine's; none under other
    rules or without either row."""
    from yahtzee_jax.commands.bench.evaluate_speed import beside_published
    from yahtzee_jax.game.rules import get_rules

    rows = [
        {"agent": "optimal", "games_per_second": 24_072.0},
        {"agent": "optimal-table", "games_per_second": 182_466.0},
    ]
    published = beside_published(get_rules("yatzy"), rows)
    (lockstep,) = published["optimal"]
    assert lockstep["ours_over_published"]["1"] == pytest.approx(0.5)
    assert lockstep["ours_over_published"]["2"] == pytest.approx(24_072 / 91_233)
    table_lockstep, oracle = published["optimal-table"]
    assert table_lockstep["ours_over_published"]["2"] == pytest.approx(2.0)
    assert oracle["ours_over_published"]["threads not stated"] == pytest.approx(182_466 / 568_700)
    out = capsys.readouterr().out
    assert "48,144 on 1, 91,233 on 2" in out and "568,700 (threads not stated)" in out
    assert beside_published(get_rules("official"), rows) is None
    assert beside_published(get_rules("yatzy"), [{"agent": "random"}]) is None


def test_machine_reads_the_cpu_model_and_its_vector_level(tmp_path, monkeypatch) -> None:
    """A cpuinfo with a model name and avx512f flags reads as that model with AVX-512; with avx2
    only, AVX2; with neither (or no file) the level is empty and the model falls back; the name
    result files record joins the two."""
    from yahtzee_jax.commands.bench import machine

    cpuinfo = tmp_path / "cpuinfo"
    monkeypatch.setattr(machine, "CPUINFO", cpuinfo)
    cpuinfo.write_text("model name\t: AMD EPYC 9R14\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")
    assert (machine.cpu_model(), machine.vector_level()) == ("AMD EPYC 9R14", "AVX-512")
    assert machine.cpu_name() == "AMD EPYC 9R14, AVX-512"
    cpuinfo.write_text("model name\t: Intel Xeon\nflags\t\t: fpu sse2 avx avx2\n")
    assert (machine.cpu_model(), machine.vector_level()) == ("Intel Xeon", "AVX2")
    assert machine.cpu_name() == "Intel Xeon, AVX2"
    cpuinfo.write_text("flags\t\t: fpu sse2\n")
    assert machine.vector_level() == "" and machine.cpu_model()
    assert machine.cpu_name() == machine.cpu_model()
    cpuinfo.unlink()
    assert machine.vector_level() == "" and machine.cpu_model()


def test_a_scripts_record_names_its_python_command(monkeypatch):
    """`script_record`: the run's record (commit, CPU, load) with the command as the shell ran
    it, `python` and the script's words (sys.argv unless given)."""
    from yahtzee_jax.commands.bench.machine import script_record

    monkeypatch.setattr("sys.argv", ["experiments/x.py", "--games", "g7"])
    record = script_record()
    assert record["command"] == "python experiments/x.py --games g7"
    assert {"commit", "cpu", "cpu_count", "load_average_at_start", "started"} <= set(record)
    assert script_record(["y.py", "--b"])["command"] == "python y.py --b"
