"""Agents: one interface (`Agent`) for networks, the exact optimum and the baselines."""

from yahtzee_jax.agents.base import Agent, Policy, make_random_agent
from yahtzee_jax.agents.resolve import BUILTIN_AGENTS, resolve_agent

__all__ = ["BUILTIN_AGENTS", "Agent", "Policy", "make_random_agent", "resolve_agent"]
