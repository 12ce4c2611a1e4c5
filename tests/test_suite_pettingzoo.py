"""The PettingZoo adapter: `api_test` on the AEC match (2 and 3 seats), `parallel_api_test` on
the round-at-a-time match, and what a whole match pays each seat."""

from __future__ import annotations

import numpy as np
from pettingzoo.test import api_test, parallel_api_test, render_test

from yahtzee_jax.envs import core
from yahtzee_jax.suite.pettingzoo_env import YahtzeeAEC, YahtzeeParallel, env, parallel_env


def test_pettingzoo_api_test_passes_on_the_aec_match():
    """PettingZoo's own acceptance test, on two-seat Yahtzee (win) and three-seat Yatzy (score)."""
    api_test(env(), num_cycles=100)
    api_test(YahtzeeAEC("YatzyMatch-v0", players=3, reward="score"), num_cycles=100)


def test_pettingzoo_render_test_passes():
    """PettingZoo's render test on the "ansi" mode: a line of each seat's total."""
    render_test(env, custom_tests={"ansi": lambda text: text.startswith("player_0: ")})


def test_pettingzoo_parallel_api_test_passes():
    """PettingZoo's acceptance test of the parallel API, a whole match long."""
    parallel_api_test(parallel_env(), num_cycles=100)


def play_aec(match: YahtzeeAEC, seed: int) -> tuple[dict[str, float], list[str]]:
    """A whole match of random legal play: (each agent's summed reward, the order of moves)."""
    rng = np.random.default_rng(seed)
    match.reset(seed=seed)
    returns = dict.fromkeys(match.possible_agents, 0.0)
    order = []
    for agent in match.agent_iter():
        obs, reward, terminated, truncated, _ = match.last()
        returns[agent] += reward
        if terminated or truncated:
            match.step(None)
            continue
        others = [a for a in match.agents if a != agent]
        assert all(not match.observe(other)["action_mask"].any() for other in others)
        order.append(agent)
        match.step(rng.choice(np.flatnonzero(obs["action_mask"])))
    return returns, order


def test_a_match_of_turns_pays_each_seat_its_points():
    """Three seats, "score" reward: seats move in turns of three decisions (player_0's turn,
    then player_1's, ...), 39 decisions each, and each seat's rewards add up to its total; only
    the seat on turn has legal actions."""
    match = YahtzeeAEC("YahtzeeMatch-v0", players=3, reward="score")
    returns, order = play_aec(match, seed=5)
    assert order[:9] == ["player_0"] * 3 + ["player_1"] * 3 + ["player_2"] * 3
    assert len(order) == 3 * 39
    totals = np.asarray(core.total_scores(match.state, match.params)).tolist()
    assert [returns[f"player_{seat}"] for seat in range(3)] == totals


def test_a_match_pays_the_winner_one_and_the_loser_minus_one():
    """Two seats, "win" reward: the higher total gets +1 and the other -1 (0 each on a tie)."""
    match = YahtzeeAEC("YahtzeeMatch-v0")
    returns, _ = play_aec(match, seed=2)
    totals = np.asarray(core.total_scores(match.state, match.params))
    expected = np.sign(totals - totals[::-1]).tolist()
    assert [returns["player_0"], returns["player_1"]] == expected


def test_a_parallel_match_takes_every_seat_a_decision_a_step():
    """The parallel match: 39 steps, every seat moving on its own card each step, each seat's
    mask its own (keeps at a keep decision for both), then every agent terminates at once."""
    match = YahtzeeParallel("YahtzeeMatch-v0", reward="score")
    obs, _ = match.reset(seed=1)
    rng = np.random.default_rng(1)
    returns = dict.fromkeys(match.possible_agents, 0.0)
    steps = 0
    while match.agents:
        assert all(obs[agent]["action_mask"][:32].all() == (steps % 3 < 2) for agent in obs)
        actions = {a: rng.choice(np.flatnonzero(obs[a]["action_mask"])) for a in match.agents}
        obs, rewards, terminations, _, _ = match.step(actions)
        returns = {agent: returns[agent] + rewards[agent] for agent in rewards}
        steps += 1
    assert steps == 39 and all(terminations.values())
    totals = np.asarray(core.total_scores(match.state, match.params)).tolist()
    assert list(returns.values()) == totals
