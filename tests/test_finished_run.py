"""Reading a finished run back (`runner.finished_run`): both folder layouts, and a one-line
refusal for every way the files can be missing, unfinished or damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yahtzee_jax.errors import UserError
from yahtzee_jax.runner.finished_run import read_finished_run

FINAL = {"games": 100_000, "mean": 253.75, "std": 59.0, "stderr": 0.19}


def _summary(folder: Path, **fields) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"games": 4096, **fields}))
    return folder


def test_a_run_directory_and_a_results_folder_read_alike(tmp_path):
    """A run directory keeps the final report in final_eval/summary.json, a results/ folder as
    final_eval_summary.json beside the summary: both give the same games, mean and seed."""
    run = _summary(tmp_path / "run", final_eval=FINAL)
    (run / "final_eval").mkdir()
    (run / "final_eval" / "summary.json").write_text('{"seed": 62, "upper_bonus_rate": 0.68}')
    kept = _summary(tmp_path / "results", final_eval=FINAL)
    (kept / "final_eval_summary.json").write_text('{"seed": 62, "upper_bonus_rate": 0.68}')
    for folder in (run, kept):
        finished = read_finished_run(folder)
        assert (finished.games, finished.final_eval["mean"]) == (4096, 253.75)
        assert finished.final_eval_seed == 62 and finished.report["upper_bonus_rate"] == 0.68
    bare = read_finished_run(_summary(tmp_path / "bare", final_eval=FINAL))
    assert bare.report == {} and bare.final_eval_seed is None  # no report kept


def test_an_unfinished_run_is_none_when_allowed_and_refused_otherwise(tmp_path):
    """No summary yet, or a summary without its final evaluation (training ended, the final
    games not played): None for a caller that skips such runs, one line for one that needs it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    training = _summary(tmp_path / "training")
    assert read_finished_run(empty, required=False) is None
    assert read_finished_run(training, required=False) is None
    with pytest.raises(UserError, match="not a finished run's summary"):
        read_finished_run(empty)
    with pytest.raises(UserError, match="has not finished"):
        read_finished_run(training)


@pytest.mark.parametrize(
    ("summary", "report", "refusal"),
    [
        ('{"games": 40', None, "summary.json: not a finished run's summary"),  # cut off
        ("[1, 2]", None, r"summary.json: not a finished run's summary \(a JSON list\)"),
        ('{"games": "many", "final_eval": {}}', None, "not a finished run's summary"),
        (json.dumps({"games": 1, "final_eval": FINAL}), '{"seed": 6', "not a final evaluation"),
        (json.dumps({"games": 1, "final_eval": FINAL}), '{"seed": "six"}', "its seed"),
    ],
)
def test_damaged_files_are_refused_in_one_line_even_where_unfinished_runs_are_skipped(
    tmp_path, summary, report, refusal
):
    """A damaged summary or final report is never taken for an unfinished run (that would hide
    a finished run from a study's table): it is refused in one line naming the file."""
    (tmp_path / "summary.json").write_text(summary)
    if report is not None:
        (tmp_path / "final_eval_summary.json").write_text(report)
    for required in (True, False):
        with pytest.raises(UserError, match=refusal) as refused:
            read_finished_run(tmp_path, required=required)
        assert len(str(refused.value).splitlines()) == 1


def test_a_study_refuses_a_damaged_summary_in_one_line(tmp_path):
    """A study deciding which of its runs to train again (`studies.is_finished`) reads a cut-off
    summary as damaged, in one line naming the file, not as a traceback; a missing one is an
    unfinished run."""
    from yahtzee_jax.commands.studies import is_finished
    from yahtzee_jax.runner.configs import resolve

    config = resolve("quick")
    assert is_finished(tmp_path, config) is False
    (tmp_path / "summary.json").write_text('{"updates": 4')
    with pytest.raises(UserError, match=r"summary\.json: not a run's summary") as refused:
        is_finished(tmp_path, config)
    assert len(str(refused.value).splitlines()) == 1
