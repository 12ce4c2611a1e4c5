"""What this host is and how its threads run programs, answered without importing JAX.

A process that only solves (the C kernel of `solver.native` and NumPy) never imports JAX: its
import alone is about half a second of a whole `yahtzee-jax solve`. Where JAX is imported
already, or an accelerator may be present, JAX itself is asked.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import platform
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

# `one_thread_per_program` was asked for / took effect in JAX (before its CPU backend started).
_asked = False
_settled = False


@contextlib.contextmanager
def signals_handled(handler: Callable[[int, Any], None], *signals: int) -> Iterator[None]:
    """`handler` for `signals` while inside, the previous handlers put back after; in a thread
    other than the main one (where Python allows no handler) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def host_description() -> str:
    """What a kernel or program is compiled for: the CPU's model and features (Linux), else its
    architecture."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as cpuinfo:
            lines = [line for line in cpuinfo if line.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    return f"{platform.machine()} {platform.processor()}"


def accelerator_plugin_installed() -> bool:
    """Could JAX find an accelerator here: a PJRT plugin (CUDA, ROCm) or libtpu installed?"""
    if importlib.util.find_spec("jax_plugins") or importlib.util.find_spec("libtpu"):
        return True
    return bool(importlib.metadata.entry_points(group="jax_plugins"))


def jax_computes_on_cpu() -> bool:
    """Is JAX's default backend the CPU? Answered without importing JAX where the answer is
    plain (JAX not imported yet, `JAX_PLATFORMS` unset or naming the CPU first, and no
    accelerator plugin installed); otherwise JAX is imported and asked."""
    if "jax" not in sys.modules:
        platforms = os.environ.get("JAX_PLATFORMS", "").strip()
        if platforms:
            return platforms.split(",")[0].strip() == "cpu"
        if not accelerator_plugin_installed():
            return True
    import jax

    return jax.default_backend() == "cpu"


def one_thread_per_program() -> bool:
    """Before JAX starts its CPU backend: have it run each compiled program on the thread that
    calls it, on that thread alone, so that host threads (`parallel.ordered_map`) run one
    program per core. Returns whether it is so (or will be, JAX not imported yet): once the
    backend has started, nothing changes.

    XLA's CPU client otherwise runs a device's programs on its own thread pool, one after
    another, each pass split into tasks for that pool's threads; with one thread in the pool
    (PJRT's `PJRT_NPROC`) no pass is split, and synchronous dispatch runs the program on its
    caller. That suits the solver's thousands of independent short runs (a warm Yatzy solve
    1.51-1.75 -> 1.21-1.31 s, alternated, idle 2-core AMD EPYC, 2026-11-28) and not the play
    loop, whose batches lose about 40 % of their games/s, so only `yahtzee-jax solve` asks.
    Asked before JAX is imported, it imports nothing: a solve by the C kernel never needs JAX,
    and the XLA program settles it when it starts (`settle_one_thread_per_program`).
    """
    global _asked
    _asked = True
    if "jax" not in sys.modules:
        os.environ["PJRT_NPROC"] = "1"  # read when the CPU backend starts
        return True
    return settle_one_thread_per_program()


def settle_one_thread_per_program() -> bool:
    """Where `one_thread_per_program` was asked for and JAX's CPU backend has not started yet,
    set JAX's side of it (synchronous dispatch); returns whether it is in effect."""
    global _settled
    if not _asked or _settled:
        return _settled
    import jax
    from jax._src import xla_bridge  # no public way to ask whether the backends have started

    if not getattr(xla_bridge, "backends_are_initialized", lambda: True)():
        os.environ["PJRT_NPROC"] = "1"
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        _settled = True
    return _settled


def is_one_thread_per_program() -> bool:
    """Did `one_thread_per_program` take effect in this process (on its CPU backend)?"""
    return _settled and jax_computes_on_cpu()
