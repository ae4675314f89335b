"""What a verdict judged beside a benchmark's time or counts verdict is to the layers that carry
it without knowing which it is (memory per call, and any measure judged beside later): a
:class:`SideVerdict` a result holds by its :attr:`Side.field`, and a :class:`Side`, which says
how its verdicts fail a test, what a stored baseline keeps of one and how the reports show
one. A measure judged beside is its own module, its ``Side`` and one line of
core/sides/side_registry.py. No pytest here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pytest_burnperf.core.options.settings import Settings


class SideVerdict(Protocol):
    """One benchmark's verdict of a side: its status (of its :attr:`Side.statuses`), its line
    in the benchmark's report, what a results document holds of it (its ``status`` among the
    rest) and what a baseline recorded from it keeps (None: nothing worth keeping)."""

    @property
    def status(self) -> str: ...

    def line(self) -> str: ...

    def as_json(self) -> dict[str, object]: ...

    def kept(self) -> dict[str, object] | None: ...


class KeptError(ValueError):
    """A side's field of a baseline entry that is not what its side keeps: ``field`` names it
    (``memory.sites``), ``problem`` says what it must be."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class HistoryFigure:
    """One figure of a side in a stored series: its store column (one of
    :attr:`Side.stored_columns`), its name on the series' chart and its history CSV header."""

    column: str
    name: str
    csv_header: str
    #: Whether the side's chart over a series' runs draws it (a figure in another unit than
    #: :attr:`SideHistory.unit`, a count beside bytes, is not).
    charted: bool = True


@dataclass(frozen=True)
class SideHistory:
    """What the views of a stored series (``burnperf history``, its CSV, the HTML report and
    site) show of a side, from a stored point (its store columns)."""

    #: The title of its chart over a series' runs (``memory per call``).
    title: str
    #: The unit of its charted figures (``bytes``) and its chart's axis (``bytes per call``).
    unit: str
    axis: str
    figures: tuple[HistoryFigure, ...]
    #: The header of its column in the site's index of series (``latest peak/call``).
    latest_header: str
    #: That column's cell for a series' newest point (``-`` where it has none).
    latest: Callable[[Mapping[str, object]], str]
    #: What a line of ``burnperf history`` says of it; empty where the point has none.
    line: Callable[[Mapping[str, object]], str]

    def charted(
        self, points: Iterable[Mapping[str, object]]
    ) -> list[tuple[int, Mapping[str, object]]]:
        """The points (by index) that hold any of its charted figures, for its chart."""
        columns = [f.column for f in self.figures if f.charted]
        return [
            (i, p)
            for i, p in enumerate(points)
            if any(
                isinstance(p.get(c), (int, float)) and not isinstance(p.get(c), bool)
                for c in columns
            )
        ]


@dataclass(frozen=True)
class Side:
    """One verdict judged beside the time or counts verdict: the field a results entry and a
    baseline entry hold it in, how its statuses fail and read, and what the reports show of
    it, from its field of a results entry (a document read back may hold anything there)."""

    #: The field of a results entry (its verdict) and of a baseline entry (what it keeps).
    field: str
    #: Its statuses that fail the benchmark's test whatever the time or counts verdict
    #: (core/judging/outcome.side_fails applies them).
    failing: frozenset[str]
    #: Its failing statuses that recording baselines accepts (a ceiling is not moved by it).
    accepted_by_recording: frozenset[str]
    #: Its statuses a benchmark's report leaves unsaid unless asked (``-v``).
    quiet: frozenset[str]
    #: What a summary calls a benchmark whose time or counts passed and this failed.
    failed_text: str
    #: The run's one line on it, from its statuses (None where none was judged).
    summary: Callable[[Iterable[str]], str | None]
    #: Checks its field of a baseline entry: :class:`KeptError` naming what is wrong.
    check_kept: Callable[[Mapping[str, object]], None]
    #: Its field of a results entry read back strictly (``burnperf compare``), from the field's
    #: value and where it is (``results[3].memory``): a record :attr:`rejudge` takes, or a
    #: ValueError naming ``where`` and what is wrong.
    read_recorded: Callable[[object, str], object]
    #: A recorded run's record judged against another run's (None: that run has none) by the
    #: rule a run judges by, ``threshold`` the user's (or None), the other run named
    #: ``before_name`` in the reasons.
    rejudge: Callable[[object, object | None, float | None, str], SideVerdict]
    #: In a same-session comparison, the candidate environment's record (as
    #: :attr:`read_recorded` gives it, tracked in the session) judged against the reference
    #: environment's (None: it has none, ``gap`` says why where known), that environment named
    #: ``label`` in the reasons, ``threshold`` the user's (or None); the benchmark's settings
    #: say what its marker asks (memory: ``max_memory``).
    between: Callable[[object, object | None, float | None, str, str, Settings], SideVerdict]
    #: Its columns of the results store's results table, by name and kind (``integer``,
    #: ``json``): the ``json`` one named :attr:`field` holds the record (storage/history/).
    stored_columns: tuple[tuple[str, str], ...]
    #: Those columns' values for a record read back by :attr:`read_recorded` (None: the
    #: result has none).
    stored_values: Callable[[object | None], dict[str, object]]
    #: What the views of a stored series show of it.
    history: SideHistory
    #: Its table column's header (its ``--perf-columns`` key is :attr:`field`).
    column: str
    #: Its cell, from its field's value (``-`` where not tracked).
    cell: Callable[[object], str]
    #: The verdict cell's words where it decides it, from its field's value and the time or
    #: counts verdict's status; None where that status stands.
    verdict_words: Callable[[object, str], str | None]
    #: Its statuses that put its column in a table whose columns the user did not choose.
    shown: frozenset[str]
    #: Where a regression of it grew, from its field's value (None where not located).
    grew: Callable[[object], str | None]
    #: What a failed verdict of it says where a report names the failure (a merged run's JUnit
    #: file), from its field's value.
    failure: Callable[[object], str]
    #: Its columns of the results CSV, and their values from its field's value.
    csv_columns: tuple[str, ...]
    csv_values: Callable[[object], tuple[object, ...]]

    def __post_init__(self) -> None:
        """A side that cannot be stored or shown as it says is a programming error, named at
        its registration: its record must be a ``json`` column named :attr:`field`, and each
        figure its history shows one of its figure columns."""
        if (self.field, "json") not in self.stored_columns:
            raise ValueError(f"side {self.field!r}: no json store column named {self.field!r}")
        shown = {f.column for f in self.history.figures} - set(self.figure_columns)
        if shown:
            raise ValueError(
                f"side {self.field!r}: its history shows {sorted(shown)}, not figure columns of "
                f"its store columns {list(self.figure_columns)}"
            )

    def status(self, entry: Mapping[str, object]) -> str | None:
        """Its status in a results entry, or None where the entry has none (not tracked)."""
        side = entry.get(self.field)
        status = side.get("status") if isinstance(side, Mapping) else None
        return status if isinstance(status, str) else None

    def fails(self, entry: Mapping[str, object]) -> bool:
        """Whether its verdict in a results entry failed the benchmark's test."""
        return self.status(entry) in self.failing

    @property
    def figure_columns(self) -> tuple[str, ...]:
        """Its store columns that hold figures (not its record): what a stored point shows."""
        return tuple(name for name, kind in self.stored_columns if kind != "json")
