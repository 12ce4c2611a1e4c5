"""`yahtzee-jax play`: reading the person's lines, and whole games driven by scripted input."""

from __future__ import annotations

import argparse
import io
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import pytest
from positions import card as position

from yahtzee_jax.agents import Agent
from yahtzee_jax.commands import terminal
from yahtzee_jax.commands.cli import main
from yahtzee_jax.commands.terminal import InputError, keep_action, parse_box, parse_line
from yahtzee_jax.game import KEEP_ALL, NUM_KEEP_ACTIONS, OFFICIAL, Category, legal_action_mask
from yahtzee_jax.game.engine import LAST_ROLL, total_score

ROLL_LINE = re.compile(r"Turn (\d+)/13, roll (\d)/3: ([1-6 ]+)")


def test_keep_by_typed_dice() -> None:
    """Dice 1 5 6 6 6 (sorted positions 0..4): '665' keeps positions 2, 3 and 4 (6, 6) and 1 (5).

    Kept faces are matched to positions from the left, so bit i means sorted die i."""
    dice = (1, 5, 6, 6, 6)
    assert keep_action([6, 6, 5], dice) == 0b01110
    assert keep_action([], dice) == 0
    assert keep_action([1, 5, 6, 6, 6], dice) == KEEP_ALL
    with pytest.raises(InputError, match="cannot keep 5 5"):
        keep_action([5, 5], dice)


@pytest.mark.parametrize(
    "line, actions",
    [
        ("keep 6 6 5", (0b01110,)),
        ("665", (0b01110,)),
        ("k 6,6,5", (0b01110,)),
        ("all", (KEEP_ALL,)),
        ("none", (0,)),
        ("0", (0,)),
        # A box at a keep decision stops rolling: keep all five at each re-roll left, then score.
        ("chance", (KEEP_ALL, KEEP_ALL, NUM_KEEP_ACTIONS + Category.CHANCE)),
        ("score 6", (KEEP_ALL, KEEP_ALL, NUM_KEEP_ACTIONS + Category.SIXES)),
        ("3k", (KEEP_ALL, KEEP_ALL, NUM_KEEP_ACTIONS + Category.THREE_OF_A_KIND)),
    ],
)
def test_lines_at_the_first_roll(line: str, actions: tuple[int, ...]) -> None:
    """Dice 1 5 6 6 6 at roll 1 of an empty card: digits are dice, words are boxes."""
    card = position((1, 5, 6, 6, 6))
    assert parse_line(line, card, OFFICIAL).actions == actions


@pytest.mark.parametrize(
    "line, message",
    [
        ("xyz", "not understood"),
        ("keep 7", "dice show 1 to 6"),
        ("666666", "only 5 dice"),
        ("keep 2", "cannot keep 2"),
        ("", "type the dice"),
        ("score 14", "no box called"),
    ],
)
def test_bad_lines_at_a_keep_decision(line: str, message: str) -> None:
    """Each bad line gives one message (the prompt is then repeated by the loop)."""
    with pytest.raises(InputError, match=message):
        parse_line(line, position((1, 5, 6, 6, 6)), OFFICIAL)


def test_lines_at_the_scoring_decision() -> None:
    """Last roll, Fours used: a number is a box; a used box, dice, or a Joker-forbidden box fail.

    Dice 3 3 3 3 3 with 50 in Yahtzee and Threes open: the official Joker forces Threes."""
    card = position((2, 3, 4, 4, 4), scores={Category.FOURS: 12}, roll_index=2)
    assert parse_line("7", card, OFFICIAL).actions == (NUM_KEEP_ACTIONS + 6,)
    assert parse_line("Full House", card, OFFICIAL).actions == (NUM_KEEP_ACTIONS + 8,)
    with pytest.raises(InputError, match="Fours is already used"):
        parse_line("4", card, OFFICIAL)
    with pytest.raises(InputError, match="no re-rolls left"):
        parse_line("44", card, OFFICIAL)
    joker = position((3,) * 5, scores={Category.YAHTZEE: 50}, roll_index=2)
    with pytest.raises(InputError, match="Joker rule does not allow Chance now; allowed: Threes"):
        parse_line("chance", joker, OFFICIAL)


def test_box_names() -> None:
    """Names, labels, short names and numbers all reach the same box; unknown words do not."""
    for text in ("full_house", "Full house", "fh", "9", "FULL-HOUSE"):
        assert parse_box(text, True, OFFICIAL) == Category.FULL_HOUSE
    assert (
        parse_box("ls", True, OFFICIAL)
        == parse_box("large straight", True, OFFICIAL)
        == Category.LARGE_STRAIGHT
    )
    assert parse_box("9", False, OFFICIAL) is None and parse_box("fullhose", True, OFFICIAL) is None


class ScriptedConsole:
    """A console whose answers come from `reply(prompt, transcript)`; None means end of input."""

    def __init__(self, reply: Callable[[str, list[str]], str | None]):
        self.reply = reply
        self.transcript: list[str] = []
        self.prompts = 0

    def ask(self, prompt: str) -> str:
        """Record the prompt and answer it (EOFError when the script has nothing more)."""
        self.prompts += 1
        answer = self.reply(prompt, self.transcript)
        if answer is None:
            raise EOFError
        self.transcript.append(prompt + answer)
        return answer

    def say(self, text: str = "") -> None:
        """Record the text, line by line."""
        self.transcript.extend(text.split("\n"))

    @property
    def text(self) -> str:
        """The whole transcript."""
        return "\n".join(self.transcript)


def args(**overrides) -> argparse.Namespace:
    """The `play` command's arguments with its defaults."""
    values = dict(hint=False, against=None, watch=None, seed=5, rules=None, common_dice=False)
    values.update(cache_dir=None, beat=None)
    values.update(overrides)
    return argparse.Namespace(**values)


def box_order_player(errors_on_turn: int = 2) -> Callable[[str, list[str]], str | None]:
    """A person who keeps the two lowest dice at roll 1, keeps all at roll 2, then scores box t
    at turn t (always legal: no Joker can be forced before the Yahtzee box is used, and at turn
    13 only Chance is open). At `errors_on_turn` they first type three bad lines."""
    pending: list[str] = []

    def reply(prompt: str, transcript: list[str]) -> str | None:
        if pending:
            return pending.pop(0)
        turn, roll, dice = next(
            (int(m[1]), int(m[2]), m[3].split())
            for m in map(ROLL_LINE.search, reversed(transcript))
            if m
        )
        if prompt == "keep> " and roll == 1:
            if turn == errors_on_turn and not any("not understood" in line for line in transcript):
                pending.extend(["keep 9", f"{dice[0]} {dice[1]}"])
                return "nonsense"
            return f"keep {dice[0]} {dice[1]}"
        if prompt == "keep> ":
            return "all"
        if turn == errors_on_turn and not any("already used" in line for line in transcript):
            pending.append(str(turn))
            return "1"  # Ones, used at turn 1
        return f"score {turn}"

    return reply


def test_full_game_with_hints_bad_input_and_the_final_card() -> None:
    """A whole scripted game with --hint: 13 turns of 3 rolls, hints and costs at every decision,
    three bad lines each answered by one message and the same prompt, the card after each turn,
    and a final total equal to the card's."""
    console = ScriptedConsole(box_order_player())
    assert terminal.run(args(hint=True), console) == 0
    text = console.text
    assert len(re.findall(r"Turn \d+/13, roll 1/3", text)) == 13
    assert text.count("advisor (expected final score):") == 39
    assert len(re.findall(r"  cost \d+\.\d\d expected points", text)) == 39
    for bad, message in (("nonsense", "not understood"), ("keep 9", "dice show 1 to 6")):
        index = console.transcript.index(f"keep> {bad}")
        assert message in console.transcript[index + 1]
        assert console.transcript[index + 2].startswith("keep> ")  # the same prompt again
    index = console.transcript.index("score> 1")
    assert "Ones is already used" in console.transcript[index + 1]
    assert console.transcript[index + 2].startswith("score> ")
    assert text.count("   total ") == 13  # the card after every turn
    final_total = int(re.findall(r"   total\s+(\d+)", text)[-1])
    assert re.search(rf"Game over: you {final_total}\. Choices cost \d+\.\d\d expected", text)
    assert "End of input" not in text


def test_against_an_agent_shows_its_moves_and_the_winner() -> None:
    """--against greedy1: the agent's 39 decisions are shown, both cards are drawn, and the
    result names the winner by the margin of the two final totals (or a draw)."""
    console = ScriptedConsole(box_order_player(errors_on_turn=0))
    assert terminal.run(args(against="greedy1"), console) == 0
    text = console.text
    assert len(re.findall(r"  greedy1, turn \d+, roll \d: [1-6 ]+ -> ", text)) == 39
    assert len(re.findall(r"greedy1 scores \d+ in ", text)) == 13
    you, agent = map(int, re.findall(r"   total\s+(\d+)\s+(\d+)", text)[-1])
    result = re.search(r"Game over: you (\d+); greedy1 (\d+)\. (.*)", text)
    assert (int(result[1]), int(result[2])) == (you, agent)
    if you == agent:
        assert result[3] == "A draw."
    else:
        winner = "you" if you > agent else "greedy1"
        assert result[3] == f"{winner} wins by {abs(you - agent)}."


def test_watch_needs_no_input_and_comments_every_decision() -> None:
    """--watch greedy2: the agent plays 39 decisions, each followed by the advisor's comment;
    greedy2 never re-rolls twice, so its second keeps are 'keep all' (cost >= 0)."""

    def no_input(prompt: str, transcript: list[str]) -> str | None:
        raise AssertionError(f"watch asked for input: {prompt!r}")

    console = ScriptedConsole(no_input)
    assert terminal.run(args(watch="greedy2"), console) == 0
    text = console.text
    assert text.count("    advisor: cost ") == 39
    assert len(re.findall(r"greedy2, turn \d+, roll 2: [1-6 ]+ -> keep all", text)) == 13
    assert "Game over: greedy2 " in text


def test_end_of_input_and_quit_leave_with_status_0(monkeypatch, capsys) -> None:
    """From the command line with stdin at its end: one line, exit 0; 'quit' likewise."""
    monkeypatch.setattr("sys.stdin", io.StringIO("xyz\n"))
    assert main(["play", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "keep> xyz\n  not understood: 'xyz' (type help)\nkeep> \n" in out
    assert out.rstrip().endswith("End of input: game left unfinished.")
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(["play", "--seed", "3"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("You left the game.")


def test_the_readme_hint_command_in_a_fresh_process() -> None:
    """`yahtzee-jax play --hint` as a person starts it, in a fresh process (the import order
    of the command itself, not of this test session): the first decision shows the advisor's
    values, then 'quit' leaves with status 0. It printed a traceback once, when the command
    imported the advisor's module before asking the solver package for `advise`."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "yahtzee_jax.commands.cli", "play", "--hint", "--seed", "1"]
    done = subprocess.run(command, input="quit\n", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "advisor (expected final score):" in done.stdout and "best" in done.stdout
    assert done.stdout.rstrip().endswith("You left the game.")


def test_ctrl_c_exits_130_with_one_line(monkeypatch, capsys) -> None:
    """Ctrl-C at a prompt: the prompt's line is ended, stderr has one line, status 130."""

    def interrupt(self, prompt: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(terminal.StreamConsole, "ask", interrupt)
    assert main(["play", "--seed", "3"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "yahtzee-jax play: interrupted\n"


def test_unknown_agent_is_one_line_exit_2(capsys) -> None:
    """--against with an unknown agent: the usual one-line error, before any game starts."""
    assert main(["play", "--against", "nobody"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err


def test_an_agent_that_reads_its_opponent_sees_the_persons_card_as_it_is() -> None:
    """--against with an agent that reads other cards: it is asked with the person's card of
    the moment. This agent keeps all five dice at its first roll when the person's total is odd
    and re-rolls all when it is even, so each of its turns shows what it read; the person has
    already scored the turn when the agent plays, so that total is the one on the card drawn
    after the turn."""

    def read_one(own, other):
        odd = total_score(other, OFFICIAL) % 2 == 1
        lowest_legal_box = jnp.argmax(legal_action_mask(own, OFFICIAL)[NUM_KEEP_ACTIONS:])
        keep = jnp.where(odd, KEEP_ALL, 0)
        return jnp.where(own.roll_index == LAST_ROLL, NUM_KEEP_ACTIONS + lowest_legal_box, keep)

    def read_opponent(params, owns, others, keys):  # batched: own [B], others [B, 1]
        if others.dice.shape[1] != 1:
            raise AssertionError("a match asked it alone")
        return jax.vmap(read_one)(owns, jax.tree.map(lambda leaf: leaf[:, 0], others))

    reader = Agent("reader", read_opponent, None, OFFICIAL, reads_others=True)
    console = ScriptedConsole(box_order_player(errors_on_turn=0))
    seats = [terminal.Seat(terminal.PERSON), terminal.Seat("reader", reader)]
    terminal.TerminalGame(console, seats, OFFICIAL, seed=6).run()
    text = console.text
    first_keeps = re.findall(r"  reader, turn \d+, roll 1: [1-6 ]+ -> (.*)", text)
    person_totals = [int(you) for you, _ in re.findall(r"   total\s+(\d+)\s+(\d+)", text)]
    assert len(first_keeps) == len(person_totals) == 13
    read = ["keep all" if total % 2 else "re-roll all" for total in person_totals]
    assert first_keeps == read
    assert {"keep all", "re-roll all"} == set(read)  # both kinds of turn happened
