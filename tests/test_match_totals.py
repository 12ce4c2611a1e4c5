"""Match totals (`evaluation.matches`): the win/draw/loss tally and batches on host threads."""

from __future__ import annotations

import numpy as np
import pytest

from yahtzee_jax.game.rules import OFFICIAL


def test_tally_counts_a_win_only_over_every_opponent_and_a_tie_with_the_best_as_a_draw():
    """Three three-player matches by hand: 10 against (9, 3) wins, 5 against (5, 2) ties the
    best, 7 against (8, 1) loses though it beats one opponent; the rates and the Wilson
    interval are the shared tally of `match` and the training evaluations."""
    from yahtzee_jax.evaluation.matches import tally
    from yahtzee_jax.evaluation.statistics import wilson_interval

    result, counts = tally(np.array([10, 5, 7]), np.array([[9, 3], [5, 2], [8, 1]]))
    np.testing.assert_array_equal(result, [1, 0, -1])
    assert (counts["wins"], counts["draws"], counts["losses"]) == (1, 1, 1)
    assert counts["win_rate"] == counts["draw_rate"] == 1 / 3
    assert counts["win_interval_95"] == list(wilson_interval(1, 3))


@pytest.mark.slow  # the host threads stay fast in test_evaluate.py (the same pool)
def test_match_batches_on_several_host_threads_give_the_same_totals(monkeypatch):
    """Random against greedy1 in 48 two-player matches, batches of 16: on one host thread and
    on three (batches finishing in any order) the same totals, in order."""
    from yahtzee_jax.evaluation import matches
    from yahtzee_jax.runner.checkpointing import resolve_agent

    random, greedy1 = (resolve_agent(name, OFFICIAL) for name in ("random", "greedy1"))
    played = []
    for threads in (1, 3):
        monkeypatch.setattr(matches, "host_threads", lambda threads=threads: threads)
        played.append(matches.match_totals(random, (greedy1,), OFFICIAL, 48, 7, batch_size=16))
    for one, several in zip(*played, strict=True):
        np.testing.assert_array_equal(several, one)
    assert played[0][0].shape == (48,) and played[0][1].shape == (48, 1)
    assert played[0][1].mean() > played[0][0].mean() + 30  # greedy1 (about 105) beats random
