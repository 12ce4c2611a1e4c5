"""Whether a command quoted in the docs is one of ours and parses (`check_doc_claims.py`).

A line starting with `yahtzee-jax`, `make`, `python -m` or `python experiments/...` (after any
VAR=value) is checked: its subcommand and flags against the CLI's argparse parser, its make
target against the Makefile, its module or script on disk.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shlex
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTS = {"yahtzee-jax", "make", "python", "python3", "srun", "time", "nice", "cd"}


@cache
def parser_for(command: str) -> argparse.ArgumentParser:
    """The CLI's parser with `command` built in full."""
    from yahtzee_jax.commands.cli import build_parser

    return build_parser([command])


def parses(argv: list[str], partial: bool = False) -> str | None:
    """None if `yahtzee-jax ARGV` parses, else argparse's message. A placeholder value in
    capitals (N, RUN, DIR) passes any type; `partial` (a command quoted in prose) lets
    required arguments be left out."""
    from yahtzee_jax.commands.cli import COMMANDS

    if argv[:1] in (["--help"], ["-h"]):
        return None
    if not argv or argv[0] not in COMMANDS:
        return f"unknown subcommand {argv[:1]}"
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(io.StringIO()):
            parser_for(argv[0]).parse_args(argv)
    except SystemExit as stop:
        message = out.getvalue().strip().splitlines()[-1] if out.getvalue() else "exit 2"
        if stop.code in (0, None) or re.search(r"invalid .*'[A-Z][A-Z0-9_]*'", message):
            return None
        if partial and "arguments are required" in message:
            return None
        return message
    return None


@cache
def make_targets() -> frozenset[str]:
    """The Makefile's targets."""
    text = (ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"^([\w-]+):", text, re.MULTILINE))


def check_command(line: str, partial: bool = False) -> tuple[bool, str | None]:
    """(whether the line holds a command of ours, its problem or None); `partial`: quoted in
    prose, where required arguments may be left out."""
    line = re.sub(r"\[(--?[^\]]*)\]", r"\1", line.strip().removeprefix("$ "))
    words = re.sub(r"^(?:[A-Z_]+=\S* )+", "", line).split()
    if not words or Path(words[0]).name not in STARTS or (words[1:2] and words[1].endswith(":")):
        return False, None  # printed output, a tree, a table: not a command
    try:
        words = shlex.split(line, comments=True)
    except ValueError as error:
        return True, f"does not split: {error}"
    checked, problem = False, None
    for command in split_commands(words):
        command = [w for w in command if "..." not in w]
        while command and re.fullmatch(r"[A-Z_]+=\S*", command[0]):
            command = command[1:]  # VAR=value before the command
        names = [Path(w).name for w in command]
        if "yahtzee-jax" in names:
            rest = command[names.index("yahtzee-jax") + 1 :]
            if rest:
                checked, problem = True, problem or parses(rest, partial)
        elif names[:1] in (["python"], ["python3"]) and command[1:2] == ["-m"] and command[2:]:
            module = command[2]
            checked = True
            if module == "yahtzee_jax.commands.cli":
                problem = problem or parses(command[3:], partial)
            elif module.startswith("yahtzee_jax") and importlib.util.find_spec(module) is None:
                problem = problem or f"no module {module}"
        elif names[:1] in (["python"], ["python3"]) and command[1:2] and command[1].endswith(".py"):
            checked = True
            if not (ROOT / command[1]).exists():
                problem = problem or f"no script {command[1]}"
        elif command[:1] == ["make"]:
            checked = True
            targets = [w for w in command[1:] if "=" not in w and not w.startswith("-")]
            missing = [t for t in targets if t not in make_targets()]
            problem = problem or (f"no make target {missing[0]}" if missing else None)
    return checked, problem


def split_commands(words: list[str]) -> list[list[str]]:
    """A shell line's simple commands (split at &&, ||, ;, | and &)."""
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|", "&"):
            commands.append([])
        else:
            commands[-1].append(word.rstrip(";&"))
    return [c for c in commands if c]
