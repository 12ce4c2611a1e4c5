"""Check the prose of the README and docs against the artifacts it cites, and its commands.

Usage: python experiments/check_doc_claims.py [--spec SPEC.yaml]

The pages: README.md, docs/*.md, each topic README (docs/**/README.md) and the pages of
`MORE_PAGES` (every page of docs/two_player/, docs/learners/imitation_ceiling.md,
docs/learners/large_batch.md, docs/speed/solver.md). A page is cut
into units: a table row, a list item or a paragraph. A unit that cites an artifact (a backticked
path or a link to a file or folder under results/ or docs/ that is not a page: `.json`, `.jsonl`,
`.yaml`, `.txt`, `.log`, a run's folder; a run folder's README.md stands for its folder) is a claim
beside an artifact, and three checks apply:

- numbers: every number of its prose (decimals, integers, percentages, times such as `8 min 24 s`;
  not inside code, not a seed, issue, stop, table, date or clock time) equals a number the
  artifacts hold, at its printed precision (half a unit of its last digit), read as is, as a
  percentage (x100), in minutes or hours (/60, /3600) or in thousands; else it is listed under
  `prose:` in the spec with the reason it cannot be read from the cited files (a difference, the
  paper's figure, a figure from another page);
- machines: a machine the unit names (H100, H200, Intel, AMD) is one that the artifacts' machine
  records name (machine fields of their JSON, a machine*.json beside them, the first paragraph
  of their folder's README.md); a unit whose artifacts record no machine is counted, not failed;
- commands (every unit, cited or not): each command in a code block or an inline code span that
  starts one (`yahtzee-jax`, `make`, `python -m`, `python experiments/...`) parses: its
  subcommand and flags exist in the CLI's argparse (yahtzee_jax.commands.cli's parser), its make
  target in the Makefile, its module or script on disk.

A spec entry that no longer matches a number fails too, so the list cannot go stale. Exit status
0 when everything agrees, 1 with one line per problem; the counts go to stdout.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, loaded by path too
from doc_commands import check_command

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "experiments" / "readme_figures.yaml"
# A number in prose: 7, 1,234 or 12.34, and a ratio "1.38x"; not "1.2M", "v1.2" or "26a7c45".
NUMBER = re.compile(
    r"(?<![\w.,/-])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![0-9A-Za-wyz_]|[.,]\d)"
)
# A time written in two or three units: "8 min 24 s", "1 h 5 min", "1 h 43 min 38 s".
TIME_IN_UNITS = re.compile(r"\b\d+ (?:h|min)(?: \d+(?:\.\d+)? (?:min|s)){1,2}\b")
UNIT_SECONDS = {"h": 3600, "min": 60, "s": 1}
# Not claims: dates, clock times, and numbers that name a seed, an issue, a stop, a table...
NOT_A_CLAIM = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ][\d:]+Z?)?|\b\d{1,2}:\d{2}(?::\d{2})?\b"
    r"|\b(?:seeds?|issues?|stops?|[Tt]ables?|papers?|sections?|steps?|stages?|sessions?|models?"
    r"|family|rows?|layers?|windows?|runs?|windows?|points? of|Figures?|level|player|ranks?)"
    r"[ (]+\d+(?:(?: ?/ ?|, | and | to |-| or )\d+)*"
)
MACHINES = {
    "intel": r"\bIntel\b|\bXeon\b",
    "amd": r"\bAMD\b|\bEPYC\b",
    "h100": r"H100",
    "h200": r"H200",
}
# libyaml's loader where PyYAML has it (its wheels do): the pure-Python one took 4.7 of the
# check's 15.8 s reading the runs' YAML files (2-core AMD EPYC, shared).
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DATA_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".txt", ".log", ".csv")
SCALES = (1.0, 100.0, 1 / 60, 1 / 3600, 1 / 1000)
MAX_FILES = 400  # files read under one cited folder
PRESETS = "yahtzee_jax/presets"
PRESET_PAGES = ("README.md", "docs/usage.md")  # the pages whose presets tables are checked
STRICT = "README.md"  # the manual: a number beside no artifact must be listed too


@dataclass
class Unit:
    """A table row, list item or paragraph of a page, with the line it starts on."""

    page: str
    line: int
    text: str
    artifacts: list[Path] = field(default_factory=list)


@dataclass
class Report:
    """What the check looked at and what it found."""

    numbers: int = 0
    numbers_beside_no_artifact: int = 0
    machines: int = 0
    machines_without_record: int = 0
    commands: int = 0
    problems: list[str] = field(default_factory=list)


# Pages under the topic folders checked beside their READMEs (the rest: give each number an
# artifact or an allow-list line before adding a page here)
MORE_PAGES = (
    "docs/two_player/*.md",
    "docs/learners/*.md",
    "docs/speed/results.md",
    "docs/td_planner/*.md",
    "docs/speed/solver.md",
)


def pages() -> list[Path]:
    """README.md, docs/*.md, the topic READMEs under docs/ and the pages of `MORE_PAGES`."""
    docs = ROOT / "docs"
    found = [ROOT / "README.md", *sorted(docs.glob("*.md")), *sorted(docs.glob("*/**/README.md"))]
    for pattern in MORE_PAGES:
        found += [page for page in sorted(ROOT.glob(pattern)) if page not in found]
    return found


def units(page: Path) -> tuple[list[Unit], list[tuple[int, str]]]:
    """The page's prose units and the lines of its code blocks (joined at backslashes)."""
    name = str(page.relative_to(ROOT))
    found: list[Unit] = []
    code: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    fenced = False

    def close() -> None:
        if current:
            found.append(Unit(name, start, " ".join(current)))
            current.clear()

    pending = ""
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            close()
            fenced = not fenced
            continue
        if fenced:
            pending += (
                line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else ""
            )
            if not line.rstrip().endswith("\\"):
                code.append((number, pending + line))
                pending = ""
            continue
        stripped = line.strip()
        new_unit = stripped.startswith(("|", "#", "- ", "* ")) or re.match(r"\d+\. ", stripped)
        if not stripped or new_unit:
            close()
        if stripped:
            if not current:
                start = number
            current.append(stripped)
            if stripped.startswith(("|", "#")):
                close()
    close()
    return found, code


def cited(unit: Unit) -> list[Path]:
    """The artifacts a unit cites: data files and run folders under results/ or docs/."""
    here = (ROOT / unit.page).parent
    targets = re.findall(r"`([^`\s]+)`", unit.text) + re.findall(r"\]\(([^)#\s]+)", unit.text)
    paths: list[Path] = []
    presets_table = unit.page in PRESET_PAGES and unit.text.startswith("| `")
    first_cell = unit.text.split(" | ")[0] if presets_table else ""
    for target in targets:
        if f"`{target}`" in first_cell:  # a presets table's row: the preset's own file
            paths += preset_files(target)
        if target.startswith("http") or target.startswith("-"):
            continue
        globbed = [
            str(found)
            for expanded in brace_expand(target)
            for base in (ROOT, here)
            for found in (base.glob(expanded) if "*" in expanded else [])
        ]
        for expanded in globbed or brace_expand(target):
            for base in (ROOT, here):
                path = (base / expanded).resolve()
                if path.exists() and path.is_relative_to(ROOT):
                    break
            else:
                continue
            if path.name == "README.md" and path.parent.is_relative_to(ROOT / "results"):
                path = path.parent
            top = path.relative_to(ROOT).parts[0]
            if top in ("results", "docs") and (path.is_dir() or path.suffix in DATA_SUFFIXES):
                if path.is_dir() and path.parent == ROOT / "docs":
                    continue  # a topic folder, not a run's
                paths.append(path)
    return list(dict.fromkeys(paths))


def preset_files(name: str) -> list[Path]:
    """A preset's name stands for its YAML file and those it inherits from."""
    files: list[Path] = []
    while re.fullmatch(r"[\w-]+", name) and (ROOT / PRESETS / f"{name}.yaml").exists():
        files.append(ROOT / PRESETS / f"{name}.yaml")
        name = str((yaml.safe_load(files[-1].read_text()) or {}).get("inherit", ""))
    return files


def brace_expand(path: str) -> list[str]:
    """`a{1,2}b` -> [a1b, a2b] for each brace group (no nesting)."""
    found = re.search(r"\{([^{}]*)\}", path)
    if not found:
        return [path]
    head, tail = path[: found.start()], path[found.end() :]
    return [e for choice in found.group(1).split(",") for e in brace_expand(head + choice + tail)]


@cache
def data_files(path: Path) -> tuple[Path, ...]:
    """The readable data files of an artifact: itself, or those under its folder."""
    if path.is_file():
        return (path,)
    files = [f for f in sorted(path.rglob("*")) if f.is_file() and f.suffix in DATA_SUFFIXES]
    return tuple(files[:MAX_FILES])


@cache
def numbers_of(file: Path) -> tuple[float, ...]:
    """Every number a data file holds: JSON and YAML leaves, or the numbers of its text."""
    text = file.read_text(errors="replace")
    values: list[float] = []
    try:
        if file.suffix == ".json":
            values = leaves(json.loads(text))
        elif file.suffix == ".jsonl":
            values = [
                v for line in text.splitlines() if line.strip() for v in leaves(json.loads(line))
            ]
        elif file.suffix in (".yaml", ".yml"):
            values = leaves(yaml.load(text, Loader=YAML_LOADER))
    except (ValueError, yaml.YAMLError):
        values = []
    values += [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]
    for hours, minutes, seconds in re.findall(r"(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", text):
        values.append(int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds))
    for minutes, seconds in re.findall(r"\b(\d+)m(\d+(?:\.\d+)?)s\b", text):  # bash's `time`
        values.append(int(minutes) * 60 + float(seconds))
    return tuple(values)


def leaves(data: Any) -> list[float]:
    """The numeric leaves of a JSON or YAML value."""
    if isinstance(data, dict):
        return [v for item in data.values() for v in leaves(item)]
    if isinstance(data, list):
        return [v for item in data for v in leaves(item)]
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        return [float(data)]
    return []


def printed_as(text: str) -> tuple[float, float]:
    """The number `text` prints and half a unit of its last digit."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text.replace(",", "")), 0.5 * 10.0**-decimals


def agrees(value: float, text: str) -> bool:
    """Whether `value` prints as `text` at the text's precision (half a unit of its last digit)."""
    printed, half = printed_as(text)
    return abs(value - printed) <= half * (1 + 1e-9)


def claims(text: str) -> list[tuple[str, float | None]]:
    """The numbers of a unit's prose: (as printed, seconds for a time in units else None)."""
    prose = re.sub(r"`[^`]*`|\]\([^)]*\)|<[^>]*>|\[[^\]]*\]\(|^\| \d+\. ", " ", text)
    found: list[tuple[str, float | None]] = []
    for time in TIME_IN_UNITS.findall(prose):
        parts = re.findall(r"(\S+) (h|min|s)", time)
        found.append((time, sum(float(count) * UNIT_SECONDS[unit] for count, unit in parts)))
    prose = NOT_A_CLAIM.sub(" ", TIME_IN_UNITS.sub(" ", prose))
    for match in NUMBER.finditer(prose):
        text, after = match.group(), prose[match.end() : match.end() + 4]
        small = "." not in text and "," not in text and int(text) <= 12
        if small and not re.match(r" ?(%|s\b|min\b|h\b|x\b)", after):
            continue  # a count (2 cores, 3 open boxes, 13 turns), not a measurement
        found.append((text, None))
    return found


def held(artifacts: list[Path], text: str, seconds: float | None) -> bool:
    """Whether some number of the artifacts prints as `text` at some scale."""
    files = [file for path in artifacts for file in data_files(path)]
    if seconds is not None:  # a time: within half a second (bisected a little wide)
        return any(
            abs(v - seconds) <= 0.5
            for file in files
            for v in within(sorted_numbers_of(file), seconds - 1, seconds + 1)
        )
    printed, half = printed_as(text)
    # At each scale the values whose scaled print is near `printed` (bisected, a little wide
    # for round-off), each then confirmed by `agrees` itself.
    return any(
        agrees(v * scale, text)
        for file in files
        for scale in SCALES
        for v in within(
            sorted_numbers_of(file), (printed - 2 * half) / scale, (printed + 2 * half) / scale
        )
    )


@cache
def sorted_numbers_of(file: Path) -> list[float]:
    """The finite numbers of `numbers_of(file)`, sorted for `within` (NaN or infinity prints
    as no number)."""
    return sorted(v for v in numbers_of(file) if math.isfinite(v))


def within(values: list[float], low: float, high: float) -> list[float]:
    """The sorted `values` in [low, high]."""
    return values[bisect.bisect_left(values, low) : bisect.bisect_right(values, high)]


@cache
def machine_record(path: Path) -> frozenset[str]:
    """The machines an artifact's records name (see the module docstring)."""
    texts: list[str] = []
    folder = path if path.is_dir() else path.parent
    for file in data_files(path):
        if file.suffix == ".json":
            with contextlib.suppress(ValueError):
                texts.append(json.dumps(machine_fields(json.loads(file.read_text()))))
    for parent in [folder, *folder.parents]:  # the nearest folder with a record speaks for it
        if parent == ROOT or parent.parent == ROOT:
            break
        found = [f.read_text() for f in sorted(parent.glob("machine*.json"))]
        readme = parent / "README.md"
        if readme.exists() and parent.is_relative_to(ROOT / "results"):
            found.append(first_paragraph(readme.read_text()))
        if found:
            texts += found
            break
    joined = " ".join(texts)
    return frozenset(name for name, pattern in MACHINES.items() if re.search(pattern, joined))


def machine_fields(data: Any) -> list[Any]:
    """The values of a JSON value's machine fields (machine, cpu, gpu, device(s), platform)."""
    keys = {"machine", "cpu", "gpu", "device", "devices", "platform", "host"}
    if isinstance(data, dict):
        own = [v for k, v in data.items() if k in keys]
        return own + [f for v in data.values() for f in machine_fields(v)]
    if isinstance(data, list):
        return [f for item in data for f in machine_fields(item)]
    return []


def first_paragraph(text: str) -> str:
    """A README's title and first paragraph (where a run's README records its machine)."""
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return "\n".join(blocks[:2])


def check(spec: list[dict[str, Any]]) -> Report:
    """Every page's units and code against their artifacts and the CLI."""
    allowed = Counter((e["page"], str(t)) for e in spec for t in e["texts"])
    used: Counter[tuple[str, str]] = Counter()
    report = Report()
    for page in pages():
        page_units, code = units(page)
        for unit in page_units:
            unit.artifacts = cited(unit)
            check_unit(unit, report, allowed, used)
            for span in re.findall(r"`((?:yahtzee-jax|make|python) [^`]+)`", unit.text):
                count_command(unit.page, unit.line, span, report, partial=True)
        for line, text in code:
            count_command(str(page.relative_to(ROOT)), line, text, report)
    for key, count in (allowed - used).items():
        report.problems.append(f"{key[0]}: spec lists {key[1]} {count} more time(s) than found")
    return report


def check_unit(
    unit: Unit, report: Report, allowed: Counter[tuple[str, str]], used: Counter[tuple[str, str]]
) -> None:
    """The numbers and machine names of one unit against its artifacts."""
    found = claims(unit.text)
    if not unit.artifacts and unit.page != STRICT:
        report.numbers_beside_no_artifact += len(found)
        return
    for text, seconds in found:
        report.numbers += 1
        if unit.artifacts and held(unit.artifacts, text, seconds):
            continue
        if used[(unit.page, text)] < allowed[(unit.page, text)]:
            used[(unit.page, text)] += 1
            continue
        where = "no cited artifact" if unit.artifacts else "a unit that cites no artifact"
        report.problems.append(f"{unit.page}:{unit.line}: {text} is in {where}")
    named = {name for name, pattern in MACHINES.items() if re.search(pattern, unit.text)}
    if not named:
        return
    report.machines += len(named)
    records = [machine_record(a) for a in unit.artifacts]
    if not records or not all(records):  # an artifact without a record may be the named machine's
        report.machines_without_record += len(named)
        return
    recorded = frozenset().union(*records)
    for name in sorted(named - recorded):
        report.problems.append(
            f"{unit.page}:{unit.line}: names {name}, the artifacts record {sorted(recorded)}"
        )


def count_command(page: str, line: int, text: str, report: Report, partial: bool = False) -> None:
    """Check one command line and count it if it is one of ours."""
    checked, problem = check_command(text, partial)
    report.commands += checked
    if problem:
        report.problems.append(f"{page}:{line}: command {text.strip()[:70]!r}: {problem}")


def main(argv: list[str] | None = None) -> int:
    """Check the pages; 0 when every claim agrees."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=SPEC)
    args = parser.parse_args(argv)
    spec = yaml.safe_load(args.spec.read_text()).get("prose", [])
    report = check(spec)
    for line in report.problems:
        print(f"MISMATCH: {line}")
    print(
        f"{report.numbers} numbers beside an artifact checked"
        f" ({report.numbers_beside_no_artifact} more beside none), {report.machines} machine names"
        f" ({report.machines_without_record} of them beside artifacts with no machine record),"
        f" {report.commands} commands; {len(report.problems)} problems"
    )
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
