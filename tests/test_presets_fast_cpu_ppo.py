"""cpu-ppo-410k (issue 64's fast two-core preset): what it changes from cpu-ppo, and that the
committed runs behind its figures are its config."""

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


@pytest.mark.parametrize(
    ("run", "seed"),
    [
        ("pilot-seed0-w128-410k-lr2.4e-3-bonus8", 0),
        ("cpu-ppo-410k-seed30", 30),
        ("cpu-ppo-410k-seed31", 31),
    ],
)
def test_the_committed_runs_are_the_presets_config(run, seed):
    """The seed-0 pilot that chose the preset (run as cpu-ppo with overrides) and the reporting
    runs on seeds 30 and 31 (run as the preset) wrote, field for field, the config the preset
    resolves to at that seed: the reported figures are the preset's."""
    written = yaml.safe_load((RESULTS / run / "config.yaml").read_text())
    assert resolve("cpu-ppo-410k", None, [f"train.seed={seed}"]) == from_dict(written)
