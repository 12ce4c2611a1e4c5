"""Traced programs kept between processes, so that a warm `evaluate` does not trace its games'
program again.

JAX's persistent compilation cache (`commands.cli.keep_compiled_programs`) finds a program by
its lowered text, so every process first traces and lowers it: 2.0 s of a warm `evaluate optimal
--rules yatzy` of 5.7-6.0 s (1,067,200 characters of StableHLO at batch 2,048; 2-core AMD EPYC,
`experiments/profile_evaluate_phases.py`). Here a jitted function is exported once for its
static arguments and argument types (`jax.export`: its StableHLO, serialized) to a file named by
everything the trace depends on (`program_key`); a later process reads it, lowers a call of it
(no tracing of the function) and compiles that, which JAX's cache then finds. Every process, the
first one too, runs the program read back from the bytes, so the games of a cold process and a
warm one come from one program. The solver keeps compiled executables instead
(`solver.programs`), which cannot share a process with JAX's cache (an executable JAX loaded
from its own cache serializes without its kernels); StableHLO has no such trap.

A program is kept only where all it is traced from can be stated exactly (`statement`): the
function and its static arguments the package's own code and plain data. A static argument
holding anything else (a callable, a closure, a network module, a class defined outside the
package, whose code the key cannot cover) is traced in each process as before. A file whose
checksum or key differs, or that cannot be read back, is traced again and replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import importlib.util
import os
import pathlib
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

import jax

from yahtzee_jax.files import PACKAGE, default_cache_dir, sources_digest, write_whole
from yahtzee_jax.solver.programs import build_identity

# The first line of a stored file's contents; a new layout of the file gets a new one.
FORMAT = b"yahtzee_jax stored trace 1\n"
SUFFIX = ".jaxexport"
_DIGEST_BYTES = 32  # sha256 of the rest of the file, first in it

# In this process: the program of each function, static arguments and argument types, ready.
_programs: dict[Any, Callable[..., Any]] = {}
_lock = threading.Lock()  # one load or trace per program while other threads wait for it


def folder_of(cache_dir: str | os.PathLike | None) -> pathlib.Path:
    """Where the stored programs of a solver cache folder lie: its `traces/` (`cache_dir`, else
    `files.default_cache_dir`: `$YAHTZEE_JAX_CACHE` or ~/.cache/yahtzee_jax)."""
    return pathlib.Path(cache_dir or default_cache_dir()) / "traces"


def package_digest() -> str:
    """A digest of every source file of the package (`.py` and `.c`: 1.1 MB, read once)."""
    return sources_digest("**/*.py", "**/*.c")


def call(
    folder: str | os.PathLike | None,
    function: Callable[..., Any],
    static: Collection[str],
    arguments: Mapping[str, Any],
) -> Any:
    """`function(**arguments)`, a jitted function whose `static` arguments are static: with a
    `folder`, by its program for these static arguments and argument types stored there (traced
    and stored by the first call that needs it, in any process); without one, or where they
    cannot be stated (`program_key`), traced in this process as usual."""
    if folder is None:
        return function(**arguments)
    fixed = {name: arguments[name] for name in static}
    leaves, tree = jax.tree.flatten({k: v for k, v in arguments.items() if k not in static})
    found = (function, tuple(sorted(fixed.items())), tree, tuple(map(_argument_type, leaves)))
    with _lock:
        program = _programs.get(found)
        if program is None:
            program = _programs[found] = _program(
                pathlib.Path(folder), function, fixed, tree, leaves
            )
    return program(*leaves)


def forget_programs() -> None:
    """Drop this process's ready programs (the next call reads its file again)."""
    with _lock:
        _programs.clear()


def _program(
    folder: pathlib.Path,
    function: Callable[..., Any],
    static: dict[str, Any],
    tree: Any,
    leaves: list[Any],
) -> Callable[..., Any]:
    """The compiled program of `function` for these static arguments and leaves: read from
    `folder`, or traced and stored there; or, where its key cannot be stated, `function` itself
    on the leaves (traced as usual)."""

    def usual(*values: Any) -> Any:
        return function(**jax.tree.unflatten(tree, values), **static)

    key = program_key(function, static, tree, leaves)
    if key is None or importlib.util.find_spec("flatbuffers") is None:  # export's serializer
        return usual
    path = folder / f"{function.__name__.strip('_')}-{key[:32]}{SUFFIX}"
    stored = _read(path, key)
    if stored is not None:
        try:
            return _compiled(stored, leaves)
        # Any failure to read a program back (deserializing, lowering, compiling) only means
        # that it is traced again; a program that does compile is the one that was stored.
        except Exception as error:
            _say_damaged(path, f"it cannot be read back: {type(error).__name__}")
    try:
        exported = _export(function, static, tree, leaves)
        program = _compiled(exported, leaves)
    # A program that export cannot hold (a host callback, a custom call with no stable form)
    # is traced as usual; an error of the function itself comes again from that trace.
    except Exception:
        return usual
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        body = FORMAT + key.encode() + b"\n" + exported
        write_whole(path, hashlib.sha256(body).digest() + body)
    return program


def _export(
    function: Callable[..., Any], static: dict[str, Any], tree: Any, leaves: list[Any]
) -> bytes:
    """`function` traced and lowered for these static arguments and leaves, serialized."""

    def on_leaves(*values: Any) -> Any:
        return function(**jax.tree.unflatten(tree, values), **static)

    return bytes(jax.export.export(jax.jit(on_leaves))(*leaves).serialize())


def _compiled(exported: bytes, leaves: list[Any]) -> Callable[..., Any]:
    """A serialized export compiled for `leaves` (JAX's persistent cache finds it when on)."""
    program = jax.export.deserialize(bytearray(exported))
    return jax.jit(program.call).lower(*leaves).compile()


def _read(path: pathlib.Path, key: str) -> bytes | None:
    """The serialized export stored at `path` for `key`; None where there is none, or it is
    damaged (said on stderr)."""
    try:
        stored = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        _say_damaged(path, f"it cannot be read: {error.strerror}")
        return None
    digest, body = stored[:_DIGEST_BYTES], stored[_DIGEST_BYTES:]
    head = FORMAT + key.encode() + b"\n"
    if hashlib.sha256(body).digest() != digest:
        _say_damaged(path, "its checksum differs")
    elif not body.startswith(head):
        _say_damaged(path, "it holds another program")
    else:
        return body[len(head) :]
    return None


def _say_damaged(path: pathlib.Path, reason: str) -> None:
    """One line on stderr: the stored program is made again."""
    print(f"the stored program {path} is damaged ({reason}); tracing it again", file=sys.stderr)


def program_key(
    function: Callable[..., Any], static: Mapping[str, Any], tree: Any, leaves: list[Any]
) -> str | None:
    """A digest of all the program of `function` is traced from: the function and its static
    arguments (`statement`), the tree and types of the other arguments (`_argument_type`), JAX's
    settings a trace reads (`_settings`), the package's sources (`package_digest`), Python's and
    JAX's versions and the backend (`build_identity`). None where one of them cannot be stated
    exactly."""
    stated = {name: statement(value) for name, value in sorted(static.items())}
    settings = _settings()
    shapes = str(tree)
    if (
        None in stated.values()
        or settings is None
        or not _own_code(function)
        or " at 0x" in shapes  # a tree whose node data holds an object named by its address
    ):
        return None
    what = (
        FORMAT,
        f"{function.__module__}.{function.__qualname__}",
        stated,
        shapes,
        [_argument_type(leaf) for leaf in leaves],
        settings,
        package_digest(),
        sys.version,
        build_identity(),
    )
    return hashlib.sha256(repr(what).encode()).hexdigest()


def statement(value: Any) -> str | None:
    """The exact text of a static argument made of plain data, None for anything else: None,
    bool, int, float (exact: its hex), str, tuples of them, members of the package's enums, and
    the package's frozen dataclasses whose fields are such (a rule set, a policy of rules and
    numbers); a callable, an array or a class from outside the package cannot be stated."""
    kind = type(value)
    if isinstance(value, enum.Enum):
        return f"{kind.__module__}.{kind.__qualname__}.{value.name}" if _own_code(kind) else None
    if value is None or kind in (bool, int, str):
        return repr(value)
    if kind is float:
        return value.hex()
    if kind is tuple:
        items = [statement(item) for item in value]
        return None if None in items else "(" + "".join(f"{item}, " for item in items) + ")"
    if dataclasses.is_dataclass(value) and kind.__dataclass_params__.frozen and _own_code(kind):
        texts = {
            each.name: statement(getattr(value, each.name)) for each in dataclasses.fields(value)
        }
        if None in texts.values():
            return None
        inside = ", ".join(f"{name}={text}" for name, text in texts.items())
        return f"{kind.__module__}.{kind.__qualname__}({inside})"
    return None


def _own_code(thing: Any) -> bool:
    """Whether `thing` (a class: each of its bases; a function) is defined in a module of this
    package, whose sources the key covers (or in Python's `builtins` and `enum`, which its
    version covers)."""
    classes = thing.__mro__ if isinstance(thing, type) else (thing,)
    for each in classes:
        name = getattr(each, "__module__", None)
        if name in ("builtins", "enum"):
            continue
        path = getattr(sys.modules.get(name or ""), "__file__", None)
        if path is None or not pathlib.Path(path).resolve().is_relative_to(PACKAGE):
            return False
    return True


def _argument_type(leaf: Any) -> tuple[str, ...]:
    """What a traced program is specialised to of a dynamic argument: its shape and dtype, weak
    type, and where an array lies."""
    aval = jax.typeof(leaf)
    return (str(aval), str(aval.weak_type), str(getattr(leaf, "sharding", None)))


def _settings() -> str | None:
    """JAX's settings that a trace reads, the ones its jit keys its in-memory cache on, stated;
    None where one is an object named by its address (a mesh or a named axis in force)."""
    try:  # the settings are not in JAX's public API: another JAX keeps nothing
        from jax._src import config, core

        names, values = config.trace_context_names(), config.trace_context()
        axis_env = core.AxisEnv
    except (ImportError, AttributeError, NotImplementedError):
        return None
    stated = []
    for name, value in zip(names, values, strict=True):
        empty_axes = isinstance(value, axis_env) and not (
            value.axis_sizes or value.spmd_axis_names or value.explicit_mesh_axis_names
        )
        text = "no named axes" if empty_axes else repr(value)
        if " at 0x" in text:
            return None
        stated.append(f"{name}={text}")
    return ", ".join(stated)
