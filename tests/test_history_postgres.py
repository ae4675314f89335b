"""The results store on a real PostgreSQL server: concurrent writers lose nothing and duplicate
nothing. Runs where ``BURNPERF_TEST_POSTGRES`` names a server URL whose role may create databases
(``.ci/run`` installs and starts one); skipped elsewhere."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

sa = pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg")

SERVER = os.environ.get("BURNPERF_TEST_POSTGRES")
pytestmark = [
    pytest.mark.slow,  # a real server and writers: the slow tier
    pytest.mark.skipif(
        not SERVER, reason="BURNPERF_TEST_POSTGRES is not set (no PostgreSQL server to test with)"
    ),
]
WRITERS = 4
RUNS_EACH = 50


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh database on the server, dropped afterwards."""
    assert SERVER is not None
    name = f"burnperf_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(SERVER, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(SERVER).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _doc(writer: int, i: int) -> dict[str, Any]:
    return {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": f"2026-11-22T{i // 60:02d}:{i % 60:02d}:00+00:00",
        "machine": {"id": f"runner-{writer}", "hardware_class": "x86-64-v3-f25m1"},
        "git": {"commit": f"{i:040x}", "dirty": False, "branch": "main"},
        "settings": {},
        "results": [
            {
                "test": f"t.py::test_{k}[numpy-cpu-f32]",
                "name": f"test_{k}[numpy-cpu-f32]",
                "backend": "numpy",
                "kind": "cpu",
                "dtype": "f32",
                "runs": [[1e-3 * (1 + 0.001 * (writer + i + k))] * 5] * 2,
                "verdict": {"status": "unchanged"},
            }
            for k in range(3)
        ],
    }


def _write(url: str, writer: int, same_as: int) -> int:
    from pytest_burnperf.storage.history.store import Store

    added = 0
    with Store(url) as store:
        for i in range(RUNS_EACH):
            added += store.record(_doc(same_as, i))
    return added


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(database: str) -> None:
    from pytest_burnperf.storage.history.store import Store

    # writers 0 and 1 record the very same 50 runs (a retried CI job), 2 and 3 their own;
    # all four start on an empty server at once, so they also race to create the schema
    plan = [(0, 0), (1, 0), (2, 2), (3, 3)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS) as pool:
        added = pool.starmap(_write, [(database, w, same) for w, same in plan])
    assert sum(added) == 3 * RUNS_EACH
    assert sorted(added)[-2:] == [RUNS_EACH, RUNS_EACH]
    with Store(database) as store:
        assert store.counts() == (3 * RUNS_EACH, 3 * RUNS_EACH * 3)
        with store.engine.connect() as conn:
            keys = conn.execute(
                sa.text("SELECT count(DISTINCT run_key), count(*) FROM burnperf_runs")
            ).one()
            per_run = conn.execute(
                sa.text(
                    "SELECT count(*) FROM (SELECT run_id FROM burnperf_results GROUP BY run_id "
                    "HAVING count(*) <> 3) AS bad"
                )
            ).scalar_one()
    assert keys == (3 * RUNS_EACH, 3 * RUNS_EACH)
    assert per_run == 0  # every run whole


def test_a_version_1_store_gains_the_memory_columns_on_postgresql(database: str) -> None:
    """The schema 1 to 3 migrations (the counts, the measure; the memory columns) on
    PostgreSQL's ALTER TABLE."""
    from pytest_burnperf.storage.history.store import SCHEMA_VERSION, Store

    with Store(database) as store:
        store.record(_doc(0, 0))
        with store.engine.begin() as conn:
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
    doc = _doc(0, 1)
    doc["results"][0]["memory"] = {
        "figures": {"allocated_bytes": 4096, "allocations": 1, "peak_bytes": 8192},
        "key": {"meter": "memray"},
    }
    with Store(database) as store:
        store.record(doc)
        points = store.points(with_sides=True)
        with store.engine.connect() as conn:
            version = conn.execute(sa.text("SELECT value FROM burnperf_meta")).scalar_one()
    assert version == str(SCHEMA_VERSION)
    peaks = sorted((p["memory_peak"] or 0) for p in points)
    assert peaks == [0, 0, 0, 0, 0, 8192]
    assert [p["memory"]["key"] for p in points if p["memory"]] == [{"meter": "memray"}]


def test_a_version_2_store_learns_each_results_measure_on_postgresql(database: str) -> None:
    """The schema 2 to 3 migration on PostgreSQL: a result that kept a counts record (JSON) was
    counted, one whose record is JSON null was timed."""
    from pytest_burnperf.storage.history.store import Store

    doc = _doc(0, 0)
    calls = [1e6 + k for k in range(4)]
    doc["results"][0].update(
        timer="counts",
        runs=[calls],
        counts={"instructions": calls, "interpreter": 0.1, "key": {"python": "CPython 3.11"}},
    )
    with Store(database) as store:
        store.record(doc)
        with store.engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE burnperf_results DROP COLUMN measure"))
            conn.execute(sa.text("UPDATE burnperf_meta SET value = '2'"))
    with Store(database) as store:
        points = store.points()
    assert sorted((p["name"], p["measure"]) for p in points) == [
        ("test_0[numpy-cpu-f32]", "counts"),
        ("test_1[numpy-cpu-f32]", "time"),
        ("test_2[numpy-cpu-f32]", "time"),
    ]
