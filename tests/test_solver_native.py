"""The solver's C kernel (`solver.native`): the NumPy loop's values bit for bit, and what happens
where it cannot be built."""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import stat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import RULE_VARIANTS, UPPER_BOXES, Box, Joker, Kind, Rules, get_rules
from yahtzee_jax.solver import native, value_table
from yahtzee_jax.solver.final_rolls import final_roll_plan, solver_final_roll_values
from yahtzee_jax.solver.states import layer_chunks, layer_states, table_shape
from yahtzee_jax.solver.widget import turn_start_value
from yahtzee_jax.solver.widget_tables import solver_score_tables


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """The kernel, built once for this module's tests."""
    return native.load_kernel(str(tmp_path_factory.mktemp("kernel")))


def _numpy_loop_values(rules, table, chunk):
    """The NumPy loop's values of one chunk of states (`value_table._solve_chunk`, no write)."""
    base, *options = solver_score_tables(rules)
    mask, upper, flag = (part.astype(np.int64) for part in chunk)
    yahtzee_options = value_table.yahtzee_options_of(options, mask, flag)
    plan = final_roll_plan(base, rules)
    future = value_table._future_of(table)
    return turn_start_value(
        solver_final_roll_values(mask, upper, flag, plan, yahtzee_options, future)
    )


@pytest.mark.parametrize("variant", ["official", "yatzy", "yacht-clubhouse"])
def test_the_kernel_values_random_tables_as_the_numpy_loop_does(kernel, variant):
    """Against a table of random values (every next state's value arbitrary, not a solve's), a
    layer's states in one run of a whole chunk, one of 37 states (a short chunk, copied for its
    dot) and one of a single state equal the NumPy loop's values to the last bit, for a rule set
    with the Yahtzee bonus and Joker, Yatzy's card and Yacht's."""
    rules = get_rules(variant)
    table = np.random.default_rng(11).uniform(0, 300, size=table_shape(rules))
    _, chunks = layer_chunks(rules, 3)
    solver = native.NativeSolve(rules, solver_score_tables(rules)[1:], kernel, threads=1)
    for chunk in (
        chunks[0],
        tuple(part[5:42] for part in chunks[1]),
        tuple(p[:1] for p in chunks[2]),
    ):
        expected = _numpy_loop_values(rules, table, chunk)
        got = table.copy()
        solver.solve_layer(got, 3, [part.astype(np.int64) for part in chunk])
        np.testing.assert_array_equal(got[tuple(part.astype(np.int64) for part in chunk)], expected)


@pytest.mark.parametrize("variant", ["official", "yacht"])
def test_a_solve_with_the_kernel_is_the_numpy_loops_table(variant):
    """The last four layers solved with the kernel (two threads) equal the NumPy loop's (forked
    workers) to the last bit, NaN where a state is not reachable or not solved."""
    rules = get_rules(variant)
    last = rules.num_boxes - 4
    ours = value_table.solve_value_table(rules, down_to_filled=last, engine="native")
    numpy_loop = value_table.solve_value_table(rules, down_to_filled=last, workers=2)
    assert np.isfinite(ours).sum() > 2 * native.RUN_STATES  # several runs a layer
    np.testing.assert_array_equal(ours, numpy_loop)


def test_every_rule_set_solved_whole_by_the_kernel_is_the_xla_programs_table():
    """Yacht solved whole, the first layer's lone state included (a chunk of one state), is the
    XLA program's table to the last bit, and its optimum is the published 180.4161."""
    rules = get_rules("yacht")
    ours = value_table.solve_value_table(rules, engine="native")
    np.testing.assert_array_equal(ours, value_table.solve_value_table(rules, engine="xla"))
    assert ours[0, 0, 0] == pytest.approx(180.4161173148, abs=1e-9)


def test_a_layers_parts_on_several_threads_give_the_same_values(kernel):
    """One thread or three (each a contiguous part of a layer's runs, the last ones short) fill
    a layer with the same bits."""
    rules = get_rules("official")
    table = np.random.default_rng(3).uniform(0, 300, size=table_shape(rules))
    _, states = layer_states(rules, 5)
    filled = []
    for threads in (1, 3):
        solver = native.NativeSolve(rules, solver_score_tables(rules)[1:], kernel, threads)
        values = table.copy()
        solver.solve_layer(values, 5, states)
        filled.append(values)
    assert len(states[0]) > 3 * native.RUN_STATES
    np.testing.assert_array_equal(filled[0], filled[1])


def test_the_kernel_refuses_a_run_that_is_not_whole_tiles(kernel):
    """A run of 7 states (not a whole number of tiles) is refused with status 1 before anything
    is read or written."""
    rules = get_rules("yacht")
    solver = native.NativeSolve(rules, solver_score_tables(rules)[1:], kernel, threads=1)
    nothing = [None] * 8
    status = kernel.solve_run(ctypes.byref(solver.plan), 7, 256, 264, *nothing)
    assert status == 1


def _compiler(folder, body):
    """A fake C compiler: answers --version, runs `body` (a shell line) to build."""
    path = folder / "fake-cc"
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo fake 1.0; exit 0; fi\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_where_the_kernel_cannot_be_built_the_reason_is_one_line(tmp_path):
    """No compiler, a compiler that fails (its first error line is quoted) and one that writes
    no library each raise `NativeError` with the reason on one line; nothing is left behind
    but the (empty, unlocked) lock file the build was made under."""
    with pytest.raises(native.NativeError, match="no C compiler 'no-such-cc'"):
        native.load_kernel(str(tmp_path), compiler="no-such-cc")
    failing = _compiler(tmp_path, "echo 'kernel.c:1: error: boom' >&2; exit 1")
    with pytest.raises(native.NativeError, match=r"failed to build the solver kernel: .*boom$"):
        native.load_kernel(str(tmp_path / "cache"), compiler=failing)
    silent = _compiler(tmp_path, "exit 0")
    with pytest.raises(native.NativeError, match=r"could not build|cannot load"):
        native.load_kernel(str(tmp_path / "cache"), compiler=silent)
    left = [path.name for path in (tmp_path / "cache").glob("*")]
    assert all(name.startswith(".native-kernel-") and name.endswith(".so.lock") for name in left)


def test_the_kernel_is_kept_and_a_damaged_one_built_again(tmp_path, monkeypatch, capsys):
    """The kernel built into a folder is loaded from it by a later solve (nothing compiled); a
    damaged file of its name in another folder is built again and replaced, whole, with its
    checksum beside it; eight bytes changed in the middle of the kept one (a file that still
    loads) are caught by the checksum: built again, with one line saying so."""
    monkeypatch.setattr(native, "INSTALLED_KERNELS", tmp_path / "none installed")
    native.load_kernel.cache_clear()
    native.load_kernel(str(tmp_path / "kept"))
    (library,) = (tmp_path / "kept").glob("native-kernel-*.so")
    native.load_kernel.cache_clear()  # as a later solve in a new process would
    with monkeypatch.context() as patch:
        patch.setattr(native, "_build", lambda *_: pytest.fail("built again"))
        assert native.load_kernel(str(tmp_path / "kept")).solve_run
    damaged = tmp_path / "damaged" / library.name
    damaged.parent.mkdir()
    damaged.write_bytes(b"not a library")  # a new path: this process never loaded it
    native.load_kernel.cache_clear()
    assert native.load_kernel(str(damaged.parent)).solve_run
    assert damaged.read_bytes()[:4] == b"\x7fELF"
    shown = sorted(path.name for path in damaged.parent.iterdir() if not path.name.startswith("."))
    assert shown == [library.name, f"{library.name}.crc32"]
    # The kept kernel with 8 bytes changed in the middle, copied to a folder of its own (a
    # library this process has loaded is never written in place: its pages are mapped).
    whole = library.read_bytes()
    middle = len(whole) // 2
    flipped = tmp_path / "flipped" / library.name
    flipped.parent.mkdir()
    changed = bytes(byte ^ 0xFF for byte in whole[middle : middle + 8])
    flipped.write_bytes(whole[:middle] + changed + whole[middle + 8 :])
    shutil.copy(f"{library}.crc32", f"{flipped}.crc32")
    native.load_kernel.cache_clear()
    assert native.load_kernel(str(flipped.parent)).solve_run
    assert flipped.read_bytes() == whole  # built again: the same compiler, the same bytes
    assert capsys.readouterr().err.count("is damaged (its checksum differs)") == 1


def test_a_kernel_built_at_setup_serves_an_empty_cache(tmp_path, monkeypatch, capsys):
    """`make setup`'s `install_kernel` builds the kernel into the environment's folder (and
    removes the kernels of earlier sources there); a solve
    with a new, empty cache folder then loads it from there and compiles nothing (it writes no
    kernel into the cache). Where it cannot be built, setup says why in one line and goes on."""
    monkeypatch.setattr(native, "INSTALLED_KERNELS", tmp_path / "share" / "yahtzee_jax")
    native.load_kernel.cache_clear()
    native.INSTALLED_KERNELS.mkdir(parents=True)
    for name in (
        "native-kernel-0ld.so",
        "native-kernel-0ld.so.crc32",
        ".native-kernel-0ld.so.lock",
    ):
        (native.INSTALLED_KERNELS / name).write_text("built from earlier sources")
    native.install_kernel()
    (library,) = native.INSTALLED_KERNELS.glob("native-kernel-*.so")  # the earlier one gone
    assert sorted(path.name for path in native.INSTALLED_KERNELS.iterdir()) == [
        f".{library.name}.lock",
        library.name,
        f"{library.name}.crc32",
    ]
    assert capsys.readouterr().out == f"solver kernel built: {library}\n"
    native.load_kernel.cache_clear()  # as a new process would
    with monkeypatch.context() as patch:
        patch.setattr(native, "_build", lambda *_: pytest.fail("compiled again"))
        assert native.load_kernel(str(tmp_path / "empty cache")).solve_run
    assert not list((tmp_path / "empty cache").glob("native-kernel-*"))

    def no_compiler(*_):
        raise native.NativeError("no C compiler 'cc' on the PATH")

    monkeypatch.setattr(native, "load_kernel", no_compiler)
    native.install_kernel()
    assert capsys.readouterr().out == (
        "solver kernel not built here (no C compiler 'cc' on the PATH); a solve builds it or "
        "runs XLA\n"
    )


def test_auto_falls_back_to_xla_with_a_warning_and_native_says_why(monkeypatch):
    """Where the kernel cannot be built, "auto" warns once and solves with the XLA program (the
    same table); "native" stops with a one-line error; an unknown engine is refused."""
    rules = get_rules("yacht")
    last = rules.num_boxes - 2
    expected = value_table.solve_value_table(rules, down_to_filled=last, engine="native")

    def no_compiler(*_):
        raise native.NativeError("no C compiler 'cc' on the PATH")

    monkeypatch.setattr(value_table, "load_kernel", no_compiler)
    with pytest.warns(RuntimeWarning, match="no C compiler 'cc' on the PATH; solving with the XLA"):
        got = value_table.solve_value_table(rules, down_to_filled=last)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(UserError, match=r"^the native solver engine: no C compiler 'cc'"):
        value_table.solve_value_table(rules, down_to_filled=last, engine="native")
    with pytest.raises(UserError, match="unknown solver engine 'numba'"):
        value_table.solve_value_table(rules, engine="numba")


def test_solve_command_takes_an_engine_with_force(tmp_path, capsys):
    """`solve --engine native --force` solves Yacht to its optimum; --engine without --force is
    a one-line error (a cached table would be loaded, not solved)."""
    cache = ["--rules", "yacht", "--cache-dir", str(tmp_path)]
    assert main(["solve", *cache, "--engine", "native", "--force"]) == 0
    assert "180.4161173148" in capsys.readouterr().out
    assert main(["solve", *cache, "--engine", "xla"]) == 2
    assert "--engine chooses how to solve: it goes with --force" in capsys.readouterr().err


def test_the_kernels_name_changes_with_its_source_compiler_and_cpu(monkeypatch):
    """The kernel's file is named by a digest of everything that makes it: the same inputs name
    the same file; another CPU description names another."""
    names = []
    for cpu in ("model A", "model A", "model B"):
        monkeypatch.setattr(native, "host_description", functools.partial(str, cpu))
        monkeypatch.setattr(native, "_loaded", lambda path, compiler, library: library.name)
        native.load_kernel.cache_clear()
        names.append(native.load_kernel(os.devnull))
    native.load_kernel.cache_clear()
    assert names[0] == names[1] != names[2]


@settings(max_examples=12, deadline=None)
@given(
    variant=st.sampled_from(list(RULE_VARIANTS)),
    filled=st.integers(0, 11),
    picks=st.lists(st.integers(0, 10**9), min_size=1, max_size=40),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_states_in_any_order_against_any_table_are_the_numpy_loops(
    kernel, variant, filled, picks, seed
):
    """Any rule set, any layer, any of its states (in any order, a chunk of one to forty)
    against a table of arbitrary values: the kernel's values are the NumPy loop's bit for bit.
    The states are distinct: BLAS rounds a chunk's columns by their place in it (a fifth column
    of five apart from the first four), so a state given twice is written twice, each time with
    its place's rounding, in both loops alike."""
    rules = get_rules(variant)
    _, states = layer_states(rules, filled)
    rows = np.array(list(dict.fromkeys(pick % len(states[0]) for pick in picks)))
    chunk = tuple(column[rows] for column in states)
    table = np.random.default_rng(seed).uniform(0, 400, size=table_shape(rules))
    expected = _numpy_loop_values(rules, table, chunk)
    solver = native.NativeSolve(rules, solver_score_tables(rules)[1:], kernel, threads=2)
    got = table.copy()
    solver.solve_layer(got, filled, [part.astype(np.int64) for part in chunk])
    np.testing.assert_array_equal(got[tuple(part.astype(np.int64) for part in chunk)], expected)


def test_states_or_tables_the_kernel_would_misread_are_refused(kernel):
    """The kernel indexes its tables with the states unchecked, so the class checks them first:
    a state past the table's masks, a negative upper total, a float32 table or another shape,
    and score tables of another rule set are refused in one line, before the kernel runs."""
    rules = get_rules("yacht")
    options = solver_score_tables(rules)[1:]
    solver = native.NativeSolve(rules, options, kernel, threads=1)
    table = np.zeros(table_shape(rules))
    good = [np.array([0]), np.array([0]), np.array([0])]
    for states in (
        [np.array([1 << rules.num_boxes]), good[1], good[2]],
        [good[0], np.array([-1]), good[2]],
        [good[0], good[1], np.array([2])],
    ):
        with pytest.raises(ValueError, match="a state outside the table's"):
            solver.solve_layer(table, 0, states)
    for wrong in (table.astype(np.float32), table[:-1]):
        with pytest.raises(ValueError, match="value_table: not a float64"):
            solver.solve_layer(wrong, 0, good)
    with pytest.raises(ValueError, match="score_tables: not the five-of-a-kinds'"):
        native.NativeSolve(rules, solver_score_tables(get_rules("official"))[1:], kernel, 1)
    assert np.all(table == 0)  # nothing written


def _candidates_by_hand(flat, rows, lengths, shifts, state, target):
    """Each candidate's chance of each column, [candidates, columns], read as the kernel's
    docstring says: the row's entry d - shift, its first below 0, 0 past its end."""
    wanted = target[None] - shifts[:, state]
    length = lengths[:, state]
    entry = rows[:, state] + np.clip(wanted, 0, np.maximum(length - 1, 0))
    return np.where(wanted < length, flat[np.maximum(entry, 0)], 0.0)


@pytest.mark.parametrize("policy", ["target", "expected", "chosen"])
@pytest.mark.parametrize("columns", [1, 5, 8, 37, 300])
def test_the_kernels_target_turn_is_numpys_bit_for_bit(kernel, columns, policy):
    """Random candidates (some never taken, some rows read past their end or before their start)
    and random columns, their count not a whole number of tiles among them: the kernel's turn is
    the NumPy passes' to the last bit. "target": each roll's best candidate, the widget
    (`widget.first_roll_values`) and `target_turn.mean_over_rolls`. "expected": each roll's
    candidate of highest value (few distinct values: many ties, the first one taken) and the
    value-maximiser's keeps carrying the chances (`target_turn.turn_start_chances`). "chosen":
    the same, each candidate's value read from a second table of rows at the column's target
    (quarters: ties again), -inf where not allowed: one table chooses, the other is carried."""
    from yahtzee_jax.solver.target_turn import mean_over_rolls, turn_start_chances
    from yahtzee_jax.solver.widget import first_roll_values

    generator = np.random.default_rng(columns)
    states, count, boxes = 3, 40, 13
    flat = generator.uniform(0, 1, size=500)
    lengths = generator.integers(1, 60, size=(count, states))
    rows = generator.integers(0, len(flat) - lengths)
    shifts = np.where(
        generator.random((count, states)) < 0.2, -(1 << 40), generator.integers(0, 50)
    )
    sources = generator.integers(0, count, size=(252, boxes))
    state = generator.integers(0, states, size=columns)
    target = generator.integers(0, 120, size=columns)
    values = generator.integers(0, 4, size=(count, states)).astype(float)
    values[generator.random((count, states)) < 0.2] = -np.inf

    chance = _candidates_by_hand(flat, rows, lengths, shifts, state, target)
    choose = None
    if policy == "chosen":
        choose_flat = generator.integers(0, 4, size=300) / 4
        choose_lengths = generator.integers(1, 60, size=(count, states))
        choose_rows = generator.integers(0, len(choose_flat) - choose_lengths)
        choose = (choose_rows, choose_lengths, choose_flat)
        allowed = np.isfinite(values)
        read = _candidates_by_hand(choose_flat, choose_rows, choose_lengths, shifts, state, target)
        values = np.where(allowed, 0.0, -np.inf)
        worth = np.where(allowed[:, state], read, -np.inf)[sources]  # [252, boxes, columns]
    else:
        worth = values[:, state][sources]
    if policy == "target":
        final = np.maximum(chance[sources].max(axis=1), 0.0)  # [252, columns]
        expected = mean_over_rolls(first_roll_values(final))
        given = None
    else:
        first_best = worth.argmax(axis=1)  # the first of the highest
        final = np.take_along_axis(chance[sources], first_best[:, None], axis=1)[:, 0]
        final_values = np.take_along_axis(worth, first_best[:, None], axis=1)[:, 0]
        final[final_values == -np.inf] = 0.0  # no candidate allowed: nothing taken
        expected = turn_start_chances(final[..., None], final_values)[:, 0]
        given = values
    ours = native.target_turn_start(
        (rows, lengths, shifts), sources, flat, (state, target), kernel, given, choose
    )
    np.testing.assert_array_equal(ours, expected)


def test_a_columns_mean_is_the_same_bits_beside_any_columns():
    """`mean_over_rolls`, the target tables' mean, gives a column the same bits alone or among
    others (a BLAS dot need not), and is the dot's mean to round-off."""
    from yahtzee_jax.solver.target_turn import mean_over_rolls
    from yahtzee_jax.solver.widget_tables import ROLL_PROBABILITIES

    first = np.random.default_rng(1).uniform(0, 1, size=(252, 37))
    together = mean_over_rolls(first)
    alone = [mean_over_rolls(first[:, [column]])[0] for column in range(37)]
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_allclose(together, ROLL_PROBABILITIES @ first, rtol=1e-14)


def test_target_inputs_the_kernel_would_misread_are_refused(kernel):
    """Candidates out of range, a row past the table's end, or a column's state outside the n
    are refused in one line before the kernel reads them. Taken as given, every roll's best
    candidate reads the row [0.5] at d = 0 (0.5) and past its end at d = 5 (0)."""
    flat = np.zeros(100)
    flat[0] = 0.5
    rows, lengths, shifts = np.zeros((2, 3), np.int64), np.ones((2, 3), np.int64), np.zeros((2, 3))
    sources = np.zeros((252, 4), np.int64)
    columns = (np.array([0, 2]), np.array([0, 5]))
    with pytest.raises(ValueError, match="sources"):
        native.target_turn_start((rows, lengths, shifts), sources + 2, flat, columns, kernel)
    with pytest.raises(ValueError, match="flat"):
        native.target_turn_start((rows + 100, lengths, shifts), sources, flat, columns, kernel)
    with pytest.raises(ValueError, match="status 2"):
        native.target_turn_start(
            (rows, lengths, shifts), sources, flat, (np.array([0, 3]), columns[1]), kernel
        )
    choose = (rows, lengths, flat)
    with pytest.raises(ValueError, match="only with the candidates' values"):
        native.target_turn_start(
            (rows, lengths, shifts), sources, flat, columns, kernel, None, choose
        )
    with pytest.raises(ValueError, match="choose: a contiguous"):
        native.target_turn_start(
            (rows, lengths, shifts),
            sources,
            flat,
            columns,
            kernel,
            shifts,
            (rows + 100, *choose[1:]),
        )
    assert native.target_turn_start((rows, lengths, shifts), sources, flat, columns, kernel) == (
        pytest.approx([0.5, 0.0], abs=1e-14)
    )


# Yahtzee's bonus and forced Joker on a card of eight boxes (upper six, chance, Yahtzee): its last
# layer's moves are those official Yahtzee's candidates must get right, in a second.
JOKER_CARD = Rules(
    "joker-card",
    yahtzee_bonus=True,
    joker=Joker.FORCED,
    boxes=(*UPPER_BOXES, Box("chance", Kind.CHANCE), Box("yahtzee", Kind.OF_A_KIND, 5, 50)),
)


@pytest.mark.parametrize("policy", ["target", "expected"])
@pytest.mark.parametrize(
    ("rules", "layers"), [(get_rules("yacht"), 2), (JOKER_CARD, 1)], ids=["yacht", "joker-card"]
)
def test_target_tables_by_the_kernel_are_numpys(monkeypatch, rules, layers, policy):
    """A partial target solve by the kernel is the NumPy passes' table to the last bit, for both
    policies (the Joker card: joker moves and Yahtzee bonuses among the candidates); where the
    kernel cannot be built the solve warns and uses NumPy."""
    from yahtzee_jax.solver import target_table

    down_to_filled = rules.num_boxes - layers
    values = None if policy == "target" else value_table.solve_value_table(rules)
    solve = functools.partial(
        target_table.solve_target_table, rules, policy, values, down_to_filled, workers=1
    )
    ours = solve()

    def no_compiler(*_):
        raise native.NativeError("no C compiler 'cc' on the PATH")

    monkeypatch.setattr(native, "load_kernel", no_compiler)
    with pytest.warns(RuntimeWarning, match="the target tables are solved by NumPy"):
        by_numpy = solve()
    assert np.isfinite(ours).sum() > 1000
    np.testing.assert_array_equal(ours, by_numpy)


def test_a_folder_in_the_kernels_place_is_a_native_error(tmp_path):
    """A folder where the kernel's file goes is a `NativeError` (the solve then falls back to
    NumPy, as after a failed build), not the IsADirectoryError the cache's new check raised
    before any build (found reviewing that check)."""
    _, name = native.kernel_name("cc")
    (tmp_path / name).mkdir()
    native.load_kernel.cache_clear()
    try:
        with pytest.raises(native.NativeError, match="in the way of the solver kernel"):
            native.load_kernel(str(tmp_path))
    finally:
        native.load_kernel.cache_clear()
