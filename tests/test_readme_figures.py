"""experiments/check_readme_figures.py: the README's results table equals its artifacts, and the
checker fails on a changed figure, an unchecked number, a row without a spec, a missing path and a
file the row does not name (each a copy of the real README with one thing changed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from scripts import EXPERIMENTS, load_experiment_script

ROOT = EXPERIMENTS.parent
CHECK = load_experiment_script("check_readme_figures")
SPEC = EXPERIMENTS / "readme_figures.yaml"
SPECS = yaml.safe_load(SPEC.read_text())["rows"]
README = (ROOT / "README.md").read_text()
A2C_ROW = "| 1. A2C, 1M games: **241.78 ± 0.18** (the paper: 241.78)"


def problems(readme: str, specs: list | None = None) -> list[str]:
    """The checker's problems for a README text against the spec (the real one by default)."""
    return CHECK.check(readme, SPECS if specs is None else specs)[0]


def test_the_readme_table_equals_its_artifacts() -> None:
    """Every row of the real README's results table has a spec row and every figure agrees, and
    the README is the short manual issue 65 asks for: at most 250 lines, at most 15 rows."""
    assert problems(README) == []
    assert len(CHECK.results_rows(README)) == len(SPECS) <= 15
    assert len(README.splitlines()) <= 250


def test_the_a2c_row_is_read_from_its_summary() -> None:
    """The first row's 241.78 is the summary's final mean, read here without the checker."""
    summary = json.loads((ROOT / "docs/learners/gpu_h100/paper-a2c-1m/summary.json").read_text())
    assert f"{summary['final']['score']['mean']:.2f}" == "241.78"
    assert A2C_ROW in README


def test_a_changed_figure_fails() -> None:
    """241.79 in place of the artifact's 241.78462 is reported with the file and key."""
    changed = README.replace(A2C_ROW, A2C_ROW.replace("**241.78", "**241.79"))
    spec = [dict(s, figures=[dict(f) for f in s.get("figures", [])]) for s in SPECS]
    spec[0]["figures"][0]["text"] = "241.79"
    found = problems(changed, spec)
    assert len(found) == 1 and "241.79 != 241.785" in found[0] and "final.score.mean" in found[0]


def test_a_number_without_a_check_fails() -> None:
    """A decimal added to a row with no figure or unverified entry for it is reported."""
    changed = README.replace(A2C_ROW, A2C_ROW + ", 1.5 % better")
    assert any("number 1.5 in the row" in p for p in problems(changed))


def test_a_figure_missing_from_its_row_fails() -> None:
    """A spec figure whose text the row no longer holds is reported."""
    changed = README.replace(A2C_ROW, A2C_ROW.replace(" ± 0.18", ""))
    assert any("figure 0.18 is not in the row" in p for p in problems(changed))


def test_a_row_without_a_spec_and_a_stale_spec_fail() -> None:
    """A new artifact cell has no spec row; the spec row of the old cell has no README row."""
    old = "| `docs/dqn/run/summary.json` |"
    changed = README.replace(old, "| `docs/dqn/summary.json` |")
    found = problems(changed)
    assert any("no spec row" in p for p in found)
    assert any("has no README row" in p for p in found)


def test_a_missing_path_and_an_unnamed_file_fail() -> None:
    """An artifact cell naming a path that does not exist, and a figure read from a file the
    cell does not name, are each reported."""
    spec = [dict(s) for s in SPECS]
    spec[0] = dict(spec[0], artifact="`docs/learners/gpu_h100/paper-a2c-1m/nothing.json`")
    changed = README.replace(
        "| `docs/learners/gpu_h100/paper-a2c-1m/summary.json` |",
        "| `docs/learners/gpu_h100/paper-a2c-1m/nothing.json` |",
    )
    assert any("does not exist" in p for p in problems(changed, spec))
    cell = "`docs/learners/gpu_h100/paper-a2c-1m/summary.json`, `docs/dqn/run/summary.json`"
    figure = {"text": "241.78", "file": "docs/dqn/run/summary.json", "key": "final_eval.mean"}
    row = ["A2C 241.78", "cmd", "H100", "`docs/learners/gpu_h100/paper-a2c-1m/summary.json`"]
    assert "not named" in CHECK.check_row(row, {"artifact": cell, "figures": [figure]})[0]


def test_a_skipped_row_is_listed_with_its_reason() -> None:
    """A spec row with skip: REASON is not checked, and the reason is returned."""
    spec = [dict(SPECS[0], skip="no artifact yet"), *SPECS[1:]]
    found, skipped = CHECK.check(README, spec)
    assert found == [] and len(skipped) == 1 and skipped[0].endswith("no artifact yet")


@pytest.mark.parametrize(
    ("value", "text", "agrees"),
    [
        (0.1805, "0.18", True),
        (0.185, "0.18", True),  # half a unit: either rounding of a tie is accepted
        (0.1851, "0.18", False),
        (12741.8, "12,742", True),
        (328.47, "329", False),
        (20.3410, "20.3", True),
    ],
)
def test_printed_precision(value: float, text: str, agrees: bool) -> None:
    """A value agrees with a printed figure within half a unit of its last digit."""
    assert CHECK.agrees(value, text) is agrees


def test_keys_select_list_elements_and_read_gnu_time(tmp_path: Path) -> None:
    """`a=b&c=d` picks the one list element with both fields; `@elapsed` is h:mm:ss in seconds."""
    rows = [{"w": 1, "b": 2, "v": 3.0}, {"w": 1, "b": 4, "v": 5.0}]
    assert CHECK.lookup({"rows": rows}, "rows.w=1&b=4.v") == 5.0
    with pytest.raises(CHECK.SpecError):
        CHECK.lookup({"rows": rows}, "rows.w=1.v")  # two elements match
    text = "\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.5\n"
    assert CHECK.lookup(text, "@elapsed") == 3723.5
