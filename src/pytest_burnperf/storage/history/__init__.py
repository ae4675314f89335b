"""Run history: every ``--perf`` run that asks for it (``--perf-store``), and results files from
other machines (``burnperf import-results``), kept in a results store; the series of each
benchmark per hardware class and device, with the change points found in it.

* :mod:`.store`: the store behind a SQLAlchemy URL (a local SQLite file by default, PostgreSQL
  for a fleet of CI runners), its versioned schema and migrations, recording and reading.
* :mod:`.changepoints`: where a series shifted, found by ruptures' PELT.
* :mod:`.select`: ``-k`` expressions over test ids.

Nothing here is imported by the plugin unless a run records into a store, so loading the plugin
never imports SQLAlchemy.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_burnperf.core.text import redact as redact_text

#: Environment variable with the store's URL (so credentials never sit in files).
STORE_ENV = "BURNPERF_STORE"
#: The default store, relative to the project's rootdir.
DEFAULT_STORE = Path(".burnperf") / "history.sqlite"


def default_url(root: Path) -> str:
    """``$BURNPERF_STORE``, else the SQLite file ``.burnperf/history.sqlite`` under ``root``."""
    explicit = os.environ.get(STORE_ENV)
    if explicit:
        return explicit
    return f"sqlite:///{(root / DEFAULT_STORE).absolute()}"


def resolve_url(value: str | None, root: Path) -> str:
    """The URL a ``--perf-store`` / ``--store`` value names: ``local`` (or nothing) is the
    default store, a SQLAlchemy URL is itself, anything else is a path of a SQLite file."""
    if value is None or value == "local":
        return default_url(root)
    if "://" in value:
        return value
    path = Path(value).expanduser()
    return f"sqlite:///{(path if path.is_absolute() else root / path).absolute()}"


def redact(url: str) -> str:
    """``url`` with its password hidden, for messages (:func:`core.text.redact`)."""
    return redact_text(url)
