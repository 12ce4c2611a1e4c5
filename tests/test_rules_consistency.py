"""Every game under its own card: `evaluate`, `match`, `tournament`, scripted `play` and the
training evaluations a study reports total each game by that game's documented upper bonus
(amount and threshold), Yahtzee bonus, number of boxes and length.

The expectation is independent of the package: the card of each rule set is read from the
table of docs/games.md (as text), and each final card is totalled here in plain Python from its
boxes. The cards come from the games themselves (the evaluation records, the match rollout's
final cards caught by a debug callback, the terminal's drawn card); nothing of the package's
own totals (`engine.total_score`) is used to judge them. The player is a scripted upper-box
chaser that earns the upper bonus in about half its games, so a wrong bonus shows.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.commands import match as match_command
from yahtzee_jax.commands import terminal
from yahtzee_jax.commands import tournament as tournament_command
from yahtzee_jax.commands.cli import main
from yahtzee_jax.envs.tasks import env_id
from yahtzee_jax.evaluation import matches
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game import engine
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, RULE_VARIANTS, Rules, face_counts
from yahtzee_jax.runner import checkpointing
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.loop import match_evaluation

GAMES_DOC = Path(__file__).resolve().parents[1] / "docs" / "games.md"
# | `yatzy` | 15 | +50 at 63 | none / none | ...
ROW = re.compile(r"^\| `([a-z-]+)` \| (\d+) \| \+(\d+) at (\d+) \| (?:none|\+(\d+)) / ")
# `make test` plays the card furthest from official Yahtzee's (Yatzy's 15 boxes and +50, the
# bonus its matches were once totalled without); official Yahtzee, the card every other test
# plays, and the other five games run with `make test-slow` (about 75 s a game on 2 cores).
FAST = ("yatzy",)
NAMES = tuple(
    name if name in FAST else pytest.param(name, marks=pytest.mark.slow) for name in RULE_VARIANTS
)
GAMES = 32  # per check: the chaser's bonus (45-69 % of its games) shows in every game set


@dataclasses.dataclass(frozen=True)
class Card:
    """A game's card as docs/games.md states it."""

    boxes: int
    upper_bonus: int
    threshold: int
    yahtzee_bonus: int  # per further five alike; 0 where the game has none


def documented_cards() -> dict[str, Card]:
    """The table of games in docs/games.md, by `--rules` name."""
    cards = {}
    for line in GAMES_DOC.read_text().splitlines():
        if match := ROW.match(line):
            name, boxes, bonus, threshold, yahtzee = match.groups()
            cards[name] = Card(int(boxes), int(bonus), int(threshold), int(yahtzee or 0))
    return cards


CARDS = documented_cards()


def hand_total(boxes: Sequence[int], yahtzee_bonuses: int, card: Card) -> int:
    """A final card's total: its boxes, the upper bonus if the six upper boxes reach the
    threshold, and the Yahtzee bonuses."""
    boxes = [int(points) for points in boxes]
    assert len(boxes) == card.boxes
    bonus = card.upper_bonus if sum(boxes[:6]) >= card.threshold else 0
    return sum(boxes) + bonus + card.yahtzee_bonus * int(yahtzee_bonuses)


def hand_totals(scores: np.ndarray, yahtzee_bonuses: np.ndarray, card: Card) -> np.ndarray:
    """`hand_total` of each card of a batch (scores [..., boxes])."""
    flat = np.asarray(scores).reshape(-1, card.boxes)
    bonuses = np.asarray(yahtzee_bonuses).reshape(-1)
    totals = [hand_total(row, count, card) for row, count in zip(flat, bonuses, strict=True)]
    return np.array(totals).reshape(np.shape(yahtzee_bonuses))


def chaser(rules: Rules, reads: bool = False) -> Agent:
    """Keep the dice of the open upper box with the most of them; write them there from three
    alike, else the lower box worth most (an upper box before a lower zero). With `reads` it
    says it reads the other cards (it ignores them), so tournaments play it in real matches."""
    upper = 6

    def act(params, state, key):
        faces = jnp.arange(1, upper + 1)
        counts = face_counts(state.dice)[:upper]
        rank = jnp.where(~state.filled[:upper], 10 * counts + faces, -1)
        target = jnp.argmax(rank) + 1
        keep = jnp.sum(jnp.where(state.dice == target, 1 << jnp.arange(5), 0))
        points, legal, _ = engine.current_score_options(state, rules)
        box = jnp.arange(rules.num_boxes)
        lower = box >= upper
        alike = legal & (box == target - 1) & (jnp.max(rank) >= 30)
        best_lower = jnp.where(legal & lower, points, -1)
        fallback = jnp.where(legal, points - 100 * lower, -1000)
        chosen = jnp.where(
            alike.any(),
            jnp.argmax(alike),
            jnp.where(best_lower.max() > 0, jnp.argmax(best_lower), jnp.argmax(fallback)),
        )
        return jnp.where(state.roll_index < 2, keep, NUM_KEEP_ACTIONS + chosen).astype(jnp.int32)

    def policy(params, own, others, keys):
        return jax.vmap(act, in_axes=(None, 0, 0))(params, own, keys)

    name = "chaser-reader" if reads else "chaser"
    return Agent(name, policy, None, rules, reads_others=reads)


@pytest.fixture
def match_cards(monkeypatch) -> list[tuple[np.ndarray, ...]]:
    """The final cards of every match batch `evaluation.matches` plays: (own scores, own
    Yahtzee bonuses, others' scores, others' bonuses), caught as the rollout ends."""
    caught: list[tuple[np.ndarray, ...]] = []
    real = matches.rollout

    def catching(env, policy, keys):
        final, *rest = real(env, policy, keys)
        parts = (final.card.scores, final.card.yahtzee_bonus_count)
        parts += (final.others.scores, final.others.yahtzee_bonus_count, final.card.filled)
        jax.debug.callback(lambda *arrays: caught.append(tuple(map(np.asarray, arrays))), *parts)
        return (final, *rest)

    monkeypatch.setattr(matches, "rollout", catching)
    return caught


def caught_totals(caught, card: Card) -> tuple[np.ndarray, np.ndarray]:
    """Hand totals of the caught matches: own [N] and the best other [N]."""
    own = np.concatenate([hand_totals(c[0], c[1], card) for c in caught])
    others = np.concatenate([hand_totals(c[2], c[3], card) for c in caught])
    assert all(c[4].all() for c in caught)  # every box of every learner card written
    return own, others.max(axis=1)


def _mentions_official(node: ast.AST) -> bool:
    """Is `node` the official rule set, by its constant (`OFFICIAL`) or its name?"""
    if isinstance(node, ast.Name | ast.Attribute):
        return getattr(node, "id", getattr(node, "attr", "")) == "OFFICIAL"
    return isinstance(node, ast.Constant) and node.value == "official"


def rules_fallbacks(source: str) -> list[int]:
    """Lines of `source` that default a rule set: a `rules` or `variant` parameter with a
    default, a `rules` field set to the official rules, or the official rules named anywhere
    but in a table (a dict literal) or a comparison, so as a value chosen in the absence of
    one passed: `OFFICIAL if rules is None else rules`, `.get(name, OFFICIAL)`, a field's
    `default_factory` sized by `OFFICIAL`."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            with_default = positional[len(positional) - len(args.defaults) :]
            keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
            with_default += [arg for arg, default in keywords if default]
            lines += [node.lineno for arg in with_default if arg.arg in ("rules", "variant")]
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "rules":
            value = ast.unparse(node.value) if node.value else ""
            lines += [node.lineno] if "OFFICIAL" in value or "official" in value else []
        elif _mentions_official(node):
            above = node
            while above in parents and not isinstance(above, ast.Dict | ast.Compare):
                above = parents[above]
            lines += [] if above in parents else [node.lineno]
    return sorted(set(lines))


def test_no_function_below_the_commands_defaults_its_rules() -> None:
    """A function that scores or plays takes its rules (or an agent or environment that carries
    them): nothing below `commands/` defaults them (`rules_fallbacks`), nor the independent
    reference game's `variant` (its rule set by name), so a forgotten one is a TypeError, not a
    game of Yahtzee. `game/rules.py` defines the official rules; `config.py`'s `env.id:
    Yahtzee-v0` is the run config's documented default, as `--rules` is a command's
    (`commands.arguments.BUILTIN_RULES`)."""
    package = Path(__file__).resolve().parents[1] / "yahtzee_jax"
    defaulted = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package)
        if "commands" in path.parts or where.as_posix() in ("config.py", "game/rules.py"):
            continue
        defaulted += [f"{where}:{line}" for line in rules_fallbacks(path.read_text())]
    assert defaulted == []


def test_the_rules_fallbacks_that_were_removed_are_caught() -> None:
    """The three hidden fallbacks to the official rules removed in issue 66, as they read at
    898d267, are each caught by `rules_fallbacks`; a table of variants and a comparison with
    the official card (the solver's cache names) are not."""
    fallbacks = {
        "return builtin_agent(spec, OFFICIAL if rules is None else rules, cache_dir)": 1,
        'rules = RULE_VARIANTS.get(summary["rules"], OFFICIAL)': 1,
        "@struct.dataclass\nclass State:\n    scores: jax.Array = struct.field(\n"
        "        default_factory=lambda: jnp.zeros(OFFICIAL.num_boxes, jnp.int32)\n    )": 1,
        'def play(variant="official"): pass': 1,
        'VARIANTS = {"official": (True, "forced"), "plain": (False, "none")}': 0,
        "changed = _card(rules) != _card(OFFICIAL)": 0,
    }
    for source, lines in fallbacks.items():
        assert len(rules_fallbacks(source)) == lines, source


def test_every_rule_set_is_documented_with_its_card() -> None:
    """The registry and the documented table name the same games; each game's length is three
    decisions a box."""
    assert set(CARDS) == set(RULE_VARIANTS)
    for name, rules in RULE_VARIANTS.items():
        assert rules.num_boxes == CARDS[name].boxes
        assert rules.decisions_per_game == 3 * CARDS[name].boxes


@pytest.mark.parametrize("name", NAMES)
def test_evaluate_totals_each_game_by_its_card(name, tmp_path, monkeypatch) -> None:
    """`evaluate CHASER`: its records have one box per documented box and a turn per box, each
    total is its card's by hand, and the JSON's mean score and mean upper bonus are the hand
    means of the same games."""
    card, rules = CARDS[name], RULE_VARIANTS[name]
    agent = chaser(rules)
    # `evaluate` imports the checkpoint loader when it runs (none for `--engine native`)
    monkeypatch.setattr(checkpointing, "resolve_agent", lambda *args, **kwargs: agent)
    out = tmp_path / "summary.json"
    argv = ["evaluate", "chaser", "--rules", name, "--games", str(GAMES), "--seed", "1"]
    argv += ["--no-optimal", "--no-progress", "--out", str(tmp_path), "--json", str(out)]
    assert main(argv) == 0
    records = play_games(agent, GAMES, seed=1)
    assert records.box_scores.shape == (GAMES, card.boxes)
    assert records.turn_categories.shape == (GAMES, card.boxes)
    expected = hand_totals(records.box_scores, records.yahtzee_bonus_count, card)
    np.testing.assert_array_equal(records.total, expected)
    reached = records.box_scores[:, :6].sum(axis=1) >= card.threshold
    assert reached.any()  # the bonus amount was put to the test
    summary = json.loads(out.read_text())
    assert summary["score"]["mean"] == pytest.approx(expected.mean())
    bonus = summary["category_means"]["upper_bonus"]
    assert bonus == pytest.approx(card.upper_bonus * reached.mean())


@pytest.mark.parametrize("name", NAMES)
def test_match_totals_each_card_by_its_card(name, tmp_path, monkeypatch, match_cards) -> None:
    """`match` (the chaser in the evaluated seat against the random agent): mean scores, margin
    and wins are those of the final cards totalled by hand (Yatzy's were +35, not +50, before).
    The opponent's card is totalled as the chaser's; greedy1, which reached the upper bonus no
    more often (in none of these games), compiled 4 s longer."""
    card, rules = CARDS[name], RULE_VARIANTS[name]
    monkeypatch.setattr(match_command, "builtin_agent", lambda *args, **kwargs: chaser(rules, True))
    out = tmp_path / "match.json"
    argv = ["match", "optimal", "--opponent", "random", "--rules", name, "--games", str(GAMES)]
    assert main([*argv, "--seed", "5", "--out", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    own, other = caught_totals(match_cards, card)
    assert len(own) == GAMES
    assert np.any(own - other != 0)
    assert result["mean_score"] == pytest.approx(own.mean())
    assert result["opponent_mean_score"] == pytest.approx(other.mean())
    assert result["mean_margin"] == pytest.approx((own - other).mean())
    assert result["wins"] == int(np.sum(own > other))
    assert result["draws"] == int(np.sum(own == other))


# Slow on every card (17 s idle for Yatzy): make test keeps Yatzy's real matches (`match`, above)
# and the tournament's assembly of pairs and matches (tests/test_tournament.py, official).
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_tournament_totals_each_card_by_its_card(name, tmp_path, monkeypatch, match_cards) -> None:
    """`tournament`: the reading chaser's real matches and the solitaire pair of chaser and
    greedy1 (pair game i: seat s plays solitaire game 2i + s, the first agent in seat 0 in even
    games, as the JSON documents it) give the means and wins of the hand totals."""
    card, rules = CARDS[name], RULE_VARIANTS[name]
    agents = {"chaser": chaser(rules), "chaser-reader": chaser(rules, True)}
    real = tournament_command.resolve_agent
    monkeypatch.setattr(
        tournament_command,
        "resolve_agent",
        lambda spec, rules, cache_dir=None, **asked: (
            agents.get(spec) or real(spec, rules, cache_dir, **asked)
        ),
    )
    pairs = GAMES // 2
    argv = ["tournament", "chaser", "greedy1", "chaser-reader", "--rules", name, "--seed", "3"]
    argv += ["--games", str(pairs), "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "tournament.json").read_text())
    means = result["mean_scores"]
    solitaire = {}
    for spec in ("chaser", "greedy1"):
        games = means[spec]["games"]
        played = play_games(real(spec, rules) if spec == "greedy1" else agents[spec], games, 3)
        solitaire[spec] = hand_totals(played.box_scores, played.yahtzee_bonus_count, card)
        assert means[spec]["mean"] == pytest.approx(solitaire[spec].mean())
    pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == ("chaser", "greedy1"))
    games = np.arange(pair["games"])
    a_seat = games % 2  # a sits first (seat 0) in even games
    a = solitaire["chaser"][2 * games + a_seat]
    b = solitaire["greedy1"][2 * games + 1 - a_seat]
    assert (pair["a_wins"], pair["b_wins"]) == (int(np.sum(a > b)), int(np.sum(b > a)))
    # The reader's two pairs are real matches (pair a in the learner's seat), in the order of
    # `real_matches`, each caught batch one pair's games.
    assert len(match_cards) == len(result["real_matches"]) == 2
    reader_totals = []
    for batch, (a, b) in zip(match_cards, result["real_matches"], strict=True):
        a_totals, b_totals = caught_totals([batch], card)
        pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == (a, b))
        wins = (int(np.sum(a_totals > b_totals)), int(np.sum(b_totals > a_totals)))
        assert (pair["a_wins"], pair["b_wins"]) == wins
        reader_totals.append(a_totals if a == "chaser-reader" else b_totals)
    assert means["chaser-reader"]["mean"] == pytest.approx(np.concatenate(reader_totals).mean())


class ScriptedPerson:
    """Keeps all five dice and scores box t at turn t (always legal in these games)."""

    def __init__(self) -> None:
        self.transcript: list[str] = []

    def ask(self, prompt: str) -> str:
        """'all' at a keep, the turn's own box number at a score decision."""
        turn = next(int(m[1]) for m in map(TURN.search, reversed(self.transcript)) if m)
        answer = "all" if prompt == "keep> " else f"score {turn}"
        self.transcript.append(prompt + answer)
        return answer

    def say(self, text: str = "") -> None:
        """Record the lines."""
        self.transcript.extend(text.split("\n"))


TURN = re.compile(r"Turn (\d+)/(\d+), roll")
BOX_ROW = re.compile(r"^\s?(\d+) .*?\s(\d+)\s+(\d+)$")


@pytest.mark.parametrize("name", NAMES)
def test_play_draws_and_totals_each_card_by_its_card(name, monkeypatch) -> None:
    """`play --against chaser`: the final card drawn has the documented boxes, its totals and
    the 'Game over' line are the drawn boxes totalled by hand (seeds until the chaser's bonus
    shows), and the chaser took three decisions a box."""
    card = CARDS[name]
    monkeypatch.setattr(terminal, "resolve_agent", lambda spec, chosen, *_, **__: chaser(chosen))
    for seed in range(8):
        person = ScriptedPerson()
        arguments = dict(hint=False, watch=None, beat=None, seed=seed, common_dice=False)
        args = terminal.argparse.Namespace(
            **arguments, cache_dir=None, against="chaser", rules=name
        )
        assert terminal.run(args, person) == 0
        lines = person.transcript
        last = max(i for i, line in enumerate(lines) if line.startswith("   total "))
        first = max(i for i, line in enumerate(lines[:last]) if line.startswith("   upper total"))
        rows = [BOX_ROW.match(line) for line in lines[first - 6 : last]]
        boxes = [(int(row[2]), int(row[3])) for row in rows if row]
        assert [int(row[1]) for row in rows if row] == list(range(1, card.boxes + 1))
        totals = [hand_total([cell[seat] for cell in boxes], 0, card) for seat in (0, 1)]
        drawn = [int(cell) for cell in lines[last].split()[1:]]
        ended = re.search(r"Game over: you (\d+); chaser (\d+)\.", "\n".join(lines))
        assert drawn == totals == [int(ended[1]), int(ended[2])]
        assert sum("  chaser, turn " in line for line in lines) == 3 * card.boxes
        if sum(cell[1] for cell in boxes[:6]) >= card.threshold:
            break
    else:
        pytest.fail("the chaser never earned the upper bonus: the bonus went untested")


@pytest.mark.parametrize("name", NAMES)
def test_training_evaluations_total_each_card_by_its_card(name, match_cards) -> None:
    """What a match run logs and a study reports: the match evaluation's totals and win rate
    (an untrained network against the random agent; greedy1 compiled longer) are its final
    cards' by hand."""
    card = CARDS[name]
    overrides = [f"env.id={env_id(name, 'match')}", "network.hidden_size=8", "env.opponent=random"]
    config = resolve("quick", overrides=overrides)
    params = init_train_state(make_context(config)).params
    own, details = match_evaluation(config, params, 8, 7)
    by_hand, other = caught_totals(match_cards, card)
    np.testing.assert_array_equal(np.sort(own), np.sort(by_hand))
    assert details["win_rate"] == pytest.approx(np.mean(by_hand > other))


def test_a_rule_set_named_instead_of_given_is_one_type_error() -> None:
    """The engine takes a `Rules`: `init`, `step` and `legal_action_mask` given the name
    "official" raise a TypeError saying so, where `step` raised an AttributeError about
    `yahtzee_box` from deep inside (found by a review session)."""
    import jax
    import pytest

    from yahtzee_jax.game import get_rules, init, legal_action_mask, step

    state = init(jax.random.key(0), get_rules("official"))
    calls = {
        "init": lambda: init(jax.random.key(0), "official"),
        "step": lambda: step(state, 31, jax.random.key(1), "official"),
        "legal_action_mask": lambda: legal_action_mask(state, "official"),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=r"rules must be a Rules \(get_rules\('official'\)"):
            call()
            raise AssertionError(f"{name} took a name for its rules")
