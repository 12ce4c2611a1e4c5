import time, jax
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms import ppo
progs = {}
for vh in ("state", "action"):
    config = resolve("cpu-ppo-3min", overrides=[f"network.value_head={vh}"])
    ctx = make_context(config); st = init_train_state(ctx)
    u = jax.jit(lambda s, ctx=ctx: ppo.update(ctx, s)[0])
    progs[vh] = [u, jax.block_until_ready(u(st))]
times = {"state": [], "action": []}
for round_ in range(6):
    for vh in ("state", "action") if round_ % 2 == 0 else ("action", "state"):
        u, s = progs[vh]
        t = time.perf_counter()
        for _ in range(5): s = jax.block_until_ready(u(s))
        times[vh].append((time.perf_counter() - t) / 5 * 1000); progs[vh][1] = s
for vh, ts in times.items(): print(vh, "min", round(min(ts), 1), "median", round(sorted(ts)[3], 1), [round(t) for t in ts])
