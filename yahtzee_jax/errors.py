"""User-facing errors: the CLI prints these as one line and exits with status 2."""

from __future__ import annotations

import sys
from collections.abc import Callable


class UserError(ValueError):
    """A problem with the user's input (bad value, unknown name, missing file)."""


class ConfigError(UserError):
    """An invalid configuration value."""


class CheckpointError(UserError):
    """A missing, unreadable or incompatible checkpoint."""


def exit_status(body: Callable[[], object]) -> int:
    """Run a script's body: 0 when it returns, 2 with one line on stderr on a UserError."""
    try:
        body()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
