"""`yahtzee-jax bench solve`: wall time and peak memory of one exact solve (no cache)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the solve benchmark."""
    parser.add_argument("--rules", default="official", help="rule variant to solve")
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


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
    if args.json:
        numbers = {
            "rules": result.rules.name,
            "expected_score": result.expected_score,
            "seconds": seconds,
            "peak_rss_mib": peak_mib,
            "cpus": os.cpu_count(),
        }
        Path(args.json).write_text(json.dumps(numbers, indent=2) + "\n")
    return 0
