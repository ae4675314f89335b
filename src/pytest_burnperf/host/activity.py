"""Was the host quiet while a benchmark ran? Cheap kernel counters read around each benchmark.

A benchmark's samples are worth comparing only if the machine gave it what it gave the baseline.
Around every benchmark the plugin reads (Linux; elsewhere each figure is simply unknown):

* ``/proc/stat`` for the CPUs this process may run on: CPU time the whole machine spent busy and
  stolen by the hypervisor. Minus this process's own CPU time, the busy time is what **other
  processes** took: one competing CPU-bound process on a 2-CPU machine shows as about 1.0 CPU.
* ``/proc/pressure/cpu`` (PSI): the share of time some runnable task waited for a CPU.
* the cgroup's ``cpu.stat``: time the container was throttled by its CPU quota.
* the CPU frequency governor and current/maximum clock, where cpufreq is exposed.

Per sample, the timing loop also keeps the process's CPU time over the sample's wall time
(``Sample.cpu_share``): a single-threaded CPU benchmark that got less than 90% of a CPU during a
sample was descheduled, and that sample is flagged.

:func:`Window.disturbed` turns these into one reason (or None); ``assess.py`` leaves the rounds
it names out of a verdict where enough clean rounds remain, and otherwise makes the verdicts such
a host could explain ``inconclusive`` instead of failing the code or passing silently.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pytest_burnperf.host.nvml import OTHERS_SM_MIN, SM_CLOCK_MIN_SHARE

#: /proc/stat counts in clock ticks (10 ms): over a shorter window one stray tick reads as half a
#: CPU, so other processes' CPU time is judged only over windows at least this long (shorter
#: benchmarks still have PSI, cgroup throttling and the per-sample CPU share).
MIN_WINDOW_S = 0.25
#: Another process counts as competing when it takes at least this many CPUs on average ...
MIN_OTHERS_CPUS = 0.3
#: ... and at least this share of the CPUs this process left free.
OTHERS_SHARE = 0.25
#: Hypervisor steal, PSI stall and cgroup throttling: disturbed at or above this share of the time.
STEAL_SHARE = 0.05
PRESSURE_SHARE = 0.10
THROTTLE_SHARE = 0.05
#: A sample in which a single-threaded CPU benchmark got less than this share of a CPU was
#: descheduled; a benchmark with at least DESCHEDULED_SHARE of such samples was disturbed.
CPU_SHARE_MIN = 0.90
DESCHEDULED_SHARE = 0.10
#: How much slower a benchmark may run beside other processes without losing any of its own CPU
#: time: a neighbour on the sibling hyperthread of a shared core, shared caches and memory
#: bandwidth, the clock budget. The largest such factor measured here is 1.5 (slow spells of a
#: pure-Python loop at 1.36-1.55x with no steal, no pressure and no other process visible:
#: docs/validation.md, "the host's speed has two levels"; a CPU-bound neighbour pinned to the
#: other CPU: docs/gate.md, "How much a busy host can explain"). A disturbance explains a
#: slowdown up to this factor over the share of the time the benchmark waited for a CPU.
NEIGHBOUR_FACTOR = 1.5
#: The largest share of the time a benchmark can be said to have waited (beyond it: unbounded).
MAX_WAITED_SHARE = 0.9

#: A window's GPU figures (NVML, ``nvml.Watch``): lowest SM and memory clocks and their maxima
#: (MHz) and shares, highest power (W) and temperature (C), the power limit, and the largest share
#: of the SMs another process used.
GPU_NUMBERS = (
    "gpu_sm_mhz",
    "gpu_max_sm_mhz",
    "gpu_sm_clock_share",
    "gpu_mem_mhz",
    "gpu_max_mem_mhz",
    "gpu_mem_clock_share",
    "gpu_power_w",
    "gpu_power_limit_w",
    "gpu_temperature_c",
    "gpu_others_sm",
)

_PROC_STAT = "/proc/stat"
_PSI = "/proc/pressure/cpu"
_CGROUP_STAT = ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat")
_CPUFREQ = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class Snapshot:
    """Counters at one moment; ``None`` where this system does not expose them."""

    wall: float
    own_cpu: float
    busy: float | None = None
    steal: float | None = None
    pressure_us: float | None = None
    throttled_us: float | None = None
    cpus: int = 1


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return None


def parse_proc_stat(text: str, cpus: set[int] | None, hz: float) -> tuple[float, float, int]:
    """(busy seconds, steal seconds, CPUs counted) from ``/proc/stat`` for ``cpus`` (all if None)."""
    busy = steal = 0.0
    counted = 0
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        try:
            index = int(name[3:])
            values = [float(f) for f in fields]
        except ValueError:
            continue
        if cpus is not None and index not in cpus:
            continue
        values += [0.0] * (8 - len(values))
        user, nice, system, _idle, _iowait, irq, softirq, st = values[:8]
        busy += user + nice + system + irq + softirq
        steal += st
        counted += 1
    return busy / hz, steal / hz, counted


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(1 << 16)
    except OSError:
        return None


def _share(part: float, whole: float) -> float:
    """``part / whole`` as a share of the time: never below 0 nor above 1."""
    return min(1.0, max(0.0, part / whole))


def _psi_total(text: str | None) -> float | None:
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split():
                if part.startswith("total="):
                    try:
                        return float(part[6:])
                    except ValueError:
                        return None
    return None


def _throttled(text: str | None) -> float | None:
    if not text:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "throttled_usec":
            try:
                return float(value)
            except ValueError:
                return None
        if key == "throttled_time":  # cgroup v1, nanoseconds
            try:
                return float(value) / 1000.0
            except ValueError:
                return None
    return None


def snapshot() -> Snapshot:
    """Read the counters now (a few hundred microseconds)."""
    wall = time.perf_counter()
    own = time.process_time()
    busy = steal = None
    cpus = _affinity()
    ncpu = len(cpus) if cpus else (os.cpu_count() or 1)
    text = _read(_PROC_STAT)
    if text:
        hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        busy, steal, counted = parse_proc_stat(text, cpus, hz)
        if counted == 0:
            busy = steal = None
    throttled = None
    for path in _CGROUP_STAT:
        throttled = _throttled(_read(path))
        if throttled is not None:
            break
    return Snapshot(
        wall=wall,
        own_cpu=own,
        busy=busy,
        steal=steal,
        pressure_us=_psi_total(_read(_PSI)),
        throttled_us=throttled,
        cpus=ncpu,
    )


#: Fields of a stored window (:meth:`Window.as_dict`): numbers, and whole-number counts.
WINDOW_NUMBERS = (
    "seconds",
    "own_cpus",
    "others_cpus",
    "steal_share",
    "pressure_share",
    "throttle_share",
    *GPU_NUMBERS,
)
#: Text fields of a stored window: what NVML said about the GPU.
WINDOW_TEXTS = ("gpu_slowdown", "gpu_reasons", "gpu_others")
WINDOW_COUNTS = ("cpus", "descheduled", "samples")


@dataclass(frozen=True)
class Window:
    """What happened on the host between two snapshots, as averages over the window."""

    seconds: float
    cpus: int
    #: CPUs this process used on average (its own threads).
    own_cpus: float
    #: CPUs that other processes used on average (None: not measurable here).
    others_cpus: float | None = None
    #: Shares of the window: hypervisor steal (of all CPUs), CPU pressure, cgroup throttling.
    steal_share: float | None = None
    pressure_share: float | None = None
    throttle_share: float | None = None
    #: Samples in which a single-threaded benchmark got less than CPU_SHARE_MIN of a CPU.
    descheduled: int = 0
    samples: int = 0
    #: A GPU slowing itself down at the end of the samples (NVML), e.g. a thermal slowdown.
    gpu_slowdown: str | None = None
    #: NVML's readings at the start and end of the samples (``GPU_NUMBERS``; None: no NVML).
    gpu_sm_mhz: float | None = None
    gpu_max_sm_mhz: float | None = None
    gpu_sm_clock_share: float | None = None
    gpu_mem_mhz: float | None = None
    gpu_max_mem_mhz: float | None = None
    gpu_mem_clock_share: float | None = None
    gpu_power_w: float | None = None
    gpu_power_limit_w: float | None = None
    gpu_temperature_c: float | None = None
    #: Every clock-event reason seen, in words (``power cap, idle``...).
    gpu_reasons: str | None = None
    #: The largest share of the SMs another process used, and who (None: not measurable).
    gpu_others_sm: float | None = None
    gpu_others: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    def device_side(self) -> Window:
        """This window as a device-bound GPU kernel sees it: the GPU's figures only. The host's
        CPUs (other processes, steal, pressure, throttling, descheduled samples) do not move
        the device time of a kernel that keeps the GPU busy (H200, 2026-11-28: in a session
        whose host ran the reference probe 34-50% slower, +3% planted kernels read +2.9-3.0%),
        so they neither excuse its slowdown nor set its rounds aside; the GPU's clocks, its
        slowdown and other processes' kernels do."""
        return replace(
            self,
            others_cpus=None,
            steal_share=None,
            pressure_share=None,
            throttle_share=None,
            descheduled=0,
        )

    @classmethod
    def from_dict(cls, doc: object) -> Window | None:
        """A window read back from a baseline or round file; None when it is not one (wrong
        types, missing fields), so a bad file can never crash a verdict."""
        if not isinstance(doc, Mapping):
            return None
        for key in WINDOW_NUMBERS:
            v = doc.get(key)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            ):
                return None
        for key in WINDOW_COUNTS:
            v = doc.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                return None
        if any(not isinstance(doc.get(k, None), (str, type(None))) for k in WINDOW_TEXTS):
            return None
        try:
            return cls(**{k: doc[k] for k in cls.__dataclass_fields__ if k in doc})
        except TypeError:
            return None

    def disturbed(self) -> str | None:
        """Why the host was not quiet during this window, or None."""
        why: list[str] = []
        if self.others_cpus is not None:
            free = max(1.0, self.cpus - self.own_cpus)
            if self.others_cpus >= max(MIN_OTHERS_CPUS, OTHERS_SHARE * free):
                why.append(f"other processes used {self.others_cpus:.2f} of {self.cpus} CPUs")
        if self.steal_share is not None and self.steal_share >= STEAL_SHARE:
            why.append(f"the hypervisor stole {100 * self.steal_share:.0f}% of the CPU time")
        if self.pressure_share is not None and self.pressure_share >= PRESSURE_SHARE:
            why.append(f"tasks waited for a CPU {100 * self.pressure_share:.0f}% of the time (PSI)")
        if self.throttle_share is not None and self.throttle_share >= THROTTLE_SHARE:
            why.append(
                f"the cgroup's CPU quota throttled it {100 * self.throttle_share:.0f}% of the time"
            )
        if self.gpu_slowdown:
            why.append(self.gpu_slowdown)
        share = self.gpu_sm_clock_share
        # under its power cap a GPU runs heavy kernels at the clock the cap allows: that is the
        # workload's own steady state (its baseline ran there too), not a disturbance
        capped = "power cap" in (self.gpu_reasons or "")
        if (
            share is not None
            and share < SM_CLOCK_MIN_SHARE
            and not self.gpu_slowdown
            and not capped
        ):
            why.append(
                f"the GPU's SM clock fell to {self.gpu_sm_mhz:.0f} of {self.gpu_max_sm_mhz:.0f} "
                f"MHz (under {100 * SM_CLOCK_MIN_SHARE:.0f}% of its maximum)"
            )
        if self.gpu_others_sm is not None and self.gpu_others_sm >= OTHERS_SM_MIN:
            why.append(f"other processes computed on the GPU ({self.gpu_others})")
        if self.samples and self.descheduled >= max(1, DESCHEDULED_SHARE * self.samples):
            why.append(
                f"{self.descheduled} of {self.samples} samples ran with under "
                f"{100 * CPU_SHARE_MIN:.0f}% of a CPU (descheduled)"
            )
        return "; ".join(why) or None

    def explains_up_to(self) -> float:
        """The largest slowdown (a ratio, ``math.inf`` for no bound) this window's disturbance
        can explain; 1.0 for a quiet window. A benchmark that waited for a CPU a share ``w`` of
        the time ran ``1 / (1 - w)`` times as long, and neighbours on the other CPUs slow what
        it does run by at most :data:`NEIGHBOUR_FACTOR`. ``w`` is the largest of the CPU
        pressure (PSI's *some*: the time at least one task waited, ours included), the steal
        taken as if all of it fell on one CPU, and the cgroup's throttling; where only other
        processes' CPU time is known, the oversubscription it implies; on a GPU, the share of
        the time other processes' kernels ran on its SMs (NVML's per-process utilisation, all of
        them together): the GPU time-slices between contexts, so a kernel waits for theirs as a
        task waits for a CPU, and shares memory bandwidth and L2 with theirs as a neighbour on
        the other CPUs does (:data:`NEIGHBOUR_FACTOR`). Descheduled samples with no pressure
        figure and a GPU that slowed itself down have no bound (``math.inf``): how much they
        take is not measured."""
        if not self.disturbed():
            return 1.0
        if self.gpu_slowdown:
            return math.inf
        if self.pressure_share is None and self.samples and self.descheduled:
            return math.inf
        waited = [
            self.pressure_share,
            None if self.steal_share is None else self.steal_share * max(1, self.cpus),
            self.throttle_share,
            self.gpu_others_sm,
        ]
        if self.others_cpus is not None and self.cpus > 0:
            demand = self.own_cpus + self.others_cpus
            waited.append(max(0.0, 1.0 - self.cpus / demand) if demand > 0 else 0.0)
        share = max((w for w in waited if w is not None), default=0.0)
        if share >= MAX_WAITED_SHARE:
            return math.inf
        ratio = NEIGHBOUR_FACTOR / (1.0 - share)
        clock = self.gpu_sm_clock_share
        if clock is not None and 0 < clock < SM_CLOCK_MIN_SHARE:
            ratio = max(ratio, 1.0 / clock)
        return ratio


def window(
    before: Snapshot,
    after: Snapshot,
    cpu_share: Sequence[float] | None = None,
    gpu_slowdown: str | None = None,
    gpu: Mapping[str, object] | None = None,
) -> Window:
    """The :class:`Window` between two snapshots; ``cpu_share`` (per sample, for single-threaded
    CPU benchmarks only) counts the descheduled samples; ``gpu``: NVML's fields for the same
    span (``nvml.Watch.fields``), whose slowdown, if any, is the one named."""
    # NVML's window fields (numbers and text, as nvml.window_fields makes them), by name
    fields: dict[str, Any] = {
        k: v for k, v in (gpu or {}).items() if k in Window.__dataclass_fields__
    }
    if fields.get("gpu_slowdown") is None:
        fields["gpu_slowdown"] = gpu_slowdown
    seconds = max(after.wall - before.wall, 1e-9)
    own = max(0.0, after.own_cpu - before.own_cpu)
    others = steal = None
    if before.busy is not None and after.busy is not None and seconds >= MIN_WINDOW_S:
        others = max(0.0, (after.busy - before.busy) - own) / seconds
    # shares of the window, bounded to [0, 1]: the counters are read a moment after the wall
    # clock, and in a window of a few milliseconds a read delayed by a slow spell made PSI say
    # tasks waited 979% of the time
    if before.steal is not None and after.steal is not None:
        steal = _share(after.steal - before.steal, seconds * max(1, after.cpus))
    pressure = throttle = None
    if before.pressure_us is not None and after.pressure_us is not None:
        pressure = _share((after.pressure_us - before.pressure_us) * 1e-6, seconds)
    if before.throttled_us is not None and after.throttled_us is not None:
        throttle = _share((after.throttled_us - before.throttled_us) * 1e-6, seconds)
    shares = [s for s in (cpu_share or ()) if math.isfinite(s)]
    return Window(
        seconds=seconds,
        cpus=after.cpus,
        own_cpus=own / seconds,
        others_cpus=others,
        steal_share=steal,
        pressure_share=pressure,
        throttle_share=throttle,
        descheduled=sum(1 for s in shares if s < CPU_SHARE_MIN),
        samples=len(shares),
        **fields,
    )


def spans(marks: Sequence[Snapshot]) -> tuple[Snapshot, Snapshot]:
    """Two snapshots whose difference is the sum of the spans ``marks[0]``-``marks[1]``,
    ``marks[2]``-``marks[3]``, ...: the host while a side of a turn-taking pair held the turn
    (turns.py), not while the other side ran. Two marks give them back as they are."""
    if len(marks) < 2:
        raise ValueError("spans need at least a start and an end")
    if len(marks) == 2:
        return marks[0], marks[1]
    pairs = list(zip(marks[0::2], marks[1::2], strict=False))

    def total(name: str) -> float | None:
        got = [(getattr(a, name), getattr(b, name)) for a, b in pairs]
        if any(x is None or y is None for x, y in got):
            return None
        return float(sum(y - x for x, y in got))

    busy, steal = total("busy"), total("steal")
    pressure, throttled = total("pressure_us"), total("throttled_us")

    def base(x: float | None) -> float | None:
        return None if x is None else 0.0

    cpus = pairs[-1][1].cpus
    zero = Snapshot(0.0, 0.0, base(busy), base(steal), base(pressure), base(throttled), cpus)
    summed = Snapshot(
        total("wall") or 0.0, total("own_cpu") or 0.0, busy, steal, pressure, throttled, cpus
    )
    return zero, summed


def cpufreq() -> dict[str, str | int | None] | None:
    """Governor and current/maximum clock of CPU 0 where cpufreq is exposed (None elsewhere,
    as on most VMs). Shown in the header; a clock well under its maximum hints at throttling."""
    base = _CPUFREQ / "cpu0" / "cpufreq"
    gov = _read(str(base / "scaling_governor"))
    cur = _read(str(base / "scaling_cur_freq"))
    top = _read(str(base / "cpuinfo_max_freq"))
    if gov is None and cur is None:
        return None
    out: dict[str, str | int | None] = {"governor": gov.strip() if gov else None}
    for key, text in (("cur_khz", cur), ("max_khz", top)):
        try:
            out[key] = int(text.strip()) if text else None
        except ValueError:
            out[key] = None
    return out


def load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        return None
