"""experiments/joint_endgame_speed.py on Yacht: the joint endgame solved by this tree and by
the commit given, side by side, and the record of the run."""

from __future__ import annotations

import json

import pytest
from scripts import load_experiment_script


@pytest.mark.slow  # an experiment script; both solves stay fast in test_joint_endgame.py
def test_the_script_times_both_solves_and_compares_their_tables(tmp_path):
    """Against HEAD (the same module, read back from git): both solves timed, the tables the
    same to the bit, Yacht's 42 classes, and the command, commit and machine recorded."""
    script = load_experiment_script("joint_endgame_speed")
    out = tmp_path / "speed.json"
    assert script.main(["--rules", "yacht", "--before", "HEAD", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["rules"] == "yacht" and result["classes"] == 42 and result["identical"]
    assert result["before"]["revision"] == "HEAD" and result["before"]["seconds"] > 0
    assert result["after"]["seconds"] > 0
    assert result["machine"]["commit"] and result["machine"]["cpu_count"] >= 1
