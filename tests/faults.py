"""Fault injection for the interruption tests: a training-loop hook that sends a signal at a
chosen moment, and a launcher that runs `yahtzee-jax` with it.

    python tests/faults.py POINT:COUNT:SIGNAL[:DELAY] train --config ... --out ...

runs the command line's `train` with the hook: SIGNAL reaches this process the COUNT-th time
the loop passes POINT (one of `loop.HOOK_POINTS`), DELAY seconds later, from a timer thread, so
that it lands inside the work that follows (a chunk, an evaluation, a checkpoint write). The
exit status and output are the command line's own.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading

from yahtzee_jax.runner.loop import HOOK_POINTS


class FaultInjector:
    """A `loop.Hook` firing SIGNAL at the COUNT-th visit of POINT: `POINT:COUNT:SIGNAL[:DELAY]`."""

    def __init__(self, spec: str) -> None:
        point, count, name, *delay = spec.split(":")
        if point not in HOOK_POINTS:
            raise ValueError(f"{point!r} is not one of the loop's hook points {HOOK_POINTS}")
        self.point, self.count = point, int(count)
        self.signal = signal.Signals[name]
        self.delay = float(delay[0]) if delay else 0.0

    def __call__(self, point: str, update: int) -> None:
        """Count a visit to `point`; on the chosen one, send the signal after the delay."""
        if point != self.point:
            return
        self.count -= 1
        if self.count == 0:
            threading.Timer(self.delay, os.kill, (os.getpid(), self.signal)).start()


def main(argv: list[str]) -> int:
    """`yahtzee-jax ARGS...` with a `FaultInjector(SPEC)` hook in `train` (argv: SPEC ARGS...)."""
    from yahtzee_jax.commands import cli
    from yahtzee_jax.runner import single_run as train_command

    spec, *arguments = argv
    # The command line's `train` (`commands.train`) calls `yahtzee_jax.runner.single_run.train`
    # through its module: the same function, given the hook (production code never reads a
    # fault from anywhere).
    train_command.train = functools.partial(train_command.train, hook=FaultInjector(spec))
    return cli.main(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
