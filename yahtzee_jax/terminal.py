"""`yahtzee-jax play`: Yahtzee in the terminal for a person, with the optimal advisor.

The person types what to keep ("keep 6 6 5", "665", "all", "none") and which box to score (by
name, short name or number); the score card is drawn after every turn. `--hint` shows the
optimal advisor's best actions with their expected final scores before each decision and, after
it, what the person's choice cost in expected points; `--against AGENT` adds an agent in the
second seat whose moves are shown (an agent that reads its opponent's card, such as the solver's
`win-seeker` or a two-player learner, reads the person's); `--watch AGENT` lets an agent play
alone while the advisor comments on each of its decisions.

Every game is a match of the two-player engine (`yahtzee_jax.game.multiplayer`, one seat for a
solitaire game), stepped with the keys of `decision_keys`: a solitaire game with `--seed S` has
the dice stream of game 0 of `yahtzee-jax evaluate --seed S`.

Input and output go through a `Console` (`ask(prompt)` reads one line, `say(text)` writes), so
the whole loop runs from scripted input in the tests. A keystroke that is not understood gets a
one-line message and the same prompt; end of input (Ctrl-D) leaves with status 0 and Ctrl-C with
130 (the command line's handler), each with one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import secrets
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents import AGENT_NAMES, WIN_SEEKER, Agent, resolve_agent
from yahtzee_jax.game import engine
from yahtzee_jax.game import multiplayer as mp
from yahtzee_jax.game.engine import LAST_ROLL, State, batch_of_one
from yahtzee_jax.game.rules import (
    CATEGORY_NAMES,
    DECISIONS_PER_TURN,
    KEEP_ALL,
    NUM_CATEGORIES,
    NUM_DICE,
    NUM_KEEP_ACTIONS,
    NUM_TURNS,
    NUM_UPPER,
    UPPER_BONUS,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_BONUS,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.advise import action_text

BOX_LABELS = (
    "Ones",
    "Twos",
    "Threes",
    "Fours",
    "Fives",
    "Sixes",
    "3 of a kind",
    "4 of a kind",
    "Full house",
    "Small straight",
    "Large straight",
    "Yahtzee",
    "Chance",
)
_SHORT_BOX_NAMES = {"3k": 6, "4k": 7, "fh": 8, "ss": 9, "sm": 9, "ls": 10, "lg": 10}
HINT_TOP = 3
KEEP_NOTHING = 0
PERSON = "you"

HELP = """\
At a roll with re-rolls left:
  keep 6 6 5  or  665     keep those dice, re-roll the others
  all                     keep all five (no re-roll)
  none  or  0             re-roll all five
  a box (fours, 3k, ...)  stop rolling and score it now; "score 4" scores box 4
At the last roll: a box by name, short name (3k 4k fh ss ls) or number 1-13.
Any time: card (the score card), hint (the advisor's view), help, quit. Ctrl-D leaves."""


class Console(Protocol):
    """Where the game reads the person's lines and writes its text."""

    def ask(self, prompt: str) -> str:
        """Show `prompt`, return the next line without its newline; EOFError at end of input."""
        ...

    def say(self, text: str = "") -> None:
        """Write one or more lines."""
        ...


class StreamConsole:
    """A `Console` over text streams (a terminal by default).

    On a terminal, `input()` reads the line (so line editing works); from any other stream the
    line read is echoed after the prompt, so a scripted game's output reads as a transcript.
    """

    def __init__(self, input_stream: TextIO | None = None, output_stream: TextIO | None = None):
        self.input = input_stream if input_stream is not None else sys.stdin
        self.output = output_stream if output_stream is not None else sys.stdout
        self.interactive = (
            self.input is sys.stdin and self.output is sys.stdout and (sys.stdin.isatty())
        )

    def ask(self, prompt: str) -> str:
        """Show `prompt`, return the next line; EOFError at end of input."""
        if self.interactive:
            try:
                return input(prompt)
            except EOFError:
                self.output.write("\n")  # Ctrl-D leaves the cursor after the prompt
                raise
        self.output.write(prompt)
        line = self.input.readline()
        if not line:
            self.output.write("\n")
            raise EOFError
        self.output.write(line if line.endswith("\n") else line + "\n")
        return line.rstrip("\r\n")

    def say(self, text: str = "") -> None:
        """Write `text` and a newline."""
        self.output.write(text + "\n")
        self.output.flush()


class InputError(ValueError):
    """A line the game could not use; its message is shown and the prompt repeated."""


class LeaveGame(Exception):
    """The person typed quit."""


# --------------------------------------------------------------------------------------------
# Reading the person's lines
# --------------------------------------------------------------------------------------------


def _normalized(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


_BOX_BY_NAME = {
    **{_normalized(name): box for box, name in enumerate(CATEGORY_NAMES)},
    **{_normalized(label): box for box, label in enumerate(BOX_LABELS)},
    **_SHORT_BOX_NAMES,
}


def parse_box(text: str, numbers: bool = True) -> int | None:
    """The box named by `text` (name, label, short name, or number 1-13 when `numbers`)."""
    key = _normalized(text)
    if numbers and key.isdigit() and 1 <= int(key) <= NUM_CATEGORIES:
        return int(key) - 1
    return _BOX_BY_NAME.get(key)


def keep_action(kept_faces: list[int], dice: tuple[int, ...]) -> int:
    """The keep action (bit i keeps sorted die i) keeping `kept_faces` out of `dice`."""
    wanted = Counter(kept_faces)
    missing = wanted - Counter(dice)
    if missing:
        faces = " ".join(map(str, sorted(kept_faces)))
        raise InputError(f"cannot keep {faces}: the dice are {_dice_text(dice)}")
    action = 0
    for position, face in enumerate(dice):
        if wanted[face] > 0:
            wanted[face] -= 1
            action |= 1 << position
    return action


@dataclasses.dataclass(frozen=True)
class Command:
    """What a line asks for: actions to play, or something to show."""

    actions: tuple[int, ...] = ()
    show: str | None = None  # "help", "card" or "hint"


def parse_line(line: str, card: State, rules: Rules) -> Command:
    """Turn one typed line into a `Command` for the card's current decision; InputError if not."""
    text = line.strip().lower()
    if not text:
        raise InputError("type the dice to keep, a box, or help")
    if text in ("help", "h", "?"):
        return Command(show="help")
    if text in ("card", "hint"):
        return Command(show=text)
    if text in ("quit", "q", "exit"):
        raise LeaveGame
    dice = tuple(int(die) for die in np.asarray(card.dice))
    rolls_left = LAST_ROLL - int(card.roll_index)
    score_words = re.fullmatch(r"(?:score|s)\s+(.+)", text)
    if score_words:
        return _score_command(score_words.group(1), card, rules, rolls_left)
    if rolls_left == 0:
        box = parse_box(text)
        if box is None:
            raise InputError(f"no re-rolls left: choose a box (name or 1-13), not {line.strip()!r}")
        return _score_command(text, card, rules, rolls_left)
    if text in ("all", "keep all", "a"):
        return Command(actions=(KEEP_ALL,))
    if text in ("none", "0", "keep none", "reroll", "re-roll", "r"):
        return Command(actions=(KEEP_NOTHING,))
    kept = re.fullmatch(r"(?:keep|k)?\s*([1-6][\s,]*)+", text)
    if kept:
        faces = [int(char) for char in re.sub(r"^(keep|k)", "", text) if char.isdigit()]
        if len(faces) > NUM_DICE:
            raise InputError(f"there are only {NUM_DICE} dice: {_dice_text(dice)}")
        return Command(actions=(keep_action(faces, dice),))
    if parse_box(text, numbers=False) is not None:
        return _score_command(text, card, rules, rolls_left)
    if re.fullmatch(r"(?:keep|k)?[\s\d,]+", text):
        raise InputError(f"dice show 1 to 6; the dice are {_dice_text(dice)}")
    raise InputError(f"not understood: {line.strip()!r} (type help)")


def _score_command(text: str, card: State, rules: Rules, rolls_left: int) -> Command:
    box = parse_box(text)
    if box is None:
        raise InputError(f"no box called {text.strip()!r} (boxes: 1-13 or names; type help)")
    _, legal, _ = engine.current_score_options(card, rules)
    legal = np.asarray(legal)
    if not legal[box]:
        if bool(card.filled[box]):
            raise InputError(f"{BOX_LABELS[box]} is already used")
        allowed = ", ".join(BOX_LABELS[b] for b in np.flatnonzero(legal))
        raise InputError(f"the Joker rule does not allow {BOX_LABELS[box]} now; allowed: {allowed}")
    # Stopping early is keeping all five at each re-roll left (the dice do not change).
    return Command(actions=(KEEP_ALL,) * rolls_left + (NUM_KEEP_ACTIONS + box,))


# --------------------------------------------------------------------------------------------
# Text of the game
# --------------------------------------------------------------------------------------------


def _dice_text(dice) -> str:
    return " ".join(str(int(die)) for die in dice)


def choice_text(action: int, dice: tuple[int, ...]) -> str:
    """A decision in words with the card's box labels: 'keep 4 4', 're-roll all', 'score Fours'."""
    return action_text(action, dice, BOX_LABELS)


def card_text(cards: list[State], names: list[str]) -> str:
    """The score cards side by side: boxes, upper total and bonus, Yahtzee bonus, total."""
    width = max(8, *(len(name) for name in names))
    lines = [f"{'':20}" + "".join(f"{name:>{width + 2}}" for name in names)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"{label:20}" + "".join(f"{cell:>{width + 2}}" for cell in cells))

    def box_cells(box: int) -> list[str]:
        return [str(int(c.scores[box])) if bool(c.filled[box]) else "." for c in cards]

    for box in range(NUM_UPPER):
        row(f"{box + 1:>2} {BOX_LABELS[box]}", box_cells(box))
    uppers = [int(engine.upper_total(c)) for c in cards]
    row("   upper total", [f"{u}/{UPPER_BONUS_THRESHOLD}" for u in uppers])
    row(f"   upper bonus (+{UPPER_BONUS})", [str(int(engine.upper_bonus(c))) for c in cards])
    for box in range(NUM_UPPER, NUM_CATEGORIES):
        row(f"{box + 1:>2} {BOX_LABELS[box]}", box_cells(box))
    row("   Yahtzee bonus", [str(YAHTZEE_BONUS * int(c.yahtzee_bonus_count)) for c in cards])
    row("   total", [str(int(engine.total_score(c))) for c in cards])
    return "\n".join(lines)


def options_text(card: State, rules: Rules) -> str:
    """What the dice would score in each legal box now (the +100 bonus noted)."""
    points, legal, bonus = engine.current_score_options(card, rules)
    legal_boxes = [box for box in range(NUM_CATEGORIES) if bool(legal[box])]
    cells = [f"{BOX_LABELS[box]} {int(points[box])}" for box in legal_boxes if points[box] > 0]
    zeros = [BOX_LABELS[box] for box in legal_boxes if points[box] == 0]
    text = "  boxes now: " + (" | ".join(cells) or "nothing scores")
    if zeros:
        text += f"; 0 in {', '.join(zeros)}"
    if bool(bonus):
        text += f" (+{YAHTZEE_BONUS} Yahtzee bonus in any box)"
    return text


# --------------------------------------------------------------------------------------------
# The advisor
# --------------------------------------------------------------------------------------------


class Advisor:
    """The optimal advisor for one rule variant; the value table is loaded on first use."""

    def __init__(self, rules: Rules, console: Console, cache_dir: str | None = None):
        self.rules = rules
        self.console = console
        self.cache_dir = cache_dir
        self._solution = None

    def values(self, card: State) -> Any:
        """`ActionValues` of the card's position (expected final score of each action)."""
        from yahtzee_jax.solver import advise, solve

        if self._solution is None:
            self.console.say(f"(loading the optimal advisor for {self.rules.name} rules ...)")
            self._solution = solve(self.rules, cache_dir=self.cache_dir)
        return advise(card, self.rules, solution=self._solution)

    def top_text(self, card: State, top: int = HINT_TOP) -> str:
        """The best `top` distinct actions with their expected final scores."""
        values = self.values(card)
        dice = values.dice
        lines, seen = ["  advisor (expected final score):"], set()
        for action in values.legal_actions():
            label = choice_text(int(action), dice)
            if label in seen:  # another keep mask keeping the same dice
                continue
            seen.add(label)
            loss = values.value - values.action_values[action]
            note = "best" if len(seen) == 1 else f"-{loss:.2f}"
            lines.append(f"    {label:<22} {values.action_values[action]:8.2f}  {note}")
            if len(seen) == top:
                break
        return "\n".join(lines)

    def cost(self, card: State, action: int) -> tuple[float, str]:
        """Expected points lost by `action` against the best one, and the best one in words."""
        values = self.values(card)
        best = choice_text(values.best_action, values.dice)
        return float(values.value - values.action_values[action]), best


def cost_text(cost: float, best: str) -> str:
    """'cost 0.00 (best)' or 'cost 3.21 expected points; best: keep 4 4'."""
    if cost < 5e-7:
        return "cost 0.00 expected points (the best choice)"
    return f"cost {cost:.2f} expected points; best: {best}"


# --------------------------------------------------------------------------------------------
# The game
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Seat:
    """A player: the person (agent None) or an agent."""

    name: str
    agent: Agent | None = None


class TerminalGame:
    """One game in the terminal: a person and/or an agent, on the match engine."""

    def __init__(
        self,
        console: Console,
        seats: list[Seat],
        rules: Rules,
        seed: int,
        hint: bool = False,
        comment: bool = False,
        common_dice: bool = False,
        cache_dir: str | None = None,
    ):
        self.console = console
        self.seats = seats
        self.rules = rules
        self.seed = seed
        self.hint = hint
        self.comment = comment
        self.common_dice = common_dice
        self.advisor = Advisor(rules, console, cache_dir)
        self.total_cost = 0.0
        # The game is match 0 of the seed, as game 0 of `evaluate --seed S` is its episode 0.
        init_key, self.play_key = jax.random.split(jax.random.fold_in(jax.random.key(seed), 0))
        self.state = mp.init(init_key, len(seats), common_dice)
        self._step = jax.jit(mp.step, static_argnums=3)
        self._moves = {
            seat.name: self._move_function(index, seat.agent)
            for index, seat in enumerate(seats)
            if seat.agent is not None
        }

    def _move_function(self, seat: int, agent: Agent) -> Callable[[State, jax.Array], int]:
        """How a seat's agent chooses: with the opponent's card as well when it reads one."""
        if agent.match_act is not None and len(self.seats) == 2:
            match_act = jax.jit(agent.match_act)

            def move(card: State, key: jax.Array) -> int:
                pair = map(batch_of_one, (card, self.card(1 - seat), key))
                return int(match_act(agent.params, *pair)[0])

            return move
        act = jax.jit(agent.act)
        return lambda card, key: int(act(agent.params, card, key))

    def card(self, seat: int) -> State:
        """The card of a seat."""
        return mp.card(self.state, seat)

    def _play(self, seat: int, action: int) -> None:
        card = self.card(seat)
        decision = DECISIONS_PER_TURN * int(engine.turn_index(card)) + int(card.roll_index)
        _, dice_key = mp.decision_keys(self.play_key, seat, decision, self.common_dice)
        self.state = self._step(self.state, jnp.int32(action), dice_key, self.rules)

    def run(self) -> None:
        """Play the whole game (EOFError, LeaveGame and KeyboardInterrupt pass through)."""
        names = ", ".join(seat.name for seat in self.seats)
        self.console.say(
            f"Yahtzee, {self.rules.name} rules, seed {self.seed} (replay with --seed "
            f"{self.seed}); players: {names}. Type help for the commands."
        )
        for turn in range(NUM_TURNS):
            for seat_index, seat in enumerate(self.seats):
                if seat.agent is None:
                    self.person_turn(seat_index, turn)
                else:
                    self.agent_turn(seat_index, turn)
            self.console.say(self.cards_text())
        self.console.say(self.result_text())

    def cards_text(self) -> str:
        """Every seat's score card."""
        cards = [self.card(seat) for seat in range(len(self.seats))]
        return card_text(cards, [seat.name for seat in self.seats])

    def person_turn(self, seat: int, turn: int) -> None:
        """Ask the person for each decision of one turn until a box is scored."""
        while True:
            card = self.card(seat)
            roll = int(card.roll_index)
            self.console.say(
                f"Turn {turn + 1}/{NUM_TURNS}, roll {roll + 1}/3: {_dice_text(card.dice)}"
            )
            if roll == LAST_ROLL:
                self.console.say(options_text(card, self.rules))
            if self.hint:
                self.console.say(self.advisor.top_text(card))
            actions = self.ask(card, "score> " if roll == LAST_ROLL else "keep> ")
            cost, best = 0.0, ""
            for action in actions:
                before = self.card(seat)
                if self.hint:
                    step_cost, step_best = self.advisor.cost(before, action)
                    best = best or step_best
                    cost += step_cost
                self._play(seat, action)
            if self.hint:
                self.total_cost += cost
                self.console.say("  " + cost_text(cost, best))
            if actions[-1] >= NUM_KEEP_ACTIONS:
                self.console.say(self.scored_text(seat, PERSON, actions[-1]))
                return

    def ask(self, card: State, prompt: str) -> tuple[int, ...]:
        """Read lines until one gives actions; show help, the card or a hint on request."""
        while True:
            try:
                command = parse_line(self.console.ask(prompt), card, self.rules)
            except InputError as error:
                self.console.say(f"  {error}")
                continue
            if command.show == "help":
                self.console.say(HELP)
            elif command.show == "card":
                self.console.say(self.cards_text())
            elif command.show == "hint":
                self.console.say(self.advisor.top_text(card))
            else:
                return command.actions

    def agent_turn(self, seat: int, turn: int) -> None:
        """Let the seat's agent take one turn, showing each decision (and the advisor's view)."""
        move = self._moves[self.seats[seat].name]
        while True:
            card = self.card(seat)
            decision = DECISIONS_PER_TURN * int(engine.turn_index(card)) + int(card.roll_index)
            policy_key, _ = mp.decision_keys(self.play_key, seat, decision, self.common_dice)
            action = move(card, policy_key)
            dice = tuple(int(die) for die in np.asarray(card.dice))
            line = (
                f"  {self.seats[seat].name}, turn {turn + 1}, roll {int(card.roll_index) + 1}: "
                f"{_dice_text(dice)} -> {choice_text(action, dice)}"
            )
            self.console.say(line)
            if self.comment:
                cost, best = self.advisor.cost(card, action)
                self.total_cost += cost
                self.console.say("    advisor: " + cost_text(cost, best))
            self._play(seat, action)
            if action >= NUM_KEEP_ACTIONS:
                self.console.say(self.scored_text(seat, self.seats[seat].name, action))
                return

    def scored_text(self, seat: int, who: str, action: int) -> str:
        """'you score 12 in Fours (+100 Yahtzee bonus)' from the step's reward."""
        box = action - NUM_KEEP_ACTIONS
        points = int(self.card(seat).scores[box])
        reward = int(self.state.rewards[seat])
        extra = reward - points
        note = f" (+{extra} bonus)" if extra > 0 else ""
        verb = "score" if who == PERSON else "scores"
        return f"  {who} {verb} {points} in {BOX_LABELS[box]}{note}"

    def result_text(self) -> str:
        """Final totals, the winner, and the advisor's tally of the choices it judged."""
        totals = [int(t) for t in np.asarray(mp.total_scores(self.state))]
        scores = "; ".join(
            f"{seat.name} {total}" for seat, total in zip(self.seats, totals, strict=True)
        )
        text = f"Game over: {scores}."
        if len(self.seats) > 1:
            result = mp.outcome(self.state)
            results, margins = np.asarray(result.results), np.asarray(result.margins)
            winners = [seat.name for seat, r in zip(self.seats, results, strict=True) if r > 0]
            text += f" {winners[0]} wins by {int(margins.max())}." if winners else " A draw."
        if self.hint or self.comment:
            text += f" Choices cost {self.total_cost:.2f} expected points in all (advisor)."
        return text


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax play`."""
    parser = subparsers.add_parser(
        "play",
        help="play Yahtzee in the terminal (with hints, against or watching an agent)",
        description="Play Yahtzee in the terminal: type the dice to keep (e.g. 'keep 6 6 5' or "
        "'665') and a box to score (name or number). Ctrl-D or quit leaves.",
    )
    parser.add_argument("--hint", action="store_true", help="show the optimal advisor's view")
    mode = parser.add_mutually_exclusive_group()
    agents = f"{', '.join(AGENT_NAMES)}, or a checkpoint path"
    mode.add_argument("--against", metavar="AGENT", help=f"play against AGENT ({agents})")
    mode.add_argument(
        "--watch", metavar="AGENT", help="watch AGENT play while the advisor comments"
    )
    parser.add_argument("--seed", type=int, default=None, help="dice seed (default: random)")
    parser.add_argument("--rules", default=None, help="rule variant (default official)")
    parser.add_argument(
        "--common-dice",
        action="store_true",
        help="with --against: both players get the same dice stream",
    )
    parser.add_argument("--cache-dir", default=None, help="solver cache directory")
    parser.set_defaults(func=run)


def resolve_player(
    spec: str, rules: Rules | None, cache_dir: str | None, console: Console
) -> Agent:
    """The agent `--against`/`--watch` name (what `evaluate` accepts), with a line while the
    win-seeker's tables load."""
    if spec == WIN_SEEKER:
        console.say(
            "Loading the win-seeker's tables (the first time they are computed: about 3 "
            "minutes on a 2-core CPU, then cached)."
        )
    return resolve_agent(spec, rules, cache_dir=cache_dir)


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    """Run `yahtzee-jax play` on `console` (the terminal by default)."""
    console = console if console is not None else StreamConsole()
    rules = get_rules(args.rules) if args.rules is not None else None
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    spec = args.against or args.watch
    agent = resolve_player(spec, rules, args.cache_dir, console) if spec else None
    rules = agent.rules if agent is not None else (rules or get_rules("official"))
    if args.watch:
        seats = [Seat(agent.name, agent)]
    elif args.against:
        seats = [Seat(PERSON), Seat(agent.name, agent)]
    else:
        seats = [Seat(PERSON)]
    game = TerminalGame(
        console,
        seats,
        rules,
        seed,
        hint=args.hint,
        comment=bool(args.watch),
        common_dice=args.common_dice,
        cache_dir=args.cache_dir,
    )
    try:
        game.run()
    except EOFError:
        console.say("End of input: game left unfinished.")
    except LeaveGame:
        console.say("You left the game.")
    except KeyboardInterrupt:
        console.say()  # end the prompt's line; the command line prints one line and exits 130
        raise
    return 0
