"""The test session's own caches (`conftest.py`): a test reads and writes the solver's tables
in a fresh folder of the session, never in the user's."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import CACHE_VARIABLE

from yahtzee_jax.files import default_cache_dir


def test_the_solver_cache_of_a_test_is_the_sessions_fresh_folder() -> None:
    """The folder a command uses when given none is the session's (made by conftest for this
    run, shared by its workers), not `~/.cache/yahtzee_jax` nor a `$YAHTZEE_JAX_CACHE` set
    outside: a test can neither play tables other code wrote there nor leave its own."""
    folder = default_cache_dir()
    assert folder != Path("~/.cache/yahtzee_jax").expanduser()
    assert folder.name.startswith("yahtzee-jax-solver-") and folder.is_dir()
    assert Path(os.environ[CACHE_VARIABLE]).is_dir()  # JAX's programs: the session's too
