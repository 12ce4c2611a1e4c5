"""What a caller hands the environment protocol (`envs.core`), made safe or refused in one line
before JAX's own errors, deep inside, would speak: an action out of range is -1 (which no mask
allows) rather than its low bits or its truncation, a key is one key, an action one per seat
that acts. Shapes only, so every check holds under `jit` and `vmap` too."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# Beyond every action of every game, and exact in float32: what is out of range is -1.
ACTION_LIMIT = 2**24


def whole_action(action: jax.Array | int | float) -> jax.Array:
    """int32 action(s): a float that is not a whole number becomes -1, which no mask allows
    (the engine would truncate 44.9 to 44, a legal move the caller did not choose), and so does
    an integer beyond int32 (JAX narrows 2**32 + 31 to 31, a legal move). Under `jit`, JAX
    narrows 64-bit NumPy integers when the call is made, before this sees them: pass int32."""
    if isinstance(action, int) or (
        isinstance(action, np.ndarray | np.generic) and np.issubdtype(action.dtype, np.integer)
    ):  # on the host, in its own width: Python's ints and NumPy's int64 and uint64
        action = np.asarray(action)
        in_range = (action >= -1) & (action <= ACTION_LIMIT)
        action = np.where(in_range, action, -1).astype(np.int32)
    action = jnp.asarray(action)
    if jnp.issubdtype(action.dtype, jnp.floating):
        # Clipped first: a float beyond int32 would convert to an arbitrary (maybe legal) int.
        whole = action == jnp.floor(action)
        action = jnp.where(whole, jnp.clip(action, -1, ACTION_LIMIT), -1)
    elif action.dtype != jnp.int32:  # uint32, int64 under x64: compared in their own width
        in_range = (action >= 0) & (action <= ACTION_LIMIT)
        action = jnp.where(in_range, action.astype(jnp.int32), -1)
    return action.astype(jnp.int32)


def check_key(key: jax.Array) -> None:
    """A ValueError unless `key` is one JAX key: a typed key of shape (), or the raw uint32[2]
    of `jax.random.PRNGKey` (a batch of them wants `jax.vmap`, which the message says)."""
    typed = jnp.issubdtype(jnp.result_type(key), jax.dtypes.prng_key)
    one = () if typed else (2,)
    shape = jnp.shape(key)
    if shape != one:
        batch = len(shape) > len(one) and shape[len(shape) - len(one) :] == one
        hint = ": for a batch, jax.vmap the call" if batch else ""
        got = f"shape {shape}" if batch else repr(key)
        raise ValueError(f"key must be one JAX key (jax.random.key(seed)), got {got}{hint}")


def check_actions(action: Any, shape: tuple[int, ...]) -> None:
    """A ValueError when `action` has another shape than one per seat that acts."""
    if jnp.shape(action) != shape:
        where = "one action" if shape == () else f"one action per seat, shape {shape}"
        raise ValueError(
            f"action must be {where}, got shape {jnp.shape(action)}: for a batch, jax.vmap"
        )
