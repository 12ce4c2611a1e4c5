"""Many runs in one program: a population of members trained by one vmapped chunk.

Members may differ only in `train.seed` and in the config fields declared `dynamic` (see
`config.dynamic`: the learning-rate schedule, and the actor-critic learners' discount, GAE
lambda, loss weights, entropy schedule and PPO's clip range). Everything else (network,
algorithm, batch, budget) is one template config, so the population has a single static
structure and is compiled once: `jax.vmap` over the members' stacked `TrainState`s of the same
guarded chunk a single run compiles (`chunk.chunk_function`), the purejaxrl pattern. The host
loop is the one every session runs (`loop.train_members`); a single run is its population of
one, with an unvmapped program.

How the dynamic scalars get into the unchanged learner code: the fields that differ between
members travel as a pytree of [N] float32 arrays beside the states. Inside the vmapped function
a member config is the template with those fields replaced by its member's traced values
(`dynamic_fields.traced_replace`: the concrete member configs were checked before compiling),
and the usual `Context` is made from it, so the algorithms and schedules read plain traced
values, as rejax's hyperparameters are plain pytree fields. A field that a learner also tests
to skip work (`dynamic(..., branches=True)`: shaping off at weight 0) names the value that
skips it, its default, and the learner asks `config.takes_default`; members that differ in
such a field may not have one at that value (`varying_fields` refuses it before compiling), so
a traced value always takes the other path. Fields that are equal across members stay Python
numbers, so their fast paths (TD(0) targets for lambda 0, ...) are kept. The seed only chooses
a member's initial state (built on the host) and its evaluation games.

On the host every member is an ordinary run directory (config.yaml, evals.jsonl, TensorBoard
scalars, checkpoints, final_eval, summary.json): `evaluate`, plots and the experiment runner see
no difference from a run trained alone. A resume restores every member at the newest update
they all have a checkpoint for (`loop.restore_members`). The divergence guard works per member
inside the chunk; when one member diverges the whole population stops, naming it. A population
runs on one device in one process (no data-parallel mesh).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.algorithms.algorithm import TrainState, make_context
from yahtzee_jax.config import Config, cheap_path_value, check_seed, require
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.parallel import data_mesh
from yahtzee_jax.runner.chunk import chunk_function
from yahtzee_jax.runner.configs import parse_override
from yahtzee_jax.runner.dynamic_fields import is_dynamic, traced_replace
from yahtzee_jax.runner.loop import Hook
from yahtzee_jax.runner.session import train_session

SEED_FIELD = ("train", "seed")  # differs between members on the host only
MAX_MEMBERS = 1024  # members of one population (one vmapped program on one device)


def _fields(config: Config) -> dict[tuple[str, str], Any]:
    return {
        (section, key): value
        for section, values in config.to_dict().items()
        for key, value in values.items()
    }


def _is_dynamic(config: Config, section: str, key: str) -> bool:
    return is_dynamic(getattr(config, section), key)


def varying_fields(configs: Sequence[Config]) -> list[tuple[str, str]]:
    """The dynamic fields whose values differ between members (the traced ones).

    Raises a one-line `ConfigError` naming the first other field that differs."""
    if not configs:
        raise ConfigError("a population needs at least one member")
    template = configs[0]
    template_fields = _fields(template)
    varying = []
    for config in configs[1:]:
        if config.algo.name != template.algo.name:
            raise ConfigError(
                f"population members must share algo.name ({template.algo.name} != "
                f"{config.algo.name})"
            )
        for name, value in _fields(config).items():
            if value == template_fields[name] or name == SEED_FIELD:
                continue
            if not _is_dynamic(template, *name):
                raise ConfigError(
                    f"population members may differ only in train.seed and dynamic scalars; "
                    f"they differ in {'.'.join(name)} ({template_fields[name]} vs {value})"
                )
            if name not in varying:
                varying.append(name)
    for name in varying:
        _check_branch(configs, *name)
    return sorted(varying)


def _check_branch(configs: Sequence[Config], section: str, key: str) -> None:
    """Refuse members that differ in a branching field with one at its cheaper path's value:
    traced, the field must mean the other path for every member."""
    cheap = cheap_path_value(getattr(configs[0], section), key)
    values = [getattr(getattr(config, section), key) for config in configs]
    if cheap is not None and cheap in values:
        raise ConfigError(
            f"{section}.{key} == {cheap} picks a code path and is not the same for every member "
            f"({', '.join(map(str, values))}); train those in separate populations"
        )


def population_key(config: Config) -> tuple:
    """What members of one population share: the config without its seed and dynamic fields."""
    return tuple(
        (name, value)
        for name, value in _fields(config).items()
        if name != SEED_FIELD and not _is_dynamic(config, *name)
    )


def member_values(configs: Sequence[Config], fields: Sequence[tuple[str, str]]) -> dict:
    """The varying fields' values as [N] float32 arrays (the vmapped pytree)."""
    return {
        ".".join(name): jnp.asarray(
            [getattr(getattr(config, name[0]), name[1]) for config in configs], jnp.float32
        )
        for name in fields
    }


def member_config(template: Config, values: dict[str, jax.Array]) -> Config:
    """The template with each varying field replaced by its traced value in `values`."""
    sections: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        section, key = name.split(".")
        sections.setdefault(section, {})[key] = value
    changes = {
        section: traced_replace(getattr(template, section), **fields)
        for section, fields in sections.items()
    }
    return traced_replace(template, **changes)


def make_population_chunk(configs: Sequence[Config], num_updates: int, frozen: Any = None):
    """Jitted `(states, values) -> (states, metrics, failure)`: the single-run chunk vmapped
    over the members; every output gains a leading member axis. `frozen` is the members'
    `Context.frozen` (distill's teacher: no field of it may vary, so one serves them all)."""
    template = configs[0]

    def member(state: TrainState, values: dict[str, jax.Array], step: jax.Array):
        context = make_context(member_config(template, values))._replace(frozen=frozen)
        return chunk_function(context, num_updates, freeze_counter=False)(state.replace(step=step))

    # Members train in lockstep, so one unbatched update counter serves them all: a condition
    # on it (the exact KL at evaluation updates, DQN's target sync) stays a `lax.cond` under
    # vmap instead of becoming a select that computes both branches.
    members = jax.vmap(member, in_axes=(0, 0, None))
    return jax.jit(lambda states, values: members(states, values, states.step[0]))


def stack(trees: Sequence[Any]) -> Any:
    """Members' pytrees stacked on a new leading axis."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def unstack(tree: Any, index: int) -> Any:
    """Member `index` of a stacked pytree."""
    return jax.tree.map(lambda leaf: leaf[index], tree)


class Population:
    """A population's device program (`loop.Program`): the members' states stacked, the chunk
    vmapped over them with each member's varying dynamic fields."""

    def __init__(self, configs: Sequence[Config]) -> None:
        train_config = configs[0].train
        if data_mesh(train_config.devices, envs.episodes_per_update(configs[0])) is not None:
            raise ConfigError("a population trains on one device; set train.devices=1")
        self.configs = list(configs)
        self.values = member_values(configs, varying_fields(configs))
        from yahtzee_jax.runner.checkpointing import load_run  # orbax: only when training

        self.contexts = [make_context(config, load_run) for config in configs]

    def device_state(self, states: list[TrainState]) -> Any:
        """The members' states stacked on a leading member axis."""
        return stack(states)

    def compile(self, length: int, state: Any) -> Callable[[Any], Any]:
        """The vmapped chunk of `length` updates, compiled, with the members' values bound."""
        frozen = self.contexts[0].frozen
        chunk = make_population_chunk(self.configs, length, frozen)
        compiled = chunk.lower(state, self.values).compile()
        return lambda state: compiled(state, self.values)

    def member(self, tree: Any, index: int) -> Any:
        """Member `index`'s slice of a stacked state, metrics or failure codes."""
        return unstack(tree, index)


# --------------------------------------------------------------------------------------------
# Members on the command line
# --------------------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """`0,1,2` (or a range `0-3`, i.e. 0,1,2,3) as a list of distinct seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise ConfigError(f"--population-seeds {text!r} must look like 0,1,2 or 0-3") from None
        for seed in (first, last):
            check_seed("--population-seeds", seed)
        require(last >= first, f"--population-seeds {text!r}: the range {part.strip()} goes down")
        # counted before the range is built: `0-4000000000` would fill the memory
        require(
            len(seeds) + last - first + 1 <= MAX_MEMBERS,
            f"--population-seeds {text!r} names more than {MAX_MEMBERS} members",
        )
        seeds += range(first, last + 1)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"--population-seeds {text!r} must name distinct seeds")
    return seeds


def parse_sweeps(texts: Sequence[str]) -> list[list[str]]:
    """`section.key=V1,V2` options as lists of `--set` overrides (their product is the grid)."""
    sweeps = []
    for text in texts:
        name, sep, values = text.partition("=")
        parse_override(f"{name}=0")  # checks the section.key shape
        parts = [value.strip() for value in values.split(",") if value.strip()]
        if not sep or not parts:
            raise ConfigError(f"--sweep {text!r} must look like section.key=V1,V2")
        sweeps.append([f"{name.strip()}={value}" for value in parts])
    return sweeps


def member_label(overrides: Sequence[str]) -> str:
    """A member's directory name from its sweep values, e.g. `lr=0.001` (as experiments)."""
    label = ", ".join(
        f"{name.rpartition('.')[2]}={value}"
        for name, _, value in (text.partition("=") for text in overrides)
    )
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", label)


def plan_members(
    out_dir: Path, seeds: Sequence[int], sweeps: Sequence[Sequence[str]]
) -> list[tuple[Path, list[str]]]:
    """(member directory, overrides) of every sweep combination and seed: OUT/LABEL/seedS, or
    OUT/seedS without a sweep."""
    count = len(seeds) * functools.reduce(operator.mul, map(len, sweeps), 1)
    require(count <= MAX_MEMBERS, f"{count} population members; at most {MAX_MEMBERS}")
    members = []
    for combination in itertools.product(*sweeps):
        base = out_dir / member_label(combination) if combination else out_dir
        for seed in seeds:
            members.append((base / f"seed{seed}", [*combination, f"train.seed={seed}"]))
    return members


def train_population(
    configs: Sequence[Config | None],
    run_dirs: Sequence[str | Path],
    resume: bool | Sequence[bool] = False,
    progress: bool = True,
    final_eval: bool = True,
    hook: Hook | None = None,
) -> list[dict[str, Any]]:
    """Train (or resume) the members `configs[i]` into `run_dirs[i]` as one population;
    returns each member's run summary (the same as `train.train` writes).

    `resume` is one flag for all or one per member; a resumed member's config may be None
    (its saved config is used) or differ from it outside `session.FIXED_ON_RESUME`. `hook` is
    called at each of the loop's `loop.HOOK_POINTS`.
    """
    run_dirs = [Path(run_dir) for run_dir in run_dirs]
    if len(configs) != len(run_dirs) or not run_dirs:
        raise ConfigError("a population needs one run directory per member")
    if len({run_dir.resolve() for run_dir in run_dirs}) != len(run_dirs):
        raise ConfigError("population members need distinct run directories")
    if jax.process_count() > 1:
        raise ConfigError("a population trains in one process; drop --distributed")
    resumes = [resume] * len(run_dirs) if isinstance(resume, bool) else list(resume)
    names = list(map(str, run_dirs))
    return train_session(
        configs,
        run_dirs,
        resumes,
        Population,
        progress=progress,
        final_eval=final_eval,
        resume_hint="the same command and --resume",
        hook=hook,
        summary_extras=[
            {"population": {"size": len(run_dirs), "member": member, "run_dirs": names}}
            for member in range(len(run_dirs))
        ],
    )


def describe(configs: Sequence[Config]) -> str:
    """One line: the population's size and the fields its members differ in."""
    names = [".".join(name) for name in varying_fields(configs)]
    seeds = sorted({config.train.seed for config in configs})
    return (
        f"population of {len(configs)} (seeds {', '.join(map(str, seeds))}"
        + (f"; varying {', '.join(names)}" if names else "")
        + ")"
    )
