"""The target agent's and the ceiling's command lines: what they refuse, in one line each.

They refuse before any table is loaded (the full tables take half an hour to solve); the
figures they print are checked in `test_target_agent` and `test_ceiling`.
"""

from __future__ import annotations

import pytest

from yahtzee_jax.commands.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "target"], "--target X goes with the target agent"),
        (["evaluate", "optimal", "--target", "200"], "--target X goes with the target agent"),
        (["evaluate", "target", "--target", "-1"], "--target must be >= 0"),
        (["solve", "--players", "3"], "--players and --out go with --ceiling"),
        (["solve", "--out", "x.json"], "--players and --out go with --ceiling"),
        (["solve", "--ceiling", "--targets"], "--ceiling reads the target tables"),
        # it said "solve them with --targets first", yet --ceiling solves missing ones itself
        (["solve", "--ceiling", "--force"], "solve them again with --targets --force"),
        # the one bad value named (one line named all three)
        (["match", "optimal", "--games", "0"], "--games must be >= 1, got 0"),
        (["match", "optimal", "--batch-size", "0"], "--batch-size must be >= 1, got 0"),
        (["match", "optimal", "--players", "1"], "--players must be 2..6, got 1"),
        # taken without a word by a built-in player, which plays alone or not by itself
        (["match", "optimal", "--solitaire"], "--solitaire plays a trained run alone"),
        (["evaluate", "optimal", "--cache-dir", ""], "--cache-dir is empty"),
        (["solve", "--ceiling", "--players", "7"], "--players must be 2..6"),
        (["match", "ceiling", "--opponent", "greedy3"], "ceiling plays against optimal only"),
        (["match", "ceiling", "--endgame-open", "2"], "ceiling is the oracle: it takes no"),
        (["tournament", "target", "optimal", "--games", "10"], "evaluate target --target X"),
    ],
)
def test_bad_target_and_ceiling_commands_are_one_line_errors(argv, message, capsys):
    """Exit status 2 and one line naming the problem."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
