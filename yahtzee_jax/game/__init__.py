"""The Yahtzee engine: rules, state and pure step functions.

The engine's names load on first use (PEP 562): `yahtzee_jax.game.rules` alone imports no JAX,
so a process that only solves (the C kernel, NumPy's tables) never imports JAX.
"""

from __future__ import annotations

from yahtzee_jax.game.rules import (
    KEEP_ALL,
    NUM_KEEP_ACTIONS,
    OFFICIAL,
    RULE_VARIANTS,
    YAHTZEE_BOXES,
    Box,
    Category,
    Joker,
    Kind,
    Rules,
    base_scores,
    face_counts,
    get_rules,
    score_options,
)
from yahtzee_jax.lazy import lazy_exports

# What the engine module exports, imported with JAX when first asked for.
_ENGINE_NAMES = (
    "IllegalActionError",
    "State",
    "current_score_options",
    "describe_action",
    "init",
    "init_single_turn",
    "legal_action_mask",
    "roll_dice",
    "step",
    "step_checked",
    "total_score",
    "turn_index",
    "upper_bonus",
    "upper_total",
)
__getattr__ = lazy_exports(__name__, dict.fromkeys(_ENGINE_NAMES, "yahtzee_jax.game.engine"))

__all__ = [
    "KEEP_ALL",
    "NUM_KEEP_ACTIONS",
    "OFFICIAL",
    "RULE_VARIANTS",
    "YAHTZEE_BOXES",
    "Box",
    "Category",
    "Joker",
    "Kind",
    "Rules",
    "base_scores",
    "face_counts",
    "get_rules",
    "score_options",
    *_ENGINE_NAMES,
]
