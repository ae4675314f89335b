"""The lines printed above and below a run's table: the run's header (machine, devices, clocks,
reference probe), each device's state (GPU clocks, temperatures, throttling), the precision
reached and what was counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.judging import precision
from pytest_burnperf.core.judging.verdict import (
    VERDICTS,
)
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.core.text import (
    rounds_text,
)
from pytest_burnperf.host import activity, hardware, probe
from pytest_burnperf.host.activity import Window
from pytest_burnperf.host.nvml import OTHERS_SM_MIN
from pytest_burnperf.report import side_verdicts


def probe_summary(results: Sequence[Result]) -> str:
    """The header's reference-probe part: how this host compares with the baselines' hosts."""

    ratios = []
    for r in results:
        r = r.timed() or r  # a counted one's time beside: its time baseline's host
        got = probe.host_ratio(None if r.baseline is None else r.baseline.host_probe, r.probe)
        if got is not None:
            ratios.append(got)
    if not ratios:
        return "reference probe: no baseline to compare with"
    ratios.sort(key=lambda g: g[0])
    mid = ratios[len(ratios) // 2]
    if not probe.differs(mid[0]):
        return f"reference probe within {100 * abs(mid[0] - 1):.0f}% of the baselines' host"
    return probe.describe(*mid).replace("this host", "reference probe: this host", 1)


def _other_thresholds(results: Sequence[Result], threshold: float) -> str:
    """`` (1.5% on 4 device-bound GPU kernels)`` where some verdicts were judged at a threshold of
    their own (``verdict.DEVICE_THRESHOLD``), so the header's figure is the one each judged at."""
    other = Counter(
        r.verdict.threshold
        for r in results
        if r.verdict.threshold is not None and abs(r.verdict.threshold - threshold) > 1e-12
    )
    return "".join(
        f" ({100 * t:g}% on {n} device-bound GPU kernel{'s' if n > 1 else ''})"
        for t, n in sorted(other.items())
    )


def header(
    results: Sequence[Result],
    *,
    machine_id: str,
    baselines: str,
    size: str,
    rounds: int,
    threshold: float,
    alpha: float,
    comparisons: int,
    max_rounds: int | None = None,
    rounds_per_result: Sequence[int] = (),
    same_session: str | None = None,
    machine_line: bool = True,
    counted: str | None = None,
    beside: int = 0,
) -> list[str]:
    """The lines above the table: host state, probe (stored baselines only: a same-session
    comparison measures both sides on the host of the day), and the gate's settings; the
    machine line only with ``machine_line`` (the run's first lines name it already).
    ``beside``: the counted benchmarks timed one round in this process for the time change
    beside their counts (--perf-measure auto), said apart from the process rounds."""

    windows = [w for r in results for w in r.host]
    cpus = jf.integer(hardware.cpu_identity().get("logical")) or 1
    text = rounds_text(rounds, max_rounds or rounds)
    if max_rounds and max_rounds > rounds and rounds_per_result:
        low, high = min(rounds_per_result), max(rounds_per_result)
        text += f": {low}" + (f"-{high}" if high > low else "") + " ran"
    beside_text = f"time beside the counts: one round in this process ({beside} counted)"
    threshold_text = f"threshold {100 * threshold:g}%{_other_thresholds(results, threshold)}; "
    if beside and not rounds_per_result:  # no time verdict: its threshold decides nothing
        text, threshold_text = beside_text, ""
    elif beside:
        text += f"; {beside_text}"
    where = f"baselines in {baselines}" if same_session is None else same_session
    host = host_state(windows, cpus, sum(1 for r in results if r.host))
    machine = f"machine {machine_id}: {hardware.describe(hardware.cpu_identity())}"
    timed = not counted or any(r.timed() is not None for r in results)
    return [
        *([machine] if machine_line else []),
        host if same_session is not None else f"{host}; {probe_summary(results)}",
        *(
            [
                f"{where}; size {size}; {text}; {threshold_text}alpha {alpha:g} family-wise "
                f"over {comparisons} comparison(s)"
            ]
            if timed
            else []
        ),
        *([counted] if counted else []),
        *device_lines(results),
        *gpu_state_lines(results),
        *precision_lines(results),
    ]


def _span(values: Sequence[float], top: float | None, unit: str) -> str:
    low, high = min(values), max(values)
    text = f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"
    return text + (f" of {top:.0f}" if top else "") + f" {unit}"


def gpu_state_lines(results: Sequence[Result]) -> list[str]:
    """One line per GPU that NVML watched: the clocks, power and temperature its benchmarks ran
    at (read at the start and end of each one's samples), the clock-event reasons seen, and
    whether other processes computed on it."""

    per: dict[str, list[Window]] = {}
    for r in results:
        watched = [w for w in r.host if w.gpu_sm_mhz is not None or w.gpu_reasons is not None]
        if watched:
            per.setdefault(r.device_id, []).extend(watched)
    lines: list[str] = []
    for device, ws in sorted(per.items()):
        parts: list[str] = []
        for name, key, top in (
            ("SM clock", "gpu_sm_mhz", "gpu_max_sm_mhz"),
            ("memory clock", "gpu_mem_mhz", "gpu_max_mem_mhz"),
        ):
            got = [float(getattr(w, key)) for w in ws if getattr(w, key) is not None]
            tops = [float(getattr(w, top)) for w in ws if getattr(w, top) is not None]
            if got:
                parts.append(f"{name} {_span(got, max(tops) if tops else None, 'MHz')}")
        power = [w.gpu_power_w for w in ws if w.gpu_power_w is not None]
        limit = [w.gpu_power_limit_w for w in ws if w.gpu_power_limit_w is not None]
        if power:
            parts.append(
                f"power up to {max(power):.0f}" + (f" of {min(limit):.0f}" if limit else "") + " W"
            )
        temps = [w.gpu_temperature_c for w in ws if w.gpu_temperature_c is not None]
        if temps:
            parts.append(f"up to {max(temps):.0f} C")
        reasons = sorted(
            {t.strip() for w in ws for t in (w.gpu_reasons or "").split(",") if t.strip()}
        )
        parts.append("clock-event reasons: " + (", ".join(reasons) if reasons else "none"))
        seen = [w for w in ws if w.gpu_others_sm is not None]
        if not seen:
            parts.append("other processes on it: not measurable here")
        else:
            busy = sum(
                1 for w in seen if w.gpu_others_sm is not None and w.gpu_others_sm >= OTHERS_SM_MIN
            )
            parts.append(
                f"other processes computed on it during {busy} of {len(seen)} benchmark(s)"
                if busy
                else "no other process computed on it"
            )
        lines.append(f"gpu {device} during the samples: " + "; ".join(parts))
    return lines


def device_lines(results: Sequence[Result]) -> list[str]:
    """One line per device that does not compute on the host CPU (a GPU): its model and what
    else makes its class (compute units, memory, capability), and its runtime and driver. A
    baseline recorded on a device of another class is not compared; the header says which
    class this run measured."""

    seen: dict[str, str] = {}
    for r in results:
        fp = r.fingerprint
        if r.device_id in seen or "cpu" in fp or fp.get("kind") in (None, "cpu"):
            continue
        parts = [str(fp.get("name") or "unknown model")]
        if fp.get("compute_units"):
            parts.append(f"{fp['compute_units']} compute units")
        memory = jf.integer(fp.get("memory_bytes"))
        if memory is not None and memory > 0:
            parts.append(f"{memory / 2**30:.1f} GiB")
        if fp.get("capability"):
            parts.append(f"capability {fp['capability']}")
        soft = [str(fp[k]) for k in ("runtime",) if fp.get(k)]
        driver = fp.get("driver") or fp.get("nvml_driver")
        if driver:
            soft.append(f"driver {driver}")
        if fp.get("max_sm_clock_mhz"):
            soft.append(f"max SM clock {fp['max_sm_clock_mhz']} MHz")
        seen[r.device_id] = f"device {r.device_id}: {', '.join(parts)}" + (
            f" ({', '.join(soft)})" if soft else ""
        )
    return [seen[k] for k in sorted(seen)]


def precision_lines(results: Sequence[Result]) -> list[str]:
    """One line per device whose benchmarks ran with precision modes other than the library's
    defaults (TF32, cudnn.benchmark...): ``precision modes on torch-cuda0: ...``."""

    seen: dict[str, set[str]] = {}
    for r in results:
        text = precision.describe(jf.mapping(r.fingerprint.get("precision")))
        if text:
            seen.setdefault(r.device_id, set()).add(text)
    return [
        f"precision modes on {device} (not the library defaults): {' | '.join(sorted(texts))}"
        for device, texts in sorted(seen.items())
    ]


def counts_line(results: Iterable[Result]) -> str:
    counts = Counter(r.verdict.status for r in results)
    parts = [f"{counts[v]} {v}" for v in VERDICTS if counts[v]]
    return ", ".join(parts) if parts else "no benchmark ran"


def side_lines(results: Iterable[Result]) -> list[str]:
    """``memory per call: 1 regressed, 3 unchanged, 2 no memory baseline``: per side
    (core/sides/side_registry.SIDES), its verdicts beside the verdicts by status, and the
    benchmarks it did not measure with why (``..., 1 not measured (perf.pedantic(rounds=10)
    makes no calls beyond its rounds)``), where any benchmark has either."""
    done = list(results)
    out = []
    for side in SIDES:
        said = side.summary(v.status for r in done if (v := r.sides.get(side.field)) is not None)
        whys = [why for r in done if (why := r.not_measured.get(side.field)) is not None]
        said = side_verdicts.with_not_measured(side, said, whys)
        if said is not None:
            out.append(said)
    return out


def host_state(windows: Sequence[Window], cpus: int, benchmarks: int | None = None) -> str:
    """The header's host-state part: ``host quiet`` or what disturbed how many benchmarks; of
    how many timed rounds where the ``benchmarks`` were timed in more than one round each (a
    window is one benchmark's round)."""
    what = "benchmark(s)" if benchmarks in (None, len(windows)) else "timed round(s)"
    bad = [(w, w.disturbed()) for w in windows]
    bad = [(w, why) for w, why in bad if why]
    parts: list[str] = []
    load = activity.load_average()
    if load is not None:
        parts.append(f"load {load[0]:.2f} on {cpus} CPUs")
    freq = activity.cpufreq()
    if freq and freq.get("governor"):
        parts.append(f"governor {freq['governor']}")
        cur, top = freq.get("cur_khz"), freq.get("max_khz")
        if isinstance(cur, int) and isinstance(top, int) and cur and top:
            parts.append(f"clock {cur / 1e6:.2f}/{top / 1e6:.2f} GHz")
    # a window under activity.MIN_WINDOW_S cannot see other processes (only PSI and descheduled
    # samples): "quiet" is said only of the windows long enough to tell
    short = sum(1 for w in windows if w.seconds < activity.MIN_WINDOW_S)
    if not windows:
        state = "host state not measured"
    elif not bad and short == len(windows):
        state = (
            f"host state unknown: every benchmark's timed window was under {activity.MIN_WINDOW_S:g} s, "
            "too short to see other processes"
        )
    elif not bad and short:
        state = (
            f"host quiet during {len(windows) - short} of {len(windows)} {what} (the "
            f"other {short} timed under {activity.MIN_WINDOW_S:g} s, too short to tell)"
        )
    elif not bad:
        state = "host quiet"
    else:
        worst = max(bad, key=lambda p: p[0].others_cpus or 0.0)
        state = f"host BUSY during {len(bad)} of {len(windows)} {what} (worst: {worst[1]})"
    return state + (f" ({', '.join(parts)})" if parts else "")
