"""A training session over run directories: open them, train, and write what a run leaves.

Every session, a single run (`train.train`) or a population (`population.train_population`),
goes the same way: check each run directory and resolve each member's config (a resumed one
from the run's saved `config.yaml`), build the device program, lock and open every directory
(one writer each, `runlog.RunLock`), run the host loop (`loop.train_members`), then plot each
member's learning curve, run its final evaluation and write its `summary.json`. Each member's
directory is an ordinary run directory whatever the session was.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

from yahtzee_jax import envs
from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.files import write_whole
from yahtzee_jax.runner.configs import (
    apply_overrides,
    from_dict,
    merge,
    read_yaml,
    save_yaml,
)
from yahtzee_jax.runner.finished_run import FINAL_EVAL_DIR, SUMMARY_FILE
from yahtzee_jax.runner.loop import Hook, Program, network_agent, train_members
from yahtzee_jax.runner.runlog import EVALS_FILE, RunLock, read_evals

CONFIG_FILE = "config.yaml"
CURVE_FILE = "learning_curve.png"
FINAL_EVAL_SEED_OFFSET = 2  # the final evaluation's games differ from the periodic ones


def plot_learning_curve(run_dir: str | Path, out_path: str | Path | None = None) -> Path:
    """PNG of the periodic evaluation mean (with +-1 std band) against games played."""
    from yahtzee_jax.evaluation.plots import plot_learning_curves

    run_dir = Path(run_dir)
    rows = read_evals(run_dir / EVALS_FILE)
    if not rows:
        raise ConfigError(f"no evaluations in {run_dir / EVALS_FILE}")
    out_path = Path(out_path) if out_path is not None else run_dir / CURVE_FILE
    return plot_learning_curves(
        {"argmax policy": rows}, out_path, title=f"Learning curve: {run_dir.name}"
    )


# What a resumed run keeps whatever `--set` says: the shapes of its state (the network, the
# learner, DQN's replay buffer), its game and opponents, the meaning of its update counter
# (games per update) and the seed its random streams and evaluation games come from.
FIXED_ON_RESUME = (
    "algo.name",
    "algo.buffer_size",
    "train.seed",
    "train.games_per_update",
    "network.*",
    "env.*",
)


def _is_fixed(field: str) -> bool:
    section = field.split(".")[0]
    return field in FIXED_ON_RESUME or f"{section}.*" in FIXED_ON_RESUME


def changed_fields(saved: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`section.key` of every value that differs between two config dicts, each named once."""
    return [
        f"{section}.{key}"
        for section in new
        for key in sorted(set(new[section]) | set(saved.get(section, {})))
        if saved.get(section, {}).get(key) != new[section].get(key)
    ]


def _refuse_fixed(saved: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields that changed; a ConfigError naming those a resumed run keeps, if any."""
    changed = changed_fields(saved, new)
    fixed = [field for field in changed if _is_fixed(field)]
    if fixed:
        raise ConfigError(
            f"cannot resume with a different {', '.join(fixed)}: a resumed run keeps its "
            "network, learner, game, seed and games per update; start a new run (another --out)"
        )
    return changed


def _step_dirs(run_dir: Path) -> list[Path]:
    """The run's checkpoint folders, newest first (`checkpoints/` before `best/` at equal
    steps)."""
    from yahtzee_jax.runner.checkpointing import BEST_DIR, LATEST_DIR

    found = [
        (-int(step_dir.name), order, step_dir)
        for order, manager in enumerate((LATEST_DIR, BEST_DIR))
        for step_dir in (run_dir / manager).glob("[0-9]*")
        if step_dir.name.isdigit()
    ]
    return [step_dir for _, _, step_dir in sorted(found)]


def _checkpoint_config(run_dir: Path) -> dict[str, Any] | None:
    """The config stored in the run's newest checkpoint whose config reads, None when it has
    no checkpoint."""
    for step_dir in _step_dirs(run_dir):
        try:  # the JSON item Orbax wrote (`checkpointing._save_args`)
            data = json.loads((step_dir / "config" / "metadata").read_text())
            from_dict(data)
        except (OSError, ValueError):  # damaged (a ConfigError is a ValueError)
            continue
        return data
    return None


def _yaml_config(path: Path) -> Config | None:
    """The config in a `config.yaml`, None when it is missing or does not read."""
    try:
        return from_dict(read_yaml(path))
    except (OSError, ValueError):
        return None


def saved_config_data(run_dir: Path, report: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The config the run in `run_dir` was trained with: the one stored in its newest
    checkpoint (`config.yaml` is its readable copy; one that is missing, damaged or edited is
    reported through `report`), or `config.yaml` before the first checkpoint."""
    if not run_dir.is_dir():
        raise ConfigError(f"cannot resume: {run_dir} does not exist")
    saved_path = run_dir / CONFIG_FILE
    if saved_path.exists() and not saved_path.is_file():  # a folder there: nothing rewrites it
        raise ConfigError(f"cannot resume: {saved_path} is not a file (move it away)")
    stored = _checkpoint_config(run_dir)
    if stored is None:
        if not saved_path.is_file():
            raise ConfigError(f"cannot resume: {saved_path} not found")
        return read_yaml(saved_path)
    if report is not None and _yaml_config(saved_path) != from_dict(stored):
        report(
            f"{saved_path} is missing, damaged or edited: resuming with the config of the "
            "run's newest checkpoint and writing it there again (change values with --set)"
        )
    return stored


def resume_config(
    run_dir: Path, config_file: str | Path | None, overrides: Sequence[str]
) -> Config:
    """The config a resumed run continues with: its saved config, then a YAML file, then each
    ``section.key=value`` override; refused (naming them) if they change a field in
    `FIXED_ON_RESUME`."""
    saved = from_dict(saved_config_data(run_dir)).to_dict()
    data = saved if config_file is None else merge(saved, read_yaml(config_file))
    data = apply_overrides(data, overrides)
    algo = data.get("algo")
    if isinstance(algo, dict) and algo.get("name") != saved["algo"]["name"]:
        # refused before its keys are read (another learner's section has other keys)
        sections = {key: value for key, value in data.items() if isinstance(value, dict)}
        _refuse_fixed(saved, {**sections, "algo": {"name": algo.get("name")}})
    return from_dict(data)


def check_resume_config(
    run_dir: Path, config: Config | None, saved: Config | None = None
) -> Config:
    """The config the run in `run_dir` continues with: its saved one when `config` is None,
    else `config`, which may differ from it only in fields outside `FIXED_ON_RESUME`. `saved`:
    the run's saved config where the caller has read it already (else read here)."""
    saved = from_dict(saved_config_data(run_dir)) if saved is None else saved
    if config is None or config == saved:
        return saved
    _refuse_fixed(saved.to_dict(), config.to_dict())
    # The newest folder, its config read or not (a resume may restore its state anyway).
    newest = next((int(step_dir.name) for step_dir in _step_dirs(run_dir)), None)
    # A total below the games played was taken without a word: config.yaml then said 640
    # games where summary.json said 960 (found by a review session).
    if newest is not None and newest > config.train.total_updates:
        played = newest * config.train.games_per_update
        raise ConfigError(
            f"cannot resume {run_dir} with train.total_games={config.train.total_games}: it "
            f"has played {played:,} games (update {newest}); give at least {played}"
        )
    return config


def finished_summary(run_dir: Path, config: Config, final_eval: bool) -> dict[str, Any] | None:
    """The run's summary when resuming it would only redo its end, else None: its config as
    saved, its summary of every update with the final evaluation asked for, and its last
    checkpoint whole. (Resuming a finished run replayed its final evaluation and wrote an
    empty session's timing over the run's.)"""
    from yahtzee_jax.runner.checkpointing import intact_at

    try:
        summary = json.loads((run_dir / SUMMARY_FILE).read_text())
        saved = from_dict(saved_config_data(run_dir))
    except (OSError, ValueError, ConfigError):
        return None
    updates = config.train.total_updates
    wants_eval = final_eval and config.train.final_eval_games > 0
    if (
        not isinstance(summary, dict)
        or config != saved
        or summary.get("updates") != updates
        or (wants_eval and "final_eval" not in summary)
        or not intact_at(run_dir, updates)
    ):
        return None
    return summary


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def open_run_dir(run_dir: Path, config: Config | None, resume: bool) -> Config:
    """Check the run directory (the lock is held) and write the config of a fresh run."""
    from yahtzee_jax.runner.checkpointing import BEST_DIR, LATEST_DIR

    if resume:
        saved = from_dict(saved_config_data(run_dir, report=_to_stderr))
        config = check_resume_config(run_dir, config, saved)
        if config != saved:  # the changed values hold from now on, for later resumes too
            changed = changed_fields(saved.to_dict(), config.to_dict())
            print(f"resuming {run_dir} with a changed {', '.join(changed)}")
        if _yaml_config(run_dir / CONFIG_FILE) != config:
            save_yaml(config, run_dir / CONFIG_FILE)
        return config
    if config is None:
        raise ConfigError("a config is needed to start a run")
    if (run_dir / LATEST_DIR).exists() or (run_dir / BEST_DIR).exists():
        raise ConfigError(f"{run_dir} already holds a run; pass --resume or another --out")
    save_yaml(config, run_dir / CONFIG_FILE)
    return config


def final_report(config: Config, run_dir: Path, params: Any, progress: bool) -> dict[str, Any]:
    """The final evaluation (and, for a single-turn run, the turn against its optimum)."""
    from yahtzee_jax.evaluation.reports import evaluate

    train_config = config.train
    agent = network_agent(config, params, name=f"{config.algo.name}:{run_dir.name}")
    report = evaluate(
        agent,
        train_config.final_eval_games,
        train_config.seed + FINAL_EVAL_SEED_OFFSET,
        out_dir=run_dir / FINAL_EVAL_DIR,
        compare_optimal=train_config.final_compare_optimal,
        progress=progress,
    )
    final = {
        "final_eval": {
            "games": report["games"],
            "mean": report["score"]["mean"],
            "std": report["score"]["std"],
            "stderr": report["score"]["stderr"],
            "report": str(run_dir / FINAL_EVAL_DIR),
        }
    }
    if not envs.environment_class(config).whole_games:  # its single turns, against their optimum
        from yahtzee_jax.evaluation.single_turn import evaluate_single_turn

        final["single_turn_eval"] = evaluate_single_turn(
            agent, train_config.final_eval_games, train_config.seed + FINAL_EVAL_SEED_OFFSET
        )
    return final


def finish_modules(configs: Sequence[Config], final_eval: bool) -> list[str]:
    """The modules a session's end imports: the learning curve's plots, and with `final_eval`
    the final evaluation's (the optimal agent's beside it, a single turn's against its optimum)."""
    names = ["yahtzee_jax.evaluation.plots"]
    if final_eval:
        names += ["yahtzee_jax.evaluation.reports", "yahtzee_jax.evaluation.records"]
        if any(config.train.final_compare_optimal for config in configs):
            names += [
                "yahtzee_jax.solver",
                "yahtzee_jax.solver.value_table",
                "yahtzee_jax.agents.widget_agents",
            ]
        if not all(envs.environment_class(config).whole_games for config in configs):
            names += ["yahtzee_jax.evaluation.single_turn", "yahtzee_jax.solver.widget"]
    return names


def train_session(
    configs: Sequence[Config | None],
    run_dirs: Sequence[Path],
    resumes: Sequence[bool],
    make_program: Callable[[list[Config]], Program],
    *,
    progress: bool,
    final_eval: bool,
    resume_hint: str,
    primary: bool = True,
    hook: Hook | None = None,
    summary_extras: Sequence[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Train (or resume) member i's `configs[i]` into `run_dirs[i]`; returns each member's run
    summary, also written to its `summary.json`.

    A resumed member's config may be None (the saved one is used) or differ from the saved
    one only outside `FIXED_ON_RESUME`.
    `make_program(configs)` builds the device program (and refuses configs it cannot train)
    before anything is written. Only the `primary` process writes (several hosts).
    `summary_extras[i]` joins member i's summary.
    """
    for run_dir in run_dirs:
        if run_dir.exists() and not run_dir.is_dir():
            raise ConfigError(f"{run_dir} is a file, not a run directory")
    resolved = [
        check_resume_config(run_dir, config) if resumed else config
        for config, run_dir, resumed in zip(configs, run_dirs, resumes, strict=True)
    ]
    if any(config is None for config in resolved):
        raise ConfigError("a config is needed to start a run")
    program = make_program(resolved)
    if not primary:  # another host's process: it trains along and writes nothing
        _, summaries = train_members(
            resolved,
            run_dirs,
            program,
            progress=False,
            resume_hint=resume_hint,
            hook=hook,
            primary=False,
        )
        return summaries
    # Imported now, not when the run ends hours later: an editable install's sources edited in
    # between would otherwise meet modules loaded from the old ones at the last step.
    for name in finish_modules(resolved, final_eval):
        import_module(name)
    with contextlib.ExitStack() as locks:
        for run_dir in run_dirs:
            run_dir.mkdir(parents=True, exist_ok=True)
            locks.enter_context(RunLock(run_dir))
        resolved = [
            open_run_dir(run_dir, config, resumed)  # its logs mended on a resume
            for config, run_dir, resumed in zip(resolved, run_dirs, resumes, strict=True)
        ]
        # A member already at its end (`make train` run again) keeps its summary: resuming it
        # replayed the final evaluation and wrote an empty session's timing over the run's.
        done = [
            finished_summary(run_dir, config, final_eval) if resumed else None
            for config, run_dir, resumed in zip(resolved, run_dirs, resumes, strict=True)
        ]
        state, summaries = train_members(
            resolved, run_dirs, program, progress=progress, resume_hint=resume_hint, hook=hook
        )
        for member, (config, run_dir) in enumerate(zip(resolved, run_dirs, strict=True)):
            if done[member] is not None:
                summaries[member] = done[member]
                print(
                    f"{run_dir} was finished ({done[member]['games']:,} games): its "
                    "summary.json is kept (--set train.total_games=N trains on)"
                )
                continue
            summary = summaries[member]
            summary.update(summary_extras[member] if summary_extras else {})
            if summary["last_eval"]:
                summary["learning_curve"] = str(plot_learning_curve(run_dir))
            if final_eval and config.train.final_eval_games > 0:
                params = program.member(state.params, member)
                summary.update(final_report(config, run_dir, params, progress))
            write_whole(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2, default=float) + "\n")
    return summaries
