"""`yahtzee-jax evaluate`: the artifacts it writes and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from yahtzee_jax.commands.cli import main
from yahtzee_jax.evaluation.records import GameRecords, play_games
from yahtzee_jax.evaluation.reports import evaluate, reference_path
from yahtzee_jax.files import written_checked
from yahtzee_jax.game.rules import RULE_VARIANTS
from yahtzee_jax.runner.checkpointing import resolve_agent
from yahtzee_jax.solver.value_table import solve

SUMMARY_KEYS = {
    "agent", "rules", "games", "seed", "score", "upper_bonus_rate", "yahtzee_rate",
    "mean_yahtzee_bonuses", "share_at_least_250", "p_score_at_least", "category_means",
    "turns", "first_category", "optimal", "seconds", "games_per_second",
}  # fmt: skip
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache holding 'optimal' reference games for (plain, 200 games, seed 0).

    They are random games under another seed: the test checks the plumbing, not the optimum.
    """
    cache = tmp_path / "cache"
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(cache))
    plain = RULE_VARIANTS["plain"]
    solve(plain)  # the value table the games' key names (half a second)
    reference = play_games(resolve_agent("random", plain), 200, seed=99)
    path = reference_path(plain, 200, 0)
    path.parent.mkdir(parents=True)
    with written_checked(path, ".tmp.npz") as partial:
        reference.save(partial)
    return cache


def test_evaluate_random_writes_json_markdown_and_pngs(tmp_path, cache_dir, capsys) -> None:
    """200 random games: the terminal table, summary.json (also at --json), report.md, 3 PNGs,
    the cached reference games as the optimal column, and the play program kept in the cache's
    traces/ for the next process (`evaluation.stored_traces`)."""
    out = tmp_path / "report"
    json_path = tmp_path / "summary.json"
    argv = ["evaluate", "random", "--games", "200", "--rules", "plain", "--seed", "0",
            "--out", str(out), "--json", str(json_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "P(score >= n)" in printed and "% of optimal" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS
    assert json.loads(json_path.read_text()) == summary
    assert (summary["agent"], summary["rules"], summary["games"]) == ("random", "plain", 200)
    assert summary["optimal"]["games"] == 200 and summary["optimal"]["seed"] == 99
    assert set(summary["optimal"]["percent_of_optimal"]) == set(summary["category_means"])
    markdown = (out / "report.md").read_text()
    for name in ("score_histogram.png", "category_scores.png", "first_category.png"):
        assert (out / name).read_bytes().startswith(PNG_MAGIC)
        assert f"]({name})" in markdown
    assert len(list((cache_dir / "traces").glob("play_batch-*.jaxexport"))) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "nobody"], "unknown agent 'nobody'; choose one of: optimal, greedy1"),
        (["evaluate", "random", "--games", "0"], "at least 1 (got 0)"),
        (["evaluate", "random", "--rules", "house"], "unknown rules 'house'"),
        (["evaluate", "missing/checkpoint"], "checkpoint"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(argv, message, capsys) -> None:
    """Unknown agent, N < 1, unknown rules, unreadable checkpoint: exit 2, one stderr line."""
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("yahtzee-jax evaluate: error:")
    assert message in err


def test_directory_without_checkpoint_is_one_line_error(tmp_path, capsys) -> None:
    """An existing directory holding no checkpoint: exit 2 with the checkpoint error."""
    assert main(["evaluate", str(tmp_path), "--games", "10", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checkpoint" in err and str(tmp_path) in err


def test_resolve_builtin_agents_by_name() -> None:
    """'greedy2' under plain rules is the solver's level-2 greedy agent for those rules."""
    agent = resolve_agent("greedy2", "plain")
    assert (agent.name, agent.rules) == ("greedy2", RULE_VARIANTS["plain"])


def test_optimal_agent_games_become_the_reference(tmp_path) -> None:
    """2,000 optimal games under plain rules (solved into a private cache, ~20 s): mean within 4
    standard errors of the solved 245.8708; no optimal column beside itself; the games are
    cached as the reference that greedy1's evaluation then reads back."""
    plain = RULE_VARIANTS["plain"]
    agent = resolve_agent("optimal", plain, cache_dir=tmp_path)
    summary = evaluate(agent, 2000, seed=5, out_dir=tmp_path / "report", progress=False,
                       cache_dir=tmp_path)  # fmt: skip
    assert abs(summary["score"]["mean"] - 245.8707745141) < 4 * summary["score"]["stderr"]
    assert summary["optimal"] is None
    cached = GameRecords.load(reference_path(plain, 2000, 5, tmp_path))
    assert cached.total.mean() == summary["score"]["mean"]
    greedy = evaluate(resolve_agent("greedy1", plain), 2000, seed=5, progress=False,
                      cache_dir=tmp_path)  # fmt: skip
    assert greedy["optimal"]["score"] == summary["score"]  # read back from the cache
