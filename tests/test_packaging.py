"""The built wheel carries the presets and study specs as package data; an installed copy
finds them.

A non-editable install (a Colab notebook's `pip install git+...`) has no source tree beside the
package, so presets and studies must travel inside it. The wheel is built offline (no build
isolation, the dev extra's setuptools) from a copy of the sources, so the checkout gets no
build/ or egg-info.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
DATA_DIRS = ("presets", "studies")


def _yaml_files(data_dir: str) -> list[str]:
    return sorted(path.name for path in (REPOSITORY / "yahtzee_jax" / data_dir).glob("*.yaml"))


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The wheel's file names and the directory it was unpacked into."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(
        REPOSITORY / "yahtzee_jax",
        source / "yahtzee_jax",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    for name in ("pyproject.toml", "README.md"):  # README.md is the package's long description
        shutil.copy(REPOSITORY / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(work / "dist"), str(source)],
        check=True,
    )  # fmt: skip
    (wheel,) = (work / "dist").glob("yahtzee_jax-*.whl")
    unpacked = work / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
        return unpacked, archive.namelist()


@pytest.mark.parametrize("data_dir", DATA_DIRS)
def test_wheel_holds_every_yaml_file(unpacked_wheel: tuple[Path, list[str]], data_dir) -> None:
    """Each YAML file of yahtzee_jax/presets and yahtzee_jax/studies is in the wheel."""
    _, names = unpacked_wheel
    assert _yaml_files(data_dir), f"the checkout has no {data_dir} to look for"
    prefix = f"yahtzee_jax/{data_dir}/"
    shipped = sorted(Path(name).name for name in names if name.startswith(prefix))
    assert shipped == _yaml_files(data_dir)


def test_installed_package_finds_its_presets_and_studies(
    unpacked_wheel: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """Imported from the unpacked wheel (not the checkout), `available_presets()` lists every
    preset, `resolve` reads them (inheritance too), and every study spec loads."""
    site, _ = unpacked_wheel
    script = (
        "import yahtzee_jax, yahtzee_jax.runner.configs as config\n"
        "print(yahtzee_jax.__file__)\n"
        "print(','.join(config.available_presets()))\n"
        "print(config.resolve('quick').network.hidden_size)\n"
        "print(config.resolve('paper-a2c-shaping').network.upper_head)\n"
        "from yahtzee_jax.commands.experiment import available_studies, load_study\n"
        "print(','.join(name for name in available_studies() if load_study(name).runs))\n"
    )
    # PYTHONPATH comes before site-packages, where the checkout is installed in editable mode.
    environment = {**os.environ, "PYTHONPATH": str(site)}
    printed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert Path(printed[0]).is_relative_to(site)
    stems = {data_dir: [name.removesuffix(".yaml") for name in _yaml_files(data_dir)]
             for data_dir in DATA_DIRS}  # fmt: skip
    assert printed[1].split(",") == sorted(stems["presets"])
    assert printed[2:4] == ["128", "True"]
    assert printed[4].split(",") == sorted(stems["studies"])
