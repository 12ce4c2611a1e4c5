"""Reading configs: the YAML presets, config files and `--set` overrides, validated into a
`Config` whose `algo` section is the named learner's own class (from the algorithm registry).

Defaults, then the preset, then a YAML file, then each ``section.key=value`` override; every
value is checked before anything is compiled: a bad one raises `ConfigError` in one line. A
preset (``yahtzee_jax/presets/NAME.yaml``, package data) lists only what differs from the
defaults and may start from another with ``inherit: NAME``. The `env` section is an
environment's id and its params (`yahtzee_jax.make`'s), its class picked by the id as `algo`'s
by name. Configs of an older form (run directories, old YAML files, `--set train.rules=...`)
are read in today's keys (`migrate_legacy`, `migrate_env_id`), with a one-line note.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from yahtzee_jax.agents.resolve import OPPONENTS
from yahtzee_jax.algorithms import algorithm_names, get_algorithm
from yahtzee_jax.config import (
    DEFAULT_ALGO,
    DEFAULT_ENV,
    SECTIONS,
    AlgoConfig,
    Config,
    EnvConfig,
    MatchConfig,
    check_choice,
    require,
)
from yahtzee_jax.envs.tasks import ENV_IDS, ENVIRONMENTS, check_env_id, config_class, env_id
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.files import write_whole

if TYPE_CHECKING:  # importlib.resources.abc is Python 3.11+; only annotations name it
    from importlib.resources.abc import Traversable

# Read through importlib.resources, not a path beside the source: the presets then resolve the
# same from a checkout, an installed wheel or a zip import.
PRESETS: Traversable = importlib.resources.files("yahtzee_jax") / "presets"
PRESET_SUFFIX = ".yaml"
DEFAULT_PRESET = "paper-a2c"


def algo_config_class(name: Any) -> type[AlgoConfig]:
    """The config class of algorithm `name`, from the algorithm registry."""
    check_choice("algo.name", name, algorithm_names())
    return get_algorithm(name).config_class


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Check a value's type against the field's default (ints accepted for floats)."""
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if expected is float and isinstance(value, str):  # YAML 1.1 reads "3e-4" as a string
        with contextlib.suppress(ValueError):
            value = float(value)
    if expected is float and isinstance(value, float):
        require(math.isfinite(value), f"{name}={value!r} must be a finite number")
        return value
    if expected is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{name}={value!r} must be of type {expected.__name__}")
    if expected is int:  # numpy and JAX hold it in 64 bits at most
        require(-(2**63) <= value < 2**63, f"{name}={value} does not fit in 64 bits")
    return value


_NOTED: set[str] = set()


def note_once(note: str) -> None:
    """Print `note` on stderr, once a process (a run reads its config more than once)."""
    if note not in _NOTED:
        _NOTED.add(note)
        print(note, file=sys.stderr)


def from_dict(data: dict[str, Any] | None, report: Callable[[str], None] = note_once) -> Config:
    """Build and validate a `Config` from a (partial) nested dict; unknown keys are errors.
    A config of an older form is read in today's keys, and `report` given a one-line note."""
    data = data or {}
    require(isinstance(data, dict), "a config must be a mapping of sections")
    data, note = migrate_env_id(migrate_legacy(data))
    if note is not None:
        report(note)
    unknown = set(data) - set(SECTIONS)
    require(not unknown, f"unknown config section(s): {', '.join(sorted(map(str, unknown)))}")
    sections = {}
    for section, cls in SECTIONS.items():
        values = data.get(section) or {}
        require(isinstance(values, dict), f"config section {section!r} must be a mapping")
        if section == "algo":  # each algorithm has its own section class
            cls = algo_config_class(values.get("name", DEFAULT_ALGO))
        if section == "env":  # and each environment its params
            cls = config_class(values.get("id", DEFAULT_ENV))
        defaults = cls()
        fields = {field.name for field in dataclasses.fields(cls)}
        for key in values:
            if section == "env" and key not in fields:
                takes = ", ".join(sorted(fields - {"id"})) or "no params"
                named = values.get("id", DEFAULT_ENV)
                raise ConfigError(
                    f"unknown config key env.{key} for env.id={named} (takes: {takes})"
                )
            require(key in fields, f"unknown config key {section}.{key}")
        coerced = {
            key: _coerce(f"{section}.{key}", value, getattr(defaults, key))
            for key, value in values.items()
        }
        sections[section] = cls(**coerced)
    check_opponents(sections["env"])
    return Config(**sections)


def check_opponents(env: EnvConfig) -> None:
    """A match's opponents are names the floors above the schema own: the agents
    (`agents.resolve`), and `self`, the frozen learner."""
    for name in env.opponents if isinstance(env, MatchConfig) else ():
        check_choice("env.opponent", name, (*OPPONENTS, "self"))


# Keys of the two-player task before it became an environment (issue 27): algo.X -> env.X.
_LEGACY_MATCH_KEYS = ("opponent", "reward", "opponent_features", "opponent_refresh")


def migrate_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """A config written before the `env` section (run directories, old YAML files) in the
    keys of the next form: the two-player fields of `algo` move to `env`, `algo.name=a2c-2p`
    is A2C on `train.task=match`, and `algo.opponent=none` is the solitaire task. The old form
    always wrote `algo.opponent`; without it (`--set algo.reward=...` on today's presets) the
    fields are today's user's: moved to a match's `env`, refused beside a solitaire one."""
    algo = data.get("algo")
    if not isinstance(algo, dict):
        return data
    legacy = [key for key in _LEGACY_MATCH_KEYS if key in algo]
    if not legacy and algo.get("name") != "a2c-2p":
        return data
    algo, env, train = dict(algo), dict(data.get("env") or {}), dict(data.get("train") or {})
    values = {key: algo.pop(key) for key in legacy}
    if "opponent" not in values and algo.get("name") != "a2c-2p":
        named = ", ".join(f"algo.{key}" for key in legacy)
        current = env.get("id", DEFAULT_ENV)
        check_env_id(current)
        require(
            ENVIRONMENTS[ENV_IDS[current][1]].has_opponents,
            f"{named}: a match's setting, env.{legacy[0]} today; env.id={current} has no opponents",
        )
        env.update(values)
        return {**data, "algo": algo, "env": env}
    was_match = algo.get("name") == "a2c-2p" or values.get("opponent", "none") != "none"
    if algo.get("name") == "a2c-2p":
        algo["name"] = "a2c"
    if was_match:
        env.update(values)
        if train.get("task", "game") == "game":
            train["task"] = "match"
    return {**data, "algo": algo, "train": train, "env": env}


def migrate_env_id(data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A config that names its environment the old way, by `train.task` and `train.rules` (run
    directories before issue 66, `--set train.rules=yatzy`), in today's keys: the two name
    `env.id`, each laid over the id the `env` section has (a preset's, or the default), and a
    solitaire environment drops the match settings the old form kept and ignored. Returns the
    data and a one-line note (None when there was nothing to read)."""
    train, env = data.get("train"), data.get("env") or {}
    if (
        not isinstance(train, dict)
        or not {"task", "rules"} & set(train)
        or not isinstance(env, dict)
    ):
        return data, None
    train, env = dict(train), dict(env)
    old = {key: train.pop(key) for key in ("task", "rules") if key in train}
    current = env.get("id", DEFAULT_ENV)
    check_env_id(current)
    rules, task = ENV_IDS[current]
    new_id = env_id(old.get("rules", rules), old.get("task", task))
    if not ENVIRONMENTS[ENV_IDS[new_id][1]].has_opponents:
        env = {}
    env["id"] = new_id
    named = ", ".join(f"train.{key}={value}" for key, value in old.items())
    note = f"note: read {named} (the old form) as env.id={new_id}"
    return {**data, "train": train, "env": env}, note


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra`'s sections laid over `base`'s, key by key (neither is changed)."""
    merged = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def read_yaml(path: str | Path | Traversable) -> dict[str, Any]:
    """Read a YAML config file (a mapping of sections)."""
    path = Path(path) if isinstance(path, str) else path
    if not path.is_file():
        why = "a folder, not a config file" if path.is_dir() else "config file not found"
        raise ConfigError(f"{why}: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"cannot parse {path}: {str(error).splitlines()[0]}") from None
    except UnicodeDecodeError as error:  # a binary file given as a config
        raise ConfigError(f"cannot read {path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:  # unreadable, or vanished since the check above
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
    require(isinstance(data, dict), f"{path} must hold a mapping of config sections")
    return data


def available_presets() -> list[str]:
    """Names of the YAML presets shipped in the package (yahtzee_jax/presets)."""
    return sorted(
        entry.name.removesuffix(PRESET_SUFFIX)
        for entry in PRESETS.iterdir()
        if entry.name.endswith(PRESET_SUFFIX)
    )


def preset_data(name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """A preset's values; a preset may start from another one with ``inherit: NAME``."""
    path = PRESETS / f"{name}{PRESET_SUFFIX}"
    if not path.is_file():
        raise ConfigError(
            f"unknown preset {name!r}; choose one of: {', '.join(available_presets())}"
        )
    require(name not in seen, f"preset {name!r} inherits from itself")
    data = read_yaml(path)
    parent = data.pop("inherit", None)
    if parent is None:
        return data
    return merge(preset_data(str(parent), (*seen, name)), data)


def parse_override(text: str) -> dict[str, Any]:
    """Turn ``section.key=value`` (value in YAML syntax) into a nested dict."""
    name, sep, raw = text.partition("=")
    section, dot, key = name.strip().partition(".")
    require(
        bool(sep and dot and section and key), f"--set {text!r} must look like section.key=value"
    )
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ConfigError(f"--set {text!r}: cannot parse the value") from None
    return {section: {key: value}}


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """`data` with each ``section.key=value`` override laid over it, in order."""
    for text in overrides:
        data = merge(data, parse_override(text))
    return data


def resolve(
    preset: str | None = DEFAULT_PRESET,
    config_file: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> Config:
    """Defaults, then the preset, then a YAML file, then each ``section.key=value`` override."""
    data = preset_data(preset) if preset is not None else {}
    if config_file is not None:
        data = merge(data, read_yaml(config_file))
    return from_dict(apply_overrides(data, overrides))


def save_yaml(config: Config, path: str | Path) -> None:
    """Write the resolved config as YAML, whole or not at all."""
    write_whole(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
