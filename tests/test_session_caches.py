"""The test session's own caches (`conftest.py`): a test reads and writes the solver's tables
in a fresh folder of the session, never in the user's."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import CACHE_VARIABLE, SOLVER_KEEP_VARIABLE

from yahtzee_jax.files import default_cache_dir


def test_the_solver_cache_of_a_test_is_the_sessions_fresh_folder() -> None:
    """The folder a command uses when given none is the session's (made by conftest for this
    run, shared by its workers), not `~/.cache/yahtzee_jax` nor a `$YAHTZEE_JAX_CACHE` set
    outside: a test can neither play tables other code wrote there nor leave its own. With
    $YAHTZEE_JAX_TEST_SOLVER_CACHE set, the folder it names, the tests' own."""
    folder = default_cache_dir()
    assert folder != Path("~/.cache/yahtzee_jax").expanduser()
    if SOLVER_KEEP_VARIABLE in os.environ:  # the tests' own folder, kept by name
        assert folder == Path(os.environ[SOLVER_KEEP_VARIABLE])
    else:
        assert folder.name.startswith("yahtzee-jax-solver-") and folder.is_dir()
    assert Path(os.environ[CACHE_VARIABLE]).is_dir()  # JAX's programs: the session's too
