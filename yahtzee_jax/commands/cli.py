"""Command line: `yahtzee-jax train|evaluate|match|solve|advise|bench|...`.

Each subcommand lives next to the code it drives and registers itself through an
``add_cli(subparsers)`` function; this module only assembles them and turns expected
errors into a one-line message with a non-zero exit.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn

from yahtzee_jax.errors import UserError

# Modules that contribute subcommands (each defines `add_cli(subparsers)`).
COMMAND_MODULES = (
    "yahtzee_jax.runner.train",
    "yahtzee_jax.commands.evaluate",
    "yahtzee_jax.commands.solve",
    "yahtzee_jax.commands.bench",
    "yahtzee_jax.commands.experiment",
    "yahtzee_jax.commands.tournament",
    "yahtzee_jax.commands.terminal",
    "yahtzee_jax.commands.match",
)


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and exit status 2), like ours."""

    def error(self, message: str) -> NoReturn:
        """Print `prog: error: message (see --help)` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand."""
    parser = OneLineErrorParser(
        prog="yahtzee-jax", description="On-accelerator reinforcement learning for Yahtzee."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_cli(subparsers)
    return parser


def _quiet_closed_loop_noise() -> None:
    """Drop the "Event loop is closed" RuntimeError that Orbax's background threads leave
    behind after a failed restore (the failure itself is reported in one line)."""
    default_hook = sys.unraisablehook
    if getattr(default_hook, "quiet_closed_loop", False):
        return

    def hook(unraisable: Any) -> None:
        value = unraisable.exc_value
        if isinstance(value, RuntimeError) and str(value) == "Event loop is closed":
            return
        default_hook(unraisable)

    hook.quiet_closed_loop = True
    sys.unraisablehook = hook


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `yahtzee-jax` console script."""
    _quiet_closed_loop_noise()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as error:
        print(f"yahtzee-jax {args.command}: error: {error}", file=sys.stderr)
        return getattr(error, "exit_status", 2)
    except OSError as error:  # a file or directory the user named: missing, unwritable, full
        print(f"yahtzee-jax {args.command}: error: {_describe(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"yahtzee-jax {args.command}: interrupted", file=sys.stderr)
        return 130


def _describe(error: OSError) -> str:
    """`strerror: filename` without Python's errno prefix."""
    reason = error.strerror or str(error)
    return f"{reason}: {error.filename}" if error.filename else reason


if __name__ == "__main__":
    sys.exit(main())
