"""A measure judged beside that the product does not have: energy per call, in joules, as a
contributor would add it (a GPU's energy counter, say). It is one module: its verdict, its rule
and its :class:`Side`; test_a_new_side.py registers it in one line and follows it through every
layer that carries a side. Nothing here is the product's; nothing of the product names it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_burnperf.core.sides.side_kind import HistoryFigure, KeptError, Side, SideHistory

FIELD = "energy"
#: More energy than this share over the baseline's is a regression (the example's rule).
LIMIT = 0.05


@dataclass(frozen=True)
class EnergyVerdict:
    """Joules per call now against the baseline's (None: no baseline)."""

    status: str
    joules: float | None
    before: float | None = None
    #: Why it has no baseline, where known.
    reason: str = ""

    def line(self) -> str:
        was = "" if self.before is None else f" (baseline {self.before:.3g} J)"
        why = f" ({self.reason})" if self.reason else ""
        return f"energy {self.status}: {self.joules:.3g} J/call{was}{why}"

    def as_json(self) -> dict[str, object]:
        return {"status": self.status, "joules": self.joules, "before": self.before}

    def kept(self) -> dict[str, object] | None:
        return None if self.joules is None else {"joules": self.joules}


def judge(joules: float, before: float | None, threshold: float | None = None) -> EnergyVerdict:
    if before is None:
        return EnergyVerdict("no-baseline", joules)
    limit = LIMIT if threshold is None else threshold
    status = "regressed" if joules > before * (1 + limit) else "unchanged"
    return EnergyVerdict(status, joules, before)


def _joules(doc: object, where: str) -> float:
    value = doc.get("joules") if isinstance(doc, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{where}.joules: must be a number of at least 0, got {value!r:.40}")
    if not math.isfinite(value):
        raise ValueError(f"{where}.joules: must be finite")
    return float(value)


def check_kept(doc: Mapping[str, object]) -> None:
    try:
        _joules(doc, FIELD)
    except ValueError as exc:
        field, problem = str(exc).split(": ", 1)
        raise KeptError(field, problem) from None


def summary(statuses: Iterable[str]) -> str | None:
    seen = Counter(statuses)
    if not seen:
        return None
    return "energy per call: " + ", ".join(f"{n} {s}" for s, n in sorted(seen.items()))


def rejudge(
    now: object, before: object | None, threshold: float | None, before_name: str
) -> EnergyVerdict:
    assert isinstance(now, float) and isinstance(before, (float, type(None)))
    return judge(now, before, threshold)


def between(
    now: object,
    before: object | None,
    threshold: float | None,
    label: str,
    gap: str,
    settings: object,
) -> EnergyVerdict:
    """The candidate environment's joules against the reference's, measured in one session."""
    verdict = rejudge(now, before, threshold, label)
    if before is None and gap:
        return EnergyVerdict("no-baseline", verdict.joules, reason=f"{label}: {gap}")
    return verdict


def stored_values(record: object | None) -> dict[str, object]:
    if record is None:
        return {"energy_millijoules": None, FIELD: None}
    assert isinstance(record, float)
    return {"energy_millijoules": round(1000 * record), FIELD: {"joules": record}}


def _millijoules(point: Mapping[str, object]) -> int | None:
    value = point.get("energy_millijoules")
    return value if isinstance(value, int) else None


def cell(value: object) -> str:
    joules = value.get("joules") if isinstance(value, Mapping) else None
    return f"{joules:.3g} J" if isinstance(joules, (int, float)) else "-"


def verdict_words(value: object, status: str) -> str | None:
    mine = value.get("status") if isinstance(value, Mapping) else None
    return "energy regressed" if mine == "regressed" and status != "regressed" else None


def failure(value: object) -> str:
    doc = value if isinstance(value, Mapping) else {}
    return f"energy {doc.get('status')}: {doc.get('joules')} J/call, baseline {doc.get('before')} J"


def csv_values(value: object) -> tuple[object, ...]:
    doc = value if isinstance(value, Mapping) else {}
    return (doc.get("status"), doc.get("joules"))


ENERGY = Side(
    field=FIELD,
    failing=frozenset({"regressed"}),
    accepted_by_recording=frozenset({"regressed"}),
    quiet=frozenset({"unchanged", "no-baseline"}),
    failed_text="energy regressed",
    summary=summary,
    check_kept=check_kept,
    read_recorded=_joules,
    rejudge=rejudge,
    between=between,
    stored_columns=(("energy_millijoules", "integer"), (FIELD, "json")),
    stored_values=stored_values,
    history=SideHistory(
        title="energy per call",
        unit="mJ",
        axis="millijoules per call",
        figures=(HistoryFigure("energy_millijoules", "energy", "energy_millijoules"),),
        latest_header="latest energy/call",
        latest=lambda p: "-" if (mj := _millijoules(p)) is None else f"{mj} mJ",
        line=lambda p: "" if (mj := _millijoules(p)) is None else f"  energy {mj} mJ/call",
    ),
    column="energy/call",
    cell=cell,
    verdict_words=verdict_words,
    shown=frozenset({"regressed"}),
    grew=lambda _value: None,
    failure=failure,
    csv_columns=("energy_status", "energy_joules"),
    csv_values=csv_values,
)
