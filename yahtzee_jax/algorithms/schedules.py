"""Schedules as pure functions of the update counter (optax schedules), so resuming is exact.

Their settings are Python numbers in a single run, or traced per-member values in a population
(`population.py`): the phase lengths are then rounded on the device and the linear pieces are
written out, since optax's `linear_schedule` needs a concrete number of steps.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import optax

from yahtzee_jax.config import OptimConfig


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _steps(total: int, fraction: Any) -> Any:
    """round(total * fraction): a Python int for a number, a traced one otherwise."""
    scaled = total * fraction
    return round(scaled) if _is_number(scaled) else jnp.round(scaled)


def _at_least_one(steps: Any) -> Any:
    return max(steps, 1) if _is_number(steps) else jnp.maximum(steps, 1)


def _linear(start: Any, end: Any, steps: Any) -> optax.Schedule:
    """optax.linear_schedule, also for a traced number of steps (the same formula)."""
    if _is_number(steps):
        return optax.linear_schedule(start, end, steps)

    def schedule(count: Any) -> Any:
        frac = 1 - jnp.clip(count, 0, steps) / steps
        return (start - end) * frac + end

    return schedule


def learning_rate_schedule(config: OptimConfig, total_updates: int) -> optax.Schedule:
    """Warmup (linear from min_lr_ratio * lr) -> plateau at lr -> linear decay to min_lr_ratio * lr.

    Phase lengths are fractions of `total_updates` (paper: 5 % / 70 % / 25 %).
    """
    low = config.lr * config.min_lr_ratio
    warmup_steps = _steps(total_updates, config.warmup)
    plateau_steps = _steps(total_updates, config.plateau)
    decay_steps = _at_least_one(total_updates - warmup_steps - plateau_steps)
    return optax.join_schedules(
        [
            _linear(low, config.lr, _at_least_one(warmup_steps)),
            optax.constant_schedule(config.lr),
            _linear(config.lr, low, decay_steps),
        ],
        boundaries=[warmup_steps, warmup_steps + plateau_steps],
    )


def hold_anneal_schedule(
    start: float, end: float, hold: float, anneal: float, total_updates: int
) -> optax.Schedule:
    """`start` for the first `hold` fraction, linear to `end` over `anneal`, then `end`."""
    hold_steps = _steps(total_updates, hold)
    anneal_steps = _at_least_one(_steps(total_updates, anneal))
    return optax.join_schedules(
        [optax.constant_schedule(start), _linear(start, end, anneal_steps)],
        boundaries=[hold_steps],
    )
