"""The machine a benchmark or an experiment ran on, as its artifacts record it."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def cpu_name() -> str:
    """The CPU's model and its vector level, as result files name the machine
    ("AMD EPYC, AVX-512")."""
    level = vector_level()
    return f"{cpu_model()}, {level}" if level else cpu_model()


def commit() -> str | None:
    """The checkout's commit ("+dirty" when files differ from it), or None outside git."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
        )
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if changed.stdout.strip() else "")


def run_record(argv: list[str]) -> dict[str, Any]:
    """What a result file records of its run: the command (`argv`, the CLI's arguments),
    commit, CPU, cores and load."""
    return {
        "command": shlex.join(["yahtzee-jax", *argv]),
        "commit": commit(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def script_record(words: list[str] | None = None) -> dict[str, Any]:
    """`run_record` of a script run as `python SCRIPT ARGS` (`words`, default `sys.argv`)."""
    words = sys.argv if words is None else words
    return run_record([]) | {"command": " ".join(["python", *words])}
