"""Command line: `yahtzee-jax train|evaluate|match|solve|advise|bench|...`.

Each subcommand lives next to the code it drives and registers itself through an
``add_cli(subparsers)`` function; this module only assembles them and turns expected
errors into a one-line message with a non-zero exit.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import pathlib
import signal
import sys
import threading
from collections.abc import MutableMapping
from typing import Any, NoReturn

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import check_folders, default_cache_dir
from yahtzee_jax.host import signals_handled

# command -> (the module that registers it with `add_cli(subparsers)`, its one-line help).
# Only the chosen command's module is imported: `yahtzee-jax --help` loads no JAX.
COMMANDS: dict[str, tuple[str, str]] = {
    "train": (
        "yahtzee_jax.commands.train",
        "train an agent with one of the ten learners (a fused on-device training step)",
    ),
    "evaluate": (
        "yahtzee_jax.commands.evaluate",
        "play many games of an agent and report its statistics",
    ),
    "match": ("yahtzee_jax.commands.match", "real matches against a built-in opponent"),
    "compare": (
        "yahtzee_jax.commands.compare",
        "two players' match results on the same matches, paired",
    ),
    "tournament": (
        "yahtzee_jax.commands.tournament",
        "play every pair of agents and report a win-rate matrix",
    ),
    "solve": (
        "yahtzee_jax.commands.solve",
        "solve a rule variant exactly; print the optimal expected score",
    ),
    "advise": (
        "yahtzee_jax.commands.solve",
        "optimal expected final score of a position and the value of each action",
    ),
    "play": (
        "yahtzee_jax.commands.terminal",
        "play Yahtzee in the terminal (with hints, against or watching an agent)",
    ),
    "experiment": (
        "yahtzee_jax.commands.experiment",
        "run one of the paper's studies and write its figure and table",
    ),
    "bench": ("yahtzee_jax.commands.bench", "speed benchmarks"),
}


# Commands whose programs are kept by JAX's persistent compilation cache between processes.
# `solve`, `advise` and `bench` are left out: the solver keeps its own programs, found without
# tracing them (`solver.programs`), which JAX's cache (read after tracing) would replace; the
# benchmarks set their caches themselves.
CACHED_COMMANDS = frozenset({"train", "evaluate", "match", "tournament", "play", "experiment"})


def keep_compiled_programs(
    command: str | None, environ: MutableMapping[str, str], cache_dir: str | None = None
) -> None:
    """Turn JAX's persistent compilation cache on for `command` in `environ` (before JAX is
    imported), in `xla/` of the solver's cache folder (`cache_dir`, the command's `--cache-dir`,
    where given), unless the user set a folder of their own.

    Compiling is most of a short command's time: 100,000 games of optimal Yatzy play took 13.4
    CPU s from a cold cache and 8.1 from a warm one (2-core AMD EPYC, 2026-11-29). Every program
    is kept (no minimum compile time), up to 1 GiB in all (JAX drops the least recently used);
    JAX_ENABLE_COMPILATION_CACHE=false turns the cache off.
    """
    if command not in CACHED_COMMANDS:
        return
    folder = pathlib.Path(cache_dir) if cache_dir else default_cache_dir(environ)
    environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(folder / "xla"))
    environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and exit status 2), like ours."""

    def error(self, message: str) -> NoReturn:
        """Print `prog: error: message (see --help)` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command listed, the one `argv` names built in full."""
    parser = OneLineErrorParser(
        prog="yahtzee-jax", description="On-accelerator reinforcement learning for Yahtzee."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((arg for arg in argv or () if not arg.startswith("-")), None)
    if chosen in COMMANDS:  # its module registers it (and any sibling it defines, as advise)
        importlib.import_module(COMMANDS[chosen][0]).add_cli(subparsers)
    for name, (_, help_text) in COMMANDS.items():  # the others: listed with their help only
        if name not in subparsers.choices:
            subparsers.add_parser(name, help=help_text)
    return parser


def _quiet_closed_loop_noise() -> None:
    """Drop the "Event loop is closed" RuntimeError that Orbax's background threads leave
    behind after a failed restore (the failure itself is reported in one line)."""
    default_hook = sys.unraisablehook
    if getattr(default_hook, "quiet_closed_loop", False):
        return

    def hook(unraisable: Any) -> None:
        value = unraisable.exc_value
        if isinstance(value, RuntimeError) and str(value) == "Event loop is closed":
            return
        default_hook(unraisable)

    hook.quiet_closed_loop = True
    sys.unraisablehook = hook


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `yahtzee-jax` console script."""
    _quiet_closed_loop_noise()
    argv = sys.argv[1:] if argv is None else list(argv)
    # JAX reads these when it is first imported: by the command's module, in `build_parser`
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    keep_compiled_programs(command, os.environ, _given_cache_dir(argv))
    # SIGTERM (a scheduler, `timeout`) killed a command without a word and left its temporary
    # files: as KeyboardInterrupt they are removed on the way out, and the line says so (130).
    with signals_handled(_interrupt, signal.SIGINT, signal.SIGTERM):
        try:  # the command's module imports JAX here: seconds a Ctrl-C may land in
            args = build_parser(argv).parse_args(argv)
        except KeyboardInterrupt:
            print(
                f"yahtzee-jax {command}: interrupted" if command else "yahtzee-jax: interrupted",
                file=sys.stderr,
            )
            return 130
        args.argv = argv  # what a result file records as its command
        return _dispatch(args)


REDELIVER_S = 0.05  # how soon a signal that landed in a finalizer is sent again


def _interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C and SIGTERM end a command with KeyboardInterrupt (`train` handles both itself,
    while it trains). Raised inside a garbage-collector callback or a finalizer it would be
    printed as ignored and lost (JAX runs a callback at every collection: a match went on to
    its end after Ctrl-C), so there the signal is sent again a moment later instead."""
    if _inside_finalizer(frame):
        timer = threading.Timer(REDELIVER_S, _deliver_again, (signum,))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def _inside_finalizer(frame: Any) -> bool:
    """Is `frame` (or a caller of it) a garbage-collector callback or a `__del__`?"""
    callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    while frame is not None:
        if frame.f_code in callbacks or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _deliver_again(signum: int) -> None:
    """Send `signum` to this process again (from a timer thread: the main thread handles it)."""
    os.kill(os.getpid(), signum)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; a UserError, an OSError or an interrupt is one line."""
    try:
        if getattr(args, "cache_dir", None) is not None:  # before any table is solved or read
            if not args.cache_dir.strip():  # "" was the current folder
                raise UserError("--cache-dir is empty: give a folder, or leave it out")
            check_folders(pathlib.Path(args.cache_dir) / "table")
        return int(args.func(args) or 0)
    except UserError as error:
        print(f"yahtzee-jax {args.command}: error: {error}", file=sys.stderr)
        return getattr(error, "exit_status", 2)
    except OSError as error:  # a file or directory the user named: missing, unwritable, full
        print(f"yahtzee-jax {args.command}: error: {_describe(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"yahtzee-jax {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # memory the numbers asked for: said, not a traceback
        if not _out_of_memory(error):
            raise
        why = str(error).strip().splitlines()[0][:160] if str(error).strip() else "MemoryError"
        print(
            f"yahtzee-jax {args.command}: error: out of memory ({why}); ask for fewer games "
            "or a smaller --batch-size",
            file=sys.stderr,
        )
        return 2


def _out_of_memory(error: Exception) -> bool:
    """Host memory (NumPy's MemoryError) or a device's (XLA's RESOURCE_EXHAUSTED) ran out."""
    if isinstance(error, MemoryError):
        return True
    xla = type(error).__name__ in ("JaxRuntimeError", "XlaRuntimeError")
    return xla and str(error).startswith("RESOURCE_EXHAUSTED")


def _given_cache_dir(argv: list[str]) -> str | None:
    """The value of the last `--cache-dir DIR` or `--cache-dir=DIR` in `argv` (the one argparse
    keeps) before it is parsed (JAX's cache folder is set before the parser imports JAX), None
    when absent. argparse's abbreviations count from `--cac` on (no other flag starts so); a
    shorter one is missed, and the programs then go to the default folder."""
    given = None
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        name, equals, value = arg.partition("=")
        if len(name) < len("--cac") or not "--cache-dir".startswith(name):
            continue
        if equals:
            given = value
        elif index + 1 < len(argv):
            given = argv[index + 1]
    return given


def _describe(error: OSError) -> str:
    """`strerror: filename` without Python's errno prefix."""
    reason = error.strerror or str(error)
    return f"{reason}: {error.filename}" if error.filename else reason


if __name__ == "__main__":
    sys.exit(main())
