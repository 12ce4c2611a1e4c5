"""`yahtzee-jax bench solve`: wall time, memory and table size of one exact solve from scratch.

Each solve runs in a fresh Python process, so its peak memory is its own: ours, and, when the
`yatzy-solver` package is installed, its solve of the same rules right after (alternating with
ours when repeated), with the ratios; with `--dlangk DIR`, dlangk/yatzy's Rust solve too, on one
thread and on one per CPU (`bench.dlangk`). Both write their table file (ours: the float64 cache
the agents load; its: its own f32 table file) to a temporary folder. Ours runs in one process
with each of `--engines` (the C kernel, the XLA program) and with a process per CPU (the NumPy
loop), side by side. Each keeps one folder across its repeats: its first solve compiles its
programs into it, the later ones load them from there (`solver.programs`, `solver.native`), as
a user's later solves do (JAX's own compilation cache off in them); both figures are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from yahtzee_jax.commands.bench import dlangk, yatzy_solver
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.commands.bench.published import over_theirs, ratio_words
from yahtzee_jax.files import check_writable, write_json

# Each child prints one JSON line of numbers. Memory is the process's peak RSS (VmHWM; getrusage's
# ru_maxrss would start from this parent's, Linux keeps it across fork and exec) at three points:
# once imported (ours: with the JAX runtime started, as every command of this package does),
# once the score tables are built (ours: NumPy scores every card; none for theirs), and at
# the end. The induction's own memory is how far it raises the peak above the RSS it starts
# from: the peak is reset to the current RSS just before it (`/proc/self/clear_refs`), or else
# an XLA compile that freed memory would hide the induction's first megabytes under its peak.
# Our induction also forks worker processes (unless `--workers 1`): in one more solve, not timed
# (the sampling would slow it), a thread samples each one's private memory (what it does not
# share with the parent); their peaks summed are `workers_mib`, added to ours.
_PEAK_RSS = """
import resource
def status_mib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field)) / 1024
def rss():
    try:
        return status_mib("VmHWM:")
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def cpu_seconds():  # user + system CPU of this process and its reaped children (workers)
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
def reset_peak():
    try:  # Linux 4.0 on: the peak becomes the current RSS
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return status_mib("VmRSS:")
    except (OSError, StopIteration):
        return rss()  # the peak so far: the induction counts from there
"""
_WORKERS = """
import multiprocessing, threading
worker_peaks, sampling = {}, threading.Event()
def private_mib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        fields = dict(line.split()[:2] for line in rollup if line.startswith("Private_"))
    return sum(int(kib) for kib in fields.values()) / 1024
def sample_workers():
    while not sampling.wait(0.01):
        for child in multiprocessing.active_children():
            try:
                seen = private_mib(child.pid)
                worker_peaks[child.pid] = max(worker_peaks.get(child.pid, 0), seen)
            except (OSError, ValueError):
                pass  # gone, or no /proc: counted as far as it was seen
sampler = threading.Thread(target=sample_workers, daemon=True)
"""
_OURS = """
import json, sys, time
import jax
from yahtzee_jax.host import one_thread_per_program
one_thread_per_program()  # as `yahtzee-jax solve` runs: one thread per program
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget_tables import solver_score_tables
jax.numpy.zeros(1).block_until_ready()
started = rss()
if sys.argv[5:] == ["sample-workers"]:
    sampler.start()
from pathlib import Path
# Our programs (XLA's, the C kernel), compiled by an earlier solve into the folder.
program_cached = any(Path(sys.argv[2]).glob("*.xla")) or any(Path(sys.argv[2]).glob("*.so"))
start, cpu_start = time.perf_counter(), cpu_seconds()
solver_score_tables(get_rules(sys.argv[1]))  # the solve's own first step, timed
tables = rss()
induction_from = reset_peak()
result = solve(sys.argv[1], cache_dir=sys.argv[2], force=True, workers=int(sys.argv[3]),
               engine=sys.argv[4])
seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
end = rss()
sampling.set()
if sampler.is_alive():
    sampler.join()
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "started_mib": started,
                  "tables_mib": tables,
                  "induction_from_mib": induction_from, "induction_peak_mib": end,
                  "peak_mib": max(tables, end),
                  "workers_mib": sum(worker_peaks.values()),
                  "optimum": result.expected_score, "program_cached": program_cached,
                  "table_bytes": result.cache_path.stat().st_size}))
"""
_THEIRS = """
import json, sys, time
from pathlib import Path
import yatzy_solver
started = rss()
induction_from = reset_peak()
variant = yatzy_solver.Variant(sys.argv[1])
path = Path(sys.argv[2]) / "table"
start, cpu_start = time.perf_counter(), cpu_seconds()
yatzy_solver.Solver.build_table(variant, str(path))
seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
peak = rss()
optimum = yatzy_solver.Solver.load(str(path), variant).state_value("upper 0 | filled -")
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "started_mib": started,
                  "tables_mib": started,
                  "induction_from_mib": induction_from, "induction_peak_mib": peak,
                  "peak_mib": max(started, peak),
                  "workers_mib": 0.0, "optimum": optimum,
                  "table_bytes": path.stat().st_size}))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the solve benchmark."""
    parser.add_argument("--rules", default="official", help="rule variant to solve")
    parser.add_argument(
        "--repeats", type=int, default=1, help="solves of each (alternating), the fastest kept"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes of our solve (default: both one and one per CPU, side by side)",
    )
    parser.add_argument(
        "--engines",
        default="native,xla",
        help="engines of our one-process solve, side by side (`solve --engine`): "
        "native, xla, auto; default native,xla",
    )
    parser.add_argument(
        "--dlangk",
        default=None,
        metavar="DIR",
        help="folder of dlangk/yatzy's built binaries (Yatzy only): its solve run beside ours, "
        "on 1 thread and one per CPU (experiments/build_dlangk_yatzy.sh builds them)",
    )
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


def _measure(code: str, variant: str, *options: str, folder: str | None = None) -> dict:
    """Run one solve in a fresh interpreter and return its numbers; its files go to `folder`
    (default: a temporary one of its own)."""
    with tempfile.TemporaryDirectory() as own:
        done = subprocess.run(
            [sys.executable, "-c", _PEAK_RSS + code, variant, folder or own, *options],
            capture_output=True,
            text=True,
            # Our program cache is only read while JAX's own is on (`programs.jaxs_cache_is_on`):
            # off, so that a later repeat loads what the first compiled, whatever the caller set.
            env={**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"},
        )
    if done.returncode != 0:
        from yahtzee_jax.errors import UserError

        raise UserError(f"the solve failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _best(runs: list[dict]) -> dict:
    """The fastest run, with the largest memory of all of them (the honest bound).

    The induction's memory is taken run by run (its peak over the RSS it started from), then
    the largest: a peak from one run less the start of another would mix two processes.
    """
    fastest = min(runs, key=lambda run: run["seconds"])
    largest = {key: max(run[key] for run in runs) for key in ("peak_mib", "workers_mib")}
    induction = max(run["induction_peak_mib"] - run["induction_from_mib"] for run in runs)
    return {**fastest, **largest, "induction_mib": induction}


def run(args: argparse.Namespace) -> int:
    """Solve from scratch (ours, then yatzy-solver's) and report time, memory and table size."""
    from yahtzee_jax.errors import UserError
    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.solver.value_table import ENGINES, solver_workers

    rules = get_rules(args.rules)
    check_writable(args.json or None)
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1 (got {args.repeats})")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1 (got {args.workers})")
    engines = [engine.strip() for engine in args.engines.split(",") if engine.strip()]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown or not engines:
        raise UserError(f"--engines: choose from {', '.join(ENGINES)} (got {args.engines!r})")
    # Our one process with each engine, and one process per CPU (forked workers, the NumPy loop).
    settings = [
        (workers, engine)
        for workers in ([args.workers] if args.workers else sorted({1, solver_workers()}))
        for engine in (engines if workers == 1 else [NUMPY_LOOP])
    ]
    if args.dlangk is not None:
        if rules.name != "yatzy":
            raise UserError(f"--dlangk: dlangk/yatzy plays Yatzy only (got --rules {rules.name})")
        dlangk.binary(args.dlangk, dlangk.SOLVE)
    rust = {str(threads): [] for threads in dlangk.thread_counts()} if args.dlangk else {}
    note = yatzy_solver.no_variant(rules)
    module = None if note else yatzy_solver.load_module()
    ours, theirs = {setting: [] for setting in settings}, []
    # One folder per setting for all its solves: the first one compiles our XLA programs and
    # keeps them there (`solver.programs`), the later ones load them, as a user's later solves do.
    folders = {setting: tempfile.TemporaryDirectory() for setting in settings}
    rust_base = tempfile.TemporaryDirectory()
    try:
        for _ in range(args.repeats):
            for workers, engine in settings:
                folder = folders[workers, engine].name
                options = (str(workers), _solve_engine(engine))
                run = _measure(_WORKERS + _OURS, rules.name, *options, folder=folder)
                ours[workers, engine].append(run)
            if module is not None:
                theirs.append(_measure(_THEIRS, yatzy_solver.VARIANTS[rules.name]))
            for threads, runs in rust.items():
                runs.append(dlangk.solve(args.dlangk, int(threads), Path(rust_base.name)))
    finally:
        for folder in [*folders.values(), rust_base]:
            folder.cleanup()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    results = {"rules": rules.name, "cpus": os.cpu_count(), "ours": []}
    results["machine"] = run_record(args.argv)
    rows = []
    for (workers, engine), runs in ours.items():
        # The workers' private memory: one more solve, sampled, not timed (one process has none).
        if workers > 1:
            options = (str(workers), _solve_engine(engine), "sample-workers")
            runs.append(_measure(_WORKERS + _OURS, rules.name, *options))
        row = _best(runs)
        row |= {"workers": workers, "engine": engine}
        row |= {"seconds": min(run["seconds"] for run in runs[: args.repeats])}
        row |= _compiled_and_cached(runs[: args.repeats])
        results["ours"].append(row)
        rows.append((f"yahtzee_jax, {_setting(row)}", row))
    if module is None:
        print(note or yatzy_solver.MISSING)
    else:
        results["yatzy_solver"] = _best(theirs) | {"version": module.SOLVER_VERSION}
        rows.append((f"yatzy-solver {module.SOLVER_VERSION}", results["yatzy_solver"]))
    print(f"rules {rules.name}, best of {args.repeats} solve(s) from scratch, each process alone")
    header = (
        f"{'solver':<32} {'optimum':>15} {'seconds':>8} {'CPU s':>6} {'peak MiB':>9} "
        f"{'started':>8} {'tables':>7} {'DP':>5} {'workers':>8} {'file MB':>8}"
    )
    print(header)
    for name, row in rows:
        print(
            f"{name:<32} {row['optimum']:>15.10f} {row['seconds']:>8.2f} "
            f"{row['cpu_seconds']:>6.2f} {row['peak_mib']:>9.0f} "
            f"{row['started_mib']:>8.0f} {row['tables_mib'] - row['started_mib']:>7.0f} "
            f"{row['induction_mib']:>5.0f} {row['workers_mib']:>8.0f} "
            f"{row['table_bytes'] / 1e6:>8.2f}"
        )
    print(
        "CPU s: user + system, its workers' included; "
        "MiB of peak RSS: started = imported (ours: JAX runtime started), tables = + building "
        "the score tables (ours: NumPy scoring every card), DP = + the induction and its "
        "value table; workers = the private memory of the worker processes (ours: forked, "
        "their peaks summed; its threads are in its RSS); file: the table written (ours: "
        "float64; its: f32)"
    )
    if module is not None:
        other = results["yatzy_solver"]
        results["ratios"] = [
            {
                "workers": mine["workers"],
                "engine": mine["engine"],
                "time": mine["seconds"] / other["seconds"],
                "dp_memory": _dp_mib(mine) / max(_dp_mib(other), 1.0),
                "table_file": mine["table_bytes"] / other["table_bytes"],
                "peak_rss": mine["peak_mib"] / other["peak_mib"],
            }
            for mine in results["ours"]
        ]
        for ratios in results["ratios"]:
            print(
                f"ours in {_setting(ratios)} / yatzy-solver: "
                + ", ".join(
                    f"{name} {ratio:.2f}x"
                    for name, ratio in ratios.items()
                    if name not in ("workers", "engine")
                )
            )
    published = PUBLISHED.get(rules.name)
    if published is not None:
        results["published"] = beside_published(published, results["ours"])
    if rust:
        results["dlangk"] = beside_dlangk(
            {threads: min(runs, key=lambda run: run["seconds"]) for threads, runs in rust.items()},
            results["ours"],
        )
    if args.json:
        write_json(args.json, results)
    return 0


# Published solve times of other solvers, not run here (issue 46's yardstick): rules -> (solver,
# seconds by threads, how they were measured).
PUBLISHED = {
    "yatzy": (
        "dlangk/yatzy (Rust)",
        {"1": 2.36, "2": 1.22},
        "full Yatzy solve, idle 2-core AMD EPYC with AVX-512",
    )
}


def beside_published(published: tuple[str, dict[str, float], str], ours: list[dict]) -> dict:
    """Print our solve times beside a published solver's (by its threads) and return both, with
    our time over each of its."""
    solver, by_threads, how = published
    figures = ", ".join(f"{theirs:.2f} s on {threads}" for threads, theirs in by_threads.items())
    print(f"{solver}, published (not run here): threads {figures}; {how}")
    return {
        "solver": solver,
        "seconds_by_threads": by_threads,
        "measured": how,
        "ours": _print_ours_over(ours, by_threads),
    }


def beside_dlangk(runs: dict[str, dict], ours: list[dict]) -> dict:
    """Print our solve times beside dlangk/yatzy's solves run in this bench (its fastest on each
    thread count, by its own timer) and return both, with our time over each of its."""
    by_threads = {threads: run["seconds"] for threads, run in runs.items()}
    figures = ", ".join(
        f"{run['seconds']:.2f} s on {threads} ({run['cpu_seconds']:.2f} CPU-s, "
        f"{run['peak_mib']:.0f} MiB)"
        for threads, run in runs.items()
    )
    optimum = next(iter(runs.values()))["optimum"]
    print(f"{dlangk.ENGINE}, run here: threads {figures}; its optimum {optimum:.4f}")
    return {"solver": dlangk.ENGINE, "runs": runs, "ours": _print_ours_over(ours, by_threads)}


def _print_ours_over(ours: list[dict], by_threads: dict[str, float]) -> list[dict]:
    """Print each of our solve times over another solver's (by its threads) and return them."""
    keys = ("workers", "engine", "seconds", "cpu_seconds", "compiled_seconds", "cached_seconds")
    rows = [
        {key: row[key] for key in keys} | {"time": over_theirs(row["seconds"], by_threads)}
        for row in ours
    ]
    for row in rows:
        line = (
            f"ours in {_setting(row)}: {row['seconds']:.2f} s "
            f"({row['cpu_seconds']:.2f} CPU-s), {ratio_words(row['time'])}"
        )
        # Our first solve compiles its programs (XLA's, the kernel), a later one loads them from
        # the cache (one process only: workers run NumPy).
        if row["workers"] == 1 and None not in (row["compiled_seconds"], row["cached_seconds"]):
            line += (
                f"; programs compiled: {row['compiled_seconds']:.2f} s, "
                f"loaded from an earlier solve's cache: {row['cached_seconds']:.2f} s"
            )
        print(line)
    return rows


def _compiled_and_cached(runs: list[dict]) -> dict:
    """The fastest solve that compiled our XLA programs and the fastest that loaded them from an
    earlier solve's cache (None: no such solve), in seconds and CPU seconds."""
    figures = {}
    for name, cached in (("compiled", False), ("cached", True)):
        done = [run for run in runs if run["program_cached"] == cached]
        fastest = min(done, key=lambda run: run["seconds"]) if done else {}
        figures[f"{name}_seconds"] = fastest.get("seconds")
        figures[f"{name}_cpu_seconds"] = fastest.get("cpu_seconds")
    return figures


def _dp_mib(row: dict) -> float:
    """The induction's memory: the peak RSS it added, plus its workers' private memory."""
    return row["induction_mib"] + row["workers_mib"]


NUMPY_LOOP = "numpy"  # the engine of forked workers


def _solve_engine(engine: str) -> str:
    """The `solve --engine` of a setting: forked workers run the NumPy loop whatever it says."""
    return "auto" if engine == NUMPY_LOOP else engine


def _setting(row: dict) -> str:
    """How a row of ours solved: "1 process, native", "2 processes, numpy"."""
    workers = row["workers"]
    return f"{workers} process" + ("es" if workers > 1 else "") + f", {row['engine']}"
