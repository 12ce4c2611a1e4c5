"""Agents: one interface (`Agent`) for networks, the exact optimum and the baselines."""

from typing import TYPE_CHECKING

from yahtzee_jax.agents.resolve import AGENT_NAMES, BUILTINS, OPPONENTS, builtin_agent
from yahtzee_jax.lazy import lazy_exports

if TYPE_CHECKING:
    from yahtzee_jax.agents.agent import Agent, Policy, make_random_agent

# The agents' interface imports JAX; the names of the built-in agents do not.
__getattr__ = lazy_exports(
    __name__, dict.fromkeys(("Agent", "Policy", "make_random_agent"), "yahtzee_jax.agents.agent")
)

__all__ = [
    "AGENT_NAMES",
    "BUILTINS",
    "OPPONENTS",
    "Agent",
    "Policy",
    "builtin_agent",
    "make_random_agent",
]
