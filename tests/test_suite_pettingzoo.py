"""The PettingZoo adapter: `api_test` on the AEC match (2 and 3 seats), `parallel_api_test` on
the round-at-a-time match, and what a whole match pays each seat."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test

from yahtzee_jax.envs import core
from yahtzee_jax.suite.pettingzoo_env import YahtzeeAEC, YahtzeeParallel, env, parallel_env


def test_pettingzoo_api_test_passes_on_the_aec_match():
    """PettingZoo's own acceptance test, on two-seat Yahtzee (win) and three-seat Yatzy (score)."""
    api_test(env(), num_cycles=100)
    api_test(YahtzeeAEC("YatzyMatch-v0", players=3, reward="score"), num_cycles=100)


def test_pettingzoo_render_test_passes(capsys):
    """PettingZoo's render test on the "ansi" mode (a line of each seat's total) and on
    "human", which prints that line and returns None."""
    render_test(env, custom_tests={"ansi": lambda text: text.startswith("player_0: ")})
    assert "player_0: " in capsys.readouterr().out


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


# What an outside client meets, written against PettingZoo's API alone (`reset`, `agent_iter`,
# `last`, `step`, the dict observation's "action_mask").
CHANCE = 44  # Yahtzee's last score action: chance


def test_an_illegal_action_raises_naming_the_agent_and_the_legal_ones():
    """At player_0's first roll (keeps 0-31 legal): 45, 100, -1, 44.9, chance (44) and None each
    raise a ValueError of one line naming player_0, the action and "legal actions now: 0-31",
    and nothing moves: the match then runs to its end, 2 x 39 legal decisions."""
    match = env(reward="score")
    match.reset(seed=0)
    for action in (45, 100, -1, 44.9, CHANCE, None):
        with pytest.raises(ValueError) as error:
            match.step(action)
        message = str(error.value)
        assert f"illegal action {action!r} for player_0" in message and "\n" not in message
        assert "legal actions now: 0-31" in message
    assert match.agent_selection == "player_0"
    decisions = 0
    for _ in match.agent_iter():
        obs, _, terminated, truncated, _ = match.last()
        if terminated or truncated:
            match.step(None)
            continue
        match.step(int(np.flatnonzero(obs["action_mask"])[-1]))
        decisions += 1
    assert decisions == 2 * 39


def test_a_step_before_reset_raises():
    """`step` before `reset` raises PettingZoo-style `ResetNeeded`, a ValueError, not an
    AttributeError or an assert."""
    for match in (env(), parallel_env()):
        with pytest.raises(ValueError, match="reset"):
            match.step({"player_0": 0} if isinstance(match, YahtzeeParallel) else 0)


def test_the_aec_match_outside_its_steps_answers_in_one_line():
    """`observe` and `last` before `reset`, an agent that is not one, a step after every agent
    took its dead step, `opponent=` and a render mode it lacks: each a ValueError saying what
    to do, where they were an AttributeError, "'player_9' is not in list", a KeyError, a
    "multiple values" TypeError and a silent None ("human" was taken and drew nothing: it
    prints the "ansi" line now) (found by a review session)."""
    match = env(players=2)
    for call in (lambda: match.observe("player_0"), match.last):
        with pytest.raises(ValueError, match="call reset"):
            call()
    match.reset(seed=0)
    with pytest.raises(ValueError, match="'player_9' is not an agent of this match"):
        match.observe("player_9")
    for _agent in match.agent_iter():
        observation, _, terminated, truncated, _ = match.last()
        done = terminated or truncated
        match.step(None if done else int(np.flatnonzero(observation["action_mask"])[0]))
    with pytest.raises(ValueError, match="every agent has left: call reset"):
        match.step(0)
    with pytest.raises(ValueError, match="every seat of a PettingZoo match is an agent"):
        env(opponent="greedy1")
    with pytest.raises(ValueError, match="render_mode='rgb_array': this env renders ansi, human"):
        parallel_env(players=2, render_mode="rgb_array")


def test_terminate_forfeits_the_match_as_terminate_illegal_wrapper_does():
    """``illegal_action="terminate"``, "score" reward: player_0 and player_1 each keep, keep and
    score chance (r0, r1 points); then player_0 plays chance at its first roll: every agent is
    terminated, player_0's reward is -r0 (its return 0) and player_1's 0 (its return r1)."""
    match = env(reward="score", illegal_action="terminate")
    match.reset(seed=1)
    returns = dict.fromkeys(match.possible_agents, 0.0)
    script = [31, 31, CHANCE, 31, 31, CHANCE, CHANCE]
    for agent in match.agent_iter():
        _, reward, terminated, truncated, _ = match.last()
        returns[agent] += reward
        match.step(None if terminated or truncated else script.pop(0))
    assert not script and not match.agents
    assert returns["player_0"] == 0.0 and returns["player_1"] >= 5


def test_a_mask_blind_loop_ends_within_its_limit():
    """Always action 0 (reroll all), blind to the mask: under "terminate" the match ends at
    player_0's first score decision, its third step; under "noop" always chance is refused and
    every agent is truncated after 156 steps (twice the match's 2 x 39 decisions)."""
    for params, limit in (({"illegal_action": "terminate"}, 3), ({"illegal_action": "noop"}, 156)):
        match = env(**params)
        match.reset(seed=2)
        steps, action = 0, 0 if limit == 3 else CHANCE
        for _agent in match.agent_iter():
            _, _, terminated, truncated, _ = match.last()
            if terminated or truncated:
                assert (terminated, truncated) == ((True, False) if limit == 3 else (False, True))
                match.step(None)
                continue
            match.step(action)
            steps += 1
            assert steps <= 1000, "the match never ended"
        assert steps == limit


def test_the_parallel_match_checks_every_action_before_any_moves():
    """Parallel: a missing action for a live agent and an out-of-range one raise naming the
    agent and move nothing; under "terminate" player_1's chance at its first roll ends the
    match at once, -1 for player_1 and 0 for player_0 (the "win" reward)."""
    match = parallel_env()
    match.reset(seed=3)
    with pytest.raises(ValueError, match="illegal action None for player_1"):
        match.step({"player_0": 0})
    with pytest.raises(ValueError, match="illegal action 45 for player_0"):
        match.step({"player_0": 45, "player_1": 0})
    for _ in range(2):  # decisions 1 and 2: nothing moved, so the third is a score decision
        obs, *_ = match.step({"player_0": 31, "player_1": 31})
    assert not any(obs[agent]["action_mask"][:32].any() for agent in obs)
    match = parallel_env(illegal_action="terminate")
    match.reset(seed=3)
    _, rewards, terminations, truncations, _ = match.step({"player_0": 31, "player_1": CHANCE})
    assert rewards == {"player_0": 0.0, "player_1": -1.0} and all(terminations.values())
    assert not any(truncations.values()) and match.agents == []
