"""`files`: the solver's, the decision table's and the benches' cache files, and the commands'
JSON results, are written whole or not at all; a result's path is tried before the work."""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest

from yahtzee_jax.files import (
    check_writable,
    read_arrays,
    replaced_whole,
    write_json,
    write_whole,
)


def test_a_written_file_replaces_the_old_one_and_leaves_no_temporary(tmp_path) -> None:
    """The block writes a temporary file beside the target (in folders made for it); when the
    block ends, the target holds the new bytes and nothing else is left in the folder."""
    path = tmp_path / "deep" / "cache" / "table.npy"
    with replaced_whole(path) as partial:
        assert partial.parent == path.parent and partial != path
        assert str(os.getpid()) in partial.name and partial.name.endswith(".tmp")
        partial.write_bytes(b"first")
    assert path.read_bytes() == b"first"
    with replaced_whole(path) as partial:
        partial.write_bytes(b"second")
        assert path.read_bytes() == b"first"  # a reader sees the old file until the end
    assert path.read_bytes() == b"second"
    assert [entry.name for entry in path.parent.iterdir()] == ["table.npy"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path) -> None:
    """A block that fails halfway (a full disk: ENOSPC after some bytes) leaves the old file as
    it was, removes its temporary file and lets the error go on."""
    path = tmp_path / "table.npz"
    path.write_bytes(b"old")
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with pytest.raises(OSError, match="No space left"), replaced_whole(path, ".tmp.npz") as partial:
        partial.write_bytes(b"half of the new")
        raise full
    assert path.read_bytes() == b"old"
    assert [entry.name for entry in tmp_path.iterdir()] == ["table.npz"]


def test_numpy_writers_keep_their_suffix(tmp_path) -> None:
    """`np.savez_compressed` names its file with `.npz` unless it ends so: the temporary path
    with the `.tmp.npz` suffix is the file numpy writes, and the target loads."""
    path = tmp_path / "targets.npz"
    with replaced_whole(path, ".tmp.npz") as partial:
        np.savez_compressed(partial, chances=np.arange(3.0))
    with np.load(path) as archive:
        np.testing.assert_array_equal(archive["chances"], [0.0, 1.0, 2.0])
    assert [entry.name for entry in tmp_path.iterdir()] == ["targets.npz"]


def test_json_is_written_whole_or_the_old_file_stays(tmp_path) -> None:
    """`write_json` writes indented JSON with a final newline (in folders made for it); a value
    JSON cannot hold fails before the old file is touched, and leaves no temporary."""
    path = tmp_path / "results" / "summary.json"
    write_json(path, {"mean": 254.59, "games": [1, 2]})
    assert path.read_text() == '{\n  "mean": 254.59,\n  "games": [\n    1,\n    2\n  ]\n}\n'
    with pytest.raises(TypeError, match="not JSON serializable"):
        write_json(path, {"mean": object()})
    assert json.loads(path.read_text()) == {"mean": 254.59, "games": [1, 2]}
    assert [entry.name for entry in path.parent.iterdir()] == ["summary.json"]


def test_an_unwritable_result_path_is_refused_naming_the_culprit(tmp_path) -> None:
    """`check_writable` tries a writable path's folders and leaves nothing behind (input refused
    after it left an empty report folder once; the writers make the folders); it refuses a
    directory named as the file and a file where a folder must be, naming each; None passes."""
    check_writable(None)
    fine = tmp_path / "new" / "deeper" / "result.json"
    check_writable(fine)
    assert list(tmp_path.iterdir()) == []
    write_json(fine, {"a": 1})  # the writer makes the folders
    (tmp_path / "new" / "kept").mkdir()
    check_writable(tmp_path / "new" / "kept" / "x" / "y.json")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["deeper", "kept"]
    with pytest.raises(IsADirectoryError) as error:
        check_writable(tmp_path / "new")
    assert error.value.filename == str(tmp_path / "new")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError) as error:
        check_writable(blocker / "deeper" / "result.json")
    assert error.value.filename == str(blocker) and not (blocker / "deeper").exists()


def test_a_folder_that_refuses_files_is_reported_with_the_users_path(tmp_path, monkeypatch):
    """Where the trial file cannot be made (a read-only folder: root may write anyway, so the
    refusal is injected), the error names the path the user gave, not the trial file's."""

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr("pathlib.Path.open", refuse)
    with pytest.raises(PermissionError) as error:
        check_writable(tmp_path / "result.json")
    assert error.value.filename == str(tmp_path / "result.json")
    assert list(tmp_path.iterdir()) == []


def test_text_cut_short_by_a_full_disk_leaves_the_old_file(tmp_path, monkeypatch):
    """`write_whole` (a run's config.yaml and evaluations, the reports' markdown) whose write
    fails after three bytes (ENOSPC, injected) leaves the old text whole and no temporary
    beside it."""
    from yahtzee_jax import files

    path = tmp_path / "config.yaml"
    write_whole(path, "old: 1\n")

    class CutShort:
        def __init__(self, handle) -> None:
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc_info) -> None:
            self.handle.close()

        def write(self, text: str) -> None:
            self.handle.write(text[:3])
            self.handle.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def cut_short_open(*args) -> CutShort:
        return CutShort(open(*args))

    monkeypatch.setattr(files, "open", cut_short_open, raising=False)
    with pytest.raises(OSError, match="No space left"):
        write_whole(path, "new: 2\n")
    monkeypatch.undo()
    assert path.read_text() == "old: 1\n"
    assert [entry.name for entry in tmp_path.iterdir()] == ["config.yaml"]


def test_read_arrays_gives_the_named_arrays_or_none_for_a_missing_or_damaged_archive(tmp_path):
    """`files.read_arrays`: a whole archive's named arrays; None for no file, a truncated file,
    a name it lacks, and a pickled entry (never unpickled)."""
    good = tmp_path / "good.npz"
    np.savez(good, rows=np.arange(3, dtype=np.int32), chances=np.ones(2))
    rows, chances = read_arrays(good, ("rows", "chances"))
    np.testing.assert_array_equal(rows, [0, 1, 2])
    np.testing.assert_array_equal(chances, [1.0, 1.0])
    assert read_arrays(tmp_path / "none.npz", ("rows",)) is None
    assert read_arrays(good, ("rows", "classes")) is None
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:-40])
    assert read_arrays(truncated, ("rows",)) is None
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, rows=np.array([{"a": 1}], dtype=object))
    assert read_arrays(pickled, ("rows",)) is None


def test_a_cache_under_a_file_is_missing_not_damaged(tmp_path, capsys) -> None:
    """A cache file whose folder is a file cannot be there: `check_state` says "missing" and
    `cached` makes it without the line that a damaged file is made again (it said so of a
    table that never was); the make's own write then says why it cannot be kept."""
    from yahtzee_jax.files import cached, check_state

    blocker = tmp_path / "a-file"
    blocker.write_text("{}")
    path = blocker / "table.npy"
    assert check_state(path) == "missing"
    assert cached(path, lambda _: None, lambda: "made", "value table") == "made"
    assert "damaged" not in capsys.readouterr().err
