"""Command-line fuzzing: every subcommand, its real options, hostile values.

Each case is an argument vector of one subcommand: a random subset of its options, each with a
value drawn from what a new user (or a script gone wrong) may type: 0, negatives, 2^63 and
beyond, NaN and infinities, empty strings, bytes that are not UTF-8, a key given twice, unknown
names, and paths to a file, a directory, a missing or an unwritable place. Property: the
command exits 0 or 2 with at most one line on stderr, never a traceback. Long work (a training
chunk's compile, games, a solve, a benchmark) is replaced by a stop (`fuzzing.LONG_WORK`):
reaching it means every input was accepted, which fails the property where a value of the
case is one `REFUSED` names (a bad value silently accepted). `OPTIONS` holds every option of
every command's parser (`test_every_option_of_every_command_is_fuzzed`). The fast version runs
a few cases per subcommand in `make test`; the slow one many more.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from fuzzing import check_one_line, invoke_to_work, make_finished_run, stop_long_work
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yahtzee_jax.evaluation.paired import per_match_record

NOT_UTF8 = os.fsdecode(b"\xff\xfe")  # what Python makes of bytes that are not UTF-8 in argv
NUMBERS = [
    "0",
    "1",
    "3",
    "-1",
    "-7",
    str(2**31),
    str(2**32),
    str(2**63),
    str(2**64),
    str(-(2**63) - 1),
    "1e400",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "",
    " ",
    "0x10",
    NOT_UTF8,
]
NAMES = ["official", "yatzy", "random", "greedy1", "nope", "", NOT_UTF8, "paper-a2c", "quick"]
# The run-directory and file placeholders are filled in per test (its own tmp_path).
PATHS = ["{tmp}/missing/deep", "{tmp}/afile", "{tmp}/adir", "{tmp}/run", "/proc/no/such", ""]
PATHS += ["/dev/null/below", "{tmp}/" + NOT_UTF8]
OVERRIDES = [
    "train.seed=18446744073709551616",
    "train.seed=-1",
    "train.seed=nan",
    "optim.lr=nan",
    "optim.lr=-inf",
    "optim.lr=1e400",
    "optim.lr=0",
    "train.total_games=0",
    "train.total_games=" + str(2**63),
    "train.total_games=1e300",
    "train.eval_games=" + str(2**40),
    "train.seed=",
    "train.seed=[1, 2]",
    "train.seed={a: 1}",
    "network.hidden_size=-3",
    "algo.name=ppo",
    "algo.name=" + NOT_UTF8,
    "nope.key=1",
    "train.nope=1",
    "train=1",
    "=",
    ".=",
    "train.rules=yatzy",
    "env.players=99",
    "env.opponent=optimal,optimal,optimal",
    "train.allow_collapse=maybe",
    "train.seed=1",
    "train.seed=2",  # with the one above: a key given twice
    "optim.lr=0.001",
    "train.total_games=8",
]

FLAG = None  # an option that takes no value
OPTIONS: dict[str, dict[str, list[str] | None]] = {
    "train": {
        "--preset": NAMES,
        "--config": PATHS,
        "--set": OVERRIDES,
        "--out": PATHS,
        "--resume": FLAG,
        "--population-seeds": [*NUMBERS, "0-3", "0-4000000000", "3-1", "0,0", "1,2,x"],
        "--sweep": ["optim.lr=1e-4,3e-4", "optim.lr=", "nope", "train.seed=1,2", "algo.gamma=x"],
        "--num-processes": NUMBERS,
        "--process-id": NUMBERS,
        "--distributed": FLAG,
        "--coordinator": ["localhost:1234", "localhost", ":", "", "host:99999", "h:x", NOT_UTF8],
    },
    "evaluate": {
        "--games": NUMBERS,
        "--seed": NUMBERS,
        "--rules": NAMES,
        "--json": PATHS,
        "--out": PATHS,
        "--batch-size": NUMBERS,
        "--no-optimal": FLAG,
        "--cache-dir": PATHS,
        "--task": ["game", "single-turn", "nope", ""],
        "--target": NUMBERS,
        "--engine": ["jax", "native", "nope", ""],
        "--no-plots": FLAG,
    },
    "match": {
        "--opponent": [*NAMES, "optimal", "greedy3"],
        "--games": NUMBERS,
        "--seed": NUMBERS,
        "--players": NUMBERS,
        "--batch-size": NUMBERS,
        "--rules": NAMES,
        "--cache-dir": PATHS,
        "--endgame-open": NUMBERS,
        "--before-endgame": ["normal", "solitaire", "nope", ""],
        "--hindsight-weight": ["0", "1", "0.5", "1.5", "-0.1", "nan", "x"],
        "--hindsight-schedule": PATHS,
        "--joint-endgame": ["exact", "hindsight", "nope", ""],
        "--set": [
            "algo.match_early=normal",
            "algo.match_early=nope",
            "algo.match_open=-1",
            "algo.match_nope=1",
            "algo.lookahead=2",
            "algo.lookahead=7",
            *OVERRIDES[:6],
        ],
        "--out": PATHS,
        "--no-progress": FLAG,
        "--solitaire": FLAG,
    },
    "compare": {"--against": [*PATHS, "{tmp}/match.json"], "--out": PATHS},
    "tournament": {
        "--games": NUMBERS,
        "--seed": NUMBERS,
        "--dice": ["common", "independent", "nope"],
        "--rules": NAMES,
        "--games-for": [
            "random=10",
            "random=-1",
            "nope=3",
            "random=x",
            "=",
            "random=" + str(2**64),
        ],
        "--out": PATHS,
        "--batch-size": NUMBERS,
        "--cache-dir": PATHS,
    },
    "solve": {
        "--rules": NAMES,
        "--cache-dir": PATHS,
        "--force": FLAG,
        "--targets": FLAG,
        "--policy": ["target", "expected", "nope", "", NOT_UTF8],
        "--ceiling": FLAG,
        "--players": NUMBERS,
        "--out": PATHS,
        "--engine": ["auto", "native", "xla", "nope", ""],
    },
    "advise": {
        "--rules": NAMES,
        "--cache-dir": PATHS,
        "--dice": ["1,2,3,3,5", "12335", "0,1,2,3,4", "7,7,7,7,7", "1,2,3", "", NOT_UTF8, "a,b"],
        "--roll": NUMBERS,
        "--card": [
            "ones=3,chance=22",
            "ones=3,ones=2",
            "full-house=25,full_house=25",
            "ones=7",
            "ones=-3",
            "ones=" + str(2**64),
            "nope=3",
            "ones",
            "=",
            ",,,",
            "yahtzee=50,ones=1,twos=2,threes=3,fours=4,fives=5,sixes=6,chance=5,three_of_a_kind=5,"
            "four_of_a_kind=5,full_house=25,small_straight=30,large_straight=40",
        ],
        "--yahtzee-bonuses": NUMBERS,
        "--top": NUMBERS,
        "--beat": NUMBERS,
    },
    "play": {
        "--hint": FLAG,
        "--against": NAMES,
        "--watch": NAMES,
        "--seed": NUMBERS,
        "--rules": NAMES,
        "--cache-dir": PATHS,
        "--beat": NUMBERS,
        "--common-dice": FLAG,
    },
    "experiment": {
        "--list": FLAG,
        "--scale": ["cpu", "paper", "nope", ""],
        "--seeds": NUMBERS,
        "--out": PATHS,
        "--population": NUMBERS,
        "--set": OVERRIDES,
    },
    "bench env": {
        "--batch-sizes": ["1,2", "0", "-1", "x", "", str(2**64)],
        "--rules": NAMES,
        "--seconds": NUMBERS,
        "--json": PATHS,
    },
    "bench train": {
        "--preset": NAMES,
        "--batches": ["4", "0", "x", "", "-2"],
        "--repeats": NUMBERS,
        "--population": NUMBERS,
        "--widths": ["16", "0", "x", "-1"],
        "--set": OVERRIDES,
        "--dtypes": ["float32", "float32,bfloat16", "float8", "nope", "", ","],
        "--minibatches": NUMBERS,
        "--breakdown": FLAG,
        "--json": PATHS,
    },
    "bench scaling": {
        "--preset": NAMES,
        "--batches": ["4", "0", "x", ""],
        "--widths": ["16", "0", "x"],
        "--devices": ["1", "0", "x", "", "-1"],
        "--repeats": NUMBERS,
        "--max-transitions-per-update": NUMBERS,
        "--set": OVERRIDES,
        "--json": PATHS,
        "--plot": PATHS,
    },
    "bench solve": {
        "--rules": NAMES,
        "--repeats": NUMBERS,
        "--workers": NUMBERS,
        "--dlangk": PATHS,
        "--engines": ["native,xla", "auto", "xla", "nope", "", ",", "native,native"],
        "--json": PATHS,
    },
    "bench evaluate": {
        "--games": NUMBERS,
        "--batch-size": NUMBERS,
        "--rules": NAMES,
        "--seed": NUMBERS,
        "--repeats": NUMBERS,
        "--dlangk": PATHS,
        "--agents": ["random", "greedy1", "optimal", "nope", "", NOT_UTF8],
        "--json": PATHS,
    },
}
# The values that must never reach the long work: a command that starts its work with one of
# them has accepted a bad value silently (the property fails). Counts: none of 0, a negative, a
# non-integer or an empty string (2^64 games may be refused or played: not judged); seeds and
# targets: anything that is not an integer; a rule set: anything but a rule set's name; a file
# to write: a place that cannot hold one; a file to read: one that is not there. It found
# `bench train --repeats 0`, `bench evaluate --batch-size 0`, `bench scaling --plot
# /proc/no/such`, `solve --cache-dir /proc/no/such` and `train --num-processes 0` (taken for no
# value) accepted; each is now one line before the work, not after it (the cache folder only
# where a table must be written).
NOT_INTEGERS = {"1e400", "nan", "inf", "-inf", "1.5", "", " ", "0x10", NOT_UTF8}
COUNTS = NOT_INTEGERS | {"0", "-1", "-7", str(-(2**63) - 1)}
NOT_POSITIVE = {"0", "-1", "-7", "nan", "-inf", "", " ", NOT_UTF8}  # of a float
NOT_RULES = set(NAMES) - {"official", "yatzy"}
UNWRITABLE = {"/proc/no/such", "/dev/null/below"}  # "" is no file, by design (`PATH or None`)
MISSING = UNWRITABLE | {"{tmp}/missing/deep", "{tmp}/" + NOT_UTF8}
REFUSED: dict[str, dict[str, set[str]]] = {
    "train": {"--num-processes": COUNTS, "--out": UNWRITABLE, "--config": MISSING},
    "evaluate": {
        "--games": COUNTS,
        "--seed": NOT_INTEGERS,
        "--rules": NOT_RULES,
        "--json": UNWRITABLE,
        "--out": UNWRITABLE,
        "--batch-size": COUNTS,
        "--task": {"nope", ""},
        "--target": NOT_INTEGERS,
        "--engine": {"nope", ""},
    },
    "match": {
        "--games": COUNTS,
        "--seed": NOT_INTEGERS,
        "--players": COUNTS | {"1"},
        "--batch-size": COUNTS,
        "--rules": NOT_RULES,
        "--before-endgame": {"nope", ""},
        "--hindsight-weight": {"1.5", "-0.1", "nan", "x"},
        "--hindsight-schedule": MISSING,
        "--joint-endgame": {"nope", ""},
        "--out": UNWRITABLE,
        "--cache-dir": UNWRITABLE,
    },
    "compare": {"--against": MISSING, "--out": UNWRITABLE},
    "tournament": {
        "--games": COUNTS,
        "--seed": NOT_INTEGERS,
        "--dice": {"nope"},
        "--rules": NOT_RULES,
        "--out": UNWRITABLE,
        "--batch-size": COUNTS,
    },
    "solve": {
        "--rules": NOT_RULES,
        "--cache-dir": UNWRITABLE,
        "--policy": {"nope", "", NOT_UTF8},
        "--players": COUNTS | {"1"},
        "--out": UNWRITABLE,
        "--engine": {"nope", ""},
    },
    "play": {"--seed": NOT_INTEGERS, "--rules": NOT_RULES, "--beat": NOT_INTEGERS},
    "experiment": {"--scale": {"nope", ""}, "--seeds": COUNTS, "--out": UNWRITABLE},
    "bench env": {"--rules": NOT_RULES, "--seconds": NOT_POSITIVE, "--json": UNWRITABLE},
    "bench train": {"--repeats": COUNTS, "--json": UNWRITABLE},
    "bench scaling": {"--repeats": COUNTS, "--json": UNWRITABLE, "--plot": UNWRITABLE},
    "bench solve": {
        "--rules": NOT_RULES,
        "--repeats": COUNTS,
        "--engines": {"nope", "", ","},
        "--json": UNWRITABLE,
    },
    "bench evaluate": {
        "--games": COUNTS,
        "--batch-size": COUNTS,
        "--rules": NOT_RULES,
        "--repeats": COUNTS,
        "--json": UNWRITABLE,
    },
}


def refused_values(command: str, argv: list[str]) -> list[tuple[str, str]]:
    """The (option, value) pairs of `argv` whose value `REFUSED` says must be refused (an
    option given twice: its last value, the one argparse keeps)."""
    options, last = OPTIONS[command], {}
    for position, part in enumerate(argv[:-1]):
        if options.get(part, FLAG) is not FLAG:
            last[part] = argv[position + 1]
    refused = REFUSED.get(command, {})
    return [(option, value) for option, value in last.items() if value in refused.get(option, ())]


# The positional arguments of the commands that take them.
POSITIONAL: dict[str, list[list[str]]] = {
    "evaluate": [["random"], ["{tmp}/run"], ["nope"], [""], ["{tmp}/afile"], ["{tmp}/adir"]],
    "match": [["{tmp}/run"], ["win-seeker"], ["optimal"], ["nope"], ["{tmp}/adir"], [NOT_UTF8]],
    "tournament": [["random", "greedy1"], ["random"], ["random", "random"], ["nope", "random"]],
    "compare": [["{tmp}/match.json"], ["{tmp}/afile"], ["{tmp}/run"], ["{tmp}/gone"], [NOT_UTF8]],
    "experiment": [[], ["nope"], ["entropy"], ["single-turn"], [NOT_UTF8]],
}
# Options every case gets: no progress bar, nothing written under the working directory's
# runs/ by a default path, no dice from the secrets module.
ALWAYS = {
    "train": ["--no-progress"],
    "evaluate": ["--no-progress"],
    "tournament": ["--no-progress"],
    "experiment": ["--no-progress"],
}


@st.composite
def argument_vectors(draw: st.DrawFn, command: str) -> list[str]:
    """One command line of `command`: its positionals, then a random subset of its options."""
    argv = command.split() + list(ALWAYS.get(command, []))
    if command in POSITIONAL:
        argv += draw(st.sampled_from(POSITIONAL[command]))
    options = OPTIONS[command]
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=5))
    for option in chosen:
        values = options[option]
        argv += [option] if values is None else [option, draw(st.sampled_from(values))]
    return argv


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a file, an empty directory and a finished tiny run in it."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "afile").write_text("not a config: [\n")
    (root / "adir").mkdir()
    make_finished_run(root / "run")
    results, opponents = np.array([1, 0, -1, 1]), np.array([250, 240, 230, 260])
    match = {"seed": 3, "games": 4, "rules": "official", "players": 2, "opponent": "optimal"}
    match["per_match"] = per_match_record(results, opponents)
    (root / "match.json").write_text(json.dumps(match))  # a `match --out` file `compare` reads
    return root


def _fuzz(command: str, fuzz_dir: Path, monkeypatch: pytest.MonkeyPatch, examples: int) -> None:
    stop_long_work(monkeypatch)
    monkeypatch.chdir(fuzz_dir / "adir")  # default output paths land in the tmp directory
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(fuzz_dir / "cache"))

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=examples <= FAST_EXAMPLES,  # make test: the same cases every time
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(argv=argument_vectors(command))
    def case(argv: list[str]) -> None:
        cases.append(argv)
        bad = refused_values(command, argv)
        argv = [part.replace("{tmp}", str(fuzz_dir)) for part in argv]
        status, stderr, reached = invoke_to_work(argv)
        check_one_line(status, stderr)
        assert not (reached and bad), f"accepted {bad}: {argv}"

    cases: list[list[str]] = []
    started = time.perf_counter()
    case()
    # shown by `pytest -s`: the figures of the closing note
    print(f"\nfuzz {command}: {len(cases)} cases in {time.perf_counter() - started:.1f} s")


FAST_EXAMPLES = 5


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_hostile_command_lines_exit_0_or_2_in_one_line(command, fuzz_dir, monkeypatch):
    """A few hostile command lines of every subcommand (the same ones on every run): exit 0
    or 2, at most one stderr line, no traceback."""
    _fuzz(command, fuzz_dir, monkeypatch, FAST_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_many_hostile_command_lines_exit_0_or_2_in_one_line(command, fuzz_dir, monkeypatch):
    """Many random hostile command lines of every subcommand (new ones on every run)."""
    _fuzz(command, fuzz_dir, monkeypatch, 150)


def _parsers() -> dict[str, object]:
    """Each command's (and each `bench` subcommand's) argument parser, built in full."""
    import argparse

    from yahtzee_jax.commands.cli import COMMANDS, build_parser

    def below(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from below(sub, f"{prefix} {name}".strip())
                return
        yield prefix, parser

    found = {}
    for command in COMMANDS:  # the parser built for a command holds it in full, the rest listed
        built = below(build_parser([command]), "")
        found.update((name, parser) for name, parser in built if name.split()[0] == command)
    return found


def test_every_option_of_every_command_is_fuzzed():
    """Each option of each command's parser (its long name) is drawn by the fuzzer or given to
    every case (`ALWAYS`); each command is fuzzed; every option `REFUSED` names is drawn.
    An option added to a command without a place here fails this test."""
    parsers = _parsers()
    assert sorted(parsers) == sorted(OPTIONS)
    for command, parser in parsers.items():
        options = [action.option_strings for action in parser._actions if action.option_strings]
        names = {max(strings, key=len) for strings in options} - {"--help"}
        assert names == set(OPTIONS[command]) | set(ALWAYS.get(command, [])), command
        assert set(REFUSED.get(command, {})) <= set(OPTIONS[command]), command
