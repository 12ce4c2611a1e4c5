"""The solver's XLA programs kept on disk: compiled by one solve, loaded by the later ones.

A Yatzy solve by XLA compiles the chunk program (`compiled.CompiledSolve`, 0.5 CPU-s); loading
it takes 0.02 (2-core AMD EPYC, 2026-11-27). (The score tables, once a second program, are
NumPy's since the twenty-second session; the C kernel's solve imports no JAX at all.)
JAX's own persistent compilation cache would do the same, but it is set for
the whole process (every program of the package, from its first use on): this one is the
solver's alone, in the folder of its table cache. In a process that has JAX's cache on, the
programs are left to it (`jaxs_cache_is_on`).

A program is found by what makes it without tracing it: tracing and lowering the two programs
took 0.5 s of a fresh process's 2.5 s Yatzy solve. Its file is named by its arguments' shapes,
the rule set and options it is built for, and a digest of the code that builds it
(`source_digest`: every module of the `game` and `solver` packages, which are all the solver
imports from the package), with the versions of JAX and jaxlib, the backend and the CPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import pickle
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental.serialize_executable import deserialize_and_load, serialize

from yahtzee_jax.files import sources_digest, write_whole
from yahtzee_jax.host import host_description


def source_digest() -> str:
    """A digest of the sources of every module the solver's programs are built from."""
    return sources_digest(
        "game/*.py", "solver/*.py", "parallel.py", "host.py", "lazy.py", "errors.py", "files.py"
    )


def load_or_compile(
    lower: Callable[[], jax.stages.Lowered],
    name: str,
    identity: Any,
    arguments: Any,
    options: dict | None,
    cache_dir: str | os.PathLike | None,
) -> Callable[..., Any]:
    """The program `lower()` lowers, compiled (with its jit's compiler `options`), or loaded from
    `cache_dir`, where it is stored when compiled (None: neither; with JAX's own cache on, it is
    only read: `jaxs_cache_is_on`; one read is checked by its first run: `LoadedProgram`).

    `identity` is all the program is built for besides the code and its `arguments` (the rule
    set; its repr is hashed); of the arguments (arrays or shape structs), their shapes and dtypes.
    The file, `xla-{name}-{digest}.xla`, is named by a digest of those, the code
    (`source_digest`), the compile options, whether 64-bit types are on, the versions of JAX and
    jaxlib (XLA), the backend and this CPU; it is read back only if its own digest matches,
    without tracing the program. A program loaded is run: the folder is trusted
    as the code is (as JAX's own compilation cache is).
    """
    if cache_dir is None:
        return lower().compile()
    backend = jax.devices()[0].client
    what = (
        name,
        repr(identity),
        [(np.shape(leaf), str(leaf.dtype)) for leaf in jax.tree.leaves(arguments)],
        source_digest(),
        repr(options),
        *build_identity(),
    )
    key = hashlib.sha256(repr(what).encode()).hexdigest()[:32]
    path = pathlib.Path(cache_dir) / f"xla-{name}-{key}.xla"
    try:
        stored = path.read_bytes()
        digest, blob = stored[:32], stored[32:]
        if hashlib.sha256(blob).digest() == digest:
            executable, in_tree, out_tree = pickle.loads(blob)
            loaded = deserialize_and_load(executable, in_tree, out_tree, backend)
            return LoadedProgram(loaded, lambda: _compile_and_keep(lower, path))
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, jax.errors.JaxRuntimeError):
        pass  # missing or unusable: compile it again
    return _compile_and_keep(lower, path)


def _compile_and_keep(lower: Callable[[], jax.stages.Lowered], path: pathlib.Path) -> Any:
    """The program compiled, and written to `path` unless JAX's own cache is on."""
    lowered = lower()
    compiled = lowered.compile()
    if not jaxs_cache_is_on():
        keep(path, lowered, compiled)
    return compiled


def keep(path: pathlib.Path, lowered: jax.stages.Lowered, compiled: Any) -> None:
    """Write a compiled program to `path`: the digest of its bytes, then the bytes."""
    blob = pickle.dumps((serialize(compiled)[0], lowered.in_tree, lowered.out_tree))
    # A cache that cannot be written is only slower.
    with contextlib.suppress(OSError):  # synced, then renamed over (`write_whole`)
        write_whole(path, hashlib.sha256(blob).digest() + blob)


class LoadedProgram:
    """A program read from our folder, checked by its first run. A program serialized without
    its kernels loads, then fails when run ("NOT_FOUND: Function ... not found"; JAX's loads of
    its own cache gave such files twice): it is then compiled again, its file replaced, and run,
    where every later solve from the folder would have failed. Callers on several threads see
    one first run."""

    def __init__(self, program: Callable, compile_again: Callable[[], Callable]) -> None:
        self._program = program
        self._compile_again = compile_again
        self._lock = threading.Lock()
        self._checked = False

    def __call__(self, *arguments: Any) -> Any:
        with self._lock:
            if not self._checked:
                self._checked = True
                try:  # the error comes when the results are ready, not at the call
                    return jax.block_until_ready(self._program(*arguments))
                except jax.errors.JaxRuntimeError:
                    self._program = self._compile_again()
        return self._program(*arguments)


def jaxs_cache_is_on() -> bool:
    """Whether JAX's own persistent compilation cache is on in this process
    (`jax_compilation_cache_dir`). Then no program is written to our folder: one JAX loaded from
    its cache serializes without its kernels, and loaded back from our file it fails when run
    ("NOT_FOUND: Function ... not found", jaxlib 0.10.2 on the CPU). JAX's compile hands back the
    program it loaded even when asked again later, for our folder, so it cannot be told apart;
    JAX's cache keeps the programs already."""
    return bool(jax.config.jax_compilation_cache_dir) and jax.config.jax_enable_compilation_cache


def build_identity() -> tuple[str, ...]:
    """What XLA builds a program for besides its code: whether 64-bit types are on, the versions
    of JAX and jaxlib (XLA), the backend and this CPU."""
    backend = jax.devices()[0].client
    return (
        str(jax.dtypes.canonicalize_dtype(np.int64)),  # int64 only under `jax.enable_x64`
        jax.__version__,
        jax.lib.__version__,  # jaxlib's: XLA's
        backend.platform,
        backend.platform_version,
        host_description(),
    )
