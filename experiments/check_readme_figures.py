"""Check that every figure in the README's results table equals the committed artifact behind it.

Usage: python experiments/check_readme_figures.py [--readme README.md] [--spec SPEC.yaml]
           [--suggest]

Run with the default README and spec, it then runs experiments/check_doc_claims.py too: the
README's prose and presets table and the docs against the artifacts they cite, and every command
they quote against the CLI.

The table is the first one under `## Results`. Each row is found in the spec
(experiments/readme_figures.yaml) by its artifact cell, verbatim. A spec row is either
`skip: REASON` (the row cannot be checked; printed, never silent) or a list of `figures`, each
`{text, file, key}` with optional `scale` (100 for a percentage) and `divide_by: {file, key}`
(a ratio), plus `unverified: [{text, why}]` for figures that are not ours to check (a paper's
number, a figure no file holds). The checks:

- every path in the artifact cell exists (backticked, `{a,b}` expanded, `*` globbed);
- each figure's file is one of those paths or lies under one of them;
- the value at `key` (dots, list indices, `name=value[&name=value]` to pick a list element;
  `@elapsed` reads GNU time's wall clock from a text file, in seconds; a .jsonl file is a list of
  its lines, a .yaml file its mapping), times `scale`, rounds to `text` at the printed
  precision (within half a unit of its last digit);
- every decimal number in the figure cell is used by exactly one figure or unverified entry,
  so a number added to a row without its check fails. (Integers are not required: they are
  mostly budgets and sizes; they may be checked all the same.)

A README row with no spec row, and a spec row with no README row, fail. `--suggest` prints, for
each decimal number of each row, the leaves of the row's artifacts that match it, to help write
a new spec row. Exit status 0 when everything agrees, 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import itertools
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
# A number in prose: 7, 1,234 or 12.34; "1.38x" counts (a ratio), "1.2M" and "v1.2" do not.
NUMBER = re.compile(
    r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![0-9A-Za-wyz_]|[.,]\d)"
)
DECIMAL = re.compile(r"\.\d+$")
ELAPSED = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)")


class SpecError(Exception):
    """A spec row that cannot be read: a missing key, a path that does not resolve."""


def results_rows(readme: str) -> list[list[str]]:
    """The cells of each body row of the first table under `## Results`."""
    lines = readme.splitlines()
    try:
        start = lines.index("## Results")
    except ValueError as error:
        raise SpecError("README has no '## Results' section") from error
    rows: list[list[str]] = []
    in_table = False
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            if in_table and not set(line) <= set("|-: "):
                rows.append(cells)
            in_table = True
        elif in_table:
            break
    return rows


def expand(cell: str) -> list[str]:
    """The paths of an artifact cell: each backticked path, braces expanded, globs resolved."""
    paths: list[str] = []
    for quoted in re.findall(r"`([^`]+)`", cell):
        for path in brace_expand(quoted):
            matches = sorted(glob.glob(str(ROOT / path))) if "*" in path else [str(ROOT / path)]
            if not matches or not all(Path(m).exists() for m in matches):
                raise SpecError(f"artifact path {path!r} does not exist")
            paths.extend(str(Path(m).relative_to(ROOT)) for m in matches)
    if not paths:
        raise SpecError(f"no backticked path in the artifact cell {cell!r}")
    return paths


def brace_expand(path: str) -> list[str]:
    """`a{1,2}b` -> [a1b, a2b], for every brace group (no nesting)."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(combo) for combo in itertools.product(*choices)]


def named_by(file: str, paths: list[str]) -> bool:
    """Whether `file` is one of the row's paths or lies under one of its directories."""
    return any(file == p or file.startswith(p.rstrip("/") + "/") for p in paths)


def load(file: str) -> Any:
    """A JSON file, a .jsonl file as the list of its lines, or any other file as its text."""
    text = (ROOT / file).read_text()
    if file.endswith(".json"):
        return json.loads(text)
    if file.endswith((".yaml", ".yml")):
        return yaml.safe_load(text)
    if file.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return text


def lookup(data: Any, key: str) -> float:
    """The number at a dotted key; `name=value` picks the list element whose field matches."""
    if key == "@elapsed":
        found = ELAPSED.search(data) if isinstance(data, str) else None
        if found is None:
            raise SpecError("no GNU time 'Elapsed' line")
        seconds = 0.0
        for part in found.group(1).split(":"):
            seconds = seconds * 60 + float(part)
        return seconds
    for part in key.split("."):
        if isinstance(data, list) and "=" in part:
            wanted = [term.split("=", 1) for term in part.split("&")]
            picked = [item for item in data if all(str(item.get(f)) == v for f, v in wanted)]
            if len(picked) != 1:
                raise SpecError(f"{len(picked)} elements with {part}")
            data = picked[0]
        elif isinstance(data, list):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise SpecError(f"no key {part!r}")
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise SpecError(f"{key} is {data!r}, not a number")
    return float(data)


def agrees(value: float, text: str) -> bool:
    """Whether `value` prints as `text` at the text's precision (half a unit of its last digit)."""
    printed = float(text.replace(",", ""))
    found = DECIMAL.search(text)
    half_unit = 0.5 * 10.0 ** -(len(found.group()) - 1 if found else 0)
    return abs(value - printed) <= half_unit * (1 + 1e-9)


def figure_value(figure: dict[str, Any], paths: list[str]) -> float:
    """The value a spec figure reads, scaled and divided, after checking its file is named."""
    files = [figure["file"]] + ([figure["divide_by"]["file"]] if "divide_by" in figure else [])
    for file in files:
        if not named_by(file, paths):
            raise SpecError(f"{file} is not named in the row's artifact cell")
    value = lookup(load(figure["file"]), str(figure["key"])) * float(figure.get("scale", 1))
    if "divide_by" in figure:
        value /= lookup(load(figure["divide_by"]["file"]), str(figure["divide_by"]["key"]))
    return value


def check_row(cells: list[str], spec: dict[str, Any]) -> list[str]:
    """The problems of one README row against its spec row (empty: it agrees)."""
    if "skip" in spec:
        return []
    try:
        paths = expand(cells[-1])
    except SpecError as error:
        return [str(error)]
    problems: list[str] = []
    left = Counter(NUMBER.findall(cells[0]))
    for figure in spec.get("figures", []):
        text = str(figure["text"])
        if left[text] <= 0:
            problems.append(f"figure {text} is not in the row (or is used twice)")
            continue
        left[text] -= 1
        try:
            value = figure_value(figure, paths)
        except (SpecError, OSError, ValueError, IndexError) as error:
            problems.append(f"figure {text}: {figure['file']} {figure['key']}: {error}")
            continue
        if not agrees(value, text):
            problems.append(f"figure {text} != {value:.6g} ({figure['file']} {figure['key']})")
    for entry in spec.get("unverified", []):
        text = str(entry["text"])
        if left[text] <= 0:
            problems.append(f"unverified {text} is not in the row (or is used twice)")
        left[text] -= 1
    for text, count in left.items():
        if count > 0 and DECIMAL.search(text):
            problems.append(f"number {text} in the row is neither checked nor listed unverified")
    return problems


def row_label(cells: list[str]) -> str:
    """A short name for a row in messages: its artifact cell."""
    return cells[-1][:90]


def check(readme: str, specs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(problems, skipped rows with their reasons) of the whole table against the spec."""
    by_artifact = {spec["artifact"]: spec for spec in specs}
    problems: list[str] = []
    skipped: list[str] = []
    rows = results_rows(readme)
    for cells in rows:
        if len(cells) != 4:
            problems.append(f"row with {len(cells)} cells, not 4: {cells[0][:60]!r}")
            continue
        spec = by_artifact.get(cells[-1])
        if spec is None:
            problems.append(f"{row_label(cells)}: no spec row (add one, or one with skip: REASON)")
            continue
        if "skip" in spec:
            skipped.append(f"{row_label(cells)}: {spec['skip']}")
        problems.extend(f"{row_label(cells)}: {p}" for p in check_row(cells, spec))
    seen = {cells[-1] for cells in rows}
    problems.extend(f"spec row {a[:90]} has no README row" for a in by_artifact if a not in seen)
    return problems, skipped


def leaves(data: Any, prefix: str = "") -> list[tuple[str, float]]:
    """Every numeric leaf of a JSON value with its dotted key."""
    if isinstance(data, dict):
        return [leaf for k, v in data.items() for leaf in leaves(v, f"{prefix}{k}.")]
    if isinstance(data, list):
        return [leaf for i, v in enumerate(data) for leaf in leaves(v, f"{prefix}{i}.")]
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        return [(prefix.rstrip("."), float(data))]
    return []


def suggest(readme: str) -> None:
    """Print, for each decimal number of each row, the artifact leaves that print as it."""
    for cells in results_rows(readme):
        print(f"## {cells[-1]}")
        try:
            paths = expand(cells[-1])
        except SpecError as error:
            print(f"   {error}")
            continue
        files = [p for p in paths if (ROOT / p).is_file()]
        files += [
            str(f.relative_to(ROOT))
            for p in paths
            if (ROOT / p).is_dir()
            for f in sorted((ROOT / p).rglob("*"))
            if f.suffix in (".json", ".jsonl", ".txt")
        ]
        for text in dict.fromkeys(NUMBER.findall(cells[0])):
            hits = [
                f"{file} {key} x{scale:g}"
                for file in files
                for key, value in leaves(load(file)) + elapsed(load(file))
                for scale in (1, 100, 1 / 60)
                if DECIMAL.search(text) and agrees(value * scale, text)
            ]
            print(f"   {text}: {'; '.join(hits[:4]) or '-'}")


def elapsed(data: Any) -> list[tuple[str, float]]:
    """The GNU time wall clock of a text file as a leaf, if it has one."""
    try:
        return [("@elapsed", lookup(data, "@elapsed"))]
    except SpecError:
        return []


def main(argv: list[str] | None = None) -> int:
    """Check the README (or print suggestions); 0 when every figure agrees."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--spec", type=Path, default=ROOT / "experiments" / "readme_figures.yaml")
    parser.add_argument("--suggest", action="store_true")
    args = parser.parse_args(argv)
    readme = args.readme.read_text()
    if args.suggest:
        suggest(readme)
        return 0
    specs = yaml.safe_load(args.spec.read_text())["rows"]
    problems, skipped = check(readme, specs)
    for line in skipped:
        print(f"not checked: {line}")
    for line in problems:
        print(f"MISMATCH: {line}")
    rows = len(results_rows(readme))
    print(f"{rows} rows, {len(skipped)} allow-listed, {len(problems)} problems")
    if (
        args.readme != ROOT / "README.md"
        or args.spec != ROOT / "experiments" / "readme_figures.yaml"
    ):
        return 1 if problems else 0  # a README or spec of a test's own: the table alone
    prose = doc_claims().main([])  # the prose, machines and commands of README and docs
    return 1 if problems or prose else 0


def doc_claims():
    """experiments/check_doc_claims.py, loaded beside this script."""
    spec = importlib.util.spec_from_file_location(
        "check_doc_claims", ROOT / "experiments" / "check_doc_claims.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
