"""dlangk/yatzy's binaries beside ours in `bench solve` and `bench evaluate` (`bench.dlangk`).

The real binaries are built apart (`experiments/build_dlangk_yatzy.sh`); here stand-ins that
write and print what they do (a table file, its own timer's lines) check what the bench reads
from them, how it runs them, and its errors.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from yahtzee_jax.commands.bench import dlangk
from yahtzee_jax.commands.cli import main

# Stand-ins for its two binaries: each reports a time that halves with the threads it is given,
# as its own output words it, and the solve writes its table (header, then state 0's f32 value).
_SOLVE = """
import os, struct, time
time.sleep(0.05)  # alive for a few of the bench's 10-ms samples of its memory
from pathlib import Path
threads = int(os.environ["RAYON_NUM_THREADS"])
assert Path.cwd().resolve() == Path(os.environ["YATZY_BASE_PATH"]).resolve()
table = Path("data/strategy_tables/all_states.bin")
table.parent.mkdir(parents=True, exist_ok=True)
table.write_bytes(b"YTZS" + bytes(12) + struct.pack("<ff", 248.4399871826, 0.0))
print("Level 14 completed in 0.00 seconds (905482 states/sec)")
print(f"Total computation time: {2.0 / threads:.2f} seconds")
"""
_SIMULATE = """
import os, sys
threads = int(os.environ["RAYON_NUM_THREADS"])
assert os.path.exists("data/strategy_tables/all_states.bin"), "solve first"
games = int(sys.argv[sys.argv.index("--games") + 1])
print(f"Simulating {games} games ({threads} threads)...")
print(f"  Elapsed:     {2000.0 / threads:.1f} ms")
print(f"  Throughput:  {games * threads / 2.0:.0f} games/sec")
print("  Mean score:  247.98 (expected EV: 248.44, delta: -0.46)")
"""


@pytest.fixture
def binaries(tmp_path: Path) -> Path:
    """A folder with stand-ins for `yatzy-precompute` and `yatzy-simulate`."""
    folder = tmp_path / "release"
    folder.mkdir()
    for name, code in ((dlangk.SOLVE, _SOLVE), (dlangk.SIMULATE, _SIMULATE)):
        path = folder / name
        path.write_text(f"#!{sys.executable}\n{code}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def test_its_solve_is_read_from_its_own_report_and_table(binaries, tmp_path) -> None:
    """Its own timer (2.0 s over the threads), its table's optimum (state 0 after the 16-byte
    header, as f32) and the process's own figures, on the thread count it is given."""
    run = dlangk.solve(binaries, 2, tmp_path)
    assert run["threads"] == 2 and run["seconds"] == pytest.approx(1.0)
    assert run["optimum"] == pytest.approx(248.4399871826, abs=1e-5)
    assert run["table_bytes"] == 24
    assert run["process_seconds"] > 0 and run["cpu_seconds"] > 0 and run["peak_mib"] > 0


def test_its_play_reads_its_throughput_after_solving_its_table(binaries) -> None:
    """One solve first (its play reads the table), then each thread count's games/s, elapsed
    seconds and mean as it prints them: 64 games at 32 x threads games/s."""
    runs = dlangk.fastest_plays(binaries, games=64, seed=1, repeats=2)
    assert list(runs) == [str(threads) for threads in dlangk.thread_counts()]
    for threads, run in runs.items():
        assert run["games_per_second"] == pytest.approx(32 * int(threads))
        assert run["seconds"] == pytest.approx(2.0 / int(threads))
        assert run["mean"] == pytest.approx(247.98)


def test_bench_evaluate_runs_it_beside_ours(binaries, tmp_path, capsys) -> None:
    """`bench evaluate --dlangk` under Yatzy: its runs in the JSON, printed beside our agents;
    our optimal agents' ratios over it (here none of them is timed: no ratio)."""
    argv = ["bench", "evaluate", "--agents", "random", "--rules", "yatzy", "--games", "64"]
    path = tmp_path / "evaluate.json"
    assert main([*argv, "--dlangk", str(binaries), "--json", str(path)]) == 0
    result = json.loads(path.read_text())["dlangk"]
    assert result["runs"]["1"]["games_per_second"] == pytest.approx(32.0)
    assert result["ours_over_theirs"] == {}
    assert "lockstep engine (Rust, f32), run here: games/s by threads 32 on 1" in (
        capsys.readouterr().out
    )


def test_our_figures_over_its_measured_ones(capsys) -> None:
    """Our solve over its measured solves by thread count (1.0 s is 0.5x its 2.0 s on one
    thread, 1.0x its 1.0 s on two), and our optimal agents' games/s over its lockstep play."""
    from yahtzee_jax.commands.bench.evaluate_speed import beside_dlangk as play_beside
    from yahtzee_jax.commands.bench.solve_cost import beside_dlangk as solve_beside

    runs = {
        "1": {"seconds": 2.0, "cpu_seconds": 2.0, "peak_mib": 20.0, "optimum": 248.44},
        "2": {"seconds": 1.0, "cpu_seconds": 2.1, "peak_mib": 20.0, "optimum": 248.44},
    }
    ours = [{"workers": 1, "engine": "native", "seconds": 1.0, "cpu_seconds": 1.9}]
    ours[0] |= {"compiled_seconds": None, "cached_seconds": 1.0}
    (row,) = solve_beside(runs, ours)["ours"]
    assert row["time"] == {"1": pytest.approx(0.5), "2": pytest.approx(1.0)}
    assert "1.00 s (1.90 CPU-s), 0.50x its 1, 1.00x its 2" in capsys.readouterr().out
    plays = {"1": {"games_per_second": 50_000.0, "mean": 248.0}}
    plays["2"] = {"games_per_second": 100_000.0, "mean": 248.0}
    rows = [{"agent": "optimal-table", "games_per_second": 200_000.0}, {"agent": "random"}]
    ratios = play_beside(plays, rows)["ours_over_theirs"]
    assert ratios == {"optimal-table": {"1": pytest.approx(4.0), "2": pytest.approx(2.0)}}


@pytest.mark.parametrize("target", ["solve", "evaluate"])
def test_it_is_refused_in_one_line_before_any_run(target, binaries, tmp_path, capsys) -> None:
    """Only Yatzy (its only game), and only a folder holding its executables: said in one line,
    before anything is solved or played."""
    assert main(["bench", target, "--rules", "official", "--dlangk", str(binaries)]) == 2
    assert "dlangk/yatzy plays Yatzy only (got --rules official)" in capsys.readouterr().err
    assert main(["bench", target, "--rules", "yatzy", "--dlangk", str(tmp_path / "none")]) == 2
    error = capsys.readouterr().err
    assert "no executable yatzy-precompute" in error and "build_dlangk_yatzy.sh" in error
    assert len(error.strip().splitlines()) == 1


def test_a_failing_or_changed_binary_is_one_line(binaries, tmp_path) -> None:
    """A binary that fails, does not run here, or whose output lacks its timer's line or whose
    solve leaves no table (another version), stops the bench with a one-line error naming it."""
    from yahtzee_jax.errors import UserError

    solve = binaries / dlangk.SOLVE
    solve.write_text(f"#!{sys.executable}\nprint('Total computation time')\n")
    with pytest.raises(UserError, match="yatzy-precompute: no 'Total computation time:'"):
        dlangk.solve(binaries, 1, tmp_path)
    solve.write_text(f"#!{sys.executable}\nprint('Total computation time: 1.00 seconds')\n")
    with pytest.raises(UserError, match="yatzy-precompute: no table at data/strategy_tables"):
        dlangk.solve(binaries, 1, tmp_path)
    solve.write_text(f"#!{sys.executable}\nraise SystemExit('table is read-only')\n")
    with pytest.raises(UserError, match=r"yatzy-precompute failed \(1\): table is read-only"):
        dlangk.solve(binaries, 1, tmp_path)
    solve.write_bytes(bytes(range(256)))  # executable, but no program
    with pytest.raises(UserError, match="yatzy-precompute does not run here: Exec format error"):
        dlangk.solve(binaries, 1, tmp_path)
