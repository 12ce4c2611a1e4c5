"""A population's view of the config schema: which fields are `dynamic` (`config.dynamic`) and
config sections with traced values in them (`traced_replace`).

The schema only marks its fields; reading the marks and building the traced copies a vmapped
population chunk needs is the population's (`runner.population`), its one user. A traced value
is a plain float32 tracer: the learner asks `config.takes_default` where it skips work, and that
answers False for it (the population refuses members that would need True).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

from yahtzee_jax.config import DYNAMIC, field_mark


def is_dynamic(section: Any, name: str) -> bool:
    """Is field `name` of a config section (class or instance) declared `dynamic`?"""
    return field_mark(section, name, DYNAMIC) is not None


Section = TypeVar("Section")


def traced_replace(section: Section, **changes: Any) -> Section:
    """`dataclasses.replace` for values traced inside a compiled function, checks left out.

    A config's `__post_init__` compares its values with numbers, which a traced value cannot
    answer, so the copy is built by the class's own `__init__` on a subclass without the
    checks (`_unchecked`). The caller checks the concrete values first: a population checks
    every member's config before compiling the chunk that builds its traced copies.
    """
    values = {field.name: getattr(section, field.name) for field in dataclasses.fields(section)}
    return _unchecked(type(section))(**(values | changes))


@functools.cache
def _unchecked(cls: type) -> type:
    """`cls` with a `__post_init__` that checks nothing; fields and methods are `cls`'s."""
    return type(cls.__name__, (cls,), {"__post_init__": _no_checks, "__doc__": cls.__doc__})


def _no_checks(self: Any) -> None:
    """Nothing to check: the concrete values were checked before they were traced."""
