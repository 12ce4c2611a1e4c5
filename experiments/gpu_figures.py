"""Every GPU figure issues 43 and 46 ask for, in one command that fits a short device loan.

    python experiments/gpu_figures.py OUT [--budget-s 480] [--tiny]
    make gpu-figures OUT=OUT

Steps, in order of worth, each a whole `yahtzee-jax` command timed from outside (JAX's start,
compilation and the final evaluation included), each skipped when the time it is expected to
take no longer fits in what is left of `--budget-s`, and stopped when it outruns that budget
(a stopped train step keeps the evaluations it wrote, a stopped bench the rows it measured):

1. `scaling_study.json`: the scaling study of issue 64 (`experiment scaling-gpu --scale
   paper`): score against games at B = 1,024, 4,096 and 16,384 and widths 128, 256 and 600,
   two seeds of each cell as one population; stopped after `SCALING_CAP_S` at most, its
   finished runs reported (their final evaluations, curves and first crossings);
2. `train_gpu-ppo_seed1.json`: the model-free GPU preset, seed 1 (seed 0 chose its settings),
   its wall time, final evaluation and the games and seconds at which its evaluations first
   reached 230, 241.78 and 248 (the target: 241.78 within 60 s);
3. `bench_train_w256_large.json`: width 256 at B = 65,536 in float32 and in bfloat16
   (`--dtypes`), for the 500,000 games/s target (16,384 in float32 gave 390,306 on an H200);
4. `bench_solve.json`: the value table solved on the device (Yatzy; issue 46's target is
   under a second), three solves in fresh processes, the first compiling its program into the
   cache folder and the others loading it (`bench solve --workers 1 --engines xla --repeats 3`);
5. `train_ppo-252_seed9.json`: the 252 recipe (`ppo-252`, 6.5M games at B = 256, then
   `ppo-252-polish` from it; seed 4 chose it on the CPU and seed 7 reached 252.19 there) on a
   fresh seed: the second seed of 252, and when its evaluations first passed 250 (the 10-minute
   target; `ppo-250` reached 250.42 in 83 s on an H200);
6. `bench_train.json`: the fused step's games/s at B = 1,024 and 16,384 at widths 64 (a
   Yacht-Agent-sized network) and 256, beside the bare forward+backward, with the time split
   into the env, the acting rollout and the learning (`bench train --breakdown`);
7. `bench_train_widths.json`: the same grid at widths 128 and 600, without the breakdown.

Steps 3, 5 and 7 repeat code paths of the others, so `--tiny` skips them (it runs the
scaling study's cpu scale on one run of one tiny seed, and solves Yacht, the quickest table,
once). Eight files at most come to OUT (the device tool brings back eight); gpu-ppo's second
seed, which an earlier loan measured (results/gpu-h200), gave its place to the scaling study.

`manifest.json` records the machine (the device, the CPU, the load before the first step and
JAX's persistent cache folder if the environment sets one: leave it unset, and every step is
timed as a cold process, as a user's first run) and each step with its exit status and wall
time. `--tiny` shrinks every budget so the whole
script runs on a CPU in about a minute (`make test` runs it so): the same code paths, no
meaningful figures. Run directories go to a temporary folder; only small JSON comes to OUT.
Its pictures are drawn from OUT afterwards: `python experiments/plot_gpu_figures.py OUT`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from yahtzee_jax.commands.bench.machine import cpu_name
from yahtzee_jax.commands.study_report import first_crossings
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.finished_run import read_finished_run
from yahtzee_jax.runner.runlog import EVALS_FILE, read_evals

THRESHOLDS = (230.0, 241.78, 248.0, 250.0)
PRESET = "gpu-ppo"
# The throughput grid: two large batches, each cut into 4 minibatches (8 optimizer steps an
# update) so that the step's own cost shows, not the preset's 128-game minibatches; the paper's
# B = 20 is in the H100 rows of docs/learners/gpu_h100 already. Widths 64 (a Yacht-Agent-sized
# network) and 256, the two throughput targets, get the breakdown (four compilations a
# cell, about 10 s each on an H100); 128 and 600 only the update and the bare pass.
BENCH_BATCHES = ["--batches", "1024,16384", "--minibatches", "4"]
BENCH_GRID = [*BENCH_BATCHES, "--widths", "64,256", "--breakdown"]
BENCH_WIDTHS = [*BENCH_BATCHES, "--widths", "128,600"]
BENCH_LARGE = ["--batches", "65536", "--minibatches", "4", "--widths", "256"]
BENCH_LARGE += ["--dtypes", "float32,bfloat16"]
# Expected seconds of each step, a little above what each took on one H200 (results/gpu-h200:
# train 49-50 s, ppo-250 83 s, the breakdown grid 149 s, the widths grid 132 s; a 65,536-game
# cell about 45 s), used to skip a step that cannot finish in the time left.
EXPECTED_S = {
    "scaling": 240.0,  # the first cells (width 128) and their compilations; stopped at the cap
    "train": 65.0,  # gpu-ppo at 983,040 games since: about 3 s more than the H200 took
    "train-252": 260.0,  # about 2x ppo-250's 83 s on an H200, then a million games at B = 1,024
    "bench": 160.0,
    "bench-large": 100.0,
    "bench-widths": 140.0,
    "solve": 60.0,  # not yet run on a GPU: three fresh processes, one compiling
}
TINY_TRAIN_SETTINGS = (
    "train.total_games=64",
    "train.games_per_update=32",
    "algo.games_per_minibatch=16",
    "network.hidden_size=16",
    "train.eval_games=16",
    "train.final_eval_games=64",
    "train.eval_fraction=0.5",
)
TINY_TRAIN = [arg for setting in TINY_TRAIN_SETTINGS for arg in ("--set", setting)]
SCALING_STUDY = "scaling-gpu"
# The study's share of a loan: what is left after it goes to the owed single figures
SCALING_CAP_S = 330.0
# Tiny: one seed of the train step's tiny settings, so that its programs are the train step's
# (JAX's cache, shared by `make test`'s processes, compiles them once); populations are
# tested on their own (tests/test_population.py, tests/test_scaling.py).
TINY_STUDY = [*TINY_TRAIN, "--seeds", "1"]
# one cell: each costs four compilations (the chunk, the bare fwd+bwd, the env, the rollout)
TINY_BENCH = [
    "--batches",
    "4",
    "--widths",
    "8",
    "--repeats",
    "1",
    "--minibatches",
    "2",
    "--breakdown",
]


def machine() -> dict[str, Any]:
    """The device JAX sees, the CPU, the load average when the script started, and JAX's
    persistent compilation cache if the environment sets one."""
    import jax

    return {
        "devices": [device.device_kind for device in jax.devices()],
        "platform": jax.devices()[0].platform,
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "jax": jax.__version__,
        # Set, a later step may load programs an earlier one compiled (seed 2's train from seed
        # 1's): its time is then not a cold process's. `bench solve` turns it off in its solves.
        "jax_compilation_cache_dir": os.environ.get("JAX_COMPILATION_CACHE_DIR"),
    }


def first_reached(evals: list[dict[str, Any]]) -> dict[str, dict[str, float] | None]:
    """Games and training seconds of the first evaluation at or above each threshold."""
    return first_crossings(evals, THRESHOLDS)


TIMED_OUT = 124  # the exit status `timeout` gives a command it stopped


def run_command(argv: list[str], timeout_s: float | None = None) -> tuple[int, float, str]:
    """Run one command, stopped after `timeout_s`; (exit status, wall seconds, its last lines)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as stopped:
        status = TIMED_OUT
        output = "".join(
            text.decode(errors="replace") if isinstance(text, bytes) else text or ""
            for text in (stopped.stdout, stopped.stderr)
        )
        output = f"{output.strip()}\nstopped after {timeout_s:.0f} s (the budget's end)"
    seconds = time.perf_counter() - start
    return status, seconds, "\n".join(output.strip().splitlines()[-5:])


def train_step(
    out: Path, work: Path, preset: str, seed: int, tiny: bool, timeout_s: float | None = None
) -> dict[str, Any]:
    """Train a preset on one seed, timed whole; write its figures to OUT."""
    result = train_run(work, preset, seed, tiny, timeout_s)
    write_json(out / f"train_{preset}_seed{seed}.json", result)
    return result


def train_252_step(
    out: Path, work: Path, seed: int, tiny: bool, timeout_s: float | None = None
) -> dict[str, Any]:
    """`ppo-252`, then `ppo-252-polish` from that run, on one seed: the polish's figures with
    the first run's under "base" and the two commands' time as the wall time, to OUT in one
    file (`train_ppo-252_seed{seed}.json`)."""
    base = train_run(work, "ppo-252", seed, tiny, timeout_s)
    result: dict[str, Any] = {"status": base["status"], "wall_s": base["wall_s"]}
    if base["status"] == 0:
        left = None if timeout_s is None else timeout_s - base["wall_s"]
        warm = f"algo.init_from={work / f'ppo-252-seed{seed}'}"
        result = train_run(work, "ppo-252-polish", seed, tiny, left, (warm,))
        result["wall_s"] += base["wall_s"]
    result["base"] = base
    write_json(out / f"train_ppo-252_seed{seed}.json", result)
    return result


def train_run(
    work: Path,
    preset: str,
    seed: int,
    tiny: bool,
    timeout_s: float | None = None,
    settings: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Train a preset on one seed (and `settings`, each a `--set`) in WORK, timed whole: its
    command, exit status, wall time, final evaluation and first crossings of `THRESHOLDS`."""
    run_dir = work / f"{preset}-seed{seed}"
    argv = [
        *yahtzee_jax_command(),
        "train",
        "--preset",
        preset,
        "--set",
        f"train.seed={seed}",
        *(arg for setting in settings for arg in ("--set", setting)),
        "--out",
        str(run_dir),
        "--no-progress",
        *(TINY_TRAIN if tiny else []),
    ]
    status, seconds, tail = run_command(argv, timeout_s)
    result: dict[str, Any] = {"command": " ".join(argv[1:]), "status": status, "wall_s": seconds}
    finished = read_finished_run(run_dir, required=False) if status == 0 else None
    if finished is not None:
        result |= {"final_eval": finished.final_eval, "games": finished.games}
        if finished.report:  # the upper-bonus rate and more
            result["final_eval_summary"] = finished.report
    else:  # failed, or exited 0 without its final evaluation: the output says why
        result["output_tail"] = tail
    evals_path = run_dir / EVALS_FILE
    if evals_path.exists():  # a stopped run keeps the evaluations it wrote
        evals = read_evals(evals_path)
        result |= {"first_reached": first_reached(evals), "evals": evals}
    return result


def scaling_step(
    out: Path, work: Path, tiny: bool, timeout_s: float | None = None
) -> dict[str, Any]:
    """The scaling study, stopped at `SCALING_CAP_S` (or the time left), then reported from
    the runs that finished, to OUT/scaling_study.json (tiny: the cpu scale's one run)."""
    from yahtzee_jax.commands.studies import load_study
    from yahtzee_jax.commands.study_report import write_study_report
    from yahtzee_jax.errors import UserError

    study_dir = work / SCALING_STUDY
    scale = "cpu" if tiny else "paper"
    argv = [*yahtzee_jax_command(), "experiment", SCALING_STUDY, "--scale", scale]
    argv += ["--out", str(study_dir), "--no-progress", *(TINY_STUDY if tiny else [])]
    cap = SCALING_CAP_S if timeout_s is None else min(timeout_s, SCALING_CAP_S)
    status, seconds, tail = run_command(argv, None if tiny else cap)
    result: dict[str, Any] = {"command": " ".join(argv[1:]), "status": status, "wall_s": seconds}
    if status != 0:
        result["output_tail"] = tail
    study = load_study(SCALING_STUDY)
    overrides = tuple(TINY_TRAIN[1::2]) if tiny else ()
    seeds = 1 if tiny else study.seeds
    try:  # what the study's own end writes, also for the runs a stopped study finished
        result["study"] = write_study_report(study, scale, seeds, study_dir, overrides)
    except UserError as error:  # stopped before any run finished
        result["study"] = None
        result["output_tail"] = f"{tail}\n{error}"
    if status != 0 and result["study"]:
        result["status"] = 0  # stopped at the cap by design: the finished runs are the figure
        result["stopped_at_cap"] = True
    write_json(out / "scaling_study.json", result)
    return result


def bench_step(
    out: Path, name: str, grid: list[str], timeout_s: float | None = None
) -> dict[str, Any]:
    """One throughput grid, written row by row by `bench train --json` to OUT/NAME.json."""
    argv = [
        *yahtzee_jax_command(),
        "bench",
        "train",
        "--preset",
        PRESET,
        "--json",
        str(out / f"{name}.json"),
        *grid,
    ]
    return command_step(argv, timeout_s)


def solve_step(out: Path, tiny: bool, timeout_s: float | None = None) -> dict[str, Any]:
    """Three solves of Yatzy in fresh processes by the XLA program (the device's), the fastest
    kept, to OUT/bench_solve.json (tiny: one of Yacht)."""
    argv = [*yahtzee_jax_command(), "bench", "solve", "--workers", "1", "--engines", "xla"]
    argv += (
        ["--rules", "yacht", "--repeats", "1"] if tiny else ["--rules", "yatzy", "--repeats", "3"]
    )
    argv += ["--json", str(out / "bench_solve.json")]
    return command_step(argv, timeout_s)


def command_step(argv: list[str], timeout_s: float | None) -> dict[str, Any]:
    """A step that is one command writing its own JSON: its command line, status and time."""
    status, seconds, tail = run_command(argv, timeout_s)
    return {"command": " ".join(argv[1:]), "status": status, "wall_s": seconds, "output_tail": tail}


def yahtzee_jax_command() -> list[str]:
    """The CLI of the Python running this script (its own venv's package)."""
    return [sys.executable, "-m", "yahtzee_jax.commands.cli"]


def main(argv: list[str] | None = None) -> int:
    """Run the steps that fit in the budget; write OUT/manifest.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the JSON artifacts")
    parser.add_argument("--budget-s", type=float, default=480.0, help="seconds for every step")
    parser.add_argument("--tiny", action="store_true", help="tiny budgets: a CPU smoke run")
    args = parser.parse_args(argv)
    if args.budget_s <= 0:
        parser.error(f"--budget-s {args.budget_s:g} must be > 0")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"machine": machine(), "steps": []}
    started = time.perf_counter()
    tiny = args.tiny
    steps = [
        ("scaling study", "scaling", lambda work, left: scaling_step(out, work, tiny, left)),
        ("train seed 1", "train", lambda work, left: train_step(out, work, PRESET, 1, tiny, left)),
    ]
    if not tiny:  # the same code paths as the others: a smoke run needs them once
        steps.append(
            (
                "bench width 256 large",
                "bench-large",
                lambda work, left: bench_step(out, "bench_train_w256_large", BENCH_LARGE, left),
            )
        )
    steps.append(("bench solve", "solve", lambda work, left: solve_step(out, tiny, left)))
    if not tiny:
        steps.append(
            (
                "train ppo-252 and its polish, seed 9",
                "train-252",
                lambda work, left: train_252_step(out, work, 9, tiny, left),
            )
        )
    steps.append(
        (
            "bench train",
            "bench",
            lambda work, left: bench_step(
                out, "bench_train", TINY_BENCH if tiny else BENCH_GRID, left
            ),
        )
    )
    if not tiny:
        steps.append(
            (
                "bench widths",
                "bench-widths",
                lambda work, left: bench_step(out, "bench_train_widths", BENCH_WIDTHS, left),
            )
        )
    manifest = record["steps"]
    work = Path(tempfile.mkdtemp(prefix="gpu-figures-"))
    try:
        for name, kind, step in steps:
            left = args.budget_s - (time.perf_counter() - started)
            if not tiny and EXPECTED_S[kind] > left:
                manifest.append({"step": name, "skipped": f"{left:.0f} s left"})
                continue
            result = step(work, None if tiny else left)
            entry = {"step": name, "status": result["status"], "wall_s": result["wall_s"]}
            if result["status"] != 0:
                entry["output_tail"] = result.get("output_tail", "")
            manifest.append(entry)
            print(f"{name}: exit {result['status']} in {result['wall_s']:.1f} s", flush=True)
            if result["status"] != 0:
                print(entry["output_tail"], flush=True)
            # after every step: a script stopped from outside keeps the steps it finished
            write_json(out / "manifest.json", record)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_json(out / "manifest.json", record)
    return 0 if all(step.get("status", 0) == 0 for step in manifest) else 1


if __name__ == "__main__":
    raise SystemExit(main())
