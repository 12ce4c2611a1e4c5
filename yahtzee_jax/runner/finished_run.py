"""A finished run's results, read back from its folder: the run's `summary.json` and its final
evaluation's own report, in a run directory or in the copy a `results/` folder keeps.

The plotting and collecting scripts read runs through this, so a run that has not finished,
or whose files were damaged, is answered in one line the same way everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yahtzee_jax.errors import UserError

SUMMARY_FILE = "summary.json"
FINAL_EVAL_DIR = "final_eval"
# The final evaluation's report where a results/ folder keeps it beside the run's summary.
FINAL_REPORT_COPY = "final_eval_summary.json"


@dataclass(frozen=True)
class FinishedRun:
    """A finished run's summary and its final evaluation's report ({} where none was kept)."""

    directory: Path
    summary: dict[str, Any]
    report: dict[str, Any]

    @property
    def games(self) -> int:
        """The games the run trained on."""
        return int(self.summary["games"])

    @property
    def final_eval(self) -> dict[str, Any]:
        """The final evaluation as the summary records it (mean, stderr, games, ...)."""
        return self.summary["final_eval"]

    @property
    def final_eval_seed(self) -> int | None:
        """The seed of the final evaluation's games, where its report names one."""
        seed = self.report.get("seed")
        return None if seed is None else int(seed)


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """A JSON object from `path`; a one-line UserError naming `what` it should have been."""
    path = Path(path)
    try:
        content = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: not {what} ({error})") from None
    if not isinstance(content, dict):
        raise UserError(f"{path}: not {what} (a JSON {type(content).__name__})")
    return content


def read_finished_run(run_dir: str | Path, *, required: bool = True) -> FinishedRun | None:
    """The finished run in `run_dir`. A run without a summary, or whose summary has no final
    evaluation yet, is refused in one line (None when not `required`); damaged files always."""
    run_dir = Path(run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.exists() and not required:
        return None
    summary = read_json_object(path, "a finished run's summary")
    if "final_eval" not in summary:
        if not required:
            return None
        raise UserError(f"{path}: the run has not finished (no final evaluation yet)")
    try:
        int(summary["games"])
        float(summary["final_eval"]["mean"]), float(summary["final_eval"]["stderr"])
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path}: not a finished run's summary ({error!r})") from None
    report: dict[str, Any] = {}
    for candidate in (run_dir / FINAL_EVAL_DIR / SUMMARY_FILE, run_dir / FINAL_REPORT_COPY):
        if candidate.is_file():
            report = read_json_object(candidate, "a final evaluation's summary")
            if not isinstance(report.get("seed", 0), int | None):
                raise UserError(f"{candidate}: not a final evaluation's summary (its seed)")
            break
    return FinishedRun(run_dir, summary, report)
