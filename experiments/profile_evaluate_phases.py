"""Where `evaluate optimal --rules yatzy` spends its time before its games (issue 65): the
import, the agent, and tracing and lowering the play program, each timed once in this process.

    python experiments/profile_evaluate_phases.py
"""

from __future__ import annotations

import time


def main() -> None:
    """Print the seconds of each phase and the size of the lowered program."""
    started = time.perf_counter()
    import jax
    import jax.numpy as jnp

    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.evaluation import records

    imported = time.perf_counter()
    agent = builtin_agent("optimal", "yatzy")
    built = time.perf_counter()
    batch = records.default_batch_size(agent.policy)
    arguments = (agent.policy, agent.rules, agent.params, jax.random.key(1), jnp.int32(0), batch)
    lowered = records._play_batch.lower(*arguments)
    traced = time.perf_counter()
    print(f"import (JAX and the package) {imported - started:.2f} s")
    print(f"the optimal agent (its cached table read) {built - imported:.2f} s")
    print(f"tracing and lowering the play program {traced - built:.2f} s")
    print(f"the lowered program: {len(lowered.as_text()):,} characters of StableHLO, batch {batch}")


if __name__ == "__main__":
    main()
