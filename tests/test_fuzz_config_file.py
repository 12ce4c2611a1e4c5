"""Config-file fuzzing: `train --config FILE` (the one config file a command reads by path)
given arbitrary bytes (not only text), a valid config truncated anywhere, wrong types and huge
values must start the work or refuse in one line with exit 2, never a traceback.

The long work is stopped where it would start (`fuzzing.stop_long_work`): only the reading and
validation of the file run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzing import check_one_line, invoke, stop_long_work
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VALID = b"train:\n  total_games: 80\n  games_per_update: 4\nnetwork:\n  hidden_size: 16\n"
# Values of a wrong type or size for fields of every kind (int, float, string, list, section).
HOSTILE_VALUES = ("[1, 2]", "{a: 1}", "1e999", "-1", "99999999999999999999999", "''", "~", "x")
FIELDS = ("train.total_games", "optim.lr", "train.rules", "env.opponent", "network", "algo")


def _run(tmp_path: Path, content: bytes) -> tuple[int, str]:
    """`train --config FILE` into a fresh run directory."""
    path = tmp_path / "config.yaml"
    path.write_bytes(content)
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    return invoke(["train", "--config", str(path), "--out", str(out)])


def _section(field: str, value: str) -> bytes:
    if "." not in field:
        return f"{field}: {value}\n".encode()
    section, key = field.split(".")
    return f"{section}:\n  {key}: {value}\n".encode()


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00binary\x80",  # not UTF-8: a UnicodeDecodeError traceback before the fix
        b"\x89PNG\r\n\x1a\n\x00\x00",
        VALID[:17],
        b"- a list\n- not a mapping\n",
        b"train: [unclosed\n",
        b"\x00" * 64,
    ],
    ids=["bad-utf8", "png", "truncated", "list", "unclosed", "nul"],
)
def test_a_bad_config_file_is_refused_in_one_line(content, tmp_path, monkeypatch, capsys):
    """Each hand-picked bad file: exit 2 and one line naming the file."""
    stop_long_work(monkeypatch)
    status, stderr = _run(tmp_path, content)
    check_one_line(status, stderr, allowed=(2,))
    if content[:1] in (b"\xff", b"\x89"):  # not text: the line names the file and why
        assert "config.yaml: not UTF-8 text" in stderr


KINDS = ("bytes", "truncated", "hostile value")


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(KINDS),
    data=st.binary(max_size=200),
    cut=st.integers(0, len(VALID)),
    field=st.sampled_from(FIELDS),
    value=st.sampled_from(HOSTILE_VALUES),
)
def test_any_config_file_starts_or_is_refused_in_one_line(
    kind, data, cut, field, value, tmp_path, monkeypatch
):
    """Random bytes, a valid file cut at any byte, or one field set to a hostile value."""
    stop_long_work(monkeypatch)
    content = {"bytes": data, "truncated": VALID[:cut], "hostile value": _section(field, value)}
    status, stderr = _run(tmp_path, content[kind])
    check_one_line(status, stderr)
