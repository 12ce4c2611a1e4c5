"""Figures: an evaluation's score histogram, points per category and first category chosen;
training learning curves.

Each `*_figure` function returns a matplotlib `Figure` (a notebook shows it inline) and
`save_figure` writes one as PNG (the command line and the reports do). Figures are built
without pyplot: no global figure registry to leak into or close, and no backend to choose, so
the same code draws in a terminal, in a notebook and on a headless machine.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from yahtzee_jax.files import replaced_whole
from yahtzee_jax.game.rules import get_rules

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from yahtzee_jax.evaluation.game_records import GameRecords

BIN_WIDTH = 5
DPI = 120
AGENT_COLOR = "tab:blue"
OPTIMAL_COLOR = "black"


def _label(name: str) -> str:
    return name.replace("_", " ")


def score_histogram_figure(records: GameRecords, optimal_records: GameRecords | None) -> Figure:
    """Histogram of final scores (share of games per 5-point bin), the optimum's overlaid."""
    totals = [records.total] + ([optimal_records.total] if optimal_records is not None else [])
    # Up to the 99.9th percentile: the long Yahtzee-bonus tail would squash the bulk.
    upper = max(float(np.percentile(total, 99.9)) for total in totals) + BIN_WIDTH
    bins = np.arange(0, upper + BIN_WIDTH, BIN_WIDTH)
    figure = Figure(figsize=(9, 4.5))
    axes = figure.subplots()
    weights = np.full(records.num_games, 1 / records.num_games)
    axes.hist(
        records.total,
        bins=bins,
        weights=weights,
        color=AGENT_COLOR,
        alpha=0.6,
        label=f"{records.agent} (mean {records.total.mean():.1f})",
    )
    if optimal_records is not None:
        optimal_weights = np.full(optimal_records.num_games, 1 / optimal_records.num_games)
        axes.hist(
            optimal_records.total,
            bins=bins,
            weights=optimal_weights,
            histtype="step",
            color=OPTIMAL_COLOR,
            linewidth=1.5,
            label=f"optimal (mean {optimal_records.total.mean():.1f})",
        )
    axes.set_xlim(0, upper)
    axes.set_xlabel("final score")
    axes.set_ylabel(f"share of games per {BIN_WIDTH}-point bin")
    axes.set_title(f"Final score, {records.rules} rules, {records.num_games:,} games")
    axes.legend()
    axes.grid(alpha=0.3)
    return _laid_out(figure)


def category_scores_figure(summary: dict) -> Figure:
    """Mean points per box and bonus, agent beside the optimum, % of optimal on top."""
    names = list(summary["category_means"])
    rules = get_rules(summary["rules"])
    upper, boxes = rules.num_upper, rules.num_boxes
    groups = [  # the paper's Figure 20 (upper and bonus) and Figure 21 (lower)
        ("upper section and bonuses", names[:upper] + names[boxes:]),
        ("lower section", names[upper:boxes]),
    ]
    optimal = summary["optimal"]
    figure = Figure(figsize=(13, 4.8))
    all_axes = figure.subplots(1, 2, width_ratios=[len(group) for _, group in groups])
    width = 0.4 if optimal else 0.7
    for axes, (title, group) in zip(all_axes, groups, strict=True):
        positions = np.arange(len(group))
        agent_values = [summary["category_means"][name] for name in group]
        offset = -width / 2 if optimal else 0.0
        bars = axes.bar(
            positions + offset, agent_values, width, color=AGENT_COLOR, label=summary["agent"]
        )
        if optimal:
            optimal_values = [optimal["category_means"][name] for name in group]
            axes.bar(
                positions + width / 2,
                optimal_values,
                width,
                color="lightgray",
                edgecolor=OPTIMAL_COLOR,
                label="optimal",
            )
            for bar, name in zip(bars, group, strict=True):
                share = optimal["percent_of_optimal"][name]
                top = max(bar.get_height(), optimal["category_means"][name])
                axes.annotate(
                    "-" if share is None else f"{share:.0f}%",
                    (bar.get_x() + width, top),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                )
        axes.set_xticks(positions, [_label(name) for name in group], rotation=30, ha="right")
        axes.set_ylabel("mean points")
        axes.set_title(title)
        axes.margins(y=0.12)
        axes.grid(axis="y", alpha=0.3)
    all_axes[0].legend()
    note = "; % of optimal above the bars" if optimal else ""
    figure.suptitle(
        f"Mean points per category, {summary['agent']} ({summary['rules']} rules, "
        f"{summary['games']:,} games{note})"
    )
    return _laid_out(figure)


def first_category_figure(summary: dict) -> Figure:
    """Share of games by the first category chosen (the paper's Figure 22), optimum beside."""
    shares = summary["first_category"]
    optimal = summary["optimal"]
    positions = np.arange(len(shares))
    width = 0.4 if optimal else 0.7
    figure = Figure(figsize=(9, 4.2))
    axes = figure.subplots()
    axes.bar(positions - (width / 2 if optimal else 0.0), [100 * v for v in shares.values()],
             width, color=AGENT_COLOR, label=summary["agent"])  # fmt: skip
    if optimal:
        optimal_shares = [100 * optimal["first_category"][name] for name in shares]
        axes.bar(positions + width / 2, optimal_shares, width, color="lightgray",
                 edgecolor=OPTIMAL_COLOR, label="optimal")  # fmt: skip
        axes.legend()
    axes.set_xticks(positions, [_label(name) for name in shares], rotation=30, ha="right")
    axes.set_ylabel("% of games")
    axes.set_title(f"First category chosen ({summary['rules']} rules)")
    axes.grid(axis="y", alpha=0.3)
    return _laid_out(figure)


X_AXES = {"games": ("games", "training games"), "wall": ("wall_s", "wall time (minutes)")}


def learning_curves_figure(
    curves: dict[str, list[dict]],
    title: str,
    references: dict[str, float] | None = None,
    x_axis: str = "games",
) -> Figure:
    """Periodic evaluation mean against training games (or wall time), one line per run.

    `curves` maps a label to a run's evaluation rows (``games``, ``wall_s``, ``mean``, ``std``,
    ``num_games``); `references` maps a label to a horizontal line (e.g. a paper's figure);
    `x_axis` is "games" or "wall" (minutes since the run started). One run gets a +-1 std band.
    """
    if x_axis not in X_AXES:
        raise ValueError(f"x_axis={x_axis!r} must be one of {sorted(X_AXES)}")
    field, x_label = X_AXES[x_axis]
    scale = 1 / 60 if x_axis == "wall" else 1
    figure = Figure(figsize=(7, 4))
    axis = figure.subplots()
    for label, rows in curves.items():
        xs = np.array([row[field] for row in rows]) * scale
        mean = np.array([row["mean"] for row in rows])
        axis.plot(xs, mean, label=f"{label} ({rows[-1]['num_games']} argmax games per point)")
        if len(curves) == 1:
            std = np.array([row["std"] for row in rows])
            axis.fill_between(xs, mean - std, mean + std, alpha=0.2)
    for label, value in (references or {}).items():
        axis.axhline(value, color="gray", linestyle="--", linewidth=1)
        axis.annotate(label, (0, value), xycoords=("axes fraction", "data"), va="bottom")
    axis.set_xlabel(x_label)
    axis.set_ylabel("mean score")
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right", fontsize="small")
    return _laid_out(figure)


def plot_learning_curves(
    curves: dict[str, list[dict]],
    path: Path,
    title: str,
    references: dict[str, float] | None = None,
    x_axis: str = "games",
) -> Path:
    """Write `learning_curves_figure(curves, title, references, x_axis)` to `path` as PNG."""
    return save_figure(learning_curves_figure(curves, title, references, x_axis), path)


def scaling_figure(rows: list[dict], title: str) -> Figure:
    """Games per second against games per update, log-log: a colour per network width, a line
    style per device count (forced host devices marked); rows without a speed are left out."""
    measured = [row for row in rows if row.get("games_per_second")]
    widths = sorted({row["width"] for row in measured})
    forced = {row["devices"]: row.get("forced_host_devices", False) for row in measured}
    styles = ["-", "--", ":", "-."]
    figure = Figure(figsize=(7.5, 4.5))
    axes = figure.subplots()
    for index, devices in enumerate(sorted(forced)):
        where = f"{devices} device{'s' if devices > 1 else ''}" + (" (forced)" * forced[devices])
        for colour, width in enumerate(widths):
            points = sorted(
                (row["games_per_update"], row["games_per_second"])
                for row in measured
                if (row["width"], row["devices"]) == (width, devices)
            )
            if points:
                xs, ys = zip(*points, strict=True)
                axes.plot(xs, ys, marker="o", color=f"C{colour}", label=f"width {width}, {where}",
                          linestyle=styles[index % len(styles)])  # fmt: skip
    label_throughput_axes(axes, title)
    if measured:
        axes.legend(fontsize="small")
    return _laid_out(figure)


def label_throughput_axes(axes: Axes, title: str) -> None:
    """Log-log axes of training games per second against games per update, titled."""
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("games per update (B)")
    axes.set_ylabel("training games per second")
    axes.set_title(title)
    axes.grid(alpha=0.3, which="both")


def _laid_out(figure: Figure) -> Figure:
    # Laid out once here rather than at save time, so an inline notebook view matches the PNG.
    figure.tight_layout()
    return figure


def save_figure(figure: Figure, path: str | Path, dpi: int = DPI) -> Path:
    """Write `figure` to `path` as a 256-colour PNG at `dpi`; returns the path.

    A plot's flat colours and their anti-aliased edges fit a 256-colour palette with no visible
    change, at about half the bytes of matplotlib's RGBA PNG: the figures committed beside
    results stay small.
    """
    from PIL import Image  # matplotlib's own dependency

    path = Path(path)
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=dpi, format="png")
    image = Image.open(buffer).convert("RGB")
    palette = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    with replaced_whole(path) as partial:  # its folder made; whole or the old file
        palette.save(partial, format="PNG", optimize=True)
    return path


def report_figures(
    summary: dict, records: GameRecords, optimal_records: GameRecords | None
) -> dict[str, Figure]:
    """The evaluation report's figures by PNG file name (what `write_report` saves)."""
    return {
        "score_histogram.png": score_histogram_figure(records, optimal_records),
        "category_scores.png": category_scores_figure(summary),
        "first_category.png": first_category_figure(summary),
    }


def training_scalar_figure(
    curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str, y_label: str
) -> Figure:
    """A logged training scalar against training games, one line per run (`curves` maps a label
    to its games and values, already averaged over seeds and smoothed)."""
    figure = Figure(figsize=(7, 4))
    axis = figure.subplots()
    for label, (games, values) in curves.items():
        axis.plot(games, values, label=label)
    axis.set_xlabel("training games")
    axis.set_ylabel(y_label)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    return _laid_out(figure)


def final_scores_figure(scores: dict[str, tuple[float, float]], title: str) -> Figure:
    """Final mean score of each run as a bar with its +-1 standard error (a study's grid)."""
    labels = list(scores)
    means = np.array([scores[label][0] for label in labels])
    errors = np.array([scores[label][1] for label in labels])
    figure = Figure(figsize=(max(6.0, 0.6 * len(labels) + 2), 4.5))
    axes = figure.subplots()
    positions = np.arange(len(labels))
    axes.bar(positions, means, yerr=errors, capsize=3, color=AGENT_COLOR)
    # Zoom on the range the runs span: differences of a few points are what a study shows.
    low, high = float((means - errors).min()), float((means + errors).max())
    margin = max(1.0, 0.15 * (high - low))
    axes.set_ylim(low - margin, high + margin)
    axes.set_xticks(positions, labels, rotation=30, ha="right")
    axes.set_ylabel("final mean score (± s.e.)")
    axes.set_title(title)
    axes.grid(axis="y", alpha=0.3)
    return _laid_out(figure)


def final_vs_games_figure(
    series: dict[str, list[tuple[int, float, float]]],
    title: str,
    references: dict[str, float] | None = None,
) -> Figure:
    """Final mean score (± 1.96 standard errors) against a run's training games, log2 axis:
    one line per series (`series` maps a label to (games, mean, stderr) points); `references`
    maps a label to a horizontal line (the optimum, a ceiling)."""
    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    for colour, (label, points) in enumerate(series.items()):
        games, means, errors = (np.array(column) for column in zip(*sorted(points), strict=True))
        axes.errorbar(games, means, yerr=1.96 * errors, marker="o", capsize=3, color=f"C{colour}",
                      label=label)  # fmt: skip
    for index, (label, value) in enumerate((references or {}).items()):
        axes.axhline(value, color="gray", linestyle=("--", ":", "-.")[index % 3], linewidth=1,
                     label=f"{label}: {value:.2f}")  # fmt: skip
    axes.set_xscale("log", base=2)
    budgets = sorted({games for points in series.values() for games, _, _ in points})
    axes.set_xticks(budgets, [f"{games / 1e6:.1f}M" for games in budgets])
    axes.minorticks_off()
    axes.set_xlabel("training games (log scale)")
    axes.set_ylabel("final mean score (± 1.96 s.e.)")
    axes.set_title(title)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize="small", loc="lower right")
    return _laid_out(figure)


def frontier_figure(
    points: dict[str, tuple[float, float]], title: str, x_label: str, y_label: str
) -> Figure:
    """Runs as points of two scores; the Pareto frontier (no run better in both) joined."""
    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    for label, (x, y) in points.items():
        axes.scatter([x], [y], color=AGENT_COLOR)
        axes.annotate(label, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=8)
    frontier = sorted(
        (x, y)
        for x, y in points.values()
        if not any(ox >= x and oy >= y and (ox, oy) != (x, y) for ox, oy in points.values())
    )
    if len(frontier) > 1:
        axes.plot(*zip(*frontier, strict=True), color=OPTIMAL_COLOR, linestyle="--", linewidth=1)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    return _laid_out(figure)
