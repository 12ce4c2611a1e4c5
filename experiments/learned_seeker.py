"""The learned target-seeker (issue 63): fit its network to the target tables, then play matches.

Usage:
  python experiments/learned_seeker.py fit --out DIR [--rules official] [--epochs 8]
      [--hidden-size 512] [--layers 3] [--lr 1e-3] [--batch-size 1024] [--seed 0]
      [--turn-balance 0] [--logit-scale 1] [--holdout 0.05] [--resume]
  python experiments/learned_seeker.py errors DIR [DIR ...] [--out FILE]
  yahtzee-jax match DIR --games 100000 --seed 14    (and `tournament`, `play --against DIR`)

`fit` reads both target tables of the rules (the teacher: solved into the cache when missing),
fits `algorithms.target_rows_fit.RowsFit` and writes DIR/params.msgpack (the network, not
committed: megabytes), DIR/summary.json (the hyperparameters, each epoch's training loss and
held-out errors, the errors over every state's rows, which play reads, and the machine) and
DIR/curve.png. `--holdout 0` trains on every state (play reads them all) and measures the curve
on a training sample. `errors` prints (`--out`: writes) fits' errors over every state's rows
and those of their rows averaged. The commands that take a trained run take DIR and play the
network by the target-seeker's rule, reading no solver table (`tests/test_learned_seeker.py`
builds it with every table loader raising).

Each finished epoch is written to DIR/fit-progress.msgpack (parameters, optimizer state, curve),
so an interrupted fit loses at most the epoch it was in: the same command with `--resume`
continues it and ends with the parameters of the fit run whole. The file goes once the fit is
written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from yahtzee_jax.algorithms.target_rows_fit import (
    RowsFit,
    fit_rows,
    inputs_of,
    load_fit,
    predicted_rows,
    prediction_errors,
    row_errors,
    row_owners,
    save_fit,
    teacher_rows,
)
from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.errors import UserError
from yahtzee_jax.files import write_json
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.solver.states import filled_count
from yahtzee_jax.solver.target_layout import target_layout
from yahtzee_jax.solver.target_table import target_tables

# The fit's options on the command line (`RowsFit`'s fields).
HYPERPARAMETERS = ("hidden_size", "layers", "lr", "batch_size", "epochs", "seed")
HYPERPARAMETERS += ("turn_balance", "logit_scale", "holdout")
PROGRESS = "fit-progress.msgpack"  # each finished epoch's state, until the fit is written


def fit_command(args: argparse.Namespace) -> None:
    """Fit the network and write its parameters, curve and summary."""
    rules = get_rules(args.rules)
    fit = RowsFit(**{name: getattr(args, name) for name in HYPERPARAMETERS})
    if not 0 <= fit.holdout < 1:
        raise UserError(f"--holdout must lie in [0, 1), not {fit.holdout}")
    out = Path(args.out)
    progress = check_progress(out, args.resume)
    record = script_record()
    started = time.perf_counter()
    states, rows, inputs, turns = teacher(rules)
    print(
        f"{len(states):,} rows of {rules.name} read in {time.perf_counter() - started:.0f} s",
        flush=True,
    )

    measured = "held-out" if fit.holdout else "training-sample"

    def report(entry: dict) -> None:
        left = entry["seconds"] / entry["epoch"] * (fit.epochs - entry["epoch"])
        print(
            f"epoch {entry['epoch']}: loss {entry['train_loss']:.3e}, {measured} rms T "
            f"{entry['target_rms']:.2e} (max {entry['target_max']:.3f}), E "
            f"{entry['expected_rms']:.2e} (max {entry['expected_max']:.3f}), worst turn "
            f"{entry['target_worst_turn_rms']:.2e} / {entry['expected_worst_turn_rms']:.2e}, "
            f"{entry['seconds']:.0f} s, about {left:.0f} s left",
            flush=True,
        )

    params, curve = fit_rows(fit, inputs, rows, turns, report, progress)
    # what play reads: every state's rows (the held-out ones included)
    every_state = row_errors(params, fit.network(), inputs, rows, turns)
    print(f"every state: {every_state}", flush=True)
    save_fit(
        out,
        fit,
        params,
        {
            "rules": rules.name,
            "states": len(states),
            "features": int(inputs[0].shape[1]),
            "teacher": "the solver's target and expected target tables (solver.target_table)",
            "curve": curve,
            "curve_measured_on": "held-out states" if fit.holdout else "a training sample",
            "every_state": every_state,
            "wall_s": time.perf_counter() - started,
            "machine": record,
        },
    )
    plot_curve(curve, out / "curve.png", measured)
    progress.unlink()


def teacher(
    rules: Rules,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Every distinct row's owner (mask, upper, flag), its T and E rows from the solver's tables
    (solved into the cache when missing), the network's inputs of it and its boxes filled."""
    layout = target_layout(rules)
    states = row_owners(layout)
    rows = teacher_rows(
        target_tables(rules, policy="target").flat,
        target_tables(rules, policy="expected").flat,
        layout,
        states,
    )
    return states, rows, inputs_of(states, rules), filled_count(rules)[states[:, 0]]


def errors_command(args: argparse.Namespace) -> None:
    """Print (and with --out write) each fit's errors over every state's rows, the rows play
    reads, and those of the fits' rows averaged."""
    fits = [load_fit(folder) for folder in args.fits]
    names = {summary["rules"] for _, _, summary in fits}
    if len(names) != 1:
        raise UserError(f"the fits were fit to different rules: {', '.join(sorted(names))}")
    rules = get_rules(names.pop())
    record = script_record()
    states, rows, inputs, turns = teacher(rules)
    report: dict = {"rules": rules.name, "states": len(states), "fits": {}, "machine": record}
    # the fits' rows summed, to average: only for several (a copy of every row, 1.8 GB official)
    total = np.zeros_like(rows) if len(fits) > 1 else None
    for folder, (fit, params, _) in zip(args.fits, fits, strict=True):
        predicted = predicted_rows(params, fit.network(), inputs)
        report["fits"][folder] = prediction_errors(predicted, rows, turns)
        if total is not None:
            total += predicted
        print(f"{folder}: {report['fits'][folder]}", flush=True)
    if total is not None:
        report["mean_of_rows"] = prediction_errors(total / len(fits), rows, turns)
        print(f"the fits' rows averaged: {report['mean_of_rows']}", flush=True)
    if args.out:
        write_json(Path(args.out), report)


def check_progress(out: Path, resume: bool) -> Path:
    """The progress file of a fit in `out`; one line when `--resume` finds none to continue
    or a fit without it would overwrite one."""
    progress = out / PROGRESS
    if resume and not progress.exists():
        raise UserError(f"{out} holds no unfinished fit to resume (no {PROGRESS})")
    if not resume and progress.exists():
        raise UserError(f"{out} holds an unfinished fit: pass --resume to continue it")
    out.mkdir(parents=True, exist_ok=True)
    return progress


def plot_curve(curve: list[dict], path: Path, measured: str) -> None:
    """Both rows' root-mean-square errors by epoch, on the states `measured` names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    epochs = [entry["epoch"] for entry in curve]
    for head in ("target", "expected"):
        axis.plot(epochs, [entry[f"{head}_rms"] for entry in curve], marker="o", label=head)
    axis.set(xlabel="epoch", ylabel=f"{measured} rms error of a row entry", yscale="log")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)  # pyplot keeps a figure until closed (a test after it found it open)


def main() -> None:
    """Run `fit` or `errors`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    fit = sub.add_parser("fit", help="fit the network to the target tables")
    fit.add_argument("--out", required=True)
    fit.add_argument("--rules", default="official")
    fit.add_argument("--resume", action="store_true", help="continue the unfinished fit in --out")
    defaults = RowsFit()
    for name in HYPERPARAMETERS:
        flag = "--" + name.replace("_", "-")
        fit.add_argument(flag, type=type(getattr(defaults, name)), default=getattr(defaults, name))
    errors = sub.add_parser("errors", help="the errors of fits over every state's rows")
    errors.add_argument("fits", nargs="+", metavar="DIR", help="folders `fit` wrote")
    errors.add_argument("--out", help="write the errors there as JSON")
    args = parser.parse_args()
    try:
        (fit_command if args.what == "fit" else errors_command)(args)
    except UserError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
