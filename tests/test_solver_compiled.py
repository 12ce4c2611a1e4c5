"""The solver's compiled chunk program (`solver.compiled`) against its NumPy loop, bit for bit."""

import contextlib
import json
import pathlib
import pickle

import jax
import numpy as np
import pytest

from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import compiled, value_table
from yahtzee_jax.solver.compiled import CompiledSolve
from yahtzee_jax.solver.final_rolls import final_roll_plan, solver_final_roll_values
from yahtzee_jax.solver.states import chunk_indices, layer_chunks, table_shape
from yahtzee_jax.solver.widget import turn_start_value
from yahtzee_jax.solver.widget_tables import solver_score_tables


@pytest.mark.parametrize("variant", ["official", "yatzy", "yacht", "free-joker", "no-joker"])
def test_compiled_chunk_equals_the_numpy_loop_bit_for_bit(variant):
    """On a random table of futures, a full chunk, a short one and a run of both (padded) of two
    layers give the NumPy loop's turn-start values to the last bit."""
    rules = get_rules(variant)
    table = np.random.default_rng(3).uniform(0, 200, size=table_shape(rules))
    base, *options = solver_score_tables(rules)
    plan = final_roll_plan(base, rules)
    future = value_table._future_of(table)
    with jax.enable_x64(True):
        program = CompiledSolve(rules, tuple(options))
    for filled in (3, rules.num_boxes - 2):
        _, chunks = layer_chunks(rules, filled)
        with jax.enable_x64(True):
            program.start_layer(table, filled)
        short = tuple(part[:37] for part in chunks[-1])
        for run in ([chunks[0]], [short], [chunks[0], short, chunks[0]]):
            expected = []
            for chunk in run:
                mask, upper, flag = chunk_indices(chunk)
                numpy_options = value_table.yahtzee_options_of(options, mask, flag)
                final = solver_final_roll_values(mask, upper, flag, plan, numpy_options, future)
                expected.append(turn_start_value(final))
            with jax.enable_x64(True):
                got = program.turn_start_values(run)
            np.testing.assert_array_equal(got, np.concatenate(expected))


def test_an_xla_that_refuses_the_compile_options_compiles_with_its_defaults(monkeypatch):
    """An option this XLA does not know: the program is compiled without the options, once."""
    from yahtzee_jax.solver import compiled

    rules = get_rules("yacht")
    monkeypatch.setattr(compiled, "_COMPILE_OPTIONS", {"xla_no_such_option": True})
    monkeypatch.setattr(compiled, "_OPTIONS_REFUSED", set())
    compiled._compiled.cache_clear()
    table = np.random.default_rng(4).uniform(0, 100, size=table_shape(rules))
    _, chunks = layer_chunks(rules, rules.num_boxes - 1)
    with jax.enable_x64(True):
        program = CompiledSolve(rules, solver_score_tables(rules)[1:])
        program.start_layer(table, rules.num_boxes - 1)
        values = program.turn_start_values([tuple(part[:5] for part in chunks[0])])
    assert values.shape == (5,) and np.isfinite(values).all()
    assert {rules} == compiled._OPTIONS_REFUSED
    compiled._compiled.cache_clear()  # the next test compiles with the real options


@contextlib.contextmanager
def jaxs_cache(folder: pathlib.Path | None):
    """JAX's persistent compilation cache in `folder`, keeping every program however quickly it
    compiled (None: off), for a while; then the test session's again (`tests/conftest.py`). The
    session's holds every program another test compiled more slowly than its 0.5 s threshold;
    while JAX's cache is on, no program is written to our folder (`programs.jaxs_cache_is_on`)."""
    from jax.experimental.compilation_cache import compilation_cache

    session = jax.config.jax_compilation_cache_dir
    threshold = jax.config.jax_persistent_cache_min_compile_time_secs

    def use(folder, on, shortest):
        jax.config.update("jax_compilation_cache_dir", folder)
        jax.config.update("jax_enable_compilation_cache", on)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", shortest)
        compilation_cache.reset_cache()  # JAX reads these once, at its first compile
        jax.clear_caches()  # else JAX's compile hands back programs it had before, from its cache

    use(str(folder) if folder else session, folder is not None, 0.0)
    try:
        yield
    finally:
        use(session, True, threshold)


def small_program(seed: int):
    """(an array x, a jitted program of x that compiles in a blink, its values by NumPy)."""
    import jax.numpy as jnp

    x = jnp.asarray(np.random.default_rng(seed).uniform(size=(64, 128)))
    function = jax.jit(lambda x: jnp.where(x > 0.5, x * 2.0, -x).sum(axis=0))
    expected = np.where(np.asarray(x) > 0.5, 2 * np.asarray(x), -np.asarray(x)).sum(axis=0)
    return x, function, expected


def test_the_compiled_programs_are_kept_and_a_damaged_one_compiled_again(tmp_path, monkeypatch):
    """A second solve loads the program the first compiled into the cache folder (the chunk
    program; the score tables are NumPy's), to the same values, without tracing it; a damaged
    file is compiled again and replaced; changed code (another source digest) compiles a program
    of its own. JAX's cache is off: the chunk program came from it in CI once, and was not kept."""

    from yahtzee_jax.solver import compiled, programs, widget_tables

    rules = get_rules("yacht")

    def solve():
        monkeypatch.setattr(widget_tables, "_SCORE_TABLES", {})  # the score tables computed again
        return value_table.solve_value_table(
            rules, workers=1, down_to_filled=rules.num_boxes - 3, cache_dir=tmp_path, engine="xla"
        )

    with jaxs_cache(None):
        first = solve()
        (program,) = tmp_path.glob("xla-*.xla")
        assert program.name.startswith("xla-solver-chunk-")
        with monkeypatch.context() as patch:
            patch.setattr(jax.stages.Lowered, "compile", lambda *_: pytest.fail("compiled again"))
            patch.setattr(compiled, "_compiled", lambda *_: pytest.fail("traced again"))
            np.testing.assert_array_equal(solve(), first)
        program.write_bytes(program.read_bytes()[:1000])
        np.testing.assert_array_equal(solve(), first)
        assert program.stat().st_size > 1000
        monkeypatch.setattr(programs, "source_digest", lambda: "edited code")
        np.testing.assert_array_equal(solve(), first)
        assert len(list(tmp_path.glob("xla-solver-chunk-*.xla"))) == 2


def test_the_accelerators_large_runs_give_the_cpus_values_to_round_off(monkeypatch):
    """The accelerators' program (runs of `ACCELERATOR_RUN_CHUNKS` chunks, the expectation over
    the first roll taken inside it) forced on the CPU: a Yacht solve whose layers each fit one
    padded run, and a run of a full, a short and a full chunk of a random table, equal the CPU
    program's values to 1e-11 (float64 sums in another order, not the same bits)."""
    import functools

    from yahtzee_jax.solver import compiled

    rules = get_rules("yacht")
    monkeypatch.setattr(compiled, "ACCELERATOR_RUN_CHUNKS", 8)  # a small program, quick to compile
    expected = value_table.solve_value_table(
        rules, down_to_filled=rules.num_boxes - 4, engine="xla"
    )
    monkeypatch.setattr(
        compiled, "CompiledSolve", functools.partial(CompiledSolve, accelerator=True)
    )
    got = value_table.solve_value_table(rules, down_to_filled=rules.num_boxes - 4, engine="xla")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11, equal_nan=True)

    table = np.random.default_rng(5).uniform(0, 200, size=table_shape(rules))
    _, chunks = layer_chunks(rules, 2)
    run = [chunks[0], tuple(part[:37] for part in chunks[1]), chunks[2]]
    with jax.enable_x64(True):
        cpu, accelerator = (
            CompiledSolve(rules, solver_score_tables(rules)[1:], accelerator=flag)
            for flag in (False, True)
        )
        for program in (cpu, accelerator):
            program.start_layer(table, 2)
        np.testing.assert_allclose(
            accelerator.turn_start_values(run), cpu.turn_start_values(run), rtol=0, atol=1e-11
        )


@pytest.mark.slow
def test_the_accelerators_schedule_solves_yatzy_whole_to_round_off(monkeypatch):
    """The accelerators' program at its own size (`ACCELERATOR_RUN_CHUNKS` chunks a run, small
    layers padded to one run) forced on the CPU solves Yatzy's whole table within 1e-11 of the
    native kernel's, with the same unreachable states: what a GPU's solve will run (6.5 s here;
    all three rule sets: results/solver-speed/accelerator_schedule_full_check.json)."""
    import functools

    expected = value_table.solve_value_table("yatzy", engine="native")
    monkeypatch.setattr(
        compiled, "CompiledSolve", functools.partial(CompiledSolve, accelerator=True)
    )
    got = value_table.solve_value_table("yatzy", engine="xla")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11, equal_nan=True)


def test_a_layers_runs_on_several_threads_give_the_same_table(monkeypatch):
    """A Yacht solve's last layers with runs of one chunk on one thread and on three (several
    runs in flight at once, finishing in any order) are the same table to the last bit, and
    the NumPy loop's (forked workers)."""
    import functools

    from yahtzee_jax.solver import compiled

    rules = get_rules("yacht")
    monkeypatch.setattr(compiled, "RUN_CHUNKS", 1)  # many runs a layer
    tables = []
    for threads in (1, 3):
        patched = functools.partial(CompiledSolve, threads=threads)
        monkeypatch.setattr(compiled, "CompiledSolve", patched)
        tables.append(
            value_table.solve_value_table(rules, down_to_filled=rules.num_boxes - 4, engine="xla")
        )
    numpy_loop = value_table.solve_value_table(rules, down_to_filled=rules.num_boxes - 4, workers=2)
    assert np.isfinite(tables[0]).sum() > 4 * 1024  # the layers had several runs
    np.testing.assert_array_equal(tables[1], tables[0])
    np.testing.assert_array_equal(tables[0], numpy_loop)


ONE_THREAD_SCRIPT = """
import json, os, sys

from yahtzee_jax.commands import cli

cli.main(["solve", "--rules", "yacht", "--cache-dir", sys.argv[1], "--force"])
native_imported_jax = "jax" in sys.modules  # the C kernel's solve needs none of it

import numpy as np
import jax
from yahtzee_jax import host
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import compiled, value_table
from yahtzee_jax.solver.widget_tables import solver_score_tables

rules = get_rules("yacht")
with jax.enable_x64(True):
    program = compiled.CompiledSolve(rules, tuple(solver_score_tables(rules)[1:]), sys.argv[1])
last = rules.num_boxes - 4
ours = value_table.solve_value_table(rules, down_to_filled=last, engine="xla")
numpy_loop = value_table.solve_value_table(rules, down_to_filled=last, workers=2)
print("RESULT " + json.dumps({
    "native_imported_jax": native_imported_jax,
    "one_thread": host.is_one_thread_per_program(),
    "async_dispatch": jax.config.read("jax_cpu_enable_async_dispatch"),
    "run_chunks": program._run_chunks,
    "split_passes": program._program.as_text().count("outer_dimension_partitions"),
    "same_bits": bool(np.array_equal(ours, numpy_loop, equal_nan=True)),
    "solved": int(np.isfinite(ours).sum()),
}))
"""


def test_solve_runs_one_thread_per_program_with_the_same_values(tmp_path):
    """`yahtzee-jax solve` (a fresh process) solves with the C kernel without importing JAX,
    and leaves JAX's settings to the environment: XLA, imported after it, runs each program
    single-threaded on its caller (`host.one_thread_per_program`): no pass is split, a run is
    `ONE_THREAD_RUN_CHUNKS` chunks, and Yacht's last layers are the NumPy loop's to the last
    bit. Once the backend has started (as in this process), asking changes nothing."""
    import subprocess
    import sys

    from yahtzee_jax import host
    from yahtzee_jax.solver.compiled import ONE_THREAD_RUN_CHUNKS

    jax.numpy.zeros(1).block_until_ready()
    assert not host.one_thread_per_program()
    assert not host.is_one_thread_per_program()
    done = subprocess.run(
        [sys.executable, "-c", ONE_THREAD_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert not result["native_imported_jax"]
    assert result["one_thread"] and not result["async_dispatch"]
    assert result["run_chunks"] == ONE_THREAD_RUN_CHUNKS
    assert result["split_passes"] == 0
    assert result["solved"] > 4 * 512  # several runs a layer
    assert result["same_bits"]


def test_with_jaxs_own_cache_on_programs_are_only_read_from_our_folder(tmp_path):
    """With JAX's persistent compilation cache on (an empty one of the test's own), no program is
    written to our folder: neither one JAX compiled nor, asked for again, one it loaded from its
    cache. Both runs. A program our folder holds (written with JAX's cache off) is read, not
    compiled. Once, a program JAX had loaded from its cache and then handed back again, for our
    folder, was written there without its kernels: every later solve from that folder failed
    when run ("NOT_FOUND: Function ... not found")."""
    from yahtzee_jax.solver import programs

    x, function, expected = small_program(5)

    def run(folder):
        program = programs.load_or_compile(
            lambda: function.lower(x), "kernels", "test", x, None, folder and tmp_path / folder
        )
        np.testing.assert_allclose(np.asarray(program(x)), expected, rtol=1e-6)

    with jaxs_cache(tmp_path / "jax"):
        assert programs.jaxs_cache_is_on()
        (tmp_path / "ours").mkdir()
        run("ours")  # compiled, into JAX's cache
        jax.clear_caches()
        run(None)  # loaded from JAX's cache
        run("ours")  # the same program handed back, for our folder
        assert not list((tmp_path / "ours").iterdir())
    with jaxs_cache(None):
        assert not programs.jaxs_cache_is_on()
        run("ours")
    assert len(list((tmp_path / "ours").glob("xla-kernels-*.xla"))) == 1
    with jaxs_cache(tmp_path / "jax"), pytest.MonkeyPatch.context() as patch:
        patch.setattr(jax.stages.Lowered, "compile", lambda *_: pytest.fail("compiled"))
        run("ours")


def test_a_kept_program_that_fails_when_run_is_compiled_again(tmp_path):
    """A file holding a program serialized without its kernels (one JAX loaded from its own
    cache: the kind two earlier bugs wrote) loads, but fails when run. Its first run compiles
    the program again, gives the right values and replaces the file, so that the next load runs
    it without compiling. Without the check, every solve from that folder failed."""
    from yahtzee_jax.solver import programs

    x, function, expected = small_program(6)

    def load():
        return programs.load_or_compile(
            lambda: function.lower(x), "kernels", "test", x, None, tmp_path / "ours"
        )

    (tmp_path / "ours").mkdir()
    with jaxs_cache(None):
        load()
    (path,) = (tmp_path / "ours").glob("xla-kernels-*.xla")
    with jaxs_cache(tmp_path / "jax"):
        function.lower(x).compile()  # compiled, into JAX's cache
        jax.clear_caches()
        lowered = function.lower(x)
        programs.keep(path, lowered, lowered.compile())  # loaded from JAX's cache
    broken = path.read_bytes()
    with jaxs_cache(None):
        with pytest.raises(jax.errors.JaxRuntimeError, match="NOT_FOUND"):
            unchecked = programs.deserialize_and_load(
                *pickle.loads(broken[32:]), jax.devices()[0].client
            )
            np.asarray(unchecked(x))  # the file is broken indeed
        program = load()
        np.testing.assert_allclose(np.asarray(program(x)), expected, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(program(x)), expected, rtol=1e-6)
        assert path.read_bytes() != broken
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(jax.stages.Lowered, "compile", lambda *_: pytest.fail("compiled"))
            np.testing.assert_allclose(np.asarray(load()(x)), expected, rtol=1e-6)
