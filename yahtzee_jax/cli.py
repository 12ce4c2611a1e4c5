"""Command line: `yahtzee-jax train|evaluate|solve|advise|bench ...`.

Each subcommand lives next to the code it drives and registers itself through an
``add_cli(subparsers)`` function; this module only assembles them and turns expected
errors into a one-line message with a non-zero exit.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from yahtzee_jax.errors import UserError

# Modules that contribute subcommands (each defines `add_cli(subparsers)`).
COMMAND_MODULES = (
    "yahtzee_jax.train",
    "yahtzee_jax.evaluate",
    "yahtzee_jax.solver.cli",
    "yahtzee_jax.benchmarks",
    "yahtzee_jax.experiment",
    "yahtzee_jax.tournament",
    "yahtzee_jax.terminal",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="yahtzee-jax", description="On-accelerator reinforcement learning for Yahtzee."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_cli(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `yahtzee-jax` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as error:
        print(f"yahtzee-jax {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"yahtzee-jax {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
