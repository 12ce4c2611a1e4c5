"""Orbax checkpoints of the whole train state, with the run config stored beside it as JSON.

A run directory holds ``checkpoints/<step>/`` (the last N) and ``best/<step>/`` (the best by
evaluation score). Each checkpoint has two items: ``state`` (params, optimizer state with its
schedule count, raw rng key data, update counter) and ``config`` (the resolved config).
`load_agent` turns any of these (a run directory, a manager directory or one step directory)
into an `Agent` playing the argmax policy.

A checkpoint is verified when it is read: a third item, ``integrity``, holds a SHA-256 digest
of every array of the state (Orbax itself restores some damaged files without complaint: bytes
overwritten inside a data file come back as other numbers). Reading a run (`--resume`,
`evaluate RUN`) falls back to the newest checkpoint that restores cleanly, from `checkpoints/`
or `best/`, and says in one line which ones it skipped and why. It never deletes a damaged
checkpoint; a resume moves those newer than the one it continues from into ``damaged/`` (the
run will write those steps again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from flax import serialization

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.resolve import AGENT_NAMES, builtin_agent
from yahtzee_jax.config import Config
from yahtzee_jax.errors import CheckpointError, DiskFullError, UserError, is_disk_full
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.parallel import host_local
from yahtzee_jax.runner.configs import apply_overrides, from_dict

LATEST_DIR = "checkpoints"
BEST_DIR = "best"
DAMAGED_DIR = "damaged"
BEST_METRIC = "eval_score"
_TENSORSTORE_NOISE = "See full TensorStore details"

# Orbax logs every save at INFO, read-only loads at WARNING and a damaged `_CHECKPOINT_METADATA`
# (which a restore does without) at ERROR, twice or more; our own errors say what matters.
logging.getLogger("absl").setLevel(logging.CRITICAL)
# After a failed restore Orbax's background threads log "Event loop is closed" tracebacks.
logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def _manager(directory: Path, max_to_keep: int, best: bool = False, read_only: bool = False):
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep,
        create=not read_only,
        read_only=read_only,
        enable_async_checkpointing=False,  # a save is complete when it returns (Ctrl-C, SIGKILL)
        cleanup_tmp_directories=not read_only,  # a save killed half-way leaves a temporary dir
        best_fn=(lambda metrics: metrics[BEST_METRIC]) if best else None,
        best_mode="max",
        keep_checkpoints_without_metrics=not best,
    )
    return ocp.CheckpointManager(directory.resolve(), options=options)


def state_digest(state_dict: Any) -> str:
    """SHA-256 over every array of a state dict (path, dtype, shape and bytes of each leaf)."""
    digest = hashlib.sha256()
    leaves = jax.tree_util.tree_flatten_with_path(state_dict)[0]
    for path, leaf in sorted(leaves, key=lambda item: jax.tree_util.keystr(item[0])):
        array = np.ascontiguousarray(np.asarray(leaf))
        digest.update(f"{jax.tree_util.keystr(path)}|{array.dtype}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def short_reason(error: BaseException) -> str:
    """One short line for an error raised while reading a checkpoint (no TensorStore dump)."""
    message = str(error).split(_TENSORSTORE_NOISE)[0].strip().splitlines()
    text = message[0].strip() if message else ""
    text = text[:160] + ("..." if len(text) > 160 else "")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _restore_step(directory: Path, step: int, with_config: bool) -> dict[str, Any]:
    """Restore and verify one step of a manager directory (raises on any damage)."""
    manager = _manager(directory, 1, read_only=True)
    try:
        step_dir = directory / str(step)
        items: dict[str, Any] = {"state": ocp.args.StandardRestore()}
        if with_config:
            items["config"] = ocp.args.JsonRestore()
        verified = (step_dir / "integrity").is_dir()  # checkpoints older than the digest lack it
        if verified:
            items["integrity"] = ocp.args.JsonRestore()
        restored = manager.restore(step, args=ocp.args.Composite(**items))
    finally:
        manager.close()
    if verified and restored["integrity"]["sha256"] != state_digest(restored["state"]):
        raise CheckpointError("its arrays do not match their checksum")
    return restored


def intact_at(run_dir: str | Path, step: int) -> bool:
    """Whether the run's `checkpoints/<step>` restores cleanly and matches its checksum (read
    only: nothing is reported or moved aside, as a resume would)."""
    try:
        _restore_step(Path(run_dir) / LATEST_DIR, step, with_config=False)
    except Exception:  # orbax and tensorstore raise many kinds for missing or damaged files
        return False
    return True


def _candidates(directory: Path) -> list[tuple[Path, int]]:
    """(manager directory, step) of every checkpoint under a run directory (or in one manager
    directory), newest first; at equal steps `checkpoints/` comes before `best/` (the same
    state, kept twice)."""
    managers = [directory / LATEST_DIR, directory / BEST_DIR]
    if not any(manager.is_dir() for manager in managers):
        managers = [directory]
    found = []
    for order, manager in enumerate(managers):
        if manager.is_dir():
            for child in manager.iterdir():
                if child.name.isdigit() and child.is_dir():
                    found.append((-int(child.name), order, manager))
    return [(manager, -negative) for negative, _, manager in sorted(found)]


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def restore_newest(
    directory: str | Path,
    with_config: bool = False,
    report: Callable[[str], None] = _to_stderr,
    on_damaged: Callable[[Path], None] | None = None,
) -> tuple[dict[str, Any], int] | None:
    """(restored items, step) of the newest checkpoint of a run (or manager) directory that
    restores cleanly, None if it has none. The damaged ones it passed are then reported in
    one line each (and handed to `on_damaged`, which may move them aside); when none is
    readable, one error lists them all and nothing is moved."""
    directory = Path(directory)
    damaged: list[tuple[Path, str]] = []
    for manager, step in _candidates(directory):
        try:
            found = _restore_step(manager, step, with_config), step
        except Exception as error:  # orbax and tensorstore raise many kinds for damaged files
            damaged.append((manager / str(step), short_reason(error)))
            continue
        for step_dir, reason in damaged:
            message = f"skipped damaged checkpoint {step_dir}: {reason}"
            if on_damaged is not None:
                on_damaged(step_dir)
                message += f"; moved it to {directory / DAMAGED_DIR}"
            report(message)
        return found
    if damaged:
        listed = "; ".join(f"{path.parent.name}/{path.name} ({reason})" for path, reason in damaged)
        raise CheckpointError(f"no readable checkpoint in {directory}: {listed}")
    return None


class RunCheckpoints:
    """The latest-N and best-1 checkpoint managers of a run directory."""

    def __init__(self, run_dir: str | Path, keep: int, primary: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.keep = keep
        self.primary = primary  # only process 0 of a multi-host run moves damaged ones aside
        self._open()

    def _open(self) -> None:
        self.latest = _manager(self.run_dir / LATEST_DIR, self.keep)
        if self.primary:  # Orbax reads every best checkpoint's metric here: a damaged one raises
            for step_dir in _without_metric(self.run_dir / BEST_DIR):
                self._move_aside(step_dir)
                _to_stderr(
                    f"skipped damaged checkpoint {step_dir}: its {BEST_METRIC} file is damaged; "
                    f"moved it to {self.run_dir / DAMAGED_DIR}"
                )
        self.best = _manager(self.run_dir / BEST_DIR, 1, best=True)

    def latest_step(self) -> int | None:
        """Step of the newest checkpoint, or None."""
        return self.latest.latest_step()

    def save(self, step: int, state: Any, config: Config, eval_score: float | None) -> None:
        """Save to `best/` when an `eval_score` is given (a new best), then to `checkpoints/`.

        Best first: a run killed between the two resumes from the older latest checkpoint and
        passes this step again, finding its best copy already written.
        """
        args = _save_args(state, config)
        try:
            if eval_score is not None and self.best.latest_step() != step:
                metrics = {BEST_METRIC: float(eval_score)}
                self.best.save(step, args=args, metrics=metrics, force=True)
                self.best.wait_until_finished()
            if self.latest.latest_step() != step:
                self.latest.save(step, args=args, force=True)
                self.latest.wait_until_finished()
        except Exception as error:
            # A failed save leaves `<step>.orbax-checkpoint-tmp*` behind; the older checkpoints
            # are complete and untouched.
            self._remove_partial(step)
            if is_disk_full(error):
                raise DiskFullError(
                    f"no space left on the device while writing the checkpoint of update {step}"
                ) from None
            raise

    def _remove_partial(self, step: int) -> None:
        """Delete the temporary directories of an unfinished save of `step` (never a finished
        checkpoint: those are named by their step alone)."""
        for directory in (self.run_dir / LATEST_DIR, self.run_dir / BEST_DIR):
            for child in directory.glob(f"{step}.orbax-checkpoint-tmp*"):
                shutil.rmtree(child, ignore_errors=True)

    def restore(self, template: Any, step: int | None = None) -> Any:
        """Restore (and verify) the train state, structured like `template`, from `checkpoints/`
        at `step` (default: the latest)."""
        step = self.latest.latest_step() if step is None else step
        if step is None:
            raise CheckpointError("no checkpoint to resume from")
        restored = _restore_step(self.run_dir / LATEST_DIR, step, with_config=False)
        return serialization.from_state_dict(template, restored["state"])

    def restore_newest(self, template: Any, report: Callable[[str], None] = _to_stderr) -> Any:
        """The newest train state that restores cleanly (`checkpoints/` or `best/`), or None if
        the run has no checkpoint. Damaged checkpoints are moved aside into `damaged/`, so that
        the resumed run can write those steps again."""
        self.close()
        try:
            found = restore_newest(
                self.run_dir,
                report=report if self.primary else (lambda message: None),
                on_damaged=self._move_aside if self.primary else None,
            )
        finally:
            self._open()  # the managers cache their step lists
        return None if found is None else serialization.from_state_dict(template, found[0]["state"])

    def _move_aside(self, step_dir: Path) -> None:
        target = self.run_dir / DAMAGED_DIR / f"{step_dir.parent.name}-{step_dir.name}"
        if target.exists():
            target = target.with_name(f"{target.name}-{int(time.time())}")
        target.parent.mkdir(exist_ok=True)
        step_dir.rename(target)

    def close(self) -> None:
        """Release the managers."""
        self.latest.close()
        self.best.close()


def _without_metric(directory: Path) -> list[Path]:
    """The step directories of a best-checkpoint manager whose metric cannot be read (Orbax
    raises on opening the manager, or, for a missing one, drops the checkpoint at its next
    save)."""
    damaged = []
    for step_dir in sorted(directory.glob("[0-9]*")):
        if not step_dir.name.isdigit() or not step_dir.is_dir():
            continue
        try:
            metrics = json.loads((step_dir / "metrics" / "metrics").read_text())
            float(metrics[BEST_METRIC])
        except (OSError, ValueError, TypeError, KeyError):
            damaged.append(step_dir)
    return damaged


def _save_args(state: Any, config: Config) -> ocp.args.Composite:
    # Host numpy arrays: a checkpoint carries no device layout, so one written on 4 devices
    # (or by several processes) restores on any other topology, a laptop's CPU included.
    state_dict = serialization.to_state_dict(jax.device_get(host_local(state)))
    return ocp.args.Composite(
        state=ocp.args.StandardSave(state_dict),
        config=ocp.args.JsonSave(config.to_dict()),
        integrity=ocp.args.JsonSave({"sha256": state_digest(state_dict)}),
    )


def _locate(path: Path) -> tuple[Path, int | None]:
    """(run or manager directory, step or None for its newest) for a run, manager or step
    directory."""
    if (path / LATEST_DIR).is_dir() or (path / BEST_DIR).is_dir():
        return path, None
    if path.name.isdigit() and (path / "state").is_dir():
        return path.parent, int(path.name)
    if any(child.name.isdigit() for child in path.iterdir()):
        return path, None
    raise CheckpointError(f"no checkpoint found in {path}")


def load_checkpoint(
    path: str | Path, report: Callable[[str], None] = _to_stderr
) -> tuple[dict, Config, int]:
    """Read (state dict, config, step) from a run, manager or step directory.

    A run or manager directory gives its newest checkpoint that restores cleanly (damaged ones
    are reported through `report` and left in place); a step directory gives exactly that step.
    """
    path = Path(path)
    if path.is_file():  # as `train` says of it: "not found" sent people looking for the path
        raise CheckpointError(f"{path} is a file, not a run or checkpoint directory")
    if not path.is_dir():
        raise CheckpointError(f"checkpoint not found: {path}")
    directory, step = _locate(path)
    if step is None:
        found = restore_newest(directory, with_config=True, report=report)
        if found is None:
            raise CheckpointError(f"no checkpoint found in {path}")
    else:
        try:
            found = _restore_step(directory, step, with_config=True), step
        except CheckpointError as error:
            raise CheckpointError(f"cannot read checkpoint {path}: {error}") from None
        except Exception as error:  # orbax raises many kinds for a damaged directory
            raise CheckpointError(f"cannot read checkpoint {path}: {short_reason(error)}") from None
    restored, step = found
    try:
        config = from_dict(restored["config"])
    except UserError as error:
        raise CheckpointError(f"checkpoint {path} has an invalid config: {error}") from None
    return restored["state"], config, step


def load_run(path: str) -> tuple[Any, Config]:
    """(params, config) of a run's newest clean checkpoint: the `RunLoader` the trainer hands
    a learner that reads another run (distill's teacher)."""
    state, config, _ = load_checkpoint(path)
    return state["params"], config


def load_agent(path: str) -> Agent:
    """A trained checkpoint (run directory or checkpoint directory) as an argmax `Agent`."""
    return load_agent_and_step(path)[0]


# The settings a trained run's agent may be played with other than it was trained with: how a
# match planner plays its match (`algo.match_open`, `algo.match_early`) and how deep the
# td-planner searches (`algo.lookahead`).
MATCH_PLAY = "algo.match_"  # the settings that only a run with match play reads
PLAY_SETTINGS = (MATCH_PLAY, "algo.lookahead")
# As a refusal spells them: a prefix of several settings ends in "...".
PLAY_SETTINGS_TEXT = ", ".join(f"{s}..." if s.endswith("_") else s for s in PLAY_SETTINGS)


def load_agent_and_step(path: str, overrides: tuple[str, ...] = ()) -> tuple[Agent, int]:
    """`load_agent`, and the update its checkpoint was saved at; `overrides` (`--set
    algo.match_...=VALUE`, `algo.lookahead=2`) change how it plays, not what it learned."""
    from yahtzee_jax.algorithms import get_algorithm
    from yahtzee_jax.algorithms.target_rows_fit import is_fit_folder, load_learned_seeker

    if is_fit_folder(path):  # a learned seeker's network (experiments/learned_seeker.py fit)
        if overrides:
            raise UserError(f"--set: {path} is a learned seeker's fit; it has no play settings")
        return load_learned_seeker(path)
    state, config, step = load_checkpoint(path)
    for text in overrides:
        if not text.strip().startswith(PLAY_SETTINGS):
            raise UserError(
                f"--set {text!r}: a trained run takes only its play settings ({PLAY_SETTINGS_TEXT})"
            )
    if overrides:
        config = from_dict(apply_overrides(config.to_dict(), overrides))
    name = f"{config.algo.name}:{Path(path).name}@{step}"
    return get_algorithm(config.algo.name).make_agent(config, state["params"], name), step


def resolve_agent(
    spec: str,
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    *,
    rules_asked: bool = True,
) -> Agent:
    """The agent named by `spec`: a built-in one (`agents.builtin_agent`) or a checkpoint path.

    A built-in agent has no rules of its own: it plays `rules`. A checkpoint plays the rules it
    was trained for; `rules` other than those is an error when they were asked for
    (`rules_asked`: a command's `--rules` given, not its default). `cache_dir` is the solver's.
    """
    if spec in AGENT_NAMES or not (os.sep in spec or "/" in spec or os.path.exists(spec)):
        return builtin_agent(spec, rules, cache_dir)
    agent = load_agent(spec)
    chosen = get_rules(rules)
    if rules_asked and chosen != agent.rules:
        raise UserError(
            f"checkpoint {spec!r} plays {agent.rules.name!r} rules, not {chosen.name!r}; "
            "omit --rules to evaluate it under its own rules"
        )
    return agent
