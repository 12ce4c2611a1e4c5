"""A population's view of the config schema: which fields are `dynamic` (`config.dynamic`) and
config sections with traced values in them (`traced_replace`).

The schema only marks its fields; reading the marks and building the traced copies a vmapped
population chunk needs is the population's (`runner.population`), its one user.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

from yahtzee_jax.config import BRANCHES, DYNAMIC


def _marker(section: Any, name: str) -> Any:
    fields = {field.name: field for field in dataclasses.fields(section)}
    return fields[name].metadata.get(DYNAMIC) if name in fields else None


def is_dynamic(section: Any, name: str) -> bool:
    """Is field `name` of a config section (class or instance) declared `dynamic`?"""
    return _marker(section, name) is not None


def is_branching(section: Any, name: str) -> bool:
    """Is field `name` declared `dynamic(..., branches=True)`?"""
    return _marker(section, name) == BRANCHES


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
