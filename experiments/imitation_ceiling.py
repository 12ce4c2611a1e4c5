"""The imitation ceiling by network shape (issue 64; a diagnostic, never a model-free result):
train the `imitate-optimal` preset at each shape, then collect the runs' small artifacts.

Usage (from the repository root; the runs go one after another, each resumable):

    YAHTZEE_JAX_CACHE=/tmp/cache nice -n 10 python experiments/imitation_ceiling.py \
        --out /tmp/imitate/runs [--runs w128,w256,w512,w256-d3] [--collect-only]

Each run is `yahtzee-jax train --preset imitate-optimal --set train.seed=1` with its shape's
overrides (`RUNS`), to OUT/NAME; a run directory holding checkpoints but no final evaluation is
continued with `train --resume`. Every sitting appends its start time, load average and wall
seconds to OUT/NAME/sittings.jsonl. Then results/imitation-ceiling/NAME/ gets the run's
summary.json, evals.jsonl and config.yaml (no checkpoints), results/imitation-ceiling/
results.json one entry per finished run (with the share of the student's decisions that are
the optimal agent's on 10,000 of its own games: experiments/imitation_agreement.py), and
results/imitation-ceiling/curves.png the 1,000-game evaluations against games.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from imitation_agreement import agreement
from matplotlib.figure import Figure

from yahtzee_jax.evaluation.plots import save_figure
from yahtzee_jax.runner.finished_run import (
    FINAL_EVAL_DIR,
    FINAL_REPORT_COPY,
    SUMMARY_FILE,
    read_finished_run,
)
from yahtzee_jax.runner.runlog import read_evals

PRESET = "imitate-optimal"
SEED = 1  # the reporting seed: teacher_share and the budget were chosen on seed 0
# name -> the shape's overrides of the preset (width 128, 2 trunk blocks: cpu-ppo's network)
RUNS = {
    "w128": [],
    "w256": ["network.hidden_size=256"],
    "w512": ["network.hidden_size=512"],
    "w256-d3": ["network.hidden_size=256", "network.trunk_layers=3"],
    # the shapes at 2x to 8x the games: is 409,600 games their ceiling?
    "w128-2x": ["train.total_games=819200"],
    "w128-4x": ["train.total_games=1638400"],
    "w128-8x": ["train.total_games=3276800"],  # ppo-250's games at ppo-250's shape
    "w256-2x": ["network.hidden_size=256", "train.total_games=819200"],
    "w256-4x": ["network.hidden_size=256", "train.total_games=1638400"],
    "w512-2x": ["network.hidden_size=512", "train.total_games=819200"],
    # a second reporting seed of the preset itself (its own seed in place of SEED)
    "w128-seed2": ["train.seed=2"],
    "w256-seed2": ["network.hidden_size=256", "train.seed=2"],
    # without dropout, as the model-free presets train since the twenty-ninth session
    "w256-2x-dropout0": [
        "network.hidden_size=256",
        "train.total_games=819200",
        "network.dropout=0",
    ],
    "w128-8x-dropout0": ["train.total_games=3276800", "network.dropout=0"],
}
MACHINE = "2-core AMD EPYC with AVX-512, shared"
# Reinforcement at these shapes, (games, 100,000-game score) of the committed runs:
# results/cpu-ppo-b256-seed2/, cpu-ppo-3.3m-seed4/, cpu-ppo-3.3m-seed5-finetune/ (width 128);
# cpu-ppo-w256-6.5m-seed7/, cpu-ppo-w256-6.5m-seed7-polish/ (width 256)
PPO = {
    128: [(819_200, 246.37), (3_276_800, 250.39), (4_325_376, 250.68)],
    256: [(6_553_600, 251.81), (7_602_176, 252.19)],
}
OPTIMUM = 254.56  # the optimal agent on the final evaluation's 100,000 deals (seed 3)
WIDTH_COLOURS = {128: "tab:blue", 256: "tab:green", 512: "tab:purple"}
RESULTS = Path("results/imitation-ceiling")
KEPT = ("summary.json", "evals.jsonl", "config.yaml")
CLI = [sys.executable, "-m", "yahtzee_jax.commands.cli"]
AGREEMENT_GAMES, AGREEMENT_SEED = 10_000, 5  # the student's own games, asked of the optimum


def command(name: str, out: Path) -> list[str]:
    """The train command of run `name` (its first sitting)."""
    own_seed = any(item.startswith("train.seed=") for item in RUNS[name])
    sets = [*([] if own_seed else [f"train.seed={SEED}"]), *RUNS[name]]
    args = ["train", "--preset", PRESET, "--out", str(out / name), "--no-progress"]
    return [*args, *(part for item in sets for part in ("--set", item))]


def finished(run: Path) -> bool:
    """Whether a run directory holds its final evaluation."""
    return read_finished_run(run, required=False) is not None


def train(name: str, out: Path) -> None:
    """Train (or continue) run `name`, appending this sitting to its sittings.jsonl."""
    run = out / name
    argv = command(name, out)
    if (run / "checkpoints").exists():  # a sitting ended early: continue its saved config
        argv = ["train", "--resume", "--out", str(run), "--no-progress"]
    start, load, code = time.time(), os.getloadavg()[0], commit()
    subprocess.run([*CLI, *argv], check=True)
    wall = time.time() - start
    sitting = {"argv": argv, "commit": code, "start": start, "load_average": load, "wall_s": wall}
    with open(run / "sittings.jsonl", "a") as file:
        file.write(json.dumps(sitting) + "\n")


def commit() -> str:
    """The commit the runs were made from."""
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def collect(names: list[str], out: Path) -> list[dict]:
    """Copy each finished run's small files under RESULTS and describe it."""
    entries = []
    for name in names:
        run = out / name
        done = read_finished_run(run, required=False)
        if done is None:
            continue
        (RESULTS / name).mkdir(parents=True, exist_ok=True)
        for file in KEPT:
            shutil.copy(run / file, RESULTS / name / file)
        shutil.copy(run / FINAL_EVAL_DIR / SUMMARY_FILE, RESULTS / name / FINAL_REPORT_COPY)
        shutil.copy(run / "sittings.jsonl", RESULTS / name / "sittings.jsonl")
        summary, report = done.summary, done.report
        agreed = RESULTS / name / "agreement.json"
        if not agreed.exists():  # once: 10,000 games of the student with the optimum asked
            measured = agreement(str(run), AGREEMENT_GAMES, AGREEMENT_SEED)
            agreed.write_text(json.dumps(measured, indent=2) + "\n")
        lines = (run / "sittings.jsonl").read_text().splitlines()
        sittings = [json.loads(line) for line in lines]
        final = summary["final_eval"]
        entries.append(
            {
                "run": name,
                "command": "yahtzee-jax " + " ".join(command(name, Path("runs/imitation"))),
                "commit": sittings[0].get("commit") or commit(),
                "machine": MACHINE,
                "load_average_at_start": sittings[0]["load_average"],
                "sittings": len(sittings),
                "games": summary["games"],
                "wall_seconds": round(sum(s["wall_s"] for s in sittings), 1),
                "score": final["mean"],
                "stderr": final["stderr"],
                "final_games": final["games"],
                "upper_bonus_rate": report["upper_bonus_rate"],
                "agreement_with_optimal": json.loads(agreed.read_text()),
            }
        )
    return entries


def width_of(name: str) -> int:
    """A run's network width, from its name (w128-4x: 128)."""
    return int(name[1:].split("-")[0])


def figure(entries: list[dict]) -> Figure:
    """Left: each run's final 100,000-game score against its games (filled: imitation, by
    width; open: PPO at that width), the optimum dashed. Right: the runs' 1,000-game
    evaluations during training."""
    fig = Figure(figsize=(11, 4.5))
    final, during = fig.subplots(1, 2)
    for entry in entries:
        width = width_of(entry["run"])
        marker = "s" if "-d3" in entry["run"] else "o"
        final.errorbar(entry["games"], entry["score"], yerr=entry["stderr"], fmt=marker,
                       color=WIDTH_COLOURS[width], label=f"imitation {entry['run']}")  # fmt: skip
        rows = read_evals(RESULTS / entry["run"] / "evals.jsonl")  # the collected copy
        during.plot([row["games"] for row in rows], [row["mean"] for row in rows],
                    color=WIDTH_COLOURS[width], label=entry["run"],
                    linestyle="--" if "-d3" in entry["run"] else "-")  # fmt: skip
    for width in WIDTH_COLOURS:  # a width's budgets joined (2 trunk blocks)
        points = sorted((e["games"], e["score"]) for e in entries
                        if width_of(e["run"]) == width and "-d3" not in e["run"])  # fmt: skip
        if len(points) > 1:
            final.plot(*zip(*points, strict=True), "-", color=WIDTH_COLOURS[width])
    for width, points in PPO.items():
        games, scores = zip(*points, strict=True)
        final.plot(games, scores, "o:", mfc="none", color=WIDTH_COLOURS[width],
                   label=f"PPO width {width}")  # fmt: skip
    final.axhline(OPTIMUM, color="grey", linestyle="--", label="optimal agent")
    final.set(xscale="log", xlabel="training games", ylabel="mean score, 100,000 games",
              title="Final scores: imitation of the optimum vs PPO")  # fmt: skip
    final.legend(fontsize=7, loc="lower right")
    during.set(ylim=(235, 256), xlabel="training games", ylabel="mean score, 1,000 games",
               title="1,000-game evaluations (seed 1's runs on the same deals)")  # fmt: skip
    during.axhline(OPTIMUM, color="grey", linestyle="--")
    during.legend(fontsize=7, loc="lower right")
    for axes in (final, during):
        axes.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def main(argv: list[str]) -> int:
    """Train the runs not yet finished, then collect them (earlier runs' entries are kept)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder of the run directories")
    parser.add_argument("--runs", default=",".join(RUNS), help="names, comma-separated")
    parser.add_argument("--collect-only", action="store_true", help="train nothing")
    args = parser.parse_args(argv)
    names = args.runs.split(",")
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        parser.error(f"unknown runs {unknown}; choose from {', '.join(RUNS)}")
    if not args.collect_only:
        for name in names:
            if not finished(args.out / name):
                train(name, args.out)
    collected = collect(names, args.out)
    # The runs collected before (their run directories may be gone) keep their entries.
    written = RESULTS / "results.json"
    earlier = json.loads(written.read_text()) if written.exists() else []
    now = {entry["run"] for entry in collected}
    entries = [entry for entry in earlier if entry["run"] not in now] + collected
    RESULTS.mkdir(parents=True, exist_ok=True)
    written.write_text(json.dumps(entries, indent=2) + "\n")
    if entries:
        save_figure(figure(entries), RESULTS / "curves.png")
    print(json.dumps(entries, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
