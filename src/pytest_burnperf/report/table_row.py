"""One benchmark's row, as every table shows it: the terminal's, the Markdown summary's and the
HTML report's. Built from the results document's entry (``Result.as_json()``, or a results file
read back), so each medium shows the same figures, the ones judged: the median of every sample
judged, the baseline's, the change (a counted one to two decimals), the p-value of the direction
it moved, what the run could detect, the verdict and why. The media only lay it out and escape
it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_burnperf.core import measures
from pytest_burnperf.core.judging.stats import summarize
from pytest_burnperf.core.records.roofline_figures import format_rate
from pytest_burnperf.core.text import device_within, format_bytes
from pytest_burnperf.report import side_verdicts


def _number(value: object) -> float | None:
    """A finite JSON number, else None (a results file may hold anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def change_text(verdict: Mapping[str, object], measure: object = "time") -> str:
    """A verdict's change with its 95% interval, ``+12.3% [+10.1%, +14.6%]``, or ``-``; a
    counted one to two decimals without an interval (``+5.02%``: counts resolve far finer)."""
    ratio = _number(verdict.get("ratio"))
    if ratio is None:
        return "-"
    judged = measures.of_field(measure)
    text = judged.change(ratio)
    if judged.counted:
        return text
    ci = verdict.get("ratio_ci95")
    if isinstance(ci, Sequence) and len(ci) == 2:
        low, high = _number(ci[0]), _number(ci[1])
        if low is not None and high is not None:
            text += f" [{100 * (low - 1):+.1f}%, {100 * (high - 1):+.1f}%]"
    return text


def judged_median(entry: Mapping[str, object]) -> object:
    """The median an entry was judged with (every round's samples pooled); a file written
    before it was kept gives its last round's."""
    v = _map(entry.get("verdict"))
    if v.get("median") is not None:
        return v.get("median")
    return _map(entry.get("stats")).get("median")


def baseline_median(entry: Mapping[str, object]) -> object:
    """The baseline's median an entry was judged against; a file written before the verdict
    kept it gives the baseline's own."""
    v = _map(entry.get("verdict"))
    if v.get("baseline_median") is not None:
        return v.get("baseline_median")
    return _map(entry.get("baseline")).get("median")


def label(name: str, benchmark: str, device_id: str, dtype: str) -> str:
    """The benchmark with its own parameters, without the device and dtype (shown in their
    columns): ``test_matmul[square]`` for ``test_matmul[numpy-cpu-f32-square]``."""
    if "[" not in name or not name.endswith("]"):
        return benchmark or name
    inside = name[name.index("[") + 1 : -1]
    case = f"{device_id}-{dtype}"
    rest = (
        "-".join(p for p in inside.replace(case, "", 1).split("-") if p)
        if case in inside
        else inside
    )
    return f"{benchmark}[{rest}]" if rest else benchmark


@dataclass(frozen=True)
class TableRow:
    """One benchmark's cells, keyed as ``--perf-columns`` names them (core/options/run_options.py's
    COLUMN_KEYS), plus the full test name and the verdict's reason. The cells of the verdicts
    judged beside (memory per call) are in :attr:`sides`, by column key
    (report/side_verdicts.py)."""

    name: str
    benchmark: str
    shape: str
    backend: str
    device: str
    dtype: str
    clock: str
    median: str
    iqr: str
    baseline: str
    change: str
    time: str
    p: str
    detects: str
    peak_mem: str
    arith: str
    bandwidth: str
    verdict: str
    reason: str
    sides: Mapping[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The library and the device within it, in one cell (``opencl pocl-cpu0``)."""
        return (
            self.backend if self.device in ("", self.backend) else f"{self.backend} {self.device}"
        )

    def cell(self, key: str) -> str:
        if key in self.sides:
            return self.sides[key]
        return str(getattr(self, key))

    def cells(self, keys: Sequence[str]) -> tuple[str, ...]:
        return tuple(self.cell(k) for k in keys)

    @classmethod
    def of(cls, entry: Mapping[str, object]) -> TableRow:
        """The row of a results document's entry."""
        v = _map(entry.get("verdict"))
        timer = str(entry.get("timer") or "host")
        backend = str(entry.get("backend") or "?")
        dtype = str(entry.get("dtype") or "")
        device = _map(entry.get("device"))
        ident = str(entry.get("device_id") or device.get("id") or entry.get("kind") or "")
        name = str(entry.get("name") or entry.get("test") or "?")
        roof = _map(entry.get("roofline"))
        ratio = _number(v.get("ratio"))
        p = v.get("p_slower") if ratio is None or ratio >= 1.0 else v.get("p_faster")
        p_value = _number(p) if ratio is not None else None
        detects = _number(v.get("min_detectable_slowdown"))
        peak = entry.get("peak_memory_bytes")
        return cls(
            name=name,
            benchmark=label(
                name, str(entry.get("benchmark") or name.split("[", 1)[0]), ident, dtype
            ),
            shape=str(roof.get("shape") or "-"),
            backend=backend,
            device=device_within(backend, ident),
            dtype=dtype,
            clock=timer + ("+flush" if entry.get("l2_flush") else ""),
            median=_value(judged_median(entry), timer),
            iqr=_iqr(entry.get("samples")),
            baseline=_value(baseline_median(entry), timer),
            change=change_text(v, entry.get("measure")),
            time=_time_change(entry.get("time")),
            p="-" if p_value is None else f"{p_value:.2g}",
            detects="-" if detects is None else f"+{100 * detects:.1f}%",
            peak_mem=format_bytes(peak)
            + (" (MPS driver)" if isinstance(peak, int) and entry.get("kind") == "metal" else ""),
            arith=_rate(roof, "gflops", "GF/s", "arith_pct"),
            bandwidth=_rate(roof, "gbps", "GB/s", "mem_pct"),
            verdict=side_verdicts.verdict_text(entry),
            reason=str(v.get("reason") or ""),
            sides=side_verdicts.cells(entry),
        )


def _value(value: object, timer: str) -> str:
    number = _number(value)
    return "-" if number is None else measures.of_field(timer).format(number)


def _iqr(samples: object) -> str:
    values = [x for x in samples if _number(x) is not None] if isinstance(samples, list) else []
    if not values:
        return "-"
    pct = summarize(values).iqr_pct
    return "-" if math.isnan(pct) else f"{pct:.1f}"


def _time_change(time: object) -> str:
    """--perf-measure both: the clock's change beside the counts that judged (``+0.4%``, or its
    verdict where it has no change); ``-`` elsewhere."""
    if not isinstance(time, Mapping):
        return "-"
    v = _map(time.get("verdict"))
    ratio = _number(v.get("ratio"))
    if ratio is None:
        return str(v.get("status") or "-")
    return f"{100 * (ratio - 1):+.1f}%"


def _rate(roof: Mapping[str, object], key: str, unit: str, pct: str) -> str:
    if not roof:
        return "-"
    return format_rate(_number(roof.get(key)), unit, _number(roof.get(pct)))
