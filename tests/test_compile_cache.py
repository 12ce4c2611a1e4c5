"""The commands keep their compiled programs between processes (JAX's persistent cache, turned
on by `cli.keep_compiled_programs` before JAX is imported)."""

from __future__ import annotations

import os
import subprocess
import sys

from yahtzee_jax.commands.cli import CACHED_COMMANDS, keep_compiled_programs


def test_playing_commands_keep_programs_in_the_solver_cache_folder() -> None:
    """`evaluate` with YAHTZEE_JAX_CACHE=/c: JAX's cache goes to /c/xla, keeps every program
    (no minimum compile time or size) and is capped at 1 GiB."""
    environ = {"YAHTZEE_JAX_CACHE": "/c"}
    keep_compiled_programs("evaluate", environ)
    assert environ == {
        "YAHTZEE_JAX_CACHE": "/c",
        "JAX_COMPILATION_CACHE_DIR": "/c/xla",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "JAX_COMPILATION_CACHE_MAX_SIZE": str(2**30),
    }


def test_a_users_own_settings_and_the_solvers_commands_are_left_alone() -> None:
    """A folder the user set wins; `solve`, `bench` and `--help` (no command) change nothing:
    the solver finds its own programs without tracing them."""
    environ = {
        "JAX_COMPILATION_CACHE_DIR": "/mine",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "2",
    }
    keep_compiled_programs("train", environ)
    assert environ["JAX_COMPILATION_CACHE_DIR"] == "/mine"
    assert environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "2"
    for command in ("solve", "advise", "bench", None):
        untouched: dict[str, str] = {}
        keep_compiled_programs(command, untouched)
        assert untouched == {}
    assert {"train", "evaluate", "match", "tournament", "play"} <= CACHED_COMMANDS


def test_a_second_evaluate_loads_the_programs_the_first_kept(tmp_path) -> None:
    """Two `evaluate random` processes with an empty cache folder and none of the test
    session's JAX settings: the first writes programs under xla/, the second adds none (it
    loaded every one)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    environ["YAHTZEE_JAX_CACHE"] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "yahtzee_jax.commands.cli", "evaluate", "random"]
    command += ["--games", "8", "--no-optimal", "--no-progress", "--out", str(tmp_path / "run")]
    kept = []
    for _ in range(2):
        subprocess.run(command, env=environ, check=True, capture_output=True)
        kept.append(sorted(p.name for p in (tmp_path / "cache" / "xla").iterdir()))
    programs = [name for name in kept[0] if not name.endswith(("-atime", ".lock"))]
    assert programs, kept[0]
    assert kept[1] == kept[0]


def test_the_programs_follow_the_commands_cache_dir() -> None:
    """`--cache-dir D` (or `--cache-dir=D`, or an abbreviation argparse takes) puts JAX's kept
    programs in D/xla too: they went to the default folder whatever the command was given
    (found by a review session)."""
    from yahtzee_jax.commands.cli import _given_cache_dir

    for argv in (["evaluate", "optimal", "--cache-dir", "/d"], ["evaluate", "--cache-dir=/d"]):
        environ: dict[str, str] = {"YAHTZEE_JAX_CACHE": "/c"}
        keep_compiled_programs("evaluate", environ, _given_cache_dir(argv))
        assert environ["JAX_COMPILATION_CACHE_DIR"] == "/d/xla"
    assert _given_cache_dir(["evaluate", "optimal"]) is None
    # argparse keeps the last of two
    assert _given_cache_dir(["evaluate", "--cache-dir", "/a", "--cache-dir=/b"]) == "/b"
    # and takes abbreviations: from --cac on none is another flag's (--ca may be --card's)
    assert _given_cache_dir(["match", "optimal", "--cache", "/e"]) == "/e"
    assert _given_cache_dir(["match", "optimal", "--cac=/f"]) == "/f"
    assert _given_cache_dir(["advise", "--ca", "/g", "--c", "/h"]) is None
    assert _given_cache_dir(["evaluate", "--", "--cache-dir", "/i"]) is None
