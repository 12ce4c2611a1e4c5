"""play_games of 100,000 official games, in one process: five timed calls after one that
compiles. `python time_table.py [table|optimal]` (default table), run from a checkout's root
with PYTHONPATH=that checkout; prints [(wall s, CPU s), ...] and the totals' sum."""

import sys
import time

from yahtzee_jax.evaluation.records import play_games

if sys.argv[1:] == ["optimal"]:
    try:
        from yahtzee_jax.agents.widget_agents import make_optimal_agent
    except ImportError:  # b54ce5d's module name
        from yahtzee_jax.agents.exact import make_optimal_agent
    agent = make_optimal_agent("official")
else:
    from yahtzee_jax.agents.decision_table import make_decision_table_agent

    agent = make_decision_table_agent("official")
play_games(agent, 2048, 0, batch_size=2048)
times = []
for _ in range(5):
    start, cpu = time.perf_counter(), time.process_time()
    total = play_games(agent, 100_000, 1, batch_size=2048).total
    times.append((round(time.perf_counter() - start, 3), round(time.process_time() - cpu, 3)))
print(times, total.sum())
