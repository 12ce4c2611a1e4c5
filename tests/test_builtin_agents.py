"""The built-in agents' table (`agents.resolve.BUILTINS`): what each takes and where it sits.

Commands ask the table, never a name, so the table must say what the builders do: each
entry's options are its builder's keyword parameters, and an option a player does not take is
refused in one line before anything is built (no table is solved or loaded)."""

from __future__ import annotations

import argparse
import inspect

import pytest

from yahtzee_jax.agents import BUILTINS, OPPONENTS, builtin_agent
from yahtzee_jax.agents.resolve import MATCH_PLAYERS, PLAYER_OPTIONS, option_flag
from yahtzee_jax.algorithms.distill import TEACHER_AGENTS
from yahtzee_jax.commands.match import add_arguments
from yahtzee_jax.errors import UserError


def test_each_entry_takes_exactly_the_options_its_builder_takes() -> None:
    """The builder's parameters after (rules, cache_dir) are the entry's options, and every
    option some player takes is a flag of `match` (which passes the given ones on)."""
    for name, entry in BUILTINS.items():
        parameters = list(inspect.signature(entry.build).parameters)
        assert parameters[:2] == ["rules", "cache_dir"], name
        assert parameters[2:] == list(entry.options), name
    taken = {option for entry in BUILTINS.values() for option in entry.options}
    assert taken == set(PLAYER_OPTIONS)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {action.dest: action.option_strings for action in parser._actions}
    for option in PLAYER_OPTIONS:  # each is a flag of `match`, which passes it on
        assert flags[option] == [option_flag(option)], option


def test_the_seats_are_the_documented_ones() -> None:
    """Opponents: the optimal agent and the baselines (docs/usage.md's `--opponent`); the
    evaluated seat of `match NAME`: the optimal agent and the solver's two match players; the
    decision-table agent neither (it is for long evaluations); teachers: the agents that play
    for points."""
    assert OPPONENTS == ("optimal", "greedy1", "greedy2", "greedy3", "random")
    assert set(MATCH_PLAYERS) == {"optimal", "target-seeker", "win-seeker"}
    assert "optimal-table" not in OPPONENTS + MATCH_PLAYERS
    assert all(BUILTINS[name].loading for name in ("target-seeker", "win-seeker"))
    # a distill teacher plays a card for its points: not the match players (they play for wins)
    assert set(TEACHER_AGENTS) == {*OPPONENTS, "optimal-table"}


def _listed(sentence_start: str) -> list[str]:
    """The names in backticks of the docs/usage.md sentence beginning `sentence_start`, up to
    the sentence's first semicolon."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "usage.md").read_text()
    start = text.index(sentence_start)
    sentence = text[start : text.index(";", start)].replace("`--target X`", "")
    return re.findall(r"`([a-z0-9-]+)`", sentence)


def test_the_manual_lists_every_agent_and_learner() -> None:
    """docs/usage.md's lists of AGENT names and of `algo.name` values are the code's own, in
    its order (they had fallen behind: no target-seeker, optimal-table, target or td-win)."""
    from yahtzee_jax.agents.resolve import TARGET
    from yahtzee_jax.algorithms import algorithm_names

    assert _listed("AGENT is one of") == [*BUILTINS, TARGET]
    assert _listed("`algo.name` is one of") == list(algorithm_names())


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("win-seeker", {"hindsight_weight": 0.5}, "--hindsight-weight is the target-seeker's, not"),
        ("optimal", {"before_endgame": "normal"}, "--before-endgame is the win-seeker's, not"),
        ("greedy2", {"lookahead": 2}, "greedy2 takes no --lookahead"),
        ("target-seeker", {"hindsight_weight": 1.5}, "--hindsight-weight=1.5; choose 0 to 1"),
        ("win-seeker", {"endgame_open": 13}, "--endgame-open=13; choose 0 to 12"),
    ],
)
def test_an_option_the_player_does_not_take_is_one_line_before_any_build(
    name, options, message, monkeypatch
) -> None:
    """Refused before any agent is made: the makers the builders call are made to fail if
    reached, and the error is still the option's, in one line."""
    from yahtzee_jax.agents import target_seeker, widget_agents, win_seeker

    def never(*args, **kwargs):
        raise AssertionError("an agent was made")

    monkeypatch.setattr(target_seeker, "target_seeker_agent", never)
    monkeypatch.setattr(win_seeker, "win_seeker_agent", never)
    monkeypatch.setattr(widget_agents, "make_optimal_agent", never)
    monkeypatch.setattr(widget_agents, "make_greedy_agent", never)
    with pytest.raises(UserError, match=message) as raised:
        builtin_agent(name, "official", **options)
    assert "\n" not in str(raised.value)


def test_the_options_given_reach_the_maker_over_the_defaults(monkeypatch) -> None:
    """The win-seeker made with endgame_open 2 gets 2 and the default before_endgame
    ("normal"), in the maker's own argument order."""
    from yahtzee_jax.agents import win_seeker

    calls = []
    monkeypatch.setattr(win_seeker, "win_seeker_agent", lambda *args: calls.append(args))
    builtin_agent("win-seeker", "plain", "/tmp/cache", endgame_open=2)
    ((rules, cache_dir, endgame_open, before_endgame),) = calls
    assert (rules.name, cache_dir, endgame_open, before_endgame) == (
        "plain",
        "/tmp/cache",
        2,
        "normal",
    )


def test_the_python_api_page_names_what_imports() -> None:
    """Every dotted `yahtzee_jax....` name of docs/reference_api.md's Python API section imports
    (eight of them had moved in the floors' reorganisation and failed), and its code runs."""
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "reference_api.md").read_text()
    section = text[text.index("## Python API") : text.index("## Layout")]
    names = set(re.findall(r"\b(yahtzee_jax(?:\.\w+)+)", section))
    assert len(names) >= 12
    for name in sorted(names):
        module, _, attribute = name.rpartition(".")
        try:
            importlib.import_module(name)  # a module
        except ModuleNotFoundError:
            assert hasattr(importlib.import_module(module), attribute), name
    code = section[
        section.index("```python") + 9 : section.index("```", section.index("```python") + 9)
    ]
    exec(compile(code, "reference_api.md", "exec"), {})
