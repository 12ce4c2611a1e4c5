"""The environment floor (issue 27): names, legacy configs, and the rollout's determinism."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.config import EnvConfig, FeatureConfig
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.engine import legal_action_mask
from yahtzee_jax.game.rules import OFFICIAL
from yahtzee_jax.runner.configs import from_dict, resolve


def test_each_environment_is_named_once_and_says_what_it_can_do():
    """The one table of ids (`envs.ENV_IDS`) names every environment for the run configs and
    the suite alike, by a task of the one list (`envs.ENVIRONMENTS`); the solitaire tasks come
    from it; each environment says whether it seats opponents and whether an episode is a
    whole game."""
    from yahtzee_jax.suite.registry import ENV_IDS

    assert ENV_IDS is envs.ENV_IDS
    assert all(cls.name == task for task, cls in envs.ENVIRONMENTS.items())
    assert {task for _, task in ENV_IDS.values()} == set(envs.ENVIRONMENTS)
    assert tuple(envs.SOLITAIRE) == ("game", "single-turn")
    for env_id, task, whole in (
        ("Yahtzee-v0", "game", True),
        ("YatzySingleTurn-v0", "single-turn", False),
    ):
        config = resolve("quick", overrides=[f"env.id={env_id}"])
        env = envs.make(config)
        assert env.name == task and not env.has_opponents and env.whole_games == whole
        assert envs.plays_solitaire_games(config) == whole
    assert env.rules.name == "yatzy"
    config = resolve("a2c-win", overrides=["algo.init_from=''"])
    match = envs.make(config)
    assert match.name == "match" and match.has_opponents and match.num_players == 2
    assert match.whole_games and not envs.plays_solitaire_games(config)
    message = r"env.id='YahtzeeDuel-v0' is not one of: Yahtzee-v0, YahtzeeFreeJoker-v0"
    with pytest.raises(ConfigError, match=message):
        from_dict({"env": {"id": "YahtzeeDuel-v0"}})


def test_a_config_s_env_section_is_what_yahtzee_jax_make_takes():
    """One name: the `env` section of a run config (id, players, opponent, reward) given to
    `yahtzee_jax.make` as it is builds outside code's environment of the same game, seats,
    opponent and reward as the learners' `envs.make`."""
    import dataclasses

    import yahtzee_jax

    section = {"id": "YatzyMatch-v0", "players": 3, "opponent": "greedy1", "reward": "score"}
    config = from_dict({"env": section})
    learners = envs.make(config)
    shared = {key: value for key, value in dataclasses.asdict(config.env).items()
              if key in ("players", "opponent", "reward")}  # fmt: skip
    outside = yahtzee_jax.make(config.env.id, **shared).default_params
    assert (outside.rules, outside.players, outside.opponent, outside.reward) == (
        learners.rules,
        learners.num_players,
        "greedy1",
        learners.reward,
    )
    assert outside.rules.name == "yatzy" and outside.players == 3


def test_a_config_written_before_the_env_section_still_loads():
    """A run directory's config.yaml from before the environment floor: a2c-2p is A2C on the
    match, the two-player fields of `algo` are the env section's; DQN with `opponent: none`
    is the solitaire game and keeps no match settings."""
    old = {
        "algo": {"name": "a2c-2p", "opponent": "greedy2", "reward": "gradient",
                 "opponent_features": False, "opponent_refresh": 7},
        "train": {"task": "game"},
    }  # fmt: skip
    config = from_dict(old, report=lambda note: None)
    assert config.algo.name == "a2c" and config.env.id == "YahtzeeMatch-v0"
    assert (config.env.opponent, config.env.reward) == ("greedy2", "gradient")
    assert (config.env.opponent_features, config.env.opponent_refresh) == (False, 7)
    old_dqn = {"algo": {"name": "dqn", "opponent": "none", "reward": "score"}}
    solitaire = from_dict({**old_dqn, "network": {"dropout": 0.0}})
    assert solitaire.env == from_dict({}).env == EnvConfig(id="Yahtzee-v0")


def test_a_match_field_set_in_algo_today_is_the_envs_or_an_error():
    """`--set algo.reward=...` on today's presets (no `algo.opponent`, which the old form always
    wrote): on a match preset it is `env.reward`, checked as that (it was dropped without a
    word, a bad value too); on a solitaire preset it is refused in one line."""
    assert resolve("dqn-two-player").env.reward == "gradient"
    assert resolve("dqn-two-player", overrides=["algo.reward=naive"]).env.reward == "naive"
    with pytest.raises(ConfigError, match=r"env\.reward='bogus' is not one of"):
        resolve("dqn-two-player", overrides=["algo.reward=bogus"])
    with pytest.raises(ConfigError, match=r"algo\.reward: a match's setting, env\.reward today"):
        resolve("quick", overrides=["algo.reward=naive"])


def test_a_match_without_its_opponents_cannot_play():
    """An environment built to observe with (no seats) refuses to start a match, in one line,
    rather than play one in which the opponents never move."""
    env = envs.make(resolve("a2c-win", overrides=["algo.init_from=''"]))
    with pytest.raises(ValueError, match="needs its opponents' seats"):
        env.init(jax.random.split(jax.random.key(0), 2), env.init_task(None))


def _random_policy(observation, keys):
    mask = jax.vmap(lambda card: legal_action_mask(card, OFFICIAL))(observation)
    bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(keys)
    return jax.vmap(uniform_legal_action)(mask, bits), None


@pytest.mark.parametrize("env_class", [envs.Game, envs.SingleTurn])
def test_an_episode_depends_only_on_its_own_key(env_class):
    """Episode i of a batch plays the same dice and choices alone, in a batch of 5 or at
    another position: the rollout derives everything from the episode's key."""
    env = env_class(OFFICIAL, FeatureConfig())
    keys = envs.episode_keys(jax.random.key(9), 0, 5)

    def play(batch):
        return envs.rollout(env, _random_policy, batch, None, lambda o, a, n, e: a)

    final, actions, rewards = jax.jit(play)(keys)
    alone = jax.jit(play)(keys[3:4])
    np.testing.assert_array_equal(actions[:, 3], alone[1][:, 0])
    np.testing.assert_array_equal(rewards[:, 3], alone[2][:, 0])
    np.testing.assert_array_equal(final.scores[3], alone[0].scores[0])
    shuffled = jax.jit(play)(keys[::-1])
    np.testing.assert_array_equal(actions[:, 3], shuffled[1][:, 1])
    assert actions.shape[0] == env.episode_length
    assert np.all(final.terminated)
