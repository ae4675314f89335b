from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_burnperf.storage import baselines as store
from pytest_burnperf.storage.baselines import BaselineError, BaselineStore


def entry(*samples: float) -> dict:
    return {"samples": list(samples), "dtype": "f32"}


def test_save_then_load_roundtrip_and_stable_text(tmp_path: Path) -> None:
    s = BaselineStore(tmp_path, "m1")
    written, errors = s.save(
        {"perf_tests/test_a.py": {"test_x[numpy-cpu-f32]": entry(0.1234567891, 0.2)}},
        {"id": "m1"},
    )
    path = tmp_path / "m1" / "perf_tests" / "test_a.json"
    assert written == [path] and errors == []
    doc = json.loads(path.read_text())
    assert doc["schema"] == store.SCHEMA and doc["version"] == store.VERSION
    assert doc["benchmarks"]["test_x[numpy-cpu-f32]"]["samples"] == [0.123457, 0.2]
    fresh = BaselineStore(tmp_path, "m1")
    assert fresh.get("perf_tests/test_a.py", "test_x[numpy-cpu-f32]") == {
        "samples": [0.123457, 0.2],
        "dtype": "f32",
    }
    assert fresh.get("perf_tests/test_a.py", "missing") is None
    assert fresh.get("perf_tests/test_b.py", "missing") is None
    # stable: saving the same content again gives the same bytes
    before = path.read_bytes()
    fresh.save(
        {"perf_tests/test_a.py": {"test_x[numpy-cpu-f32]": entry(0.123457, 0.2)}}, {"id": "m1"}
    )
    assert path.read_bytes() == before


def test_update_keeps_other_benchmarks(tmp_path: Path) -> None:
    s = BaselineStore(tmp_path, "m")
    s.save({"t.py": {"a": entry(1.0), "b": entry(2.0)}}, {})
    s.save({"t.py": {"b": entry(3.0)}}, {})
    bench = json.loads((tmp_path / "m" / "t.json").read_text())["benchmarks"]
    assert bench == {"a": entry(1.0), "b": entry(3.0)}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not valid JSON (line 1, column 2"),
        ("[]", "is not a pytest-burnperf baseline file"),
        (
            '{"schema": "pytest-burnperf-baselines", "version": 99, "benchmarks": {}}',
            "has schema version 99, this pytest-burnperf reads version 1 (written by a newer",
        ),
        (
            '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": {"samples": [0]}}}',
            'benchmarks["a"].samples[0]: must be between 1e-12 and 86400, got 0',
        ),
        (
            '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": '
            '{"samples": [1.0], "runs": [1.0]}}}',
            'benchmarks["a"].runs[0]: must be a non-empty list of seconds, got the number 1.0',
        ),
        (
            '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": '
            '{"samples": [1.0], "runs": [[1.0], [-2.0]]}}}',
            'benchmarks["a"].runs[1][0]: must be between 1e-12 and 86400, got -2.0',
        ),
    ],
)
def test_bad_files_are_reported_with_path_and_left_untouched(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "m" / "t.json"
    path.parent.mkdir()
    path.write_text(text)
    s = BaselineStore(tmp_path, "m")
    with pytest.raises(BaselineError) as info:
        s.get("t.py", "a")
    assert str(info.value) == f"baseline file {path}: {problem}" or problem in str(info.value)
    assert str(path) in str(info.value)
    written, errors = s.save({"t.py": {"a": entry(1.0)}}, {})
    assert written == [] and [e.path for e in errors] == [path]
    assert path.read_text() == text


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = BaselineStore(tmp_path, "m")
    s.save({"t.py": {"a": entry(1.0)}}, {})
    path = tmp_path / "m" / "t.json"
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        s.save({"t.py": {"a": entry(5.0)}}, {})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.json"]


def test_a_file_that_cannot_be_written_is_reported_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = BaselineStore(tmp_path, "m")
    s.save({"t.py": {"a": entry(1.0)}}, {})
    path = tmp_path / "m" / "t.json"
    before = path.read_bytes()

    def no_space(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    written, errors = s.save({"t.py": {"a": entry(5.0)}}, {})
    assert written == []
    assert [str(e) for e in errors] == [
        f"baseline file {path}: could not be written (No space left on device)"
    ]
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.json"]


def test_a_module_leading_outside_the_machine_directory_is_refused_not_written(
    tmp_path: Path,
) -> None:
    s = BaselineStore(tmp_path / "baselines", "m1")
    written, errors = s.save(
        {
            "../../evil.py": {"t": entry(0.1, 0.2)},
            "ok/test_a.py": {"t": entry(0.1, 0.2)},
        },
        {"id": "m1"},
    )
    assert written == [tmp_path / "baselines" / "m1" / "ok" / "test_a.json"]
    assert len(errors) == 1 and "test module '../../evil.py'" in str(errors[0])
    assert not list(tmp_path.rglob("evil*"))
    with pytest.raises(BaselineError, match=r"'\.\.' part"):
        s.get("../x.py", "t")


def test_a_root_that_cannot_be_created_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    s = BaselineStore(tmp_path / "afile" / "baselines", "m1")
    written, errors = s.save({"t.py": {"t": entry(0.1, 0.2)}}, {"id": "m1"})
    assert written == [] and len(errors) == 1
    assert "cannot be written" in str(errors[0]) and "no baseline file was changed" in str(
        errors[0]
    )


def test_counts_without_cycles_are_kept_but_counts_without_instructions_are_refused(
    tmp_path: Path,
) -> None:
    counted = {"timer": "counts", "samples": [120.0, 120.0], "dtype": "f64"}
    s = BaselineStore(tmp_path, "c")
    plain = {**counted, "counts": {"instructions": [120, 120], "cycles": [], "key": {}}}
    written, errors = s.save({"t.py": {"a": plain}}, {})
    assert errors == [] and written
    assert BaselineStore(tmp_path, "c").get("t.py", "a")["counts"]["cycles"] == []
    path = tmp_path / "c" / "t.json"
    doc = json.loads(path.read_text())
    doc["benchmarks"]["a"]["counts"]["instructions"] = []
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match=r"counts\.instructions.*non-empty list of counts"):
        BaselineStore(tmp_path, "c").get("t.py", "a")
    # issue 74: a call that executed no instruction, or fewer than none, is no count
    for bad in ([0, 0], [120, -5]):
        doc["benchmarks"]["a"]["counts"]["instructions"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(BaselineError, match=r"counts\.instructions\[\d\].*between 1 and"):
            BaselineStore(tmp_path, "c").get("t.py", "a")


def test_the_counted_processes_medians_are_kept_and_checked(tmp_path: Path) -> None:
    """A counts baseline recorded in several counted processes keeps each one's median; a
    list that is no list of counts is refused, naming the field."""
    counted = {"timer": "counts", "samples": [120.0, 121.0], "dtype": "f64"}
    pooled = {"instructions": [120, 121], "cycles": [], "key": {}, "process_medians": [120, 121]}
    s = BaselineStore(tmp_path, "c")
    written, errors = s.save({"t.py": {"a": {**counted, "counts": pooled}}}, {})
    assert errors == [] and written
    assert BaselineStore(tmp_path, "c").get("t.py", "a")["counts"]["process_medians"] == [120, 121]
    path = tmp_path / "c" / "t.json"
    for bad, said in (("120", "must be a list of counts"), ([120, 0], r"\[1\].*between 1 and")):
        doc = json.loads(path.read_text())
        doc["benchmarks"]["a"]["counts"]["process_medians"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(BaselineError, match=rf"counts\.process_medians.*{said}"):
            BaselineStore(tmp_path, "c").get("t.py", "a")


def test_each_counted_calls_place_is_kept_and_checked(tmp_path: Path) -> None:
    """Each counted call's place among its process's calls (core/counting/paired_counts.py) is
    kept; a list that is not one whole number from 1 per counted call is refused, named."""
    counted = {"timer": "counts", "samples": [120.0, 121.0], "dtype": "f64"}
    placed = {"instructions": [120, 121], "cycles": [], "key": {}, "positions": [12, 13]}
    s = BaselineStore(tmp_path, "c")
    written, errors = s.save({"t.py": {"a": {**counted, "counts": placed}}}, {})
    assert errors == [] and written
    assert BaselineStore(tmp_path, "c").get("t.py", "a")["counts"]["positions"] == [12, 13]
    path = tmp_path / "c" / "t.json"
    for bad, said in (
        ("12", "one place per counted call"),
        ([12], "one place per counted call"),
        ([12, 0], r"\[1\].*between 1 and"),
        ([12, 1.5], r"\[1\].*whole number"),
    ):
        doc = json.loads(path.read_text())
        doc["benchmarks"]["a"]["counts"]["positions"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(BaselineError, match=rf"counts\.positions.*{said}"):
            BaselineStore(tmp_path, "c").get("t.py", "a")


@pytest.mark.parametrize("interrupted", [False, True])
def test_the_lock_object_is_gone_before_the_signal_hold_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupted: bool
) -> None:
    """filelock's ``__del__`` does work; a Ctrl-C landing in it after the hold had ended was
    swallowed with an "Exception ignored" traceback. The store drops its lock object while the
    signals are still held, whether the update ends normally or interrupted."""
    from pytest_burnperf.host import interrupts

    freed: list[bool] = []

    class Lock:
        def acquire(self, timeout: float) -> None:
            if interrupted:
                interrupts._holding.received.append("SIGINT")  # type: ignore[union-attr]

        def release(self) -> None:
            pass

        def __del__(self) -> None:
            freed.append(interrupts._holding is not None)

    s = BaselineStore(tmp_path, "m")
    monkeypatch.setattr(s, "lock", Lock)
    if interrupted:
        with pytest.raises(store.Interrupted):
            s.save({"t.py": {"a": {"samples": [1.0]}}}, {})
    else:
        s.save({"t.py": {"a": {"samples": [1.0]}}}, {})
    assert freed == [True]
