"""The package's shape (issue 27): its floors hold (import-linter), no module is over 500
lines, and `yahtzee-jax --help` starts without JAX or matplotlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "yahtzee_jax"


def test_the_import_contracts_hold():
    """`lint-imports` (floors, networks, no cycles: pyproject.toml) passes on the package."""
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=PACKAGE.parent, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_no_module_is_over_500_lines():
    """A module does one job: none of the package's files is longer than 500 lines."""
    lengths = {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > 500} == {}


def test_help_imports_neither_jax_nor_matplotlib():
    """Building the whole command line (what `yahtzee-jax --help` does) loads no JAX and no
    matplotlib: each command imports what it runs only when it runs."""
    code = (
        "import sys\n"
        "from yahtzee_jax.commands.cli import build_parser\n"
        "build_parser().format_help()\n"
        "print(sorted(m for m in ('jax', 'matplotlib', 'flax', 'optax') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
