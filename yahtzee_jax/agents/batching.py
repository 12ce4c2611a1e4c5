"""The games a batch of a widget agent plays on a CPU: a constant the command line's help reads
without importing JAX (`agents.widget_agents` plays by it)."""

# The batch `play_games` gives a widget agent on a CPU by default: the more games, the more share
# a turn's state (issue 46): 26-29K games per CPU-s at 2,048 to 8,192 (chunks of 128).
WIDGET_CPU_BATCH_SIZE = 2048
