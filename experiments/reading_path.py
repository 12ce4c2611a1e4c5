"""Lines a reader opens to follow one learner (issue 66): its own module, and the functions,
classes and constants of the other `yahtzee_jax/algorithms` modules that it names, with what
those name in turn (transitively), each definition counted once by its source lines.

    python experiments/reading_path.py yahtzee_jax/algorithms/ppo.py [--root DIR]

Static names only: a call through a record (`context.algorithm.update`) is not followed.
Prints the learner's own lines, then per other module the definitions reached and their lines.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PACKAGE = "yahtzee_jax.algorithms"


def definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """The module's top-level definitions by name (functions, classes, assigned constants)."""
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def imports(tree: ast.Module) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(name -> (module, name) imported from a sibling, alias -> sibling module imported whole)."""
    names: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        for alias in node.names:
            local = alias.asname or alias.name
            if node.module == PACKAGE:
                modules[local] = alias.name
            elif node.module.startswith(PACKAGE + "."):
                names[local] = (node.module.removeprefix(PACKAGE + "."), alias.name)
    return names, modules


def references(node: ast.stmt, names: dict, modules: dict) -> set[tuple[str | None, str]]:
    """(module or None for this one, name) of every name the definition uses."""
    found: set[tuple[str | None, str]] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(names.get(child.id, (None, child.id)))
        elif (
            isinstance(child, ast.Attribute)
            and isinstance(child.value, ast.Name)
            and child.value.id in modules
        ):
            found.add((modules[child.value.id], child.attr))
    return found


def lines(node: ast.stmt) -> int:
    """Source lines of a definition, its decorators included."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return node.end_lineno - start + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("learner", help="the learner's module, relative to --root")
    parser.add_argument("--root", default=".", help="the repository root to read")
    args = parser.parse_args()
    root = Path(args.root)
    learner = Path(args.learner).stem
    folder = root / Path(args.learner).parent
    parsed = {path.stem: ast.parse(path.read_text()) for path in folder.glob("*.py")}
    defs = {module: definitions(tree) for module, tree in parsed.items()}
    links = {module: imports(tree) for module, tree in parsed.items()}
    todo = [(learner, name) for name in defs[learner]]
    reached: set[tuple[str, str]] = set()
    while todo:
        module, name = todo.pop()
        if (module, name) in reached or name not in defs.get(module, {}):
            continue
        reached.add((module, name))
        names, modules = links[module]
        for other, used in references(defs[module][name], names, modules):
            todo.append((other or module, used))
    own = len((folder / f"{learner}.py").read_text().splitlines())
    print(f"{learner}.py: {own} lines (the whole file)")
    total = 0
    for module in sorted({m for m, _ in reached} - {learner}):
        used = sorted(n for m, n in reached if m == module)
        count = sum(lines(defs[module][n]) for n in used)
        total += count
        print(f"{module}.py: {count} lines in {len(used)} definitions: {', '.join(used)}")
    print(f"elsewhere: {total} lines; with the learner's own: {own + total}")


if __name__ == "__main__":
    main()
