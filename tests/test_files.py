"""`files.replaced_whole`: the solver's, the decision table's and the benches' cache files are
written whole or not at all."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from yahtzee_jax.files import replaced_whole


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
