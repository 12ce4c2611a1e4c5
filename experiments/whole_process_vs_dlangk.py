"""Whole commands from a shell, ours beside dlangk/yatzy's (issue 65): start to exit, Python's
start and every import included, the way a user waits for them.

    python experiments/whole_process_vs_dlangk.py --dlangk BIN --theirs-bases BASES \
        --work DIR --out results/whole-process

BIN holds dlangk/yatzy's release binaries (`experiments/build_dlangk_yatzy.sh`), BASES its data
folders (`--theirs-bases`); DIR is a scratch folder for our caches. Each row runs ours and
theirs in turn (ours, theirs, ours, ...), one warm-up of each not counted, then `--runs` counted
pairs; each process's wall, user and system seconds and peak resident memory come from the
operating system (wait4). A row's JSON records the machine, its load before and after, the
commit, the commands, every run, the medians and the ratio ours/theirs taken pair by pair. Ours
is the `yahtzee-jax` console script of this checkout's environment.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from yahtzee_jax.commands.bench.machine import commit, cpu_name  # noqa: E402 (the checkout's)
from yahtzee_jax.solver.native import INSTALLED_KERNELS  # noqa: E402

OURS = str(pathlib.Path(sys.executable).with_name("yahtzee-jax"))
GAMES = "100000"
PLAY = [OURS, "evaluate", "optimal", "--rules", "yatzy", "--games", GAMES, "--engine", "native"]
PLAY += ["--no-progress", "--seed", "1"]


def rows(bin_dir: pathlib.Path, work: pathlib.Path) -> dict[str, dict]:
    """Each row: what it compares, and each side's command (a list, or a shell line), its
    environment and whether it starts from an empty cache (a new folder each run)."""
    simulate = [str(bin_dir / "yatzy-simulate"), "--games", GAMES, "--seed", "1"]
    precompute = str(bin_dir / "yatzy-precompute")
    report = ["--out", str(work / "report")]
    return {
        "solve-warm": {
            "what": "the Yatzy value table, ours with its cache built (kernel, earlier table)",
            "ours": [OURS, "solve", "--rules", "yatzy", "--force"],
            "theirs": [precompute, "--force"],
            "theirs_base": "solve",
        },
        "solve-cold": {
            "what": "the Yatzy value table from an empty cache (ours: the C kernel built by "
            "make setup into the environment; theirs: no cache or build step)",
            "ours": [OURS, "solve", "--rules", "yatzy", "--force"],
            "ours_cold": True,
            "theirs": [precompute, "--force"],
            "theirs_base": "solve",
        },
        "solve-cold-kernel": {
            "what": "the Yatzy value table from an empty cache, ours compiling its C kernel too "
            "(the kernel make setup built set aside)",
            "ours": [OURS, "solve", "--rules", "yatzy", "--force"],
            "ours_cold": True,
            "hide_installed_kernel": True,
            "theirs": [precompute, "--force"],
            "theirs_base": "solve",
        },
        "play-warm": {
            "what": "100,000 games of optimal Yatzy play, like for like: our native engine "
            "(report without plots) against its lockstep engine, tables cached",
            "ours": [*PLAY, "--no-plots", *report],
            "theirs": [*simulate, "--lockstep"],
            "theirs_base": "lock",
        },
        "play-warm-plots": {
            "what": "the same, ours writing its whole report with its three PNG plots",
            "ours": [*PLAY, *report],
            "theirs": [*simulate, "--lockstep"],
            "theirs_base": "lock",
        },
        "play-cold": {
            "what": "100,000 games of optimal Yatzy play from an empty cache: the table solved "
            "first, then the games (ours one command; theirs its solve then its lockstep play)",
            "ours": [*PLAY, "--no-plots", *report],
            "ours_cold": True,
            "theirs": f"{precompute} --force && exec {' '.join(simulate)} --lockstep",
            "theirs_base": "lockcold",
        },
        "oracle-warm": {
            "what": "100,000 games: our native engine against its table engine (its 3.17 GB "
            "oracle of every decision, built beforehand and in the page cache)",
            "ours": [*PLAY, "--no-plots", *report],
            "theirs": [*simulate, "--oracle"],
            "theirs_base": "oracle",
        },
    }


def timed(command: list[str] | str, env: dict[str, str], cwd: pathlib.Path) -> dict:
    """Run `command` to its end; its wall, user and system seconds and peak RSS (MiB)."""
    shell = isinstance(command, str)
    start = time.perf_counter()
    process = subprocess.Popen(
        command, shell=shell, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{command} failed ({status}): {output.decode()[-2000:]}")
    return {
        "wall_s": round(wall, 4),
        "user_s": round(usage.ru_utime, 3),
        "sys_s": round(usage.ru_stime, 3),
        "peak_mib": round(usage.ru_maxrss / 1024, 1),
        "last_line": output.decode().strip().splitlines()[-1][:200],
    }


def busy_percent(seconds: float = 5.0) -> float:
    """The CPUs' busy share over `seconds` (/proc/stat)."""

    def sample() -> list[int]:
        return [int(x) for x in pathlib.Path("/proc/stat").read_text().split()[1:9]]

    first = sample()
    time.sleep(seconds)
    second = sample()
    delta = [b - a for a, b in zip(first, second, strict=True)]
    return round(100 * (1 - (delta[3] + delta[4]) / sum(delta)), 1)


def run_row(name: str, row: dict, args: argparse.Namespace, work: pathlib.Path) -> dict:
    """Warm-up and counted pairs of one row; its JSON."""
    base = os.environ | {"PYTHONDONTWRITEBYTECODE": "1"}
    warm = work / "ours-warm"
    theirs_env = base | {"YATZY_BASE_PATH": str(args.theirs_bases / row["theirs_base"])}
    hidden = INSTALLED_KERNELS.with_name("yahtzee_jax.hidden")
    if row.get("hide_installed_kernel"):
        INSTALLED_KERNELS.rename(hidden)
    try:

        def ours() -> dict:
            if row.get("ours_cold"):
                cache = tempfile.mkdtemp(prefix="cold-", dir=work)
                result = timed(row["ours"], base | {"YAHTZEE_JAX_CACHE": cache}, work)
                shutil.rmtree(cache)
                return result
            return timed(row["ours"], base | {"YAHTZEE_JAX_CACHE": str(warm)}, work)

        load_before = os.getloadavg()
        busy = busy_percent()
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ours(), timed(row["theirs"], theirs_env, work)  # warm-ups, not counted
        pairs = [(ours(), timed(row["theirs"], theirs_env, work)) for _ in range(args.runs)]
    finally:
        if row.get("hide_installed_kernel"):
            hidden.rename(INSTALLED_KERNELS)
    mine = [pair[0]["wall_s"] for pair in pairs]
    their = [pair[1]["wall_s"] for pair in pairs]
    return {
        "comparison": row["what"],
        "machine": {
            "cpu": cpu_name(),
            "cores": os.cpu_count(),
            "memory_gib": round(
                os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1
            ),
            "gpu": "none",
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "cpu_busy_percent_5s_before": busy,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "started": started,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "command": " ".join(sys.argv),
        "ours_command": row["ours"] if isinstance(row["ours"], str) else " ".join(row["ours"]),
        "ours_cache": "a new empty folder each run" if row.get("ours_cold") else "built (warm)",
        "theirs_command": row["theirs"]
        if isinstance(row["theirs"], str)
        else " ".join(row["theirs"]),
        "method": "ours and theirs in turn, one warm-up each not counted, then the counted "
        "pairs; wall from the parent's clock, CPU and peak RSS from wait4",
        "runs": [{"ours": a, "theirs": b} for a, b in pairs],
        "median_wall_s": {"ours": statistics.median(mine), "theirs": statistics.median(their)},
        "median_ratio_ours_over_theirs": round(
            statistics.median(a / b for a, b in zip(mine, their, strict=True)), 3
        ),
        "median_cpu_s": {
            side: statistics.median(pair[i]["user_s"] + pair[i]["sys_s"] for pair in pairs)
            for i, side in enumerate(("ours", "theirs"))
        },
        "median_peak_mib": {
            side: statistics.median(pair[i]["peak_mib"] for pair in pairs)
            for i, side in enumerate(("ours", "theirs"))
        },
    }


def main() -> int:
    """Run the rows asked for; write one JSON a row into `--out`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlangk", required=True, type=pathlib.Path, help="its release binaries")
    parser.add_argument(
        "--theirs-bases",
        required=True,
        type=pathlib.Path,
        help="folder of its YATZY_BASE_PATHs: solve/, lock/, lockcold/, oracle/ (oracle/ with "
        "its oracle built by yatzy-precompute --oracle)",
    )
    parser.add_argument("--work", required=True, type=pathlib.Path, help="a scratch folder")
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None, help="rows to run (default: all)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    warm = args.work / "ours-warm"
    env = os.environ | {"YAHTZEE_JAX_CACHE": str(warm)}
    subprocess.run([OURS, "solve", "--rules", "yatzy"], env=env, check=True, capture_output=True)
    for name, row in rows(args.dlangk, args.work).items():
        if args.only and name not in args.only:
            continue
        result = run_row(name, row, args, args.work)
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        medians = result["median_wall_s"]
        print(
            f"{name}: ours {medians['ours']:.2f} s, theirs {medians['theirs']:.2f} s, "
            f"ratio {result['median_ratio_ours_over_theirs']:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
