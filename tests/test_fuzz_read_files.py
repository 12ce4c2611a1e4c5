"""Fuzzing the files the CLI reads besides a run's own (tests/test_fuzz_run_dir.py) and a config
(tests/test_fuzz_config_file.py): the solver's cached tables, a checkpoint given to `match`,
`tournament`, `play` and a warm start, and a preset named by a path or a config's `inherit:`.

Arbitrary bytes, truncations at any byte, flipped bytes and well-formed archives of hostile
arrays (NaN, inf, negative, 1e300, the wrong dtype, shape or key). The property: the command
works (a damaged cache is solved again and rewritten) or refuses in one line with exit 2, and
nothing is lost (a run given to a command that only reads it is unchanged, byte for byte).
"""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from fuzzing import check_one_line, invoke, make_finished_run, stop_long_work
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_run_dir import MUTATIONS, _files, _mutate

from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import value_table

RULES = get_rules("yacht")  # the smallest game: a solve takes about 2 s
YACHT_OPTIMUM = 180.4161173148  # docs/games.md, checked there against an independent solve
FUZZ = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, np.ndarray]:
    """(cache directory, the good cache file's bytes, the dense table) of Yacht."""
    directory = tmp_path_factory.mktemp("cache")
    result = value_table.solve(RULES, cache_dir=directory)
    assert result.expected_score == pytest.approx(YACHT_OPTIMUM, abs=1e-9)
    return directory, result.cache_path.read_bytes(), result.value_table


def archive(values: object, key: str = "values") -> bytes:
    """An .npz archive holding `values` under `key` (object arrays pickled)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{key: np.asarray(values)})
    return buffer.getvalue()


def hostile_archives(count: int) -> dict[str, bytes]:
    """Well-formed archives whose array a loader must refuse, by name."""
    good = np.full(count, 10.0)
    return {
        "nan": archive(np.where(np.arange(count) == 7, np.nan, good)),
        "inf": archive(np.where(np.arange(count) == 7, np.inf, good)),
        "negative": archive(-good),
        "huge": archive(np.full(count, 1e300)),
        "above the game's most": archive(np.full(count, value_table.most_points(RULES) + 1)),
        "int64": archive(good.astype(np.int64)),
        "float32": archive(good.astype(np.float32)),
        "2-D": archive(good.reshape(1, -1)),
        "one short": archive(good[:-1]),
        "other key": archive(good, "other"),
        "object": archive(np.array([{"a": 1}, None], dtype=object)),
        "empty archive": archive(np.zeros(0)),
    }


def test_hostile_arrays_in_a_value_cache_are_not_played(solved, tmp_path):
    """Each well-formed archive of a hostile array loads as None (the solver solves again). A
    NaN, inf, negative or 1e300 table of the right count and dtype was loaded and played from
    before `load_table` checked the range."""
    _, good, table = solved
    path = tmp_path / "values.npz"
    for name, content in hostile_archives(int(value_table.solved_states(RULES).sum())).items():
        path.write_bytes(content)
        assert value_table.load_table(path, RULES, value_table.most_points(RULES)) is None, name
    path.write_bytes(good)
    np.testing.assert_array_equal(
        value_table.load_table(path, RULES, value_table.most_points(RULES)), table
    )


DAMAGE_KINDS = ("bytes", "truncated", "flipped")


def damaged(good: bytes, kind: str, data: bytes, at: float) -> bytes:
    """A cache file's bytes damaged one way: replaced by `data`, cut at the fraction `at`, or
    overwritten there by up to 16 bytes of `data`."""
    offset = int(at * len(good))
    return {
        "bytes": data,
        "truncated": good[:offset],
        "flipped": good[:offset] + data[:16] + good[offset + len(data[:16]) :],
    }[kind]


@settings(max_examples=80, **FUZZ)
@given(
    kind=st.sampled_from(DAMAGE_KINDS),
    data=st.binary(max_size=4096),
    at=st.floats(0, 1, exclude_max=True),
)
def test_any_damaged_value_cache_loads_as_none_or_the_table(solved, tmp_path, kind, data, at):
    """Random bytes, the good file cut at any byte, or noise written over it anywhere: the
    loader returns None or exactly the solved table, never raises."""
    _, good, table = solved
    content = damaged(good, kind, data, at)
    path = tmp_path / "values.npz"
    path.write_bytes(content)
    loaded = value_table.load_table(path, RULES, value_table.most_points(RULES))
    assert loaded is None or np.array_equal(loaded, table, equal_nan=True)


CLI_CASES = ("nan", "bytes", "truncated", "empty", "directory")


@pytest.mark.parametrize("case", CLI_CASES)
def test_solve_repairs_a_damaged_cache(case, solved, tmp_path):
    """`solve --rules yacht --cache-dir D` over a damaged cache: solved again and the cache
    rewritten, with one line naming it (a directory in the file's place: refused in one line
    before the solve, the directory kept)."""
    directory, good, table = solved
    cache = tmp_path / "cache"
    shutil.copytree(directory, cache)
    path = value_table.cache_file(RULES, cache)
    count = int(value_table.solved_states(RULES).sum())
    if case == "directory":
        path.unlink()
        path.mkdir()
        (path / "kept").write_text("mine\n")
    else:
        content = {
            "nan": archive(np.full(count, np.nan)),
            "bytes": bytes(range(256)) * 8,
            "truncated": good[: len(good) // 2],
            "empty": b"",
        }[case]
        path.write_bytes(content)
    status, stderr = invoke(["solve", "--rules", "yacht", "--cache-dir", str(cache)])
    if case == "directory":  # one line and exit 2 before any solve (it came after one)
        check_one_line(status, stderr, allowed=(2,))
        assert f"{path} is in the way of the value table: it is not a file" in stderr
        assert (path / "kept").read_text() == "mine\n"
        return
    assert status == 0 and "Traceback" not in stderr, stderr  # stderr: the solve's progress bar
    assert stderr.count(f"the value table {path} is damaged") == 1, stderr
    np.testing.assert_array_equal(
        value_table.load_table(path, RULES, value_table.most_points(RULES)), table
    )


def _hashes(run_dir: Path) -> dict[str, str]:
    """SHA-256 of every file of a directory, by relative path."""
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


PROGRESS_OFF = ["--games", "2", "--no-progress"]
READERS = {
    "match": lambda run, out: ["match", run, "--opponent", "greedy1", *PROGRESS_OFF],
    "tournament": lambda run, out: ["tournament", run, "greedy1", "--out", out, *PROGRESS_OFF],
    "play": lambda run, out: ["play", "--against", run],
    "warm start": lambda run, out: (
        ["train", "--preset", "quick", "--out", out, "--set", f"algo.init_from={run}"]
    ),
}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished tiny run, copied for each case."""
    return make_finished_run(tmp_path_factory.mktemp("source") / "run")


@settings(max_examples=8, **FUZZ)  # about 2 s each
@given(
    reader=st.sampled_from(sorted(READERS)),
    mutation=st.sampled_from(MUTATIONS),
    data=st.data(),
)
def test_a_damaged_checkpoint_given_to_a_reader(
    finished_run, tmp_path, monkeypatch, reader, mutation, data
):
    """A copy of a finished run with one file damaged, given to `match`, `tournament`,
    `play --against` or `train --set algo.init_from=RUN`: it starts or refuses in one line, and
    the run is left exactly as the damage left it (these commands only read it)."""
    stop_long_work(monkeypatch)
    case = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    run_dir = shutil.copytree(finished_run, case / "run")
    target = data.draw(st.sampled_from(_files(run_dir)))
    _mutate(run_dir / target, mutation, data)
    before = _hashes(run_dir)
    status, stderr = invoke(READERS[reader](str(run_dir), str(case / "out")))
    check_one_line(status, stderr)
    assert _hashes(run_dir) == before


@pytest.mark.parametrize(
    ("preset", "content"),
    [
        ("../../../../../../{tmp}/bytes", b"\xff\xfe\x00\x80binary"),
        ("../../../../../../{tmp}/list", b"- a\n- b\n"),
        ("../../../../../../{tmp}/missing", None),
    ],
    ids=["bytes", "list", "missing"],
)
def test_a_preset_named_by_a_path(preset, content, tmp_path, monkeypatch):
    """`--preset` is a name, but a name with `..` reaches a file by path: arbitrary bytes, a
    list or no file there are refused in one line."""
    stop_long_work(monkeypatch)
    name = preset.format(tmp=str(tmp_path).lstrip("/"))
    if content is not None:
        Path("/" + name.split("../")[-1] + ".yaml").write_bytes(content)
    status, stderr = invoke(["train", "--preset", name, "--out", str(tmp_path / "out")])
    check_one_line(status, stderr, allowed=(2,))


@pytest.mark.parametrize(
    "inherit", ["[1, 2]", "{a: 1}", "nothing-here", "'../../../../etc/hostname'", "1e999", "~"]
)
def test_a_hostile_inherit_in_a_config_file(inherit, tmp_path, monkeypatch):
    """A config file's `inherit:` set to a list, a mapping, an unknown name, a path, a number
    or null: the work starts or is refused in one line."""
    stop_long_work(monkeypatch)
    config = tmp_path / "config.yaml"
    config.write_text(f"inherit: {inherit}\ntrain:\n  total_games: 80\n")
    status, stderr = invoke(["train", "--config", str(config), "--out", str(tmp_path / "out")])
    check_one_line(status, stderr)


@pytest.fixture(scope="module")
def endgame(solved) -> tuple[Path, bytes, tuple[np.ndarray, np.ndarray]]:
    """(cache file, its bytes, (rows, distributions)) of Yacht's one-open-box endgame."""
    from yahtzee_jax.solver.endgame import endgame_distributions

    directory = solved[0]
    tables = endgame_distributions(RULES, 1, directory)
    path = value_table.cache_file(RULES, directory, table="endgame1")
    return path, path.read_bytes(), tables


def endgame_archive(rows: np.ndarray, distributions: np.ndarray) -> bytes:
    """An endgame .npz archive of the two arrays."""
    buffer = io.BytesIO()
    np.savez(buffer, rows=rows, distributions=distributions)
    return buffer.getvalue()


def test_hostile_arrays_in_an_endgame_cache_are_not_played(endgame, tmp_path):
    """Well-formed endgame archives with a row below -1 (it would index from the end), a row
    past the distributions, float rows, NaN or negative chances, the wrong bin count: None.
    Before `load_endgame` only the rows' shape and largest row were checked. A chance rounded
    to -1e-7 loads."""
    from yahtzee_jax.solver.endgame import load_endgame

    _, good, (rows, dists) = endgame
    below = rows.copy()
    below[below == -1] = -2
    with_nan = dists.copy()
    with_nan[0, 3] = np.nan
    hostile = {
        "row below -1": (below, dists),
        "row past the end": (np.where(rows == 0, len(dists), rows).astype(np.int32), dists),
        "float rows": (rows.astype(np.float32), dists),
        "nan chance": (rows, with_nan),
        "negative chance": (rows, -dists),
        "wrong bins": (rows, dists[:, :-1]),
    }
    path = tmp_path / "endgame.npz"
    for name, (r, d) in hostile.items():
        path.write_bytes(endgame_archive(r, d))
        assert load_endgame(path, RULES) is None, name
    path.write_bytes(good)
    loaded = load_endgame(path, RULES)
    assert loaded is not None and all(map(np.array_equal, loaded, (rows, dists)))
    # float32's rounding: official's solved table holds a chance of -1.0e-7; it is played (it
    # was refused, so every process solved the table again).
    rounded = dists.copy()
    rounded[0, -1] = -1.0e-7
    path.write_bytes(endgame_archive(rows, rounded))
    assert load_endgame(path, RULES) is not None


@settings(max_examples=60, **FUZZ)
@given(
    kind=st.sampled_from(DAMAGE_KINDS),
    data=st.binary(max_size=2048),
    at=st.floats(0, 1, exclude_max=True),
)
def test_any_damaged_endgame_cache_loads_as_none_or_the_tables(endgame, tmp_path, kind, data, at):
    """Random bytes, the good file cut anywhere, or noise over it: None or the exact tables."""
    from yahtzee_jax.solver.endgame import load_endgame

    _, good, tables = endgame
    content = damaged(good, kind, data, at)
    path = tmp_path / "endgame.npz"
    path.write_bytes(content)
    loaded = load_endgame(path, RULES)
    assert loaded is None or all(map(np.array_equal, loaded, tables))
