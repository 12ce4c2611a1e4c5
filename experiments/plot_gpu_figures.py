"""The GPU script's figures as pictures, drawn here once its JSON has come back.

Usage: python experiments/plot_gpu_figures.py DIR

DIR is what `experiments/gpu_figures.py` wrote (a device loan brings back eight files at most,
so the pictures are drawn afterwards, beside the JSON):

- `learning_curves_wall.png`: each train step's periodic evaluations against the minutes since
  its command started, with the paper's 241.78 and 250 drawn across (`train_*.json`; a
  `ppo-252` step's first run and its polish are one curve, the polish shifted by the first
  run's time);
- `throughput.png`: training games per second against games per update, a colour per width and
  a line style per compute dtype, and the bare forward+backward's rate in grey where measured
  (`bench_train*.json`);
- `scaling_study.png` and `scaling_study.md`: the scaling study's score against games, a curve
  per games-per-update and width (the mean of its seeds), and its tables of final scores and
  games to each threshold (`scaling_study.json`; the study report's own figure and tables).

Each is left out when its files are missing; a folder with neither is a one-line error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from yahtzee_jax.commands.studies import load_study
from yahtzee_jax.commands.study_report import crossings_table, results_table, study_figure
from yahtzee_jax.errors import UserError, exit_status
from yahtzee_jax.evaluation.plots import label_throughput_axes, plot_learning_curves, save_figure
from yahtzee_jax.files import write_whole

REFERENCES = {"paper (Pape), 1M games": 241.78, "250": 250.0}
DTYPE_STYLES = {"float32": "-", "bfloat16": "--"}


def training_curves(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Each train step's evaluations (games, wall_s, mean, std), keyed by its file's label."""
    curves = {}
    for path in sorted(folder.glob("train_*.json")):
        step = json.loads(path.read_text())
        rows = list(step.get("evals") or [])
        base = step.get("base")
        if base and base.get("evals"):  # ppo-252, then its polish from the first run's end
            rows = [*base["evals"]] + [
                row | {"wall_s": row["wall_s"] + base["wall_s"]} for row in rows
            ]
        if rows:
            curves[path.stem.removeprefix("train_")] = rows
    return curves


def bench_rows(folder: Path) -> list[dict[str, Any]]:
    """Every measured row of the bench files (one with no games/s is left out)."""
    rows = []
    for path in sorted(folder.glob("bench_train*.json")):
        rows += [row for row in json.loads(path.read_text()) if row.get("games_per_second")]
    return rows


def throughput_figure(rows: list[dict[str, Any]], title: str) -> Figure:
    """Games per second against B, log-log: a colour per width, a line style per dtype; the
    bare forward+backward's games per second (the same transitions) in grey."""
    figure = Figure(figsize=(7.5, 4.5))
    axes = figure.subplots()
    widths = sorted({row["width"] for row in rows})
    cells: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda row: row["games_per_update"]):
        cells.setdefault((row["width"], row.get("compute_dtype") or "float32"), []).append(row)
    for (width, dtype), cell in sorted(cells.items()):
        colour, style = f"C{widths.index(width)}", DTYPE_STYLES.get(dtype, ":")
        games = [row["games_per_update"] for row in cell]
        speeds = [row["games_per_second"] for row in cell]
        axes.plot(games, speeds, marker="o", color=colour, linestyle=style,
                  label=f"width {width}, {dtype}")  # fmt: skip
        bare = [
            (row["games_per_update"], row["games_per_second"] * row["pipeline_over_fwd_bwd"])
            for row in cell
            if row.get("pipeline_over_fwd_bwd")
        ]
        if bare:
            axes.plot(*zip(*bare, strict=True), marker=".", color="grey", linestyle=style,
                      alpha=0.6)  # fmt: skip
    label_throughput_axes(axes, title)
    axes.legend(fontsize="small", title="grey: the bare forward+backward", title_fontsize="small")
    figure.tight_layout()
    return figure


def scaling_study(folder: Path, device: str) -> list[Path]:
    """The scaling study's figure and tables from `scaling_study.json` (none without runs)."""
    path = folder / "scaling_study.json"
    report = json.loads(path.read_text()).get("study") if path.is_file() else None
    if not report:
        return []
    study, runs = load_study(report["study"]), report["runs"]
    title = f"{study.title}{device}\n{report['note']}"
    figure = save_figure(study_figure(study, runs, title), folder / "scaling_study.png")
    tables = f"{results_table(runs)}\n\n{crossings_table(runs, study.thresholds)}\n"
    markdown = folder / "scaling_study.md"
    write_whole(markdown, f"# {study.title}{device}\n\n{report['note']}\n\n{tables}")
    return [figure, markdown]


def device_name(folder: Path) -> str | None:
    """The device the figures were measured on: the manifest's machine (`machine.json` beside
    an older manifest, a bare list of steps), None when neither says."""
    for name in ("manifest.json", "machine.json"):
        path = folder / name
        data = json.loads(path.read_text()) if path.is_file() else None
        machine = data.get("machine", data) if isinstance(data, dict) else None
        if isinstance(machine, dict) and machine.get("devices"):
            return machine["devices"][0]
    return None


def draw(folder: Path) -> list[Path]:
    """Write the pictures `folder`'s JSON allows; their paths."""
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder")
    name = device_name(folder)
    device = f" on {name}" if name else ""
    written = []
    curves = training_curves(folder)
    if curves:
        path = folder / "learning_curves_wall.png"
        title = f"Model-free training{device}: evaluations against wall time"
        written.append(plot_learning_curves(curves, path, title, REFERENCES, "wall"))
    rows = bench_rows(folder)
    if rows:
        title = f"The fused training step{device}"
        written.append(save_figure(throughput_figure(rows, title), folder / "throughput.png"))
    written += scaling_study(folder, device)
    if not written:
        raise UserError(f"{folder} holds no train_*.json evaluations and no bench_train*.json rows")
    return written


def main(argv: list[str]) -> int:
    """Draw the pictures; print their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    return exit_status(lambda: print("\n".join(str(path) for path in draw(args.folder))))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
