"""The regression cases of `test_golden.py`: each learner on each environment at tiny widths,
and each built-in agent's evaluation, reduced to digests that must not change across refactors.

`python tests/golden_cases.py --record` rewrites `tests/golden/regression.json` (only do that
when a change of numbers is intended and explained in the commit). `--record-fast-compile` adds
the fast cases' digests as the test session compiles them (`FAST_COMPILE_FLAGS`: rounded
differently, so digests of their own), recorded at a commit whose production digests pass.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Any

import jax
import numpy as np
from conftest import FAST_COMPILE_FLAGS

GOLDEN_PATH = Path(__file__).parent / "golden" / "regression.json"

TINY = [
    "network.hidden_size=16",
    "network.trunk_layers=1",
    "train.games_per_update=4",
    "train.total_games=400",
    "train.seed=3",
]
DQN_TINY = ["algo.buffer_size=2000", "algo.batch_size=32", "algo.gradient_steps=2"]

# name -> (preset, overrides): learner x environment (game, single turn, two-player match).
LEARNER_CASES: dict[str, tuple[str, list[str]]] = {
    "a2c/game": ("paper-a2c", TINY),
    "reinforce/game": ("paper-reinforce", TINY),
    "ppo/game": ("paper-ppo-50k", TINY),
    "dqn/game": ("dqn", TINY + DQN_TINY),
    "a2c/single-turn": ("paper-a2c", [*TINY, "env.id=YahtzeeSingleTurn-v0"]),
    "reinforce/single-turn": ("paper-single-turn", TINY),
    "ppo/single-turn": ("paper-ppo-50k", [*TINY, "env.id=YahtzeeSingleTurn-v0"]),
    "dqn/single-turn": ("dqn", [*TINY, *DQN_TINY, "env.id=YahtzeeSingleTurn-v0"]),
    "a2c/match-greedy3-win": (
        "a2c-win",
        [*TINY, "algo.init_from=''", "env.opponent=greedy3"],
    ),
    "dqn/match-greedy3-gradient": (
        "dqn-two-player",
        [*TINY, *DQN_TINY, "env.opponent=greedy3"],
    ),
    "dqn/match-random-moving-average": (
        "dqn-two-player",
        [*TINY, *DQN_TINY, "env.opponent=random", "env.reward=moving-average"],
    ),
}
UPDATES = 3
# A fast case per environment and learner family runs in `make test`; the whole matrix is slow.
FAST_CASES = ("a2c/game", "ppo/single-turn", "dqn/match-greedy3-gradient")
DIGESTS = ("params_sha256", "extra_sha256", "metrics_sha256")
AGENTS = ("random", "greedy1", "greedy2", "greedy3", "optimal")
AGENT_GAMES = 24
AGENT_SEED = 11


def digest(arrays: dict[str, Any]) -> str:
    """sha256 over the named arrays' dtypes, shapes and bytes, in name order."""
    hasher = hashlib.sha256()
    for name in sorted(arrays):
        value = np.asarray(arrays[name])
        hasher.update(f"{name}|{value.dtype.str}|{value.shape}|".encode())
        hasher.update(np.ascontiguousarray(value).tobytes())
    return hasher.hexdigest()


def named_leaves(tree: Any) -> dict[str, np.ndarray]:
    """A pytree's leaves by their key path."""
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in flat}


def unnamed_digest(arrays: dict[str, Any]) -> str:
    """sha256 over each array's dtype and flat bytes, sorted: the same numbers under other
    names, in another container or with a unit axis more (an algorithm's extra state against
    an environment's task state; one opponent's card [B] against the opponents' cards [B, 1])."""
    parts = []
    for value in arrays.values():
        value = np.ascontiguousarray(value)
        parts.append(hashlib.sha256(value.dtype.str.encode() + value.tobytes()).hexdigest())
    return hashlib.sha256("".join(sorted(parts)).encode()).hexdigest()


def leaf_stats(leaves: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Per leaf: sum and sum of absolute values (float64), the tolerance check's figures."""
    return {
        name: [float(np.sum(v, dtype=np.float64)), float(np.sum(np.abs(v), dtype=np.float64))]
        for name, v in leaves.items()
        if np.issubdtype(v.dtype, np.floating)
    }


def isa() -> str:
    """The widest x86 vector extension of this CPU (results may differ between them)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine()
    return "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else platform.machine()


def cpu_identity() -> tuple[str, str]:
    """This CPU as the golden records name it: its vendor ("AuthenticAMD", "GenuineIntel") and
    its vendor, family and model. XLA compiles for the host CPU, and one program's bits differ
    between an AMD and an Intel core with the same vector extensions, and may between models."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine(), platform.machine()
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    vendor = fields.get("vendor_id", platform.machine())
    return vendor, f"{vendor} family {fields.get('cpu family')} model {fields.get('model')}"


def for_this_cpu(records: dict[str, Any]) -> Any | None:
    """The record of this CPU's model, else of its vendor (a record whose model was not noted),
    else None."""
    vendor, model = cpu_identity()
    return records.get(model, records.get(vendor))


def recorded_on_this_cpu(recorded: str) -> bool:
    """Whether a record made on `recorded` (a CPU's model, or only its vendor) counts as made
    on this CPU."""
    return recorded in cpu_identity()


def learner_case(preset: str, overrides: list[str]) -> dict[str, Any]:
    """Train `UPDATES` updates in one compiled chunk; the final state's and metrics' figures."""
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.runner.configs import resolve
    from yahtzee_jax.runner.single_run import make_chunk

    context = make_context(resolve(preset, overrides=overrides))
    state, metrics, failure = make_chunk(context, UPDATES)(init_train_state(context))
    params = named_leaves(state.params)
    # What the learner keeps beside its network, and what the environment keeps (the match's
    # goal and frozen opponent): compared together, whichever of the two holds it.
    extra = named_leaves((state.extra, getattr(state, "task", None)))
    metrics = {name: np.asarray(value) for name, value in metrics.items()}
    return {
        "params_sha256": digest(params),
        "extra_sha256": unnamed_digest(extra),
        "metrics_sha256": digest(metrics),
        "params_stats": leaf_stats(params),
        "metrics": {name: value.tolist() for name, value in sorted(metrics.items())},
        "failure": np.asarray(failure).tolist(),
    }


def agent_case(name: str) -> dict[str, Any]:
    """`AGENT_GAMES` games of a built-in agent under the official rules, seed `AGENT_SEED`."""
    import dataclasses

    from yahtzee_jax.evaluation.records import play_games
    from yahtzee_jax.runner.checkpointing import resolve_agent

    records = play_games(resolve_agent(name, "official"), AGENT_GAMES, AGENT_SEED)
    arrays = {
        field.name: getattr(records, field.name)
        for field in dataclasses.fields(records)
        if isinstance(getattr(records, field.name), np.ndarray)
    }
    return {"records_sha256": digest(arrays), "totals": np.asarray(records.total).tolist()}


def record_all() -> dict[str, Any]:
    """Every case's figures, with the ISA, CPU and JAX version they were recorded on."""
    golden: dict[str, Any] = {"isa": isa(), "jax": jax.__version__, "updates": UPDATES}
    golden["cpu"] = cpu_identity()[1]
    golden["learners"] = {name: learner_case(*case) for name, case in LEARNER_CASES.items()}
    golden["agents"] = {name: agent_case(name) for name in AGENTS}
    return golden


def case_figures(kind: str, name: str) -> dict[str, Any]:
    """One case's figures: `kind` "learners" or "agents", `name` a key of its table."""
    return learner_case(*LEARNER_CASES[name]) if kind == "learners" else agent_case(name)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--json"]:  # kind/name ...: the figures as one JSON line (test_golden)
        cases = [argument.split("/", 1) for argument in sys.argv[2:]]
        print(json.dumps({f"{kind}/{name}": case_figures(kind, name) for kind, name in cases}))
    elif "--record-fast-compile" in sys.argv:
        import os

        # Before the first computation starts JAX's backend.
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}"
        golden = json.loads(GOLDEN_PATH.read_text())
        assert golden["isa"] == isa() and golden["jax"] == jax.__version__, "record on the ISA"
        # Digests by CPU model: this model's are added or replaced, the others' kept (with
        # other flags, all of them are replaced).
        fast = golden.get("fast_compile", {})
        by_cpu = fast.get("learners", {}) if fast.get("flags") == FAST_COMPILE_FLAGS else {}
        by_cpu[cpu_identity()[1]] = {
            name: {part: figures[part] for part in DIGESTS}
            for name in FAST_CASES
            for figures in [learner_case(*LEARNER_CASES[name])]
        }
        golden["fast_compile"] = {"flags": FAST_COMPILE_FLAGS, "learners": by_cpu}
        GOLDEN_PATH.write_text(json.dumps(golden, indent=1) + "\n")
        print(f"added the fast-compile digests of {cpu_identity()[1]} to {GOLDEN_PATH}")
    elif "--record" in sys.argv:
        GOLDEN_PATH.parent.mkdir(exist_ok=True)
        GOLDEN_PATH.write_text(json.dumps(record_all(), indent=1) + "\n")
        print(f"wrote {GOLDEN_PATH}")
