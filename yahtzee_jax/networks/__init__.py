"""Every network of the package, one module each (Stoix's `networks/`).

- `actor_critic`: the paper's shared-trunk policy/value network (A2C, PPO, REINFORCE) and the
  policy it defines over the actions;
- `q_network`: DQN's Q network on the same blocks;
- `linear_q`: Q(lambda)'s perceptron;
- `value`: the planners' value network (td-planner, td-win), with its score-to-come head;
- `tables`: MAXQ-Q's table layout (the row of a state).

The parameter trees are those each network had in its learner's module (the same class and
submodule names), so checkpoints load unchanged.
"""

from yahtzee_jax.networks.actor_critic_net import (
    CRITIC_BLOCK,
    HEADS,
    VALUE_OUTPUT,
    Block,
    HeadRows,
    NetworkOutput,
    YahtzeeNet,
    dropout_keep_mask,
    entropy,
    init_params,
    network_log_probs,
    policy_log_probs,
    value_head_modules,
)
from yahtzee_jax.networks.linear_q import LinearQ
from yahtzee_jax.networks.maxq_tables import Tables
from yahtzee_jax.networks.q_network import QNetwork
from yahtzee_jax.networks.value import ValueNet

__all__ = [
    "CRITIC_BLOCK",
    "HEADS",
    "VALUE_OUTPUT",
    "Block",
    "HeadRows",
    "LinearQ",
    "NetworkOutput",
    "QNetwork",
    "Tables",
    "ValueNet",
    "YahtzeeNet",
    "dropout_keep_mask",
    "entropy",
    "init_params",
    "network_log_probs",
    "policy_log_probs",
    "value_head_modules",
]
