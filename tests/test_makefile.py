"""`make train`'s choice of preset, read from `make -n` (nothing runs): the fast model-free
preset of the machine by default, said with its expected time before training starts, and the
paper's A2C on request. The GPU detection is injected with the make variable GPU, as a user
could too; the real detection asks the venv's JAX, which a test cannot change."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def dry_run(tmp_path: Path, *variables: str) -> str:
    """`make -n train VARIABLES` in an empty directory (its own venv path and runs/, so that no
    checkpoint of the checkout's turns the run into a resume): the commands make would run."""
    (tmp_path / "pyproject.toml").write_text("")  # the venv stamp's prerequisite
    command = ["make", "-n", "-f", str(MAKEFILE), "train", "VENV=venv", *variables]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    return done.stdout


def trained_preset(output: str) -> str:
    """The preset of the `yahtzee-jax train` command `make -n` printed."""
    words = output.split()
    assert "venv/bin/yahtzee-jax" in words and words.count("--preset") == 1
    return words[words.index("--preset") + 1]


@pytest.mark.parametrize(
    ("variables", "preset", "said"),
    [
        (("GPU=0",), "cpu-ppo", "about 7 min on 2 CPU cores (6.6 on an AMD EPYC)"),
        (("GPU=1",), "gpu-ppo", "about a minute on one H100/H200"),
        (("GPU=1", "PRESET=paper-a2c"), "paper-a2c", "about 40 min on 2 CPU cores"),
        (("GPU=0", "PRESET=quick"), "quick", ""),
    ],
)
def test_make_train_takes_the_machines_fast_preset_unless_told(tmp_path, variables, preset, said):
    """Without a GPU `make train` trains cpu-ppo, with one gpu-ppo, into runs/PRESET, and
    first says which preset and how long it takes; a PRESET given is trained as it is."""
    output = dry_run(tmp_path, *variables)
    assert trained_preset(output) == preset and f"--out runs/{preset}" in output
    announced = next(line for line in output.splitlines() if "make train: preset" in line)
    assert f"preset {preset}" in announced and said in announced


def test_make_train_resumes_a_run_with_checkpoints(tmp_path):
    """A runs/cpu-ppo with checkpoints is resumed (`--resume`), and the message says so."""
    (tmp_path / "runs" / "cpu-ppo" / "checkpoints").mkdir(parents=True)
    output = dry_run(tmp_path, "GPU=0")
    assert "--resume" in output.split() and "--preset" not in output.split()
    assert "(resuming its checkpoints)" in output


def test_make_help_names_both_defaults_and_the_paper(tmp_path):
    """`make help` says what `make train` trains on a CPU and a GPU, and how to get the paper."""
    done = subprocess.run(
        ["make", "-f", str(MAKEFILE), "help"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "default: cpu-ppo on a CPU" in done.stdout and "gpu-ppo where" in done.stdout
    assert "make train PRESET=paper-a2c" in done.stdout


def test_make_setup_builds_the_kernel_and_again_when_its_sources_change(tmp_path):
    """A new venv's setup builds the solver's C kernel into it (`install_kernel`); once built,
    setup does nothing, until a kernel source is newer than the build."""
    kernel_source = tmp_path / "yahtzee_jax" / "solver" / "native_kernel.c"
    kernel_source.parent.mkdir(parents=True)
    kernel_source.write_text("")
    (tmp_path / "pyproject.toml").write_text("")

    def setup() -> str:
        command = ["make", "-n", "-f", str(MAKEFILE), "setup", "VENV=venv"]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True).stdout

    assert "install_kernel()" in setup() and "pip install" in setup()
    (tmp_path / "venv").mkdir()
    for stamp in (".installed", ".kernel"):
        (tmp_path / "venv" / stamp).write_text("")
    assert "install_kernel()" not in setup()
    os.utime(kernel_source, (time.time() + 60, time.time() + 60))  # edited after the build
    assert "install_kernel()" in setup() and "pip install" not in setup()
