"""Two players compared on the same matches: each match's result kept in its JSON, and the
difference of their win rates with an interval that uses the pairing.

A seed's match i deals the same dice to the opponents whoever plays the evaluated seat (their
play does not read it), so two players' results on one seed are paired: both face the same
opponent totals. Their win rates then differ by much less noise than two independent samples
would carry, and the interval of the difference is the paired one (the mean and standard error
of the per-match differences), not two Wilson intervals set side by side.
"""

from __future__ import annotations

import base64
import hashlib
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.statistics import Z_95, wilson_interval

# How `per_match` stores the results: one byte a match (result + 1: 0 loss, 1 draw, 2 win),
# zlib-compressed, in base64 (about 18 KB for 100,000 matches).
ENCODING = "base64(zlib(uint8 result + 1 per match, game order)): 0 loss, 1 draw, 2 win"


def opponent_digest(other_total: np.ndarray) -> str:
    """A fingerprint of the best opponent's total in each match (game order): two results
    pair only when their opponents scored the same in every match."""
    data = np.ascontiguousarray(other_total, dtype="<i4").tobytes()
    return hashlib.sha256(data).hexdigest()[:32]


def per_match_record(result: np.ndarray, other_total: np.ndarray) -> dict[str, Any]:
    """Each match's result (1 win, 0 draw, -1 loss) packed for a JSON, with its opponents'
    fingerprint."""
    packed = zlib.compress((np.asarray(result) + 1).astype(np.uint8).tobytes(), 9)
    return {
        "encoding": ENCODING,
        "results": base64.b64encode(packed).decode("ascii"),
        "opponent_digest": opponent_digest(other_total),
    }


def match_results(record: dict[str, Any], source: str | None = None) -> np.ndarray:
    """Each match's result (1 win, 0 draw, -1 loss) of a match JSON's `per_match`; `source`
    names the file in the one-line errors (default: its seed)."""
    where = source or f"seed {record.get('seed')}"
    per_match = record.get("per_match")
    if record.get("player") == "ceiling":  # told the scores, on other dice: no one's matches
        raise ConfigError(f"{where}: the ceiling's oracle plays no real matches to pair")
    if per_match is None:
        why = "written before match files kept them; play it again"
        raise ConfigError(f"{where}: this match JSON keeps no per-match results ({why})")
    encoding = per_match.get("encoding")
    if encoding != ENCODING:
        shown = repr(encoding) if len(repr(encoding)) <= 40 else f"{repr(encoding)[:37]}..."
        raise ConfigError(f"{where}: per_match encoding {shown} is not {ENCODING!r}")
    try:
        raw = zlib.decompress(base64.b64decode(per_match["results"], validate=True))
    except (KeyError, TypeError, ValueError, zlib.error) as error:  # binascii.Error: a ValueError
        raise ConfigError(f"{where}: per_match results damaged ({error!r})") from None
    if not isinstance(per_match.get("opponent_digest"), str):  # what tells the matches apart
        raise ConfigError(f"{where}: per_match has no opponent_digest")
    codes = np.frombuffer(raw, np.uint8)
    result = codes.astype(np.int8) - 1
    if len(result) != record["games"]:
        raise ConfigError(
            f"{where}: per_match holds {len(result)} results for {record['games']} games"
        )
    if codes.max(initial=0) > 2:  # the count was right: say what is wrong (200 was -57)
        raise ConfigError(f"{where}: per_match holds results other than a win, draw or loss")
    return result


def paired_difference(first: np.ndarray, second: np.ndarray) -> dict[str, Any]:
    """The first player's win rate minus the second's over the same matches (results 1 win,
    0 draw, -1 loss), with the 95 % interval of the per-match differences' mean."""
    first_wins = np.asarray(first) == 1
    second_wins = np.asarray(second) == 1
    games = len(first_wins)
    if games != len(second_wins) or games < 2:
        raise ConfigError(
            f"paired results need the same matches, 2 or more: {games}, {len(second_wins)}"
        )
    only_first = int(np.sum(first_wins & ~second_wins))
    only_second = int(np.sum(second_wins & ~first_wins))
    difference = (only_first - only_second) / games
    # The differences are +1 (only the first won), -1 (only the second) or 0: their sample
    # variance from the two discordant counts alone.
    variance = ((only_first + only_second) / games - difference**2) * games / (games - 1)
    stderr = math.sqrt(max(variance, 0.0) / games)
    return {
        "games": games,
        "first_wins": int(first_wins.sum()),
        "second_wins": int(second_wins.sum()),
        "only_first_won": only_first,
        "only_second_won": only_second,
        "difference": difference,
        "stderr": stderr,
        "interval_95": [difference - Z_95 * stderr, difference + Z_95 * stderr],
    }


# What two match JSONs must share to be the same matches.
SAME_MATCHES = ("seed", "games", "rules", "players", "opponent")


# Each shared field's type in a `match --out` file (bool is an int to Python: refused apart).
FIELD_TYPES = {"seed": int, "games": int, "rules": str, "players": int, "opponent": str}
KIND_NAMES = {int: "an integer", str: "a string"}


def check_match_record(record: dict[str, Any], source: str) -> None:
    """One line naming `source` when `record` is not a `match --out` file's shape: the shared
    fields missing or of another type, or `per_match` not a mapping."""
    missing = [key for key in SAME_MATCHES if key not in record]
    if missing:
        raise ConfigError(f"{source}: no {', '.join(missing)}: not a `match --out` file")
    for key, kind in FIELD_TYPES.items():
        value = record[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{source}: {key} is {value!r}, not {KIND_NAMES[kind]}")
    if record["games"] < 0:
        raise ConfigError(f"{source}: games is {record['games']}")
    if "per_match" in record and not isinstance(record["per_match"], dict):
        raise ConfigError(f"{source}: per_match is not a mapping: not a `match --out` file")


def compare_match_files(
    first: Sequence[dict[str, Any]],
    second: Sequence[dict[str, Any]],
    sources: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The paired difference of two players over the seeds both played (one match JSON per
    seed each, paired by seed), each pair checked to be the same matches; `sources` name the
    records (first's, then second's) in the one-line errors (default: "match JSON n")."""
    records = (*first, *second)
    names = sources or [f"match JSON {number}" for number in range(1, len(records) + 1)]
    for record, name in zip(records, names, strict=True):
        check_match_record(record, name)
    source = {id(record): name for record, name in zip(records, names, strict=True)}
    by_seed = {record["seed"]: record for record in second}
    if len(by_seed) != len(second) or len({r["seed"] for r in first}) != len(first):
        raise ConfigError("give each player one match JSON per seed")
    if set(by_seed) != {record["seed"] for record in first}:
        seeds = sorted(r["seed"] for r in first), sorted(by_seed)
        raise ConfigError(f"the two players' seeds differ: {seeds[0]} and {seeds[1]}")
    firsts, seconds = [], []
    for record in first:
        other = by_seed[record["seed"]]
        for key in SAME_MATCHES:
            if record[key] != other[key]:
                raise ConfigError(
                    f"seed {record['seed']}: {key} {record[key]!r} against {other[key]!r}"
                )
        firsts.append(match_results(record, source[id(record)]))  # one without results says so
        seconds.append(match_results(other, source[id(other)]))
        if record["per_match"].get("opponent_digest") != other["per_match"].get("opponent_digest"):
            raise ConfigError(
                f"seed {record['seed']}: the opponents' totals differ; not the same matches"
            )
    for key in ("rules", "players", "opponent"):  # the seeds pooled are one kind of match
        values = sorted({str(record[key]) for record in first})
        if len(values) > 1:
            raise ConfigError(f"the seeds' {key} differ ({', '.join(values)}): pool one kind")
    result = paired_difference(np.concatenate(firsts), np.concatenate(seconds))
    intervals = {}
    for who in ("first", "second"):
        wins = result[f"{who}_wins"]
        intervals[f"{who}_win_rate"] = wins / result["games"]
        intervals[f"{who}_win_interval_95"] = list(wilson_interval(wins, result["games"]))
    seeds = sorted(record["seed"] for record in first)
    return {
        "seeds": seeds,
        **{key: first[0][key] for key in ("rules", "players", "opponent")},
        **result,
        **intervals,
    }
