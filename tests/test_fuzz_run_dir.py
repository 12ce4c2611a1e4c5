"""Run-directory fuzzing: damage one file of a finished run, then resume it and evaluate it.

Each case takes a copy of a finished tiny run, picks one of its files (the config, the
evaluations, the events, the summary, the lock, every file of every checkpoint) and damages it:
truncated at a random offset, random bytes overwritten, a garbage line inserted, deleted, or
made unreadable (mode 000; a root user reads through that, so there the file is replaced by a
directory, which no reader can open as a file). Then `train --resume` and `evaluate RUN` must
each either work, saying in at most one line what they skipped or repaired, or fail in one line
(exit 2); and no good checkpoint may be deleted or changed: every checkpoint directory the
damage did not touch is still in place, byte for byte, and a damaged one may only move into
`damaged/`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest
from fuzzing import (
    GAMES,
    TINY_OVERRIDES,
    check_one_line,
    invoke,
    make_finished_run,
    stop_long_work,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yahtzee_jax.runner.checkpointing import BEST_DIR, DAMAGED_DIR, LATEST_DIR

MUTATIONS = ("truncate", "overwrite", "garbage line", "delete", "unreadable")


def _files(run_dir: Path) -> list[Path]:
    """Every file of a run directory, relative to it, in a fixed order."""
    return sorted(path.relative_to(run_dir) for path in run_dir.rglob("*") if path.is_file())


def _checkpoint_dirs(run_dir: Path) -> dict[Path, dict[str, str]]:
    """Each step directory of `checkpoints/` and `best/` -> SHA-256 of each of its files."""
    found = {}
    for manager in (LATEST_DIR, BEST_DIR):
        for step_dir in sorted((run_dir / manager).glob("[0-9]*")):
            found[step_dir.relative_to(run_dir)] = {
                str(path.relative_to(step_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in step_dir.rglob("*")
                if path.is_file()
            }
    return found


def _mutate(path: Path, mutation: str, data: st.DataObject) -> None:
    """Apply `mutation` to the file at `path` (its random parts drawn from `data`)."""
    content = path.read_bytes()
    if mutation == "truncate":
        path.write_bytes(content[: data.draw(st.integers(0, max(len(content) - 1, 0)))])
    elif mutation == "overwrite":
        offset = data.draw(st.integers(0, max(len(content) - 1, 0)))
        noise = data.draw(st.binary(min_size=1, max_size=16))
        path.write_bytes(content[:offset] + noise + content[offset + len(noise) :])
    elif mutation == "garbage line":
        lines = content.split(b"\n")
        at = data.draw(st.integers(0, len(lines)))
        garbage = data.draw(st.sampled_from([b"{not json", b"\xff\xfe garbage", b"[]", b"- x"]))
        path.write_bytes(b"\n".join([*lines[:at], garbage, *lines[at:]]))
    elif mutation == "delete":
        path.unlink()
    elif os.geteuid() != 0:  # unreadable
        path.chmod(0)
    else:  # root reads a mode-000 file: a directory in its place cannot be read as a file
        path.unlink()
        path.mkdir()


def _check_checkpoints_kept(run_dir: Path, before: dict, damaged: Path) -> None:
    """Every checkpoint directory except the damaged one is unchanged and in place; the damaged
    one is in place or in `damaged/`."""
    after = _checkpoint_dirs(run_dir)
    for step_dir, hashes in before.items():
        if step_dir in damaged.parents:
            moved = run_dir / DAMAGED_DIR / f"{step_dir.parent.name}-{step_dir.name}"
            assert (run_dir / step_dir).is_dir() or moved.is_dir(), f"{step_dir} was deleted"
            continue
        assert after.get(step_dir) == hashes, f"the good checkpoint {step_dir} changed"


def _fuzz(source: Path, tmp_path: Path, examples: int) -> None:
    files = _files(source)
    counter = iter(range(10**6))

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=examples <= FAST_EXAMPLES,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(relative=st.sampled_from(files), mutation=st.sampled_from(MUTATIONS), data=st.data())
    def case(relative: Path, mutation: str, data: st.DataObject) -> None:
        run_dir = tmp_path / f"case{next(counter)}"
        cases.append((relative, mutation))
        shutil.copytree(source, run_dir)
        before = _checkpoint_dirs(run_dir)
        _mutate(run_dir / relative, mutation, data)
        try:
            report = ["--out", str(tmp_path / "report"), "--no-optimal", "--no-progress"]
            for argv in (
                ["train", "--resume", "--out", str(run_dir), "--no-progress"],
                ["evaluate", str(run_dir), "--games", "4", *report],
            ):
                status, stderr = invoke(argv)
                check_one_line(status, stderr)
                _check_checkpoints_kept(run_dir, before, relative)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    cases: list[tuple[Path, str]] = []
    started = time.perf_counter()
    case()
    # shown by `pytest -s`: the figures of the closing note
    print(f"\nfuzz run directory: {len(cases)} cases in {time.perf_counter() - started:.1f} s")


FAST_EXAMPLES = 4


def test_damaged_run_directories_resume_or_fail_in_one_line(tmp_path, monkeypatch):
    """A few damaged copies of a finished tiny run (built without training; the same cases on
    every run): resume and evaluate work or fail in one line, and keep every good checkpoint.
    `evaluate` stops where its games would start (it has read the run by then)."""
    monkeypatch.chdir(tmp_path)
    stop_long_work(monkeypatch, GAMES)
    _fuzz(make_finished_run(tmp_path / "finished"), tmp_path, FAST_EXAMPLES)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run trained to its end (20 updates, checkpoints at 10 and 20)."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    argv = ["train", "--preset", "quick", "--out", str(run_dir), "--no-progress"]
    status, stderr = invoke(argv + [item for o in TINY_OVERRIDES for item in ("--set", o)])
    assert status == 0, stderr
    return run_dir


@pytest.mark.slow
def test_many_damaged_trained_runs_resume_or_fail_in_one_line(trained_run, tmp_path, monkeypatch):
    """Many damaged copies of a trained tiny run (new cases on every run), as above; a resume
    that falls back to update 10 trains the last 10 updates again."""
    monkeypatch.chdir(tmp_path)
    _fuzz(trained_run, tmp_path, 80)
