"""The solver's XLA programs kept on disk: compiled by one solve, loaded by the later ones.

A Yatzy solve compiles two programs: the score tables' (`tables.solver_score_tables`, 0.3 CPU-s)
and the chunk program (`compiled.CompiledSolve`, 0.5 CPU-s); loading one takes 0.02 (2-core AMD
EPYC, 2026-11-27). JAX's own persistent compilation cache would do the same, but it is set for
the whole process (every program of the package, from its first use on): this one is the
solver's alone, in the folder of its table cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import pickle
import platform

import jax
from jax.experimental.serialize_executable import deserialize_and_load, serialize


def load_or_compile(
    lowered: jax.stages.Lowered,
    name: str,
    options: dict | None,
    cache_dir: str | os.PathLike | None,
) -> jax.stages.Compiled:
    """`lowered` compiled (with its jit's compiler `options`), or loaded from `cache_dir`, where
    it is stored when compiled (None: neither).

    The file, `xla-{name}-{digest}.xla`, is named by a digest of all that makes the program: its
    lowered module, the compile options, the versions of JAX and jaxlib (XLA), the backend and
    this CPU; it is read back only if its own digest matches. A program loaded is run: the folder
    is trusted as the code is (as JAX's own compilation cache is).
    """
    if cache_dir is None:
        return lowered.compile()
    backend = jax.devices()[0].client
    what = (
        lowered.as_text(),
        repr(options),
        jax.__version__,
        jax.lib.__version__,  # jaxlib's: XLA's
        backend.platform,
        backend.platform_version,
        _host(),
    )
    key = hashlib.sha256(repr(what).encode()).hexdigest()[:32]
    path = pathlib.Path(cache_dir) / f"xla-{name}-{key}.xla"
    try:
        stored = path.read_bytes()
        digest, blob = stored[:32], stored[32:]
        if hashlib.sha256(blob).digest() == digest:
            return deserialize_and_load(blob, lowered.in_tree, lowered.out_tree, backend)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, jax.errors.JaxRuntimeError):
        pass  # missing or unusable: compile it again
    compiled = lowered.compile()
    blob = serialize(compiled)[0]
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(hashlib.sha256(blob).digest() + blob)
        os.replace(partial, path)  # atomic: a concurrent reader never sees half a file
    return compiled


def _host() -> str:
    """What XLA compiled for: the CPU's model and features (Linux), else its architecture."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as cpuinfo:
            lines = [line for line in cpuinfo if line.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    return f"{platform.machine()} {platform.processor()}"
