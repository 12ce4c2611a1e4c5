"""cpu-ppo-410k and cpu-ppo-3min (issue 64's fast two-core presets): what each changes from the
one it inherits, and that the committed runs behind their figures are their config."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from yahtzee_jax.runner.configs import available_presets, from_dict, resolve

RESULTS = Path(__file__).resolve().parent.parent / "results" / "cpu-ppo-3min"


def test_cpu_ppo_410k_is_cpu_ppo_shorter_with_a_higher_lr_and_a_stronger_curriculum():
    """Half cpu-ppo's 819,200 games, three times its lr 8e-4 and twice its 4x bonus; the rest
    (width 128, B = 256, 128-game minibatches, the curriculum's 40 % hold and 30 % anneal, the
    100,000 final games) is cpu-ppo's."""
    assert "cpu-ppo-410k" in available_presets()
    base, fast = resolve("cpu-ppo"), resolve("cpu-ppo-410k")
    expected = dataclasses.replace(
        base,
        train=dataclasses.replace(base.train, total_games=409_600),
        algo=dataclasses.replace(base.algo, bonus_scale_start=8.0),
        optim=dataclasses.replace(base.optim, lr=2.4e-3),
    )
    assert fast == expected
    assert fast.train.total_updates == 1_600 and fast.train.eval_interval == 80
    assert fast.train.chunk_updates == 20 and fast.train.final_eval_games == 100_000


def test_cpu_ppo_3min_is_410k_in_80_percent_of_the_games_with_32_game_minibatches():
    """327,680 of cpu-ppo-410k's 409,600 games, 32-game minibatches (eight optimizer steps an
    epoch of a 256-game update, not two) and the discount from 0.99 to 1 over the last 30 % of
    the updates; the rest is cpu-ppo-410k's: an evaluation every 64 of its 1,280 updates,
    chunks of 32."""
    base, quick = resolve("cpu-ppo-410k"), resolve("cpu-ppo-3min")
    algo = dataclasses.replace(
        base.algo, games_per_minibatch=32, gamma_hold=0.7, gamma_anneal=0.3, gamma_end=1.0
    )
    expected = dataclasses.replace(
        base, train=dataclasses.replace(base.train, total_games=327_680), algo=algo
    )
    assert quick == expected
    assert quick.train.total_updates == 1_280 and quick.train.eval_interval == 64
    assert quick.train.chunk_updates == 32 and quick.train.final_eval_games == 100_000


# every run before the twenty-ninth session trained with the paper's dropout
DROP = "network.dropout=0.1"
MB64 = "algo.games_per_minibatch=64"  # cpu-ppo-3min as first committed (5a395bf)
# cpu-ppo-3min before the discount's schedule (the twenty-eighth session): 0.99 throughout
FIXED_GAMMA = [DROP, "algo.gamma_hold=1.0", "algo.gamma_anneal=0.0"]


@pytest.mark.parametrize(
    ("preset", "more", "run", "seed"),
    [
        ("cpu-ppo-410k", [DROP], "cpu-ppo-3min/pilot-seed0-w128-410k-lr2.4e-3-bonus8", 0),
        ("cpu-ppo-410k", [DROP], "cpu-ppo-3min/cpu-ppo-410k-seed30", 30),
        ("cpu-ppo-410k", [DROP], "cpu-ppo-3min/cpu-ppo-410k-seed31", 31),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/pilot21-seed0-mb32-328k-lr2.4e-3", 0),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed34", 34),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed35", 35),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed36", 36),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed37", 37),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed38", 38),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/cpu-ppo-3min-seed39", 39),
        ("cpu-ppo-3min", [MB64, *FIXED_GAMMA], "cpu-ppo-3min/pilot21-seed0-mb64-328k-lr2.4e-3", 0),
        ("cpu-ppo-3min", [MB64, *FIXED_GAMMA], "cpu-ppo-3min/mb64-cpu-ppo-3min-seed32", 32),
        ("cpu-ppo-3min", [MB64, *FIXED_GAMMA], "cpu-ppo-3min/mb64-cpu-ppo-3min-seed33", 33),
        ("cpu-ppo-3min", [DROP], "cpu-ppo-3min/pilot28-seed0-gamma-to-1-late", 0),
        ("cpu-ppo-3min", [DROP], "cpu-ppo-3min/cpu-ppo-3min-seed47", 47),
        ("cpu-ppo-3min", [DROP], "cpu-ppo-3min/cpu-ppo-3min-seed48", 48),
        ("cpu-ppo-3min", [DROP], "cpu-ppo-3min/cpu-ppo-3min-seed49", 49),
        ("cpu-ppo-3min", [DROP], "cpu-ppo-3min/cpu-ppo-3min-seed50", 50),
        ("cpu-ppo-3min", FIXED_GAMMA, "cpu-ppo-3min/pilot28-seed0-preset", 0),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/pilot29-seed0-dropout0", 0),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/pilot29-seed1-dropout0", 1),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/pilot29-seed2-dropout0", 2),
        ("cpu-ppo-3min", ["algo.gae_lambda=0.95"], "cpu-ppo-3min/pilot30-gae095/seed0", 0),
        ("cpu-ppo-3min", ["algo.gae_lambda=0.95"], "cpu-ppo-3min/pilot30-gae095/seed1", 1),
        ("cpu-ppo-3min", ["algo.gae_lambda=0.95"], "cpu-ppo-3min/pilot30-gae095/seed2", 2),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/cpu-ppo-3min-seed51", 51),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/cpu-ppo-3min-seed52", 52),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/cpu-ppo-3min-seed53", 53),
        ("cpu-ppo-3min", [], "cpu-ppo-3min/cpu-ppo-3min-seed54", 54),
        ("cpu-ppo", [], "cpu-ppo-seed55", 55),
        ("ppo-250", [], "ppo-250-dropout-seed0/dropout0-mb32", 0),
        ("ppo-250", ["algo.games_per_minibatch=128"], "ppo-250-dropout-seed0/dropout0", 0),
        ("ppo-250", [], "ppo-250-seed21", 21),
        ("ppo-250", [], "ppo-250-seed22", 22),
        ("ppo-250", ["train.total_games=5242880"], "ppo-250-5.2m-seed23", 23),
        ("ppo-250", ["train.total_games=10485760"], "ppo-250-10.5m-seed25", 25),
        ("ppo-250", ["network.critic_trunk=true"], "ppo-250-critic-trunk-seed0", 0),
        ("ppo-250", ["network.critic_trunk=true"], "ppo-250-critic-trunk-seed21", 21),
        (
            "ppo-250",
            ["network.critic_trunk=true", "train.total_games=10485760"],
            "ppo-250-critic-trunk-10.5m-seed26",
            26,
        ),
        ("ppo-253", [], "ppo-253-seed24", 24),
    ],
)
def test_the_committed_runs_are_the_presets_config(preset, more, run, seed):
    """The seed-0 pilots that chose each preset (run with overrides: the 3-minute ones as
    members of populations) and the reporting runs on the held-out seeds (run as the preset)
    wrote, field for field, the config the preset (with `more`) resolves to at that seed: the
    reported figures are the preset's. Paths under results/."""
    written = yaml.safe_load((RESULTS.parent / run / "config.yaml").read_text())
    assert resolve(preset, None, [*more, f"train.seed={seed}"]) == from_dict(written)


def test_ppo_250_is_cpu_ppo_four_times_longer_with_the_discount_to_1():
    """3,276,800 games (four times cpu-ppo's), chunks of 32, 32-game minibatches, and the
    discount from 0.99 to 1 between half and 80 % of the updates; the rest is cpu-ppo's."""
    base, long = resolve("cpu-ppo"), resolve("ppo-250")
    algo = dataclasses.replace(
        base.algo, games_per_minibatch=32, gamma_hold=0.5, gamma_anneal=0.3, gamma_end=1.0
    )
    train = dataclasses.replace(base.train, total_games=3_276_800, updates_per_chunk=32)
    assert long == dataclasses.replace(base, train=train, algo=algo)


def test_ppo_253_is_ppo_250_at_width_256_for_5m_games():
    """ppo-253 is ppo-250 (no dropout, 32-game minibatches, the discount to 1) at ppo-252's
    width 256 and learning rate 4e-4, for 5,242,880 games (20,480 updates of 256)."""
    base, wide, ppo_252 = resolve("ppo-250"), resolve("ppo-253"), resolve("ppo-252")
    assert (ppo_252.network.hidden_size, ppo_252.optim.lr) == (256, 4e-4)
    network = dataclasses.replace(base.network, hidden_size=256)
    optim = dataclasses.replace(base.optim, lr=4e-4)
    train = dataclasses.replace(base.train, total_games=5_242_880)
    assert wide == dataclasses.replace(base, network=network, optim=optim, train=train)
    assert wide.train.total_games // wide.train.games_per_update == 20_480


def test_the_committed_cpu_ppo_run_trained_without_dropout():
    """The reporting run behind the README's 249.58 (`make train`'s preset, seed 55; its config
    is the preset's, above) trained without dropout."""
    written = yaml.safe_load((RESULTS.parent / "cpu-ppo-seed55" / "config.yaml").read_text())
    assert written["network"]["dropout"] == 0.0
