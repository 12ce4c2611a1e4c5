"""`yahtzee-jax bench solve`: wall time and peak memory of one exact solve (no cache)."""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the solve benchmark."""
    parser.add_argument("--rules", default="official", help="rule variant to solve")


def run(args: argparse.Namespace) -> int:
    """Solve once from scratch (the cache is neither read nor written) and report."""
    from yahtzee_jax.solver import solve

    start = time.perf_counter()
    result = solve(args.rules, use_cache=False)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"rules {result.rules.name}: optimal expected score {result.expected_score:.10f}")
    print(f"solve time {seconds:.2f} s (includes building the score tables)")
    print(f"peak RSS of the process {peak_mib:.0f} MiB (includes the JAX runtime)")
    return 0
