"""The counts key's thread count (plugin/counting.counted_threads)."""

from __future__ import annotations

import os

import pytest

from pytest_burnperf.plugin.counting import counted_threads


def test_threads_are_kept_and_the_default_names_the_cpus_it_means(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert counted_threads(1) == 1 and counted_threads(4) == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert counted_threads(0) == "the libraries' default on 3 CPUs"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    assert counted_threads(0) != "the libraries' default on 3 CPUs"  # another pool: another key
