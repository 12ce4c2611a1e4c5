"""Built-in agents by name: one table of what each is, takes and may do.

Each entry says how the agent is built, the options it takes (with their defaults), and the
seats it may fill: an opponent's (`--opponent`, a config's `env.opponent`), the evaluated seat
of `match NAME`. Commands ask the table, never a name: a player's options are checked against
what it takes, so a new built-in agent is one entry here.

A trained run's checkpoint is an agent too, but loading one is the runner's
(`runner.checkpointing.resolve_agent` takes either a name or a path). Each builder imports its
module when called: solving a table is only paid for by who asks for it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules, get_rules

if TYPE_CHECKING:
    from yahtzee_jax.agents.agent import Agent


def _optimal(rules: Rules, cache_dir: str | os.PathLike | None) -> Agent:
    from yahtzee_jax.agents.widget_agents import make_optimal_agent

    return make_optimal_agent(rules, cache_dir=cache_dir)


def _greedy(level: int, rules: Rules, cache_dir: str | os.PathLike | None) -> Agent:
    from yahtzee_jax.agents.widget_agents import make_greedy_agent

    return make_greedy_agent(level, rules)


def _random(rules: Rules, cache_dir: str | os.PathLike | None) -> Agent:
    from yahtzee_jax.agents.agent import make_random_agent

    return make_random_agent(rules)


def _optimal_table(rules: Rules, cache_dir: str | os.PathLike | None) -> Agent:
    from yahtzee_jax.agents.decision_table import make_decision_table_agent

    return make_decision_table_agent(rules, cache_dir=cache_dir)


def _target_seeker(
    rules: Rules,
    cache_dir: str | os.PathLike | None,
    hindsight_weight: float,
    hindsight_schedule: str | None,
    joint_endgame: str,
) -> Agent:
    from yahtzee_jax.agents.target_seeker import target_seeker_agent
    from yahtzee_jax.solver.seeker_policy import schedule_from_file

    if not 0.0 <= hindsight_weight <= 1.0:  # NaN too
        raise UserError(f"--hindsight-weight={hindsight_weight}; choose 0 to 1")
    if joint_endgame not in JOINT_ENDGAME:
        raise UserError(f"--joint-endgame={joint_endgame!r}; choose one of: {JOINT_ENDGAME}")
    joint = joint_endgame == "exact"
    if hindsight_schedule is None:
        return target_seeker_agent(rules, cache_dir, hindsight_weight, joint)
    if hindsight_weight != 1.0:
        raise UserError("--hindsight-weight or --hindsight-schedule, not both")
    schedule = schedule_from_file(hindsight_schedule, rules)
    return target_seeker_agent(rules, cache_dir, schedule, joint)


def _win_seeker(
    rules: Rules,
    cache_dir: str | os.PathLike | None,
    endgame_open: int | None,
    before_endgame: str,
) -> Agent:
    from yahtzee_jax.agents.win_seeker import win_seeker_agent

    if endgame_open is not None and not 0 <= endgame_open <= 12:
        raise UserError(f"--endgame-open={endgame_open}; choose 0 to 12")
    return win_seeker_agent(rules, cache_dir, endgame_open, before_endgame)


JOINT_ENDGAME = ("exact", "hindsight")  # the target-seeker's joint endgame: solved, or not


@dataclasses.dataclass(frozen=True)
class BuiltinAgent:
    """A built-in agent: how it is built, the options it takes, the seats it may fill."""

    build: Callable[..., Agent]  # (rules, cache_dir, **options)
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # name -> default
    opponent: bool = False  # may fill an opponent's seat
    match_player: bool = False  # may fill `match NAME`'s evaluated seat
    for_points: bool = True  # plays a card for its points (a match player plays for the win)
    loading: str = ""  # said before a build that may take minutes (its tables, the first time)
    players: int | None = None  # the match seats it can play in, when not any number


BUILTINS: dict[str, BuiltinAgent] = {
    "optimal": BuiltinAgent(_optimal, opponent=True, match_player=True),
    **{
        f"greedy{level}": BuiltinAgent(functools.partial(_greedy, level), opponent=True)
        for level in (1, 2, 3)
    },
    "random": BuiltinAgent(_random, opponent=True),
    # The solver's stronger match player: every turn's end for its exact chance to win, from
    # both target tables (`agents.target_seeker`); its hindsight weight 1 was kept by the
    # ablation on seed 10 (docs/two_player/target_seeker.md), 0 is the exact valuation; a
    # schedule gives a weight to each turn and seat (a JSON file's "weights"); the first seat's
    # second-to-last turn of a two-player match is solved exactly ("exact", `solver.joint_endgame`)
    # or valued as the other turns ("hindsight").
    "target-seeker": BuiltinAgent(
        _target_seeker,
        {"hindsight_weight": 1.0, "hindsight_schedule": None, "joint_endgame": "exact"},
        match_player=True,
        for_points=False,
        loading="Loading the target-seeker's two target tables (3.4 GB; the first time they are "
        "solved: about 5 minutes on a 2-core CPU, then cached).",
    ),
    # The solver's first match player: it reads the opponent's card (`agents.win_seeker`);
    # endgame_open None is the solver's own setting (`solver.endgame.ENDGAME_OPEN`).
    "win-seeker": BuiltinAgent(
        _win_seeker,
        {"endgame_open": None, "before_endgame": "normal"},
        match_player=True,
        for_points=False,
        players=2,  # its tables are of one opponent's score
        loading="Loading the win-seeker's tables (the first time they are computed: about 3 "
        "minutes on a 2-core CPU, then cached).",
    ),
    # The optimal agent with its keeps read from a table built first (`agents.decision_table`):
    # for long evaluations only, so neither an opponent nor a match seat.
    "optimal-table": BuiltinAgent(_optimal_table),
}
AGENT_NAMES = tuple(BUILTINS)
# Every option some built-in player takes (each a flag of `match`, which passes those given on).
PLAYER_OPTIONS = tuple(dict.fromkeys(name for entry in BUILTINS.values() for name in entry.options))
OPPONENTS = tuple(name for name, entry in BUILTINS.items() if entry.opponent)
MATCH_PLAYERS = tuple(name for name, entry in BUILTINS.items() if entry.match_player)
# The target agent plays for a final score X it is given (`agents.target`): not built by name.
TARGET = "target"


def option_flag(name: str) -> str:
    """An option's command-line flag: hindsight_weight -> --hindsight-weight."""
    return "--" + name.replace("_", "-")


def builtin_agent(
    spec: str, rules: str | Rules, cache_dir: str | os.PathLike | None = None, **options: Any
) -> Agent:
    """The built-in agent named by `spec` (one of `AGENT_NAMES`) playing `rules`, with the
    options it takes (`BUILTINS[spec].options`; the others are a one-line error);
    `cache_dir` is the solver's."""
    entry = BUILTINS.get(spec)
    if entry is None:
        if spec == TARGET:
            raise UserError("the target agent plays for a score X: evaluate target --target X")
        choices = ", ".join(AGENT_NAMES)
        raise UserError(f"unknown agent {spec!r}; choose one of: {choices}, or a checkpoint path")
    for name in options:
        if name not in entry.options:
            takers = " and ".join(other for other, kind in BUILTINS.items() if name in kind.options)
            if not takers:
                raise UserError(f"{spec} takes no {option_flag(name)}")
            raise UserError(f"{option_flag(name)} is the {takers}'s, not {spec}'s")
    return entry.build(get_rules(rules), cache_dir, **{**entry.options, **options})
