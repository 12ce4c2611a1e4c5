"""Schedules as pure functions of the update counter (optax schedules), so resuming is exact."""

from __future__ import annotations

import optax

from yahtzee_jax.config import OptimConfig


def learning_rate_schedule(config: OptimConfig, total_updates: int) -> optax.Schedule:
    """Warmup (linear from min_lr_ratio * lr) -> plateau at lr -> linear decay to min_lr_ratio * lr.

    Phase lengths are fractions of `total_updates` (paper: 5 % / 70 % / 25 %).
    """
    low = config.lr * config.min_lr_ratio
    warmup_steps = round(total_updates * config.warmup)
    plateau_steps = round(total_updates * config.plateau)
    decay_steps = max(total_updates - warmup_steps - plateau_steps, 1)
    return optax.join_schedules(
        [
            optax.linear_schedule(low, config.lr, max(warmup_steps, 1)),
            optax.constant_schedule(config.lr),
            optax.linear_schedule(config.lr, low, decay_steps),
        ],
        boundaries=[warmup_steps, warmup_steps + plateau_steps],
    )


def hold_anneal_schedule(
    start: float, end: float, hold: float, anneal: float, total_updates: int
) -> optax.Schedule:
    """`start` for the first `hold` fraction, linear to `end` over `anneal`, then `end`."""
    hold_steps = round(total_updates * hold)
    anneal_steps = max(round(total_updates * anneal), 1)
    return optax.join_schedules(
        [optax.constant_schedule(start), optax.linear_schedule(start, end, anneal_steps)],
        boundaries=[hold_steps],
    )
