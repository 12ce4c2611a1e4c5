"""`yahtzee-jax bench scaling`: training throughput over games per update x width x devices.

Each cell of the grid compiles and times the fused training chunk exactly as `bench train`
times it for its `ms_per_update` (`benchmarks.train.time_chunk`: K updates of rollout, loss,
optimizer step and diagnostics in one call, best of `--repeats`), with the update's games
sharded over the cell's devices as `train` shards them. There is no bare forward+backward
baseline here; `bench train` has it.

Cells that cannot run are rows too, with the reason: a batch that does not divide over the
devices, one above the memory guard (`--max-transitions-per-update`), or more devices than the
machine has on an accelerator. More devices than a CPU has run in a subprocess with forced host
devices (`--xla_force_host_platform_device_count`); those share the same cores, so their rows
show that the data-parallel program runs, not a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from yahtzee_jax.commands.arguments import add_override_argument, positive_integers
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.commands.bench.train_speed import time_chunk, transitions_per_update
from yahtzee_jax.config import Config
from yahtzee_jax.errors import UserError
from yahtzee_jax.files import check_writable, write_json

DEFAULT_BATCHES = "20,64,256,1024,4096,16384"
DEFAULT_WIDTHS = "128,256,600,1024"
# Memory guard. Peak resident memory of one `time_chunk` process (paper-a2c, 2 trunk blocks),
# measured on this project's 2-core CPU: about 0.8 GB of JAX and compiled programs plus
# BYTES_PER_TRANSITION_UNIT per transition per hidden unit of an update's batch (see
# docs/speed/README.md). With MEMORY_BUDGET_BYTES for that part, a 23 GB machine keeps room
# for its other work; the default cap on transitions per update is the budget's share at each
# width. A GPU with more memory: raise it with --max-transitions-per-update.
BYTES_PER_TRANSITION_UNIT = 150
MEMORY_BUDGET_BYTES = 6 * 2**30
MEMORY_SKIP = "too large for this device's memory budget"
FORCED_DEVICES_FLAG = "--xla_force_host_platform_device_count"
ROW_PREFIX = "ROW "  # how the forced-device subprocess hands back each measured row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench scaling`."""
    parser.add_argument(
        "--preset", default="paper-a2c", help="config preset: algorithm, network and task"
    )
    parser.add_argument(
        "--batches",
        default=DEFAULT_BATCHES,
        help=f"comma-separated games per update (default {DEFAULT_BATCHES})",
    )
    parser.add_argument(
        "--widths",
        default=DEFAULT_WIDTHS,
        help=f"comma-separated network.hidden_size values (default {DEFAULT_WIDTHS})",
    )
    parser.add_argument(
        "--devices",
        default=None,
        help="comma-separated device counts (default: 1 and all local devices if more); on a "
        "CPU a count above the local one runs on forced host devices in a subprocess",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per cell (best)")
    parser.add_argument(
        "--max-transitions-per-update",
        type=int,
        default=None,
        metavar="N",
        help="skip cells whose update holds more than N transitions per device (default: "
        f"{MEMORY_BUDGET_BYTES / 2**30:.0f} GiB / ({BYTES_PER_TRANSITION_UNIT} bytes x width), "
        "sized for a 23 GB CPU machine; raise it on a GPU)",
    )
    add_override_argument(parser)
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    parser.add_argument(
        "--plot", default=None, help="write games/s against games per update to this PNG"
    )


def default_max_transitions(width: int) -> int:
    """The memory guard's cap on transitions per update at `width` (see MEMORY_BUDGET_BYTES)."""
    return MEMORY_BUDGET_BYTES // (BYTES_PER_TRANSITION_UNIT * width)


def skip_reason(
    config: Config, devices: int, cap: int | None, platform: str, local_devices: int
) -> str | None:
    """Why a cell does not run (None: it runs): no such devices, indivisible or too large."""
    if devices > local_devices and platform != "cpu":
        return f"only {local_devices} {platform.upper()} device(s) here"
    from yahtzee_jax.envs import episodes_per_update

    episodes = episodes_per_update(config)
    if episodes % devices:
        return f"{episodes} episodes per update do not divide over {devices} devices"
    transitions = transitions_per_update(config)
    # Accelerators hold their own share of the batch; host devices share one memory.
    per_device = transitions if platform == "cpu" else transitions // devices
    limit = default_max_transitions(config.network.hidden_size) if cap is None else cap
    if per_device > limit:
        return f"{MEMORY_SKIP} ({per_device:,} transitions per device > {limit:,})"
    return None


def _cells(args: argparse.Namespace) -> list[tuple[int, Config]]:
    """Every (devices, config) of the grid, each config resolved (and so checked) up front."""
    from yahtzee_jax.runner.configs import resolve

    batches = positive_integers(args.batches, "--batches")
    widths = positive_integers(args.widths, "--widths")
    counts = positive_integers(args.devices, "--devices") if args.devices is not None else None
    if args.repeats < 1:
        raise UserError(f"--repeats {args.repeats} must be >= 1")
    if args.max_transitions_per_update is not None and args.max_transitions_per_update < 1:
        raise UserError(
            f"--max-transitions-per-update {args.max_transitions_per_update} must be >= 1"
        )
    configs = [
        resolve(
            args.preset,
            overrides=[
                *args.overrides,
                f"network.hidden_size={width}",
                f"train.games_per_update={games}",
            ],
        )
        for width in widths
        for games in batches
    ]
    if counts is None:
        import jax

        counts = sorted({1, len(jax.devices())})
    return [(devices, config) for devices in counts for config in configs]


def _row(preset: str, devices: int, config: Config, forced: bool) -> dict[str, Any]:
    return {
        "preset": preset,
        "width": config.network.hidden_size,
        "devices": devices,
        "forced_host_devices": forced,
        "games_per_update": config.train.games_per_update,
        "transitions_per_update": transitions_per_update(config),
    }


class _ForcedDevices:
    """A subprocess with `devices` forced CPU host devices that times the cells it is given,
    handing each row back as one line as soon as it is measured."""

    def __init__(self, devices: int, configs: list[Config], repeats: int) -> None:
        flags = re.sub(rf"{FORCED_DEVICES_FLAG}=\S*", "", os.environ.get("XLA_FLAGS", ""))
        env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": f"{flags} {FORCED_DEVICES_FLAG}={devices}".strip(),
        }
        job = {"devices": devices, "repeats": repeats, "configs": [c.to_dict() for c in configs]}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps(job)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.log: list[str] = []

    def next_row(self) -> dict[str, Any]:
        """The next measured row (a one-line error if the subprocess failed)."""
        for line in self.process.stdout:
            if line.startswith(ROW_PREFIX):
                return json.loads(line[len(ROW_PREFIX) :])
            self.log = [*self.log[-20:], line.rstrip()]
        self.process.wait()
        last = next((line for line in reversed(self.log) if line.strip()), "no output")
        raise UserError(f"the forced-host-device subprocess failed: {last}")

    def close(self) -> None:
        """Wait for the subprocess (it exits after its last row)."""
        self.process.stdout.close()
        self.process.wait()


def _child(job_text: str) -> int:
    """The forced-device subprocess: time each config of the job, one ROW line each."""
    from yahtzee_jax.runner.configs import from_dict

    job = json.loads(job_text)
    for data in job["configs"]:
        row = time_chunk(from_dict(data), job["repeats"], job["devices"])
        print(ROW_PREFIX + json.dumps(row), flush=True)
    return 0


HEADER = (
    f"{'width':>5} {'devices':>7} {'B':>6} {'trans/update':>12} {'K':>3} {'ms/update':>10} "
    f"{'games/s':>9} {'trans/s':>10} {'compile s':>9}"
)


def _format(row: dict[str, Any]) -> str:
    start = (
        f"{row['width']:>5} {row['devices']:>7} {row['games_per_update']:>6} "
        f"{row['transitions_per_update']:>12,}"
    )
    if row["status"] == "skipped":
        return f"{start}  skipped ({row['reason']})"
    return (
        f"{start} {row['updates_per_call']:>3} {row['ms_per_update']:>10.1f} "
        f"{row['games_per_second']:>9.1f} {row['transitions_per_second']:>10.0f} "
        f"{row['compile_seconds']:>9.1f}"
    )


def _rows(
    cells: list[tuple[int, Config]], args: argparse.Namespace, platform: str, local: int
) -> Iterator[dict[str, Any]]:
    """Each cell's row in grid order, measured or skipped with its reason; a device count
    above the local one runs on a CPU in one forced-host-device subprocess."""
    cap = args.max_transitions_per_update
    reasons = [skip_reason(config, devices, cap, platform, local) for devices, config in cells]
    for devices in dict.fromkeys(devices for devices, _ in cells):
        indices = [i for i, (count, _) in enumerate(cells) if count == devices]
        runnable = [cells[i][1] for i in indices if reasons[i] is None]
        forced = devices > local and platform == "cpu"
        if devices > local and not forced:
            print(f"{devices} devices: {reasons[indices[0]]}; skipped", flush=True)
        child = None
        if forced and runnable:
            print(
                f"{devices} devices: forced host CPU devices in a subprocess ({FORCED_DEVICES_FLAG}"
                f"={devices}); they share this machine's cores, so these rows only show the "
                "mechanism, not a speed-up",
                flush=True,
            )
            child = _ForcedDevices(devices, runnable, args.repeats)
        try:
            for index in indices:
                config = cells[index][1]
                row = _row(args.preset, devices, config, forced)
                if reasons[index] is not None:
                    yield row | {"status": "skipped", "reason": reasons[index]}
                elif child is not None:
                    yield row | {"status": "ok"} | child.next_row()
                else:
                    yield row | {"status": "ok"} | time_chunk(config, args.repeats, devices)
        except BaseException:  # interrupted or failed: the subprocess's remaining cells too
            if child is not None:
                child.process.kill()
            raise
        finally:
            if child is not None:
                child.close()


def run(args: argparse.Namespace) -> int:
    """Time every cell of the grid, one table row each as it finishes; write JSON and plot."""
    import jax

    cells = _cells(args)  # every input checked before anything compiles
    check_writable(args.json or None)
    check_writable(args.plot or None)  # not after the whole grid's timings
    device = jax.devices()[0]
    platform, local = device.platform, len(jax.devices())
    widths = sorted({config.network.hidden_size for _, config in cells})
    caps = {
        width: args.max_transitions_per_update or default_max_transitions(width) for width in widths
    }
    result: dict[str, Any] = {
        "device": device.device_kind,
        "platform": platform,
        "local_devices": local,
        "preset": args.preset,
        "repeats": args.repeats,
        "max_transitions_per_update": {str(width): cap for width, cap in caps.items()},
        "rows": [],
        "machine": run_record(args.argv),
    }
    print(f"bench scaling: {local} x {device.device_kind} ({platform})")
    limits = ", ".join(f"{cap:,} at width {width}" for width, cap in caps.items())
    print(f"memory guard (--max-transitions-per-update): per device at most {limits}")
    print(HEADER, flush=True)
    for row in _rows(cells, args, platform, local):
        result["rows"].append(row)
        if not (row["devices"] > local and platform != "cpu"):  # those got their one line
            print(_format(row), flush=True)
        if args.json:  # after every row: a long grid killed halfway keeps what it measured
            write_json(args.json, result)
    print(
        "B = games per update; trans = transitions (decisions) learnt from; K = updates per timed "
        "call; ms/update = best of --repeats calls / K; compile s = one chunk's compilation"
    )
    if args.plot:
        from yahtzee_jax.evaluation import plots

        title = f"bench scaling: {args.preset} on {local} x {device.device_kind}"
        plots.save_figure(plots.scaling_figure(result["rows"], title), args.plot)
        print(f"figure: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
