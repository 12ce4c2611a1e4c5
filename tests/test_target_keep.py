"""A target solve keeps its finished layers (`solver.target_keep`): an interrupted solve goes
on from them to the table a solve run whole makes, bit for bit; a damaged keep is said and
solved again from the start; a keep that cannot be written is said and the solve goes on."""

from __future__ import annotations

import numpy as np
import pytest
from positions import seven_box_rules

from yahtzee_jax.files import checksum_path
from yahtzee_jax.solver import target_keep, target_table
from yahtzee_jax.solver.target_table import solve_target_table, target_tables

RULES = seven_box_rules("seven-boxes")
DOWN_TO = 0  # the whole game: its 128 cards in seven layers
SOLVE_PIECE = target_table._solve_piece


def _pieces(filled: int) -> int:
    """How many pieces the solve of a layer runs (the kernel's piece size where it is built)."""
    try:
        kernel = target_table.native.load_kernel(None)
    except target_table.native.NativeError:
        kernel = None
    elements = target_table.KERNEL_PIECE_ELEMENTS if kernel else target_table.PIECE_ELEMENTS
    layout = target_table.target_layout(RULES)
    return len(list(target_table._pieces(RULES, layout, filled, elements)))


def _counted(monkeypatch, stop_after: int | None = None) -> list[int]:
    """Count the pieces solved in this process (one worker); Ctrl-C after `stop_after`."""
    calls = []

    def counted(piece):
        if len(calls) == stop_after:
            raise KeyboardInterrupt
        calls.append(1)
        SOLVE_PIECE(piece)

    monkeypatch.setattr(target_table, "_solve_piece", counted)
    return calls


class InLine:
    """`threading.Thread` as the keeper starts it, run at once in the caller's thread: each
    keep written before the solve goes on (the count a test reads is then the last layer's)."""

    def __init__(self, target, args=(), daemon=None):
        self.target, self.args = target, args

    def start(self) -> None:
        self.target(*self.args)

    def is_alive(self) -> bool:
        return False

    def join(self) -> None:
        pass


@pytest.fixture(scope="module")
def whole() -> np.ndarray:
    """The four layers solved in one go, keeping nothing."""
    return solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1)


def test_an_interrupted_solve_goes_on_from_its_kept_layers(whole, tmp_path, monkeypatch, capsys):
    """Ctrl-C as the third layer is solved keeps the two finished (the cards with 6 and 5 of the
    7 boxes filled: the count after the table is 5) and says where; the solve run again says it
    goes on, solves only the pieces of the layers left and makes the whole solve's table."""
    monkeypatch.setattr(target_table, "KEEP_EVERY_S", 1e9)  # kept on the interruption only
    keep = tmp_path / "targets.partial.npy"
    first_two = _pieces(RULES.num_boxes - 1) + _pieces(RULES.num_boxes - 2)
    _counted(monkeypatch, stop_after=first_two)
    with pytest.raises(KeyboardInterrupt):
        solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1, keep_file=keep)
    assert np.load(keep)[-1] == RULES.num_boxes - 2
    said = capsys.readouterr().err
    assert f"layers of {RULES.num_boxes - 2} or more boxes filled are kept in {keep}" in said
    calls = _counted(monkeypatch)
    again = solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1, keep_file=keep)
    assert "going on with the target solve" in capsys.readouterr().err
    assert len(calls) == sum(_pieces(filled) for filled in range(DOWN_TO, RULES.num_boxes - 2))
    np.testing.assert_array_equal(again, whole)


def test_layers_are_kept_as_the_solve_runs_and_a_damaged_keep_is_solved_again(
    whole, tmp_path, monkeypatch, capsys
):
    """Kept at every layer's end but the last (a killed solve loses one layer at most); a keep
    whose bytes differ from its checksum is said, removed and solved from the start."""
    monkeypatch.setattr(target_table, "KEEP_EVERY_S", 0.0)
    monkeypatch.setattr(target_keep.Keeper, "thread", InLine)  # each keep written in turn
    keep = tmp_path / "targets.partial.npy"
    solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1, keep_file=keep)
    assert np.load(keep)[-1] == DOWN_TO + 1  # the last layer is the table itself
    data = bytearray(keep.read_bytes())
    data[200] ^= 1
    keep.write_bytes(bytes(data))
    calls = _counted(monkeypatch)
    again = solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1, keep_file=keep)
    assert "damaged; the solve starts again" in capsys.readouterr().err
    assert len(calls) == sum(_pieces(f) for f in range(DOWN_TO, RULES.num_boxes))
    np.testing.assert_array_equal(again, whole)


def test_a_keep_written_beside_the_solve_holds_its_finished_layers_whole(
    whole, tmp_path, monkeypatch
):
    """Keeps on their own thread while two forked workers solve the next layers: the last
    kept count names layers that are all there, each chance the whole solve's, and nothing of
    the layers below is taken for finished."""
    monkeypatch.setattr(target_table, "KEEP_EVERY_S", 0.0)
    keep = tmp_path / "targets.partial.npy"
    again = solve_target_table(RULES, down_to_filled=DOWN_TO, workers=2, keep_file=keep)
    np.testing.assert_array_equal(again, whole)
    kept = np.load(keep)
    count = int(kept[-1])
    assert DOWN_TO < count < RULES.num_boxes
    layout = target_table.target_layout(RULES)
    for mask in range(1 << RULES.num_boxes):
        finished = bin(mask).count("1") >= count
        for row, length in zip(
            layout.rows[mask].ravel(), layout.lengths[mask].ravel(), strict=True
        ):
            if row >= 0 and finished:
                np.testing.assert_array_equal(kept[row : row + length], whole[row : row + length])
    solved = np.isfinite(kept[:-1])
    np.testing.assert_array_equal(kept[:-1][solved], whole[solved])


def test_a_keep_without_room_is_said_and_the_solve_goes_on(whole, tmp_path, monkeypatch, capsys):
    """Where the folder has no room for the keep and the table after it, one line says so and
    the solve ends with the same table, nothing kept."""
    monkeypatch.setattr(target_table, "KEEP_EVERY_S", 0.0)
    monkeypatch.setattr(target_keep.shutil, "disk_usage", lambda _: type("u", (), {"free": 0}))
    keep = tmp_path / "targets.partial.npy"
    again = solve_target_table(RULES, down_to_filled=DOWN_TO, workers=1, keep_file=keep)
    np.testing.assert_array_equal(again, whole)
    said = capsys.readouterr().err.strip().splitlines()
    assert [line for line in said if "cannot keep" in line] == [
        f"cannot keep the target solve's finished layers in {keep} "
        "(not room for it and the table beside it): the solve goes on without"
    ]
    assert not keep.exists()


def test_the_cached_table_written_removes_its_keep(tmp_path, monkeypatch):
    """`target_tables` hands its solve the keep beside the cache file and removes it (and its
    checksum) once the table is written."""
    handed = []

    def stand_in(rules, policy="target", value_table=None, keep_file=None, **_):
        handed.append(keep_file)
        keep_file.write_bytes(b"kept")
        checksum_path(keep_file).write_text("checksum\n")
        flat = np.zeros(target_table.target_layout(rules).size)
        return flat

    monkeypatch.setattr(target_table, "solve_target_table", stand_in)
    result = target_tables(RULES, cache_dir=tmp_path)
    assert handed == [target_keep.keep_path(result.cache_path)]
    assert result.cache_path.exists() and not list(tmp_path.glob("*partial*"))


def test_the_cost_script_times_a_solve_kept_and_one_not(tmp_path, monkeypatch):
    """`experiments/target_keep_cost.py` at a tiny budget (Yacht's last two layers, a keep after
    every layer but the last): two solves in a pass, the kept one with its one keep's layer,
    the other with none, and the run's record (command, CPU, load)."""
    import json

    from scripts import load_experiment_script

    script = load_experiment_script("target_keep_cost")
    monkeypatch.setattr(target_table, "KEEP_EVERY_S", target_table.KEEP_EVERY_S)  # restored
    out = tmp_path / "cost.json"
    argv = ["--rules", "yacht", "--down-to-filled", "10", "--keep-every-s", "0", "--json", str(out)]
    assert script.main(argv) == 0
    result = json.loads(out.read_text())
    kept, unkept = result["solves"]
    assert kept["keep"] and [keep["layer"] for keep in kept["keeps"]] == [11]
    assert not unkept["keep"] and unkept["keeps"] == []
    assert kept["seconds"] > 0 and unkept["seconds"] > 0
    assert result["machine"]["command"].startswith("python experiments/target_keep_cost.py")
    assert len(result["machine"]["load_average_at_start"]) == 3
