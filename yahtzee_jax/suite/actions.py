"""The host-side check of an action for the adapters outside jit (Gymnasium, PettingZoo).

Outside jit an action outside the action space (out of range, a float that is not a whole
number, not a number) always raises, as those ecosystems expect, at the call that made it:
`check_action` names the action, why it is refused and the legal ones. An action in the space
that the mask refuses raises too under ``illegal_action="raise"``; under the jitted protocol's
"terminate" or "noop" (`envs.core`) it goes to the step, which forfeits or refuses it.
`adapter_params` maps an adapter's ``illegal_action`` onto `suite.make`'s parameter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yahtzee_jax.envs.core import ILLEGAL_ACTIONS
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import IllegalActionError, describe_action
from yahtzee_jax.game.rules import Rules

HOST_ILLEGAL_ACTIONS = ("raise", *ILLEGAL_ACTIONS)


class ResetNeeded(UserError):
    """A step or a mask asked for before `reset()` (or a step after the episode ended)."""


def adapter_params(illegal_action: str, params: dict[str, Any]) -> dict[str, Any]:
    """`suite.make`'s params for an adapter's ``illegal_action``: under "raise" no illegal
    action reaches the jitted step, so its own setting ("terminate") never acts."""
    if illegal_action not in HOST_ILLEGAL_ACTIONS:
        choices = ", ".join(HOST_ILLEGAL_ACTIONS)
        raise UserError(f"illegal_action={illegal_action!r} is not one of: {choices}")
    jitted = "terminate" if illegal_action == "raise" else illegal_action
    return {**params, "illegal_action": jitted}


def _ranges(indices: np.ndarray) -> str:
    """'0-31, 33, 44' for the sorted integers `indices`."""
    parts, start = [], None
    for i, value in enumerate(indices):
        if start is None:
            start = value
        if i + 1 == len(indices) or indices[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ", ".join(parts) or "none"


def action_index(action: Any) -> int | str:
    """`action` as an int (an integer, or a float that is a whole number), else why not."""
    value = np.asarray(action)
    if value.ndim != 0 or value.dtype == np.bool_:
        return "not one integer"
    if np.issubdtype(value.dtype, np.integer):
        return int(value)
    if np.issubdtype(value.dtype, np.floating):
        whole = bool(np.isfinite(value)) and float(value) == int(value)
        return int(value) if whole else "not a whole number"
    return "not a number"


def check_action(
    action: Any,
    mask: np.ndarray,
    rules: Rules,
    who: str = "",
    error: type[Exception] = IllegalActionError,
    mask_checked: bool = True,
) -> int:
    """The int of `action` if it is in the action space (an integer, or a whole float, in
    0..A-1) and, when `mask_checked`, `mask` (bool or int8[A]) allows it; else `error` (by
    default `IllegalActionError`, a ValueError) of one line: the action, why, the legal ones.
    `who` names the episode or agent in the message."""
    index = action_index(action)
    in_space = isinstance(index, int) and 0 <= index < len(mask)
    if in_space and (not mask_checked or mask[index]):
        return index
    if isinstance(index, str):
        why = index
    elif not in_space:
        why = f"out of range 0..{len(mask) - 1}"
    else:
        why = f"{describe_action(index, rules)}, not legal now"
    legal = _ranges(np.flatnonzero(mask))
    where = f" for {who}" if who else ""
    raise error(f"illegal action {action!r}{where} ({why}); legal actions now: {legal}")
