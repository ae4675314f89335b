"""The strict reader: every malformed baseline file is a clear `path: field: problem` error,
never a traceback, a hang or a silently misread value; the file is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_burnperf.core.text import escape
from pytest_burnperf.storage.baselines import BaselineError, BaselineStore, load_file
from pytest_burnperf.storage.jsonfile import FileFormatError, read_json

HEAD = '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": '


def one(entry: str) -> str:
    return HEAD + '{"a": ' + entry + "}}"


BAD_TEXT = [
    (one('{"samples": [Infinity]}'), "Infinity is not a JSON number"),
    (one('{"samples": [NaN]}'), "NaN is not a JSON number"),
    (one('{"samples": [-Infinity]}'), "-Infinity is not a JSON number"),
    (one('{"samples": [1e400]}'), "number '1e400' is out of range"),
    (one('{"samples": [' + "9" * 5000 + "]}"), "integer of 5000 digits is out of range"),
    (one('{"samples": [5e-324]}'), 'benchmarks["a"].samples[0]: must be between 1e-12'),
    (one('{"samples": [1e9]}'), 'benchmarks["a"].samples[0]: must be between 1e-12 and 86400'),
    (one('{"samples": [true]}'), "samples[0]: must be a number, got true"),
    (one('{"samples": ["0.1"]}'), "samples[0]: must be a number, got the string '0.1'"),
    (one('{"samples": []}'), "samples: must be a non-empty list of seconds"),
    (one('{"samples": [0.1], "l2_flush": "false"}'), "l2_flush: must be true or false"),
    (one('{"samples": [0.1], "timer": 5}'), "timer: must be a string, got the number 5"),
    (one('{"samples": [0.1], "timer": "wall"}'), "timer: must be one of host, device"),
    (one('{"samples": [0.1], "loops": 0}'), "loops: must be between 1 and"),
    (one('{"samples": [0.1], "loops": 1.5}'), "loops: must be a whole number"),
    (one('{"samples": [0.1], "device": []}'), "device: must be an object, got a list"),
    (one('{"samples": [0.1], "device": {"identity": "2"}}'), "device.identity: must be a whole"),
    (one('{"samples": [0.1], "host": {}}'), "host: must be a list of host-state windows"),
    (one('{"samples": [0.1], "host_probe": {"copy": -1}}'), "host_probe.copy: must be between"),
    (
        one('{"samples": [0.1], "recorded": {"libraries": {"numpy": "2.0\\nperf: 2 unchanged"}}}'),
        "recorded.libraries.numpy: contains a control character: 2.0\\x0aperf: 2 unchanged",
    ),
    (one('{"samples": [0.1], "dtype": "\\u001b[31mred"}'), "dtype: contains a control character"),
    (one('{"samples": [0.1], "samples": [0.2]}'), "duplicate key 'samples'"),
    (HEAD + '{"a": {"samples": [0.1]}, "a": {"samples": [0.2]}}}', "duplicate key 'a'"),
    (HEAD + "[]}", "benchmarks: must be an object, got a list"),
    (HEAD + '{"a": 5}}', 'benchmarks["a"]: must be an object, got the number 5'),
    ('{"schema": "pytest-burnperf-baselines", "version": true, "benchmarks": {}}', "version True"),
    ('{"schema": "pytest-burnperf-baselines", "version": "1", "benchmarks": {}}', "version '1'"),
    ('{"schema": "x", "version": 1}', "is not a pytest-burnperf baseline file"),
    # deep enough for every Python's JSON decoder to give up (3.12's parses 5,000 levels)
    ("[" * 200_000 + "]" * 200_000, "is nested too deeply"),
    ("", "is not valid JSON (line 1, column 1"),
    ("null", "is not a pytest-burnperf baseline file"),
]


@pytest.mark.parametrize(("text", "problem"), BAD_TEXT)
def test_malformed_baseline_text_is_named_and_kept(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "m" / "t.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load_file(path)
    message = str(info.value)
    assert message.startswith(f"baseline file {path}: ") and problem in message
    assert "\n" not in message and "\x1b" not in message
    written, errors = BaselineStore(tmp_path, "m").save({"t.py": {"b": {"samples": [1.0]}}}, {})
    assert written == [] and [e.path for e in errors] == [path]
    assert path.read_text(encoding="utf-8") == text


def test_non_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"schema": "\xff"}')
    with pytest.raises(BaselineError, match=r"t\.json: is not UTF-8 text \(byte 12\)"):
        load_file(path)


def test_not_a_regular_file_is_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(BaselineError, match=r"fifo\.json: is not a regular file \(a FIFO\)"):
        load_file(fifo)  # a blocking read would hang here
    endless = tmp_path / "zero.json"
    endless.symlink_to("/dev/zero")
    with pytest.raises(BaselineError, match=r"zero\.json: is not a regular file \(a character"):
        load_file(endless)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(BaselineError, match=r"dir\.json: is not a regular file \(a directory\)"):
        load_file(tmp_path / "dir.json")


def test_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(" " * 2000)
    with pytest.raises(FileFormatError, match=r"big\.json: is 2000 bytes, more than the 1000"):
        read_json(path, max_bytes=1000)


def test_nul_in_path_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(FileFormatError, match="cannot be read"):
        read_json(tmp_path / "a\0b.json")


def test_a_valid_file_reads_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    entry = {"samples": [0.1, 0.2], "l2_flush": False, "timer": "host", "loops": 3}
    path.write_text(one(json.dumps(entry)))
    assert load_file(path) == {"a": entry}


def test_escape_makes_control_characters_visible() -> None:
    assert escape("plain ünïcode") == "plain ünïcode"
    assert escape("a\nb\x1b[2J\x7f\x9b") == "a\\x0ab\\x1b[2J\\x7f\\x9b"


def test_a_field_named_by_a_key_of_the_file_is_escaped(tmp_path: Path) -> None:
    """A key from the file (a baseline's host_probe holds any names) with a newline in it
    cannot start a line of its own in the message (found by tests/reliability's fuzzing)."""
    exc = FileFormatError(tmp_path / "b.json", "must be a number, got false", "probe.\n\x1b[2J")
    assert "\n" not in str(exc) and "\x1b" not in str(exc)
    assert str(exc).endswith("probe.\\x0a\\x1b[2J: must be a number, got false")
