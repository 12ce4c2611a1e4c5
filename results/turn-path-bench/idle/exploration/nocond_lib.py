# Exploration of the decision-table policy`s cost (issue 66); a record of what was run, not a tool: it imports private names of 9f6d8d8.
import dataclasses, time
import jax, jax.numpy as jnp, numpy as np
from yahtzee_jax.agents.decision_table import make_decision_table_agent, _card_rows, KEEP_BITS, _whole_game_cards
from yahtzee_jax.agents.widget_agents import score_actions, WIDGET_CPU_BATCH_SIZE
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.solver.widget_tables import ROLL_OF_CODE, dice_code
from yahtzee_jax.evaluation import records as R

def keeps(table, cards, rules):
    rows = _card_rows(table, cards, rules)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(cards.dice, jnp)]
    shift = jnp.where(cards.roll_index == 0, 0, KEEP_BITS)
    return (table.keeps[rows, roll].astype(jnp.int32) >> shift) & ((1 << KEEP_BITS) - 1)

@dataclasses.dataclass(frozen=True)
class Both:
    rules: object
    cpu_batch_size = WIDGET_CPU_BATCH_SIZE
    def __call__(self, params, own, others, k):
        scoring = own.roll_index == LAST_ROLL
        return jnp.where(scoring, score_actions(params.value_table, own, self.rules).astype(jnp.int32), keeps(params, own, self.rules))


from yahtzee_jax.agents.widget_agents import widget_batch_actions, MAX_REROLLS

@dataclasses.dataclass(frozen=True)
class BothOuter:
    rules: object
    cpu_batch_size = WIDGET_CPU_BATCH_SIZE
    def __call__(self, params, own, others, k):
        return jax.lax.cond(_whole_game_cards(own), lambda: Both(self.rules)(params, own, others, k),
                            lambda: widget_batch_actions(params.value_table, own, self.rules, MAX_REROLLS))
