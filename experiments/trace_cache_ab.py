"""A warm `evaluate` with and without its traced play program kept (issue 65): the whole
command from a shell, before (a checkout without `evaluation.stored_traces`) and after, in turn.

    python experiments/trace_cache_ab.py --before MAIN_CHECKOUT --after . \\
        --cache /tmp/cache-export --out results/whole-process/trace-cache-ab.json

For each agent (`optimal`, `optimal-table`): one run of each checkout to fill the caches (not
counted), then `--runs` runs of each in turn (before, after, before, ...), each under GNU time
(`/usr/bin/time -f '%e s wall %U s user %S s sys %M KiB'`), niced like every command beside the
other work of this shared machine. The two checkouts share one cache folder (`YAHTZEE_JAX_CACHE`:
the value and decision tables, JAX's compiled programs; the after checkout's stored traces). The
games must be the same: each run's summary.json (all but its times) must equal the first's, and
after the timing a per-game digest of the 100,000 games' boxes is taken once per checkout
(`play_games` as `evaluate` calls it, the after checkout through its stored program).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile

PYTHON = sys.executable  # this venv for both checkouts; PYTHONPATH picks the code
TIME_FORMAT = "%e s wall %U s user %S s sys %M KiB"
COMMAND = "evaluate {agent} --rules yatzy --games 100000 --no-optimal --no-progress --out {out}"
# Plays as `evaluate` does and prints a digest of every game's boxes and totals; a checkout
# whose `play_games` keeps its programs (`program_dir`) is given the folder `evaluate` gives.
DIGEST = """
import hashlib, inspect, os, sys
from yahtzee_jax.commands.cli import keep_compiled_programs
keep_compiled_programs("evaluate", os.environ)  # JAX's cache, as the command turns it on
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.runner.checkpointing import resolve_agent
agent = resolve_agent(sys.argv[1], "yatzy", None, rules_asked=True)
keep = {}
if "program_dir" in inspect.signature(play_games).parameters:
    from yahtzee_jax.evaluation import stored_traces
    keep["program_dir"] = stored_traces.folder_of(None)
records = play_games(agent, 100000, 0, **keep)
digest = hashlib.sha256(records.box_scores.tobytes() + records.total.tobytes()).hexdigest()
print(digest, int(records.total.sum()))
"""


def machine() -> dict:
    """The CPU's model and vector extensions, cores, memory and OS, read from the system."""
    cpuinfo = pathlib.Path("/proc/cpuinfo").read_text()
    model = re.search(r"model name\s*:\s*(.*)", cpuinfo).group(1).strip()
    flags = re.search(r"flags\s*:\s*(.*)", cpuinfo).group(1).split()
    memory_kib = int(re.search(r"MemTotal:\s*(\d+)", pathlib.Path("/proc/meminfo").read_text())[1])
    return {
        "cpu": model,
        "avx512": sorted(flag for flag in flags if flag.startswith("avx512")),
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kib / 2**20, 1),
        "os": platform.platform(),
        "gpu": "none",
        "state": "shared with other work (the lead's session): never idle; see the load averages",
    }


def commit(tree: pathlib.Path) -> dict:
    """The checkout's commit and whether it has uncommitted changes to tracked files."""
    git = ["git", "-C", str(tree)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {"path": str(tree), "commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def environment(tree: pathlib.Path, cache: pathlib.Path) -> dict[str, str]:
    """The environment of a run: the checkout first on the path, the shared cache folder."""
    return {**os.environ, "PYTHONPATH": str(tree), "YAHTZEE_JAX_CACHE": str(cache)}


def timed_run(tree: pathlib.Path, cache: pathlib.Path, agent: str) -> dict:
    """One whole command under GNU time: its line, seconds and its summary (without times)."""
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "nice",
            "-n",
            "10",
            "/usr/bin/time",
            "-f",
            TIME_FORMAT,
            PYTHON,
            "-m",
            "yahtzee_jax.commands.cli",
            *COMMAND.format(agent=agent, out=out).split(),
        ]
        done = subprocess.run(
            argv, cwd=tree, env=environment(tree, cache), capture_output=True, text=True, check=True
        )
        summary = json.loads((pathlib.Path(out) / "summary.json").read_text())
    line = done.stderr.strip().splitlines()[-1]
    wall, user, system = (float(value) for value in re.findall(r"([\d.]+) s", line))
    for timing in ("seconds", "games_per_second"):
        summary.pop(timing)
    return {"time": line, "wall_s": wall, "user_s": user, "sys_s": system, "summary": summary}


def games_digest(tree: pathlib.Path, cache: pathlib.Path, agent: str) -> str:
    """The per-game digest of the checkout's 100,000 games (`DIGEST`)."""
    done = subprocess.run(
        ["nice", "-n", "10", PYTHON, "-c", DIGEST, agent],
        cwd=tree,
        env=environment(tree, cache),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def compare(trees: dict[str, pathlib.Path], cache: pathlib.Path, agent: str, runs: int) -> dict:
    """Warm-up, then `runs` runs of each checkout in turn; medians and the games' checks."""
    for tree in trees.values():
        timed_run(tree, cache, agent)  # fills the caches; not counted
    counted: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            counted[name].append(timed_run(tree, cache, agent))
    summaries = [run["summary"] for each in counted.values() for run in each]
    digests = {name: games_digest(tree, cache, agent) for name, tree in trees.items()}
    result = {
        "command": COMMAND.format(agent=agent, out="DIR"),
        "median_wall_s": {
            name: statistics.median(r["wall_s"] for r in each) for name, each in counted.items()
        },
        "median_user_s": {
            name: statistics.median(r["user_s"] for r in each) for name, each in counted.items()
        },
        "runs": {name: [r["time"] for r in each] for name, each in counted.items()},
        "summaries_equal": all(summary == summaries[0] for summary in summaries),
        "mean_score": summaries[0]["score"]["mean"],
        "games_digest_and_total_sum": digests,
        "games_equal": len(set(digests.values())) == 1,
    }
    before, after = result["median_wall_s"]["before"], result["median_wall_s"]["after"]
    result["after_over_before_wall"] = round(after / before, 3)
    return result


def main() -> None:
    """Run the comparison for both agents and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=pathlib.Path, required=True, help="checkout without")
    parser.add_argument("--after", type=pathlib.Path, required=True, help="checkout with")
    parser.add_argument("--cache", type=pathlib.Path, required=True, help="YAHTZEE_JAX_CACHE")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--agents", nargs="+", default=["optimal", "optimal-table"])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    now = lambda: datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    report = {
        "what": "a warm evaluate, whole command from a shell, without (before) and with (after) "
        "its traced play program kept between processes (evaluation.stored_traces)",
        "machine": machine(),
        "load_average_before": [round(load, 2) for load in os.getloadavg()],
        "started": now(),
        "checkouts": {name: commit(tree) for name, tree in trees.items()},
        "python": f"{PYTHON} ({sys.version.split()[0]}), `nice -n 10`, cwd the checkout, "
        "PYTHONPATH the checkout",
        "cache": str(args.cache),
        "method": f"per agent one uncounted run of each checkout, then {args.runs} of each in "
        "turn (before, after, ...); medians; GNU time's line per run",
        "rerun": "python experiments/trace_cache_ab.py --before BEFORE --after AFTER --cache "
        "DIR --out FILE",
    }
    report["results"] = {
        agent: compare(trees, args.cache, agent, args.runs) for agent in args.agents
    }
    report["ended"] = now()
    report["load_average_after"] = [round(load, 2) for load in os.getloadavg()]
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for agent, result in report["results"].items():
        print(agent, result["median_wall_s"], "games equal:", result["games_equal"])


if __name__ == "__main__":
    main()
