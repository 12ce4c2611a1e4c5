"""Yacht, Clubhouse Yacht and Yatzy through the whole stack, with tiny budgets.

Fast: the terminal card with each game's own box names and bonus, the evaluation report's
row for the five-alike box, a learner's network and shaping potential sized from the run's
rules. Slow (compiles per game): every built-in agent evaluated, a tournament, a watched game,
each learner for a couple of updates and a population of two, on each game.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.algorithms import actor_critic
from yahtzee_jax.algorithms.algorithm import make_context
from yahtzee_jax.commands.cli import main
from yahtzee_jax.commands.terminal_text import card_text
from yahtzee_jax.evaluation.reports import report_tables
from yahtzee_jax.game import get_rules
from yahtzee_jax.runner.configs import from_dict, resolve
from yahtzee_jax.runner.population import train_population
from yahtzee_jax.runner.single_run import train

GAMES = ("yacht", "yacht-clubhouse", "yatzy")
TINY = {
    "train": {
        "total_games": 8,
        "games_per_update": 4,
        "updates_per_chunk": 2,
        "eval_fraction": 1.0,
        "eval_games": 4,
        "final_eval_games": 0,
    },
    "network": {"hidden_size": 16, "trunk_layers": 1, "dropout": 0.0},  # dqn needs no dropout
}


def tiny_config(rules: str, algo: str = "a2c", seed: int = 0) -> object:
    """Two updates of four games on `rules` with a 16-wide network."""
    data = {section: dict(values) for section, values in TINY.items()}
    data["train"] |= {"rules": rules, "seed": seed}
    data["algo"] = {"name": algo}
    if algo == "dqn":  # a few small replayed batches, not 64 of 256
        data["algo"] |= {"batch_size": 16, "gradient_steps": 2, "buffer_size": 1024}
    return from_dict(data)


def test_the_card_is_drawn_with_the_games_own_boxes_and_bonus() -> None:
    """Clubhouse's Aces and S. straight, Yatzy's One pair and +50; no row for a Yahtzee bonus
    that the game does not have (official Yahtzee keeps its row)."""
    clubhouse, yatzy = get_rules("yacht-clubhouse"), get_rules("yatzy")
    text = card_text([card(scores={0: 3, 9: 15}, rules=clubhouse)], ["you"], clubhouse)
    assert " 1 Aces" in text and "10 Small straight" in text and "upper bonus (+35)" in text
    assert "bonus  " not in text.replace("upper bonus", "")
    assert text.splitlines()[-1].split() == ["total", "18"]
    text = card_text([card(scores={6: 12}, rules=yatzy)], ["you"], yatzy)
    assert " 7 One pair" in text and "15 Yatzy" in text and "upper bonus (+50)" in text
    assert "Yatzy bonus" not in text
    assert "Yahtzee bonus" in card_text([card()], ["you"], get_rules("official"))


def test_the_report_names_the_five_alike_box_of_each_game() -> None:
    """Yatzy's report has a 'yatzy rate' row and no +100 row; official Yahtzee keeps it."""

    def score_rows(rules: str) -> list[str]:
        summary = json.loads(json.dumps(SUMMARY))
        summary["rules"] = rules
        return [row[0] for row in report_tables(summary, get_rules(rules))[0][2]]

    assert "yatzy rate" in score_rows("yatzy") and "mean +100 bonuses" not in score_rows("yatzy")
    assert "yacht rate" in score_rows("yacht-clubhouse")
    assert {"yahtzee rate", "mean +100 bonuses"} <= set(score_rows("official"))


SUMMARY = {  # the fields `report_tables` reads, for one agent without the optimal comparison
    "agent": "greedy1",
    "rules": "yatzy",
    "games": 2,
    "seed": 0,
    "optimal": None,
    "score": {"mean": 1.0, "stderr": 0.1, "std": 1.0, "median": 1.0, "min": 0, "max": 2},
    "upper_bonus_rate": 0.5,
    "yahtzee_rate": 0.0,
    "mean_yahtzee_bonuses": 0.0,
    "share_at_least_250": 0.0,
    "p_score_at_least": {"50": 0.5},
    "category_means": {"ones": 1.0},
    "turns": [],
    "first_category": {"ones": 1.0},
}


def test_a_learners_network_and_shaping_follow_the_runs_rules() -> None:
    """env.id=Yatzy-v0: 15 score logits on Yatzy's features; the shaping potential of a full
    upper section is Yatzy's +50, and the upper head's target divides by its 63."""
    context = make_context(resolve("quick", overrides=["env.id=Yatzy-v0"]))
    features = jnp.zeros((1, context.env.feature_size()))
    # Shapes only (traced, not compiled): the score head's width is what is checked.
    params = jax.eval_shape(context.network.init, jax.random.key(0), features)
    output = jax.eval_shape(context.network.apply, params, features)
    assert output.score_logits.shape == (1, 15)
    full = actor_critic.potential(jnp.float32(0.0), context.rules)
    assert float(full) == pytest.approx(50.0)
    assert float(actor_critic.potential(jnp.float32(0.0), get_rules("official"))) == 35.0


def test_every_preset_takes_each_game_by_its_env_id() -> None:
    """Any preset on another game's id of its own task (`--set env.id=Yatzy-v0`,
    `YatzyMatch-v0`, ...) builds its run (features and heads from the game's card); only Yuan's
    two-player reward, defined on Yahtzee's 13-box card, refuses in one line. A run whose
    opponent is the optimal agent (a2c-win, td-planner-win) reads a value table that a fresh
    cache would solve (73 s for Yatzy under the tests' compile flags): it is built on Yacht,
    the quickest solve, and only configured on the other games."""
    from yahtzee_jax.envs.tasks import ENV_IDS, env_id
    from yahtzee_jax.errors import ConfigError
    from yahtzee_jax.runner.configs import available_presets

    for preset in available_presets():
        task = ENV_IDS[resolve(preset).env.id][1]
        for rules in GAMES:
            overrides = [f"env.id={env_id(rules, task)}"]
            if preset == "dqn-two-player":  # Yuan's reward reads Yahtzee's box means
                with pytest.raises(ConfigError, match="13-box card"):
                    resolve(preset, overrides=overrides)
                continue
            config = resolve(preset, overrides=overrides)
            if getattr(config.env, "opponent", None) == "optimal" and rules != "yacht":
                assert ENV_IDS[config.env.id] == (rules, task)
                continue
            context = make_context(config)
            assert context.rules.name == rules, preset


@pytest.mark.slow
@pytest.mark.parametrize("rules", GAMES)
def test_every_built_in_agent_is_evaluated_on_the_game(rules, tmp_path, monkeypatch) -> None:
    """optimal, greedy1-3 and random: 32 games each through `evaluate`, summary and report."""
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path / "cache"))
    means = {}
    for agent in ("optimal", "greedy1", "greedy2", "greedy3", "random"):
        out = tmp_path / agent
        argv = ["evaluate", agent, "--rules", rules, "--games", "32", "--out", str(out)]
        assert main([*argv, "--no-progress", "--no-optimal"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["rules"] == rules and summary["games"] == 32
        assert set(get_rules(rules).box_names) <= set(summary["category_means"])
        means[agent] = summary["score"]["mean"]
    assert means["optimal"] > means["greedy1"] > means["random"]


@pytest.mark.slow
@pytest.mark.parametrize("rules", GAMES)
def test_a_tournament_and_a_watched_game(rules, tmp_path, monkeypatch, capsys) -> None:
    """Three agents, 8 games a pair; then `play --watch greedy2` runs a whole game."""
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "tournament"
    argv = ["tournament", "optimal", "greedy2", "random", "--rules", rules, "--games", "8"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    assert list(out.glob("*.json"))
    capsys.readouterr()
    assert main(["play", "--watch", "greedy2", "--rules", rules, "--seed", "1"]) == 0
    text = capsys.readouterr().out
    turns = get_rules(rules).num_turns
    assert f"greedy2, turn {turns}, roll 1" in text and "Game over: greedy2" in text
    title = "Yatzy" if rules == "yatzy" else "Yacht"  # the game's name on its first line
    assert text.startswith(f"{title}, {rules} rules, seed 1")


@pytest.mark.slow
@pytest.mark.parametrize("rules", GAMES)
@pytest.mark.parametrize("algo", ["a2c", "ppo", "reinforce", "dqn"])
def test_each_learner_trains_on_the_game(rules, algo, tmp_path) -> None:
    """Two updates of four games, an evaluation, a checkpoint that plays the game's card."""
    summary = train(tiny_config(rules, algo), tmp_path, progress=False)
    assert summary["updates"] == 2 and np.isfinite(summary["last_eval"]["mean"])


@pytest.mark.slow
@pytest.mark.parametrize("rules", GAMES)
def test_a_population_of_two_trains_on_the_game(rules, tmp_path) -> None:
    """Two seeds in one program, each an ordinary run directory of the game."""
    configs = [tiny_config(rules, seed=seed) for seed in (0, 1)]
    summaries = train_population(configs, [tmp_path / "a", tmp_path / "b"], progress=False)
    assert [summary["updates"] for summary in summaries] == [2, 2]
