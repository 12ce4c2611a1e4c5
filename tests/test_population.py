"""Many runs in one program: a population of two trains as the two runs alone do, resumes
exactly after an interruption, leaves ordinary run directories, and refuses members that
differ in anything but the seed and dynamic scalars with one line."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from faults import FaultInjector

import yahtzee_jax.runner.population
from yahtzee_jax.algorithms import algorithm_names, get_algorithm
from yahtzee_jax.commands.cli import main
from yahtzee_jax.config import cheap_path_value, takes_default
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.checkpointing import load_agent, load_checkpoint
from yahtzee_jax.runner.configs import from_dict
from yahtzee_jax.runner.dynamic_fields import is_dynamic, traced_replace
from yahtzee_jax.runner.loop import HOOK_POINTS
from yahtzee_jax.runner.population import population_key, train_population, varying_fields
from yahtzee_jax.runner.runlog import read_evals, read_scalars
from yahtzee_jax.runner.single_run import train

TINY = {
    "train": {
        "total_games": 24,
        "games_per_update": 4,
        "updates_per_chunk": 3,
        "eval_fraction": 0.5,  # evaluations (and checkpoints) after updates 3 and 6
        "eval_games": 8,
        "final_eval_games": 0,
    },
    "network": {"hidden_size": 16, "trunk_layers": 1, "upper_head": True},
}


def _config(seed: int, **changes: dict) -> object:
    data = {section: dict(values) for section, values in TINY.items()}
    data["train"]["seed"] = seed
    for section, values in changes.items():
        data.setdefault(section, {}).update(values)
    return from_dict(data)


# Different seeds, learning rates, entropy coefficients and schedule, GAE lambda, upper-bonus
# curricula and shaping weights (the curriculum's start and the shaping weight are branches: both
# members take the curriculum's and the shaping's path, each with its own traced value).
SHAPED = {"upper_regression_weight": 0.5}
MEMBERS = [
    _config(0, algo={"bonus_scale_start": 2.0, "shaping_weight": 0.1, **SHAPED}),
    _config(
        1,
        optim={"lr": 3e-3},
        algo={
            "entropy_roll_start": 0.1,
            "entropy_hold": 0.2,
            "gae_lambda": 0.5,
            "bonus_scale_start": 4.0,
            "bonus_scale_hold": 0.1,
            "shaping_weight": 0.5,
            **SHAPED,
        },
    ),
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The second member trained alone (the one that differs from the defaults in the most
    fields; the first alone waits for test-slow: 6-9 s), both together, and together with an
    interruption after the first evaluation followed by a resume; and the points the
    uninterrupted population's loop passed (its hook's calls)."""
    root = tmp_path_factory.mktemp("population")
    alone = root / "alone" / "m1"
    train(MEMBERS[1], alone, progress=False)
    together = [root / "together" / f"m{member}" for member in range(2)]
    points: list[tuple[str, int]] = []
    train_population(MEMBERS, together, progress=False, hook=lambda *point: points.append(point))
    resumed = [root / "resumed" / f"m{member}" for member in range(2)]
    ctrl_c = FaultInjector("before_eval:1:SIGINT")  # Ctrl-C during the first evaluation
    with pytest.raises(KeyboardInterrupt):
        train_population(MEMBERS, resumed, progress=False, hook=ctrl_c)
    assert [load_checkpoint(run_dir)[2] for run_dir in resumed] == [3, 3]
    train_population([None, None], resumed, resume=True, progress=False)
    return alone, together, resumed, points


def _params(run_dir) -> list[np.ndarray]:
    import jax

    return jax.tree.leaves(load_checkpoint(run_dir)[0]["params"])


def assert_member_is_the_run_alone(single: Path, member: Path) -> None:
    """Parameters, every logged scalar and the evaluations agree within float tolerance."""
    for a, b in zip(_params(single), _params(member), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    single_scalars, member_scalars = read_scalars(single), read_scalars(member)
    assert set(single_scalars) == set(member_scalars)
    for tag, points in single_scalars.items():
        steps, values = zip(*points, strict=True)
        member_steps, member_values = zip(*member_scalars[tag], strict=True)
        assert steps == member_steps, tag
        np.testing.assert_allclose(values, member_values, rtol=1e-3, atol=1e-4, err_msg=tag)
    rows = [(row["update"], row["games"]) for row in read_evals(single / "evals.jsonl")]
    assert rows == [(row["update"], row["games"]) for row in read_evals(member / "evals.jsonl")]


def test_population_of_two_equals_the_runs_alone(trained) -> None:
    """The second member's parameters, every logged scalar and the evaluations agree with its
    run alone within float tolerance."""
    alone, together, *_ = trained
    assert_member_is_the_run_alone(alone, together[1])


@pytest.mark.slow  # a third training compile; the second member's is checked fast above
def test_the_first_member_equals_its_run_alone(trained, tmp_path) -> None:
    """The first member (the curriculum's and the shaping's other values) likewise."""
    _, together, *_ = trained
    train(MEMBERS[0], tmp_path / "alone", progress=False)
    assert_member_is_the_run_alone(tmp_path / "alone", together[0])


def test_resumed_population_is_exact(trained) -> None:
    """Interrupted after the first evaluation and resumed: the same parameters, scalars and
    evaluations, bit for bit, as the uninterrupted population."""
    _, together, resumed, _ = trained
    for member, again in zip(together, resumed, strict=True):
        for a, b in zip(_params(member), _params(again), strict=True):
            np.testing.assert_array_equal(a, b)
        assert read_scalars(member) == read_scalars(again)
        keys = ("update", "games", "num_games", "mean", "std")
        rows = [{key: row[key] for key in keys} for row in read_evals(member / "evals.jsonl")]
        again_rows = [{key: row[key] for key in keys} for row in read_evals(again / "evals.jsonl")]
        assert rows == again_rows and len(rows) == 2


def _entries(run_dir) -> list[str]:
    """A run directory's entries, the TensorBoard file's time stamp left out."""
    return sorted(re.sub(r"tfevents\.\d+", "tfevents", path.name) for path in run_dir.iterdir())


def test_member_is_an_ordinary_run_directory(trained) -> None:
    """Same files as a run trained alone, its own config, and loadable as an agent."""
    alone, together, *_ = trained
    for member, config in zip(together, MEMBERS, strict=True):
        assert _entries(member) == _entries(alone)
        assert load_checkpoint(member)[1] == config
        assert load_agent(str(member)).name.startswith("a2c:")


def test_the_loop_calls_its_hook_at_every_point_in_order(trained) -> None:
    """Two chunks of 3 updates, each ending at an evaluation: every point once per chunk."""
    *_, points = trained
    assert points == [(point, update) for update in (3, 6) for point in HOOK_POINTS]


def test_members_may_differ_only_in_seed_and_dynamic_scalars() -> None:
    """A network or algorithm difference is refused naming the field; dynamic ones are traced."""
    assert varying_fields(MEMBERS) == [
        ("algo", "bonus_scale_hold"),
        ("algo", "bonus_scale_start"),
        ("algo", "entropy_hold"),
        ("algo", "entropy_roll_start"),
        ("algo", "gae_lambda"),
        ("algo", "shaping_weight"),
        ("optim", "lr"),
    ]
    assert population_key(MEMBERS[0]) == population_key(MEMBERS[1])
    with pytest.raises(ConfigError, match=r"differ in network\.hidden_size \(16 vs 32\)"):
        varying_fields([MEMBERS[0], _config(1, network={"hidden_size": 32})])
    with pytest.raises(ConfigError, match=r"share algo\.name"):
        varying_fields([MEMBERS[0], _config(0, algo={"name": "reinforce"})])
    with pytest.raises(ConfigError, match=r"differ in optim\.max_grad_norm"):
        varying_fields([MEMBERS[0], _config(0, optim={"max_grad_norm": 0.0})])


def test_a_code_path_that_members_would_take_differently_is_refused() -> None:
    """Shaping off (weight 0, its cheap path) for one member and on for another cannot be one
    program: refused in one line naming the field and the values, before anything compiles.
    Members that all shape, or all alike, are one program."""
    off = _config(0, algo={"shaping_weight": 0.0, **SHAPED})
    on = _config(1, algo={"shaping_weight": 0.5, **SHAPED})
    message = r"^algo\.shaping_weight == 0\.0 picks a code path .* \(0\.0, 0\.5\); train those"
    with pytest.raises(ConfigError, match=message):
        varying_fields([off, on])
    with pytest.raises(ConfigError, match=r"algo\.bonus_scale_start == 1\.0 picks a code path"):
        varying_fields([_config(0, algo={"bonus_scale_start": 3.0}), _config(1)])
    assert varying_fields([off, _config(1, algo={"shaping_weight": 0.0, **SHAPED})]) == []
    assert varying_fields(MEMBERS[:1] * 2) == []


def test_a_branching_field_takes_its_cheap_path_only_at_its_default_as_a_number() -> None:
    """`takes_default` is what the learners' branch sites ask: True for the Python default,
    False for any other value and for a traced one (a population member's, never the default)."""
    import jax

    algo = from_dict({}).algo
    assert cheap_path_value(algo, "shaping_weight") == 0.0
    assert cheap_path_value(algo, "bonus_scale_start") == 1.0
    assert cheap_path_value(algo, "gae_lambda") is None  # dynamic, but no branch
    assert takes_default(algo, "shaping_weight") and takes_default(algo, "bonus_scale_start")
    shaped = dataclasses.replace(algo, shaping_weight=0.25, upper_regression_weight=1.0)
    assert not takes_default(shaped, "shaping_weight")

    def traced(weight):
        section = traced_replace(algo, shaping_weight=weight)
        return jax.numpy.float32(takes_default(section, "shaping_weight"))

    assert float(jax.jit(traced)(jax.numpy.float32(0.0))) == 0.0
    with pytest.raises(TypeError, match="gae_lambda is not declared"):
        takes_default(algo, "gae_lambda")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--population-seeds", "0,0"], "must name distinct seeds"),
        (["--population-seeds", "a"], "must look like 0,1,2 or 0-3"),
        (["--sweep", "network.hidden_size=16,32"], "they differ in network.hidden_size"),
        (["--sweep", "algo.gae_lambda"], "must look like section.key=V1,V2"),
        (["--sweep", "algo.gae_lambda=2,0.5"], "algo.gae_lambda=2.0 must be in [0, 1]"),
        (["--sweep", "algo.bonus_scale_start=1,2"], "algo.bonus_scale_start == 1.0 picks a code"),
        (["--population-seeds", "0,1", "--distributed"], "drop --distributed"),
    ],
)
def test_bad_population_requests_are_one_line_and_exit_2(extra, message, tmp_path, capsys) -> None:
    """Checked before anything is written into --out."""
    argv = ["train", "--preset", "quick", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_the_exact_kl_stays_a_branch_in_a_population():
    """Members share one unbatched update counter, so the KL's exact-or-sampled `lax.cond`
    (4 games per update, 2 sampled) stays a branch under vmap; a per-member counter would
    batch its predicate and turn it into a select that computes both branches."""
    import jax

    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.runner.population import make_population_chunk, member_values, stack

    states = stack([init_train_state(make_context(config)) for config in MEMBERS])
    values = member_values(MEMBERS, varying_fields(MEMBERS))
    program = str(jax.make_jaxpr(make_population_chunk(MEMBERS, 2))(states, values))
    assert " cond[" in program


def _config_classes() -> list[type]:
    """Every learner's config section class and its dataclass bases (the `algo` sections)."""
    classes = {get_algorithm(name).config_class for name in algorithm_names()}
    return sorted(
        {base for cls in classes for base in cls.__mro__ if dataclasses.is_dataclass(base)},
        key=lambda cls: cls.__qualname__,
    )


def test_a_field_dynamic_in_a_base_stays_dynamic_where_a_learner_changes_its_default() -> None:
    """A subclass that redeclares a field (PPO's and REINFORCE's defaults) keeps the marker, and
    a branching field the value of its cheap path."""
    for cls in _config_classes():
        for base in cls.__mro__[1:]:
            if not dataclasses.is_dataclass(base):
                continue
            for field in dataclasses.fields(base):
                if is_dynamic(base, field.name):
                    assert is_dynamic(cls, field.name), f"{cls.__qualname__}.{field.name}"
                    cheap = cheap_path_value(base, field.name)
                    assert cheap_path_value(cls, field.name) == cheap, field.name


def test_population_names_no_learners_field() -> None:
    """What may vary is declared on the config classes; population.py reads the markers."""
    source = Path(yahtzee_jax.runner.population.__file__).read_text()
    for cls in _config_classes():
        for field in dataclasses.fields(cls):
            if is_dynamic(cls, field.name):
                assert not re.search(rf"\b{field.name}\b", source), field.name
