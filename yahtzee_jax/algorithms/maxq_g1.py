"""HRL-G1 (seed 001, section VI-C): MAXQ-Q (`maxq.py`) explored with a one-level greedy guide.

The guide rerolls uniformly at random twice, then scores the box that pays most with the final
dice; the tables learn from these rounds exactly as `maxq`'s do. The seed trained it for 10^6
rounds with "initial alpha 5e5": l_k = 5e5 / (5e5 + k), 1/3 after 10^6 rounds.
"""

from __future__ import annotations

import dataclasses

from yahtzee_jax.algorithms.maxq import MaxQConfig, explore_greedy_guide, make_algorithm


@dataclasses.dataclass(frozen=True)
class MaxQG1Config(MaxQConfig):
    """MAXQ-Q with the greedy guide: the seed's smaller initial alpha."""

    name: str = "maxq-g1"
    alpha: float = 5e5


ALGORITHM = make_algorithm("maxq-g1", MaxQG1Config, explore_greedy_guide)
