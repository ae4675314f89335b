"""The results store: runs and their benchmarks' results behind a SQLAlchemy URL.

Schema (version :data:`SCHEMA_VERSION`, kept in ``burnperf_meta``):

* ``burnperf_runs``: one row per run: ``run_key`` (sha256 of the run's results document, so
  recording or importing the same run twice adds nothing), ``created``, ``machine_id``,
  ``hardware_class``, ``commit``, ``branch``, ``dirty``, ``source`` (``run``, or ``import`` and
  the file's name), ``machine`` and ``settings`` (JSON);
* ``burnperf_results``: one row per benchmark of a run: ``test`` (node id), ``name``,
  ``benchmark``, ``backend``, ``kind``, ``dtype``, ``median`` with its 95% interval ``low``,
  ``high`` (geometric mean of the process rounds' medians, t interval over the rounds),
  ``status``, ``ratio``, ``mds`` (minimum detectable slowdown), the raw ``runs`` (JSON), and
  ``detail`` (JSON: the whole verdict, the device fingerprint with its library versions, the
  host state of each round, the benchmark's settings and its baseline), the columns of each
  verdict judged beside (core/sides/side_kind.Side.stored_columns; memory per call's where it
  was tracked: ``memory_peak``, ``memory_allocated``, ``memory_allocations`` (bytes, bytes,
  count; null where not tracked or where its calls varied) and ``memory`` (JSON:
  core/memory/recorded_memory.RecordedMemory, with the key the figures compare under)), and for
  a counted result ``counts`` (JSON: the ``key`` its instructions compare under and the
  ``interpreter``'s share of them; null for a timed one), and ``measure`` (``time``: ``median``,
  ``low``, ``high`` and ``runs`` are seconds per call; ``counts``: instructions per call).

Version 2 added the counts column to version 1's (:func:`_add_counts`), version 3 the measure
(:func:`_add_measure`). A side's columns are
not a schema version's: opening a store adds those it lacks (:func:`_add_side_columns`), so
registering a new verdict judged beside needs no migration.

Opening a store creates the tables, or migrates an older schema step by step
(:data:`MIGRATIONS`) inside one transaction; a store written by a newer version is refused.
On PostgreSQL the creation and migration hold an advisory lock, so runners starting at once do
not race; each run is written in one transaction, so a run is stored whole or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from pytest_burnperf.core import measures
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.host.interrupts import held_signals
from pytest_burnperf.storage.history import redact
from pytest_burnperf.storage.history.stored_rows import RowError, rows_of, run_key

SCHEMA_VERSION = 3
#: How long a write waits for another process that holds a SQLite store's write lock, in steps
#: of SQLite's own busy timeout (:data:`BUSY_STEP_S`) so that Ctrl-C acts within one step.
LOCK_WAIT_S = 15.0
BUSY_STEP_S = 0.5
#: ``{n: step}``: the migration of a version-``n`` store to version ``n + 1``.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}
_PG_LOCK = 0x6275726E  # "burn": the advisory lock of schema changes on PostgreSQL

metadata = sa.MetaData()
meta = sa.Table(
    "burnperf_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
)
runs = sa.Table(
    "burnperf_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_key", sa.String(64), nullable=False, unique=True),
    sa.Column("created", sa.String(40), nullable=False, index=True),
    sa.Column("machine_id", sa.String(255), nullable=False),
    sa.Column("hardware_class", sa.String(64), nullable=False, index=True),
    sa.Column("commit", sa.String(64)),
    sa.Column("branch", sa.String(255), index=True),
    sa.Column("dirty", sa.Boolean),
    sa.Column("source", sa.String(255), nullable=False),
    sa.Column("machine", sa.JSON),
    sa.Column("settings", sa.JSON),
)
#: The results table's columns of the verdicts judged beside, by name: their kinds.
SIDE_COLUMNS = {name: kind for side in SIDES for name, kind in side.stored_columns}
results = sa.Table(
    "burnperf_results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "run_id", sa.Integer, sa.ForeignKey("burnperf_runs.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("test", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("benchmark", sa.String(255), nullable=False),
    sa.Column("backend", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("dtype", sa.String(16), nullable=False),
    sa.Column("median", sa.Float, nullable=False),
    sa.Column("low", sa.Float),
    sa.Column("high", sa.Float),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("ratio", sa.Float),
    sa.Column("mds", sa.Float),
    sa.Column("runs", sa.JSON),
    sa.Column("detail", sa.JSON),
    # each verdict judged beside keeps its own columns (core/sides/side_kind.Side.stored_columns)
    *(
        sa.Column(name, sa.JSON if kind == "json" else sa.BigInteger)
        for name, kind in SIDE_COLUMNS.items()
    ),
    sa.Column("counts", sa.JSON),
    sa.Column("measure", sa.String(16), nullable=False, server_default=measures.TIME.name),
    sa.UniqueConstraint("run_id", "test"),
    sa.Index("ix_burnperf_results_test_run", "test", "run_id"),
)


class StoreError(Exception):
    """A store that cannot be used; the message names it (password hidden) and why."""


def _add_counts(conn: Connection) -> None:
    """Version 1 to 2: the counts column (null in the runs stored before: their counted
    results are not judged against by ``compare-history``, whose key is unknown). Memory per
    call's columns, added by this step then, are now added as any side's
    (:func:`_add_side_columns`)."""
    conn.execute(sa.text("ALTER TABLE burnperf_results ADD COLUMN counts JSON"))


MIGRATIONS[1] = _add_counts


def _add_measure(conn: Connection) -> None:
    """Version 2 to 3: what the median and the runs of each result are (``time`` or
    ``counts``). The stored results that kept a counts record were counted; the rest timed (a
    counted result stored without one, before version 2, reads as timed)."""
    conn.execute(
        sa.text(
            "ALTER TABLE burnperf_results ADD COLUMN measure VARCHAR(16) NOT NULL "
            f"DEFAULT '{measures.TIME.name}'"
        )
    )
    conn.execute(
        sa.update(results)
        .where(results.c.counts.is_not(None), sa.cast(results.c.counts, sa.Text) != "null")
        .values(measure=measures.COUNTS.name)
    )


MIGRATIONS[2] = _add_measure


def _add_side_columns(conn: Connection) -> None:
    """The columns of each verdict judged beside that the results table lacks (a store
    written before its side was registered), added null: the runs stored before did not
    measure it. A new side needs no schema version of its own."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("burnperf_results")}
    quote = conn.dialect.identifier_preparer.quote
    for column in results.columns:
        if column.name not in have and column.name in SIDE_COLUMNS:
            kind = column.type.compile(dialect=conn.dialect)
            conn.execute(
                sa.text(f"ALTER TABLE burnperf_results ADD COLUMN {quote(column.name)} {kind}")
            )


def engine_for(url: str) -> Engine:

    try:
        parsed = sa.engine.make_url(url)
        if parsed.drivername.startswith("sqlite") and parsed.database not in (None, "", ":memory:"):
            _make_home(Path(str(parsed.database)))
        if url.startswith("sqlite"):
            # wait a step for another writer (not failing at once with "database is locked");
            # _with_retries waits more steps, checking for Ctrl-C between them
            return sa.create_engine(url, connect_args={"timeout": BUSY_STEP_S})
        return sa.create_engine(url, pool_pre_ping=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
        raise StoreError(f"{redact(url)}: not a usable store URL ({exc})") from None


class _Unfinished(Exception):
    """The store's tables are there and its schema version is not (yet)."""


def _locked(exc: BaseException) -> bool:
    """Another process holds the store, or has just created it: worth another try. Two runs
    creating a new SQLite store at once both find no table, and the second's CREATE fails with
    "already exists" once the first committed (seen in CI: a shard run exited 3); tried again,
    it finds the schema and goes on."""
    text = str(exc)
    return "database is locked" in text or "database is busy" in text or "already exists" in text


def _with_retries(url: str, work: Callable[[], object]) -> Any:
    """``work()`` (one transaction), again while another process holds the store's write lock,
    for up to :data:`LOCK_WAIT_S`; a signal held meanwhile (Ctrl-C) ends the wait at once."""
    import time

    deadline = time.monotonic() + LOCK_WAIT_S
    with held_signals() as held:
        while True:
            try:
                return work()
            except _Unfinished as exc:  # another run is creating it: a moment, then again
                if time.monotonic() > deadline:
                    raise StoreError(f"{redact(url)}: {exc}") from None
                time.sleep(0.05)
                continue
            except sa.exc.OperationalError as exc:
                if not _locked(exc):
                    raise
                if held:
                    raise StoreError(
                        f"{redact(url)}: {held.names()} received while waiting for another "
                        "process's write lock; nothing was written"
                    ) from None
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{redact(url)}: another process held its write lock for "
                        f"{LOCK_WAIT_S:g} s; nothing was written (import the run's --perf-json "
                        "later with burnperf import-results)"
                    ) from None


def _make_home(path: Path) -> None:
    """The directory of a SQLite store; the default one (``.burnperf``) keeps itself out of git."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if path.parent.name == ".burnperf" and not ignore.exists():
            ignore.write_text("# written by pytest-burnperf: the local results store\n*\n")
    except OSError as exc:
        raise StoreError(f"{path}: cannot create its directory: {exc.strerror or exc}") from None


def _version(conn: Connection) -> int | None:
    if not sa.inspect(conn).has_table("burnperf_meta"):
        return None
    row = conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).first()
    if row is None:
        return None
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise StoreError(
            f"its schema version {str(row[0])[:40]!r} is not a number: not a store this tool "
            "wrote (or a damaged one); it was left untouched"
        ) from None


def prepare(conn: Connection, url: str = "") -> None:
    """Create the schema, or bring an older one up to :data:`SCHEMA_VERSION` (in the caller's
    transaction)."""

    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK})
    elif conn.dialect.name == "sqlite" and not getattr(
        conn.connection.dbapi_connection, "in_transaction", True
    ):
        # the write lock first: two runs creating a new store at once would otherwise both find
        # no schema (tables created twice, the version row inserted twice); the second waits
        # here (SQLite's busy timeout, then _with_retries) and finds the first one's schema
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        version = _version(conn)
    except StoreError as exc:
        raise StoreError(f"{redact(url)}: {exc}") from None
    if version is None:
        if sa.inspect(conn).has_table("burnperf_runs"):
            # SQLite commits each CREATE at once: another run may be between its tables and
            # its version row; tried again until LOCK_WAIT_S, then named
            raise _Unfinished("has burnperf tables but no schema version")
        metadata.create_all(conn)
        conn.execute(sa.insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{redact(url)}: schema version {version} was written by a newer pytest-burnperf "
            f"(this one knows up to {SCHEMA_VERSION}); upgrade pytest-burnperf"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise StoreError(f"{redact(url)}: no migration from schema version {version}")
        step(conn)
        version += 1
        conn.execute(
            sa.update(meta).where(meta.c.key == "schema_version").values(value=str(version))
        )
    _add_side_columns(conn)


class Store:
    """One results store. ``Store(url)`` connects, creates or migrates; use as a context
    manager (or call :meth:`close`)."""

    def __init__(self, url: str) -> None:

        self.url = url
        self.engine = engine_for(url)

        def begin() -> None:
            with self.engine.begin() as conn:
                prepare(conn, url)

        try:
            _with_retries(url, begin)
        except sa.exc.SQLAlchemyError as exc:
            self.engine.dispose()
            raise StoreError(f"{redact(url)}: {_why(exc)}") from None
        except StoreError:
            self.engine.dispose()
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    def record(self, doc: Mapping[str, object], source: str = "run") -> bool:
        """Store one results document (the ``--perf-json`` format) as a run with its results;
        False when this very run is stored already."""

        if doc.get("interrupted") is True:
            raise StoreError(
                'the run was interrupted ("interrupted": true): its partial results are not '
                "stored, since history and change points would read them as a whole run"
            )
        key = run_key(doc)
        try:
            row, rows = rows_of(doc, key, source)
        except RowError as exc:
            raise StoreError(f"{exc}; nothing was stored") from None

        def write() -> bool:
            with self.engine.begin() as conn:
                if conn.execute(sa.select(runs.c.id).where(runs.c.run_key == key)).first():
                    return False
                inserted = conn.execute(sa.insert(runs).values(**row)).inserted_primary_key
                assert inserted is not None
                run_id = inserted[0]
                if rows:
                    conn.execute(sa.insert(results), [dict(r, run_id=run_id) for r in rows])
            return True

        try:
            return bool(_with_retries(self.url, write))
        except sa.exc.IntegrityError:
            return False  # another writer stored the same run between our check and insert
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"{redact(self.url)}: {_why(exc)}") from None

    def counts(self) -> tuple[int, int]:
        with self.engine.connect() as conn:
            n_runs = conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar_one()
            n_res = conn.execute(sa.select(sa.func.count()).select_from(results)).scalar_one()
        return int(n_runs), int(n_res)

    def points(
        self,
        *,
        last: int | None = None,
        branch: str | None = None,
        hardware_class: str | None = None,
        with_runs: bool = False,
        with_sides: bool = False,
    ) -> list[dict[str, object]]:
        """Every stored result (newest ``last`` per test and hardware class), oldest first,
        with its ``measure`` (``time`` or ``counts``: what its median is), its run's date,
        commit, branch and class, and the figures of each verdict judged
        beside (memory per call's ``memory_peak``, ``memory_allocated``,
        ``memory_allocations``); ``with_runs`` adds its raw samples and its counts record
        (``counts``: key and interpreter share, None for a timed result), ``with_sides`` each
        side's whole record (``memory``: its key, where it allocated)."""
        cols = [
            results.c.test,
            results.c.name,
            results.c.backend,
            results.c.kind,
            results.c.dtype,
            results.c.median,
            results.c.low,
            results.c.high,
            results.c.status,
            results.c.ratio,
            results.c.mds,
            results.c.measure,
            *(results.c[name] for side in SIDES for name in side.figure_columns),
            runs.c.created,
            runs.c.commit,
            runs.c.branch,
            runs.c.dirty,
            runs.c.hardware_class,
            runs.c.machine_id,
            runs.c.id.label("run"),
            runs.c.run_key,
        ]
        if with_runs:
            cols.extend((results.c.runs, results.c.counts))
        if with_sides:
            cols.extend(results.c[side.field] for side in SIDES)
        where = []
        if branch is not None:
            where.append(runs.c.branch == branch)
        if hardware_class is not None:
            where.append(runs.c.hardware_class == hardware_class)
        q = sa.select(*cols).select_from(results.join(runs, results.c.run_id == runs.c.id))
        if where:
            q = q.where(*where)
        if last is not None:
            # rank a narrow projection (result id, test, class, date) and fetch the whole rows
            # of the newest ``last`` only: sorting the wide rows made this 4x slower
            rank = (
                sa.func.row_number()
                .over(
                    partition_by=(results.c.test, runs.c.hardware_class),
                    order_by=(runs.c.created.desc(), runs.c.id.desc()),
                )
                .label("rank")
            )
            ranked = (
                sa.select(results.c.id.label("rid"), rank)
                .select_from(results.join(runs, results.c.run_id == runs.c.id))
                .where(*where)
                .subquery()
            )
            newest = sa.select(ranked.c.rid).where(ranked.c.rank <= last)
            q = q.where(results.c.id.in_(newest))
        q = q.order_by(runs.c.created, runs.c.id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]


def _why(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
