"""The counts instrument (instruments/instruction_counts.py): its key's thread count, and a
process not under valgrind refused with the benchmark's name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_burnperf.instruments.instruction_counts import count, counted_threads
from pytest_burnperf.instruments.instrument import Unavailable


def test_threads_are_kept_and_the_default_names_the_cpus_it_means(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert counted_threads(1) == 1 and counted_threads(4) == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert counted_threads(0) == "the libraries' default on 3 CPUs"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    assert counted_threads(0) != "the libraries' default on 3 CPUs"  # another pool: another key


def test_a_process_not_under_valgrind_is_refused_with_the_benchmarks_name(
    tmp_path: Path,
) -> None:
    calls: list[int] = []

    def make_call() -> tuple[object, None]:
        return (lambda: calls.append(1)), None

    with pytest.raises(Unavailable, match=r"test_x\.py::test_y.*does not run under valgrind"):
        count("test_x.py::test_y", object(), 1, make_call, count_dir=tmp_path, calls=2, limit_s=1)
    assert calls == []  # nothing ran
