"""Agents: one interface (`Agent`) for networks, the exact optimum and the baselines."""

from yahtzee_jax.agents.base import Agent, Policy, make_random_agent

__all__ = ["Agent", "Policy", "make_random_agent"]
