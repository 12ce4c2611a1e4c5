"""`yahtzee-jax bench TARGET`: speed benchmarks (never timed unit tests).

Each target is a module of this package with `add_arguments(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib

# target name -> (module, one-line help)
TARGETS = {
    "env": ("yahtzee_jax.commands.bench.env", "vmapped engine vs the plain-Python reference game"),
    "train": (
        "yahtzee_jax.commands.bench.train_speed",
        "fused A2C training throughput vs bare fwd+bwd",
    ),
    "scaling": (
        "yahtzee_jax.commands.bench.scaling",
        "training throughput over games per update x network width x devices",
    ),
    "solve": ("yahtzee_jax.commands.bench.solve_cost", "time and peak memory of the exact solver"),
    "evaluate": (
        "yahtzee_jax.commands.bench.evaluate_speed",
        "evaluation throughput of the agents",
    ),
}


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `bench` and its targets."""
    bench = subparsers.add_parser("bench", help="speed benchmarks")
    targets = bench.add_subparsers(dest="target", required=True, metavar="TARGET")
    for name, (module_name, help_text) in TARGETS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:  # not built yet
                continue
            raise
        parser = targets.add_parser(name, help=help_text)
        module.add_arguments(parser)
        parser.set_defaults(func=module.run)
