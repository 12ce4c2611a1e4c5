"""Collapse detection: a policy that stopped learning is stopped instead of trained on.

A collapsed policy is deterministic everywhere (both heads' entropy near 0) or gets no usable
gradient (a zero or an exploding norm): with `optim.lr=1e6` a run collapses at update 2 and
would otherwise spend its whole budget there. The signs alone do not stop a run: a healthy run
late in training may be confident. The run stops only when the signs persist through
`COLLAPSE_PATIENCE` periodic evaluations in a row that do not beat the best one before them
(exit status 4), unless `train.allow_collapse=true`.
"""

from __future__ import annotations

import math

import numpy as np

from yahtzee_jax.errors import UserError

COLLAPSED_ENTROPY = 1e-3  # nats: both heads below this = a deterministic (collapsed) policy
# Gradient norm (before clipping) past which the update is meaningless: healthy runs of every
# preset stay within 1e3; the lr=1e6 collapse reads 9e11.
EXPLODING_GRADIENT = 1e6
COLLAPSE_PATIENCE = 3  # evaluations without improvement, after the signs, before the run stops


class CollapseError(UserError):
    """The policy collapsed and the periodic evaluation stopped improving."""

    exit_status = 4


def collapse_signs(metrics: dict[str, np.ndarray]) -> str | None:
    """The readings of the last update of a chunk, e.g. "roll entropy 0.0000, gradient norm
    0", when they show a collapse (both heads' entropy near 0, or a zero or exploding
    gradient); None otherwise."""
    entropies = {
        name.split("/")[-1]: float(values[-1])
        for name, values in metrics.items()
        if name.startswith("policy/") and name.endswith("_entropy")
    }
    gradient = float(metrics["grad/norm"][-1]) if "grad/norm" in metrics else None
    collapsed = bool(entropies) and max(entropies.values()) < COLLAPSED_ENTROPY
    stuck = gradient is not None and (gradient == 0.0 or not gradient < EXPLODING_GRADIENT)
    if not collapsed and not stuck:
        return None
    # `+ 0.0` turns the -0.0 a saturated softmax's entropy comes out as into 0.0
    readings = [
        f"{name.replace('_', ' ')} {max(value, 0.0) + 0.0:.4f}" for name, value in entropies.items()
    ]
    if gradient is not None:
        readings.append(f"gradient norm {gradient:.3g}")
    return ", ".join(readings)


def collapse_warning(metrics: dict[str, np.ndarray], step: int) -> str | None:
    """A one-line warning when the last update of a chunk shows a collapsed policy; None
    otherwise."""
    signs = collapse_signs(metrics)
    if signs is None:
        return None
    return (
        f"warning: the policy has collapsed by update {step} ({signs}) and has "
        "stopped learning; a smaller optim.lr or optim.max_grad_norm > 0 usually prevents it"
    )


class CollapseWatch:
    """One run's collapse signs and its evaluations since: `stale` counts the evaluations in a
    row, each after a chunk that showed the signs, that did not beat the best before them."""

    def __init__(self, best: float | None, patience: int = COLLAPSE_PATIENCE) -> None:
        self.best = best  # the best evaluation mean so far (None before the first)
        self.patience = patience
        self.since: int | None = None  # the update the current signs were first seen at
        self.signs: str | None = None
        self.stale = 0

    def chunk(self, metrics: dict[str, np.ndarray], step: int) -> None:
        """Read the signs at the end of the chunk ending at update `step`; a chunk without
        them (the policy recovered) starts the count again."""
        signs = collapse_signs(metrics)
        if signs is None:
            self.since, self.signs, self.stale = None, None, 0
        elif self.since is None:
            self.since, self.signs = step, signs

    def evaluation(self, mean: float) -> bool:
        """Count an evaluation's mean; True when the run should stop."""
        improved = self.best is not None and mean > self.best
        self.best = mean if self.best is None or math.isnan(self.best) else max(self.best, mean)
        if self.since is None:
            return False
        self.stale = 0 if improved else self.stale + 1
        return self.stale >= self.patience

    def message(self, step: int) -> str:
        """The one line that stops the run at update `step`."""
        return (
            f"stopped at update {step}: the policy collapsed by update {self.since} "
            f"({self.signs}) and the periodic evaluation has not improved in {self.stale} "
            f"evaluations since (best {self.best:.2f}); its checkpoint is saved. A smaller "
            "optim.lr or optim.max_grad_norm > 0 usually prevents it; "
            "--set train.allow_collapse=true trains on"
        )
