"""The learned target-seeker: a network fit to the target-seeker's two rows of every state, then
played by the target-seeker's rule with no solver table read (issue 63's learned match player).

Teacher: the solver's target tables, the new match player's own pieces. For each solved
turn-start state s the network learns T_s(d) (the best chance of at least d more points) and
E_s(d) (the optimal agent's), d < `ROW_BINS`, by least squares on the rows (the target-seeker's
chance to win is linear in them). At play the network is evaluated once on every state and its
rows are laid out as the solver's tables are (`solver.target_layout`: structure from the rules
alone, no solved number), so the target-seeker's compiled match program plays them unchanged:
`learned_seeker_agent`. The tie-break by points reads the network's own mean of E's row.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.target_seeker import SeekerPolicy
from yahtzee_jax.errors import UserError
from yahtzee_jax.files import write_json, write_whole
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.networks.target_rows import ROW_BINS, TargetRowsNet, state_features, survival
from yahtzee_jax.solver.seeker_policy import seeker_tables, target_seeker_policy
from yahtzee_jax.solver.states import upper_cap
from yahtzee_jax.solver.target_layout import TargetLayout, target_layout


@dataclasses.dataclass(frozen=True)
class RowsFit:
    """The fit's hyperparameters (a frozen record of scalars, as every learner's config)."""

    hidden_size: int = 512
    layers: int = 3
    lr: float = 1e-3
    batch_size: int = 1024
    epochs: int = 8
    # The share of states kept out of training, to measure the fit on. Play reads the rows of
    # every state, so a fit to be played may keep none (0): its curve is then measured on a
    # fixed sample of a twentieth of the (trained) states.
    holdout: float = 0.05
    # Draw a state with weight (its turn's states)^-turn_balance, a turn being its boxes filled:
    # 0 draws every state alike, which gives the middle turns' tens of thousands of states
    # nearly all the steps and the last turns' few hundred almost none; 1 draws every turn
    # alike (each is played once a game).
    turn_balance: float = 0.0
    # The logits' scale, for the sharp rows of late cards: 5 and 20 fit the seven-box game's
    # rows worse than 1 at the same learning rate (0.033 and 0.080 against 0.0073 rms).
    logit_scale: float = 1.0
    seed: int = 0

    def network(self) -> TargetRowsNet:
        """The network of this fit."""
        return TargetRowsNet(self.hidden_size, self.layers, logit_scale=self.logit_scale)


def row_owners(layout: TargetLayout) -> np.ndarray:
    """int64[N, 3]: one (mask, upper, flag) for each distinct row of the layout (its copies
    share it), in the rows' order."""
    states = np.argwhere(layout.rows >= 0)
    offsets = layout.rows[tuple(states.T)]
    _, first = np.unique(offsets, return_index=True)
    return states[first]


def teacher_rows(
    target_flat: np.ndarray, expected_flat: np.ndarray, layout: TargetLayout, states: np.ndarray
) -> np.ndarray:
    """float32[N, 2, ROW_BINS]: the T and E rows of `states` from the flat tables, 0 past a
    row's end."""
    start, length = layout.rows[tuple(states.T)], layout.lengths[tuple(states.T)]
    d = np.arange(ROW_BINS)
    out = np.zeros((len(states), 2, ROW_BINS), np.float32)
    for low in range(0, len(states), 50_000):  # index arrays of 50,000 rows at a time
        part = slice(low, low + 50_000)
        index = start[part, None] + np.minimum(d, length[part, None] - 1)
        inside = d < length[part, None]
        for head, flat in enumerate((target_flat, expected_flat)):
            out[part, head] = np.where(inside, flat[index], 0.0)
    return out


def inputs_of(states: np.ndarray, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """The network's inputs of (mask, upper, flag) rows [n, 3]: features [n, F] and the rows'
    lengths [n] (the most points to come + 1, from the rules: `solver.target_layout`)."""
    states = np.asarray(states).reshape(-1, 3)
    x = state_features(
        jnp.asarray(states[:, 0]),
        jnp.asarray(states[:, 1]),
        jnp.asarray(states[:, 2]),
        rules.num_boxes,
        upper_cap(rules),
    )
    lengths = target_layout(rules).lengths[tuple(states.T)]
    return np.asarray(x), np.minimum(lengths, ROW_BINS).astype(np.int32)


@functools.lru_cache(maxsize=4)
def network_rows(net: TargetRowsNet) -> Callable[[Any, jax.Array, jax.Array], jax.Array]:
    """The compiled (params, features [n, F], lengths [n]) -> both rows [n, 2, ROW_BINS]."""
    return jax.jit(lambda params, x, n: survival(net.apply({"params": params}, x, n)))


def rows_loss(
    params: Any, net: TargetRowsNet, x: jax.Array, lengths: jax.Array, rows: jax.Array
) -> jax.Array:
    """The squared error of both predicted rows, summed over d, averaged over states and heads."""
    error = survival(net.apply({"params": params}, x, lengths)) - rows
    return jnp.mean(jnp.sum(jnp.square(error), axis=-1))


def predicted_rows(
    params: Any, net: TargetRowsNet, inputs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """float32[n, 2, ROW_BINS]: the network's rows of inputs (features, lengths), 20,000 at a
    time."""
    x, lengths = inputs
    apply = network_rows(net)
    parts = [
        np.asarray(apply(params, x[low : low + 20_000], lengths[low : low + 20_000]))
        for low in range(0, len(x), 20_000)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, 2, ROW_BINS), np.float32)


def row_errors(
    params: Any,
    net: TargetRowsNet,
    inputs: tuple[np.ndarray, np.ndarray],
    rows: np.ndarray,
    turns: np.ndarray,
) -> dict[str, float]:
    """Each head's root-mean-square and largest error over the entries of `rows`, and its
    root-mean-square in the worst turn (`turns`: each row's boxes filled)."""
    return prediction_errors(predicted_rows(params, net, inputs), rows, turns)


def prediction_errors(
    predicted: np.ndarray, rows: np.ndarray, turns: np.ndarray
) -> dict[str, float]:
    """`row_errors` of rows already predicted [n, 2, ROW_BINS]."""
    error = predicted - rows
    errors = {}
    for head, name in enumerate(("target", "expected")):
        errors[f"{name}_rms"] = float(np.sqrt(np.mean(error[:, head] ** 2)))
        errors[f"{name}_max"] = float(np.abs(error[:, head]).max())
        by_turn = [np.sqrt(np.mean(error[turns == t, head] ** 2)) for t in np.unique(turns)]
        errors[f"{name}_worst_turn_rms"] = float(max(by_turn))
    return errors


def fit_rows(
    fit: RowsFit,
    inputs: tuple[np.ndarray, np.ndarray],
    rows: np.ndarray,
    turns: np.ndarray,
    report: Callable[[dict[str, Any]], None] = lambda entry: None,
    progress: pathlib.Path | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Fit the network to rows [N, 2, ROW_BINS] of `inputs` (features [N, F], lengths [N]),
    the states' boxes filled `turns` [N]: (params, the curve: each epoch's training loss and
    held-out errors, or with `fit.holdout` 0 a training sample's, passed to `report` as they
    come).

    With `progress`, each finished epoch's parameters, optimizer state and curve are written
    there whole, and a fit that finds the file continues after its last epoch: every epoch
    draws its batches from its own seed, so an interrupted fit resumed ends with the
    parameters of the fit run whole."""
    x, lengths = inputs
    key = jax.random.key(fit.seed)
    order = np.random.default_rng(fit.seed).permutation(len(x))
    held = order[: int(fit.holdout * len(x))]
    train = order[len(held) :]
    measured = held if len(held) else order[: max(1, len(x) // 20)]
    net = fit.network()
    params = net.init(key, x[:1], lengths[:1])["params"]
    steps = fit.epochs * (len(train) // fit.batch_size)
    optimizer = optax.adam(optax.cosine_decay_schedule(fit.lr, steps, alpha=0.02))
    opt_state = optimizer.init(params)
    curve: list[dict[str, Any]] = []
    if progress is not None and progress.exists():
        params, opt_state, curve = read_progress(progress, fit, (params, opt_state))

    @jax.jit
    def step(params: Any, opt_state: Any, xb: jax.Array, nb: jax.Array, rb: jax.Array) -> tuple:
        loss, grads = jax.value_and_grad(rows_loss)(params, net, xb, nb, rb)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    # seconds count on from the epochs fit before a resume
    started = time.perf_counter() - (curve[-1]["seconds"] if curve else 0.0)
    for epoch in range(len(curve), fit.epochs):
        losses = []
        rng = np.random.default_rng(fit.seed + epoch)
        for batch in _batches(train, fit.batch_size, rng, turns, fit.turn_balance):
            params, opt_state, loss = step(params, opt_state, x[batch], lengths[batch], rows[batch])
            losses.append(loss)
        entry = {
            "epoch": epoch + 1,
            "train_loss": float(np.mean(jax.device_get(losses))),
            "seconds": time.perf_counter() - started,
            **row_errors(
                params, net, (x[measured], lengths[measured]), rows[measured], turns[measured]
            ),
        }
        curve.append(entry)
        if progress is not None:
            write_progress(progress, fit, (params, opt_state), curve)
        report(entry)
    return params, curve


def write_progress(path: pathlib.Path, fit: RowsFit, state: tuple, curve: list[dict]) -> None:
    """Write a fit's (params, optimizer state) after an epoch and its curve so far, whole."""
    record = {"fit": dataclasses.asdict(fit), "curve": curve}
    payload = {"record": json.dumps(record), "state": flax.serialization.to_state_dict(state)}
    write_whole(path, flax.serialization.msgpack_serialize(payload))


def read_progress(path: pathlib.Path, fit: RowsFit, template: tuple) -> tuple[Any, Any, list]:
    """(params, optimizer state, curve) of an unfinished fit, refused in one line when it was
    begun with other hyperparameters or is not a fit's progress."""
    try:
        payload = flax.serialization.msgpack_restore(path.read_bytes())
        record = json.loads(payload["record"])
        begun = RowsFit(**record["fit"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path} is not an unfinished fit's progress: {error}") from None
    if begun != fit:
        begun_fields = dataclasses.asdict(begun)  # a field the file lacks takes its default
        changed = sorted(k for k, v in dataclasses.asdict(fit).items() if begun_fields[k] != v)
        raise UserError(
            f"{path} holds a fit begun with other settings ({', '.join(changed)}): "
            "resume it with the same options or choose another --out"
        )
    params, opt_state = flax.serialization.from_state_dict(template, payload["state"])
    return params, opt_state, record["curve"]


def _batches(
    indices: np.ndarray,
    size: int,
    rng: np.random.Generator,
    turns: np.ndarray,
    balance: float,
) -> Iterator[np.ndarray]:
    """Whole batches of `indices` (the last partial one dropped): a shuffle (`balance` 0), or as
    many draws, each index with weight (the states of its turn)^-balance (`turns`: each
    index's turn)."""
    if balance == 0:
        shuffled = rng.permutation(indices)
    else:
        counts = np.bincount(turns[indices]).astype(np.float64)
        weights = counts[turns[indices]] ** -balance
        shuffled = rng.choice(indices, len(indices), p=weights / weights.sum())
    for low in range(0, len(shuffled) - size + 1, size):
        yield np.sort(shuffled[low : low + size])


def learned_tables(params: Any, fit: RowsFit, rules: Rules) -> tuple[np.ndarray, ...]:
    """The network's T and E rows of every state in the target tables' layout (float32 flat
    tables) and its value table (the mean of E's row: the points it expects to come; 0 at an
    unreachable state, as `seeker_tables` reads the solver's NaN there)."""
    layout = target_layout(rules)
    owners = row_owners(layout)
    net = fit.network()
    target = np.zeros(layout.size, np.float32)
    expected = np.zeros(layout.size, np.float32)
    d = np.arange(ROW_BINS)
    for low in range(0, len(owners), 20_000):
        part = owners[low : low + 20_000]
        rows = predicted_rows(params, net, inputs_of(part, rules))
        start, length = layout.rows[tuple(part.T)], layout.lengths[tuple(part.T)]
        inside = d < np.minimum(length, ROW_BINS)[:, None]
        where = (start[:, None] + d)[inside]
        target[where], expected[where] = rows[:, 0][inside], rows[:, 1][inside]
    return target, expected, expected_means(expected, layout)


def expected_means(expected: np.ndarray, layout: TargetLayout) -> np.ndarray:
    """float64[masks, totals, 2]: sum over d >= 1 of E's row, the mean points to come."""
    starts = np.unique(layout.rows[layout.rows >= 0])  # the rows lie back to back
    sums = np.add.reduceat(expected.astype(np.float64), starts)
    means = np.zeros(layout.rows.shape)
    reachable = layout.rows >= 0
    means[reachable] = sums[np.searchsorted(starts, layout.rows[reachable])] - 1.0  # E(0) = 1
    return means


def save_fit(folder: str | os.PathLike, fit: RowsFit, params: Any, summary: dict) -> None:
    """Write a fit: its network's parameters (params.msgpack) and `summary` with the
    hyperparameters (summary.json), each file whole or not at all."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_whole(folder / "params.msgpack", flax.serialization.to_bytes(params))
    write_json(folder / "summary.json", summary | {"fit": dataclasses.asdict(fit)})


def load_fit(folder: str | os.PathLike) -> tuple[RowsFit, Any, dict]:
    """(the hyperparameters, the network's parameters, the summary) of a fit's folder."""
    folder = pathlib.Path(folder)
    try:
        summary = json.loads((folder / "summary.json").read_text())
        fit = RowsFit(**summary["fit"])
        raw = (folder / "params.msgpack").read_bytes()
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{folder} holds no learned seeker's fit: {error}") from None
    x = jnp.zeros((1, summary["features"]), jnp.float32)
    template = fit.network().init(jax.random.key(0), x, jnp.ones(1, jnp.int32))["params"]
    return fit, flax.serialization.from_bytes(template, raw), summary


def is_fit_folder(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder `save_fit` wrote (its network's parameters are there)."""
    return (pathlib.Path(path) / "params.msgpack").is_file()


def load_learned_seeker(folder: str | os.PathLike) -> tuple[Agent, int]:
    """The learned seeker of a fit's folder, playing the rules it was fit to, and its epochs
    (what `match`, `tournament` and `play --against` load for a folder `save_fit` wrote)."""
    fit, params, summary = load_fit(folder)
    agent = learned_seeker_agent(params, fit, get_rules(summary["rules"]))
    name = f"learned-seeker:{pathlib.Path(folder).name}"
    return dataclasses.replace(agent, name=name), fit.epochs


def learned_seeker_agent(params: Any, fit: RowsFit, rules: Rules) -> Agent:
    """The target-seeker's rule (hindsight) over the network's rows: a match player that reads
    no solver table."""
    target, expected, value = learned_tables(params, fit, rules)
    tables = seeker_tables(rules, target, expected, value, 1.0)
    policy = SeekerPolicy(target_seeker_policy(rules, mixed=False), rules)
    return Agent("learned-seeker", policy, tables, rules, reads_others=True)
