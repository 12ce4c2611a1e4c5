"""The machine a benchmark or an experiment ran on, as its artifacts record it."""

from __future__ import annotations

import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; elsewhere what `platform` knows)."""
    try:
        lines = CPUINFO.read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def vector_level() -> str:
    """ "AVX-512", "AVX2" or "" (unknown or older): what the CPU's matrix kernels can use."""
    try:
        flags = next(line for line in CPUINFO.read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return ""
    words = flags.split()
    return "AVX-512" if "avx512f" in words else "AVX2" if "avx2" in words else ""
