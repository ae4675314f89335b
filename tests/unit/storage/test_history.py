"""The results store (SQLite here; PostgreSQL in tests/test_history_postgres.py), its schema
versions, the series and change points, -k expressions and judging against stored runs."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

sa = pytest.importorskip("sqlalchemy")
pytest.importorskip("ruptures")

from pytest_burnperf.core.memory.recorded_memory import RecordedMemory  # noqa: E402
from pytest_burnperf.storage.history import redact, resolve_url  # noqa: E402
from pytest_burnperf.storage.history import store as store_mod  # noqa: E402
from pytest_burnperf.storage.history.changepoints import find  # noqa: E402
from pytest_burnperf.storage.history.query import against_history, series, text  # noqa: E402
from pytest_burnperf.storage.history.select import ExpressionError, matcher  # noqa: E402
from pytest_burnperf.storage.history.store import Store, StoreError  # noqa: E402


def doc(
    i: int,
    level: float = 1e-3,
    *,
    branch: str = "main",
    hw: str = "x86-64-v3-f25m1",
    tests: tuple[str, ...] = ("t.py::test_a[numpy-cpu-f32]", "t.py::test_b[torch-cpu-f32]"),
) -> dict[str, Any]:
    rng = random.Random(i)
    return {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00",
        "machine": {"id": f"linux-{hw}", "hardware_class": hw},
        "git": {"commit": f"{i:040x}", "dirty": False, "branch": branch},
        "settings": {"threshold": 0.05},
        "results": [
            {
                "test": t,
                "name": t.split("::")[1],
                "benchmark": t.split("::")[1].split("[")[0],
                "backend": t.split("[")[1].split("-")[0],
                "kind": "cpu",
                "dtype": "f32",
                "runs": [
                    [level * (1 + 0.002 * rng.gauss(0, 1)) for _ in range(10)] for _ in range(3)
                ],
                "verdict": {"status": "unchanged", "ratio": 1.0, "min_detectable_slowdown": 0.06},
            }
            for t in tests
        ],
    }


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'h.sqlite'}"


def test_a_run_is_stored_once_whole(url: str) -> None:
    with Store(url) as s:
        assert s.record(doc(0)) is True
        assert s.record(doc(0)) is False  # the same run again: nothing added
        assert s.record(doc(1)) is True
        assert s.counts() == (2, 4)
        pts = s.points(with_runs=True)
    assert [p["commit"][-1] for p in pts] == ["0", "0", "1", "1"]
    a = pts[0]
    assert a["branch"] == "main" and a["hardware_class"] == "x86-64-v3-f25m1"
    assert a["low"] < a["median"] < a["high"]
    assert len(a["runs"]) == 3 and len(a["runs"][0]) == 10


def test_points_newest_n_per_series_and_filters(url: str) -> None:
    with Store(url) as s:
        for i in range(6):
            s.record(doc(i, branch="main" if i % 2 == 0 else "feature"))
        s.record(doc(99, hw="x86-64-v4-f25m17"))
        last = s.points(last=2)
        main = s.points(branch="main")
        v4 = s.points(hardware_class="x86-64-v4-f25m17")
    # 2 newest per (test, class): 2 tests x (2 of v3 + 1 of v4)
    assert len(last) == 6
    assert {p["commit"][-2:] for p in last if p["hardware_class"].startswith("x86-64-v3")} == {
        "04",
        "05",
    }
    assert {p["branch"] for p in main} == {"main"}
    assert {p["hardware_class"] for p in v4} == {"x86-64-v4-f25m17"}
    with Store(url) as s:
        last_main = s.points(last=1, branch="main")
    # the newest main run of each class (99 is 0x63)
    assert {(p["hardware_class"][:9], p["commit"][-2:]) for p in last_main} == {
        ("x86-64-v3", "04"),
        ("x86-64-v4", "63"),
    }


def test_last_n_counts_the_runs_that_have_the_test(url: str) -> None:
    with Store(url) as s:
        for i in range(5):
            d = doc(i)
            if i >= 2:  # the second test only ran in the first two runs
                d["results"] = d["results"][:1]
            s.record(d)
        last = s.points(last=2)
    by_test: dict[str, set[str]] = {}
    for p in last:
        by_test.setdefault(p["test"], set()).add(p["commit"][-2:])
    first, second = sorted(by_test)
    assert by_test[first] == {"03", "04"}
    assert by_test[second] == {"00", "01"}  # its own newest two, not dropped


def test_the_default_store_keeps_out_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BURNPERF_STORE", raising=False)
    url = resolve_url(None, tmp_path)
    assert url == f"sqlite:///{tmp_path / '.burnperf' / 'history.sqlite'}"
    Store(url).close()
    assert (tmp_path / ".burnperf" / ".gitignore").read_text().endswith("*\n")
    monkeypatch.setenv("BURNPERF_STORE", "postgresql://u:secret@db/perf")
    assert resolve_url("local", tmp_path) == "postgresql://u:secret@db/perf"
    assert resolve_url("runs.sqlite", tmp_path) == f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert redact("postgresql://u:secret@db/perf") == "postgresql://u:***@db/perf"


def test_schema_versions(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(url) as s:
        s.record(doc(0))

    # a newer pytest-burnperf adds a column; opening the old store migrates it, data kept
    def add_note(conn: Any) -> None:
        conn.execute(sa.text("ALTER TABLE burnperf_runs ADD COLUMN note VARCHAR(64)"))

    now = store_mod.SCHEMA_VERSION
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", now + 1)
    monkeypatch.setattr(store_mod, "MIGRATIONS", {now: add_note})
    with Store(url) as s:
        assert s.counts() == (1, 2)
        with s.engine.connect() as conn:
            cols = {c["name"] for c in sa.inspect(conn).get_columns("burnperf_runs")}
            version = conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one()
    assert "note" in cols and version == str(now + 1)
    # and an older pytest-burnperf refuses the newer store instead of writing into it
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", now)
    with pytest.raises(StoreError, match=f"schema version {now + 1} was written by a newer"):
        Store(url)


MiB = 1 << 20
MEMORY_KEY = {"meter": "memray", "python": "3.11", "versions": {"numpy": "2.1.0"}}


def with_memory(d: dict[str, Any], peak: int, key: dict[str, Any] = MEMORY_KEY) -> dict[str, Any]:
    """``d`` with its first result's memory per call tracked (the --perf-json ``memory``)."""
    d["results"][0]["memory"] = {
        "status": "unchanged",
        "figures": {"allocated_bytes": peak, "allocations": 2, "peak_bytes": peak},
        "key": key,
        "sites": {"add (t.py:9) [c = a + b]": peak},
        "reason": "",
        "max_memory_bytes": None,
    }
    return d


def test_memory_per_call_is_stored_beside_the_time(url: str) -> None:
    from pytest_burnperf.storage.history.query import recorded_before

    with Store(url) as s:
        s.record(with_memory(doc(0), 8 * MiB))
        s.record(with_memory(doc(1), 9 * MiB))
        s.record(doc(2))  # memory not tracked in this run
        s.record(with_memory(doc(3, hw="other-class"), 1 * MiB))
        points = s.points()
        whole = s.points(with_sides=True)
    a = [
        p
        for p in points
        if p["test"].startswith("t.py::test_a") and p["hardware_class"] != "other-class"
    ]
    assert [p["memory_peak"] for p in a] == [8 * MiB, 9 * MiB, None]
    assert {p["memory_peak"] for p in points if "test_b" in p["test"]} == {None}
    assert "memory" not in points[0] and "memory" in whole[0]
    kept = recorded_before(doc(4), whole)  # the newest of the same class that tracked it
    assert set(kept) == {"memory"}  # by the field of each verdict judged beside
    before = kept["memory"]
    (test,) = before
    record, name = before[test]
    assert isinstance(record, RecordedMemory)
    assert record.figures is not None and record.figures.peak == 9 * MiB
    assert record.key == MEMORY_KEY and record.sites == {"add (t.py:9) [c = a + b]": 9 * MiB}
    assert name == "the stored run of 0000000000 (2026-11-01T01:00)"
    (shown,) = series(a)
    assert shown.as_json()["points"][0]["memory_peak"] == 8 * MiB
    assert any(line.endswith("peak 8.0 MiB/call") for line in text([shown]))


def test_a_memory_record_that_is_not_one_stores_nothing(url: str) -> None:
    bad = with_memory(doc(0), MiB)
    bad["results"][0]["memory"]["figures"]["peak_bytes"] = "a lot"
    with Store(url) as s:
        with pytest.raises(StoreError, match=r"results\[0\]\.memory\.figures: peak_bytes"):
            s.record(bad)
        assert s.counts() == (0, 0)


def test_a_version_1_store_gains_the_memory_columns(url: str) -> None:
    """A store written before memory was kept (schema 1): opening it adds the columns, its
    runs kept, their memory null; a new run's memory is stored."""
    with Store(url) as s:
        s.record(doc(0))
        with s.engine.begin() as conn:  # back to version 1's table
            for col in (
                "memory_peak",
                "memory_allocated",
                "memory_allocations",
                "memory",
                "counts",
                "measure",
            ):
                conn.execute(sa.text(f"ALTER TABLE burnperf_results DROP COLUMN {col}"))
            conn.execute(sa.text("UPDATE burnperf_meta SET value = '1'"))
    with Store(url) as s:
        s.record(with_memory(doc(1), 4 * MiB))
        points = s.points()
        with s.engine.connect() as conn:
            version = conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one()
    assert version == str(store_mod.SCHEMA_VERSION) == "3"
    assert [p["memory_peak"] for p in points if "test_a" in p["test"]] == [None, 4 * MiB]


def test_a_store_written_before_a_side_was_registered_gains_its_columns(url: str) -> None:
    """A side's columns are no schema version's: a current store whose results table lacks
    them (written before the side was registered) gains them when opened, null in its runs,
    and nothing else changes; the version stays."""
    side_columns = list(store_mod.SIDE_COLUMNS)
    assert side_columns == ["memory_peak", "memory_allocated", "memory_allocations", "memory"]
    with Store(url) as s:
        s.record(doc(0))
        with s.engine.begin() as conn:
            for col in side_columns:
                conn.execute(sa.text(f"ALTER TABLE burnperf_results DROP COLUMN {col}"))
    with Store(url) as s:
        s.record(with_memory(doc(1), 4 * MiB))
        points = s.points(with_sides=True)
        with s.engine.connect() as conn:
            cols = [c["name"] for c in sa.inspect(conn).get_columns("burnperf_results")]
            version = conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one()
    assert version == str(store_mod.SCHEMA_VERSION)
    assert cols[-len(side_columns) :] == side_columns  # added after the rest, once
    assert [p["memory_peak"] for p in points if "test_a" in p["test"]] == [None, 4 * MiB]
    assert [p["memory"] is None for p in points if "test_a" in p["test"]] == [True, False]
    with Store(url) as s:  # opened again: nothing left to add
        assert s.counts() == (2, 4)


def test_a_schema_version_that_is_not_a_number_is_named_and_left_untouched(url: str) -> None:
    with Store(url) as s:
        s.record(doc(0))
        with s.engine.begin() as conn:
            conn.execute(sa.text("UPDATE burnperf_meta SET value = 'two'"))
    with pytest.raises(StoreError, match="schema version 'two' is not a number"):
        Store(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one() == "two"
        assert conn.execute(sa.text("SELECT count(*) FROM burnperf_runs")).scalar_one() == 1
    engine.dispose()


def test_a_write_locked_store_ends_the_wait_on_time_or_at_ctrl_c(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the SQLite store's write lock: the run gives up after
    LOCK_WAIT_S (not a minute) and at once when a signal arrives, writing nothing."""
    import os
    import signal
    import sqlite3

    from pytest_burnperf.host.interrupts import held_signals

    with Store(url) as s:
        s.record(doc(0))
    other = sqlite3.connect(tmp_path / "h.sqlite", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:

        def attempt(i: int) -> None:
            with Store(url) as s:  # opening reads the schema: it waits for the lock too
                s.record(doc(i))

        monkeypatch.setattr(store_mod, "LOCK_WAIT_S", 1.0)
        with pytest.raises(StoreError, match="another process held its write lock for 1 s"):
            attempt(1)
        monkeypatch.setattr(store_mod, "LOCK_WAIT_S", 3600.0)  # only the signal ends it
        with held_signals():
            os.kill(os.getpid(), signal.SIGINT)
            with pytest.raises(StoreError, match="SIGINT received while waiting"):
                attempt(2)
    finally:
        other.execute("ROLLBACK")
        other.close()
    with Store(url) as s:
        assert s.counts()[0] == 1


def test_a_store_created_by_another_run_at_the_same_moment_is_used(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs creating a new SQLite store at once: the second's CREATE finds the table the
    first just committed ("already exists"); it tries again and uses the store (CI saw a shard
    run exit 3 on it)."""
    real = store_mod.prepare
    calls: list[int] = []

    def raced(conn: Any, url: str = "") -> None:
        calls.append(1)
        if len(calls) == 1:
            with Store(url):  # the other run creates it in between
                pass
            raise sa.exc.OperationalError("CREATE TABLE", {}, Exception("table x already exists"))
        real(conn, url)

    monkeypatch.setattr(store_mod, "prepare", raced)
    with Store(url) as s:
        s.record(doc(0))
        assert s.counts()[0] == 1
    assert len(calls) == 3  # the raced try, the other run's, the try again


def test_unusable_stores_are_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a usable store URL"):
        Store("nosuchdb://x/y")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot create its directory"):
        Store(f"sqlite:///{tmp_path / 'file' / 'sub' / 'h.sqlite'}")
    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"garbage\.sqlite"):
        Store(f"sqlite:///{bad}")


# --------------------------------------------------------------------------------------------
# change points and series


def steady(n: int, sigma: float, seed: int, level: float = 1e-3) -> list[float]:
    rng = random.Random(seed)
    return [level * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_a_planted_step_is_found_at_its_run() -> None:
    values = steady(30, 0.013, 1)
    values[17:] = [v * 1.10 for v in values[17:]]
    (cp,) = find(values)
    assert abs(cp.index - 17) <= 1
    assert cp.ratio == pytest.approx(1.10, abs=0.03)


def test_the_kernel_search_segments_as_pelt_l2() -> None:
    """changepoints.find runs ruptures' C kernel search with the linear kernel for speed; it
    must cut exactly where ruptures' Pelt with the l2 cost cuts."""
    import numpy as np
    import ruptures

    rng = np.random.default_rng(3)
    for k in range(60):
        n = int(rng.integers(6, 80))
        x = rng.normal(0.0, 0.01, n)
        if k % 2:
            x[n // 3 :] += 0.04
        signal = x.reshape(-1, 1)
        pen = 4 * 1e-4 * math.log(n)
        pelt = ruptures.Pelt(model="l2", min_size=3, jump=1).fit(signal).predict(pen=pen)
        kern = ruptures.KernelCPD(kernel="linear", min_size=3, jump=1).fit(signal).predict(pen=pen)
        assert kern == pelt, (k, n)


def test_a_steady_series_has_no_change_point() -> None:
    assert find(steady(40, 0.013, 2)) == []
    assert find([1e-3] * 20) == []
    assert find([1e-3, 2e-3]) == []  # too short to say


def test_series_groups_by_class_and_test_and_marks_the_shift() -> None:
    pts = []
    for i, v in enumerate(steady(20, 0.01, 3)):
        level = v * (1.2 if i >= 12 else 1.0)
        for test in ("t::a[numpy-cpu-f32]", "t::b[torch-cpu-f32]"):
            pts.append(
                {
                    "test": test,
                    "name": test[3:],
                    "backend": test[5:10].strip("["),
                    "kind": "cpu",
                    "dtype": "f32",
                    "hardware_class": "v3",
                    "median": level,
                    "low": None,
                    "high": None,
                    "created": f"2026-11-{i + 1:02d}",
                    "commit": f"c{i:02d}",
                    "branch": "main",
                    "status": "unchanged",
                }
            )
    got = series(pts, keep=matcher("numpy"), device=None)
    assert [s.test for s in got] == ["t::a[numpy-cpu-f32]"]
    (s,) = got
    assert [c.index for c in s.changes] == [12]
    lines = text(got)
    assert any(ln.split()[1] == "c12" and "<- shift +" in ln for ln in lines)
    as_json = s.as_json()
    assert as_json["change_points"][0]["commit"] == "c12"
    assert series(pts, device="torch-cpu")[0].test == "t::b[torch-cpu-f32]"


@pytest.mark.parametrize(
    ("expr", "hits"),
    [
        ("matmul", ["test_matmul[numpy]", "test_matmul[torch]"]),
        ("matmul and not torch", ["test_matmul[numpy]"]),
        ("(sort or MATMUL) and numpy", ["test_matmul[numpy]", "test_sort[numpy]"]),
        ("", ["test_matmul[numpy]", "test_matmul[torch]", "test_sort[numpy]"]),
    ],
)
def test_k_expressions(expr: str, hits: list[str]) -> None:
    names = ["test_matmul[numpy]", "test_matmul[torch]", "test_sort[numpy]"]
    keep = matcher(expr)
    assert [n for n in names if keep(n)] == hits


@pytest.mark.parametrize("expr", ["a and", "(a", "a)", "or a", "a b"])
def test_bad_k_expressions(expr: str) -> None:
    with pytest.raises(ExpressionError, match="-k"):
        matcher(expr)


def test_judged_against_the_last_runs(url: str) -> None:
    with Store(url) as s:
        for i in range(5):
            s.record(doc(i))
        s.record(doc(50, level=2e-3, hw="other-class"))
        pts = s.points(last=20, with_runs=True)
    slow = doc(10, level=1.3e-3)
    judged = dict((t, (v, n)) for t, v, n in against_history(slow, pts, alpha=0.01, threshold=0.05))
    v, used = judged["t.py::test_a[numpy-cpu-f32]"]
    assert used == 5  # the other class's run is not a baseline here
    assert v.status == "regressed" and v.runs_baseline == 15 and v.runs_current == 3
    same = dict((t, v) for t, v, _ in against_history(doc(11), pts, alpha=0.01, threshold=0.05))
    assert {v.status for v in same.values()} == {"unchanged"}


def counted_doc(i: int, level: float = 1e6, numpy: str = "2.4.6", **kw: Any) -> dict[str, Any]:
    """``doc(i)`` with its first result counted: instructions per call, with the counts' key."""
    from pytest_burnperf.core.counting.counts_key import KEY_FIELDS

    d = doc(i, **kw)
    calls = [level + k for k in range(8)]
    d["results"][0].update(
        timer="counts",
        runs=[calls],
        counts={
            "instructions": calls,
            "interpreter": 0.2,
            "key": {
                **{name: f"{name} here" for name in KEY_FIELDS},
                "libraries": {"numpy": numpy},
            },
        },
    )
    return d


def test_counted_results_are_judged_against_the_stored_counts_of_their_key(url: str) -> None:
    """compare-history judges a counted result by the counts rule against the stored runs that
    counted it under its key (the time rule's prior would call equal counts inconclusive)."""
    with Store(url) as s:
        for i in range(3):
            s.record(counted_doc(i))
        s.record(counted_doc(3, numpy="2.5.0"))  # another key: not a baseline for 2.4.6
        pts = s.points(last=20, with_runs=True)
    test = "t.py::test_a[numpy-cpu-f32]"

    def verdict(d: dict[str, Any]) -> tuple[str, int, str]:
        v, used = {t: (v, n) for t, v, n in against_history(d, pts, alpha=0.01, threshold=0.05)}[
            test
        ]
        return v.status, used, v.reason

    assert verdict(counted_doc(10))[:2] == ("unchanged", 3)
    assert verdict(counted_doc(11, level=1.05e6))[:2] == ("regressed", 3)
    status, used, reason = verdict(counted_doc(12, numpy="2.6.0"))
    assert (status, used) == ("incomparable", 0)
    assert "counts baseline recorded with numpy 2.5.0, this run has 2.6.0" in reason
    timed = doc(13)  # the same test timed now: the stored counts are not its baseline
    status, used, reason = verdict(timed)
    assert (status, used, reason) == (
        "incomparable",
        0,
        "the stored runs counted it; this run timed it",
    )


def test_counted_calls_drawn_afresh_are_judged_against_the_stored_call_at_their_place(
    url: str,
) -> None:
    """Calls that draw their work afresh (8% apart) and say each call's place are judged call by
    call against the stored runs' calls at the same place (core/counting/paired_counts.py): +2%
    on every call is regressed; the same runs stored without places leave it open; a place
    that is not a whole number from 1 stores nothing."""
    drawn = [6_700_000 * (1 + 0.04 * ((7 * i) % 9 - 4) / 4) for i in range(7)]
    places = [12, 13, 15, 16, 17, 18, 19]
    test = "t.py::test_a[numpy-cpu-f32]"

    def drawing(i: int, factor: float, positions: object) -> dict[str, Any]:
        d = counted_doc(i)
        calls = [round(v * factor) for v in drawn]
        d["results"][0].update(runs=[calls], samples=calls)
        d["results"][0]["counts"].update(instructions=calls, interpreter=0.0)
        if positions is not None:
            d["results"][0]["counts"]["positions"] = positions
        return d

    def status(pts: list[dict[str, object]], d: dict[str, Any]) -> tuple[str, str | None]:
        judged = {t: v for t, v, _ in against_history(d, pts, alpha=0.01, threshold=0.05)}
        return judged[test].status, judged[test].spread_source

    with Store(url) as s:
        for i in range(2):
            s.record(drawing(i, 1.0, places))
        paired = s.points(last=20, with_runs=True)
    assert status(paired, drawing(10, 1.0, places)) == ("unchanged", "pairs")
    assert status(paired, drawing(11, 1.02, places)) == ("regressed", "pairs")
    # no places on this side: the calls as a whole, 8% apart, cannot tell 2%
    assert status(paired, drawing(12, 1.02, None))[0] == "inconclusive"
    # places that are not places (a fraction, a file made by hand): not paired by them
    assert status(paired, drawing(14, 1.02, [12.5, 13, 15, 16, 17, 18, 19]))[0] == "inconclusive"
    bad = r"results\[0\]\.counts\.positions: must be a list"
    with Store(url) as s, pytest.raises(StoreError, match=bad):
        s.record(drawing(13, 1.0, [12, 0]))


def test_each_result_keeps_its_measure_and_a_version_2_store_learns_it(url: str) -> None:
    """A stored result says what its median is (seconds or instructions); a version-2 store
    (no measure column) learns it from the counts records its counted results kept."""
    with Store(url) as s:
        s.record(counted_doc(0))
        with s.engine.begin() as conn:  # back to version 2's table
            conn.execute(sa.text("ALTER TABLE burnperf_results DROP COLUMN measure"))
            conn.execute(sa.text("UPDATE burnperf_meta SET value = '2'"))
    with Store(url) as s:
        s.record(counted_doc(1))
        points = s.points()
        with s.engine.connect() as conn:
            version = conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one()
    assert version == "3"
    got = {(p["commit"][-1], p["test"].split("::")[1][:6]): p["measure"] for p in points}
    assert got == {
        ("0", "test_a"): "counts",
        ("0", "test_b"): "time",
        ("1", "test_a"): "counts",
        ("1", "test_b"): "time",
    }


def test_a_result_of_an_unknown_measure_stores_nothing(url: str) -> None:
    bad = doc(0)
    bad["results"][1]["measure"] = "joules"
    with Store(url) as s:
        with pytest.raises(StoreError, match=r"results\[1\]\.measure: measure 'joules' is none of"):
            s.record(bad)
        assert s.counts() == (0, 0)


def test_a_benchmark_timed_in_some_runs_and_counted_in_others_has_a_series_of_each() -> None:
    """Seconds and instructions are never one line: no shift is found between them, and each
    series reads in its own unit."""
    base = {"name": "test_a", "backend": "numpy", "kind": "cpu", "dtype": "f32", "branch": "main"}
    pts = [
        {
            **base,
            "test": "t::test_a",
            "hardware_class": "v3",
            "created": f"2026-11-{i + 1:02d}",
            "commit": f"c{i:02d}",
            "status": "unchanged",
            "low": None,
            "high": None,
            **(
                {"measure": "time", "median": 2e-3}
                if i % 2
                else {"measure": "counts", "median": 10_838_669.0}
            ),
        }
        for i in range(12)
    ]
    timed, counted = sorted(series(pts), key=lambda s: s.measure.name, reverse=True)
    assert (timed.measure.name, counted.measure.name) == ("time", "counts")
    assert len(timed.points) == len(counted.points) == 6
    assert not timed.changes and not counted.changes
    lines = text([timed, counted])
    assert lines[0] == "test_a  [numpy cpu f32, class v3]"
    assert "  2.00 ms" in lines[1]
    (head,) = [ln for ln in lines if ln.startswith("test_a") and "counted" in ln]
    assert head == "test_a  [numpy cpu f32, class v3, instructions counted]"
    assert all("10.8 M instr" in ln for ln in lines if ln.split()[1:2] in (["c00"], ["c02"]))
    assert not any("10838669" in ln for ln in lines)
    assert counted.as_json()["unit"] == "instructions"


def test_a_counts_record_that_is_not_one_stores_nothing(url: str) -> None:
    bad = counted_doc(0)
    bad["results"][0]["counts"]["key"] = "numpy"
    with Store(url) as s:
        with pytest.raises(StoreError, match=r"results\[0\]\.counts: must hold a key"):
            s.record(bad)
        assert s.counts() == (0, 0)
