"""The solver's caches as a user breaks them: a process killed by SIGKILL halfway through
writing the target table, two processes that need the same missing table at once, bytes changed
in the middle of a table where a query reads, and a full disk. Each table is written whole
(synced, renamed), carries a CRC-32 beside it that is checked when loaded, and is made under a
lock (`files.cached`). The subprocesses run `tests/cache_faults.py` on Yacht's smallest target
table (`cache_faults.stand_in`)."""

from __future__ import annotations

import errno
import os
import pathlib
import subprocess
import sys

import cache_faults
import numpy as np
import pytest

from yahtzee_jax import files
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import native, target_table
from yahtzee_jax.solver.target_table import target_cache_file, target_tables

RULES = get_rules("yacht")
SCRIPT = pathlib.Path(__file__).with_name("cache_faults.py")
LAST_STATE = ((1 << 12) - 1 - 1, 0, 0)  # Yacht's card with only its first box open


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> str:
    """A folder holding the C kernel, built once for the module's processes."""
    folder = str(tmp_path_factory.mktemp("kernels"))
    native.load_kernel(folder)
    return folder


def _start(mode: str, cache: pathlib.Path, kernels: str, *ready: str) -> subprocess.Popen:
    """`cache_faults.py MODE CACHE KERNELS [READY]` started, its output kept."""
    command = [sys.executable, str(SCRIPT), mode, str(cache), kernels, *ready]
    environment = {**os.environ, "PYTHONPATH": str(SCRIPT.parent.parent)}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a started process, once it ends."""
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


# 10-15 s of three processes on the shared 2-core machine: with the slow tests; `make test` has the
# same paths in one process (`test_cache_files`: a dead writer's file removed, two threads and
# the lock, the lines said).
@pytest.mark.slow
def test_a_write_killed_halfway_is_cleaned_and_two_processes_solve_once(tmp_path, kernels):
    """SIGKILL halfway through writing the target table leaves its hidden temporary file (half
    the table) and no table. Then two processes started together: one removes that file and
    solves (the only "solving" line), the other waits for it (one "waiting" line) and loads the
    table it wrote; the folder then holds the table, its checksum and the lock file only."""
    cache = tmp_path / "cache"
    path = target_cache_file(RULES, "target", cache)
    status, _, err = _finish(_start("kill", cache, kernels))
    assert status == -9 and err.count("solving the stand-in") == 1, err
    assert err.count("solving the target table of yacht (the first time only") == 1, err
    (partial,) = cache.glob(f".{path.name}.*.tmp.npy")  # what the killed writer left
    assert partial.stat().st_size > 1 << 20 and not path.exists()
    first, second = (_start("load", cache, kernels, "2") for _ in range(2))
    results = [_finish(first), _finish(second)]
    assert [status for status, _, _ in results] == [0, 0], results
    outs = sorted(out.strip() for _, out, _ in results)
    assert outs == ["from_cache=False", "from_cache=True"], results
    errors = "".join(err for _, _, err in results)
    assert errors.count("solving the stand-in") == 1 and errors.count("waiting for process") == 1
    shown = sorted(entry.name for entry in cache.iterdir())
    assert shown == sorted([f".{path.name}.lock", path.name, f"{path.name}.crc32"])
    assert files.check_state(path) == "whole"


@pytest.fixture
def stand_in_targets(tmp_path, monkeypatch, kernels) -> pathlib.Path:
    """A cache folder holding Yacht's stand-in target table (solves counted in `solves`)."""
    solves = []

    def counted(*args, **kwargs):
        solves.append(1)
        return cache_faults.stand_in(*args, **kwargs)

    monkeypatch.setattr(cache_faults, "SOLVE_SECONDS", 0.0)
    monkeypatch.setattr(cache_faults, "KERNELS", kernels)
    monkeypatch.setattr(target_table, "solve_target_table", counted)
    target_tables(RULES, cache_dir=tmp_path)
    monkeypatch.setattr(target_table, "solve_target_table", cache_faults.stand_in)
    return tmp_path


def _changed_at(path: pathlib.Path, offset: int, value: float) -> None:
    """Write the float64 `value` over the 8 bytes at `offset` of the file, in place."""
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(np.float64(value).tobytes())


def test_a_changed_chance_in_the_middle_of_the_target_table_is_caught(stand_in_targets, capfd):
    """One chance of a state's row (a probability still: it passes the range checks) changed in
    the file: the checksum differs, the table is solved again with one line naming it, and the
    state's chances are the solved ones. At 898d267 the changed chance was played from."""
    cache = stand_in_targets
    good = target_tables(RULES, cache_dir=cache)
    assert good.from_cache
    chances = good.chances(LAST_STATE).copy()  # the loaded table maps the file
    row = int(good.layout.rows[LAST_STATE])
    path = good.cache_path
    header = path.stat().st_size - good.flat.nbytes
    _changed_at(path, header + 8 * (row + 1), 1.0 - chances[1] / 2)
    capfd.readouterr()
    again = target_tables(RULES, cache_dir=cache)
    err = capfd.readouterr().err
    assert not again.from_cache
    assert err.count(f"the target table {path} is damaged (its checksum differs)") == 1, err
    np.testing.assert_array_equal(again.chances(LAST_STATE), chances)
    assert target_tables(RULES, cache_dir=cache).from_cache  # whole again


class _FullAfter:
    """`open` for `files`: writes to a file whose name ends in `marker` fail with ENOSPC."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, path, mode="r", *args, **kwargs):
        handle = open(path, mode, *args, **kwargs)  # noqa: SIM115 (returned)
        if self.marker in str(path) and "w" in mode:
            handle.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return handle


@pytest.mark.parametrize("where", ["table", "checksum"])
def test_a_full_disk_keeps_the_old_table_and_its_checksum(
    stand_in_targets, monkeypatch, kernels, where
):
    """A full disk while `--force` writes the table or, after it, its checksum: one line naming
    the file, no temporary file left, the old table and its checksum as they were (it loads);
    with space again, the table is written whole. (With no table before: `test_targets`'
    full-disk test.)"""
    cache, native_folder = stand_in_targets, kernels
    path = target_cache_file(RULES, "target", cache)
    before = {entry.name: entry.read_bytes() for entry in cache.iterdir() if entry.is_file()}
    if where == "table":

        def full_disk(file, array):
            pathlib.Path(file).write_bytes(b"\x93NUMPY half of it")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(target_table.np, "save", full_disk)
    else:
        monkeypatch.setattr(files, "open", _FullAfter(".crc32"), raising=False)
    with pytest.raises(UserError, match=r"^cannot write the target-table cache .*No space left"):
        target_tables(RULES, cache_dir=cache, force=True)
    after = {entry.name: entry.read_bytes() for entry in cache.iterdir() if entry.is_file()}
    assert after == before
    monkeypatch.undo()
    monkeypatch.setattr(target_table, "solve_target_table", cache_faults.stand_in)
    monkeypatch.setattr(cache_faults, "SOLVE_SECONDS", 0.0)
    monkeypatch.setattr(cache_faults, "KERNELS", str(native_folder))
    assert not target_tables(RULES, cache_dir=cache, force=True).from_cache
    assert files.check_state(path) == "whole"


def test_a_checksum_must_name_its_table_and_a_table_without_one_is_made_again(
    stand_in_targets, capfd
):
    """A checksum written before checksums named their file loads once the values pass the
    range checks, silently, and is given the name. Yacht's table copied with its checksum under
    Yacht-clubhouse's name (which loaded as that game's, found by a review session) is made
    again with one line, as is a table with no checksum beside it (it was given one unread)."""
    path = target_cache_file(RULES, "target", stand_in_targets)
    sidecar = files.checksum_path(path)
    sidecar.write_text(files.checksum(path) + "\n")
    assert files.check_state(path) == "unnamed"
    capfd.readouterr()
    assert target_tables(RULES, cache_dir=stand_in_targets).from_cache
    assert files.check_state(path) == "whole" and capfd.readouterr().err == ""
    assert sidecar.read_text() == f"{files.checksum(path)} of {path.name}\n"
    other = get_rules("yacht-clubhouse")
    copied = target_cache_file(other, "target", stand_in_targets)
    copied.write_bytes(path.read_bytes())
    files.checksum_path(copied).write_bytes(sidecar.read_bytes())
    assert files.check_state(copied) == "foreign"
    assert not target_tables(other, cache_dir=stand_in_targets).from_cache
    err = capfd.readouterr().err
    assert f"{copied} is damaged (its checksum is another file's" in err
    # what a command that needs the table says before minutes of solving (it said nothing)
    assert "solving the target table of yacht-clubhouse (the first time only" in err
    sidecar.unlink()
    assert files.check_state(path) == "unchecked"
    assert not target_tables(RULES, cache_dir=stand_in_targets).from_cache
    assert f"{path} has no checksum beside it; making it again" in capfd.readouterr().err
    assert files.check_state(path) == "whole"
