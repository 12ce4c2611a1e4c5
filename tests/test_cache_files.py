"""`files.cached` and its parts on hand-made files: the checksum beside a cache file, the
removal of what killed writers left, and the lock one process makes a table under."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
import zlib
from types import SimpleNamespace

import pytest

from yahtzee_jax import files


def test_the_checksum_is_zlibs_crc32_of_each_block(tmp_path, monkeypatch) -> None:
    """`checksum` gives the size, the block size and the CRC-32 of each block, as zlib computes
    them on the bytes read whole (three blocks of 4 bytes, the last short); an empty file has no
    block; one byte changed changes only its block's CRC."""
    monkeypatch.setattr(files, "_BLOCK", 4)
    path = tmp_path / "table"
    path.write_bytes(b"abcdefghij")
    expected = " ".join(f"{zlib.crc32(part):08x}" for part in (b"abcd", b"efgh", b"ij"))
    assert files.checksum(path) == f"crc32 10 4 {expected}"
    path.write_bytes(b"abcdeXghij")
    assert files.checksum(path).split()[3::2] == [f"{zlib.crc32(b'abcd'):08x}", expected[-8:]]
    path.write_bytes(b"")
    assert files.checksum(path) == "crc32 0 4"


def test_the_state_of_a_cache_file(tmp_path) -> None:
    """missing (no file), unchecked (no checksum beside it), whole (written by `written_checked`),
    damaged (a byte changed, or the file cut short, or the checksum file garbled), foreign (a
    copy under another name with its checksum), unnamed (a checksum of before names)."""
    path = tmp_path / "table.npy"
    assert files.check_state(path) == "missing"
    path.write_bytes(b"old table")
    assert files.check_state(path) == "unchecked"
    with files.written_checked(path) as partial:
        partial.write_bytes(b"new table")
    assert path.read_bytes() == b"new table" and files.check_state(path) == "whole"
    path.write_bytes(b"new tablE")
    assert files.check_state(path) == "damaged"
    path.write_bytes(b"new tab")
    assert files.check_state(path) == "damaged"
    path.write_bytes(b"new table")
    files.checksum_path(path).write_bytes(b"\xff\xfe")
    assert files.check_state(path) == "damaged"
    copy = tmp_path / "other.npy"  # the table and its checksum under another name
    copy.write_bytes(path.read_bytes())
    files.checksum_path(copy).write_text(f"{files.checksum(path)} of {path.name}\n")
    assert files.check_state(copy) == "foreign"
    files.checksum_path(copy).write_text(files.checksum(copy) + "\n")  # before names
    assert files.check_state(copy) == "unnamed"


def test_a_folder_in_the_way_or_too_little_space_is_said_before_the_work(
    tmp_path, monkeypatch
) -> None:
    """A folder where the cache file goes, and less free space than the file needs, are one
    line each before `make` runs (the folder was called "damaged" and the space ran out only
    after the solve, both found by a review session); with room, `make` runs."""
    made = []

    def make() -> bytes:
        made.append(1)
        return b"made"

    blocked = tmp_path / "table.npy"
    blocked.mkdir()
    with pytest.raises(IsADirectoryError, match=r"table\.npy is in the way of the table: it is"):
        files.cached(blocked, lambda file: None, make, "table")
    room = files.shutil.disk_usage(tmp_path).free
    with pytest.raises(OSError, match=r"the table needs [\d,]+ MiB in .*MiB free: free some"):
        files.cached(tmp_path / "big.npy", lambda file: None, make, "table", size=2 * room)
    assert made == []
    assert files.cached(tmp_path / "small.npy", lambda file: None, make, "table", size=1) == b"made"
    # The old file is not counted as room (the new one is written beside it), and a folder
    # that takes no files is not measured (its table is used unkept): both found reviewing.
    old = tmp_path / "old.npy"
    old.write_bytes(b"x" * 4096)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: SimpleNamespace(free=1000))
    with pytest.raises(OSError, match=r"needs 0 MiB in .* 0 MiB free"):
        files.check_room(old, "table", 2000)  # 1,000 free and the old 4,096: not room
    monkeypatch.setattr(files.os, "access", lambda path, mode: False)
    files.check_room(old, "table", 2000)


def test_only_dead_writers_files_are_removed(tmp_path) -> None:
    """Beside a table: the temporary file of a process that has ended goes; this process's, a
    running process's, the lock and the checksum stay, as do other files' temporaries."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(ended.stdout)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as running:
        names = [
            f".table.npy.{dead}.tmp.npy",
            f".table.npy.{running.pid}.tmp.npy",
            f".table.npy.{files.os.getpid()}.tmp",
            ".table.npy.lock",
            "table.npy.crc32",
            f".other.npy.{dead}.tmp",
        ]
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        files.remove_abandoned(tmp_path / "table.npy")
        running.kill()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(names[1:])


def test_cached_makes_once_under_the_lock_and_says_what_it_remakes(tmp_path, capsys) -> None:
    """Two threads that need a missing file: one makes it, the other waits on the lock (one
    line naming the holder), then loads it. A damaged file is made again with one line; one
    that `load` refuses (None) likewise; `force` makes it whatever is there."""
    path = tmp_path / "table"
    made = []

    def make() -> bytes:
        made.append(1)
        time.sleep(0.5 if len(made) == 1 else 0)  # the other thread reaches the lock meanwhile
        with files.written_checked(path) as partial:
            partial.write_bytes(b"made")
        return b"made"

    def load(file):
        content = file.read_bytes()
        return content if content == b"made" else None

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(files.cached(path, load, make, "table")))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [b"made", b"made"] and len(made) == 1
    assert capsys.readouterr().err.count("waiting for process") == 1
    path.write_bytes(b"mdae")
    assert files.cached(path, load, make, "table") == b"made" and len(made) == 2
    assert capsys.readouterr().err == (
        f"the table {path} is damaged (its checksum differs); making it again\n"
    )
    with files.written_checked(path) as partial:
        partial.write_bytes(b"refused")
    assert files.cached(path, load, make, "table") == b"made" and len(made) == 3
    assert "unreadable or out of range" in capsys.readouterr().err
    assert files.cached(path, load, make, "table", force=True) == b"made" and len(made) == 4
    assert capsys.readouterr().err == ""


def test_stale_tables_go_unless_another_process_is_making_one(tmp_path) -> None:
    """`remove_stale` removes the other keys' files with their checksums and lock files, and
    leaves the one whose lock a process holds (another version of the code writing it now),
    lock file and all; the current key's file stays."""
    current, idle, busy = (tmp_path / f"table-{key}.npy" for key in ("now", "old", "busy"))
    for path in (current, idle, busy):
        for file in (path, files.checksum_path(path), files.lock_path(path)):
            file.write_bytes(b"x")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; handle = open(sys.argv[1], 'a+'); "
            "fcntl.flock(handle, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(files.lock_path(busy)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        files.remove_stale(current, "table-*.npy")
    finally:
        holder.kill()
        holder.wait()
    left = {path.name for path in tmp_path.iterdir()}
    assert left == {
        file.name
        for path in (current, busy)
        for file in (path, files.checksum_path(path), files.lock_path(path))
    }


def test_the_sources_digest_frames_each_file_once_by_its_path_and_size():
    """The cache keys' code digest is SHA-256 over each matched file once (two patterns naming
    the same file, in any order, give its digest alone), framed `path NUL size NUL bytes`, as
    worked here with hashlib on the files' bytes; other files, another digest."""

    def by_hand(*names: str) -> str:
        digest = hashlib.sha256()
        for name in sorted(names):
            source = (files.PACKAGE / name).read_bytes()
            digest.update(f"{name}\0{len(source)}\0".encode() + source)
        return digest.hexdigest()

    assert files.sources_digest("errors.py") == by_hand("errors.py")
    both = files.sources_digest("files.py", "errors.py", "e*.py")
    assert both == files.sources_digest("errors.py", "files.py") == by_hand("errors.py", "files.py")
    assert files.sources_digest("files.py") != files.sources_digest("errors.py")


def test_a_table_made_in_a_read_only_folder_is_used_unkept(tmp_path, monkeypatch, capsys) -> None:
    """A consumer (`evaluate optimal` with a read-only --cache-dir) that solves a table its
    folder cannot take goes on with it and says so in one line: it solved, then exited 2 (a
    review session). A full disk still fails, as its own tests show."""
    import errno

    from yahtzee_jax.errors import UserError
    from yahtzee_jax.solver import value_table

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    files.kept_or_said(lambda: read_only(), "table", tmp_path / "t")
    assert capsys.readouterr().err == (
        f"cannot keep the table in {tmp_path / 't'} (Read-only file system): using it unkept, "
        "and the next command makes it again (YAHTZEE_JAX_CACHE names a folder that keeps it)\n"
    )

    def full() -> None:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as error:
            raise UserError("cannot write the table") from error

    with pytest.raises(UserError, match="cannot write the table"):
        files.kept_or_said(full, "table", tmp_path / "t")
    monkeypatch.setattr(value_table, "written_checked", read_only)
    result = value_table.solve("plain", cache_dir=tmp_path)
    assert abs(result.expected_score - 245.8707745141) < 1e-9  # docs/games.md's optimum
    err = capsys.readouterr().err
    assert "cannot keep the value table in" in err and "using it unkept" in err


def test_the_endgame_joint_endgame_and_moment_tables_are_used_unkept_in_a_read_only_folder(
    tmp_path, monkeypatch, capsys
) -> None:
    """The three tables made from the value table go on unkept, with one line each, where their
    folder takes no file: each solved, then failed with "cannot write" (forty-first session's
    review). Their solves are stood in for by small hand-made arrays: only the write is tested."""
    import errno

    import numpy as np

    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.solver import endgame, joint_endgame, moments, value_table

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    solved = SimpleNamespace(value_table=np.zeros(3))
    monkeypatch.setattr(value_table, "written_checked", read_only)  # how all three write
    monkeypatch.setattr(endgame, "solve", lambda *args: solved)
    monkeypatch.setattr(moments, "solve", lambda *args, **kwargs: solved)
    rows, distributions = np.arange(4, dtype=np.int32), np.full((2, 3), 0.5, np.float32)
    monkeypatch.setattr(endgame, "solve_endgame", lambda *args: (rows, distributions))
    monkeypatch.setattr(joint_endgame, "solve_joint_endgame", lambda *args: (rows, distributions))
    monkeypatch.setattr(moments, "solve_moment_table", lambda *args: distributions)
    plain = get_rules("plain")

    found = endgame.endgame_distributions(plain, 2, tmp_path)
    assert found[0] is rows and found[1] is distributions
    tables = joint_endgame.joint_endgame_tables(plain, tmp_path, np.zeros(1))
    assert np.array_equal(tables.classes, rows) and np.array_equal(tables.last_turn, distributions)
    assert moments.score_moments(plain, tmp_path)[1] is distributions
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" in ")[0] for line in lines] == [
        f"cannot keep the {what}" for what in ("endgame table", "joint endgame", "moment table")
    ]
    assert all("(Read-only file system): using it unkept, and the next" in line for line in lines)
