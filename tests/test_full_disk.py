"""A full disk: every writer of a run (scalars, evaluations, checkpoints) meets ENOSPC.

The disk is filled by injection, as a size-limited filesystem would: `small_disk` gives the
run's Python writers (`runlog`'s files) a quota of bytes past which a write fails with
`OSError(ENOSPC)`, and Orbax's own writes (its metadata and JSON items, through `etils.epath`)
fail the same way inside a checkpoint's temporary directory. What must hold: one line, exit 2,
no `*.orbax-checkpoint-tmp` left, the older checkpoints untouched, and `--resume` once there
is space again ends with the parameters of an uninterrupted run.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
from pathlib import Path

import numpy as np
import pytest
from etils import epath
from fuzzing import TINY_OVERRIDES, check_one_line, invoke, make_finished_run

from yahtzee_jax import files
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.errors import DiskFullError, is_disk_full
from yahtzee_jax.runner import runlog
from yahtzee_jax.runner.checkpointing import RunCheckpoints, load_checkpoint
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.runlog import read_evals, write_evals

TEMPORARY = "*.orbax-checkpoint-tmp*"


def _full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class QuotaFile(io.RawIOBase):
    """A file of the small disk: its writes count against the quota and fail past it."""

    def __init__(self, handle: io.FileIO, disk: SmallDisk) -> None:
        self.handle, self.disk = handle, disk

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return self.handle.readable()

    def readinto(self, buffer) -> int:
        return self.handle.readinto(buffer)

    def write(self, data) -> int:
        self.disk.spend(len(data))
        return self.handle.write(data)

    def fileno(self) -> int:
        return self.handle.fileno()

    def close(self) -> None:
        self.handle.close()
        super().close()


class SmallDisk:
    """`bytes_left` bytes of space for one of a run's writers: "scalars" (the events files),
    "evaluations" (`evals.jsonl`) or "checkpoint" (Orbax's files); `install(monkeypatch)`
    routes that writer's writes through the quota."""

    def __init__(self, bytes_left: int, writer: str) -> None:
        self.bytes_left, self.writer = bytes_left, writer

    def spend(self, size: int) -> None:
        """Take `size` bytes of the space left, or fail as a full disk does."""
        if size > self.bytes_left:
            self.bytes_left = 0
            raise _full()
        self.bytes_left -= size

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Route the writer's writes through the quota."""
        if self.writer == "checkpoint":
            self._install_orbax(monkeypatch)
            return
        marker = "tfevents" if self.writer == "scalars" else "evals.jsonl"

        def quota_open(path, mode="r", *args, **kwargs):
            if marker not in str(path) or "r" in mode or "+" in mode:
                return open(path, mode, *args, **kwargs)
            raw = QuotaFile(io.FileIO(path, mode.replace("b", "").replace("t", "")), self)
            buffered = io.BufferedWriter(raw)
            return buffered if "b" in mode else io.TextIOWrapper(buffered, encoding="utf-8")

        # the run's writers open their files through the builtin, the events appended by runlog
        # and whole files replaced by `files.write_whole`: these module globals shadow it
        for module in (runlog, files):
            monkeypatch.setattr(module, "open", quota_open, raising=False)

    def _install_orbax(self, monkeypatch: pytest.MonkeyPatch) -> None:
        path_class = type(epath.Path("/"))
        write_text, write_bytes = path_class.write_text, path_class.write_bytes

        def quota_text(path, text, *args, **kwargs):
            self.spend(len(text.encode()))
            return write_text(path, text, *args, **kwargs)

        def quota_bytes(path, data, *args, **kwargs):
            self.spend(len(data))
            return write_bytes(path, data, *args, **kwargs)

        monkeypatch.setattr(path_class, "write_text", quota_text)
        monkeypatch.setattr(path_class, "write_bytes", quota_bytes)


def _hashes(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_disk_full_errors_are_recognised():
    """ENOSPC and EDQUOT, and TensorStore's RESOURCE_EXHAUSTED quoting "No space left on
    device" (the text of a real failed Orbax save on a full 300 KB tmpfs), mean a full disk;
    another OSError or an unrelated RESOURCE_EXHAUSTED (memory) does not."""
    assert is_disk_full(_full())
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    tensorstore = (
        'RESOURCE_EXHAUSTED: Error opening "zarr" driver: Error writing local file '
        '"/mnt/run/best/30.orbax-checkpoint-tmp/state/manifest.ocdbt": Failed to write 378 '
        "bytes to file 14: No space left on device"
    )
    assert is_disk_full(ValueError(tensorstore))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(ValueError("RESOURCE_EXHAUSTED: Out of memory allocating 9 GiB"))


def test_checkpoint_write_on_a_full_disk_leaves_nothing_half_written(tmp_path, monkeypatch):
    """A checkpoint save whose Orbax writes meet a full disk raises DiskFullError (one line),
    removes its temporary directories, and leaves the run's checkpoints 10 and 20 as they
    were; once space is back the same save succeeds."""
    run_dir = make_finished_run(tmp_path / "run")
    config = resolve("quick", overrides=TINY_OVERRIDES)
    state = init_train_state(make_context(config))
    before = _hashes(run_dir / "checkpoints") | _hashes(run_dir / "best")
    checkpoints = RunCheckpoints(run_dir, config.train.keep_checkpoints)
    with monkeypatch.context() as patch:
        SmallDisk(100, "checkpoint").install(patch)
        with pytest.raises(DiskFullError, match="checkpoint of update 30") as error:
            checkpoints.save(30, state, config, eval_score=50.0)
    assert "\n" not in str(error.value)
    assert not list(run_dir.rglob(TEMPORARY))
    assert _hashes(run_dir / "checkpoints") | _hashes(run_dir / "best") == before
    checkpoints.save(30, state, config, eval_score=50.0)  # space again: it saves
    checkpoints.close()
    assert load_checkpoint(run_dir, report=lambda line: None)[2] == 30


def test_evaluations_write_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    """`evals.jsonl` replaced on a full disk: the old rows stay, no temporary file is left,
    and the error is the OS's ENOSPC."""
    path = tmp_path / "evals.jsonl"
    write_evals(path, [{"update": 10, "mean": 40.0}])
    SmallDisk(10, "evaluations").install(monkeypatch)
    with pytest.raises(OSError) as error:
        write_evals(path, [{"update": 10, "mean": 40.0}, {"update": 20, "mean": 45.0}])
    assert error.value.errno == errno.ENOSPC
    assert read_evals(path) == [{"update": 10, "mean": 40.0}]
    assert [p.name for p in tmp_path.iterdir()] == ["evals.jsonl"]


def _tiny_argv(run_dir: Path) -> list[str]:
    argv = ["train", "--preset", "quick", "--out", str(run_dir), "--no-progress"]
    return argv + [item for override in TINY_OVERRIDES for item in ("--set", override)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny run trained to its end without trouble."""
    run_dir = tmp_path_factory.mktemp("full-disk") / "uninterrupted"
    status, stderr = invoke(_tiny_argv(run_dir))
    assert status == 0, stderr
    return run_dir


# The space each writer has: the scalars fill it in the second chunk (a chunk logs about 12 KB),
# the evaluations at their second row (one is about 150 bytes), Orbax's files at the first
# checkpoint's copy in `checkpoints/` (after the one in `best/`: about 1.7 KB each).
FULL_AT = {"scalars": 15_000, "evaluations": 200, "checkpoint": 2_500}


@pytest.mark.slow
@pytest.mark.parametrize("writer", FULL_AT)
def test_full_disk_stops_in_one_line_and_resume_finishes_exactly(
    writer, uninterrupted, tmp_path, monkeypatch
):
    """The tiny run on a disk that fills up while it writes its scalars, its evaluations or a
    checkpoint: exit 2 with one line saying how to continue, no temporary directory left; with
    space again, `--resume` ends with the uninterrupted run's parameters, bit for bit."""
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        SmallDisk(FULL_AT[writer], writer).install(patch)
        status, stderr = invoke(_tiny_argv(run_dir))
    check_one_line(status, stderr, allowed=(2,))
    assert "no space left on the device" in stderr and "--resume" in stderr, stderr
    what = "writing a checkpoint" if writer == "checkpoint" else "writing the logs"
    assert what in stderr, stderr
    assert not list(run_dir.rglob(TEMPORARY))
    status, stderr = invoke(["train", "--resume", "--out", str(run_dir), "--no-progress"])
    assert status == 0, stderr
    resumed, _, step = load_checkpoint(run_dir, report=lambda line: None)
    reference, _, reference_step = load_checkpoint(uninterrupted, report=lambda line: None)
    assert step == reference_step == 20
    for a, b in zip(_leaves(resumed["params"]), _leaves(reference["params"]), strict=True):
        np.testing.assert_array_equal(a, b)
    rows = [(row["update"], row["mean"]) for row in read_evals(run_dir / "evals.jsonl")]
    assert rows == [(r["update"], r["mean"]) for r in read_evals(uninterrupted / "evals.jsonl")]


def _leaves(tree) -> list[np.ndarray]:
    import jax

    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]
