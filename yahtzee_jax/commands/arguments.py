"""The commands' shared argparse options: a seed, `--set SECTION.KEY=VALUE` overrides, lists of
positive integers (`--batches 20,64`), and the rule set a built-in agent plays when a command's
`--rules` is left out."""

from __future__ import annotations

import argparse

from yahtzee_jax.config import MAX_SEED
from yahtzee_jax.errors import UserError

# The commands' default rule set: a built-in agent's when `--rules` is left out (a checkpoint
# plays its own). The one place it is chosen; everything below the commands is passed it.
BUILTIN_RULES = "official"


def seed_argument(text: str) -> int:
    """argparse `type` of a --seed option: an integer in 0..MAX_SEED (a one-line usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: not an integer") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: must be in 0..{MAX_SEED}")
    return value


def add_override_argument(
    parser: argparse.ArgumentParser,
    metavar: str = "SECTION.KEY=VALUE",
    help: str = "override one config value, e.g. --set optim.lr=3e-4 (repeatable)",
) -> None:
    """Add the repeatable `--set SECTION.KEY=VALUE` option (collected in `args.overrides`)."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar=metavar, help=help
    )


def positive_integers(text: str | None, option: str) -> list[int]:
    """`"20,64"` -> [20, 64]; anything else (empty, not integers, <= 0) is a one-line error."""
    try:
        values = [int(part) for part in (text or "").split(",")]
    except ValueError:
        values = []
    if not values or min(values) <= 0:
        raise UserError(f"{option} {text!r} must be comma-separated positive integers")
    return values
