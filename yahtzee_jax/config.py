"""Training configuration: frozen dataclasses, validation, YAML presets and `--set` overrides.

Defaults follow the paper (Pape, Appendix B, Tables 6-7, A2C column); where the paper's own code
differs the choice is noted beside the field. A preset in ``experiments/configs/NAME.yaml`` only
lists the values that differ from these defaults. Every value is checked before anything is
compiled: a bad one raises `ConfigError` with a one-line message.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any

import yaml

from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import RULE_VARIANTS

PRESET_DIR = Path(__file__).resolve().parent.parent / "experiments" / "configs"
DEFAULT_PRESET = "paper-a2c"


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    _check(value in choices, f"{name}={value!r} is not one of: {', '.join(choices)}")


def _check_fraction(name: str, value: float) -> None:
    _check(0.0 <= value <= 1.0, f"{name}={value} must be in [0, 1]")


@dataclasses.dataclass(frozen=True)
class FeatureConfig:
    """Which input features the network sees (paper section 4.1); see `features.py` for layout."""

    dice: str = "combined"  # "onehot" (sorted dice, 5x6), "counts" (face counts / 5), "combined"
    category_open: bool = True  # 13 flags: box still open
    upper_progress: bool = True  # min(upper total / 63, 1)
    roll_index: bool = True  # one-hot of the decision within the turn (3)
    game_progress: bool = True  # boxes used / 12
    joker: bool = True  # the current roll is a Joker (five of a kind, Yahtzee box used)
    yahtzee_bonus_live: bool = True  # the Yahtzee box holds 50: another Yahtzee earns +100
    lock_in: bool = True  # 6 flags: scoring this open upper box reaches 63
    potential_scores: bool = True  # 13: what the dice would score in each legal box / box max

    def __post_init__(self) -> None:
        _check_choice("features.dice", self.dice, ("onehot", "counts", "combined"))


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The paper's network (section 4.3): trunk blocks plus one hidden block in each head."""

    hidden_size: int = 600  # d_h
    trunk_layers: int = 2  # the paper's L=3 hidden layers = 2 trunk blocks + 1 block per head
    activation: str = "swish"
    layer_norm: bool = True
    dropout: float = 0.1  # p_d
    roll_head: str = "categorical"  # "categorical" over the 32 keep patterns, or 5 "bernoulli"
    upper_head: bool = False  # predicts the final upper total (for reward shaping)

    def __post_init__(self) -> None:
        _check(self.hidden_size >= 1, f"network.hidden_size={self.hidden_size} must be >= 1")
        _check(self.trunk_layers >= 0, f"network.trunk_layers={self.trunk_layers} must be >= 0")
        _check_choice("network.activation", self.activation, ("swish", "relu"))
        _check(0.0 <= self.dropout < 1.0, f"network.dropout={self.dropout} must be in [0, 1)")
        _check_choice("network.roll_head", self.roll_head, ("categorical", "bernoulli"))


@dataclasses.dataclass(frozen=True)
class AlgoConfig:
    """Loss settings shared by the policy-gradient algorithms (A2C now; REINFORCE and PPO next)."""

    name: str = "a2c"
    gamma: float = 0.99
    value_coef: float = 0.005  # lambda_V
    normalize_advantage: bool = True
    # Entropy bonus (eq. 13): hold the start value, anneal linearly, then hold the end value.
    # Table 7 values; the paper's 1M-game code used roll 0.1->0.02, score 0.03->0.01, 0.075/0.9.
    entropy_roll_start: float = 0.06
    entropy_roll_end: float = 0.02
    entropy_score_start: float = 0.03
    entropy_score_end: float = 0.008
    entropy_hold: float = 0.3
    entropy_anneal: float = 0.6

    def __post_init__(self) -> None:
        _check_choice("algo.name", self.name, ("a2c",))
        _check(0.0 <= self.gamma <= 1.0, f"algo.gamma={self.gamma} must be in [0, 1]")
        _check(self.value_coef >= 0, f"algo.value_coef={self.value_coef} must be >= 0")
        for field in ("entropy_roll_start", "entropy_roll_end"):
            _check(getattr(self, field) >= 0, f"algo.{field} must be >= 0")
        for field in ("entropy_score_start", "entropy_score_end"):
            _check(getattr(self, field) >= 0, f"algo.{field} must be >= 0")
        _check_fraction("algo.entropy_hold", self.entropy_hold)
        _check_fraction("algo.entropy_anneal", self.entropy_anneal)
        _check(
            self.entropy_hold + self.entropy_anneal <= 1.0,
            "algo.entropy_hold + algo.entropy_anneal must be <= 1",
        )


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """Adam with a warmup - plateau - linear decay learning-rate schedule (section 4.3.3)."""

    lr: float = 1e-4  # alpha
    warmup: float = 0.05  # fraction of updates, linear from min_lr_ratio * lr up to lr
    plateau: float = 0.70  # fraction at lr; the remaining fraction decays linearly
    min_lr_ratio: float = 0.01  # r_alpha (Table 6; the paper's code used 0.05)
    max_grad_norm: float = 1.0  # tau_clip; 0 disables clipping

    def __post_init__(self) -> None:
        _check(self.lr > 0, f"optim.lr={self.lr} must be > 0")
        _check_fraction("optim.warmup", self.warmup)
        _check_fraction("optim.plateau", self.plateau)
        _check(self.warmup + self.plateau <= 1.0, "optim.warmup + optim.plateau must be <= 1")
        _check(0 < self.min_lr_ratio <= 1, f"optim.min_lr_ratio={self.min_lr_ratio} not in (0, 1]")
        _check(self.max_grad_norm >= 0, f"optim.max_grad_norm={self.max_grad_norm} must be >= 0")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Run length, batching, evaluation and checkpoint schedule."""

    total_games: int = 1_000_000
    games_per_update: int = 20  # B, played in lockstep
    updates_per_chunk: int = 25  # K updates per compiled call (shrunk to divide the eval interval)
    seed: int = 0
    rules: str = "official"
    eval_fraction: float = 0.01  # evaluate (and checkpoint) every 1 % of the updates
    eval_games: int = 1_000
    final_eval_games: int = 100_000
    final_compare_optimal: bool = True  # final report side by side with the optimal agent
    keep_checkpoints: int = 3

    def __post_init__(self) -> None:
        for field in ("total_games", "games_per_update", "updates_per_chunk", "eval_games"):
            value = getattr(self, field)
            _check(value >= 1, f"train.{field}={value} must be >= 1")
        _check(
            self.total_games >= self.games_per_update,
            f"train.total_games={self.total_games} is less than one update "
            f"(train.games_per_update={self.games_per_update})",
        )
        _check(self.final_eval_games >= 0, "train.final_eval_games must be >= 0")
        _check(self.keep_checkpoints >= 1, "train.keep_checkpoints must be >= 1")
        _check(
            0 < self.eval_fraction <= 1, f"train.eval_fraction={self.eval_fraction} not in (0, 1]"
        )
        _check_choice("train.rules", self.rules, tuple(RULE_VARIANTS))

    @property
    def total_updates(self) -> int:
        """Number of updates: total games / games per update, rounded up."""
        return math.ceil(self.total_games / self.games_per_update)

    @property
    def eval_interval(self) -> int:
        """Updates between evaluations (and checkpoints)."""
        return max(1, round(self.total_updates * self.eval_fraction))

    @property
    def chunk_updates(self) -> int:
        """Updates per compiled chunk: the largest divisor of the eval interval <= K."""
        limit = min(self.updates_per_chunk, self.eval_interval)
        return max(d for d in range(1, limit + 1) if self.eval_interval % d == 0)


SECTIONS: dict[str, type] = {
    "features": FeatureConfig,
    "network": NetworkConfig,
    "algo": AlgoConfig,
    "optim": OptimConfig,
    "train": TrainConfig,
}


@dataclasses.dataclass(frozen=True)
class Config:
    """The whole run configuration."""

    features: FeatureConfig = FeatureConfig()
    network: NetworkConfig = NetworkConfig()
    algo: AlgoConfig = AlgoConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain nested dict (YAML/JSON friendly)."""
        return dataclasses.asdict(self)


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Check a value's type against the field's default (ints accepted for floats)."""
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is float and isinstance(value, str):  # YAML 1.1 reads "3e-4" as a string
        try:
            return float(value)
        except ValueError:
            pass
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{name}={value!r} must be of type {expected.__name__}")
    return value


def from_dict(data: dict[str, Any] | None) -> Config:
    """Build and validate a `Config` from a (partial) nested dict; unknown keys are errors."""
    data = data or {}
    _check(isinstance(data, dict), "a config must be a mapping of sections")
    unknown = set(data) - set(SECTIONS)
    _check(not unknown, f"unknown config section(s): {', '.join(sorted(map(str, unknown)))}")
    sections = {}
    for section, cls in SECTIONS.items():
        values = data.get(section) or {}
        _check(isinstance(values, dict), f"config section {section!r} must be a mapping")
        defaults = cls()
        fields = {field.name for field in dataclasses.fields(cls)}
        for key in values:
            _check(key in fields, f"unknown config key {section}.{key}")
        coerced = {
            key: _coerce(f"{section}.{key}", value, getattr(defaults, key))
            for key, value in values.items()
        }
        sections[section] = cls(**coerced)
    return Config(**sections)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file (a mapping of sections)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"cannot parse {path}: {str(error).splitlines()[0]}") from None
    _check(isinstance(data, dict), f"{path} must hold a mapping of config sections")
    return data


def available_presets() -> list[str]:
    """Names of the YAML presets in experiments/configs."""
    return sorted(path.stem for path in PRESET_DIR.glob("*.yaml"))


def parse_override(text: str) -> dict[str, Any]:
    """Turn ``section.key=value`` (value in YAML syntax) into a nested dict."""
    name, sep, raw = text.partition("=")
    section, dot, key = name.strip().partition(".")
    _check(
        bool(sep and dot and section and key), f"--set {text!r} must look like section.key=value"
    )
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ConfigError(f"--set {text!r}: cannot parse the value") from None
    return {section: {key: value}}


def add_override_argument(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable `--set SECTION.KEY=VALUE` option (collected in `args.overrides`)."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one config value, e.g. --set optim.lr=3e-4 (repeatable)",
    )


def resolve(
    preset: str | None = DEFAULT_PRESET,
    config_file: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> Config:
    """Defaults, then the preset, then a YAML file, then each ``section.key=value`` override."""
    data: dict[str, Any] = {}
    if preset is not None:
        path = PRESET_DIR / f"{preset}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"unknown preset {preset!r}; choose one of: {', '.join(available_presets())}"
            )
        data = _merge(data, read_yaml(path))
    if config_file is not None:
        data = _merge(data, read_yaml(config_file))
    for text in overrides:
        data = _merge(data, parse_override(text))
    return from_dict(data)


def save_yaml(config: Config, path: str | Path) -> None:
    """Write the resolved config as YAML."""
    Path(path).write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
