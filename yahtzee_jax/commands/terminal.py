"""`yahtzee-jax play`: Yahtzee in the terminal for a person, with the optimal advisor.

The person types what to keep ("keep 6 6 5", "665", "all", "none") and which box to score (by
name, short name or number); the score card is drawn after every turn. `--hint` shows the
optimal advisor's best actions with their expected final scores before each decision and, after
it, what the person's choice cost in expected points; `--against AGENT` adds an agent in the
second seat whose moves are shown (an agent that reads its opponent's card, such as the solver's
`win-seeker` or a two-player learner, reads the person's); `--watch AGENT` lets an agent play
alone while the advisor comments on each of its decisions.

Every game is a match of the two-player engine (`yahtzee_jax.game.multiplayer`, one seat for a
solitaire game), stepped with the keys of `decision_keys`: `--seed S` replays the same dice. A
seat's cards come from `fold_in` of the match's keys by seat (`mp.init`), so they are not the
dice of game 0 of `yahtzee-jax evaluate --seed S` (kept so that recorded games replay).

Input and output go through a `Console` (`ask(prompt)` reads one line, `say(text)` writes), so
the whole loop runs from scripted input in the tests. A keystroke that is not understood gets a
one-line message and the same prompt; end of input (Ctrl-D) leaves with status 0 and Ctrl-C with
130 (the command line's handler), each with one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import sys
from typing import Any, Protocol, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents import AGENT_NAMES, BUILTINS, Agent
from yahtzee_jax.commands.arguments import BUILTIN_RULES, seed_argument
from yahtzee_jax.commands.terminal_text import (  # noqa: F401 (InputError, keep_action, parse_box: API)
    InputError,
    LeaveGame,
    box_labels,
    card_text,
    choice_text,
    cost_text,
    dice_text,
    help_text,
    keep_action,
    options_text,
    parse_box,
    parse_line,
)
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import engine
from yahtzee_jax.game import multiplayer as mp
from yahtzee_jax.game.engine import LAST_ROLL, State, batch_of_one
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_KEEP_ACTIONS, Rules, get_rules
from yahtzee_jax.runner.checkpointing import resolve_agent

HINT_TOP = 3
PERSON = "you"


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


# --------------------------------------------------------------------------------------------
# The advisor
# --------------------------------------------------------------------------------------------


class Advisor:
    """The optimal advisor for one rule variant; its tables are loaded on first use. With
    `beat` X it values actions by the best chance of a final score above X (`advise_beat`),
    shown in %, instead of by expected final score."""

    def __init__(
        self, rules: Rules, console: Console, cache_dir: str | None = None, beat: int | None = None
    ):
        self.rules = rules
        self.console = console
        self.cache_dir = cache_dir
        self.beat = beat
        self._solution = None
        # What a choice costs: expected points, or percentage points of the chance to beat X.
        self.unit = "expected points" if beat is None else f"% of P(final > {beat})"
        self._scale = 1.0 if beat is None else 100.0

    def values(self, card: State) -> Any:
        """`ActionValues` of the card's position (expected final score, or chance, of each)."""
        from yahtzee_jax.solver import advise, solve
        from yahtzee_jax.solver.advisor import advise_beat, beat_tables

        if self._solution is None:
            self.console.say(f"(loading the optimal advisor for {self.rules.name} rules ...)")
            load = solve if self.beat is None else beat_tables
            self._solution = load(self.rules, cache_dir=self.cache_dir)
        if self.beat is not None:
            return advise_beat(card, self.rules, self.beat, self._solution)
        return advise(card, self.rules, solution=self._solution)

    def top_text(self, card: State, top: int = HINT_TOP) -> str:
        """The best `top` distinct actions with their expected final scores (or chances)."""
        values = self.values(card)
        dice = values.dice
        what = "expected final score" if self.beat is None else f"% chance above {self.beat}"
        lines, seen = [f"  advisor ({what}):"], set()
        for action in values.legal_actions():
            label = choice_text(int(action), dice, self.rules)
            if label in seen:  # another keep mask keeping the same dice
                continue
            seen.add(label)
            loss = self._scale * (values.value - values.action_values[action])
            note = "best" if len(seen) == 1 else f"-{loss:.2f}"
            shown = self._scale * values.action_values[action]
            lines.append(f"    {label:<22} {shown:8.2f}  {note}")
            if len(seen) == top:
                break
        return "\n".join(lines)

    def cost(self, card: State, action: int) -> tuple[float, str]:
        """What `action` loses against the best one (in `unit`), and the best one in words."""
        values = self.values(card)
        best = choice_text(values.best_action, values.dice, self.rules)
        return float(self._scale * (values.value - values.action_values[action])), best


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
        beat: int | None = None,
    ):
        self.console = console
        self.seats = seats
        self.rules = rules
        self.seed = seed
        self.hint = hint
        self.comment = comment
        self.common_dice = common_dice
        self.advisor = Advisor(rules, console, cache_dir, beat)
        self.total_cost = 0.0
        # The game is match 0 of the seed (`docs/play/transcript.md` replays these dice).
        init_key, self.play_key = jax.random.split(jax.random.fold_in(jax.random.key(seed), 0))
        self.state = mp.init(init_key, len(seats), common_dice, rules)
        self._step = jax.jit(mp.step, static_argnums=3)
        # Each agent's policy, compiled once per game (the one signature, a batch of one).
        self._policies = {
            seat.name: jax.jit(seat.agent.policy) for seat in seats if seat.agent is not None
        }

    def agent_action(self, seat: int, card: State, key: jax.Array) -> int:
        """The seat's agent's action through its policy: its own card, and the opponent's as
        the other card when it reads one at a two-seat table (else no other card)."""
        agent = self.seats[seat].agent
        own = batch_of_one(card)
        if agent.reads_others and len(self.seats) == 2:
            others = batch_of_one(batch_of_one(self.card(1 - seat)))  # [1, 1]
        else:
            others = no_others(own)
        policy = self._policies[self.seats[seat].name]
        return int(policy(agent.params, own, others, batch_of_one(key))[0])

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
            f"{box_labels(self.rules)[self.rules.yahtzee_box]}, {self.rules.name} rules, seed "
            f"{self.seed} (replay with --seed "
            f"{self.seed}); players: {names}. Type help for the commands."
        )
        for turn in range(self.rules.num_turns):
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
        return card_text(cards, [seat.name for seat in self.seats], self.rules)

    def person_turn(self, seat: int, turn: int) -> None:
        """Ask the person for each decision of one turn until a box is scored."""
        while True:
            card = self.card(seat)
            roll = int(card.roll_index)
            self.console.say(
                f"Turn {turn + 1}/{self.rules.num_turns}, roll {roll + 1}/3: {dice_text(card.dice)}"
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
                self.console.say("  " + cost_text(cost, best, self.advisor.unit))
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
                self.console.say(help_text(self.rules))
            elif command.show == "card":
                self.console.say(self.cards_text())
            elif command.show == "hint":
                self.console.say(self.advisor.top_text(card))
            else:
                return command.actions

    def agent_turn(self, seat: int, turn: int) -> None:
        """Let the seat's agent take one turn, showing each decision (and the advisor's view)."""
        while True:
            card = self.card(seat)
            decision = DECISIONS_PER_TURN * int(engine.turn_index(card)) + int(card.roll_index)
            policy_key, _ = mp.decision_keys(self.play_key, seat, decision, self.common_dice)
            action = self.agent_action(seat, card, policy_key)
            dice = tuple(int(die) for die in np.asarray(card.dice))
            line = (
                f"  {self.seats[seat].name}, turn {turn + 1}, roll {int(card.roll_index) + 1}: "
                f"{dice_text(dice)} -> {choice_text(action, dice, self.rules)}"
            )
            self.console.say(line)
            if self.comment:
                cost, best = self.advisor.cost(card, action)
                self.total_cost += cost
                self.console.say("    advisor: " + cost_text(cost, best, self.advisor.unit))
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
        return f"  {who} {verb} {points} in {box_labels(self.rules)[box]}{note}"

    def result_text(self) -> str:
        """Final totals, the winner, and the advisor's tally of the choices it judged."""
        totals = [int(t) for t in np.asarray(mp.total_scores(self.state, self.rules))]
        scores = "; ".join(
            f"{seat.name} {total}" for seat, total in zip(self.seats, totals, strict=True)
        )
        text = f"Game over: {scores}."
        if len(self.seats) > 1:
            result = mp.outcome(self.state, self.rules)
            results, margins = np.asarray(result.results), np.asarray(result.margins)
            winners = [seat.name for seat, r in zip(self.seats, results, strict=True) if r > 0]
            text += f" {winners[0]} wins by {int(margins.max())}." if winners else " A draw."
        if self.hint or self.comment:
            text += f" Choices cost {self.total_cost:.2f} {self.advisor.unit} in all (advisor)."
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
    parser.add_argument(
        "--beat",
        type=int,
        metavar="X",
        help="with --hint or --watch: the advisor values actions by the chance of a final "
        "score above X (exact target tables, solve --targets) instead of expected points",
    )
    mode = parser.add_mutually_exclusive_group()
    agents = f"{', '.join(AGENT_NAMES)}, or a checkpoint path"
    mode.add_argument("--against", metavar="AGENT", help=f"play against AGENT ({agents})")
    mode.add_argument(
        "--watch", metavar="AGENT", help="watch AGENT play while the advisor comments"
    )
    parser.add_argument(
        "--seed", type=seed_argument, default=None, help="dice seed (default: random)"
    )
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
    match players' tables load; `rules` None: `--rules` left out (the commands' default)."""
    entry = BUILTINS.get(spec)
    if entry is not None and entry.loading:
        console.say(entry.loading)
    chosen, asked = rules or get_rules(BUILTIN_RULES), rules is not None
    return resolve_agent(spec, chosen, cache_dir, rules_asked=asked)


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    """Run `yahtzee-jax play` on `console` (the terminal by default)."""
    console = console if console is not None else StreamConsole()
    if args.beat is not None and (args.beat < 0 or not (args.hint or args.watch)):
        raise UserError("--beat X (X >= 0) goes with --hint or --watch")
    if args.common_dice and not args.against:  # alone or watching, nothing shares the dice
        raise UserError("--common-dice goes with --against: two players share one dice stream")
    rules = get_rules(args.rules) if args.rules is not None else None
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    spec = args.against or args.watch
    agent = resolve_player(spec, rules, args.cache_dir, console) if spec else None
    rules = agent.rules if agent is not None else (rules or get_rules(BUILTIN_RULES))
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
        beat=args.beat,
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
