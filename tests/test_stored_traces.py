"""Play programs kept between processes (`evaluation.stored_traces`): read back without tracing,
the same games bit for bit as the traced program, a damaged file traced again, a key that
changes with all the program is traced from, and policies that cannot be stated left alone."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from yahtzee_jax.agents.agent import Agent, Alone, RandomPolicy, make_random_agent
from yahtzee_jax.agents.widget_agents import make_greedy_agent
from yahtzee_jax.evaluation import stored_traces
from yahtzee_jax.evaluation.records import _STATIC, _play_batch, play_games
from yahtzee_jax.game.rules import RULE_VARIANTS

RULES = RULE_VARIANTS["plain"]
POLICY = RandomPolicy(RULES)
GAMES, BATCH, SEED = 16, 8, 3
FIELDS = ("box_scores", "total", "upper_bonus", "yahtzee_bonus_count", "turn_categories",
          "turn_points")  # fmt: skip


@pytest.fixture(scope="module")
def traced():
    """The random agent's games by the program traced in this process (no folder)."""
    return play_games(make_random_agent(RULES), GAMES, SEED, batch_size=BATCH)


@pytest.fixture
def exports(monkeypatch):
    """Counts the traces `stored_traces` exports (each still made)."""
    made = []
    export = stored_traces._export

    def counted(*arguments):
        made.append(arguments)
        return export(*arguments)

    monkeypatch.setattr(stored_traces, "_export", counted)
    stored_traces.forget_programs()
    yield made
    stored_traces.forget_programs()


def play(folder, agent=None):
    """The games of GAMES, SEED and BATCH with the traces kept in `folder`."""
    agent = make_random_agent(RULES) if agent is None else agent
    return play_games(agent, GAMES, SEED, batch_size=BATCH, program_dir=folder)


def assert_same_games(records, expected) -> None:
    """Every per-game array equal, bit for bit."""
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(records, field), getattr(expected, field))


def stored_files(folder):
    """The stored programs in `folder`."""
    return sorted(folder.glob(f"*{stored_traces.SUFFIX}"))


def test_a_stored_program_is_read_back_not_traced_and_plays_the_same_games(
    tmp_path, traced, exports, capsys
) -> None:
    """The first call traces and stores the program (one file, one export); with this process's
    programs forgotten the second reads the file and exports nothing; both play the traced
    program's games bit for bit, and nothing is said about damage."""
    assert_same_games(play(tmp_path), traced)
    assert len(stored_files(tmp_path)) == 1 and len(exports) == 1
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path), traced)
    assert len(exports) == 1
    assert "damaged" not in capsys.readouterr().err


def test_a_fresh_process_reads_the_same_file_and_plays_the_same_games(tmp_path, traced) -> None:
    """A new Python process finds the file this one stored (its key holds no address or other
    per-process value: no second file, the first untouched) and plays the same totals."""
    play(tmp_path)
    (stored,) = stored_files(tmp_path)
    written = stored.stat().st_mtime_ns
    script = (
        "from yahtzee_jax.agents.agent import make_random_agent\n"
        "from yahtzee_jax.evaluation import stored_traces\n"
        "from yahtzee_jax.evaluation.records import play_games\n"
        "from yahtzee_jax.game.rules import RULE_VARIANTS\n"
        "def refuse(*arguments):\n"
        "    raise SystemExit('traced again')\n"
        "stored_traces._export = refuse\n"
        f"records = play_games(make_random_agent(RULE_VARIANTS['plain']), {GAMES}, {SEED}, "
        f"batch_size={BATCH}, program_dir={str(tmp_path)!r})\n"
        "print(' '.join(map(str, records.total)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, check=True
    )
    assert done.stdout.split() == [str(total) for total in traced.total]
    assert stored_files(tmp_path) == [stored] and stored.stat().st_mtime_ns == written


def test_a_damaged_file_is_said_traced_again_and_replaced(
    tmp_path, traced, exports, capsys
) -> None:
    """A byte changed in the stored program: its checksum differs, one line says so, the
    program is traced again (a second export), the games are the traced ones, and the file is
    whole again (the next read exports nothing)."""
    play(tmp_path)
    (stored,) = stored_files(tmp_path)
    damaged = bytearray(stored.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    stored.write_bytes(bytes(damaged))
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path), traced)
    assert "is damaged (its checksum differs); tracing it again" in capsys.readouterr().err
    assert len(exports) == 2 and stored.read_bytes() != bytes(damaged)
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path), traced)
    assert len(exports) == 2 and "damaged" not in capsys.readouterr().err


def test_a_file_with_a_good_checksum_that_cannot_be_read_back_is_traced_again(
    tmp_path, traced, exports, capsys
) -> None:
    """The file's checksum and key match but its program is not an export (written so here):
    it cannot be deserialized, which is said, and the program is traced again."""
    play(tmp_path)
    (stored,) = stored_files(tmp_path)
    body = stored.read_bytes()[32:]
    head = body[: body.index(b"\n", len(stored_traces.FORMAT)) + 1]
    forged = head + b"not an exported program"
    stored.write_bytes(hashlib.sha256(forged).digest() + forged)
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path), traced)
    assert "is damaged (it cannot be read back" in capsys.readouterr().err
    assert len(exports) == 2


def key_of(policy=POLICY, rules=RULES, batch_size=BATCH, params=None):
    """`program_key` of the play program for these arguments (no trace)."""
    static = {"policy": policy, "rules": rules, "batch_size": batch_size}
    dynamic = {"params": params, "base_key": jax.random.key(0), "first_game": jnp.int32(0)}
    leaves, tree = jax.tree.flatten(dynamic)
    assert set(static) == set(_STATIC)
    return stored_traces.program_key(_play_batch, static, tree, leaves)


def test_the_key_changes_with_all_the_program_is_traced_from(monkeypatch) -> None:
    """The same arguments give the same key; another rule set, batch size, policy field, params
    shape or dtype, or package source each give another; so does a changed source digest
    (injected here)."""
    base = key_of()
    assert base is not None and key_of() == base
    others = [
        key_of(rules=RULE_VARIANTS["yatzy"]),
        key_of(policy=RandomPolicy(RULE_VARIANTS["yatzy"])),
        key_of(batch_size=BATCH + 1),
        key_of(params=jnp.zeros(3, jnp.float32)),
        key_of(params=jnp.zeros(3, jnp.int32)),
        key_of(params=jnp.zeros(4, jnp.float32)),
        key_of(policy=Alone(RandomPolicy(RULES))),
    ]
    monkeypatch.setattr(stored_traces, "package_digest", lambda: "edited code")
    others.append(key_of())
    assert None not in others and len({base, *others}) == len(others) + 1


def random_policy(params, own, others, keys):
    """The random agent's policy as a plain function: it cannot be stated."""
    return RandomPolicy(RULES)(params, own, others, keys)


def test_a_policy_holding_a_callable_is_traced_as_usual_and_not_stored(
    tmp_path, traced, exports
) -> None:
    """`Alone(a function)`: a frozen dataclass of the package, but its field is a callable, so
    no key (nor for the bare function); nothing is exported or stored, and the games are those
    of the traced program (the function plays the random policy's actions)."""
    assert stored_traces.statement(Alone(random_policy)) is None
    assert key_of(policy=Alone(random_policy)) is None and key_of(policy=random_policy) is None
    agent = Agent(name="alone-random", policy=Alone(random_policy), params=None, rules=RULES)
    assert_same_games(play(tmp_path, agent), traced)
    assert stored_files(tmp_path) == [] and exports == []


@dataclasses.dataclass(frozen=True)
class OutsidePolicy:
    """A frozen dataclass of plain data defined outside the package: its code is not in the
    package digest, so it cannot be stated."""

    level: int


def test_statements_of_plain_data_and_of_what_cannot_be_stated() -> None:
    """A rule set and the package's policies of rules are stated; a class from outside the
    package, an unfrozen dataclass, an array, a list and a function are not."""
    assert stored_traces.statement(RULES) != stored_traces.statement(RULE_VARIANTS["yatzy"])
    assert stored_traces.statement(RandomPolicy(RULES)) is not None

    @dataclasses.dataclass
    class Unfrozen:
        level: int

    for value in (OutsidePolicy(1), Unfrozen(1), np.zeros(2), [1, 2], random_policy):
        assert stored_traces.statement(value) is None


PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.tuples(inner, inner) | st.tuples(inner),
    max_leaves=6,
)


def exactly(value):
    """`value` with its types and floats' bits, so that 1 and True, 0.0 and -0.0 differ and
    a NaN equals itself."""
    if isinstance(value, tuple):
        return ("tuple", tuple(exactly(item) for item in value))
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__name__, value)


@given(PLAIN, PLAIN)
def test_two_plain_values_have_one_statement_exactly_when_they_are_the_same(a, b) -> None:
    """Plain data (None, bools, ints, floats, short strings and tuples of them): equal
    statements exactly for the same types and values (True is not 1, -0.0 not 0.0)."""
    assert stored_traces.statement(a) is not None
    assert (stored_traces.statement(a) == stored_traces.statement(b)) == (exactly(a) == exactly(b))


def test_a_program_that_cannot_be_exported_is_traced_as_usual(tmp_path, traced, monkeypatch):
    """Export refusing the program (as it refuses a host callback): no file, no error, and the
    games of the traced program."""

    def refuse(*arguments):
        raise ValueError("cannot export a host callback")

    monkeypatch.setattr(stored_traces, "_export", refuse)
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path), traced)
    assert stored_files(tmp_path) == []
    stored_traces.forget_programs()


def test_the_widget_policy_plays_its_traced_games_bit_for_bit_from_its_stored_program(
    tmp_path, exports
) -> None:
    """greedy3 (a float32 turn widget, whose near-ties a differently fused program could break
    otherwise): its games by the stored program, read back without tracing, equal those of the
    program traced in this process, bit for bit."""
    agent = make_greedy_agent(3, RULES)
    expected = play_games(agent, GAMES, SEED, batch_size=BATCH)
    play(tmp_path, agent)
    stored_traces.forget_programs()
    assert_same_games(play(tmp_path, agent), expected)
    assert len(exports) == 1 and len(stored_files(tmp_path)) == 1
