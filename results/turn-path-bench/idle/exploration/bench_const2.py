# Exploration of the decision-table policy`s cost (issue 66); a record of what was run, not a tool: it imports private names of 9f6d8d8.
import dataclasses, time, sys
import jax, jax.numpy as jnp, numpy as np
sys.path.insert(0, "/tmp/dtv")
from nocond_lib import Both, BothOuter
from yahtzee_jax.agents.decision_table import make_decision_table_agent
from yahtzee_jax.agents.widget_agents import make_optimal_agent
from yahtzee_jax.evaluation import records as R
from yahtzee_jax.envs.rollout import learning_rollout
from yahtzee_jax.agents.agent import policy_step, initial_memory

def _play_const(policy, params, keys, rules):
    env = R.SOLITAIRE["game"](rules, R.FeatureConfig())
    def act(cards, keys, carry, roll_index=None):
        cards = cards.replace(roll_index=jnp.full_like(cards.roll_index, roll_index))
        return policy_step(policy, params, cards, R.no_others(cards), keys, carry)
    def learn(carry, card, action, following, memory, decision, roll_index=None):
        return memory, R._record_scoring(card, action, following, None)
    memory = initial_memory(policy, keys.shape[0])
    _, final, records, _ = learning_rollout(env, act, learn, memory, keys, by_turn=True)
    return final, records

which = sys.argv[1]
if which == "table":
    agent = make_decision_table_agent("official")
    agents = {"current": agent, "both": dataclasses.replace(agent, policy=Both(agent.rules)), "both_outer": dataclasses.replace(agent, policy=BothOuter(agent.rules))}
else:
    agents = {"optimal": make_optimal_agent("official")}
loops = {"scan": R._play, "const": _play_const}
res, tots = {}, {}
for rep in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    for ln, lf in loops.items():
        for an, a in agents.items():
            R._play = lf; R._play_batch.clear_cache()
            s = time.perf_counter(); R.play_games(a, 2048, 0, batch_size=2048); comp = time.perf_counter() - s
            s, c = time.perf_counter(), time.process_time()
            tots[(ln, an)] = R.play_games(a, 100_000 if which == "table" else 20_000, 1, batch_size=2048).total
            res.setdefault((ln, an), []).append((round(time.perf_counter() - s, 3), round(time.process_time() - c, 3), round(comp, 2)))
for k, v in res.items(): print(k, v)
ref = next(iter(tots.values()))
print("same games", all(np.array_equal(ref, t) for t in tots.values()))
