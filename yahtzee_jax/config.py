"""Training configuration: the sections as frozen dataclasses, each value checked on creation.

Defaults follow the paper (Pape, Appendix B, Tables 6-7, A2C column); where the paper's own code
differs the choice is noted beside the field. Reading presets, YAML files and `--set` overrides
into a `Config` is `runner.configs`' (it knows the learners' own sections by name). A bad value
raises `ConfigError` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, ClassVar

from yahtzee_jax.errors import ConfigError

MATCH_REWARDS = ("win", "score", "naive", "gradient", "fixed", "moving-average")

DEFAULT_ALGO = "a2c"


def is_integer(value: object) -> bool:
    """Whether `value` is an integer, Python's or NumPy's, and not a bool (which Python
    counts as 1 or 0)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def require(condition: bool, message: str) -> None:
    """Raise `ConfigError(message)` unless `condition` holds."""
    if not condition:
        raise ConfigError(message)


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """Raise `ConfigError` unless `value` is one of `choices`."""
    require(value in choices, f"{name}={value!r} is not one of: {', '.join(choices)}")


# Seeds are unsigned 32-bit integers: JAX's PRNG takes any int64, and the runs add small offsets
# to a seed (the evaluations' games), so a 64-bit seed could overflow inside JAX.
MAX_SEED = 2**32 - 1
MAX_UPDATES = 2**31 - 1  # the device's update counter is an int32


def check_seed(name: str, value: int) -> None:
    """Raise `ConfigError` unless `value` is a seed, an integer in 0..MAX_SEED."""
    require(0 <= value <= MAX_SEED, f"{name}={value} must be in 0..{MAX_SEED} (2**32 - 1)")


def _check_fraction(name: str, value: float) -> None:
    require(0.0 <= value <= 1.0, f"{name}={value} must be in [0, 1]")


# Population hyperparameters. The metadata key of a `dynamic` field, and the key of the value
# that picks a branching field's cheaper code path.
DYNAMIC = "dynamic"
CHEAP_PATH = "cheap_path"


def dynamic(default: float, *, branches: bool = False) -> Any:
    """A float field that may differ between the members of a population (`population.py`).

    In a population's compiled chunk a dynamic field that differs between members holds the
    member's traced value instead of a Python number, so the code reading it may compute with
    it but not compare it with a number. A field the learner also tests to skip work (shaping
    off, no bonus curriculum) is declared `branches=True`: its default is the value that picks
    the cheaper code path, the learner asks `takes_default`, and a population whose members
    differ in it may have none at the default, so a traced value always means the other path.
    A subclass that changes the default declares the field `dynamic` again (a test checks it).
    """
    marks = {DYNAMIC: True, CHEAP_PATH: default} if branches else {DYNAMIC: True}
    return dataclasses.field(default=default, metadata=marks)


def field_mark(section: Any, name: str, key: str) -> Any:
    """Field `name`'s metadata `key` in a config section (class or instance), None if absent."""
    fields = {field.name: field for field in dataclasses.fields(section)}
    return fields[name].metadata.get(key) if name in fields else None


def cheap_path_value(section: Any, name: str) -> float | None:
    """The value of field `name` of a config section (class or instance) that picks its cheaper
    code path: its default if declared `dynamic(..., branches=True)`, else None."""
    return field_mark(section, name, CHEAP_PATH)


def takes_default(section: Any, name: str) -> bool:
    """Does the learner take branching field `name`'s cheaper path: does it hold its default as
    a Python number? A traced value (a population member's) does not: the population refuses
    members that differ in the field with one at the default (`population.varying_fields`)."""
    default = cheap_path_value(section, name)
    if default is None:
        raise TypeError(f"{name} is not declared dynamic(..., branches=True)")
    value = getattr(section, name)
    return isinstance(value, (int, float)) and value == default


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
    # "paper": the groups above; "kang": seed 001's 96 binary atomic features
    # (`envs.atomic_features`), the fields above then unused
    kind: str = "paper"

    def __post_init__(self) -> None:
        check_choice("features.kind", self.kind, ("paper", "kang"))
        check_choice("features.dice", self.dice, ("onehot", "counts", "combined"))


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
    # "state": one value V(s); "action": V(s) and an offset D(s, a) per engine action (45 in
    # Yahtzee), Q = V + D: a learner reading it (PPO, `algo.action_value_share`) takes part of
    # each decision's advantage from Q, which no die rolled after the decision moves
    value_head: str = "state"
    # Points per unit of the value head's outputs (V and D): with 100, the output layer works in
    # hundreds of points, so Adam's steps of about lr move the values 100x faster (the gradients
    # into the trunk grow by the same factor: divide algo.value_coef by it to keep them)
    value_scale: float = 1.0
    # The hidden blocks' arithmetic: "bfloat16" halves their memory traffic on a GPU's tensor
    # cores; the parameters, the optimizer and the heads' outputs stay float32.
    compute_dtype: str = "float32"
    # True: the value head reads a trunk of its own (as many blocks as the shared one, on the
    # same features) instead of the policy's, so the critic's regression and the policy's
    # gradient share no weights (the paper's network shares them)
    critic_trunk: bool = False

    def __post_init__(self) -> None:
        require(self.hidden_size >= 1, f"network.hidden_size={self.hidden_size} must be >= 1")
        check_choice("network.compute_dtype", self.compute_dtype, ("float32", "bfloat16"))
        require(self.trunk_layers >= 0, f"network.trunk_layers={self.trunk_layers} must be >= 0")
        check_choice("network.activation", self.activation, ("swish", "relu"))
        require(0.0 <= self.dropout < 1.0, f"network.dropout={self.dropout} must be in [0, 1)")
        check_choice("network.roll_head", self.roll_head, ("categorical", "bernoulli"))
        check_choice("network.value_head", self.value_head, ("state", "action"))
        require(self.value_scale > 0, f"network.value_scale={self.value_scale} must be > 0")


@dataclasses.dataclass(frozen=True)
class AlgoConfig:
    """Base of every algorithm's config section: `name` picks the algorithm in the registry.

    Each algorithm module defines its own subclass (its fields and their defaults, the paper's
    Table 7 column); `from_dict` reads `algo.name` first and builds that class.
    """

    name: str = "a2c"
    # What the learner asks of the runner (class attributes of its section, not settings).
    # False: the compiled chunk's guard neither checks the parameters nor keeps the last good
    # ones (its metrics still stop the run). For tables of running averages of finite targets
    # (MAXQ-Q), which cannot turn non-finite, and where one pass over the 1.16 GB table and
    # the copy kept for a rollback cost several times the update itself
    guard_params: ClassVar[bool] = True
    # True: the periodic evaluations on a match environment are matches against the training
    # opponent (the optimal agent for `self`), with the win rate beside the mean score (td-win)
    evaluates_matches: ClassVar[bool] = False
    # True: the loss reads the action-value head (network.value_head=action), not one V(s)
    reads_action_values: ClassVar[bool] = False
    # True: the loss trains the actor-critic network's value head (A2C, PPO, REINFORCE), which
    # `network.critic_trunk` gives a trunk of its own
    trains_value_head: ClassVar[bool] = False

    def check(self, config: Config) -> None:
        """Checks that involve other sections (called once the whole config is built)."""


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """Adam with a warmup - plateau - linear decay learning-rate schedule (section 4.3.3)."""

    lr: float = dynamic(1e-4)  # alpha
    warmup: float = dynamic(0.05)  # fraction of updates, linear from min_lr_ratio * lr up to lr
    plateau: float = dynamic(0.70)  # fraction at lr; the remaining fraction decays linearly
    min_lr_ratio: float = dynamic(0.01)  # r_alpha (Table 6; the paper's code used 0.05)
    max_grad_norm: float = 1.0  # tau_clip; 0 disables clipping

    def __post_init__(self) -> None:
        require(self.lr > 0, f"optim.lr={self.lr} must be > 0")
        _check_fraction("optim.warmup", self.warmup)
        _check_fraction("optim.plateau", self.plateau)
        require(self.warmup + self.plateau <= 1.0, "optim.warmup + optim.plateau must be <= 1")
        require(0 < self.min_lr_ratio <= 1, f"optim.min_lr_ratio={self.min_lr_ratio} not in (0, 1]")
        require(self.max_grad_norm >= 0, f"optim.max_grad_norm={self.max_grad_norm} must be >= 0")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Run length, batching, evaluation and checkpoint schedule."""

    total_games: int = 1_000_000
    games_per_update: int = 20  # B, played in lockstep
    updates_per_chunk: int = 25  # K updates per compiled call (shrunk to divide the eval interval)
    seed: int = 0
    # Budgets count games: in a single-turn environment one game = 13 turns.
    eval_fraction: float = 0.01  # evaluate (and checkpoint) every 1 % of the updates
    eval_games: int = 1_000
    final_eval_games: int = 100_000
    final_compare_optimal: bool = True  # final report side by side with the optimal agent
    keep_checkpoints: int = 3
    # Local devices the game batch is sharded over (data parallel); 0 = all of them.
    devices: int = 0
    # Keep training a policy that has collapsed (`runner.collapse`) instead of stopping it.
    allow_collapse: bool = False

    def __post_init__(self) -> None:
        for field in ("total_games", "games_per_update", "updates_per_chunk", "eval_games"):
            value = getattr(self, field)
            require(value >= 1, f"train.{field}={value} must be >= 1")
        require(
            self.total_games >= self.games_per_update,
            f"train.total_games={self.total_games} is less than one update "
            f"(train.games_per_update={self.games_per_update})",
        )
        require(self.final_eval_games >= 0, "train.final_eval_games must be >= 0")
        require(self.keep_checkpoints >= 1, "train.keep_checkpoints must be >= 1")
        require(self.devices >= 0, f"train.devices={self.devices} must be >= 0 (0: all)")
        check_seed("train.seed", self.seed)
        # The update counter is an int32 on the device.
        require(
            self.total_updates <= MAX_UPDATES,
            f"train.total_games={self.total_games} is more than {MAX_UPDATES} updates of "
            f"train.games_per_update={self.games_per_update}",
        )
        require(
            0 < self.eval_fraction <= 1, f"train.eval_fraction={self.eval_fraction} not in (0, 1]"
        )

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

    def rounding_note(self) -> str | None:
        """One line when the games are not a whole number of updates (the last update is
        played whole), else None."""
        if self.total_games % self.games_per_update == 0:
            return None
        played, updates = self.total_updates * self.games_per_update, self.total_updates
        return (
            f"note: train.total_games={self.total_games} is not a whole number of updates of "
            f"train.games_per_update={self.games_per_update}: the run plays {played:,} games "
            f"({updates} update{'s' if updates > 1 else ''})"
        )

    def chunk_note(self) -> str | None:
        """One line when the chunk shrinks below half its size (a prime evaluation interval
        makes it 1: a compiled call, and a copy of the state, per update); else None."""
        wanted = min(self.updates_per_chunk, self.eval_interval)
        if 2 * self.chunk_updates > wanted:
            return None
        return (
            f"note: train.updates_per_chunk={self.updates_per_chunk} shrinks to "
            f"{self.chunk_updates}, the largest divisor of the {self.eval_interval}-update "
            f"evaluation interval: choose train.total_games or train.eval_fraction so that it "
            f"has a divisor near {wanted}"
        )


# The environment of a run when its config names none: Yahtzee's solitaire game, official rules.
DEFAULT_ENV = "Yahtzee-v0"


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """The environment: `id` and the params that `yahtzee_jax.make` takes.

    `id` is one of `yahtzee_jax.make`'s ids, ``{game}{task}-v0``: the game names the rule set
    (``Yahtzee``: official, ``YahtzeePlain``, ``Yatzy``, ...), the task the environment
    (``Yahtzee-v0`` whole solitaire games, ``YahtzeeSingleTurn-v0`` one turn on a random card,
    paper 3.3, ``YahtzeeMatch-v0`` games against opponents). The solitaire environments take
    no params; a match's are `MatchConfig`'s. The environments own the ids (`envs.tasks`,
    above this floor): `runner.configs` picks the section's class by `id`, as `algo`'s by name.
    """

    id: str = DEFAULT_ENV


@dataclasses.dataclass(frozen=True)
class MatchConfig(EnvConfig):
    """A match's params, by `yahtzee_jax.make`'s names (players, opponent, reward), and the two
    a learner's match adds: the opponents' cards in its input and how often a `self` opponent
    copies it."""

    id: str = "YahtzeeMatch-v0"
    players: int = 2  # seats, the learner's included
    # The opponents, one name for all of them or a comma-separated name per seat after the
    # learner's: optimal | greedy1-3 | random | self (the frozen learner). The agents own the
    # names (`agents.resolve`, above this floor): `runner.configs` checks them.
    opponent: str = "optimal"
    reward: str = "win"  # win | score | naive | gradient | fixed | moving-average
    opponent_features: bool = True  # Yuan's groups per opponent in the network's input
    opponent_refresh: int = 100  # updates between copies of the learner into a `self` opponent

    def __post_init__(self) -> None:
        require(2 <= self.players <= 6, f"env.players={self.players} must be in 2..6")
        require(
            len(self.opponent.split(",")) in (1, self.players - 1),
            f"env.opponent={self.opponent!r}: one name, or one per opponent "
            f"({self.players - 1} for env.players={self.players})",
        )
        check_choice("env.reward", self.reward, MATCH_REWARDS)
        require(self.opponent_refresh >= 1, f"env.opponent_refresh={self.opponent_refresh} >= 1")
        require(
            self.players == 2 or "self" not in self.opponents or not self.opponent_features,
            "env.opponent=self with env.opponent_features needs env.players=2",
        )

    @property
    def opponents(self) -> tuple[str, ...]:
        """One opponent name per seat after the learner's."""
        names = tuple(name.strip() for name in self.opponent.split(","))
        return names * (self.players - 1) if len(names) == 1 else names


SECTIONS: dict[str, type] = {
    "features": FeatureConfig,
    "network": NetworkConfig,
    "algo": AlgoConfig,
    "optim": OptimConfig,
    "train": TrainConfig,
    "env": EnvConfig,
}


@dataclasses.dataclass(frozen=True)
class Config:
    """The whole run configuration."""

    features: FeatureConfig = FeatureConfig()
    network: NetworkConfig = NetworkConfig()
    # The learner's own section class (`runner.configs.from_dict` picks it by `algo.name`); the
    # bare base class here only names the default learner.
    algo: AlgoConfig = AlgoConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()
    # The environment's class by its id (`runner.configs.from_dict`): `MatchConfig` for a match.
    env: EnvConfig = EnvConfig()

    def __post_init__(self) -> None:
        self.algo.check(self)
        require(
            self.network.value_head == "state" or self.algo.reads_action_values,
            f"network.value_head={self.network.value_head} needs a learner that reads action "
            f"values (ppo); {self.algo.name} reads one value per state",
        )
        require(
            not self.network.critic_trunk or self.algo.trains_value_head,
            f"network.critic_trunk needs an actor-critic learner (a2c, ppo, reinforce); "
            f"{self.algo.name} trains no value head of that network",
        )

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain nested dict (YAML/JSON friendly)."""
        return dataclasses.asdict(self)
