"""Regression cases of what the fuzzers found (issue 31), and `--resume --set` semantics.

Each case of `FOUND` ended in a traceback or was silently accepted before issue 31; each is now
one line on stderr and exit 2. The run-directory cases are a damaged line in the middle of
`evals.jsonl` and a damaged record in the middle of an events file.
"""

from __future__ import annotations

import pytest
from fuzzing import check_one_line, invoke, make_finished_run, stop_long_work

from yahtzee_jax.runner.configs import read_yaml
from yahtzee_jax.runner.runlog import events_files, read_evals, read_scalars

ADVISE = ["advise", "--dice", "1,2,3,3,5"]
# name: (argv, what its one line says)
FOUND = {
    "evaluate seed beyond 64 bits": (
        ["evaluate", "random", "--seed", str(2**64)],
        "invalid seed",
    ),
    "train seed beyond 64 bits": (["train", "--set", f"train.seed={2**64}"], "fit in 64 bits"),
    "train negative seed": (["train", "--set", "train.seed=-1"], "must be in 0..4294967295"),
    "population seeds beyond 32 bits": (
        ["train", "--population-seeds", f"0,{2**40}"],
        "must be in 0..4294967295",
    ),
    "population seed range filling the memory": (
        ["train", "--population-seeds", "0-4000000000"],
        "more than 1024 members",
    ),
    "train updates beyond int32": (
        ["train", "--set", f"train.total_games={2**40}", "--set", "train.games_per_update=1"],
        "more than 2147483647 updates",
    ),
    "evaluate games beyond int32": (
        ["evaluate", "random", "--games", str(2**31)],
        "at most 2147483647",
    ),
    "advise negative --top": ([*ADVISE, "--top", "-1"], "--top must be >= 0"),
    "advise box named twice": ([*ADVISE, "--card", "ones=3,ones=2"], "named twice"),
    "advise box named twice, two spellings": (
        [*ADVISE, "--card", "full-house=25,full_house=25"],
        "named twice",
    ),
    "advise impossible points": ([*ADVISE, "--card", "ones=7"], "cannot hold 7 points"),
    "advise points beyond int32": (
        [*ADVISE, "--card", f"chance={2**64}"],
        "cannot hold",
    ),
    "advise bonuses without a filled box": (
        [*ADVISE, "--yahtzee-bonuses", "3"],
        "at most one bonus per filled box",
    ),
    "resume with a preset": (["train", "--resume", "--preset", "quick"], "drop --preset"),
    "bench env for ever": (["bench", "env", "--seconds", "inf"], "--seconds must be a positive"),
    "experiment with 2^31 seeds": (
        ["experiment", "entropy", "--seeds", str(2**31), "--no-progress", "--out", "study"],
        "at most 1024",
    ),
    "match games beyond int32": (["match", "win-seeker", "--games", str(2**40)], "at most"),
    # Found by a review session (2026-12-01), each once a traceback, a misleading line or exit 0:
    "match a built-in agent that is no match player": (
        ["match", "greedy1", "--games", "10"],
        "'greedy1': built in, but not a match player; give a run or checkpoint folder or optimal",
    ),
    # Found in review (2026-12-02), each a misleading line, a silent no-op or a traceback:
    "train a folder as its config": (["train", "--config", "."], "a folder, not a config file"),
    "advise negative Yahtzee bonuses": (
        [*ADVISE, "--yahtzee-bonuses", "-1"],
        "--yahtzee-bonuses must be >= 0, got -1",
    ),
    "play common dice alone": (["play", "--common-dice"], "--common-dice goes with --against"),
    "tournament games-for twice": (
        ["tournament", "random", "greedy1", "--games-for", "random=5", "--games-for", "random=7"],
        "--games-for names random more than once",
    ),
    "compare a file with itself": (
        ["compare", "a.json", "--against", "./a.json"],
        "a.json is on both sides",
    ),
    # Found in review (2026-12-02): refused only once its tables were loaded (minutes at first).
    "match the win-seeker with three players": (
        ["match", "win-seeker", "--players", "3", "--games", "4"],
        "win-seeker plays 2-player matches only, not --players 3",
    ),
    "match a name that is nothing": (
        ["match", "nosuch", "--games", "10"],
        "'nosuch': no run folder",
    ),
    "bench train zero minibatches": (
        ["bench", "train", "--minibatches", "0"],
        "--minibatches 0 must be a positive divisor",
    ),
    "bench train a population of none": (["bench", "train", "--population", "0"], "must be >= 1"),
    "population seeds beside --set train.seed": (
        ["train", "--population-seeds", "0,1", "--set", "train.seed=5"],
        "--set train.seed=5 and --population-seeds: give the seeds once",
    ),
    "population seed range going down": (
        ["train", "--population-seeds", "3-1"],
        "the range 3-1 goes down",
    ),
    "tournament more games for one agent than for all": (
        ["tournament", "optimal", "greedy1", "--games", "10", "--games-for", "optimal=50"],
        "--games-for optimal=50: more than --games 10",
    ),
    "experiment --list with a name": (["experiment", "--list", "nosuch"], "drop 'nosuch'"),
    "bench env batch sizes not numbers": (
        ["bench", "env", "--batch-sizes", "abc"],
        "--batch-sizes 'abc' must be comma-separated positive integers",
    ),
}


@pytest.mark.parametrize("case", FOUND, ids=list(FOUND))
def test_found_by_fuzzing_is_one_line_and_exit_2(case, tmp_path, monkeypatch):
    """Each input the fuzzers found: one line naming the problem, exit status 2."""
    stop_long_work(monkeypatch)
    monkeypatch.chdir(tmp_path)
    argv, expected = FOUND[case]
    status, stderr = invoke(argv)
    check_one_line(status, stderr, allowed=(2,))
    assert expected in stderr, stderr


@pytest.mark.parametrize(
    "argv",
    [
        [*ADVISE, "--cache-dir", "{file}"],
        ["evaluate", "optimal", "--games", "8", "--cache-dir", "{file}"],
    ],
    ids=["advise", "evaluate"],
)
def test_a_file_given_as_the_cache_folder_is_named_in_one_line(argv, tmp_path, monkeypatch):
    """--cache-dir naming a file: one line naming it, exit 2; it said the table in it was
    damaged and it would make it again, then failed to write it (found by a review session)."""
    blocker = tmp_path / "a-file.json"
    blocker.write_text("{}")
    stop_long_work(monkeypatch)
    status, stderr = invoke([arg.format(file=blocker) for arg in argv])
    check_one_line(status, stderr, allowed=(2,))
    assert stderr.strip().endswith(f"error: a file where a folder must be: {blocker}"), stderr
    assert blocker.read_text() == "{}"


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "optimal", "--games", "10", "--batch-size", "0", "--no-plots", "--out"],
        ["tournament", "optimal", "greedy1", "--games", "10", "--batch-size", "0", "--out"],
    ],
    ids=["evaluate", "tournament"],
)
def test_refused_input_leaves_no_report_folder(argv, tmp_path, monkeypatch):
    """A batch size of 0 is refused before anything is made: no empty folder is left where the
    report would have gone (found by a review session), and with an empty solver cache the
    refusal comes before the optimal agent's table is solved (minutes on a fresh machine)."""
    stop_long_work(monkeypatch)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path / "empty-cache"))
    status, stderr = invoke([*argv, str(tmp_path / "report" / "here")])
    check_one_line(status, stderr, allowed=(2,))
    assert "batch size must be at least 1" in stderr and list(tmp_path.iterdir()) == []


@pytest.fixture
def finished_run(tmp_path):
    """A finished tiny run (built without training: `fuzzing.make_finished_run`)."""
    return make_finished_run(tmp_path / "run")


def _resume(run_dir, *overrides: str) -> tuple[int, str]:
    argv = ["train", "--resume", "--out", str(run_dir), "--no-progress"]
    return invoke(argv + [item for override in overrides for item in ("--set", override)])


# name: argv of a command asked to write a result file ({file}) or a report folder ({folder})
OUTPUTS = {
    "evaluate --json": ["evaluate", "greedy1", "--games", "8", "--json", "{file}"],
    "evaluate's report": ["evaluate", "greedy1", "--games", "8", "--out", "{folder}"],
    "the target agent's --json": ["evaluate", "target", "--target", "250", "--json", "{file}"],
    "single turns' --json": ["evaluate", "greedy1", "--task", "single-turn", "--json", "{file}"],
    "match --out": ["match", "optimal", "--opponent", "greedy1", "--out", "{file}"],
    "tournament --out": ["tournament", "greedy1", "greedy2", "--out", "{folder}"],
    "solve --ceiling --out": ["solve", "--rules", "yacht", "--ceiling", "--out", "{file}"],
    "bench env --json": ["bench", "env", "--json", "{file}"],
    "bench train --json": ["bench", "train", "--preset", "quick", "--json", "{file}"],
    "bench scaling --json": ["bench", "scaling", "--preset", "quick", "--json", "{file}"],
    "bench solve --json": ["bench", "solve", "--rules", "yacht", "--json", "{file}"],
    "bench evaluate --json": ["bench", "evaluate", "--agents", "greedy1", "--json", "{file}"],
}


@pytest.mark.parametrize("name", OUTPUTS)
def test_an_output_that_cannot_be_written_is_refused_before_the_work(name, tmp_path, monkeypatch):
    """A result file under a regular file (where a folder must be) is refused in one line,
    naming that file, before any game, solve or timing starts (`stop_long_work`: reaching the
    work would exit 0); before, the work ran to its end and its result was lost."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    where = {"file": str(blocker / "out" / "result.json"), "folder": str(blocker / "report")}
    stop_long_work(monkeypatch)
    status, stderr = invoke([arg.format(**where) for arg in OUTPUTS[name]])
    check_one_line(status, stderr, allowed=(2,))
    assert stderr.strip().endswith(f"error: a file where a folder must be: {blocker}"), stderr


def test_damaged_middle_line_of_evals_is_skipped_in_one_line(finished_run):
    """A garbage line between the two rows of evals.jsonl (an editor, a sync tool): the resume
    works, says in one line which line it skipped, and rewrites the file with the two rows."""
    path = finished_run / "evals.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(f'{first}\n{{"update": 1\n{second}\n')
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(0,))
    assert "skipped 1 damaged line(s)" in stderr and "(line 2)" in stderr, stderr
    assert [row["update"] for row in read_evals(path)] == [10, 20]
    assert path.read_text().count("\n") == 2


def test_damaged_record_in_an_events_file_is_cut_in_one_line(finished_run):
    """Bytes overwritten in the middle of the events file: the resume keeps the records before
    them, drops the rest of the file (its checksums no longer hold) and says so in one line."""
    [events] = events_files(finished_run)
    content = bytearray(events.read_bytes())
    middle = len(content) // 2
    content[middle : middle + 8] = b"\xff" * 8
    events.write_bytes(bytes(content))
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(0,))
    assert "dropped the damaged end" in stderr, stderr
    kept = read_scalars(finished_run)["loss/total"]
    assert 0 < len(kept) < 20  # the scalars before the damage survive


def test_resume_applies_set_on_top_of_the_saved_config(finished_run, monkeypatch, capsys):
    """`--resume --set` changes only what it names: optim.lr and train.eval_games change, the
    saved run's other values (its 16-wide network, 4 games per update) stay, and the new
    config is the run's config from now on; a longer train.total_games extends the run."""
    status, stderr = _resume(finished_run, "optim.lr=0.0003", "train.eval_games=9")
    check_one_line(status, stderr, allowed=(0,))
    saved = read_yaml(finished_run / "config.yaml")
    assert saved["optim"]["lr"] == 0.0003 and saved["train"]["eval_games"] == 9
    assert saved["network"]["hidden_size"] == 16 and saved["train"]["games_per_update"] == 4
    stop_long_work(monkeypatch)  # a longer run would now compile its chunk and train on
    status, stderr = _resume(finished_run, "train.total_games=160")
    check_one_line(status, stderr, allowed=(0,))
    assert read_yaml(finished_run / "config.yaml")["train"]["total_games"] == 160


def test_resume_refuses_only_what_a_resumed_run_keeps_each_named_once(finished_run):
    """Changing the network width, the learner and the seed (the seed twice) is refused in
    one line naming each of the three once, and nothing else; the saved config is unchanged."""
    before = (finished_run / "config.yaml").read_text()
    status, stderr = _resume(
        finished_run,
        "network.hidden_size=32",
        "train.seed=3",
        "train.seed=4",
        "algo.name=ppo",
        "optim.lr=0.001",
    )
    check_one_line(status, stderr, allowed=(2,))
    named = stderr.split("a different ")[1].split(":")[0].split(", ")
    assert sorted(named) == ["algo.name", "network.hidden_size", "train.seed"], stderr
    assert (finished_run / "config.yaml").read_text() == before


def test_damaged_metric_of_the_best_checkpoint_is_moved_aside_in_one_line(finished_run):
    """best/20's metric file cut to 13 bytes (found by the run-directory fuzzer: Orbax reads
    every best checkpoint's metric when it opens the directory, and raised JSONDecodeError):
    the resume moves best/20 into damaged/ with one line and finishes; checkpoints/ is
    untouched."""
    metric = finished_run / "best" / "20" / "metrics" / "metrics"
    metric.write_bytes(metric.read_bytes()[:13])
    latest = sorted(path.name for path in (finished_run / "checkpoints").iterdir())
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(0,))
    assert "skipped damaged checkpoint" in stderr and "best/20" in stderr, stderr
    assert (finished_run / "damaged" / "best-20").is_dir()
    assert sorted(path.name for path in (finished_run / "checkpoints").iterdir()) == latest


def test_damaged_checkpoint_metadata_is_not_an_error(finished_run):
    """checkpoints/20's _CHECKPOINT_METADATA cut short: a restore does without it, so the
    resume finishes silently (Orbax logged two ERROR lines for it before)."""
    metadata = finished_run / "checkpoints" / "20" / "_CHECKPOINT_METADATA"
    metadata.write_bytes(metadata.read_bytes()[:13])
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(0,))
    assert stderr.strip() == "", stderr


def test_a_folder_in_place_of_config_yaml_is_refused_in_one_line(finished_run):
    """config.yaml replaced by a folder (found by the run-directory fuzzer: the resume said it
    would write the checkpoint's config there again, then failed writing it, two lines): the
    resume refuses in one line, exit 2, before writing anything, and the folder stays."""
    path = finished_run / "config.yaml"
    path.unlink()
    path.mkdir()
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(2,))
    assert "config.yaml is not a file (move it away)" in stderr, stderr
    assert path.is_dir()


def test_damaged_config_yaml_gives_way_to_the_checkpoints_config(finished_run):
    """config.yaml cut after the lines of its first 300 bytes (found by the run-directory
    fuzzer: the cut file still parsed, and the resume trained the default 1,000,000 games,
    taking its missing train section's defaults): the resume says
    in one line that it uses the config stored in the newest checkpoint, finishes at once (the
    run is at its end), and config.yaml reads as that config again."""
    path = finished_run / "config.yaml"
    original = read_yaml(path)
    text = path.read_text()
    path.write_text(text[: text.rindex("\n", 0, 300) + 1])  # whole lines: it still parses
    assert read_yaml(path) != original  # damaged, yet YAML
    status, stderr = _resume(finished_run)
    check_one_line(status, stderr, allowed=(0,))
    assert "missing, damaged or edited" in stderr, stderr
    assert read_yaml(path) == original


def test_sigterm_ends_a_command_as_ctrl_c_does(monkeypatch, capsys) -> None:
    """SIGTERM (a scheduler, `timeout`) during a command ends it in one line with status 130,
    files being written cleaned up on the way out, and the handler is put back after: it
    killed every command but `train` without a word (found by a review session)."""
    import os
    import signal
    import time

    from yahtzee_jax.commands import cli, solve

    def terminated(args) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        return 0

    monkeypatch.setattr(solve, "run_solve", terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["solve", "--rules", "plain"]) == 130
    assert capsys.readouterr().err == "yahtzee-jax solve: interrupted\n"
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_interrupt_in_a_finalizer_is_delivered_again_not_lost(monkeypatch, capsys) -> None:
    """Found in review: Ctrl-C landing inside JAX's garbage-collector callback was printed as
    an ignored KeyboardInterrupt and lost, and the match played on to its end (exit 0). The
    handler sends such a signal again a moment later; anywhere else it raises at once. And a
    Ctrl-C while the command's module imports JAX is one line and 130, not a traceback."""
    import gc
    import signal
    import sys
    import time

    from yahtzee_jax.commands import cli

    again = []
    monkeypatch.setattr(cli, "_deliver_again", again.append)
    monkeypatch.setattr(cli, "REDELIVER_S", 0.0)

    def collecting(phase: str, info: dict) -> None:
        cli._interrupt(signal.SIGINT, sys._getframe())  # returns: it is not raised here

    class Finalized:
        def __del__(self) -> None:
            cli._interrupt(signal.SIGTERM, sys._getframe())

    gc.callbacks.append(collecting)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(collecting)
    Finalized()  # its __del__ runs here
    deadline = time.monotonic() + 5
    while len(again) < 3 and time.monotonic() < deadline:  # the timers' threads
        time.sleep(0.01)
    assert signal.SIGINT in again and signal.SIGTERM in again
    with pytest.raises(KeyboardInterrupt):
        cli._interrupt(signal.SIGINT, sys._getframe())

    def importing(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", importing)
    assert cli.main(["match", "optimal"]) == 130
    assert capsys.readouterr().err == "yahtzee-jax match: interrupted\n"


def test_out_of_memory_is_one_line_naming_what_to_ask_for_less_of(monkeypatch, capsys) -> None:
    """Found in review: 20,000,000 games in one batch died in a JaxRuntimeError traceback
    (RESOURCE_EXHAUSTED: 85 GB asked of the CPU), 2^31 - 1 native games in NumPy's
    MemoryError. Both are one line and exit 2; any other error is still raised."""
    import jax

    from yahtzee_jax.commands import cli, solve

    errors = [
        jax.errors.JaxRuntimeError(
            "RESOURCE_EXHAUSTED: Out of memory allocating 85680011472 bytes."
        ),
        MemoryError("Unable to allocate 64.0 GiB"),
    ]
    for error in errors:

        def out_of_memory(args, error=error) -> int:
            raise error

        monkeypatch.setattr(solve, "run_solve", out_of_memory)
        assert cli.main(["solve", "--rules", "plain"]) == 2
        said = capsys.readouterr().err
        assert (
            said.startswith("yahtzee-jax solve: error: out of memory (") and said.count("\n") == 1
        )
        assert "smaller --batch-size" in said

    def broken(args) -> int:
        raise jax.errors.JaxRuntimeError("INTERNAL: something else")

    monkeypatch.setattr(solve, "run_solve", broken)
    with pytest.raises(jax.errors.JaxRuntimeError):
        cli.main(["solve", "--rules", "plain"])


def test_games_whose_records_outgrow_the_memory_are_refused_before_play(monkeypatch) -> None:
    """Found in review: `tournament greedy1 random --games 2147483647` grew from 1.9 to 8 GB in
    two seconds on its way to the system's kill (its records: 200 bytes a game, 400 GiB). On
    a machine of 16 GiB: 10 million games (2 GB) are played, 100 million (20 GB) refused in
    one line naming both sizes, and a match's smaller records (8 bytes a player, 24 more)
    allow it 100 million."""
    from yahtzee_jax.errors import UserError
    from yahtzee_jax.evaluation import game_records

    monkeypatch.setattr(game_records, "physical_memory", lambda: 16 * 2**30)
    game_records.check_num_games(10_000_000)
    with pytest.raises(UserError, match=r"100,000,000 games keep about 19 GiB of records; this"):
        game_records.check_num_games(100_000_000)
    game_records.check_num_games(100_000_000, bytes_per_game=8 * 2 + 24)
    monkeypatch.setattr(game_records, "physical_memory", lambda: None)  # not said: not checked
    game_records.check_num_games(2**31 - 1)
