"""User-facing errors: the CLI prints these as one line and exits with status 2."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable


class UserError(ValueError):
    """A problem with the user's input (bad value, unknown name, missing file)."""


class ConfigError(UserError):
    """An invalid configuration value."""


class CheckpointError(UserError):
    """A missing, unreadable or incompatible checkpoint."""


class DiskFullError(UserError):
    """The device filled up while a run was writing (its logs or a checkpoint)."""


# TensorStore (Orbax's array writer) raises a ValueError "RESOURCE_EXHAUSTED: ..." quoting the
# system's message.
_DISK_FULL_MESSAGES = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` means the disk is full: a `DiskFullError`, an OSError(ENOSPC, or EDQUOT,
    a full quota), or TensorStore's ValueError quoting one of them."""
    if isinstance(error, DiskFullError):
        return True
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(error, ValueError) and any(text in str(error) for text in _DISK_FULL_MESSAGES)


def exit_status(body: Callable[[], object]) -> int:
    """Run a script's body: 0 when it returns, 2 with one line on stderr on a UserError."""
    try:
        body()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
