"""Config resolution, validation messages and the `train` CLI's handling of bad values."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from yahtzee_jax import envs
from yahtzee_jax.commands import cli
from yahtzee_jax.commands import train as train_command
from yahtzee_jax.config import EnvConfig, MatchConfig, is_integer
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.runner.configs import (
    available_presets,
    from_dict,
    parse_override,
    preset_data,
    resolve,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS, DOCS, STUDIES = ROOT / "results", ROOT / "docs", ROOT / "yahtzee_jax" / "studies"


def test_presets_resolve_and_paper_preset_matches_the_paper():
    """Both presets load; paper-a2c is Tables 6-7's A2C column (1M games, B = 20, width 600)."""
    assert {"paper-a2c", "quick"} <= set(available_presets())
    paper = resolve("paper-a2c")
    assert paper.train.total_games == 1_000_000 and paper.train.games_per_update == 20
    assert paper.env.id == "Yahtzee-v0"
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
        ({"train": {"task": "duel"}}, "train.task='duel' is not one of: game, single-turn"),
        ({"env": {"id": "Yahtzee-v1"}}, "env.id='Yahtzee-v1' is not one of: Yahtzee-v0, "),
        ({"env": {"id": 5}}, "env.id=5 is not one of: Yahtzee-v0, "),
        (
            {"env": {"players": 2}},
            "unknown config key env.players for env.id=Yahtzee-v0 (takes: no params)",
        ),
        (
            {"env": {"id": "YatzyMatch-v0", "seat": 1}},
            "unknown config key env.seat for env.id=YatzyMatch-v0 (takes: opponent, ",
        ),
        ({"env": {"id": "YahtzeeMatch-v0", "players": 9}}, "env.players=9 must be in 2..6"),
        ({"env": {"id": "YahtzeeMatch-v0", "opponent": "nobody"}}, "env.opponent='nobody'"),
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
        ("ppo-252", "cpu-ppo-w256-6.5m-seed7", ["train.seed=7", "network.dropout=0.1"]),
        (
            "ppo-252-polish",
            "cpu-ppo-w256-6.5m-seed7-polish",
            ["train.seed=7", "network.dropout=0.1", "algo.init_from=runs/cpu-ppo-w256-6.5m-seed7"],
        ),
    ],
)
def test_the_252_presets_are_the_configs_of_the_committed_runs(preset, run, overrides):
    """ppo-252 and its polish are, field for field, the configs the seed-7 runs behind the
    README's 252.19 wrote (committed under results/), given the run's seed and warm start and
    the paper's dropout 0.1 they trained with (cpu-ppo's family dropped it in the twenty-ninth
    session)."""
    written = yaml.safe_load((RESULTS / run / "config.yaml").read_text())
    assert resolve(preset, None, overrides) == from_dict(written)  # written in the old form


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


def test_games_that_are_not_whole_updates_are_noted():
    """200 games in updates of 128 play two whole updates, 256 games: a one-line note says so
    (it was rounded up without a word, found by a review session); 256 games give none."""
    rounded = from_dict({"train": {"total_games": 200, "games_per_update": 128}})
    assert rounded.train.total_updates == 2
    assert "plays 256 games (2 updates)" in rounded.train.rounding_note()
    whole = from_dict({"train": {"total_games": 256, "games_per_update": 128}})
    assert whole.train.rounding_note() is None


def test_the_old_form_names_the_same_environment_as_the_new():
    """A hand-made pair: `train.task: match`, `train.rules: yatzy` and a match's settings (the
    old form, every run directory before issue 66) read as `env: {id: YatzyMatch-v0, ...}`, the
    same config and the same environment, with one note naming the id; a solitaire task of
    the old form drops the match settings it kept and ignored."""
    settings = {"players": 3, "opponent": "greedy1,random", "reward": "score"}
    old = {"train": {"task": "match", "rules": "yatzy", "seed": 4}, "env": settings}
    new = {"train": {"seed": 4}, "env": {"id": "YatzyMatch-v0", **settings}}
    notes: list[str] = []
    config = from_dict(old, notes.append)
    assert config == from_dict(new, notes.append)
    assert notes == [
        "note: read train.task=match, train.rules=yatzy (the old form) as env.id=YatzyMatch-v0"
    ]
    built, expected = envs.make(config), envs.make(from_dict(new))
    assert (type(built), built.rules, built.num_players, built.reward) == (
        type(expected),
        get_rules("yatzy"),
        3,
        "score",
    )
    old_turns = {"train": {"task": "single-turn", "rules": "plain"}, "env": {"players": 2}}
    assert from_dict(old_turns, notes.append).env == EnvConfig(id="YahtzeePlainSingleTurn-v0")
    # an old key laid over a preset's id keeps the rest of it: Yatzy, still a match
    assert resolve("a2c-win", None, ["train.rules=yatzy"]).env.id == "YatzyMatch-v0"


def test_the_old_form_note_is_one_line_printed_once(capsys):
    """Reading an old config twice (a run reads its config more than once) prints its note
    once, on one stderr line."""
    for _ in range(2):
        from_dict({"train": {"rules": "free-joker"}})
    err = capsys.readouterr().err
    assert err == "note: read train.rules=free-joker (the old form) as env.id=YahtzeeFreeJoker-v0\n"


def test_every_saved_run_config_of_the_old_form_still_loads():
    """Each run directory's config.yaml under results/ and docs/ loads: one written in the old
    form with one note, into the environment its train.task and train.rules named; one written
    since in the new form (env.id) with no note, into that id."""
    paths = sorted(RESULTS.rglob("config.yaml")) + sorted(DOCS.rglob("config.yaml"))
    assert len(paths) >= 50
    old_form = 0
    for path in paths:
        written, notes = yaml.safe_load(path.read_text()), []
        config = from_dict(written, notes.append)
        if "rules" not in written["train"]:  # the new form
            assert config.env.id == written["env"]["id"] and notes == [], path
            continue
        old_form += 1
        rules, task = written["train"]["rules"], written["train"]["task"]
        assert envs.ENV_IDS[config.env.id] == (rules, task) and len(notes) == 1, path
    assert old_form >= 50  # the runs of earlier sessions


def test_every_preset_is_in_the_new_form_and_builds_its_environment():
    """No preset or study names its environment the old way (`train.task`, `train.rules`);
    every preset builds the environment of its id, of the id's rule set, and a match preset's
    section holds a match's params."""
    for name in available_presets():
        data = preset_data(name)
        assert not {"task", "rules"} & set(data.get("train", {})), name
        config = resolve(name)
        rules, task = envs.ENV_IDS[config.env.id]
        env = envs.make(config)
        assert (env.name, env.rules) == (task, get_rules(rules)), name
        assert isinstance(config.env, MatchConfig) == env.has_opponents
    for study in STUDIES.glob("*.yaml"):
        assert "train.task" not in study.read_text() and "train.rules" not in study.read_text()


def test_an_integer_is_python_or_numpy_and_never_a_bool():
    """The one predicate the seed, `num_envs` and `make` parameter checks share: Python's and
    NumPy's integers pass; bools (Python counts True as 1), NumPy's bool, floats equal to an
    integer and strings of digits do not."""
    assert all(is_integer(value) for value in (3, -1, 2**40, np.int64(3), np.uint32(7)))
    assert not any(
        is_integer(value) for value in (True, False, np.bool_(True), 3.0, np.float32(3), "3", None)
    )


def test_train_ends_with_what_to_read(tmp_path, monkeypatch, capsys):
    """`train` ends with the final score and its standard error, the report, the learning curve
    and what to run next: a newcomer found only the mean (a review session). The run itself is
    stood in for by the summary it returns (the resumed run's line: `test_checkpoint`)."""
    run = tmp_path / "run"
    summary = {
        "last_eval": {"mean": 240.5, "num_games": 1000},
        "final_eval": {"games": 100_000, "mean": 248.81, "stderr": 0.19, "report": str(run / "f")},
        "learning_curve": str(run / "learning_curve.png"),
    }
    monkeypatch.setattr(train_command.training, "train", lambda *args, **kwargs: summary)
    assert cli.main(["train", "--preset", "quick", "--out", str(run), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "final evaluation: 248.81 +- 0.19 (standard error) over 100,000 games" in out
    assert f"report: {run / 'f' / 'report.md'}" in out
    assert f"learning curve: {run / 'learning_curve.png'}" in out
    assert f"next: yahtzee-jax evaluate {run}, yahtzee-jax play --watch {run}" in out
