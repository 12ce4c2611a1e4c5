"""The uniformly random legal policy and the `bench env` command."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents import make_random_agent
from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.commands.cli import main
from yahtzee_jax.game import NUM_KEEP_ACTIONS, OFFICIAL, Category, State, legal_action_mask


def test_uniform_legal_action_is_exactly_uniform_over_a_bit_cycle() -> None:
    """Over a full cycle of bits every legal box is drawn equally often; illegal ones never."""
    state = State.empty(
        OFFICIAL,
        roll_index=jnp.int32(2),
        filled=jnp.zeros(13, bool).at[jnp.array([0, 3, 8, 12])].set(True),
    )
    mask = legal_action_mask(state, OFFICIAL)
    bits = jnp.arange(9 * 7 * 32, dtype=jnp.uint32)  # a multiple of the 9 legal boxes
    actions = np.asarray(jax.vmap(lambda b: uniform_legal_action(mask, b))(bits))
    counts = np.bincount(actions, minlength=45)
    legal = np.flatnonzero(np.asarray(mask))
    assert set(np.flatnonzero(counts)) == set(legal.tolist())
    assert (counts[legal] == len(bits) // 9).all()


def test_uniform_legal_action_covers_all_keeps() -> None:
    """At a keep decision the 32 keep actions are drawn uniformly and no box is."""
    mask = legal_action_mask(State.empty(OFFICIAL), OFFICIAL)
    actions = np.asarray(
        jax.vmap(lambda b: uniform_legal_action(mask, b))(jnp.arange(320, dtype=jnp.uint32))
    )
    assert (np.bincount(actions, minlength=45)[:NUM_KEEP_ACTIONS] == 10).all()


def test_random_agent_only_plays_legal_boxes_under_forced_joker() -> None:
    """Forced Joker with threes open: the random agent can only score Threes."""
    state = State.empty(
        OFFICIAL,
        dice=jnp.int32([3, 3, 3, 3, 3]),
        roll_index=jnp.int32(2),
        filled=jnp.zeros(13, bool).at[Category.YAHTZEE].set(True),
        scores=jnp.zeros(13, jnp.int32).at[Category.YAHTZEE].set(50),
    )
    agent = make_random_agent("official")
    keys = jax.random.split(jax.random.key(0), 64)
    actions = jax.vmap(lambda k: agent.act(agent.params, state, k))(keys)
    assert (np.asarray(actions) == NUM_KEEP_ACTIONS + Category.THREES).all()
    # An equal act (jit keys its cache on equal static arguments): a new agent reuses the program.
    again = make_random_agent("official").act
    assert again == agent.act and hash(again) == hash(agent.act)


def test_bench_env_command_runs_and_writes_json(tmp_path, capsys) -> None:
    """`bench env` on tiny batches prints the table and writes the JSON it promises."""
    out = tmp_path / "env.json"
    code = main(["bench", "env", "--batch-sizes", "1,8", "--seconds", "0.05", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "plain-Python reference" in printed and "best:" in printed
    result = json.loads(out.read_text())
    assert [row["batch_size"] for row in result["engine"]] == [1, 8]
    assert all(row["games_per_second"] > 0 for row in result["engine"])


def test_bench_env_rejects_bad_batch_size(capsys) -> None:
    """A zero batch size is a one-line error with exit status 2."""
    assert main(["bench", "env", "--batch-sizes", "0"]) == 2
    assert "batch-sizes" in capsys.readouterr().err
