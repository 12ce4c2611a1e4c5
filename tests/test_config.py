"""Config resolution, validation messages and the `train` CLI's handling of bad values."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from yahtzee_jax.commands import cli
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.configs import available_presets, from_dict, parse_override, resolve

RESULTS = Path(__file__).resolve().parent.parent / "results"


def test_presets_resolve_and_paper_preset_matches_the_paper():
    """Both presets load; paper-a2c is Tables 6-7's A2C column (1M games, B = 20, width 600)."""
    assert {"paper-a2c", "quick"} <= set(available_presets())
    paper = resolve("paper-a2c")
    assert paper.train.total_games == 1_000_000 and paper.train.games_per_update == 20
    assert paper.train.rules == "official"
    assert (paper.network.hidden_size, paper.network.activation) == (600, "swish")
    assert (paper.optim.lr, paper.optim.max_grad_norm, paper.algo.value_coef) == (1e-4, 1.0, 0.005)
    assert paper.train.total_updates == 50_000 and paper.train.eval_interval == 500
    assert resolve("quick").network.hidden_size < 600


def test_overrides_apply_in_order_and_coerce_numbers():
    """--set values are YAML: 3e-4 is a float, 250000 an int, true a bool; later wins."""
    config = resolve(
        "paper-a2c", overrides=["optim.lr=3e-4", "train.total_games=250000", "optim.lr=2e-4"]
    )
    assert config.optim.lr == 2e-4
    assert config.train.total_updates == 12_500
    assert config.train.chunk_updates == 25  # divides the 125-update eval interval
    assert parse_override("network.layer_norm=false") == {"network": {"layer_norm": False}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"optim": {"lr": -1.0}}, "optim.lr=-1.0 must be > 0"),
        ({"network": {"activation": "tanh"}}, "network.activation='tanh' is not one of"),
        ({"train": {"rules": "house"}}, "train.rules='house' is not one of"),
        ({"train": {"games_per_update": "many"}}, "train.games_per_update='many' must be of type"),
        ({"optim": {"learning_rate": 1.0}}, "unknown config key optim.learning_rate"),
        ({"model": {}}, "unknown config section(s): model"),
        ({"algo": {"entropy_hold": 0.5, "entropy_anneal": 0.6}}, "entropy_anneal must be <= 1"),
    ],
)
def test_bad_values_are_rejected_with_a_clear_message(data, message):
    """Each bad value raises ConfigError naming the key, on one line."""
    with pytest.raises(ConfigError) as error:
        from_dict(data)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_cli_reports_a_bad_value_in_one_line_before_compiling(capsys, tmp_path):
    """`train --set optim.lr=-1` exits 2 with one stderr line and creates no run directory."""
    out = tmp_path / "run"
    status = cli.main(["train", "--preset", "quick", "--set", "optim.lr=-1", "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.strip() == "yahtzee-jax train: error: optim.lr=-1.0 must be > 0"
    assert not out.exists()


def test_cli_rejects_unknown_preset_and_malformed_set(capsys):
    """Unknown preset names the choices; a --set without '=' says how it should look."""
    assert cli.main(["train", "--preset", "nope"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
    assert cli.main(["train", "--set", "optim.lr"]) == 2
    assert "must look like section.key=value" in capsys.readouterr().err


def test_fast_cpu_preset_is_paper_a2c_narrower_faster_and_longer():
    """fast-cpu changes paper-a2c only in width, learning rate, games and evaluation spacing."""
    paper, fast = resolve("paper-a2c"), resolve("fast-cpu")
    expected = dataclasses.replace(
        paper,
        train=dataclasses.replace(paper.train, total_games=1_700_000, eval_fraction=0.05),
        network=dataclasses.replace(paper.network, hidden_size=256),
        optim=dataclasses.replace(paper.optim, lr=4e-4),
    )
    assert fast == expected


def test_fast_gpu_preset_is_td_planner_with_a_larger_batch_fewer_games_and_a_higher_lr():
    """fast-gpu changes td-planner only in games, batch, evaluation spacing and learning rate."""
    planner, fast = resolve("td-planner"), resolve("fast-gpu")
    expected = dataclasses.replace(
        planner,
        train=dataclasses.replace(
            planner.train, total_games=153_600, games_per_update=256, eval_fraction=0.1
        ),
        optim=dataclasses.replace(planner.optim, lr=2e-3),
    )
    assert fast == expected
    assert fast.train.total_updates == 600


@pytest.mark.parametrize(
    ("preset", "run", "overrides"),
    [
        ("ppo-252", "cpu-ppo-w256-6.5m-seed7", ["train.seed=7"]),
        (
            "ppo-252-polish",
            "cpu-ppo-w256-6.5m-seed7-polish",
            ["train.seed=7", "algo.init_from=runs/cpu-ppo-w256-6.5m-seed7"],
        ),
    ],
)
def test_the_252_presets_are_the_configs_of_the_committed_runs(preset, run, overrides):
    """ppo-252 and its polish are, field for field, the configs the seed-7 runs behind the
    README's 252.19 wrote (committed under results/), given the run's seed and warm start."""
    written = yaml.safe_load((RESULTS / run / "config.yaml").read_text())
    assert dataclasses.asdict(resolve(preset, None, overrides)) == written


def test_paper_preset_differs_from_the_defaults_only_where_the_code_did():
    """The dataclass defaults follow the paper's tables; the paper-a2c preset departs from them
    only in the three values taken from the paper's code (entropy and min LR ratio)."""
    defaults = from_dict({})
    expected = dataclasses.replace(
        defaults,
        algo=dataclasses.replace(defaults.algo, entropy_roll_start=0.1, entropy_score_end=0.01),
        optim=dataclasses.replace(defaults.optim, min_lr_ratio=0.05),
    )
    assert resolve("paper-a2c") == expected


def test_a_prime_evaluation_interval_is_noted():
    """601 updates between evaluations (a prime) shrink a 25-update chunk to 1: a one-line
    note names the interval; 600 (divisible by 25) keeps the chunk and gives no note."""
    prime = from_dict({"train": {"total_games": 601, "games_per_update": 1, "eval_fraction": 1.0}})
    assert prime.train.chunk_updates == 1
    assert "601-update evaluation interval" in prime.train.chunk_note()
    even = from_dict({"train": {"total_games": 600, "games_per_update": 1, "eval_fraction": 1.0}})
    assert even.train.chunk_updates == 25 and even.train.chunk_note() is None
