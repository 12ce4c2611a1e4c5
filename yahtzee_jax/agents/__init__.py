"""Agents: one interface (`Agent`) for networks, the exact optimum and the baselines."""

from yahtzee_jax.agents.agent import Agent, Policy, make_random_agent
from yahtzee_jax.agents.resolve import AGENT_NAMES, BUILTINS, OPPONENTS, builtin_agent

__all__ = [
    "AGENT_NAMES",
    "BUILTINS",
    "OPPONENTS",
    "Agent",
    "Policy",
    "builtin_agent",
    "make_random_agent",
]
