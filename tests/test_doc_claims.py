"""experiments/check_doc_claims.py: the README's prose and the docs agree with the artifacts they
cite and every command they quote parses; and the check fails on a changed number, a machine the
records do not name, an unknown flag or module, and a spec entry that no longer matches (each a
hand-made unit or line, with one thing wrong)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections import Counter

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scripts import EXPERIMENTS

ROOT = EXPERIMENTS.parent


def load_claims():
    """The script as a module (registered first: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(
        "check_doc_claims", EXPERIMENTS / "check_doc_claims.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CLAIMS = load_claims()
PROSE = yaml.safe_load((EXPERIMENTS / "readme_figures.yaml").read_text())["prose"]
SEED2 = "`results/cpu-ppo-b256-seed2/`"


def unit_problems(text: str, page: str = "docs/x.md") -> list[str]:
    """The problems of one hand-made unit of prose, with no spec entries."""
    unit = CLAIMS.Unit(page, 1, text)
    unit.artifacts = CLAIMS.cited(unit)
    report = CLAIMS.Report()
    CLAIMS.check_unit(unit, report, Counter(), Counter())
    return report.problems


def test_the_readme_and_docs_agree_with_their_artifacts() -> None:
    """The real pages: every number beside an artifact is held by it or listed with a reason,
    every machine agrees with its records, every quoted command parses, and the check looks at
    a good share of each kind; a spec entry no page holds (123.45 here) is the one problem."""
    stale = {"page": "README.md", "texts": ["123.45"], "why": "gone"}
    report = CLAIMS.check([*PROSE, stale])
    assert len(report.problems) == 1 and "123.45" in report.problems[0]
    assert report.numbers > 1000 and report.machines > 50 and report.commands > 300


def test_a_number_the_artifact_holds_passes_and_a_changed_one_fails() -> None:
    """cpu-ppo seed 2's summary holds 246.37212 (and its wall.txt 7:01.10): 246.37, 7.0 min and
    7 min 1 s pass; 246.47 and 7 min 9 s fail."""
    assert unit_problems(f"Seed 2: 246.37 ± 0.19 in 7.0 min (7 min 1 s), {SEED2}.") == []
    found = unit_problems(f"Seed 2: 246.47 ± 0.19 in 7 min 9 s, {SEED2}.")
    assert len(found) == 2 and "7 min 9 s" in found[0] and "246.47" in found[1]


def test_a_time_in_hours_minutes_and_seconds_is_read_whole() -> None:
    """ppo-253 seed 24's wall.txt holds 1:43:38: "1 h 43 min 38 s" passes as one time (the
    two-unit reading would take "1 h 43 min" and fail), "1 h 43 min 48 s" fails."""
    run = "`results/ppo-253-seed24/`"
    assert CLAIMS.claims("in 1 h 43 min 38 s") == [("1 h 43 min 38 s", 6218.0)]
    assert unit_problems(f"It took 1 h 43 min 38 s, {run}.") == []
    found = unit_problems(f"It took 1 h 43 min 48 s, {run}.")
    assert len(found) == 1 and "1 h 43 min 48 s" in found[0]


def test_seeds_dates_and_code_are_not_claims() -> None:
    """A seed number, a date, a clock time and a number inside code are not read as figures."""
    assert CLAIMS.claims("seed 29, 2026-11-28 09:01:48, `--games 777`, issue 65") == []


def test_the_readme_lists_a_number_beside_no_artifact() -> None:
    """In the README (the manual) a number must have an artifact even where none is cited."""
    assert unit_problems("It scores 250.5.", page="README.md") != []
    assert unit_problems("It scores 250.5.") == []  # elsewhere: counted, not failed


def test_a_machine_the_records_do_not_name_fails() -> None:
    """The Intel run's README records an Intel Xeon: naming it the AMD fails, the Intel passes."""
    intel = "`results/cpu-ppo-b256-seed2-intel/`"
    assert unit_problems(f"246.39 on the Intel Xeon, {intel}.") == []
    found = unit_problems(f"246.39 on the AMD EPYC, {intel}.")
    assert found and "names amd" in found[0]


def test_commands_parse_against_the_cli() -> None:
    """A real command passes, placeholders included; an unknown flag, subcommand, module, script
    or make target fails; printed output and prose are not commands."""
    check = CLAIMS.check_command
    assert check("yahtzee-jax train --preset cpu-ppo --set train.seed=2") == (True, None)
    assert check("yahtzee-jax bench train --population N --widths 128,600") == (True, None)
    assert check("make train PRESET=paper-a2c") == (True, None)
    assert "unrecognized" in check("yahtzee-jax train --presets cpu-ppo")[1]
    assert "unknown subcommand" in check("yahtzee-jax fly")[1]
    assert "no module" in check("python -m yahtzee_jax.two_player RUN")[1]
    assert "no script" in check("python experiments/nothing.py")[1]
    assert "no make target" in check("make fly")[1]
    assert check("yahtzee-jax train: error: bad value") == (False, None)
    assert check("evaluation/   the paper's statistics") == (False, None)


def test_a_run_readme_stands_for_its_folder() -> None:
    """A link to a run folder's README.md cites the folder, whose files hold the figures."""
    unit = CLAIMS.Unit("docs/results.md", 1, "[x](../results/cpu-ppo-b256-seed2-intel/README.md)")
    assert CLAIMS.cited(unit) == [ROOT / "results/cpu-ppo-b256-seed2-intel"]


def test_the_pages_named_beside_the_topic_readmes_are_checked_once() -> None:
    """The pages are the README, docs/*.md, each topic's README and the pages named beside them
    (every page of docs/two_player/: its match_exact.md, not only its README; the imitation
    ceiling's, the large-batch learners' and the solver's speed page), none twice."""
    pages = [page.relative_to(ROOT).as_posix() for page in CLAIMS.pages()]
    assert len(pages) == len(set(pages))
    assert {"README.md", "docs/usage.md", "docs/learners/gpu_h100/README.md"} <= set(pages)
    two_player = {path.name for path in (ROOT / "docs" / "two_player").glob("*.md")}
    assert {"README.md", "match_exact.md", "learned_seeker.md"} <= two_player
    assert {f"docs/two_player/{name}" for name in two_player} <= set(pages)
    assert "docs/learners/imitation_ceiling.md" in pages
    assert {"docs/learners/large_batch.md", "docs/speed/solver.md"} <= set(pages)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-1e6, 1e6), st.integers(-100_000, 100_000).map(float), st.just(math.nan)
        ),
        max_size=30,
    ),
    number=st.floats(0, 1e5),
    decimals=st.integers(0, 4),
    seconds=st.one_of(st.none(), st.floats(0, 1e5)),
)
def test_the_bisected_lookup_finds_what_a_scan_of_every_number_finds(
    tmp_path_factory, values, number, decimals, seconds
) -> None:
    """`held` (sorted numbers, bisected at each scale) says what scanning every number of the
    artifact with `agrees` says, NaN among them, for printed numbers of 0 to 4 decimals and
    for times; the number itself, when held, is found."""
    path = tmp_path_factory.mktemp("artifact") / "a.json"
    path.write_text(json.dumps({"v": values}))  # NaN written as JSON's NaN, read back as nan
    text = f"{number:.{decimals}f}"

    def scanned(text: str, seconds: float | None) -> bool:
        numbers = CLAIMS.numbers_of(path)
        if seconds is not None:
            return any(abs(v - seconds) <= 0.5 for v in numbers)
        return any(CLAIMS.agrees(v * s, text) for v in numbers for s in CLAIMS.SCALES)

    assert CLAIMS.held([path], text, seconds) == scanned(text, seconds)
    finite = [v for v in values if math.isfinite(v)]
    if finite:
        assert CLAIMS.held([path], f"{finite[0]:.{decimals}f}", None)
