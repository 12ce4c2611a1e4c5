"""Command-line fuzzing: every subcommand, its real options, hostile values.

Each case is an argument vector of one subcommand: a random subset of its options, each with a
value drawn from what a new user (or a script gone wrong) may type: 0, negatives, 2^63 and
beyond, NaN and infinities, empty strings, bytes that are not UTF-8, a key given twice, unknown
names, and paths to a file, a directory, a missing or an unwritable place. Property: the
command exits 0 or 2 with at most one line on stderr, never a traceback. Long work (a training
chunk's compile, games, a solve, a benchmark) is replaced by a stop (`fuzzing.LONG_WORK`):
reaching it means every input was accepted. The fast version runs a few cases per subcommand in
`make test`; the slow one many more.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fuzzing import check_one_line, invoke, make_finished_run, stop_long_work
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    },
    "match": {
        "--opponent": [*NAMES, "optimal", "greedy3"],
        "--games": NUMBERS,
        "--seed": NUMBERS,
        "--players": NUMBERS,
        "--batch-size": NUMBERS,
        "--rules": NAMES,
        "--endgame-open": NUMBERS,
        "--before-endgame": ["normal", "solitaire", "nope", ""],
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
    "solve": {"--rules": NAMES, "--cache-dir": PATHS, "--force": FLAG},
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
    },
    "play": {
        "--hint": FLAG,
        "--against": NAMES,
        "--watch": NAMES,
        "--seed": NUMBERS,
        "--rules": NAMES,
        "--cache-dir": PATHS,
    },
    "experiment": {
        "--list": FLAG,
        "--scale": ["cpu", "paper", "nope", ""],
        "--seeds": NUMBERS,
        "--out": PATHS,
        "--population": NUMBERS,
    },
    "bench env": {
        "--batch-sizes": ["1,2", "0", "-1", "x", "", str(2**64)],
        "--rules": NAMES,
        "--seconds": NUMBERS,
    },
    "bench train": {
        "--preset": NAMES,
        "--batches": ["4", "0", "x", "", "-2"],
        "--repeats": NUMBERS,
        "--population": NUMBERS,
        "--widths": ["16", "0", "x", "-1"],
        "--set": OVERRIDES,
    },
    "bench scaling": {
        "--preset": NAMES,
        "--batches": ["4", "0", "x", ""],
        "--widths": ["16", "0", "x"],
        "--devices": ["1", "0", "x", "", "-1"],
        "--repeats": NUMBERS,
        "--max-transitions-per-update": NUMBERS,
        "--set": OVERRIDES,
    },
    "bench solve": {
        "--rules": NAMES,
        "--repeats": NUMBERS,
        "--workers": NUMBERS,
        "--dlangk": PATHS,
    },
    "bench evaluate": {
        "--games": NUMBERS,
        "--batch-size": NUMBERS,
        "--rules": NAMES,
        "--seed": NUMBERS,
        "--repeats": NUMBERS,
        "--dlangk": PATHS,
    },
}
# The positional arguments of the commands that take them.
POSITIONAL: dict[str, list[list[str]]] = {
    "evaluate": [["random"], ["{tmp}/run"], ["nope"], [""], ["{tmp}/afile"], ["{tmp}/adir"]],
    "match": [["{tmp}/run"], ["win-seeker"], ["optimal"], ["nope"], ["{tmp}/adir"], [NOT_UTF8]],
    "tournament": [["random", "greedy1"], ["random"], ["random", "random"], ["nope", "random"]],
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
        argv = [part.replace("{tmp}", str(fuzz_dir)) for part in argv]
        status, stderr = invoke(argv)
        check_one_line(status, stderr)

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
